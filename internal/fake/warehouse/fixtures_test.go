package warehouse_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// writeParquet writes rows (a JSON array of objects, arrow's JSON form: decimals and
// timestamps as strings) with the given schema to path, creating its directory.
func writeParquet(t *testing.T, path string, schema *arrow.Schema, rowsJSON string) {
	t.Helper()
	writeParquetWith(t, path, schema, rowsJSON, pqarrow.DefaultWriterProps())
}

// writeParquetWith is writeParquet with explicit Arrow writer properties.
func writeParquetWith(t *testing.T, path string, schema *arrow.Schema, rowsJSON string, arrprops pqarrow.ArrowWriterProperties) {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(rowsJSON))
	if err != nil {
		t.Fatalf("build record for %s: %v", path, err)
	}
	defer rec.Release()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(), arrprops)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// eventsSchema is the schema of the fallback files the tests load: the table's schema
// before a breaking change, with nested and decimal columns.
var eventsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "payload", Nullable: true, Type: arrow.StructOf(
		arrow.Field{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	)},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

const eventsDDL = `CREATE TABLE main.default.events (
  id BIGINT NOT NULL,
  name STRING COMMENT 'who',
  amount DECIMAL(10,2),
  payload STRUCT<kind: STRING, tags: ARRAY<STRING>>,
  ts TIMESTAMP
) USING DELTA`

// eventRows returns n rows with ids from first.
func eventRows(first, n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < n; i++ {
		id := first + i
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"id":` + itoa(id) + `,"name":"user-` + itoa(id) + `","amount":"` + itoa(id) + `.50",` +
			`"payload":{"kind":"click","tags":["a","b` + itoa(id) + `"]},"ts":"2024-05-01T12:00:0` + itoa(id%10) + `Z"}`)
	}
	b.WriteString("]")
	return b.String()
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}
