package s3_test

import (
	"context"
	"fmt"
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
