package inspect_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

// TestReportTextGolden pins the text report an operator reads first: files in a schema the
// table loads as it is, files that need a projection, files a column blocks, and a file that
// is not Parquet, against a named table. A change to the wording, the order or the suggested
// SQL shows in testdata/report.golden (go test ./inspect -run Golden -update rewrites it).
func TestReportTextGolden(t *testing.T) {
	cur := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "qty", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	narrow := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	extra := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "qty", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "gift", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}}, nil)
	s := newStore()
	s.put(prefix+"2024/05/01/a.parquet", mustBytes(t, cur, `[{"id": 1, "qty": 2}, {"id": 2, "qty": 3}]`, pqgen.Options{}), t0)
	s.put(prefix+"2024/05/01/b.parquet", mustBytes(t, narrow, `[{"id": 3, "qty": 1}]`, pqgen.Options{}), t0)
	s.put(prefix+"2024/05/02/c.parquet", mustBytes(t, narrow, `[{"id": 4, "qty": 5}, {"id": 5, "qty": null}]`, pqgen.Options{}), t0)
	s.put(prefix+"2024/05/02/d.parquet", mustBytes(t, extra, `[{"id": 6, "qty": 1, "gift": true}]`, pqgen.Options{}), t0)
	s.put(prefix+"2024/05/02/e.parquet", []byte("not parquet at all"), t0)
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	table := inspect.NewTable(&sd.Table{Source: sd.SourceUC, Name: "main.sales.orders",
		Schema: sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.LongType)})
	rep.Diff(table, inspect.DiffOptions{TableName: "main.sales.orders", Source: "s3://lake/orders/_zerobus/table_rejected_parquets/"})
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.golden", text.Bytes())
}
