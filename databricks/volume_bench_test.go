package databricks_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/databricks/filestest"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
)

// benchFiles is ZBRECOVER_BENCH_FILES, or def.
func benchFiles(def int) int {
	if n, err := strconv.Atoi(os.Getenv("ZBRECOVER_BENCH_FILES")); err == nil && n > 0 {
		return n
	}
	return def
}

// benchLatency is the latency the Files API adds to every request.
const benchLatency = 20 * time.Millisecond

// localSource writes n files of size bytes in 10 folders under a temporary root and returns
// the root's backend (decorated as the command line decorates an opened store: the adaptive
// limit under the retries under a cap of conc) and the files as a listing gives them.
func localSource(b *testing.B, n, size, conc int) (storage.Backend, []storage.ObjectInfo) {
	b.Helper()
	root := b.TempDir()
	data := make([]byte, size)
	for i := 0; i < n; i++ {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%10), fmt.Sprintf("f%05d.parquet", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	src := local.New(root)
	var listed []storage.ObjectInfo
	if err := src.List(context.Background(), "", func(o storage.ObjectInfo) error { listed = append(listed, o); return nil }); err != nil {
		b.Fatal(err)
	}
	ab, _ := storage.WithAdaptive(src, storage.AdaptiveOptions{Max: conc})
	return storage.WithLimit(storage.WithRetry(ab, storage.DefaultRetryPolicy()), conc), listed
}

// BenchmarkStageToVolume stages 10,000 files of 2 KiB (ZBRECOVER_BENCH_FILES) from a local
// root to a volume through the Files API, with 20 ms of latency on every Files API request,
// as reload --stage-to does: storage.CopyObject per file with the listed version, the given
// number of copies in flight.
func BenchmarkStageToVolume(b *testing.B) {
	for _, conc := range []int{16, 64} {
		b.Run(fmt.Sprintf("copies-%d", conc), func(b *testing.B) {
			n := benchFiles(10_000)
			src, listed := localSource(b, n, 2048, 64)
			srv := filestest.NewServer(b, filestest.WithLatency(benchLatency))
			c := filesAPIClient(b, srv, databricks.Options{})
			ctx := context.Background()
			b.ResetTimer()
			var el, cpu time.Duration
			for i := 0; i < b.N; i++ {
				v, err := c.Volume(fmt.Sprintf("/Volumes/main/sales/staging/run%d", i))
				if err != nil {
					b.Fatal(err)
				}
				srv.ResetCounts()
				start, cpu0 := time.Now(), cpuTime()
				g, gctx := errgroup.WithContext(ctx)
				g.SetLimit(conc)
				for _, o := range listed {
					g.Go(func() error {
						_, err := storage.CopyObject(gctx, src, o.Key, v, o.Key, o.Version(), storage.PutOptions{})
						return err
					})
				}
				if err := g.Wait(); err != nil {
					b.Fatal(err)
				}
				el += time.Since(start)
				cpu += cpuTime() - cpu0
			}
			cnt := srv.Counts()
			b.ReportMetric(float64(n*b.N)/el.Seconds(), "files/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-µs/file")
			b.ReportMetric(float64(cnt.Total())/float64(n), "files-api-requests/file")
			b.ReportMetric(float64(cnt.MaxInFlight), "max-in-flight")
		})
	}
}

// BenchmarkDeleteAllVolume deletes 5,000 staged copies (ZBRECOVER_BENCH_FILES) from a volume
// with storage.DeleteAll, 64 at a time, with 20 ms of latency on every Files API request: as
// the copies are removed after a verified run, each with its staged size as precondition
// (a HEAD and a DELETE: the Files API has no conditional delete), and unconditionally.
func BenchmarkDeleteAllVolume(b *testing.B) {
	for _, conditional := range []bool{true, false} {
		name := "unconditional"
		if conditional {
			name = "size-precondition"
		}
		b.Run(name, func(b *testing.B) {
			n := benchFiles(5_000)
			srv := filestest.NewServer(b, filestest.WithLatency(benchLatency))
			c := filesAPIClient(b, srv, databricks.Options{})
			ctx := context.Background()
			data := make([]byte, 2048)
			var el, cpu time.Duration
			for i := 0; i < b.N; i++ {
				root := fmt.Sprintf("/Volumes/main/sales/staging/run%d", i)
				reqs := make([]storage.DeleteRequest, n)
				for j := range reqs {
					key := fmt.Sprintf("d%02d/f%05d.parquet", j%10, j)
					srv.Put(root+"/"+key, data)
					reqs[j].Key = key
					if conditional {
						reqs[j].Cond = storage.Precondition{Size: int64(len(data))}
					}
				}
				v, err := c.Volume(root)
				if err != nil {
					b.Fatal(err)
				}
				srv.ResetCounts()
				start, cpu0 := time.Now(), cpuTime()
				for _, r := range storage.DeleteAll(ctx, v, reqs, storage.DeleteAllOptions{Concurrency: 64}) {
					if r.Err != nil {
						b.Fatal(r.Err)
					}
				}
				el += time.Since(start)
				cpu += cpuTime() - cpu0
				if left := srv.Paths(root + "/"); len(left) != 0 {
					b.Fatalf("%d files left", len(left))
				}
			}
			cnt := srv.Counts()
			b.ReportMetric(float64(n*b.N)/el.Seconds(), "deletes/s")
			b.ReportMetric(float64(cpu.Microseconds())/float64(n*b.N), "cpu-µs/file")
			b.ReportMetric(float64(cnt.Total())/float64(n), "requests/file")
			b.ReportMetric(el.Seconds()/float64(b.N), "s/op")
		})
	}
}
