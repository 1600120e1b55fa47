package cleanup

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/azure/azuretest"
	"github.com/zbrecover/zbrecover/storage/gcs/gcstest"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

func TestMain(m *testing.M) { azuretest.Main(m) }

type emulator interface {
	storagetest.Emulator
	Counts() storagetest.Counts
	ResetCounts()
}

// onEmulator opens root on srv with the SDK's own retries off (WithRetry does them).
func onEmulator(t *testing.T, srv emulator, cfg storage.Config, root string) storage.Backend {
	t.Helper()
	cfg.MaxAttempts = 1
	b, err := all.Registry().Open(context.Background(), srv.URLFor(root), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func putFiles(t *testing.T, srv storagetest.Emulator, root string, n int) []string {
	t.Helper()
	var keys []string
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("%s2026/01/01/f-%05d.parquet", prefix, i)
		if err := srv.Put(root+"/"+k, []byte("parquet bytes of "+k)); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return keys
}

// TestRequestsPer1000Deletes cleans 1,000 verified files on each store and counts the
// requests the store received (docs/performance.md records the figures).
func TestRequestsPer1000Deletes(t *testing.T) {
	const n = 1000
	type store struct {
		name string
		open func(t *testing.T) (storage.Backend, []string, func() storagetest.Counts)
		want func(c storage.RequestCounts) bool
	}
	emu := func(srv emulator, cfg storage.Config) func(t *testing.T) (storage.Backend, []string, func() storagetest.Counts) {
		return func(t *testing.T) (storage.Backend, []string, func() storagetest.Counts) {
			keys := putFiles(t, srv, "root", n)
			return onEmulator(t, srv, cfg, "root"), keys, srv.Counts
		}
	}
	stores := []store{
		{"s3", func(t *testing.T) (storage.Backend, []string, func() storagetest.Counts) {
			srv := s3test.NewServer(t)
			return emu(srv, srv.Config())(t)
		}, func(c storage.RequestCounts) bool { return c.DeleteBatches == 1 && c.Deletes == 0 }},
		{"gcs", func(t *testing.T) (storage.Backend, []string, func() storagetest.Counts) {
			srv := gcstest.NewServer(t)
			return emu(srv, srv.Config())(t)
		}, func(c storage.RequestCounts) bool { return c.Deletes == n && c.DeleteBatches == 0 }},
		{"azure", func(t *testing.T) (storage.Backend, []string, func() storagetest.Counts) {
			srv := azuretest.NewServer(t)
			return emu(srv, srv.Config())(t)
		}, func(c storage.RequestCounts) bool { return c.DeleteBatches == 4 && c.Deletes == 0 }},
		{"local", func(t *testing.T) (storage.Backend, []string, func() storagetest.Counts) {
			dir := t.TempDir()
			var keys []string
			for i := 0; i < n; i++ {
				k := fmt.Sprintf("%s2026/01/01/f-%05d.parquet", prefix, i)
				p := dir + "/" + k
				if err := os.MkdirAll(p[:len(p)-len("f-00000.parquet")], 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("parquet bytes of "+k), 0o644); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, k)
			}
			b, err := all.Registry().Open(context.Background(), dir, storage.Config{})
			if err != nil {
				t.Fatal(err)
			}
			return b, keys, nil
		}, func(c storage.RequestCounts) bool { return c.Deletes == n && c.DeleteBatches == 0 }},
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			raw, keys, httpCounts := s.open(t)
			fx := newFixture(t)
			st := fx.verified(t, raw, keys, nil, time.Now())
			var before storagetest.Counts
			if httpCounts != nil {
				before = httpCounts()
			}
			counted, c := storage.WithCounting(raw)
			start := time.Now()
			rep, err := run(context.Background(), storage.WithRetry(counted, storage.RetryPolicy{}), st, fx.cont(t, st), Options{Concurrency: 16})
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			if rep.Deleted != n || rep.After != journal.RunCleaned {
				t.Fatalf("deleted %d, %s; problems %+v", rep.Deleted, rep.After, rep.Problems)
			}
			got := c.Counts()
			if !s.want(got) || got.Total() != got.Deletes+got.DeleteBatches {
				t.Errorf("requests for %d deletes: %s", n, got)
			}
			line := fmt.Sprintf("%s: %d files deleted with %d requests (%s) in %s", s.name, n, got.Total(), got, took.Round(time.Millisecond))
			if httpCounts != nil {
				h := httpCounts()
				line += fmt.Sprintf("; the emulator saw %d delete and %d batch-delete requests", h.Deletes-before.Deletes, h.BatchDeletes-before.BatchDeletes)
				if h.Deletes-before.Deletes != got.Deletes || h.BatchDeletes-before.BatchDeletes != got.DeleteBatches {
					t.Errorf("the emulator counted otherwise: %s", h)
				}
			}
			t.Log(line)
			var left int
			_ = raw.List(context.Background(), prefix, func(storage.ObjectInfo) error { left++; return nil })
			if left != 0 {
				t.Errorf("%d files left", left)
			}
		})
	}
}

// TestS3SlowDown: the emulator answers 503 SlowDown to two of the three DeleteObjects
// requests first; the retries succeed, the limiter halves the concurrency, and every file
// is deleted with 3 + 2 requests.
func TestS3SlowDown(t *testing.T) {
	srv := s3test.NewServer(t)
	keys := putFiles(t, srv, "root", 3000)
	raw := onEmulator(t, srv, srv.Config(), "root")
	fx := newFixture(t)
	st := fx.verified(t, raw, keys, nil, time.Now())
	var mu sync.Mutex
	var retries []string
	lim := storage.NewAdaptive(storage.AdaptiveOptions{Start: 4, Max: 8})
	policy := storage.RetryPolicy{InitialDelay: 10 * time.Millisecond, OnRetry: lim.OnRetry(func(op string, attempt int, err error, wait time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		retries = append(retries, fmt.Sprintf("%s try %d: %v; waiting %s", op, attempt, err, wait))
	})}
	counted, c := storage.WithCounting(raw)
	srv.FailNext(storagetest.KindBatchDelete, 503, 2)
	rep, err := run(context.Background(), storage.WithRetry(counted, policy), st, fx.cont(t, st), Options{Concurrency: 8, Limiter: lim})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != 3000 || rep.Failed != 0 || rep.After != journal.RunCleaned {
		t.Fatalf("deleted %d failed %d %s: %+v", rep.Deleted, rep.Failed, rep.After, rep.Problems)
	}
	if n := c.Counts(); n.DeleteBatches != 5 || srv.Counts().BatchDeletes != 5 {
		t.Errorf("requests: %s; emulator %s", n, srv.Counts())
	}
	if len(retries) != 2 || rep.Limiter.Throttles != 2 || rep.Limiter.Decreases < 1 {
		t.Errorf("retries %q, limiter %+v", retries, rep.Limiter)
	}
	for _, r := range retries {
		if !strings.Contains(r, "SlowDown") && !strings.Contains(r, "503") {
			t.Errorf("retry not for throttling: %s", r)
		}
	}
	t.Logf("retries: %q; limiter %+v; requests %s", retries, rep.Limiter, c.Counts())
}
