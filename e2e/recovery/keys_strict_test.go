//go:build cgo

package recovery

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/sqlstmt"
)

// TestKeyStatementsNullKeys runs the key statements on the local warehouse through the
// driver, with keys that have a NULL column in the files and in the table: a NULL key matches
// nothing (not even the table's NULL-keyed rows, which a null-safe comparison would take for
// it), is counted apart per batch and in total, and a load by key inserts every NULL-keyed
// record instead of taking one for a duplicate. Standard SQL, so Databricks gives it the same
// meaning.
//
// Files (batch label: records as (id, customer)): "1": (1,c1) (2,c2) (3,NULL) (4,NULL);
// "2": (5,NULL) (6,NULL), NULL-keyed only; "3": (7,c7) (8,c8). The table: (1,c1) (2,c2)
// (3,NULL) (7,c7) (102,NULL).
func TestKeyStatementsNullKeys(t *testing.T) {
	root := filepath.Join(t.TempDir(), "orders")
	if _, err := deltatest.Write(root, deltatest.Table{Schema: e2etest.TableSchema, ID: "0b6c1c8e-0000-4000-8000-00000000e2e9",
		Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"a.parquet": `[{"id":1,"customer_id":"c1"},{"id":2,"customer_id":"c2"},{"id":3,"customer_id":null},{"id":4,"customer_id":null}]`,
		"b.parquet": `[{"id":5,"customer_id":null},{"id":6,"customer_id":null}]`,
		"c.parquet": `[{"id":7,"customer_id":"c7"},{"id":8,"customer_id":"c8"}]`,
	}
	dir := filepath.Join(root, filepath.FromSlash(fallback.Prefix))
	for name, rows := range files {
		data, err := pqgen.Bytes(e2etest.OldFiles, rows, pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := pqgen.WriteFile(filepath.Join(dir, name), data); err != nil {
			t.Fatal(err)
		}
	}
	ws := startWorkspace(t, workspace.Options{}, "main.sales.orders", root)
	ctx := context.Background()
	wh, err := databricks.OpenDSN(ctx, ws.Warehouse().DSN(), databricks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer wh.Close()
	exec := func(stmt string) {
		t.Helper()
		if _, err := wh.QueryAll(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	exec("INSERT INTO main.sales.orders VALUES (1, 'c1', 1.0), (2, 'c2', 1.0), (3, NULL, 1.0), (7, 'c7', 1.0), (102, NULL, 1.0)")
	table := databricks.TableName{Catalog: "main", Schema: "sales", Table: "orders"}
	folder := "file://" + filepath.ToSlash(dir) + "/"
	src := func(label, file string, exprs ...string) reload.KeySource {
		return reload.KeySource{Label: label, Folder: folder, Files: []string{file}, Exprs: exprs}
	}
	cust, id := "CAST(`customer_id` AS STRING)", "CAST(`id` AS BIGINT)"

	t.Run("reconcile", func(t *testing.T) {
		for _, c := range []struct {
			name  string
			keys  reload.Keys
			exprs []string
			total reload.LabelCounts
			// per label
			want map[string]reload.LabelCounts
			once int64
		}{
			{"one column", reload.Keys{"customer_key"}, []string{cust},
				reload.LabelCounts{Rows: 8, NullRows: 4, NullKeys: 1, Keys: 4, Missing: 1},
				map[string]reload.LabelCounts{"1": {Rows: 4, NullRows: 2, NullKeys: 1, Keys: 2}, "2": {Rows: 2, NullRows: 2, NullKeys: 1},
					"3": {Rows: 2, Keys: 2, Missing: 1}}, 3},
			// (NULL, 3) is in the file and in the table: still no match.
			{"composite", reload.Keys{"customer_key", "id"}, []string{cust, id},
				reload.LabelCounts{Rows: 8, NullRows: 4, NullKeys: 4, Keys: 4, Missing: 1},
				map[string]reload.LabelCounts{"1": {Rows: 4, NullRows: 2, NullKeys: 2, Keys: 2}, "2": {Rows: 2, NullRows: 2, NullKeys: 2},
					"3": {Rows: 2, Keys: 2, Missing: 1}}, 3},
		} {
			t.Run(c.name, func(t *testing.T) {
				srcs := []reload.KeySource{src("1", "a.parquet", c.exprs...), src("2", "b.parquet", c.exprs...), src("3", "c.parquet", c.exprs...)}
				kc, per, err := reload.Reconcile(ctx, wh, table, c.keys, srcs)
				if err != nil {
					t.Fatal(err)
				}
				got := reload.LabelCounts{Rows: kc.Rows, NullRows: kc.NullRows, NullKeys: kc.NullKeys, Keys: kc.Keys, Missing: kc.Missing}
				if got != c.total || kc.RowsPerKey.Once != c.once || kc.Statements != 1 {
					t.Errorf("total %+v (once %d, %d statements), want %+v (once %d)", got, kc.RowsPerKey.Once, kc.Statements, c.total, c.once)
				}
				for label, want := range c.want {
					if per[label] != want {
						t.Errorf("batch %s: %+v, want %+v", label, per[label], want)
					}
				}
				if len(per) != 3 {
					t.Errorf("%d labels: %+v", len(per), per)
				}
			})
		}
	})

	t.Run("overlap", func(t *testing.T) {
		srcs := []reload.KeySource{src("g1", "a.parquet", cust), src("g1", "b.parquet", cust), src("g2", "c.parquet", cust)}
		ov, err := reload.Overlap(ctx, wh, table, reload.Keys{"customer_key"}, srcs)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]reload.KeyCounts{
			// A NULL-keyed record is a record a load by key inserts, never one in the table.
			"g1": {Group: "g1", Records: 6, Keys: 2, InTable: 2, New: 4, NullKeyRecords: 4, WouldDuplicate: 2},
			"g2": {Group: "g2", Records: 2, Keys: 2, InTable: 1, New: 1, WouldDuplicate: 1},
			"":   {Records: 8, Keys: 4, InTable: 3, New: 5, NullKeyRecords: 4, WouldDuplicate: 3},
		}
		got := map[string]reload.KeyCounts{"": ov.Total}
		for _, g := range ov.Groups {
			got[g.Group] = g
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("group %q: %+v, want %+v", k, got[k], w)
			}
		}
	})

	t.Run("merge", func(t *testing.T) {
		// A staging table of a load by key holding every record of the files: c1, c2 and c7
		// are in the table, c8 is new, and the four NULL-keyed records are all inserted.
		staging := databricks.TableName{Catalog: "main", Schema: "sales", Table: "orders__zbrecover_t"}
		exec(sqlstmt.StagingCreate(table, staging))
		var vals []string
		for i, c := range []string{"'c1'", "'c2'", "NULL", "NULL", "NULL", "NULL", "'c7'", "'c8'"} {
			vals = append(vals, fmt.Sprintf("(%d, %s, 2.0, 1)", i+1, c))
		}
		exec("INSERT INTO " + staging.String() + " VALUES " + strings.Join(vals, ", "))
		exec(sqlstmt.Merge(table, staging, sqlstmt.MergeSpec{Key: []string{"customer_key"}, Columns: []string{"id", "customer_key", "amount"}}))
		res, err := wh.QueryAll(ctx, "SELECT id FROM main.sales.orders WHERE amount = 2.0 ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(res.Rows); got != "[[3] [4] [5] [6] [8]]" {
			t.Errorf("the MERGE inserted ids %s, want the four NULL-keyed records and c8's: [[3] [4] [5] [6] [8]]", got)
		}
	})
}

// TestKeysSettleUnknownBatch: a run with one unknown batch (its files were loaded by hand
// before, so its statement inserted 0 rows). A plain verify fails that batch only: cleanup
// then deletes the batches proved by their own answer and keeps the unknown one, saying
// verify --key settles it. verify --key finds every key of its files in the table and every
// row counted, records it verified by key and passes; cleanup then deletes its files too.
func TestKeysSettleUnknownBatch(t *testing.T) {
	r, verified, unknown := reloadWithUnknownBatch(t)
	if code, out, errOut := runZbrecover(t, "verify", r.table); code != 4 || !strings.Contains(out, "batch is unknown") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runZbrecover(t, "cleanup", r.table, "--yes")
	left := r.fallbackFiles(t)
	if code == 4 || len(left) != len(unknown) || !strings.Contains(out+errOut, "verify --key COL settles it") {
		t.Fatalf("cleanup after a verify that failed the unknown batch: exit %d, %d files left, want the %d unknown\n%s%s", code, len(left), len(unknown), out, errOut)
	}
	for _, k := range unknown {
		if !left[k] {
			t.Errorf("unknown batch's %s was deleted", k)
		}
	}
	for _, k := range verified {
		if left[k] {
			t.Errorf("%s, proved by its answer, is still there", k)
		}
	}
	code, out, errOut = runZbrecover(t, "-o", "json", "verify", r.table, "--key", "id")
	var v struct {
		OK      bool `json:"ok"`
		Settled int  `json:"settled_by_key_batches"`
	}
	e2etest.DecodeInto(t, out, &v)
	if code != 0 || !v.OK || v.Settled != 1 {
		t.Fatalf("verify --key: exit %d, %+v\n%s%s", code, v, out, errOut)
	}
	byKey := 0
	for _, b := range runState(t).Batches {
		if b.Status == journal.BatchVerified && b.Evidence() == reload.EvidenceKey {
			byKey++
		}
	}
	if byKey != 1 {
		t.Errorf("%d batches verified by key in the journal, want 1", byKey)
	}
	if code, out, errOut := runZbrecover(t, "cleanup", r.table, "--yes"); code != 0 || len(r.fallbackFiles(t)) != 0 {
		t.Errorf("cleanup after verify --key: exit %d, %d files left\n%s%s", code, len(r.fallbackFiles(t)), out, errOut)
	}
	if rows, distinct, missing := r.check(t); rows != distinct || missing != 0 {
		t.Errorf("table: %d rows, %d distinct ids, %d missing", rows, distinct, missing)
	}
}
