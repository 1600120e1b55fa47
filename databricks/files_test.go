package databricks_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/databricks/filestest"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// records is a slog handler that keeps every record.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.recs = append(r.recs, rec.Clone())
	r.mu.Unlock()
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// lines returns the messages of the records with message msg, each with its attributes.
func (r *records) lines(msg string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		if rec.Message != msg {
			continue
		}
		s := rec.Message
		rec.Attrs(func(a slog.Attr) bool { s += " " + a.Key + "=" + a.Value.String(); return true })
		out = append(out, s)
	}
	return out
}

// waits records the retry waits instead of sleeping them.
type waits struct {
	mu sync.Mutex
	ds []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.ds = append(w.ds, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.ds...)
}

// filesAPIClient returns a client of srv's workspace with opts.
func filesAPIClient(t testing.TB, srv *filestest.Server, opts databricks.Options) *databricks.Client {
	t.Helper()
	t.Setenv("DATABRICKS_TOKEN", srv.Token)
	t.Setenv("DATABRICKS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	opts.Host = srv.URL
	c, err := databricks.NewClient(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestVolumeConformanceFilesAPI runs the storage conformance suite against the Files API of
// filestest: with ranged downloads, as Databricks serves them, and without (whole files, as
// the local workspace serves them) and with listings of two entries a page.
func TestVolumeConformanceFilesAPI(t *testing.T) {
	for name, opts := range map[string][]filestest.Option{
		"ranged":                    nil,
		"whole files, pages of two": {filestest.WithoutRange(), filestest.WithPageSize(2)},
	} {
		t.Run(name, func(t *testing.T) {
			srv := filestest.NewServer(t, opts...)
			c := filesAPIClient(t, srv, databricks.Options{})
			storagetest.Run(t, "volume", func(t *testing.T, root string) (storage.Backend, storagetest.Put) {
				v, err := c.Volume("/Volumes/main/sales/recovery/" + root)
				if err != nil {
					t.Fatal(err)
				}
				return v, func(key string, data []byte) error {
					srv.Put("/Volumes/main/sales/recovery/"+root+"/"+key, data)
					return nil
				}
			})
		})
	}
}

// faultPlan answers the first request with 503 and Retry-After: 1, then one request in five
// with a fault: 503 with Retry-After: 1, 429 without, 500, a dropped connection (uploads and
// deletes, which the HTTP client never repeats by itself) or a download cut short. It counts
// the faults by kind and remembers which had a Retry-After.
type faultPlan struct {
	on         atomic.Bool
	mu         sync.Mutex
	byKind     map[filestest.Kind]int
	retryAfter int
	throttles  int
	total      int
}

func (p *faultPlan) fault(r *http.Request, kind filestest.Kind, seq int64) *filestest.Fault {
	if !p.on.Load() {
		return nil
	}
	var f *filestest.Fault
	switch {
	case seq == 1:
		f = &filestest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "1"}
	case seq%5 != 0:
		return nil
	case kind == filestest.Download && seq%15 == 0:
		f = &filestest.Fault{CutAfter: 100}
	case (kind == filestest.Upload || kind == filestest.Delete) && seq%25 == 0:
		f = &filestest.Fault{Drop: true}
	case seq%20 == 0:
		f = &filestest.Fault{Status: http.StatusInternalServerError}
	case seq%10 == 0:
		f = &filestest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "1"}
	default:
		f = &filestest.Fault{Status: http.StatusTooManyRequests}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byKind[kind]++
	p.total++
	if f.RetryAfter != "" {
		p.retryAfter++
	}
	if f.Status == http.StatusServiceUnavailable || f.Status == http.StatusTooManyRequests {
		p.throttles++
	}
	return f
}

// TestFilesAPIRetries stages 200 files to a volume through storage.CopyObject, then reads
// their metadata, downloads them and deletes them with storage.DeleteAll, against a Files
// API that answers 503 with Retry-After once and then faults on one request in five. Every
// file arrives intact and every request succeeds in the end; each fault is retried once and
// logged once; a Retry-After is waited as asked, other waits stay within the policy's
// MaxDelay; throttling lowers the limit of requests in flight, and answers without it raise
// it back.
func TestFilesAPIRetries(t *testing.T) {
	plan := &faultPlan{byKind: map[filestest.Kind]int{}}
	srv := filestest.NewServer(t)
	srv.SetFaults(plan.fault)
	logs := &records{}
	w := &waits{}
	const start = 8
	c := filesAPIClient(t, srv, databricks.Options{
		Log:              slog.New(logs),
		FilesConcurrency: start,
		FilesRetry:       storage.RetryPolicy{InitialDelay: 50 * time.Millisecond, MaxDelay: 500 * time.Millisecond, Sleep: w.sleep},
	})
	v, err := c.Volume("/Volumes/main/sales/staging/run1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	src := mem.New()
	rnd := rand.New(rand.NewPCG(1, 2))
	const files = 200
	want := map[string][]byte{}
	for i := 0; i < files; i++ {
		data := make([]byte, 2048)
		for j := range data {
			data[j] = byte(rnd.Uint32())
		}
		key := fmt.Sprintf("d%d/f%03d.parquet", i%4, i)
		src.Set(key, data, time.Now())
		want[key] = data
	}
	ab, _ := storage.WithAdaptive(src, storage.AdaptiveOptions{Max: 16})
	from := storage.WithLimit(storage.WithRetry(ab, storage.RetryPolicy{}), 16)

	plan.on.Store(true)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for key := range want {
		g.Go(func() error {
			o, err := src.Stat(gctx, key)
			if err != nil {
				return err
			}
			_, err = storage.CopyObject(gctx, from, key, v, key, o.Version(), storage.PutOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("staging: %v", err)
	}
	for key, data := range want {
		if got, ok := srv.File("/Volumes/main/sales/staging/run1/" + key); !ok || !bytes.Equal(got, data) {
			t.Fatalf("%s arrived with %d bytes (exists %v), want its %d bytes", key, len(got), ok, len(data))
		}
	}
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(16)
	var reqs []storage.DeleteRequest
	for key, data := range want {
		reqs = append(reqs, storage.DeleteRequest{Key: key, Cond: storage.Precondition{Size: int64(len(data))}})
		g.Go(func() error {
			o, err := v.Stat(gctx, key)
			if err != nil {
				return err
			}
			if o.Size != int64(len(data)) {
				return fmt.Errorf("stat %s: %d bytes", key, o.Size)
			}
			got, err := storage.ReadAll(gctx, v, key, 0, -1)
			if err != nil {
				return err
			}
			if !bytes.Equal(got, data) {
				return fmt.Errorf("%s downloads as %d other bytes", key, len(got))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("reading back: %v", err)
	}
	for _, r := range storage.DeleteAll(ctx, v, reqs, storage.DeleteAllOptions{Concurrency: 16}) {
		if r.Err != nil {
			t.Errorf("delete %s: %v", r.Key, r.Err)
		}
	}
	if left := srv.Paths("/Volumes/main/sales/staging/run1/"); len(left) != 0 {
		t.Errorf("%d files left after the deletes", len(left))
	}
	plan.on.Store(false)

	plan.mu.Lock()
	defer plan.mu.Unlock()
	for _, k := range []filestest.Kind{filestest.Upload, filestest.Download, filestest.Metadata, filestest.Delete} {
		if plan.byKind[k] == 0 {
			t.Errorf("no %s was answered with a fault: the plan does not cover it", k)
		}
	}
	retries := logs.lines("files api request failed, retrying")
	if len(retries) != plan.total {
		t.Errorf("%d retries logged for %d faults", len(retries), plan.total)
	}
	var asked, other int
	for _, d := range w.all() {
		switch {
		case d >= time.Second && d <= 1100*time.Millisecond:
			asked++
		case d > 0 && d <= 500*time.Millisecond:
			other++
		default:
			t.Errorf("a wait of %s: neither the Retry-After of 1 s nor within MaxDelay", d)
		}
	}
	if asked != plan.retryAfter || asked+other != plan.total {
		t.Errorf("%d waits of a Retry-After and %d others, for %d faults with Retry-After of %d", asked, other, plan.retryAfter, plan.total)
	}
	st := c.FilesStats()
	t.Logf("faults %v (total %d, %d with Retry-After, %d throttles); waits %d; limit %+v; server %s", plan.byKind, plan.total, plan.retryAfter, plan.throttles, len(w.all()), st, srv.Counts())
	if st.Throttles != int64(plan.throttles) || st.Decreases == 0 {
		t.Errorf("limit: %+v, after %d throttled answers", st, plan.throttles)
	}
	if lowered := logs.lines("files api throttled: concurrency lowered"); len(lowered) == 0 {
		t.Error("no lowering of the limit was logged")
	}
	// Without throttling the limit climbs back.
	srv.Put("/Volumes/main/sales/staging/run1/again", []byte("x"))
	for i := 0; i < 200 && c.FilesStats().Limit < start; i++ {
		if _, err := v.Stat(ctx, "again"); err != nil {
			t.Fatal(err)
		}
	}
	if st := c.FilesStats(); st.Limit < start {
		t.Errorf("the limit stays at %d after 200 answers without a throttle, want it back at %d", st.Limit, start)
	}
}

// unseekable hides every method of a reader but Read.
type unseekable struct{ r io.Reader }

func (u unseekable) Read(p []byte) (int, error) { return u.r.Read(p) }

// TestFilesAPIUploadFromAStream: an upload from a reader that cannot seek, answered 503 with
// Retry-After on its first try, is sent again whole (the data is spooled: small in memory,
// large to a temporary file).
func TestFilesAPIUploadFromAStream(t *testing.T) {
	srv := filestest.NewServer(t)
	w := &waits{}
	c := filesAPIClient(t, srv, databricks.Options{FilesRetry: storage.RetryPolicy{Sleep: w.sleep}})
	v, err := c.Volume("/Volumes/main/sales/staging/s")
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{2048, storage.SpoolMemoryPerObject + 1} {
		data := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
		var uploads atomic.Int64
		srv.SetFaults(func(r *http.Request, kind filestest.Kind, _ int64) *filestest.Fault {
			if kind == filestest.Upload && uploads.Add(1) == 1 {
				return &filestest.Fault{Status: http.StatusServiceUnavailable, RetryAfter: "1"}
			}
			return nil
		})
		key := fmt.Sprintf("f%d", size)
		o, err := v.Put(context.Background(), key, unseekable{bytes.NewReader(data)}, int64(size), storage.PutOptions{CreateOnly: true})
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if got, _ := srv.File("/Volumes/main/sales/staging/s/" + key); !bytes.Equal(got, data) || o.Size != int64(size) {
			t.Errorf("%d bytes: the file holds %d bytes, Put says %d", size, len(got), o.Size)
		}
		if uploads.Load() != 2 {
			t.Errorf("%d bytes: %d uploads, want 2", size, uploads.Load())
		}
	}
}

// TestFilesAPINoRetryOn4xx: an answer in the 4xx range other than 429 is final: one
// request, no retry, no wait, and the error says what the status means.
func TestFilesAPINoRetryOn4xx(t *testing.T) {
	srv := filestest.NewServer(t)
	logs := &records{}
	w := &waits{}
	c := filesAPIClient(t, srv, databricks.Options{Log: slog.New(logs), FilesRetry: storage.RetryPolicy{Sleep: w.sleep}})
	v, err := c.Volume("/Volumes/main/sales/staging/x")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv.Put("/Volumes/main/sales/staging/x/exists", []byte("old"))
	for _, status := range []int{400, 401, 403, 404, 409, 412} {
		srv.SetFaults(func(*http.Request, filestest.Kind, int64) *filestest.Fault {
			return &filestest.Fault{Status: status}
		})
		srv.ResetCounts()
		errs := map[string]error{}
		_, errs["write"] = v.Put(ctx, "k", strings.NewReader("data"), 4, storage.PutOptions{})
		_, errs["stat"] = v.Stat(ctx, "exists")
		_, errs["read"] = storage.ReadAll(ctx, v, "exists", 0, -1)
		errs["delete"] = v.Delete(ctx, "exists", storage.Precondition{})
		for op, err := range errs {
			switch {
			case status == 404 && op == "delete":
				if err != nil {
					t.Errorf("%d: delete of a missing file: %v", status, err)
				}
			case err == nil:
				t.Errorf("%d: %s succeeded", status, op)
			case storage.IsRetryable(err):
				t.Errorf("%d: %s: %v is marked retryable", status, op, err)
			case status == 404 && !errors.Is(err, storage.ErrNotExist):
				t.Errorf("%d: %s: %v, want ErrNotExist", status, op, err)
			case status == 403 && !strings.Contains(err.Error(), "may not do this"):
				t.Errorf("%d: %s: %v", status, op, err)
			}
		}
		if got := srv.Counts().Total(); got != 4 {
			t.Errorf("%d: %d requests for 4 calls: %s", status, got, srv.Counts())
		}
	}
	if n := len(logs.lines("files api request failed, retrying")); n != 0 || len(w.all()) != 0 {
		t.Errorf("%d retries logged, %d waits", n, len(w.all()))
	}
}

// TestFilesAPIBackoffBounded: throttled answers without Retry-After are waited out with the
// policy's exponential backoff, never longer than its MaxDelay; after MaxAttempts tries the
// request fails with a retryable error that says so.
func TestFilesAPIBackoffBounded(t *testing.T) {
	srv := filestest.NewServer(t)
	w := &waits{}
	c := filesAPIClient(t, srv, databricks.Options{FilesRetry: storage.RetryPolicy{
		MaxAttempts: 10, InitialDelay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond, Sleep: w.sleep}})
	v, err := c.Volume("/Volumes/main/sales/staging/b")
	if err != nil {
		t.Fatal(err)
	}
	srv.Put("/Volumes/main/sales/staging/b/f", []byte("x"))
	var n atomic.Int64
	fails := int64(9)
	srv.SetFaults(func(*http.Request, filestest.Kind, int64) *filestest.Fault {
		if n.Add(1) <= fails {
			return &filestest.Fault{Status: http.StatusServiceUnavailable}
		}
		return nil
	})
	if _, err := v.Stat(context.Background(), "f"); err != nil {
		t.Fatalf("Stat after 9 throttled answers: %v", err)
	}
	ds := w.all()
	if len(ds) != 9 {
		t.Fatalf("%d waits, want 9", len(ds))
	}
	for i, d := range ds {
		if d > 300*time.Millisecond || d < 50*time.Millisecond || i >= 3 && d < 150*time.Millisecond {
			t.Errorf("wait %d: %s, want within [max/2, max] of min(100ms·2^i, 300ms)", i+1, d)
		}
	}
	n.Store(0)
	fails = 100
	_, err = v.Stat(context.Background(), "f")
	if err == nil || !storage.IsRetryable(err) || !strings.Contains(err.Error(), "gave up after 10 tries") {
		t.Errorf("Stat against a workspace that keeps throttling: %v", err)
	}
}

// TestStageToVolumeNeverWaitsOnItself copies many more files than there are request slots
// from a source decorated as the command line decorates it to a volume, with far more copies
// in flight than either side's limit, at limits of 1, 2 and 16; the deadline turns a copy
// that waits on itself into a failure.
func TestStageToVolumeNeverWaitsOnItself(t *testing.T) {
	for _, conc := range []int{1, 2, 16} {
		t.Run(fmt.Sprintf("concurrency %d", conc), func(t *testing.T) {
			srv := filestest.NewServer(t)
			c := filesAPIClient(t, srv, databricks.Options{FilesConcurrency: conc})
			v, err := c.Volume("/Volumes/main/sales/staging/d")
			if err != nil {
				t.Fatal(err)
			}
			src := mem.New()
			for i := 0; i < 200; i++ {
				src.Set(fmt.Sprintf("f%03d", i), []byte(fmt.Sprintf("file %d", i)), time.Now())
			}
			ab, _ := storage.WithAdaptive(src, storage.AdaptiveOptions{Max: conc})
			from := storage.WithLimit(storage.WithRetry(ab, storage.RetryPolicy{}), conc)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(8 * conc)
			for i := 0; i < 200; i++ {
				key := fmt.Sprintf("f%03d", i)
				g.Go(func() error {
					_, err := storage.CopyObject(gctx, from, key, v, key, storage.Precondition{}, storage.PutOptions{})
					return err
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
			if n := len(srv.Paths("/Volumes/main/sales/staging/d/")); n != 200 {
				t.Errorf("%d files staged, want 200", n)
			}
		})
	}
}
