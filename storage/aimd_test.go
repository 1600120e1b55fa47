package storage_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
	"github.com/zbrecover/zbrecover/storage/mock"
)

func TestAIMDHalvesAndRecovers(t *testing.T) {
	var changes []string
	a := storage.NewAIMD(storage.AIMDOptions{Start: 8, Max: 8, Cooldown: time.Hour,
		OnChange: func(n int, why string) { changes = append(changes, fmt.Sprint(n, " ", why)) }})
	a.Throttled()
	a.Throttled() // within the cooldown: counted, not halved again
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
	// Successes grow the limit by about one per round of limit requests.
	for i := 0; i < 4; i++ {
		a.Release(false)
	}
	if got := a.Limit(); got != 4 {
		t.Errorf("after four successes: %d, want still 4", got)
	}
	if err := a.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	a.Release(false)
	if got := a.Limit(); got != 5 {
		t.Errorf("after five successes: %d, want 5", got)
	}
	for i := 0; i < 100; i++ {
		if err := a.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		a.Release(false)
	}
	if got := a.Limit(); got != 8 {
		t.Errorf("recovered to %d, want the max 8", got)
	}
	if len(changes) == 0 || changes[0] != "4 throttled" || changes[len(changes)-1] != "8 recovered" {
		t.Errorf("changes %q", changes)
	}
	// Never below Min.
	b := storage.NewAIMD(storage.AIMDOptions{Max: 2, Cooldown: time.Nanosecond})
	for i := 0; i < 5; i++ {
		b.Throttled()
		time.Sleep(time.Millisecond)
	}
	if b.Limit() != 1 {
		t.Errorf("min: %d", b.Limit())
	}
}

func TestDeleteAllReportsEveryKey(t *testing.T) {
	ctx := context.Background()
	var inflight, peak atomic.Int64
	b := &mock.Backend{DeleteFn: func(ctx context.Context, key string, cond storage.Precondition) error {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		switch key {
		case "k3":
			return fmt.Errorf("delete %s: %w", key, storage.ErrPreconditionFailed)
		case "k5":
			return fmt.Errorf("delete %s: %w", key, storage.ErrNotExist)
		case "k7":
			return errors.New("access denied")
		}
		return nil
	}}
	var reqs []storage.DeleteRequest
	for i := 0; i < 40; i++ {
		reqs = append(reqs, storage.DeleteRequest{Key: fmt.Sprintf("k%d", i)})
	}
	res := storage.DeleteAll(ctx, b, reqs, storage.DeleteAllOptions{Concurrency: 4})
	if len(res) != 40 || peak.Load() > 4 {
		t.Fatalf("%d results, peak %d in flight", len(res), peak.Load())
	}
	for i, r := range res {
		want := ""
		switch i {
		case 3:
			want = "precondition"
		case 5:
			want = "does not exist"
		case 7:
			want = "access denied"
		}
		if r.Key != reqs[i].Key || (want == "") != (r.Err == nil) || want != "" && !strings.Contains(r.Err.Error(), want) {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	// A cancelled context: nothing is sent, every key says so.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for _, r := range storage.DeleteAll(cctx, b, reqs[:3], storage.DeleteAllOptions{}) {
		if !errors.Is(r.Err, context.Canceled) || !strings.Contains(r.Err.Error(), "not sent") {
			t.Errorf("cancelled: %+v", r)
		}
	}
}

func TestDeleteAllBatches(t *testing.T) {
	ctx := context.Background()
	m := mem.New()
	var reqs []storage.DeleteRequest
	for i := 0; i < 2500; i++ {
		k := fmt.Sprintf("k%05d", i)
		m.Set(k, []byte(k), time.Now())
		o, _ := m.Stat(ctx, k)
		reqs = append(reqs, storage.DeleteRequest{Key: k, Cond: o.Version()})
	}
	m.Set("k00010", []byte("changed"), time.Now())
	counted, c := storage.WithCounting(m)
	lim := storage.NewAIMD(storage.AIMDOptions{Max: 2})
	res := storage.DeleteAll(ctx, counted, reqs, storage.DeleteAllOptions{Limiter: lim})
	if n := c.Counts(); n.DeleteBatches != 3 || n.Deletes != 0 || n.BatchKeys != 2500 {
		t.Errorf("requests %s", n)
	}
	for i, r := range res {
		if (i == 10) != errors.Is(r.Err, storage.ErrPreconditionFailed) || i != 10 && r.Err != nil {
			t.Errorf("result %d: %+v", i, r)
		}
	}
	if lim.Stats().InFlight != 0 {
		t.Errorf("limiter %+v", lim.Stats())
	}
}
