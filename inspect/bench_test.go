package inspect_test

// Benchmarks (figures and commands in docs/performance.md):
//
//	go test -run XXX -bench 'InspectLocal|InspectMemory' -benchtime 3x ./inspect
//	go test -run XXX -bench InspectS3Latency -benchtime 1x ./inspect
//	go test -tags duckdb -run XXX -bench 'InspectLocal|DuckDB' -benchtime 5x ./inspect

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/memstat"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/local"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// peerSchema is the fixture of the DuckDB comparison in notes/peers-and-perf.md §4: 8 columns,
// 11 leaves, nested struct, list and map, decimal and both timestamp kinds; 10 rows per file.
var peerSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "key", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "s", Type: arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "inner", Type: arrow.StructOf(
			arrow.Field{Name: "c", Type: &arrow.Decimal128Type{Precision: 18, Scale: 3}, Nullable: true},
		), Nullable: true},
	), Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "d", Type: &arrow.Decimal128Type{Precision: 18, Scale: 4}, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "tstz", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

const peerRows = 10

func peerFile(tb testing.TB, seed int64) []byte {
	tb.Helper()
	data, err := pqgen.GeneratedBytes(peerSchema, peerRows, seed, pqgen.Options{Compression: compress.Codecs.Zstd})
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

var (
	benchDirsMu sync.Mutex
	benchDirs   = map[int]string{}
	benchRoot   string
)

// TestMain removes the generated benchmark tables.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchRoot != "" && os.Getenv("ZBRECOVER_BENCH_DIR") == "" {
		os.RemoveAll(benchRoot)
	}
	os.Exit(code)
}

// benchTable returns a local table root holding n distinct fallback files of peerSchema in
// 10 day folders, generated once per process (or reused from $ZBRECOVER_BENCH_DIR).
func benchTable(b *testing.B, n int) string {
	b.Helper()
	benchDirsMu.Lock()
	defer benchDirsMu.Unlock()
	if d, ok := benchDirs[n]; ok {
		return d
	}
	if benchRoot == "" {
		if d := os.Getenv("ZBRECOVER_BENCH_DIR"); d != "" {
			benchRoot = d
		} else {
			d, err := os.MkdirTemp("", "zbrecover-bench-")
			if err != nil {
				b.Fatal(err)
			}
			benchRoot = d
		}
	}
	dir := filepath.Join(benchRoot, fmt.Sprintf("files-%d", n))
	done := filepath.Join(dir, "_complete")
	if _, err := os.Stat(done); err != nil {
		os.RemoveAll(dir)
		for i := 0; i < n; i++ {
			p := filepath.Join(dir, filepath.FromSlash(prefix), fmt.Sprintf("day=%02d", i%10), fmt.Sprintf("part-%06d.parquet", i))
			if err := pqgen.WriteFile(p, peerFile(b, int64(i))); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	benchDirs[n] = dir
	return dir
}

// BenchmarkInspectLocal inspects 2,000 local files: files per second and requests per file.
func BenchmarkInspectLocal(b *testing.B) {
	for _, n := range []int{2000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := benchTable(b, n)
			be, counter := storage.WithCounting(local.New(dir))
			for _, conc := range []int{1, 8, 64} {
				b.Run(fmt.Sprintf("conc=%d", conc), func(b *testing.B) {
					counter.Reset()
					b.ResetTimer()
					start, cpu0 := time.Now(), cpuTime()
					for i := 0; i < b.N; i++ {
						rep, err := inspect.Run(context.Background(), be, inspect.Options{Concurrency: conc})
						if err != nil {
							b.Fatal(err)
						}
						if rep.Totals.Files != n || rep.Totals.Rows != int64(n*peerRows) || len(rep.Groups) != 1 {
							b.Fatalf("totals %+v", rep.Totals)
						}
					}
					el, cpu := time.Since(start), cpuTime()-cpu0
					c := counter.Counts()
					b.ReportMetric(float64(n*b.N)/el.Seconds(), "files/s")
					b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
					b.ReportMetric(float64(c.ReadRanges)/float64(n*b.N), "reads/file")
					b.ReportMetric(float64(c.Stats)/float64(n*b.N), "stats/file")
				})
			}
		})
	}
}

// synthStore serves n identical objects without storing them: its own memory does not grow
// with n, so the benchmark sees inspect's. Listing returns pages of 1,000.
type synthStore struct {
	n     int
	data  []byte
	reads atomic.Int64
	pages atomic.Int64
}

func (s *synthStore) Location() string { return "synth://table" }

func (s *synthStore) key(i int) string {
	return fmt.Sprintf("%sday=%02d/part-%07d.parquet", prefix, i%10, i)
}

func (s *synthStore) List(ctx context.Context, p string, fn func(storage.ObjectInfo) error) error {
	for i := 0; i < s.n; i++ {
		if i%1000 == 0 {
			s.pages.Add(1)
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := fn(storage.ObjectInfo{Key: s.key(i), Size: int64(len(s.data)), ModTime: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			return err
		}
	}
	return nil
}

func (s *synthStore) Stat(context.Context, string) (storage.ObjectInfo, error) {
	return storage.ObjectInfo{}, fmt.Errorf("synthStore: no Stat")
}

func (s *synthStore) ReadRange(_ context.Context, _ string, off, n int64) (io.ReadCloser, error) {
	s.reads.Add(1)
	end := min(off+n, int64(len(s.data)))
	return io.NopCloser(bytes.NewReader(s.data[off:end])), nil
}

func (s *synthStore) Delete(context.Context, string, storage.Precondition) error { return nil }

// BenchmarkInspectMemory measures peak heap over 2,000 to 100,000 files. Stream keeps no
// per-file state, so its peak must not grow with the file count; Run keeps one small record
// per file for the report, so its peak grows by that record only.
func BenchmarkInspectMemory(b *testing.B) {
	data := peerFile(b, 1)
	for _, mode := range []string{"stream", "run"} {
		for _, n := range []int{2000, 20000, 100000} {
			b.Run(fmt.Sprintf("%s/files=%d", mode, n), func(b *testing.B) {
				var peak, retained uint64
				start := time.Now()
				for i := 0; i < b.N; i++ {
					s := &synthStore{n: n, data: data}
					base := memstat.LiveHeap()
					h := memstat.StartHeapPeak()
					var rep *inspect.Report
					var err error
					if mode == "stream" {
						var files int
						_, err = inspect.Stream(context.Background(), s, inspect.Options{}, func(r inspect.FileResult) error {
							if r.Err != nil {
								return r.Err
							}
							files++
							return nil
						})
						if files != n {
							b.Fatalf("%d files", files)
						}
					} else {
						rep, err = inspect.Run(context.Background(), s, inspect.Options{})
					}
					p := h.Stop()
					if err != nil {
						b.Fatal(err)
					}
					if p > base && p-base > peak {
						peak = p - base
					}
					if rep != nil {
						if rep.Totals.Files != n || len(rep.Groups) != 1 {
							b.Fatalf("totals %+v", rep.Totals)
						}
						if r := memstat.LiveHeap(); r > base {
							retained = max(retained, r-base)
						}
						runtime.KeepAlive(rep)
					}
					if got := s.reads.Load(); got != int64(n) {
						b.Fatalf("%d reads for %d files", got, n)
					}
				}
				el := time.Since(start)
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
				b.ReportMetric(float64(n*b.N)/el.Seconds(), "files/s")
				if mode == "run" {
					b.ReportMetric(float64(retained)/float64(n), "report-B/file")
				}
			})
		}
	}
}

// BenchmarkInspectS3Latency inspects files on the S3 emulator with 20 ms added to every
// request, at concurrency 64, and compares the time with the floor ⌈N/64⌉·20 ms + pages·20 ms.
func BenchmarkInspectS3Latency(b *testing.B) {
	const latency = 20 * time.Millisecond
	const conc = 64
	data := peerFile(b, 1)
	for _, n := range []int{2000, 10000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			srv := s3test.NewServer(b)
			for i := 0; i < n; i++ {
				key := fmt.Sprintf("tables/t/%sday=%02d/part-%06d.parquet", prefix, i%10, i)
				if err := srv.Put(key, data); err != nil {
					b.Fatal(err)
				}
			}
			ctx := context.Background()
			be, err := all.Registry().Open(ctx, srv.URLFor("tables/t"), srv.Config())
			if err != nil {
				b.Fatal(err)
			}
			srv.SetLatency(latency)
			pages := int(math.Ceil(float64(n) / 1000))
			floor := time.Duration(int(math.Ceil(float64(n)/conc))+pages) * latency
			srv.ResetCounts()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				rep, err := inspect.Run(ctx, be, inspect.Options{Concurrency: conc})
				if err != nil {
					b.Fatal(err)
				}
				if rep.Totals.Files != n || rep.Totals.Unreadable != 0 {
					b.Fatalf("totals %+v", rep.Totals)
				}
			}
			el := time.Since(start) / time.Duration(b.N)
			c := srv.Counts()
			b.StopTimer()
			// The same list and ranged GETs at the same concurrency, without parsing: what the
			// emulator and SDK allow on this machine.
			raw := time.Now()
			if err := fetchOnly(ctx, be, conc); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(time.Since(raw).Milliseconds()), "fetch-only-ms")
			b.ReportMetric(float64(el.Milliseconds()), "ms/run")
			b.ReportMetric(float64(floor.Milliseconds()), "floor-ms")
			b.ReportMetric(el.Seconds()/floor.Seconds(), "x-floor")
			b.ReportMetric(float64(c.Gets)/float64(n*b.N), "GETs/file")
			b.ReportMetric(float64(c.Heads)/float64(n*b.N), "HEADs/file")
			b.ReportMetric(float64(c.ListPages)/float64(b.N), "list-pages/run")
		})
	}
}

// fetchOnly lists the fallback folder and reads each file's last 64 KiB with conc readers fed
// through the same kind of queue as inspect's, parsing nothing.
func fetchOnly(ctx context.Context, be storage.Backend, conc int) error {
	g, gctx := errgroup.WithContext(ctx)
	work := make(chan storage.ObjectInfo, 1024)
	g.Go(func() error {
		defer close(work)
		return be.List(gctx, prefix, func(o storage.ObjectInfo) error {
			select {
			case work <- o:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
	})
	for i := 0; i < conc; i++ {
		g.Go(func() error {
			for o := range work {
				tail := min(o.Size, inspect.DefaultTailSize)
				if _, err := storage.ReadAll(gctx, be, o.Key, o.Size-tail, tail); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}
