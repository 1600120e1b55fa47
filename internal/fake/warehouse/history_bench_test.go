package warehouse

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkDescribeHistoryLimit measures DESCRIBE HISTORY … LIMIT 10 on a table with 20,000
// versions (Zerobus-like appends, each with one data file and a log file), and reports the
// heap each version keeps. Run with: go test -run '^$' -bench DescribeHistoryLimit
func BenchmarkDescribeHistoryLimit(b *testing.B) {
	e, err := NewDuckDB(EngineOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	if _, err := e.Exec(ctx, "CREATE TABLE t (id BIGINT, name STRING)"); err != nil {
		b.Fatal(err)
	}
	t, _ := e.table(&Session{Catalog: "main", Schema: "default"}, []string{"t"})
	dir, _ := localPath(t.location)
	const versions = 20000
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	e.mu.Lock()
	for i := 0; i < versions; i++ {
		f := dataFile{path: "part-00000-" + strconv.Itoa(i) + "-c000.snappy.parquet", dir: dir, size: 900, rows: 1, modTime: 1}
		if _, err := e.addCommitSpec(t, commitSpec{op: "WRITE", params: zerobusParams, blind: true, user: "sp", engine: ZerobusEngineInfo,
			metrics: map[string]string{"numFiles": "1", "numOutputRows": "1", "numOutputBytes": "900"}, adds: []dataFile{f}}); err != nil {
			b.Fatal(err)
		}
	}
	e.mu.Unlock()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	heap := float64(m1.HeapAlloc-m0.HeapAlloc) / versions
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := e.Exec(ctx, "DESCRIBE HISTORY t LIMIT 10")
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Rows) != 10 || !strings.Contains(res.String(0, 0), strconv.Itoa(versions)) {
			b.Fatalf("newest version = %s", res.String(0, 0))
		}
	}
	b.ReportMetric(heap, "heap-B/version")
}
