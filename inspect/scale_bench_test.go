package inspect_test

// Benchmarks at a million files (figures and commands in docs/performance.md):
//
//	ZBRECOVER_BENCH_FILES=1000000 go test -run XXX -bench ScaleLatency -benchtime 1x -timeout 30m ./inspect
//	ZBRECOVER_BENCH_FILES=1000000 go test -run XXX -bench 'ScaleRSS/jsonl' -benchtime 1x -timeout 30m ./inspect
//
// Each ScaleRSS mode is best run in a process of its own (one -bench pattern per run): the
// peak RSS is the process's.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/memstat"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// scaleStore serves n identical objects in 10 day folders, listed 1,000 per page, with
// listings that start after a key (as S3's): its memory does not grow with n.
type scaleStore struct {
	n     int
	data  []byte
	reads atomic.Int64
	pages atomic.Int64
}

var (
	_ storage.AfterLister = (*scaleStore)(nil)
	_ storage.Capable     = (*scaleStore)(nil)
)

func (s *scaleStore) Location() string { return "synth://table" }

func (s *scaleStore) Capabilities() storage.Capabilities {
	return storage.CanListPages | storage.CanListAfter
}

// key is the i-th key in key order.
func (s *scaleStore) key(i int) string {
	return fmt.Sprintf("%sday=%02d/part-%07d.parquet", prefix, i*10/s.n, i)
}

func (s *scaleStore) info(i int) storage.ObjectInfo {
	return storage.ObjectInfo{Key: s.key(i), Size: int64(len(s.data)), ETag: `"e` + strconv.Itoa(i) + `"`,
		ModTime: t0.Add(time.Duration(i) * time.Millisecond)}
}

func (s *scaleStore) AfterToken(key string) string {
	return strconv.Itoa(sort.Search(s.n, func(i int) bool { return s.key(i) > key }))
}

func (s *scaleStore) ListPage(ctx context.Context, p, token string) ([]storage.ObjectInfo, string, error) {
	s.pages.Add(1)
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	start := 0
	if token != "" {
		start, _ = strconv.Atoi(token)
	}
	end := min(start+1000, s.n)
	page := make([]storage.ObjectInfo, 0, end-start)
	for i := start; i < end; i++ {
		page = append(page, s.info(i))
	}
	next := ""
	if end < s.n {
		next = strconv.Itoa(end)
	}
	return page, next, nil
}

func (s *scaleStore) List(ctx context.Context, p string, fn func(storage.ObjectInfo) error) error {
	return storage.ListPages(ctx, s, p, fn)
}

func (s *scaleStore) Stat(context.Context, string) (storage.ObjectInfo, error) {
	return storage.ObjectInfo{}, fmt.Errorf("scaleStore: no Stat")
}

func (s *scaleStore) ReadRange(_ context.Context, _ string, off, n int64) (io.ReadCloser, error) {
	s.reads.Add(1)
	end := min(off+n, int64(len(s.data)))
	return io.NopCloser(bytes.NewReader(s.data[off:end])), nil
}

func (s *scaleStore) Delete(context.Context, string, storage.Precondition) error { return nil }

func benchFiles(def int) int {
	if v, err := strconv.Atoi(os.Getenv("ZBRECOVER_BENCH_FILES")); err == nil && v > 0 {
		return v
	}
	return def
}

// cliStack wraps b as the CLI does: AIMD limit under retries under the concurrency cap.
func cliStack(b storage.Backend, conc int) storage.Backend {
	ab, _ := storage.WithAdaptive(b, storage.AdaptiveOptions{Max: conc, Min: 1})
	return storage.WithLimit(storage.WithRetry(ab, storage.DefaultRetryPolicy()), conc)
}

// BenchmarkInspectScaleLatency inspects ZBRECOVER_BENCH_FILES (default 100,000) synthetic
// files with 20 ms added to every request (list page and footer read), through the CLI's
// storage decorators, at concurrency 165 and 64 (ZBRECOVER_BENCH_CONCURRENCY to choose one),
// and compares the time with the floor ⌈N/C⌉·L + pages·L (listing in one stream) and with
// ⌈N/C⌉·L alone.
func BenchmarkInspectScaleLatency(b *testing.B) {
	const latency = 20 * time.Millisecond
	n := benchFiles(100000)
	concs := []int{165, 64}
	if v, err := strconv.Atoi(os.Getenv("ZBRECOVER_BENCH_CONCURRENCY")); err == nil && v > 0 {
		concs = []int{v}
	}
	data := peerFile(b, 1)
	for _, conc := range concs {
		b.Run(fmt.Sprintf("files=%d/concurrency=%d", n, conc), func(b *testing.B) {
			var el time.Duration
			var st *scaleStore
			for i := 0; i < b.N; i++ {
				st = &scaleStore{n: n, data: data}
				be := cliStack(storage.WithLatency(st, latency), conc)
				start := time.Now()
				var rep inspect.Totals
				r, err := inspect.StreamReport(context.Background(), be, inspect.Options{Concurrency: conc}, false, nil)
				if err != nil {
					b.Fatal(err)
				}
				rep = r.Totals
				el += time.Since(start)
				if rep.Files != n || rep.Unreadable != 0 {
					b.Fatalf("totals %+v", rep)
				}
			}
			el /= time.Duration(b.N)
			pages := int(math.Ceil(float64(n) / 1000))
			reads := time.Duration(int(math.Ceil(float64(n)/float64(conc)))) * latency
			floor := reads + time.Duration(pages)*latency
			b.ReportMetric(el.Seconds(), "s/run")
			b.ReportMetric(floor.Seconds(), "floor-s")
			b.ReportMetric(el.Seconds()/floor.Seconds(), "x-floor")
			b.ReportMetric(el.Seconds()/reads.Seconds(), "x-reads-floor")
			b.ReportMetric(float64(st.pages.Load())/float64(pages), "list-requests/page")
			b.ReportMetric(float64(st.reads.Load())/float64(n), "reads/file")
		})
	}
}

// BenchmarkInspectScaleRSS runs inspect as `zbrecover inspect -o text|json|jsonl` does
// (streamed report, diff against a table, output written to a file) over
// ZBRECOVER_BENCH_FILES (default 100,000) synthetic files, and reports the process's peak
// RSS, reset before the run (/proc/self/clear_refs), and the output's size, under the soft
// memory limit the command line sets.
func BenchmarkInspectScaleRSS(b *testing.B) {
	n := benchFiles(100000)
	data := peerFile(b, 1)
	table := sd.NewSchema().Col("id", sd.LongType).Col("key", sd.StringType).Col("d", sd.DecimalType(18, 4))
	// The soft memory limit the command line sets.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(inspect.DefaultMemoryLimit))
	for _, mode := range []string{"text", "json", "jsonl"} {
		b.Run(fmt.Sprintf("%s/files=%d", mode, n), func(b *testing.B) {
			var peak, size int64
			for i := 0; i < b.N; i++ {
				runtime.GC()
				debug.FreeOSMemory()
				if err := memstat.ResetPeakRSS(); err != nil {
					b.Skipf("cannot reset the peak RSS: %v", err)
				}
				out, err := os.Create(filepath.Join(b.TempDir(), "out"))
				if err != nil {
					b.Fatal(err)
				}
				st := &scaleStore{n: n, data: data}
				be := cliStack(st, inspect.DefaultConcurrency)
				var jl *inspect.JSONLines
				var each func(inspect.FileResult) error
				if mode == "jsonl" {
					jl = inspect.NewJSONLines(out)
					jl.Header(be.Location(), prefix)
					each = func(r inspect.FileResult) error { return jl.File(r.File) }
				}
				rep, err := inspect.StreamReport(context.Background(), be, inspect.Options{}, mode == "json", each)
				if err != nil {
					b.Fatal(err)
				}
				rep.Diff(inspect.NewTable(&sd.Table{Source: sd.SourceDelta, Schema: table}), inspect.DiffOptions{TableName: "main.s.t"})
				w := bufio.NewWriter(out)
				switch mode {
				case "text":
					err = rep.WriteText(w)
				case "json":
					err = rep.WriteJSON(w)
				case "jsonl":
					if err = jl.Summary(rep); err == nil {
						err = jl.Close()
					}
				}
				if err == nil {
					err = w.Flush()
				}
				if err != nil {
					b.Fatal(err)
				}
				fi, _ := out.Stat()
				out.Close()
				size = fi.Size()
				if rep.Totals.Files != n {
					b.Fatalf("totals %+v", rep.Totals)
				}
				rss, err := memstat.PeakRSS()
				if err != nil {
					b.Skipf("no peak RSS: %v", err)
				}
				peak = max(peak, rss)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
			b.ReportMetric(float64(size)/(1<<20), "output-MiB")
		})
	}
}
