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
	lim := storage.NewAdaptive(storage.AdaptiveOptions{Max: 2})
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

// TestDeleteAllTellsTheLimiter: a request's slot is released with its outcome; a batch whose
// keys come back throttled counts as one throttle, one whose keys fail otherwise does not.
func TestDeleteAllTellsTheLimiter(t *testing.T) {
	ctx := context.Background()
	slowDown := storage.Retryable(errors.New("delete batch: api error SlowDown: Please reduce your request rate"))
	internal := storage.Retryable(errors.New("delete batch: api error InternalError: We encountered an internal error"))
	b := &mock.BatchBackend{MaxBatch: 2, DeleteBatchFn: func(ctx context.Context, reqs []storage.DeleteRequest) ([]storage.DeleteResult, error) {
		res := make([]storage.DeleteResult, len(reqs))
		for i, r := range reqs {
			res[i].Key = r.Key
			switch r.Key {
			case "k0", "k1":
				res[i].Err = slowDown
			case "k2":
				res[i].Err = internal
			}
		}
		return res, nil
	}}
	var reqs []storage.DeleteRequest
	for i := 0; i < 6; i++ {
		reqs = append(reqs, storage.DeleteRequest{Key: fmt.Sprintf("k%d", i)})
	}
	lim := storage.NewAdaptive(storage.AdaptiveOptions{Max: 8})
	res := storage.DeleteAll(ctx, b, reqs, storage.DeleteAllOptions{Concurrency: 1, Limiter: lim})
	if !errors.Is(res[0].Err, slowDown) || !errors.Is(res[1].Err, slowDown) || !errors.Is(res[2].Err, internal) || res[5].Err != nil {
		t.Errorf("results %+v", res)
	}
	if s := lim.Stats(); s.Throttles != 1 || s.Decreases != 1 || s.Limit != 4 || s.InFlight != 0 {
		t.Errorf("limiter %+v: want one throttle (k0 and k1 in one batch), the InternalError not one", s)
	}
}

// TestDeleteAllCountsWhatWasAnswered: Done is told the keys of each request answered, batch
// or single, failed or not, and nothing of the keys not sent; its calls never overlap.
func TestDeleteAllCountsWhatWasAnswered(t *testing.T) {
	ctx := context.Background()
	m := mem.New()
	var reqs []storage.DeleteRequest
	for i := 0; i < 2500; i++ {
		k := fmt.Sprintf("k%05d", i)
		m.Set(k, []byte(k), time.Now())
		reqs = append(reqs, storage.DeleteRequest{Key: k})
	}
	var calls []int
	var busy atomic.Bool
	done := func(n int) {
		if !busy.CompareAndSwap(false, true) {
			t.Error("Done called while another call runs")
		}
		calls = append(calls, n)
		time.Sleep(time.Millisecond)
		busy.Store(false)
	}
	storage.DeleteAll(ctx, m, reqs, storage.DeleteAllOptions{Concurrency: 3, Done: done})
	if sum(calls) != 2500 || len(calls) != 3 {
		t.Errorf("batched: Done told %v, want 3 batches of 2500 keys", calls)
	}

	calls = nil
	b := &mock.Backend{DeleteFn: func(ctx context.Context, key string, cond storage.Precondition) error {
		if key == "k00003" {
			return errors.New("access denied")
		}
		return nil
	}}
	storage.DeleteAll(ctx, b, reqs[:10], storage.DeleteAllOptions{Concurrency: 4, Done: done})
	if sum(calls) != 10 || len(calls) != 10 {
		t.Errorf("single deletes: Done told %v, want 10 calls of 1 key", calls)
	}

	calls = nil
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	storage.DeleteAll(cctx, b, reqs[:10], storage.DeleteAllOptions{Done: done})
	if len(calls) != 0 {
		t.Errorf("nothing was sent, Done told %v", calls)
	}
}

func sum(ns []int) int {
	t := 0
	for _, n := range ns {
		t += n
	}
	return t
}
