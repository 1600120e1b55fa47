package storage_test

import (
	"bytes"
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
	"github.com/zbrecover/zbrecover/storage/local"
	"github.com/zbrecover/zbrecover/storage/mem"
	"github.com/zbrecover/zbrecover/storage/mock"
	"github.com/zbrecover/zbrecover/storage/s3"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

var errTransient = storage.Retryable(errors.New("503 SlowDown"))

// noSleep records the waits instead of sleeping.
type noSleep struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (n *noSleep) sleep(ctx context.Context, d time.Duration) error {
	n.mu.Lock()
	n.waits = append(n.waits, d)
	n.mu.Unlock()
	return ctx.Err()
}

func policy(n *noSleep) storage.RetryPolicy {
	return storage.RetryPolicy{MaxAttempts: 4, InitialDelay: 100 * time.Millisecond, MaxDelay: time.Second, Multiplier: 2, Sleep: n.sleep}
}

func TestRetryTransientThenSuccess(t *testing.T) {
	var calls int
	m := &mock.Backend{StatFn: func(context.Context, string) (storage.ObjectInfo, error) {
		calls++
		if calls < 3 {
			return storage.ObjectInfo{}, fmt.Errorf("stat k: %w", errTransient)
		}
		return storage.ObjectInfo{Key: "k", Size: 7}, nil
	}}
	ns := &noSleep{}
	o, err := storage.WithRetry(m, policy(ns)).Stat(context.Background(), "k")
	if err != nil || o.Size != 7 {
		t.Fatalf("Stat = %+v, %v", o, err)
	}
	if calls != 3 || len(ns.waits) != 2 {
		t.Errorf("%d calls and %d waits, want 3 and 2", calls, len(ns.waits))
	}
	// Exponential with jitter: wait i lies in [d/2, d] with d = 100ms * 2^(i-1).
	for i, w := range ns.waits {
		d := 100 * time.Millisecond << i
		if w < d/2 || w > d {
			t.Errorf("wait %d = %v, want within [%v, %v]", i+1, w, d/2, d)
		}
	}
}

func TestRetryGivesUp(t *testing.T) {
	var calls int
	m := &mock.Backend{DeleteFn: func(context.Context, string, storage.Precondition) error {
		calls++
		return errTransient
	}}
	ns := &noSleep{}
	err := storage.WithRetry(m, policy(ns)).Delete(context.Background(), "k", storage.Precondition{})
	if !errors.Is(err, errTransient) || !strings.Contains(err.Error(), "gave up after 4 tries") {
		t.Errorf("Delete = %v", err)
	}
	if calls != 4 {
		t.Errorf("%d calls, want MaxAttempts = 4", calls)
	}
	for i, w := range ns.waits {
		if w > time.Second {
			t.Errorf("wait %d = %v exceeds MaxDelay", i+1, w)
		}
	}
}

func TestRetryNeverRetries(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"permanent", errors.New("403 AccessDenied")},
		{"not exist", storage.Retryable(fmt.Errorf("stat: %w", storage.ErrNotExist))},
		{"precondition", storage.Retryable(fmt.Errorf("delete: %w", storage.ErrPreconditionFailed))},
		{"canceled", storage.Retryable(fmt.Errorf("stat: %w", context.Canceled))},
		{"deadline", storage.Retryable(context.DeadlineExceeded)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls int
			m := &mock.Backend{DeleteFn: func(context.Context, string, storage.Precondition) error {
				calls++
				return tc.err
			}}
			err := storage.WithRetry(m, policy(&noSleep{})).Delete(context.Background(), "k", storage.Precondition{ETag: `"x"`})
			if !errors.Is(err, tc.err) || calls != 1 {
				t.Errorf("Delete = %v after %d calls; want the error after 1 call", err, calls)
			}
		})
	}
}

func TestRetryStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls int
	m := &mock.Backend{StatFn: func(context.Context, string) (storage.ObjectInfo, error) {
		calls++
		cancel()
		return storage.ObjectInfo{}, errTransient
	}}
	p := storage.RetryPolicy{MaxAttempts: 10, InitialDelay: time.Hour}
	_, err := storage.WithRetry(m, p).Stat(ctx, "k")
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("Stat = %v after %d calls; want context.Canceled after 1 call, without waiting an hour", err, calls)
	}
}

// flaky serves data but breaks the stream after cut bytes, once.
type flaky struct {
	data  []byte
	cut   int
	opens []string
	broke bool
}

func (f *flaky) readRange(_ context.Context, _ string, off, n int64) (io.ReadCloser, error) {
	f.opens = append(f.opens, fmt.Sprintf("%d+%d", off, n))
	end := int64(len(f.data))
	if n >= 0 {
		end = min(off+n, end)
	}
	part := f.data[off:end]
	if !f.broke && len(part) > f.cut {
		f.broke = true
		return io.NopCloser(io.MultiReader(bytes.NewReader(part[:f.cut]), errReader{io.ErrUnexpectedEOF})), nil
	}
	return io.NopCloser(bytes.NewReader(part)), nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestRetryResumesBrokenRead(t *testing.T) {
	data := []byte("0123456789abcdefghijklmnopqrstuvwxyz")
	for _, n := range []int64{20, -1} {
		f := &flaky{data: data, cut: 7}
		b := storage.WithRetry(&mock.Backend{ReadRangeFn: f.readRange}, policy(&noSleep{}))
		got, err := storage.ReadAll(context.Background(), b, "k", 5, n)
		want := data[5:]
		if n >= 0 {
			want = data[5 : 5+n]
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("n=%d: read %q, %v; want %q", n, got, err, want)
		}
		if wantOpens := fmt.Sprintf("[5+%d %d+%d]", n, 12, map[bool]int64{true: n - 7, false: -1}[n >= 0]); fmt.Sprint(f.opens) != wantOpens {
			t.Errorf("n=%d: opened %v, want %s (resume after the 7 bytes delivered)", n, f.opens, wantOpens)
		}
	}
	// Without retry, the break surfaces.
	f := &flaky{data: data, cut: 7}
	if _, err := storage.ReadAll(context.Background(), &mock.Backend{ReadRangeFn: f.readRange}, "k", 0, -1); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("plain read of a broken stream: %v", err)
	}
}

func TestRetryBatchRepeatsOnlyRetryableKeys(t *testing.T) {
	var batches [][]string
	m := &mock.BatchBackend{DeleteBatchFn: func(_ context.Context, reqs []storage.DeleteRequest) ([]storage.DeleteResult, error) {
		var keys []string
		res := make([]storage.DeleteResult, len(reqs))
		for i, r := range reqs {
			keys = append(keys, r.Key)
			res[i].Key = r.Key
			switch {
			case r.Key == "busy" && len(batches) == 0:
				res[i].Err = errTransient
			case r.Key == "changed":
				res[i].Err = storage.ErrPreconditionFailed
			}
		}
		batches = append(batches, keys)
		if len(batches) == 1 && len(reqs) == 3 {
			return nil, errTransient // the whole first call fails
		}
		return res, nil
	}}
	b := storage.WithRetry(m, policy(&noSleep{}))
	bd, ok := storage.AsBatchDeleter(b)
	if !ok {
		t.Fatal("WithRetry dropped BatchDeleter")
	}
	res, err := bd.DeleteBatch(context.Background(), []storage.DeleteRequest{{Key: "a"}, {Key: "busy"}, {Key: "changed"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(batches); got != "[[a busy changed] [a busy changed]]" {
		// The first call failed whole and the second succeeded: no third call.
		t.Errorf("batches %s", got)
	}
	if res[0].Err != nil || res[1].Err != nil || !errors.Is(res[2].Err, storage.ErrPreconditionFailed) {
		t.Errorf("results %+v", res)
	}

	// A per-key retryable failure repeats that key alone.
	batches = nil
	calls := 0
	m.DeleteBatchFn = func(_ context.Context, reqs []storage.DeleteRequest) ([]storage.DeleteResult, error) {
		calls++
		var keys []string
		res := make([]storage.DeleteResult, len(reqs))
		for i, r := range reqs {
			keys = append(keys, r.Key)
			res[i].Key = r.Key
			if r.Key == "busy" && calls == 1 {
				res[i].Err = errTransient
			}
		}
		batches = append(batches, keys)
		return res, nil
	}
	res, err = bd.DeleteBatch(context.Background(), []storage.DeleteRequest{{Key: "a"}, {Key: "busy"}})
	if err != nil || res[1].Err != nil || res[1].Key != "busy" {
		t.Fatalf("DeleteBatch = %+v, %v", res, err)
	}
	if got := fmt.Sprint(batches); got != "[[a busy] [busy]]" {
		t.Errorf("batches %s, want the busy key resent alone", got)
	}
}

func TestRetryListRepeatsPages(t *testing.T) {
	fails := 1
	var tokens []string
	m := &mock.PagedBackend{ListPageFn: func(_ context.Context, _, token string) ([]storage.ObjectInfo, string, error) {
		tokens = append(tokens, token)
		if token == "p2" && fails > 0 {
			fails--
			return nil, "", errTransient
		}
		switch token {
		case "":
			return []storage.ObjectInfo{{Key: "a"}}, "p2", nil
		case "p2":
			return []storage.ObjectInfo{{Key: "b"}}, "", nil
		}
		return nil, "", errors.New("bad token")
	}}
	b := storage.WithRetry(m, policy(&noSleep{}))
	var keys []string
	if err := b.List(context.Background(), "", func(o storage.ObjectInfo) error { keys = append(keys, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(keys) != "[a b]" || fmt.Sprint(tokens) != "[ p2 p2]" {
		t.Errorf("keys %v after page requests %q; want [a b] with only the failed page repeated", keys, tokens)
	}
}

func TestRetryListWithoutPagesAfterStart(t *testing.T) {
	calls := 0
	m := &mock.Backend{ListFn: func(_ context.Context, _ string, fn func(storage.ObjectInfo) error) error {
		calls++
		if err := fn(storage.ObjectInfo{Key: "a"}); err != nil {
			return err
		}
		return errTransient
	}}
	seen := 0
	err := storage.WithRetry(m, policy(&noSleep{})).List(context.Background(), "", func(storage.ObjectInfo) error { seen++; return nil })
	if err == nil || calls != 1 || seen != 1 {
		t.Errorf("List = %v after %d calls, %d objects; want the error without a repeat (objects were delivered)", err, calls, seen)
	}
}

func TestLimit(t *testing.T) {
	var cur, peak atomic.Int64
	release := make(chan struct{})
	m := &mock.Backend{StatFn: func(context.Context, string) (storage.ObjectInfo, error) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		cur.Add(-1)
		return storage.ObjectInfo{}, nil
	}}
	b := storage.WithLimit(m, 3)
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = b.Stat(context.Background(), "k")
		}()
	}
	for cur.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // room for a fourth request, if the limit leaked
	close(release)
	wg.Wait()
	if peak.Load() != 3 {
		t.Errorf("peak concurrency %d, want 3", peak.Load())
	}
}

func TestLimitHoldsSlotUntilReaderCloses(t *testing.T) {
	m := &mock.Backend{
		ReadRangeFn: func(context.Context, string, int64, int64) (io.ReadCloser, error) {
			return io.NopCloser(strings.NewReader("x")), nil
		},
		StatFn: func(context.Context, string) (storage.ObjectInfo, error) { return storage.ObjectInfo{}, nil },
	}
	b := storage.WithLimit(m, 1)
	rc, err := b.ReadRange(context.Background(), "k", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := b.Stat(ctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stat while the only slot is held by an open reader: %v, want it to wait", err)
	}
	rc.Close()
	rc.Close() // closing twice releases once
	if _, err := b.Stat(context.Background(), "k"); err != nil {
		t.Errorf("Stat after the reader closed: %v", err)
	}
	// A failed open gives its slot back.
	m.ReadRangeFn = func(context.Context, string, int64, int64) (io.ReadCloser, error) { return nil, storage.ErrNotExist }
	for i := 0; i < 3; i++ {
		if _, err := b.ReadRange(context.Background(), "k", 0, 1); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("ReadRange = %v", err)
		}
	}
}

func TestDryRun(t *testing.T) {
	var lines []string
	m := &mock.BatchBackend{
		Backend: mock.Backend{
			LocationFn: func() string { return "s3://bucket/root" },
			StatFn: func(context.Context, string) (storage.ObjectInfo, error) {
				return storage.ObjectInfo{Key: "k", Size: 3}, nil
			},
			DeleteFn: func(context.Context, string, storage.Precondition) error {
				t.Error("dry run deleted")
				return nil
			},
			PutFn: func(context.Context, string, io.Reader, int64, storage.PutOptions) (storage.ObjectInfo, error) {
				t.Error("dry run wrote")
				return storage.ObjectInfo{}, nil
			},
			CopyFn: func(context.Context, string, string, storage.Precondition, storage.PutOptions) (storage.ObjectInfo, error) {
				t.Error("dry run copied")
				return storage.ObjectInfo{}, nil
			},
		},
		DeleteBatchFn: func(context.Context, []storage.DeleteRequest) ([]storage.DeleteResult, error) {
			t.Error("dry run deleted a batch")
			return nil, nil
		},
	}
	b := storage.DryRun(m, func(l string) { lines = append(lines, l) })
	ctx := context.Background()
	if o, err := b.Stat(ctx, "k"); err != nil || o.Size != 3 {
		t.Errorf("Stat through a dry run = %+v, %v", o, err)
	}
	if err := b.Delete(ctx, "dir/a.parquet", storage.Precondition{ETag: `"e1"`, Size: 10}); err != nil {
		t.Fatal(err)
	}
	bd, _ := storage.AsBatchDeleter(b)
	res, err := bd.DeleteBatch(ctx, []storage.DeleteRequest{{Key: "b"}, {Key: "c", Cond: storage.Precondition{Generation: 42, Size: 5}}})
	if err != nil || len(res) != 2 || res[0].Key != "b" || res[1].Err != nil {
		t.Fatalf("DeleteBatch = %+v, %v", res, err)
	}
	p, ok := storage.AsPutter(b)
	if !ok {
		t.Fatal("DryRun over a Putter is not a Putter")
	}
	if o, err := p.Put(ctx, "new/f", strings.NewReader("0123456789"), 10, storage.PutOptions{CreateOnly: true}); err != nil || o.Key != "new/f" || o.Size != 10 {
		t.Errorf("dry-run Put = %+v, %v", o, err)
	}
	c, ok := storage.AsCopier(b)
	if !ok {
		t.Fatal("DryRun over a Copier is not a Copier")
	}
	if o, err := c.Copy(ctx, "a", "archive/a", storage.Precondition{ETag: `"e2"`, Size: 4}, storage.PutOptions{}); err != nil || o.Key != "archive/a" {
		t.Errorf("dry-run Copy = %+v, %v", o, err)
	}
	want := []string{
		`would delete s3://bucket/root/dir/a.parquet (size 10, ETag "e1")`,
		`would delete s3://bucket/root/b`,
		`would delete s3://bucket/root/c (size 5, generation 42)`,
		`would write s3://bucket/root/new/f (size 10, create-only)`,
		`would copy s3://bucket/root/a (size 4, ETag "e2") to s3://bucket/root/archive/a`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestDecoratorsKeepCapabilities(t *testing.T) {
	put := func(context.Context, string, io.Reader, int64, storage.PutOptions) (storage.ObjectInfo, error) {
		return storage.ObjectInfo{}, nil
	}
	cp := func(context.Context, string, string, storage.Precondition, storage.PutOptions) (storage.ObjectInfo, error) {
		return storage.ObjectInfo{}, nil
	}
	inners := []storage.Backend{
		&mock.Backend{},
		&mock.BatchBackend{},
		&mock.PagedBackend{},
		&mock.Backend{PutFn: put},
		&mock.Backend{CopyFn: cp},
		&mock.BatchBackend{Backend: mock.Backend{PutFn: put, CopyFn: cp}},
		&mock.PagedBackend{Backend: mock.Backend{PutFn: put}},
		local.New(t.TempDir()),
		mem.New(),
	}
	wrap := map[string]func(storage.Backend) storage.Backend{
		"adaptive": func(b storage.Backend) storage.Backend {
			a, _ := storage.WithAdaptive(b, storage.AdaptiveOptions{})
			return a
		},
		"limit":    func(b storage.Backend) storage.Backend { return storage.WithLimit(b, 2) },
		"retry":    func(b storage.Backend) storage.Backend { return storage.WithRetry(b, storage.RetryPolicy{}) },
		"counting": func(b storage.Backend) storage.Backend { c, _ := storage.WithCounting(b); return c },
		"latency":  func(b storage.Backend) storage.Backend { return storage.WithLatency(b, 0) },
		"dry run":  func(b storage.Backend) storage.Backend { return storage.DryRun(b, nil) },
	}
	ctx := context.Background()
	for name, w := range wrap {
		for _, inner := range inners {
			want := storage.CapabilitiesOf(inner)
			got := w(w(inner))
			if c := storage.CapabilitiesOf(got); c != want {
				t.Errorf("%s over %T (%s): capabilities %s", name, inner, want, c)
			}
			_, batch := storage.AsBatchDeleter(got)
			_, pager := storage.AsPager(got)
			_, putter := storage.AsPutter(got)
			_, copier := storage.AsCopier(got)
			_, copierFrom := storage.AsCopierFrom(got)
			if batch != want.Has(storage.CanBatchDelete) || pager != want.Has(storage.CanListPages) ||
				putter != want.Has(storage.CanPut) || copier != want.Has(storage.CanCopy) || copierFrom != want.Has(storage.CanCopyFrom) {
				t.Errorf("%s over %T (%s): As helpers say batch %v, pager %v, putter %v, copier %v, copier from %v",
					name, inner, want, batch, pager, putter, copier, copierFrom)
			}
			if storage.Unwrap(got) != inner {
				t.Errorf("%s over %T: Unwrap = %T", name, inner, storage.Unwrap(got))
			}
			// A method the inner backend lacks fails with ErrNotSupported, without a request.
			if !want.Has(storage.CanPut) {
				if _, err := got.(storage.Putter).Put(ctx, "k", strings.NewReader(""), 0, storage.PutOptions{}); !errors.Is(err, storage.ErrNotSupported) {
					t.Errorf("%s over %T: Put = %v, want ErrNotSupported", name, inner, err)
				}
			}
			if !want.Has(storage.CanCopy) {
				if _, err := got.(storage.Copier).Copy(ctx, "a", "b", storage.Precondition{}, storage.PutOptions{}); !errors.Is(err, storage.ErrNotSupported) {
					t.Errorf("%s over %T: Copy = %v, want ErrNotSupported", name, inner, err)
				}
			}
			if !want.Has(storage.CanCopyFrom) {
				if _, err := got.(storage.CopierFrom).CopyFrom(ctx, inner, "a", "b", storage.Precondition{}, storage.PutOptions{}); !errors.Is(err, storage.ErrNotSupported) {
					t.Errorf("%s over %T: CopyFrom = %v, want ErrNotSupported", name, inner, err)
				}
			}
			if !want.Has(storage.CanBatchDelete) {
				if _, err := got.(storage.BatchDeleter).DeleteBatch(ctx, []storage.DeleteRequest{{Key: "k"}}); !errors.Is(err, storage.ErrNotSupported) {
					t.Errorf("%s over %T: DeleteBatch = %v, want ErrNotSupported", name, inner, err)
				}
			}
		}
	}
}

// TestCountingMatchesTheWire checks the Counter against the requests the S3 emulator saw,
// list pages included.
func TestCountingMatchesTheWire(t *testing.T) {
	srv := s3test.NewServer(t)
	for i := 0; i < 5; i++ {
		storagetest.MustPut(t, srv.Put, fmt.Sprintf("p/f%d", i), make([]byte, 50))
	}
	cfg := srv.Config()
	cfg.PageSize = 2
	b, counter := storage.WithCounting(storagetest.OpenURL(t, s3.New, srv.URLFor("p"), cfg))
	b = storage.WithRetry(storage.WithLimit(b, 4), storage.RetryPolicy{})
	ctx := context.Background()
	srv.ResetCounts()
	objs := storagetest.ListAndReadTails(t, b, 8)
	if _, err := b.Stat(ctx, objs[0].Key); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, objs[0].Key, objs[0].Version()); err != nil {
		t.Fatal(err)
	}
	bd, _ := storage.AsBatchDeleter(b)
	if _, err := bd.DeleteBatch(ctx, []storage.DeleteRequest{{Key: objs[1].Key}, {Key: objs[2].Key}}); err != nil {
		t.Fatal(err)
	}
	got, wire := counter.Counts(), srv.Counts()
	want := storage.RequestCounts{ListPages: 3, ReadRanges: 5, Stats: 1, Deletes: 1, DeleteBatches: 1, BatchKeys: 2}
	if got != want {
		t.Errorf("counted %s\nwant    %s", got, want)
	}
	if wire.ListPages != got.ListPages || wire.Gets != got.ReadRanges || wire.Heads != got.Stats ||
		wire.Deletes != got.Deletes || wire.BatchDeletes != got.DeleteBatches || wire.Total() != got.Total() {
		t.Errorf("counted %s, the emulator saw %s", got, wire)
	}
	counter.Reset()
	if counter.Counts() != (storage.RequestCounts{}) {
		t.Error("Reset left counts")
	}
}

func TestLatency(t *testing.T) {
	dir := t.TempDir()
	b := storage.WithLatency(local.New(dir), 15*time.Millisecond)
	start := time.Now()
	_, _ = b.Stat(context.Background(), "missing")
	_ = b.List(context.Background(), "", func(storage.ObjectInfo) error { return nil })
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("two requests took %v with 15ms of latency each", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := storage.WithLatency(local.New(dir), time.Hour).Stat(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Stat with a cancelled context behind an hour of latency: %v", err)
	}
}

func TestIsRetryable(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("plain"), false},
		{storage.Retryable(errors.New("503")), true},
		{fmt.Errorf("wrapped: %w", storage.Retryable(errors.New("503"))), true},
		{storage.Retryable(fmt.Errorf("x: %w", storage.ErrNotExist)), false},
		{storage.Retryable(fmt.Errorf("x: %w", storage.ErrPreconditionFailed)), false},
		{storage.Retryable(fmt.Errorf("x: %w", context.Canceled)), false},
	}
	for _, c := range cases {
		if got := storage.IsRetryable(c.err); got != c.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if storage.Retryable(nil) != nil {
		t.Error("Retryable(nil) != nil")
	}
	for code, want := range map[int]bool{408: true, 429: true, 500: true, 502: true, 503: true, 504: true, 400: false, 403: false, 404: false, 412: false, 416: false} {
		if storage.RetryableStatus(code) != want {
			t.Errorf("RetryableStatus(%d) = %v", code, !want)
		}
	}
	if !storage.IsTransientNetwork(fmt.Errorf("read: %w", io.ErrUnexpectedEOF)) || storage.IsTransientNetwork(context.Canceled) {
		t.Error("IsTransientNetwork misclassifies")
	}
}

func TestRedactError(t *testing.T) {
	inner := fmt.Errorf("GET https://acct.blob.core.windows.net/c/b?sv=2024&sig=c2VjcmV0: %w", storage.ErrNotExist)
	err := storage.RedactError(inner)
	if strings.Contains(err.Error(), "c2VjcmV0") || !strings.Contains(err.Error(), "sig="+storage.Redacted) {
		t.Errorf("RedactError = %q", err)
	}
	if !errors.Is(err, storage.ErrNotExist) {
		t.Error("RedactError lost the wrapped sentinel")
	}
}

// A Put is retried only when its data can be read again, from where it started; an ErrExist
// after a lost answer says that an earlier try was made.
func TestRetryPut(t *testing.T) {
	var calls int
	var got []string
	m := &mock.Backend{PutFn: func(_ context.Context, _ string, r io.Reader, _ int64, opts storage.PutOptions) (storage.ObjectInfo, error) {
		calls++
		data, _ := io.ReadAll(r)
		got = append(got, string(data))
		switch {
		case calls == 1:
			return storage.ObjectInfo{}, errTransient
		case opts.CreateOnly:
			return storage.ObjectInfo{}, fmt.Errorf("put k: %w", storage.ErrExist)
		}
		return storage.ObjectInfo{Key: "k", Size: int64(len(data))}, nil
	}}
	b, _ := storage.AsPutter(storage.WithRetry(m, policy(&noSleep{})))
	ctx := context.Background()
	r := strings.NewReader("xxdata")
	r.Seek(2, io.SeekStart)
	if o, err := b.Put(ctx, "k", r, 4, storage.PutOptions{}); err != nil || o.Size != 4 {
		t.Fatalf("Put = %+v, %v", o, err)
	}
	if strings.Join(got, ",") != "data,data" {
		t.Errorf("tries read %q, want the data twice from its start", got)
	}
	calls, got = 0, nil
	if _, err := b.Put(ctx, "k", io.MultiReader(strings.NewReader("data")), 4, storage.PutOptions{}); !errors.Is(err, errTransient) || storage.IsRetryable(err) || calls != 1 {
		t.Errorf("Put from a plain reader: %v after %d calls; want the first error, not retried", err, calls)
	}
	calls = 0
	_, err := b.Put(ctx, "k", strings.NewReader("data"), 4, storage.PutOptions{CreateOnly: true})
	if !errors.Is(err, storage.ErrExist) || !strings.Contains(err.Error(), "earlier try") {
		t.Errorf("create-only Put after a lost answer: %v", err)
	}
}

func TestLimitCoversWrites(t *testing.T) {
	var inFlight, peak atomic.Int64
	hold := func() {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		inFlight.Add(-1)
	}
	m := &mock.Backend{
		PutFn: func(context.Context, string, io.Reader, int64, storage.PutOptions) (storage.ObjectInfo, error) {
			hold()
			return storage.ObjectInfo{}, nil
		},
		CopyFn: func(context.Context, string, string, storage.Precondition, storage.PutOptions) (storage.ObjectInfo, error) {
			hold()
			return storage.ObjectInfo{}, nil
		},
	}
	b := storage.WithLimit(m, 2)
	p, _ := storage.AsPutter(b)
	c, _ := storage.AsCopier(b)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _ = p.Put(context.Background(), "k", bytes.NewReader(nil), 0, storage.PutOptions{})
		}()
		go func() {
			defer wg.Done()
			_, _ = c.Copy(context.Background(), "a", "b", storage.Precondition{}, storage.PutOptions{})
		}()
	}
	wg.Wait()
	if peak.Load() != 2 {
		t.Errorf("%d puts and copies at once under a limit of 2", peak.Load())
	}
}

func TestCountingWrites(t *testing.T) {
	m := mem.New()
	b, counter := storage.WithCounting(m)
	p, _ := storage.AsPutter(b)
	ctx := context.Background()
	if _, err := p.Put(ctx, "a", strings.NewReader("x"), 1, storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.CopyObject(ctx, b, "a", b, "b", storage.Precondition{}, storage.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := storage.ReadAll(ctx, b, "b", 0, -1); err != nil {
			t.Fatal(err)
		}
	}
	want := storage.RequestCounts{Puts: 1, Copies: 1, ReadRanges: 3}
	if got := counter.Counts(); got != want || got.Total() != 5 {
		t.Errorf("counted %s, want %s", got, want)
	}
	if counter.ReadsOf("b") != 3 || counter.ReadsOf("a") != 0 {
		t.Errorf("ReadsOf: b %d, a %d", counter.ReadsOf("b"), counter.ReadsOf("a"))
	}
	counter.Reset()
	if counter.ReadsOf("b") != 0 {
		t.Error("Reset kept the reads by key")
	}
}
