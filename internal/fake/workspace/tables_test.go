package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/databricks/databricks-sdk-go/service/catalog"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

func writeLog(t *testing.T, root string) {
	t.Helper()
	if _, err := deltatest.Write(root, deltatest.Table{Schema: sd.NewSchema().Col("id", sd.LongType)}); err != nil {
		t.Fatal(err)
	}
}

func TestReadTableSpecs(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, filepath.Join(dir, "main", "sales", "orders"))
	writeLog(t, filepath.Join(dir, "main", "hr", "people"))
	if err := os.MkdirAll(filepath.Join(dir, "main", "sales", "notes"), 0o755); err != nil { // no Delta log
		t.Fatal(err)
	}
	specs, err := workspace.ReadTableSpecs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Name != "main.hr.people" || specs[1].Name != "main.sales.orders" ||
		specs[1].Root != filepath.Join(dir, "main", "sales", "orders") || !specs[1].Managed {
		t.Errorf("from a directory: %+v", specs)
	}

	list := filepath.Join(dir, "tables.txt")
	body := "# tables\n\nmain.sales.a=main/sales/orders\nexternal main.ext.b = /abs/b\nmain.sales.c=file:///x/c\n"
	if err := os.WriteFile(list, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	specs, err = workspace.ReadTableSpecs(list)
	if err != nil {
		t.Fatal(err)
	}
	want := []workspace.TableSpec{{"main.sales.a", filepath.Join(dir, "main", "sales", "orders"), true},
		{"main.ext.b", "/abs/b", false}, {"main.sales.c", "file:///x/c", true}}
	if fmt.Sprint(specs) != fmt.Sprint(want) {
		t.Errorf("from a file: %+v, want %+v", specs, want)
	}

	for _, bad := range []string{"main.sales=/x\n", "main.sales.t\n", "main.sales.t=\n"} {
		if err := os.WriteFile(list, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := workspace.ReadTableSpecs(list); err == nil || !strings.Contains(err.Error(), "tables.txt:1") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := workspace.ReadTableSpecs(t.TempDir()); err == nil {
		t.Error("an empty directory gave tables")
	}
}

// TestRegisterManyTables: a directory of 120 table roots in 3 schemas is registered, and Unity
// Catalog lists the catalog's schemas and each schema's tables in pages.
func TestRegisterManyTables(t *testing.T) {
	dir := t.TempDir()
	for i := range 120 {
		writeLog(t, filepath.Join(dir, "main", fmt.Sprintf("s%d", i%3), fmt.Sprintf("t%03d", i)))
	}
	specs, err := workspace.ReadTableSpecs(dir)
	if err != nil {
		t.Fatal(err)
	}
	ws := start(t, workspace.Options{})
	began := time.Now()
	if err := ws.RegisterTables(ctx(t), specs); err != nil {
		t.Fatal(err)
	}
	t.Logf("registered %d tables in %v", len(specs), time.Since(began).Round(time.Millisecond))
	w := sdkClient(t, ws)
	schemas, err := w.Schemas.ListAll(ctx(t), catalog.ListSchemasRequest{CatalogName: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if len(schemas) != 3 {
		t.Errorf("schemas %v", schemas)
	}
	tables, err := w.Tables.ListAll(ctx(t), catalog.ListTablesRequest{CatalogName: "main", SchemaName: "s1", OmitColumns: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 40 || tables[0].TableType != catalog.TableTypeManaged || tables[0].StorageLocation == "" {
		t.Errorf("%d tables of main.s1: %+v", len(tables), tables[0])
	}
	if err := ws.RegisterTables(ctx(t), specs[:1]); err == nil || !strings.Contains(err.Error(), specs[0].Name) {
		t.Errorf("registering a table twice: %v", err)
	}
}
