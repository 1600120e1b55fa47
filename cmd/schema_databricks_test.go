package cmd

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/schemadiff"
)

// TestSchemaFromUCMatchesDelta reads one table's schema from its Delta log (located through Unity
// Catalog) and from its Unity Catalog columns: both give the same columns, physical names included.
func TestSchemaFromUCMatchesDelta(t *testing.T) {
	dir, schema := writeTable(t)
	srv := databricksEnv(t)
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "orders",
		StorageLocation: "file://" + filepath.ToSlash(dir), Columns: uctest.ColumnsFromSchema(schema),
		PartitionColumns: []string{"amount"},
		Properties:       map[string]string{"delta.columnMapping.mode": "name"}})

	get := func(from string) schemaDoc {
		t.Helper()
		code, out, errOut := run(t, "schema", "-o", "json", "--from", from, "main.sales.orders")
		if code != 0 {
			t.Fatalf("--from %s: exit %d: %s", from, code, errOut)
		}
		var ts schemaDoc
		if err := json.Unmarshal([]byte(out), &ts); err != nil {
			t.Fatalf("--from %s: %v\n%s", from, err, out)
		}
		return ts
	}
	d, u := get("delta"), get("uc")
	if d.Source != "delta" || u.Source != "uc" || u.Table != "main.sales.orders" || d.Table != "main.sales.orders" {
		t.Errorf("sources: %q %q, tables %q %q", d.Source, u.Source, d.Table, u.Table)
	}
	if len(d.Columns) != 3 || !reflect.DeepEqual(d.Columns, u.Columns) {
		t.Errorf("columns differ:\ndelta %+v\nuc    %+v", d.Columns, u.Columns)
	}
	if !reflect.DeepEqual(d.PartitionColumns, u.PartitionColumns) || len(u.PartitionColumns) != 1 {
		t.Errorf("partition columns: delta %v, uc %v", d.PartitionColumns, u.PartitionColumns)
	}
	if u.ColumnMappingMode != "name" {
		t.Errorf("uc column mapping mode %q", u.ColumnMappingMode)
	}

	_, ddlDelta, _ := run(t, "schema", "-o", "ddl", "main.sales.orders")
	_, ddlUC, _ := run(t, "schema", "-o", "ddl", "--from", "uc", "--table", "main.sales.orders")
	if ddlDelta == "" || ddlDelta != ddlUC {
		t.Errorf("ddl differs:\n%s\n%s", ddlDelta, ddlUC)
	}

	code, _, errOut := run(t, "schema", "--from", "uc", "main.sales.missing")
	if code != ExitFailure || !strings.Contains(errOut, "TABLE_DOES_NOT_EXIST") {
		t.Errorf("missing table: exit %d, %s", code, errOut)
	}
}

// TestSchemaFromUCRefusesNonTargets: the schema of a view, a CSV table or an external table is
// not one fallback files are compared with; the uc source refuses them as inspect does.
func TestSchemaFromUCRefusesNonTargets(t *testing.T) {
	srv := databricksEnv(t)
	cols := uctest.ColumnsFromSchema(schemadiff.NewSchema().Col("id", schemadiff.LongType))
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "v", TableType: "VIEW", Columns: cols})
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "csv", TableType: "EXTERNAL", DataSourceFormat: "CSV",
		StorageLocation: "s3://lake/csv", Columns: cols})
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "ext", TableType: "EXTERNAL",
		StorageLocation: "s3://lake/ext", Columns: cols})
	for table, word := range map[string]string{"main.sales.v": "is a view", "main.sales.csv": "format CSV", "main.sales.ext": "external table"} {
		for _, from := range []string{"uc", "delta"} {
			code, out, errOut := run(t, "schema", "--from", from, table)
			if code != ExitFailure || out != "" || !strings.Contains(errOut, word) {
				t.Errorf("schema --from %s %s: exit %d, stdout %q, stderr %q; want exit 1 saying %q", from, table, code, out, errOut, word)
			}
		}
	}
}
