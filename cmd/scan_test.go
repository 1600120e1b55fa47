package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/scan"
)

func TestScanFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want func(*ScanOptions) bool
	}{
		{[]string{}, func(o *ScanOptions) bool {
			return o.Scope == scan.Scope{} && o.Prefix == "_zerobus/table_rejected_parquets/"
		}},
		{[]string{"main"}, func(o *ScanOptions) bool { return o.Scope == scan.Scope{Catalog: "main"} }},
		{[]string{"`my-cat`.sales", "--table-pattern", "orders_*", "--min-age", "15m", "--exit-code", "--summary", "s.md"}, func(o *ScanOptions) bool {
			return o.Scope == scan.Scope{Catalog: "my-cat", Schema: "sales"} && o.TablePattern == "orders_*" && o.MinAge == 15*time.Minute && o.ExitCode && o.Summary == "s.md"
		}},
	} {
		io, _, _, _ := iostreams.Test()
		f := NewFactory(io)
		var got *ScanOptions
		c := NewCmdScan(f, func(_ context.Context, o *ScanOptions) error { got = o; return nil })
		c.SetArgs(tc.args)
		if err := c.Execute(); err != nil || got == nil || !tc.want(got) {
			t.Errorf("%q: %+v, %v", tc.args, got, err)
		}
	}
	for _, args := range [][]string{
		{"scan", "main.sales.orders"},
		{"scan", "a", "b"},
		{"scan", "--table-pattern", "[x"},
		{"scan", "--min-age", "-1m"},
		{"scan", "--prefix", "../elsewhere"},
		{"scan", "-o", "json", "--summary", "-"},
	} {
		if code, _, errOut := run(t, args...); code != ExitUsage {
			t.Errorf("%q: exit %d, want %d; stderr %q", args, code, ExitUsage, errOut)
		}
	}
}

// scanWorkspace is a fake workspace with the schema main.sales: orders (3 parked files in 2
// date folders), refunds (1 parked file), 6 clean tables, a view, one table whose root is
// missing; and the schema main.hr, whose listing is denied.
func scanWorkspace(t *testing.T) (srv *uctest.Server, rootOf func(string) string) {
	t.Helper()
	srv = databricksEnv(t)
	base := t.TempDir()
	rootOf = func(name string) string { return filepath.Join(base, name) }
	put := func(table, rel string, size int, mod time.Time) {
		p := filepath.Join(rootOf(table), "_zerobus", "table_rejected_parquets", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	add := func(name string) {
		if err := os.MkdirAll(rootOf(name), 0o755); err != nil {
			t.Fatal(err)
		}
		srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: name, StorageLocation: "file://" + filepath.ToSlash(rootOf(name))})
	}
	day := time.Date(2026, 2, 27, 10, 0, 0, 0, time.UTC)
	add("orders")
	put("orders", "2026-02-27/part-0.parquet", 1000, day)
	put("orders", "2026-02-28/part-1.parquet", 2000, day.Add(24*time.Hour))
	put("orders", "2026-02-28/part-2.parquet", 3000, day.Add(25*time.Hour))
	put("orders", "2026-02-28/_SUCCESS", 0, day.Add(25*time.Hour))
	add("refunds")
	put("refunds", "2026-02-28/part-0.parquet", 10, day.Add(24*time.Hour))
	put("refunds", "2026-03-01/part-1.parquet", 10, time.Now()) // young under --min-age
	for i := range 6 {
		add(fmt.Sprintf("clean%d", i))
	}
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "v", TableType: "VIEW"})
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "gone", StorageLocation: "file://" + filepath.ToSlash(rootOf("gone"))})
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "hr", Name: "salaries", StorageLocation: "file://" + filepath.ToSlash(rootOf("salaries"))})
	srv.DenyListing("main.hr")
	return srv, rootOf
}

func TestScanText(t *testing.T) {
	scanWorkspace(t)
	code, out, errOut := run(t, "scan", "main", "--storage-auth", "default")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"Scope:   catalog main\n",
		"Tables:  9 tables scanned: 2 with parked files, 6 clean, 1 unreadable; 1 skipped, not a managed Delta table (1 view); 1 catalog or schema not listed",
		"Files:   5 fallback files, 5.9 KiB in fallback folders\n",
		"Tables with parked files: 2\n",
		"  main.sales.orders   3      5.9 KiB  2026-02-27T10:00:00Z  2026-02-28T11:00:00Z  2\n",
		"  main.sales.refunds  2      20 B",
		"  zbrecover inspect --table main.sales.orders --storage-auth default\n",
		"Unreadable tables: 1\n  main.sales.gone: local path ",
		"    zbrecover doctor --table main.sales.gone --storage-auth default\n",
		"Not listed: 1\n  main.hr: list the tables of main.hr: ",
		"6 tables clean (no parked files).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "1 of 9 tables could not be read; 1 catalog or schema could not be listed (the report lists them with the reason)") {
		t.Errorf("stderr %q", errOut)
	}

	// --min-age leaves out the file written just now; --exit-code makes the finding the status.
	code, out, errOut = run(t, "scan", "main.sales", "--min-age", "1h", "--exit-code", "--table-pattern", "REF*")
	if code != ExitParked || !strings.Contains(out, "main.sales.refunds  1      10 B") || !strings.Contains(out, "(1 file younger than 1h left out)") ||
		!strings.Contains(errOut, "1 of 1 table holds parked fallback files (1 file in all)") {
		t.Errorf("--exit-code: exit %d\n%s\n%s", code, out, errOut)
	}
	code, _, errOut = run(t, "scan", "main.sales", "--exit-code", "--table-pattern", "clean*")
	if code != ExitOK {
		t.Errorf("--exit-code on clean tables: exit %d, %s", code, errOut)
	}
	code, _, errOut = run(t, "scan", "main.sales", "--exit-code", "--table-pattern", "gone")
	if code != ExitPartial || !strings.Contains(errOut, "1 of 1 table could not be read") {
		t.Errorf("--exit-code on an unreadable table: exit %d, %s", code, errOut)
	}
	code, _, errOut = run(t, "scan", "nope")
	if code != ExitFailure || !strings.Contains(errOut, "list the schemas of nope") {
		t.Errorf("a missing catalog: exit %d, %s", code, errOut)
	}
}

func TestScanJSON(t *testing.T) {
	scanWorkspace(t)
	code, out, errOut := run(t, "scan", "main.sales", "-o", "json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var doc struct {
		SchemaVersion int          `json:"schema_version"`
		Scope         string       `json:"scope"`
		Tables        []scan.Table `json:"tables"`
		Totals        scan.Totals  `json:"totals"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if doc.SchemaVersion != 2 || doc.Scope != "main.sales" || doc.Totals.Scanned != 9 || doc.Totals.Parked != 2 || doc.Totals.Bytes != 6020 {
		t.Errorf("document %+v", doc)
	}
	o := doc.Tables[0]
	if o.Name != "main.sales.orders" || o.Files != 3 || o.Bytes != 6000 || o.DateFolders != 2 || o.OtherObjects != 1 ||
		o.Next != "zbrecover inspect --table main.sales.orders" || o.TableID == "" {
		t.Errorf("orders %+v", o)
	}
	// Without an argument, every catalog: here main, whose schema hr cannot be listed.
	code, out, errOut = run(t, "scan", "-o", "json")
	var all struct {
		Scope    string          `json:"scope"`
		Unlisted []scan.Unlisted `json:"unlisted"`
		Totals   scan.Totals     `json:"totals"`
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &all) != nil || all.Scope != "" || all.Totals.Catalogs != 1 ||
		all.Totals.Scanned != 9 || len(all.Unlisted) != 1 || all.Unlisted[0].Schema != "hr" {
		t.Errorf("every catalog: exit %d, %+v\n%s", code, all, errOut)
	}
	// stderr holds only JSON lines.
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if l != "" && !json.Valid([]byte(l)) {
			t.Errorf("stderr line %q", l)
		}
	}
}

func TestScanJSONLinesAndSummary(t *testing.T) {
	scanWorkspace(t)
	md := filepath.Join(t.TempDir(), "scan.md")
	code, out, errOut := run(t, "scan", "main", "-o", "jsonl", "--summary", md, "--exit-code")
	if code != ExitParked {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var kinds []string
	tables := map[string]scan.Table{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || len(m) != 1 {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for k, v := range m {
			kinds = append(kinds, k)
			if k == "table" {
				var tb scan.Table
				if err := json.Unmarshal(v, &tb); err != nil {
					t.Fatal(err)
				}
				tables[tb.Name] = tb
			}
		}
	}
	if len(kinds) != 12 || kinds[0] != "scan" || kinds[len(kinds)-1] != "totals" || len(tables) != 9 || tables["main.sales.orders"].Files != 3 {
		t.Errorf("lines %q, tables %d", kinds, len(tables))
	}
	if !strings.Contains(out, `{"unlisted":{"catalog":"main","schema":"hr","error":"list the tables of main.hr: `) {
		t.Errorf("no unlisted line:\n%s", out)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		"### zbrecover scan: catalog main\n",
		"| scope | catalog main |\n",
		"| tables | 9 tables scanned: 2 with parked files, 6 clean, 1 unreadable;",
		"| files | 5 (5.9 KiB) |\n",
		"| exit status | 6 (parked fallback files found) |\n",
		"**Tables with parked files (2):**",
		"| `main.sales.orders` | 3 | 5.9 KiB | 2026-02-27T10:00:00Z | 2026-02-28T11:00:00Z | 2 | `zbrecover inspect --table main.sales.orders` |\n",
		"**Unreadable tables (1):**",
		"| `main.sales.gone` | local path ",
		"**Not listed (1):**",
		"**Next:**\n- inspect each of the 2 tables with parked files",
		"- run the doctor command of the unreadable table: it says what access is missing",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}
