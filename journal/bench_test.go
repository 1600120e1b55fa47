package journal

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDirAppend measures one durable Append (encode, redact, write, fsync) on the local
// store: a batch's intent with 1000 files and its statement (the largest batch), and its
// result. BenchmarkEncode is the same without I/O: the redaction of every string.
func BenchmarkDirAppend(b *testing.B) {
	for _, c := range benchRecords() {
		b.Run(c.name, func(b *testing.B) {
			d, err := OpenDir(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			ctx := context.Background()
			w, err := Start(ctx, d, target, "bench", Header{})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := w.Append(ctx, c.rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncode(b *testing.B) {
	for _, c := range benchRecords() {
		b.Run(c.name, func(b *testing.B) {
			r := c.rec
			r.V, r.Run, r.Seq, r.TableID = Version, "bench", 2, target.TableID
			for i := 0; i < b.N; i++ {
				if _, err := encode(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type benchRecord struct {
	name string
	rec  Record
}

func benchRecords() []benchRecord {
	files := make([]File, 1000)
	for i := range files {
		files[i] = File{Key: fmt.Sprintf("_zerobus/table_rejected_parquets/part-%05d-1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718.c000.snappy.parquet", i),
			Size: 1 << 20, ETag: `"9b2cf535f27731c974343645a3985328"`, Rows: 12345, ModTime: t0}
	}
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = "'" + strings.TrimPrefix(f.Key, "_zerobus/table_rejected_parquets/") + "'"
	}
	sql := "COPY INTO `main`.`sales`.`orders` FROM (SELECT * FROM 's3://lake/orders/_zerobus/table_rejected_parquets') FILEFORMAT = PARQUET FILES = (" +
		strings.Join(names, ", ") + ") COPY_OPTIONS ('mergeSchema' = 'false')"
	return []benchRecord{
		{"intent-1000-files", Record{Kind: KindIntent, Intent: &Intent{Batch: 1, Files: files, ExpectedRows: 12345000, SQL: sql, Started: t0}}},
		{"result", Record{Kind: KindResult, Result: &Result{Batch: 1, Inserted: Int64(12345000), QueryID: "01f0-aaaa", Ended: t0}}},
		{"outcome", Record{Kind: KindOutcome, Outcome: &Outcome{Batch: 1, Status: BatchVerified, Reason: "inserted = expected"}}},
	}
}
