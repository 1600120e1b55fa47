package demo_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/delta"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/demo"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage/local"
)

// breakingChange registers the example in a local SQL warehouse and makes the breaking
// change there, which continues the example's Delta log; it returns the warehouse.
func breakingChange(t *testing.T, ex *demo.Example) *warehouse.Server {
	t.Helper()
	srv := warehouse.New(t)
	ctx := context.Background()
	if err := srv.Engine().RegisterTable(ctx, demo.Table, ex.Root, true); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range demo.BreakingChange {
		if _, err := srv.Engine().Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return srv
}

func build(t *testing.T, opts demo.Options) *demo.Example {
	t.Helper()
	ex, err := demo.Build(context.Background(), filepath.Join(t.TempDir(), "orders"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

func TestBuildWritesTheStory(t *testing.T) {
	ctx := context.Background()
	ex := build(t, demo.Options{Files: 40})
	if ex.Files != 40 || ex.FilesV1 == 0 || ex.FilesV2 == 0 || ex.FilesV1+ex.FilesV2 != 39 {
		t.Fatalf("files %d, v1 %d, v2 %d", ex.Files, ex.FilesV1, ex.FilesV2)
	}
	b := local.New(ex.Root)

	// The Delta log: two versions, column mapping and type widening on.
	snap, err := delta.Read(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 1 || snap.Version != ex.TableVersion {
		t.Errorf("table version %d, example says %d", snap.Version, ex.TableVersion)
	}
	if !snap.Schema.Equal(demo.TableSchemaBeforeChange()) {
		t.Errorf("table schema %s, want %s", snap.Schema, demo.TableSchemaBeforeChange())
	}
	if m := snap.Configuration; m["delta.columnMapping.mode"] != "name" || m["delta.enableTypeWidening"] != "true" {
		t.Errorf("table properties %v", m)
	}

	// The breaking change, made by a SQL warehouse, continues the log: the rename keeps the
	// physical name, status is gone, amount is wider.
	before, _ := snap.Schema.Lookup("customer_id")
	breakingChange(t, ex)
	snap, err = delta.Read(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 4 {
		t.Errorf("table version %d after the breaking change, want 4", snap.Version)
	}
	if f, ok := snap.Schema.Lookup("customer_key"); !ok || f.PhysicalName != before.PhysicalName || before.PhysicalName == "" {
		t.Errorf("customer_key %+v, customer_id was %+v", f, before)
	}
	if _, ok := snap.Schema.Lookup("status"); ok {
		t.Errorf("status not dropped: %s", snap.Schema)
	}
	if f, _ := snap.Schema.Lookup("amount"); f.Type.String() != "decimal(18,4)" {
		t.Errorf("amount is %s in the table", f.Type)
	}

	// The fallback files, as inspect sees them.
	rep, err := inspect.Run(ctx, b, inspect.Options{Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	tot := rep.Totals
	if tot.Files != 40 || tot.Unreadable != 1 || tot.Groups != 2 || tot.OtherObjects != 2 || tot.Rows != ex.Rows || tot.Bytes != ex.Bytes {
		t.Fatalf("totals %+v; example %+v", tot, ex)
	}
	if bad := rep.Unreadable(); len(bad) != 1 || bad[0].Key != ex.Corrupt {
		t.Errorf("unreadable %v, want %s", bad, ex.Corrupt)
	}
	var cols []int
	for _, g := range rep.Groups {
		cols = append(cols, len(g.Columns))
		if g.Columns[1].Name != "customer_id" || g.Columns[3].Type != "decimal(10,2)" ||
			g.Columns[4].Type != "array<struct<sku:string,quantity:int,unit_price:decimal(10,2)>>" ||
			g.Columns[5].Type != "struct<city:string,country:string>" || g.Columns[2].Type != "timestamp" {
			t.Errorf("group %s columns %+v", g.SchemaID, g.Columns)
		}
	}
	if !(cols[0] == 7 && cols[1] == 8 || cols[0] == 8 && cols[1] == 7) {
		t.Errorf("group column counts %v, want one group of 7 and one of 8", cols)
	}

	// Date folders, and the hidden objects exist but are not read.
	days := map[string]bool{}
	for _, f := range rep.Files {
		day, _, ok := strings.Cut(f.Key, "/")
		if !ok || !strings.HasPrefix(day, "2025-06-0") {
			t.Errorf("key %s is not under a date folder", f.Key)
		}
		days[day] = true
	}
	if len(days) != ex.Days || ex.Days < 2 {
		t.Errorf("date folders %v, example says %d", days, ex.Days)
	}
	if len(ex.Hidden) != 2 {
		t.Fatalf("hidden %v", ex.Hidden)
	}
	for _, h := range ex.Hidden {
		if inspect.Classify(h) != "other" {
			t.Errorf("%s is not hidden", h)
		}
		if _, err := os.Stat(filepath.Join(ex.Root, filepath.FromSlash(ex.Prefix+h))); err != nil {
			t.Error(err)
		}
	}
}

func TestOrderIDsAreUniqueAcrossFiles(t *testing.T) {
	ctx := context.Background()
	ex := build(t, demo.Options{Files: 12})
	b := local.New(ex.Root)
	rep, err := inspect.Run(ctx, b, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, f := range rep.Files {
		if f.Unreadable() {
			continue
		}
		p, err := inspect.Preview(ctx, b, f.Key, inspect.PreviewOptions{Rows: 1000, Columns: []string{"order_id"}})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(p.Rows)) != f.Rows {
			t.Fatalf("%s: previewed %d of %d rows", f.Key, len(p.Rows), f.Rows)
		}
		for _, r := range p.Rows {
			id := inspect.Text(r[0])
			if other, dup := seen[id]; dup {
				t.Fatalf("order_id %s in %s and %s", id, other, f.Key)
			}
			seen[id] = f.Key
		}
	}
	if int64(len(seen)) != ex.Rows {
		t.Errorf("%d order ids, %d rows", len(seen), ex.Rows)
	}
}

// digest maps every file under root to its content hash and modification time.
func digest(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		mt := fi.ModTime().UTC().String()
		if strings.Contains(rel, "_delta_log") {
			mt = ""
		}
		sum := sha256.Sum256(data)
		out[rel] = string(sum[:]) + mt
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestBuildIsDeterministic(t *testing.T) {
	a := build(t, demo.Options{Files: 30, Concurrency: 1})
	b := build(t, demo.Options{Files: 30, Concurrency: 8})
	da, db := digest(t, a.Root), digest(t, b.Root)
	if len(da) != 30+2+2 {
		t.Errorf("%d files written, want 30 fallback files, 2 hidden objects and 2 commits", len(da))
	}
	if len(da) != len(db) {
		t.Fatalf("%d files vs %d", len(da), len(db))
	}
	for k, v := range da {
		if db[k] != v {
			t.Errorf("%s differs between runs", k)
		}
	}
	c := build(t, demo.Options{Files: 30, Seed: 99})
	if dc := digest(t, c.Root); len(dc) == len(da) {
		same := 0
		for k, v := range da {
			if dc[k] == v {
				same++
			}
		}
		if same == len(da) {
			t.Errorf("another seed wrote the same files")
		}
	}
}

func TestBuildRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Build(ctx, dir, demo.Options{Files: 5}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("non-empty dir: %v", err)
	}
	for _, n := range []int{-1, demo.MinFiles - 1, demo.MaxFiles + 1} {
		if _, err := demo.Build(ctx, filepath.Join(t.TempDir(), "o"), demo.Options{Files: n}); err == nil {
			t.Errorf("%d files: no error", n)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := demo.Build(cctx, filepath.Join(t.TempDir(), "o"), demo.Options{Files: 50}); err == nil {
		t.Errorf("cancelled: no error")
	}
}

func TestStoryNamesTheChange(t *testing.T) {
	ex := build(t, demo.Options{Files: 5})
	var buf bytes.Buffer
	if err := ex.WriteStory(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{demo.Table, "customer_id renamed to\n  customer_key", "status dropped", "DECIMAL(18,4)", "column mapping", "_zerobus/table_rejected_parquets/", "5 files", "_SUCCESS"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("story lacks %q:\n%s", want, buf.String())
		}
	}
}

// inspectJSON returns the report of inspect for an example, with its diff against the
// table's Delta log, as `inspect -o json` prints it.
func inspectJSON(t *testing.T, ex *demo.Example) []byte {
	t.Helper()
	ctx := context.Background()
	b := local.New(ex.Root)
	rep, err := inspect.Run(ctx, b, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := delta.Read(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	tbl := inspect.NewTable(&schemadiff.Table{Source: schemadiff.SourceDelta, Schema: snap.Schema, Version: &snap.Version})
	if tbl.History, err = delta.History(ctx, b, 0); err != nil {
		t.Fatal(err)
	}
	rep.Diff(tbl, inspect.DiffOptions{TableName: demo.Table})
	var ib bytes.Buffer
	if err := rep.WriteJSON(&ib); err != nil {
		t.Fatal(err)
	}
	return ib.Bytes()
}

func TestSummarizeReadsInspectsDiff(t *testing.T) {
	ex := build(t, demo.Options{Files: 20})
	breakingChange(t, ex)
	sum, err := demo.Summarize(inspectJSON(t, ex))
	if err != nil {
		t.Fatal(err)
	}
	if sum.TableVersion == nil || *sum.TableVersion != 4 {
		t.Errorf("table version %v", sum.TableVersion)
	}
	if len(sum.Unreadable) != 1 || sum.Unreadable[0].Key != ex.Corrupt || sum.Totals.Files != 20 {
		t.Errorf("unreadable %v, totals %+v", sum.Unreadable, sum.Totals)
	}
	if len(sum.Groups) != 2 || !sum.Blocking() {
		t.Fatalf("groups %+v", sum.Groups)
	}
	for _, g := range sum.Groups {
		got := map[string]string{}
		for _, c := range g.Changes {
			got[c.Path] = c.Verdict
		}
		if g.Verdict != "blocks" || got["status"] != "blocks" || got["customer_key"] != "needs_cast" || got["amount"] != "needs_cast" {
			t.Errorf("group %s: verdict %s, changes %v", g.SchemaID, g.Verdict, got)
		}
		if len(g.Columns) == 7 && got["is_gift"] != "ok" {
			t.Errorf("group without is_gift: changes %v", got)
		}
		if !strings.Contains(g.Projection, "`customer_id` AS `customer_key`") ||
			!strings.Contains(g.Projection, "CAST(`amount` AS DECIMAL(18,4)) AS `amount`") || g.Confirm {
			t.Errorf("group %s: projection %q, confirm %v", g.SchemaID, g.Projection, g.Confirm)
		}
	}
	var out bytes.Buffer
	if err := sum.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"20 Parquet files", "1 unreadable", "unreadable: " + ex.Corrupt, "version 4",
		"group " + sum.Groups[0].SchemaID, "status [blocks]", "customer_key [needs_cast]", "amount [needs_cast]", "load through: SELECT `order_id`, `customer_id` AS `customer_key`"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	if _, err := demo.Summarize([]byte("not json")); err == nil {
		t.Error("bad JSON: no error")
	}
}

// TestSummarizeCountedAndSharedChanges: a group whose changes an earlier group lists gets
// them from there, the ok changes inspect gave in full are changes, the others a count.
func TestSummarizeCountedAndSharedChanges(t *testing.T) {
	doc := `{"root": "file:///t", "prefix": "p/", "files": [], "totals": {"groups": 2},
	  "groups": [
	    {"schema_id": "aaa", "verdict": "blocks",
	     "changes": [{"path": "legacy", "verdict": "blocks", "reason": "not in the table"}],
	     "ok_changes": [{"kind": "missing_in_file", "count": 1, "summary": "1 table column the files lack, filled with NULL",
	       "examples": [{"path": "note", "verdict": "ok", "reason": "filled with NULL"}]}]},
	    {"schema_id": "bbb", "verdict": "blocks", "same_changes_as": "aaa",
	     "ok_changes": [{"kind": "missing_in_file", "count": 1999, "summary": "1,999 table columns the files lack, filled with NULL",
	       "examples": [{"path": "c_0001", "verdict": "ok", "reason": "filled with NULL"}]}]}]}`
	sum, err := demo.Summarize([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	a, b := sum.Groups[0], sum.Groups[1]
	if len(a.Changes) != 2 || a.Changes[1].Path != "note" || len(a.OKCounts) != 0 {
		t.Errorf("aaa: changes %+v, counts %v", a.Changes, a.OKCounts)
	}
	if len(b.Changes) != 1 || b.Changes[0].Path != "legacy" || len(b.OKCounts) != 1 || len(a.Changes) != 2 {
		t.Errorf("bbb: changes %+v, counts %v; aaa %+v", b.Changes, b.OKCounts, a.Changes)
	}
	var out bytes.Buffer
	if err := sum.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "group bbb: 0 files, 0 rows, verdict BLOCKS\n  columns: \n  - legacy [blocks] not in the table\n  - [ok] 1,999 table columns the files lack, filled with NULL\n") {
		t.Errorf("summary:\n%s", out.String())
	}
}
