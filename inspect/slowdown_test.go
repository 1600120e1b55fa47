package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// slowDown answers one in five footer reads with S3's 503 SlowDown while on, and counts the
// reads in flight.
type slowDown struct {
	storage.Backend
	calls, inflight, peak atomic.Int64
	on                    atomic.Bool
	answered, refused     atomic.Int64
	offAfter              int64 // reads after which the store stops throttling
}

func (s *slowDown) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	cur := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	for p := s.peak.Load(); cur > p && !s.peak.CompareAndSwap(p, cur); p = s.peak.Load() {
	}
	time.Sleep(100 * time.Microsecond) // a round trip, so that reads overlap
	c := s.calls.Add(1)
	if c > s.offAfter {
		s.on.Store(false)
	}
	if s.on.Load() && c%5 == 0 {
		s.refused.Add(1)
		return nil, storage.Retryable(errors.New("read: StatusCode: 503, api error SlowDown: Please reduce your request rate"))
	}
	s.answered.Add(1)
	return s.Backend.ReadRange(ctx, key, off, n)
}

// TestInspectUnderSlowDown: a store that answers SlowDown to 20% of the footer reads, behind
// the decorators the CLI uses (AIMD limit under retries under the concurrency cap). Inspect
// completes with every file read; the limit backs off under the throttling and climbs back
// once it stops; the reads in flight never pass the cap.
func TestInspectUnderSlowDown(t *testing.T) {
	f := newFixture(t)
	m := mem.New(mem.WithPageSize(1000))
	const n = 3000
	for i := 0; i < n; i++ {
		m.Set(fmt.Sprintf("%s%04d.parquet", prefix, i), f.a1, t0)
	}
	sd := &slowDown{Backend: m, offAfter: n / 3}
	sd.on.Store(true)
	var (
		mu      sync.Mutex
		changes [][2]int
	)
	ab, limit := storage.WithAdaptive(sd, storage.AdaptiveOptions{Max: 64, Min: 1, OnChange: func(from, to int, _ error) {
		mu.Lock()
		changes = append(changes, [2]int{from, to})
		mu.Unlock()
	}})
	policy := storage.RetryPolicy{MaxAttempts: 10, InitialDelay: 100 * time.Microsecond, MaxDelay: 2 * time.Millisecond, Multiplier: 2}
	b := storage.WithLimit(storage.WithRetry(ab, policy), 64)

	rep, err := inspect.Run(context.Background(), b, inspect.Options{Concurrency: 64})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Files != n || rep.Totals.Unreadable != 0 {
		t.Fatalf("totals %+v: want all %d files read", rep.Totals, n)
	}
	refused := sd.refused.Load()
	if refused < n/3/5-1 || limit.Stats().Throttles != refused {
		t.Errorf("%d SlowDown answers, %d seen by the limit", refused, limit.Stats().Throttles)
	}
	if sd.peak.Load() > 64 {
		t.Errorf("%d reads in flight, over the cap of 64", sd.peak.Load())
	}
	mu.Lock()
	defer mu.Unlock()
	lowest := limit.Lowest()
	if lowest > 4 || len(changes) == 0 || changes[0] != [2]int{64, 32} {
		t.Fatalf("lowest limit %d, changes %v: want a back-off from 64", lowest, changes)
	}
	// Recovered: after the lowest point, the limit rose again, to at least 16.
	rose := 0
	for _, c := range changes {
		if c[1] > c[0] {
			rose = max(rose, c[1])
		}
	}
	if rose < 16 || limit.Limit() < 16 {
		t.Errorf("limit %d now, highest rise to %d, lowest %d: want a recovery once the throttling stopped (changes %v)", limit.Limit(), rose, lowest, changes)
	}
}
