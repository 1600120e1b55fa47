package reload

import (
	"fmt"
	"testing"

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
	rep := &inspect.Report{Root: "s3://lake/orders", Prefix: inspect.FallbackPrefix,
		Groups: []inspect.Group{{SchemaID: "aaa", Schema: old}, {SchemaID: "bbb", Schema: cur}}}
	for i := 0; i < 10_000; i++ {
		g := "aaa"
		if i%2 == 1 {
			g = "bbb"
		}
		rep.Files = append(rep.Files, inspect.File{Key: fmt.Sprintf("2026/01/%02d/part-%05d-c000.snappy.parquet", i%10, i), SchemaID: g, Rows: 100, Size: 4096})
	}
	loc, _ := storage.Parse("s3://lake/orders")
	dir := loc.Join(inspect.FallbackPrefix)
	b.ReportAllocs()
	for b.Loop() {
		p, err := NewPlan(rep, &sd.Table{Source: sd.SourceDelta, Schema: cur}, orders, dir, PlanOptions{Renames: map[string]string{"customer_id": "customer_key"}})
		if err != nil || p.Files() != 10_000 || len(p.Batches) != 10 {
			b.Fatalf("plan: %v, %d files in %d batches", err, p.Files(), len(p.Batches))
		}
	}
}
