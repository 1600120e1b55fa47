package sqlstmt

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/schemadiff"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/sql")

// name is a table name as databricks.TableName renders it (each part backquoted, a
// backquote doubled).
type name struct{ c, s, t string }

func (n name) SQL() string {
	q := func(p string) string { return "`" + strings.ReplaceAll(p, "`", "``") + "`" }
	return q(n.c) + "." + q(n.s) + "." + q(n.t)
}

var (
	orders  = name{"main", "sales", "orders"}
	hostile = name{"main", "sa`les", "or ders"}
	staging = name{"main", "sales", "orders__zbrecover_20261201t101500z_1a2b3c4d"}
)

// golden compares got with testdata/sql/<file>.sql (rewritten with -update).
func golden(t *testing.T, file, got string) {
	t.Helper()
	p := filepath.Join("testdata", "sql", file+".sql")
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./sqlstmt -update to write it)", err)
	}
	if got+"\n" != string(want) {
		t.Errorf("%s differs from its golden file %s:\n got %s\nwant %s", file, p, got, strings.TrimSuffix(string(want), "\n"))
	}
}

// TestStatements renders every statement shape zbrecover sends, with names that need
// quoting, against its golden file: a change of a quoting rule changes a golden.
func TestStatements(t *testing.T) {
	folder := "s3://lake/orders/_zerobus/table_rejected_parquets/2026/01/0'1\\/"
	names := []string{"part-1.parquet", "it's.parquet", `back\slash.parquet`}
	sel := "`id`, `customer_id` AS `customer_key`, CAST(`amount` AS DECIMAL(18,4)) AS `amount`"
	keys := []string{"order id", "re`gion"}
	files := KeySource{Label: "g'1", Folder: "file:///f/", Files: []string{"a,b.parquet", "c{1}.parquet", `d\e.parquet`}, Exprs: []string{"CAST(`order id` AS BIGINT)", "`re``gion`"}}
	keysFile := KeySource{File: "/Volumes/main/sales/staging/run1/_zbrecover/keys/run-x[1].parquet", Exprs: []string{"k0", "k1"}}
	loadVersion := int64(12)
	dataFiles := []string{"s3://lake/orders/part-00000-1a2b.c000.snappy.parquet", "s3://lake/orders/it's/part-1.parquet"}
	for _, c := range []struct{ file, got string }{
		{"copy_into", CopyInto(orders, folder, "", names, false)},
		{"copy_into_projection", CopyInto(hostile, folder, sel, names, false)},
		{"copy_into_validate", CopyInto(hostile, folder, sel, names, true)},
		{"copy_into_staging", CopyIntoStaging(staging, 7, folder, sel, names, false)},
		{"copy_into_staging_bare", CopyIntoStaging(staging, 2, folder, "", names, false)},
		{"history", History(hostile, 1000)},
		{"properties", Properties(hostile)},
		{"current_user", CurrentUser()},
		{"set_tag", SetTag("zbrecover:20261201T101500Z-1a2b3c4d:3:1")},
		{"set_tag_clear", SetTag("")},
		{"describe_json", DescribeJSON(hostile)},
		{"staging_create", StagingCreate(hostile, staging)},
		{"staging_drop", StagingDrop(staging)},
		{"merge", Merge(hostile, staging, MergeSpec{Key: keys, Columns: []string{"order id", "re`gion", "amount"}})},
		{"merge_order", Merge(hostile, staging, MergeSpec{Key: keys, Order: "seq", Columns: []string{"order id", "re`gion", "seq"}})},
		{"merge_order_ascending", Merge(hostile, staging, MergeSpec{Key: []string{"id"}, Order: "seq", Ascending: true, Columns: []string{"id", "seq"}})},
		{"key_source_files", files.SQL()},
		{"key_source_keys_file", keysFile.SQL()},
		{"overlap", Overlap(hostile, keys, []KeySource{files})},
		{"reconcile_by_label", ReconcileByLabel(hostile, keys, []KeySource{keysFile})},
		{"claim", Claim(hostile, schemadiff.NewSchema().Col("order id", schemadiff.LongType, schemadiff.NotNull).
			Col("re`gion", schemadiff.StringType).Col("amount", schemadiff.DecimalType(18, 4)).Fields)},
		{"reconcile_by_label_files", ReconcileByLabel(hostile, keys, []KeySource{files, keysFile})},
		{"copy_into_forced", CopyIntoForced(hostile, folder, sel, names, false)},
		{"copy_into_forced_validate", CopyIntoForced(orders, folder, "", names, true)},
		{"undo_count_row_ids", UndoCount(hostile, RowIDCondition([]RowIDRange{{0, 99}, {250, 250}, {300, 419}}), &loadVersion)},
		{"undo_delete_row_ids", UndoDelete(hostile, RowIDCondition([]RowIDRange{{0, 99}, {250, 250}, {300, 419}}))},
		{"undo_count_files", UndoCount(hostile, FileCondition(dataFiles), nil)},
		{"undo_delete_files", UndoDelete(hostile, FileCondition(dataFiles))},
		{"undo_count_keys", UndoCount(hostile, KeyCondition(keys, keysFile.File, 3), nil)},
		{"undo_delete_keys", UndoDelete(hostile, KeyCondition(keys, keysFile.File, 3))},
		{"undo_delete_key", UndoDelete(orders, KeyCondition([]string{"id"}, keysFile.File, 12))},
		{"keys_of_batch", KeysOfBatch(keysFile.File, 3, 2)},
	} {
		golden(t, c.file, c.got)
	}
}

// TestMergeInsertsOnlyTheTablesColumns: the MERGE names the table's columns, so no helper
// column of its source (the batch number, the rank) can reach the table under schema
// evolution.
func TestMergeInsertsOnlyTheTablesColumns(t *testing.T) {
	m := Merge(orders, staging, MergeSpec{Key: []string{"id"}, Columns: []string{"id", "amount"}})
	_, ins, _ := strings.Cut(m, "WHEN NOT MATCHED")
	if strings.Contains(ins, "*") || strings.Contains(ins, "__zbrecover") || !strings.Contains(ins, "INSERT (`id`, `amount`) VALUES (zb_source.`id`, zb_source.`amount`)") {
		t.Errorf("the MERGE's insert: %s", ins)
	}
}

// TestKeySourceChunksItsGlob: the names of one folder are read with one glob of at most 1,000.
func TestKeySourceChunksItsGlob(t *testing.T) {
	many := KeySource{Label: "g", Folder: "file:///f", Exprs: []string{"`id`"}}
	for i := 0; i < 2500; i++ {
		many.Files = append(many.Files, "x.parquet")
	}
	if n := strings.Count(many.SQL(), "read_files("); n != 3 {
		t.Errorf("2,500 names in %d globs, want 3", n)
	}
}

// TestForcedCopyIntoIsScopedAndRecognised: a forced load names its files (never a whole
// folder) and says so, so that a re-run never mistakes it for an idempotent one.
func TestForcedCopyIntoIsScopedAndRecognised(t *testing.T) {
	f := CopyIntoForced(orders, "s3://lake/orders/_zerobus/table_rejected_parquets/", "", []string{"a.parquet"}, false)
	if !Forced(f) || !strings.Contains(f, "FILES = ('a.parquet')") || Forced(CopyInto(orders, "s3://x/", "", []string{"a.parquet"}, false)) {
		t.Errorf("forced: %s", f)
	}
}
