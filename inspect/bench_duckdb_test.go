//go:build duckdb

package inspect_test

// The DuckDB peer (cgo), over the same local files as BenchmarkInspectLocal:
//
//	go test -tags duckdb -run XXX -bench 'InspectLocal|DuckDB' -benchtime 5x ./inspect

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"
)

func BenchmarkDuckDB(b *testing.B) {
	const n = 2000
	dir := benchTable(b, n)
	glob := strings.ReplaceAll(filepath.ToSlash(filepath.Join(dir, prefix, "**", "*.parquet")), "'", "''")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	queries := []struct {
		name, sql string
		check     func(files, v int64) error
	}{
		// Row counts from the footers: what inspect's totals need.
		{"file_metadata", `SELECT count(*), sum(num_rows) FROM parquet_file_metadata('` + glob + `')`,
			func(files, rows int64) error {
				if files != n || rows != n*peerRows {
					return fmt.Errorf("%d files, %d rows", files, rows)
				}
				return nil
			}},
		// Grouping by a schema signature: what inspect's groups need.
		{"schema_groups", `SELECT sum(files), count(*) FROM (
			SELECT sig, count(*) AS files FROM (
				SELECT file_name, string_agg(name || ':' || type || ':' || coalesce(converted_type, '') || ':' ||
					coalesce(logical_type, '') || ':' || coalesce(repetition_type, ''), ',') AS sig
				FROM parquet_schema('` + glob + `') GROUP BY file_name)
			GROUP BY sig)`,
			func(files, groups int64) error {
				if files != n || groups < 1 {
					return fmt.Errorf("%d files in %d groups", files, groups)
				}
				return nil
			}},
	}
	run := func(q string, check func(a, c int64) error) error {
		var a, c int64
		if err := db.QueryRowContext(ctx, q).Scan(&a, &c); err != nil {
			return err
		}
		return check(a, c)
	}
	for _, q := range queries {
		b.Run(fmt.Sprintf("%s/files=%d", q.name, n), func(b *testing.B) {
			if err := run(q.sql, q.check); err != nil { // warm-up, and a check of the answer
				b.Fatal(err)
			}
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime()
			for i := 0; i < b.N; i++ {
				if err := run(q.sql, q.check); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "files/s")
			b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
	b.Run(fmt.Sprintf("both/files=%d", n), func(b *testing.B) {
		b.ResetTimer()
		start, cpu0 := time.Now(), cpuTime()
		for i := 0; i < b.N; i++ {
			for _, q := range queries {
				if err := run(q.sql, q.check); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "files/s")
		b.ReportMetric(float64((cpuTime()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op")
	})
}
