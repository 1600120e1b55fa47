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
	if lowest > 8 || a.Stats().Throttles == 0 {
		t.Fatalf("lowest limit %d after %d throttled answers: no back-off", lowest, a.Stats().Throttles)
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

var slowDownErr = storage.Retryable(errors.New("read: api error SlowDown: Please reduce your request rate"))

// TestAdaptiveHalvesAndRecovers: a throttle halves the limit, a second one in the same round
// of answers does not; the slots follow the limit; each answer without a throttle adds
// 1/limit, back up to Max; the limit never falls below Min.
func TestAdaptiveHalvesAndRecovers(t *testing.T) {
	var changes []string
	a := storage.NewAdaptive(storage.AdaptiveOptions{Start: 8, Max: 8,
		OnChange: func(from, to int, cause error) { changes = append(changes, fmt.Sprintf("%d→%d %v", from, to, cause)) }})
	a.Throttled(slowDownErr)
	a.Throttled(nil) // within the round: counted, not halved again
	if s := a.Stats(); s.Limit != 4 || s.Throttles != 2 || s.Decreases != 1 {
		t.Fatalf("after two throttles: %+v", s)
	}
	// Four slots, the fifth waits.
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		if err := a.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := a.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fifth acquire: %v", err)
	}
	if s := a.Stats(); s.InFlight != 4 {
		t.Fatalf("a cancelled wait holds a slot: %+v", s)
	}
	// Answers grow the limit by about one per round of limit requests.
	for i := 0; i < 4; i++ {
		a.Release(nil)
	}
	if got := a.Limit(); got != 4 {
		t.Errorf("after four answers: %d, want still 4", got)
	}
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	a.Release(nil)
	if got := a.Limit(); got != 5 {
		t.Errorf("after five answers: %d, want 5", got)
	}
	for i := 0; i < 100; i++ {
		if err := a.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		a.Release(nil)
	}
	if got := a.Limit(); got != 8 {
		t.Errorf("recovered to %d, want the max 8", got)
	}
	if len(changes) == 0 || !strings.HasPrefix(changes[0], "8→4 read: api error SlowDown") || changes[len(changes)-1] != "7→8 <nil>" {
		t.Errorf("changes %q: want a lowering with its cause first, the rise to 8 last", changes)
	}
	if a.Lowest() != 4 {
		t.Errorf("lowest %d, want 4", a.Lowest())
	}
	// Never below Min.
	b := storage.NewAdaptive(storage.AdaptiveOptions{Max: 2})
	for i := 0; i < 5; i++ {
		b.Throttled(nil)
	}
	if s := b.Stats(); s.Limit != 1 || s.Decreases != 1 || s.Throttles != 5 {
		t.Errorf("min: %+v", s)
	}
}

// TestAdaptiveOncePerRound: after a decrease the next one waits for a round of answers, as
// many as the lowered limit; throttles in between are counted, and count as answers.
func TestAdaptiveOncePerRound(t *testing.T) {
	a := storage.NewAdaptive(storage.AdaptiveOptions{Max: 16})
	a.Throttled(slowDownErr) // 16 → 8
	for i := 0; i < 6; i++ {
		a.Throttled(slowDownErr) // answers 2..7 of the round of 8
	}
	if s := a.Stats(); s.Limit != 8 || s.Decreases != 1 || s.Throttles != 7 {
		t.Fatalf("within the round: %+v", s)
	}
	ctx := context.Background()
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	a.Release(nil) // answer 8: the round is complete
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	a.Release(slowDownErr) // the next round's first throttle
	if s := a.Stats(); s.Limit != 4 || s.Decreases != 2 || s.Throttles != 8 || s.InFlight != 0 {
		t.Errorf("after a round: %+v", s)
	}
}

// TestAdaptiveOutcomes: Release adjusts by the outcome: a throttle lowers, a cancelled
// request changes nothing, any other answer (a failure too) raises; OnRetry passes only
// throttles on, and calls the next hook for every retry.
func TestAdaptiveOutcomes(t *testing.T) {
	ctx := context.Background()
	a := storage.NewAdaptive(storage.AdaptiveOptions{Start: 2, Max: 4})
	release := func(err error) storage.AdaptiveStats {
		t.Helper()
		if err := a.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		a.Release(err)
		return a.Stats()
	}
	if s := release(fmt.Errorf("read k: %w", context.Canceled)); s.Limit != 2 || s.Throttles != 0 {
		t.Errorf("cancelled: %+v", s)
	}
	release(storage.Retryable(errors.New("500 InternalError"))) // 2.5
	release(storage.ErrNotExist)                                // 2.9
	if s := release(nil); s.Limit != 3 || s.Throttles != 0 {
		t.Errorf("three answers that are no throttle: %+v, want the limit raised to 3", s)
	}
	if s := release(slowDownErr); s.Limit != 1 || s.Throttles != 1 || s.Decreases != 1 {
		t.Errorf("a throttle: %+v", s)
	}
	var next int
	hook := a.OnRetry(func(string, int, error, time.Duration) { next++ })
	hook("read", 1, storage.Retryable(errors.New("connection reset by peer")), time.Millisecond)
	hook("read", 2, slowDownErr, time.Millisecond)
	if s := a.Stats(); next != 2 || s.Throttles != 2 {
		t.Errorf("OnRetry: next called %d times, %+v: want 2 calls and one more throttle", next, s)
	}
	a.OnRetry(nil)("read", 1, slowDownErr, time.Millisecond)
	if s := a.Stats(); s.Throttles != 3 || s.InFlight != 0 {
		t.Errorf("OnRetry(nil): %+v", s)
	}
}

// TestAdaptiveFIFO: waiters get the slots in the order they came; a waiter whose context
// ends leaves the queue without taking a slot; a newcomer does not pass the queue.
func TestAdaptiveFIFO(t *testing.T) {
	ctx := context.Background()
	a := storage.NewAdaptive(storage.AdaptiveOptions{Max: 1})
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	queued := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); a.Waiting() != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d waiting, want %d", a.Waiting(), n)
			}
		}
	}
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	gone, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := 1; i <= 4; i++ {
		c := ctx
		if i == 2 {
			c = gone
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := a.Acquire(c)
			mu.Lock()
			if err != nil {
				order = append(order, -i)
			} else {
				order = append(order, i)
			}
			mu.Unlock()
			if err == nil {
				a.Release(nil)
			}
		}()
		queued(i) // in the queue before the next one comes
	}
	cancel()
	queued(3) // waiter 2 has left
	a.Release(nil)
	wg.Wait()
	if fmt.Sprint(order) != "[-2 1 3 4]" {
		t.Errorf("order %v, want waiter 2 cancelled and 1, 3, 4 served in turn", order)
	}
	if s := a.Stats(); s.InFlight != 0 {
		t.Errorf("%+v: a slot was lost or kept", s)
	}
}

// TestAdaptiveCancelWhileHandedASlot: waiters that give up as slots are handed to them
// never leak one: afterwards every slot can be taken again.
func TestAdaptiveCancelWhileHandedASlot(t *testing.T) {
	ctx := context.Background()
	a := storage.NewAdaptive(storage.AdaptiveOptions{Max: 4})
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		c, cancel := context.WithTimeout(ctx, time.Duration(i%7)*50*time.Microsecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cancel()
			if a.Acquire(c) == nil {
				time.Sleep(20 * time.Microsecond)
				a.Release(nil)
			}
		}()
	}
	wg.Wait()
	if s := a.Stats(); s.InFlight != 0 || a.Waiting() != 0 {
		t.Fatalf("%+v, %d waiting", s, a.Waiting())
	}
	for i := 0; i < 4; i++ {
		short, cancel := context.WithTimeout(ctx, time.Second)
		err := a.Acquire(short)
		cancel()
		if err != nil {
			t.Fatalf("slot %d of 4: %v", i+1, err)
		}
	}
}

// sharedGauge counts the Stat requests in flight over every backend that uses it.
type sharedGauge struct {
	inflight, peak atomic.Int64
}

type gauged struct {
	storage.Backend
	g *sharedGauge
}

func (b *gauged) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	cur := b.g.inflight.Add(1)
	defer b.g.inflight.Add(-1)
	for {
		p := b.g.peak.Load()
		if cur <= p || b.g.peak.CompareAndSwap(p, cur) {
			break
		}
	}
	time.Sleep(2 * time.Millisecond)
	return b.Backend.Stat(ctx, key)
}

// TestSharedAdaptive: backends over one Adaptive have, together, at most its limit in
// flight, and a throttle answered to one of them lowers the limit for all.
func TestSharedAdaptive(t *testing.T) {
	a := storage.NewAdaptive(storage.AdaptiveOptions{Max: 3})
	g := &sharedGauge{}
	var bs []storage.Backend
	for range 4 {
		m := mem.New()
		m.Set("k", []byte("x"), time.Time{})
		bs = append(bs, storage.WithAdaptiveLimit(&gauged{Backend: m, g: g}, a))
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := bs[i%len(bs)].Stat(context.Background(), "k"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if p := g.peak.Load(); p != 3 {
		t.Errorf("peak of %d requests in flight over 4 backends sharing a limit of 3", p)
	}
	if err := a.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.Release(storage.Retryable(errors.New("stat: api error SlowDown: Please reduce your request rate")))
	if l := a.Limit(); l != 1 {
		t.Errorf("limit %d after a throttle, want 1 (3 halved)", l)
	}
	if st := a.Stats(); st.InFlight != 0 || st.Throttles != 1 {
		t.Errorf("stats %+v", st)
	}
}
