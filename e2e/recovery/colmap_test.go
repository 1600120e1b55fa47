//go:build cgo

package recovery

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/cmd"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/iostreams"
)

// runZbrecover runs the command line in-process and returns its exit code and output.
func runZbrecover(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	io, _, out, errOut := iostreams.Test()
	code := cmd.Run(context.Background(), cmd.NewFactory(io), args)
	return code, out.String(), errOut.String()
}

// TestColumnMappedTableFromTheWarehouse: the local warehouse renames a column of a table with
// delta.columnMapping.mode = name; the Delta log it writes gives `schema --from delta` the new
// name with its physical name, and inspect matches a file written before the rename (a data
// file of the table, so with physical names) by physical name.
func TestColumnMappedTableFromTheWarehouse(t *testing.T) {
	srv := warehouse.New(t)
	e := srv.Engine()
	ctx := context.Background()
	for _, stmt := range []string{
		"CREATE TABLE main.default.orders (id BIGINT NOT NULL, customer STRING, amount DECIMAL(10,2)) TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
		"INSERT INTO main.default.orders VALUES (1, 'ada', 12.50), (2, 'bob', 3.00)",
	} {
		if _, err := e.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	loc, _ := e.Location("main.default.orders")
	root := strings.TrimPrefix(loc, "file://")
	// The data file of the insert, written before the rename, parked as a fallback file.
	data, _ := filepath.Glob(filepath.Join(root, "part-*.parquet"))
	if len(data) != 1 {
		t.Fatalf("data files = %v", data)
	}
	b, err := os.ReadFile(data[0])
	if err != nil {
		t.Fatal(err)
	}
	fallbackDir := filepath.Join(root, filepath.FromSlash(fallback.Prefix), "2026", "part-0.parquet")
	if err := os.MkdirAll(filepath.Dir(fallbackDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fallbackDir, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Exec(ctx, "ALTER TABLE main.default.orders RENAME COLUMN customer TO customer_name"); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runZbrecover(t, "schema", root)
	if code != 0 {
		t.Fatalf("schema: exit %d\n%s%s", code, out, errOut)
	}
	m := regexp.MustCompile(`(?m)^customer_name\s+string\s+nullable\s+(col-[0-9a-f-]{36})\s*$`).FindStringSubmatch(out)
	if m == nil || strings.Contains(out, "\ncustomer ") {
		t.Fatalf("schema --from delta does not show customer_name with its physical name:\n%s", out)
	}
	phys := m[1]

	code, out, errOut = runZbrecover(t, "inspect", root)
	if code == 1 || code == 2 {
		t.Fatalf("inspect: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "customer_name: rename: the file stores column customer_name under its column-mapping physical name `"+phys+"`") {
		t.Errorf("inspect does not match the file's %s to customer_name by physical name (exit %d):\n%s", phys, code, out)
	}
	if strings.Contains(out, "only in the file") {
		t.Errorf("inspect reports a column only in the file:\n%s", out)
	}
}
