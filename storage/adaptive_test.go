package storage_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// throttler answers every nth ReadRange with a retryable 503 SlowDown while on.
type throttler struct {
	storage.Backend
	n, calls atomic.Int64
	on       atomic.Bool
	inflight atomic.Int64
	peak     atomic.Int64
}

func (t *throttler) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	cur := t.inflight.Add(1)
	defer t.inflight.Add(-1)
	for {
		p := t.peak.Load()
		if cur <= p || t.peak.CompareAndSwap(p, cur) {
			break
		}
	}
	time.Sleep(200 * time.Microsecond)
	if c := t.calls.Add(1); t.on.Load() && c%t.n.Load() == 0 {
		return nil, storage.Retryable(errors.New("read: api error SlowDown: Please reduce your request rate"))
	}
	return t.Backend.ReadRange(ctx, key, off, n)
}

func TestIsThrottle(t *testing.T) {
	for _, err := range []error{
		storage.Retryable(errors.New("api error SlowDown: Please reduce your request rate")),
		storage.Retryable(errors.New("googleapi: Error 429: rateLimitExceeded")),
		storage.Retryable(errors.New("RESPONSE 503: 503 The server is busy. ERROR CODE: ServerBusy")),
	} {
		if !storage.IsThrottle(err) {
			t.Errorf("IsThrottle(%v) = false", err)
		}
	}
	for _, err := range []error{
		errors.New("SlowDown"), // not marked retryable: never a throttle
		storage.Retryable(errors.New("connection reset by peer")),
		storage.Retryable(errors.New("500 InternalError")),
	} {
		if storage.IsThrottle(err) {
			t.Errorf("IsThrottle(%v) = true", err)
		}
	}
}

// TestAdaptiveBacksOffAndRecovers: under throttling the limit halves (once per round of
// requests, not once per throttled answer) and the requests in flight follow it; when the
// throttling stops, the limit climbs back to the maximum.
func TestAdaptiveBacksOffAndRecovers(t *testing.T) {
	m := mem.New()
	m.Set("k", []byte("data"), time.Time{})
	th := &throttler{Backend: m}
	th.n.Store(5)
	th.on.Store(true)
	var (
		mu      sync.Mutex
		changes []string
	)
	b, a := storage.WithAdaptive(th, storage.AdaptiveOptions{Max: 32, Min: 1, OnChange: func(from, to int, cause error) {
		mu.Lock()
		changes = append(changes, fmt.Sprintf("%d→%d", from, to))
		mu.Unlock()
	}})
	policy := storage.RetryPolicy{MaxAttempts: 20, InitialDelay: time.Microsecond, MaxDelay: time.Millisecond, Multiplier: 2}
	b = storage.WithRetry(b, policy)
	run := func(n int) {
		var wg sync.WaitGroup
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < n/64; j++ {
					if _, err := storage.ReadAll(context.Background(), b, "k", 0, -1); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	run(4000)
	lowest := a.Lowest()
	if lowest > 8 || a.Throttled() == 0 {
		t.Fatalf("lowest limit %d after %d throttled answers: no back-off", lowest, a.Throttled())
	}
	if th.peak.Load() > 32 {
		t.Errorf("%d requests in flight, over the maximum", th.peak.Load())
	}
	th.on.Store(false)
	run(20000)
	if got := a.Limit(); got != 32 {
		t.Errorf("limit %d after the throttling stopped, want it back at 32 (changes %v)", got, changes)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) == 0 || changes[0] != "32→16" || !strings.HasSuffix(changes[len(changes)-1], "→32") {
		t.Errorf("changes %v: want a first halving and a last rise to 32", changes)
	}
}
