package reload

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/internal/fallback"

	"github.com/zbrecover/zbrecover/inspect"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// BenchmarkPlan10k plans 10,000 files in two schema groups over 10 folders (5 each): the work reload
// adds to inspect's before it sends anything (compare with inspect's figures in
// docs/performance.md).
func BenchmarkPlan10k(b *testing.B) {
	cur := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer_key", sd.StringType).Col("amount", sd.DecimalType(18, 4))
	old := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer_id", sd.StringType).Col("amount", sd.DecimalType(10, 2))
	rep := &inspect.Report{Root: "s3://lake/orders", Prefix: fallback.Prefix,
		Groups: []inspect.Group{{SchemaID: "aaa", Schema: old}, {SchemaID: "bbb", Schema: cur}}}
	for i := 0; i < 10_000; i++ {
		g := "aaa"
		if i%2 == 1 {
			g = "bbb"
		}
		rep.Files = append(rep.Files, inspect.File{Key: fmt.Sprintf("2026/01/%02d/part-%05d-c000.snappy.parquet", i%10, i), SchemaID: g, Rows: 100, Size: 4096})
	}
	loc, _ := storage.Parse("s3://lake/orders")
	dir := loc.Join(fallback.Prefix)
	b.ReportAllocs()
	for b.Loop() {
		p, err := NewPlan(rep, &sd.Table{Source: sd.SourceDelta, Schema: cur}, orders, dir, PlanOptions{Renames: map[string]string{"customer_id": "customer_key"}})
		if err != nil || p.Files() != 10_000 || len(p.Batches) != 10 {
			b.Fatalf("plan: %v, %d files in %d batches", err, p.Files(), len(p.Batches))
		}
	}
}

// historyOf is a warehouse whose table has n commits, one every 2 s up to now: Zerobus'
// flushes, with a tagged COPY INTO of another journal's run every 1,000th. It answers
// DESCRIBE HISTORY … LIMIT k as a warehouse does, newest first, and counts the statements
// and rows it returned.
type historyOf struct {
	rows       [][]any
	statements int
	returned   int
}

func newHistoryOf(n int, now time.Time) *historyOf {
	h := &historyOf{}
	for v := n - 1; v >= 0; v-- {
		op, tag, metrics := "WRITE", "", `{"numFiles":"1","numOutputRows":"250","numOutputBytes":"20480"}`
		engine := "Zerobus"
		if v%1000 == 500 {
			op, tag, metrics, engine = "COPY INTO", fmt.Sprintf("zbrecover:20260101T000000Z-%08x:%d:1:abc", v, v), `{"numOutputRows":"1000"}`, "Databricks-Runtime"
		}
		h.rows = append(h.rows, []any{int64(v), now.Add(-time.Duration(n-1-v) * 2 * time.Second), "sp-zerobus", op,
			`{"mode":"Append"}`, metrics, tag, engine, true})
	}
	return h
}

func (h *historyOf) QueryAll(_ context.Context, stmt string, _ ...any) (*databricks.Result, error) {
	k, _ := strconv.Atoi(limitRe.FindStringSubmatch(stmt)[1])
	k = min(k, len(h.rows))
	h.statements++
	h.returned += k
	return &databricks.Result{Columns: []string{"version", "timestamp", "userName", "operation", "operationParameters", "operationMetrics",
		"userMetadata", "engineInfo", "isBlindAppend"}, Rows: h.rows[:k]}, nil
}

// BenchmarkForeignRunScan100k reads a history of 100,000 commits since the oldest parked
// file, as Prepare does to find runs of other journals: the statements it sends, the commits
// it reads and its time per scan (the warehouse's own time aside).
func BenchmarkForeignRunScan100k(b *testing.B) {
	now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	const n = 100_000
	wh := newHistoryOf(n, now)
	since := now.Add(-time.Duration(n-1) * 2 * time.Second)
	h := &history{wh: wh, table: orders, retries: 1, backoff: time.Millisecond}
	b.ReportAllocs()
	var scan *tagScan
	for b.Loop() {
		var err error
		if scan, err = h.tagsSince(context.Background(), since); err != nil {
			b.Fatal(err)
		}
	}
	if len(scan.Tagged) != n/1000 || scan.Latest != n-1 {
		b.Fatalf("found %d tagged commits, latest %d", len(scan.Tagged), scan.Latest)
	}
	b.ReportMetric(float64(wh.statements)/float64(b.N), "statements/scan")
	b.ReportMetric(float64(wh.returned)/float64(b.N), "commits-read/scan")
}
