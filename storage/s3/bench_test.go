package s3_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/s3"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// BenchmarkTailReads lists 512 files behind 20 ms of emulator latency and reads the last
// 64 KiB of each at concurrency 64, the access pattern of inspect. The floor is
// ceil(512/64)*20ms for the reads plus one 20 ms list page.
func BenchmarkTailReads(b *testing.B) {
	const files, conc = 512, 64
	latency := benchLatency
	srv := s3test.NewServer(b)
	data := make([]byte, 4<<10)
	for i := 0; i < files; i++ {
		storagetest.MustPut(b, srv.Put, fmt.Sprintf("t/_zerobus/table_rejected_parquets/f%04d.parquet", i), data)
	}
	srv.SetLatency(latency)
	be, counter := storage.WithCounting(storagetest.OpenURL(b, s3.New, srv.URLFor("t/_zerobus/table_rejected_parquets"), srv.Config()))
	be = storage.WithLimit(be, conc)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(conc)
		err := be.List(ctx, "", func(o storage.ObjectInfo) error {
			g.Go(func() error {
				_, err := storage.ReadAll(gctx, be, o.Key, max(0, o.Size-64<<10), 64<<10)
				return err
			})
			return nil
		})
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	c := counter.Counts()
	b.ReportMetric(float64(c.ReadRanges)/float64(b.N*files), "reads/file")
	b.ReportMetric(float64(c.ListPages)/float64(b.N), "list-pages/op")
	floor := time.Duration((files+conc-1)/conc+1) * latency
	b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(floor), "x-floor")
}

// benchLatency is the per-request latency the emulator adds. On 2 shared cores the SDK and
// gofakes3 spend roughly half a millisecond of CPU per request, so 64 requests per 20 ms
// wave are close to CPU-bound: x-floor measures that overhead too.
var benchLatency = 20 * time.Millisecond

// opaque hides which store a backend is on, so that storage.CopyObject streams its objects
// instead of asking the destination for a server-side copy.
type opaque struct{ storage.Backend }

// BenchmarkStageToExternalLocation stages 10,000 files of 2 KiB (ZBRECOVER_BENCH_FILES) from
// a table's fallback folder to an external location in the same bucket, two backends each
// decorated as the command line decorates them, with storage.CopyObject per file (the listed
// version), 64 copies in flight: server-side (one CopyObject request per file) and, for
// comparison, streamed through the client. With and without 20 ms of latency on every
// request (storage.WithLatency under the decorators: the emulator's own latency spares
// PUT requests, and a CopyObject is one).
func BenchmarkStageToExternalLocation(b *testing.B) {
	for _, latency := range []time.Duration{0, benchLatency} {
		for _, mode := range []string{"server-side", "streamed"} {
			b.Run(fmt.Sprintf("%s/latency-%s", mode, latency), func(b *testing.B) {
				n := benchFiles(10_000)
				const conc = 64
				srv := s3test.NewServer(b)
				data := make([]byte, 2048)
				for i := 0; i < n; i++ {
					storagetest.MustPut(b, srv.Put, fmt.Sprintf("t/_zerobus/table_rejected_parquets/d%02d/f%05d.parquet", i%10, i), data)
				}
				wrap := func(be storage.Backend) storage.Backend {
					ab, _ := storage.WithAdaptive(storage.WithLatency(be, latency), storage.AdaptiveOptions{Max: conc})
					return storage.WithLimit(storage.WithRetry(ab, storage.DefaultRetryPolicy()), conc)
				}
				src := wrap(storagetest.OpenURL(b, s3.New, srv.URLFor("t/_zerobus/table_rejected_parquets"), srv.Config()))
				var listed []storage.ObjectInfo
				ctx := context.Background()
				if err := src.List(ctx, "", func(o storage.ObjectInfo) error { listed = append(listed, o); return nil }); err != nil {
					b.Fatal(err)
				}
				if mode == "streamed" {
					src = opaque{src}
				}
				var el, cpu time.Duration
				var reqs int64
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					dst := wrap(storagetest.OpenURL(b, s3.New, srv.URLFor(fmt.Sprintf("stage/run%d", i)), srv.Config()))
					srv.ResetCounts()
					start, cpu0 := time.Now(), cpuTime()
					g, gctx := errgroup.WithContext(ctx)
					g.SetLimit(conc)
					for _, o := range listed {
						g.Go(func() error {
							_, err := storage.CopyObject(gctx, src, o.Key, dst, o.Key, o.Version(), storage.PutOptions{})
							return err
						})
					}
					if err := g.Wait(); err != nil {
						b.Fatal(err)
					}
					el += time.Since(start)
					cpu += cpuTime() - cpu0
					c := srv.Counts()
					reqs += c.Total() + c.Puts
				}
				b.ReportMetric(float64(n*b.N)/el.Seconds(), "files/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-µs/file")
				b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-µs/file")
				b.ReportMetric(float64(reqs)/float64(n*b.N), "requests/file")
			})
		}
	}
}

// benchFiles is ZBRECOVER_BENCH_FILES, or def.
func benchFiles(def int) int {
	if n, err := strconv.Atoi(os.Getenv("ZBRECOVER_BENCH_FILES")); err == nil && n > 0 {
		return n
	}
	return def
}
