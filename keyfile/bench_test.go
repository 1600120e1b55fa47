package keyfile_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/keyfile"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
	"github.com/zbrecover/zbrecover/storage/s3"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

const benchRows = 1000 // rows per file

// benchFile is a fallback file of benchRows rows in one row group: the key id (random
// bigint), a region, a 32-character payload and a timestamp, Snappy-compressed (about 45 KB).
func benchFile(tb testing.TB, seed int64) []byte {
	tb.Helper()
	sc := schemaOf(field("id", arrow.PrimitiveTypes.Int64), field("region", arrow.BinaryTypes.String),
		field("payload", arrow.BinaryTypes.String), field("at", tsUTC))
	rng := rand.New(rand.NewSource(seed))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	p := make([]byte, 16)
	for i := 0; i < benchRows; i++ {
		b.Field(0).(*array.Int64Builder).Append(rng.Int63())
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("region-", rng.Intn(8)))
		rng.Read(p)
		b.Field(2).(*array.StringBuilder).Append(hex.EncodeToString(p))
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1714560000000000 + rng.Int63n(86400e6)))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	if err := pqgen.Write(&buf, sc, []arrow.RecordBatch{rec}, pqgen.Options{Compression: compress.Codecs.Snappy}); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// benchSources puts n files (distinct ones, or 10 distinct ones repeated) with put and
// returns them as sources with their footer lengths, and the size of each one's id column
// chunk.
func benchSources(tb testing.TB, n int, distinct bool, put func(key string, data []byte)) ([]keyfile.Source, []int64) {
	tb.Helper()
	var templates [][]byte
	for i := int64(0); i < 10; i++ {
		templates = append(templates, benchFile(tb, i))
	}
	var srcs []keyfile.Source
	var keyBytes []int64
	for i := 0; i < n; i++ {
		data := templates[i%len(templates)]
		if distinct && i >= len(templates) {
			data = benchFile(tb, int64(i))
		}
		key := fmt.Sprintf("_zerobus/table_rejected_parquets/day=%02d/part-%05d.parquet", i%10, i)
		put(key, data)
		kb, fb := keyChunkBytes(tb, data, "id")
		keyBytes = append(keyBytes, kb)
		srcs = append(srcs, keyfile.Source{Key: key, Size: int64(len(data)), Group: "g1", FooterLength: fb - 8})
	}
	return srcs, keyBytes
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	return heapObjects()
}

// peakHeap samples the live heap every millisecond until stop is called, and returns the peak.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done, quit := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if v := heapObjects(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(quit)
		<-done
		return peak.Load()
	}
}

// BenchmarkRead reads the key column of 1,000 rows per file over 100 and 1,000 files (100,000
// and 1,000,000 rows) from a local directory and from the S3 emulator, with the footer length
// known (as inspect reports it) and unknown (a 64 KiB tail read), and reports requests and
// bytes per file, bytes against the key column chunks, rows per second, CPU time and the
// peak heap above the heap before the run. The store holds 1,000 files in every case, so
// that the heap before the run (which holds the S3 emulator's objects, in the same process)
// and with it the garbage collector's pacing are the same for 100 and 1,000 files.
func BenchmarkRead(b *testing.B) {
	type storeSetup struct {
		name    string
		latency time.Duration
		conc    int
	}
	for _, st := range []storeSetup{{"local", 0, 0}, {"s3", 0, 0}, {"s3-20ms", 20 * time.Millisecond, 64}} {
		b.Run("store="+st.name, func(b *testing.B) {
			var be storage.Backend
			var put func(string, []byte)
			switch st.name {
			case "local":
				dir := b.TempDir()
				be = local.New(dir)
				put = func(k string, d []byte) {
					if err := pqgen.WriteFile(filepath.Join(dir, filepath.FromSlash(k)), d); err != nil {
						b.Fatal(err)
					}
				}
			default:
				srv := s3test.NewServer(b)
				be = storagetest.OpenURL(b, s3.New, srv.URLFor("root"), srv.Config())
				put = func(k string, d []byte) {
					if err := srv.Put("root/"+k, d); err != nil {
						b.Fatal(err)
					}
				}
			}
			all, allKeyBytes := benchSources(b, 1000, false, put)
			if st.latency > 0 {
				be = storage.WithLatency(be, st.latency)
			}
			for _, n := range []int{100, 1000} {
				for _, footer := range []string{"known", "tail"} {
					if st.latency > 0 && (n != 1000 || footer != "known") {
						continue
					}
					b.Run(fmt.Sprintf("files=%d/footer=%s", n, footer), func(b *testing.B) {
						benchRead(b, be, all[:n], allKeyBytes[:n], footer == "known", st.conc)
					})
				}
			}
		})
	}
}

func benchRead(b *testing.B, be storage.Backend, srcs []keyfile.Source, keyBytes []int64, footerKnown bool, conc int) {
	srcs = slices.Clone(srcs)
	var key, footers int64
	for i := range srcs {
		key += keyBytes[i]
		footers += srcs[i].FooterLength + 8
		if !footerKnown {
			srcs[i].FooterLength = 0
		}
	}
	n := len(srcs)
	spec := keyfile.Spec{Columns: []keyfile.Column{col("id", sd.LongType)}}
	var res *keyfile.Result
	var peak uint64
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		base := liveHeap()
		stop := peakHeap()
		c0 := cpuTime()
		var rows int64
		var err error
		res, err = keyfile.Read(context.Background(), be, srcs, spec, keyfile.Options{Concurrency: conc}, func(bt keyfile.Batch) error {
			rows += bt.Rows()
			return nil
		})
		cpu += cpuTime() - c0
		if p := stop(); p > base && p-base > peak {
			peak = p - base
		}
		if err != nil {
			b.Fatal(err)
		}
		if rows != int64(n*benchRows) || res.Rows != rows {
			b.Fatalf("%d rows delivered, %d read", rows, res.Rows)
		}
	}
	b.StopTimer()
	if res.KeyBytes != key {
		b.Fatalf("key chunks %d, want %d", res.KeyBytes, key)
	}
	b.ReportMetric(float64(res.Requests)/float64(n), "reads/file")
	b.ReportMetric(float64(res.BytesRead)/float64(n), "bytes/file")
	b.ReportMetric(float64(res.BytesRead)/float64(key), "bytes/key-chunks")
	b.ReportMetric(float64(res.BytesRead)/float64(key+footers), "bytes/(key-chunks+footers)")
	b.ReportMetric(float64(res.Rows*int64(b.N))/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// BenchmarkWrite reads the key column of 1,000,000 rows over 1,000 distinct local files (a
// million distinct keys) and writes the keys file (with row ordinals), and reports its size
// per row and the peak heap, for two row group sizes and both codecs.
func BenchmarkWrite(b *testing.B) {
	dir := b.TempDir()
	be := local.New(dir)
	srcs, _ := benchSources(b, 1000, true, func(k string, d []byte) {
		if err := pqgen.WriteFile(filepath.Join(dir, filepath.FromSlash(k)), d); err != nil {
			b.Fatal(err)
		}
	})
	spec := keyfile.Spec{Columns: []keyfile.Column{col("id", sd.LongType)}}
	for _, c := range []struct {
		rgRows int64
		codec  compress.Compression
	}{{keyfile.DefaultRowGroupRows, compress.Codecs.Zstd}, {128 << 10, compress.Codecs.Zstd}, {keyfile.DefaultRowGroupRows, compress.Codecs.Snappy}} {
		rgRows := c.rgRows
		b.Run(fmt.Sprintf("row-group-rows=%d/codec=%s", rgRows, c.codec), func(b *testing.B) {
			var size int64
			var peak uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				base := liveHeap()
				stop := peakHeap()
				cw := &sizeWriter{}
				res, err := keyfile.Write(context.Background(), cw, be, srcs, spec, keyfile.Options{RowOrdinals: true, RowGroupRows: rgRows, Compression: c.codec})
				if p := stop(); p > base && p-base > peak {
					peak = p - base
				}
				if err != nil {
					b.Fatal(err)
				}
				if res.Rows != 1000*benchRows {
					b.Fatalf("%d rows", res.Rows)
				}
				size = cw.n
			}
			b.StopTimer()
			b.ReportMetric(float64(size)/(1<<20), "keys-file-MiB")
			b.ReportMetric(float64(size)/float64(1000*benchRows), "keys-file-bytes/row")
			b.ReportMetric(float64(1000*benchRows*b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		})
	}
}

type sizeWriter struct{ n int64 }

func (w *sizeWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
