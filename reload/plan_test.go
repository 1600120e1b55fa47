package reload

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fallback"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

var orders = databricks.TableName{Catalog: "main", Schema: "sales", Table: "orders"}

func table(s sd.Schema) *sd.Table { return &sd.Table{Source: sd.SourceDelta, Schema: s} }

// report builds an inspect report of files in groups: key → group.
func report(groups map[string]sd.Schema, files [][2]string) *inspect.Report {
	rep := &inspect.Report{Root: "s3://lake/orders", Prefix: fallback.Prefix}
	for id, s := range groups {
		rep.Groups = append(rep.Groups, inspect.Group{SchemaID: id, Schema: s})
	}
	// Report order of groups is by id here, for stable tests.
	for i := range rep.Groups {
		for j := i + 1; j < len(rep.Groups); j++ {
			if rep.Groups[j].SchemaID < rep.Groups[i].SchemaID {
				rep.Groups[i], rep.Groups[j] = rep.Groups[j], rep.Groups[i]
			}
		}
	}
	for _, f := range files {
		rep.Files = append(rep.Files, inspect.File{Key: f[0], SchemaID: f[1], Rows: 2, Size: 100})
	}
	return rep
}

func dir(t *testing.T, raw string) storage.Location {
	t.Helper()
	loc, err := storage.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return loc.Join(fallback.Prefix)
}

func TestPlanOneGroupAndFolderPerStatement(t *testing.T) {
	cur := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.LongType)
	old := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.IntegerType)
	var files [][2]string
	for i := 0; i < 25; i++ {
		g := "aaa"
		if i%2 == 1 {
			g = "bbb"
		}
		files = append(files, [2]string{fmt.Sprintf("2026/01/%02d/f%03d.parquet", 1+i%3, i), g})
	}
	files = append(files, [2]string{"2026/01/01/bad.parquet", ""})
	rep := report(map[string]sd.Schema{"aaa": old, "bbb": cur}, files)
	rep.Files[len(rep.Files)-1].Error = "not a Parquet file"
	p, err := NewPlan(rep, table(cur), orders, dir(t, "abfss://lake@acct.dfs.core.windows.net/orders?sv=1&sig=c2lnbmF0dXJl"), PlanOptions{BatchFiles: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Unreadable) != 1 || p.Unreadable[0].Key != "2026/01/01/bad.parquet" {
		t.Errorf("unreadable %v", p.Unreadable)
	}
	want := 0
	seen := map[string]bool{}
	for _, b := range p.Batches {
		if len(b.Files) > 3 {
			t.Errorf("batch %d has %d files", b.N, len(b.Files))
		}
		for _, f := range b.Files {
			if f.SchemaID != b.Group || !strings.HasPrefix(f.Key, b.Folder) || strings.Contains(strings.TrimPrefix(f.Key, b.Folder), "/") {
				t.Errorf("batch %d (group %s, folder %s) holds %s of group %s", b.N, b.Group, b.Folder, f.Key, f.SchemaID)
			}
			if seen[f.Key] {
				t.Errorf("%s planned twice", f.Key)
			}
			seen[f.Key] = true
			if !strings.Contains(b.SQL, sd.QuoteString(strings.TrimPrefix(f.Key, b.Folder))) {
				t.Errorf("batch %d SQL does not name %s", b.N, f.Key)
			}
		}
		if !strings.Contains(b.SQL, "FROM 'abfss://lake@acct.dfs.core.windows.net/orders/_zerobus/table_rejected_parquets/"+b.Folder+"'") || strings.Contains(b.SQL, "sig") {
			t.Errorf("batch %d source: %s", b.N, b.SQL)
		}
		if b.Group == "aaa" && !strings.Contains(b.SQL, "CAST(`qty` AS BIGINT) AS `qty`") {
			t.Errorf("old group without the cast: %s", b.SQL)
		}
		if b.Group == "bbb" && strings.Contains(b.SQL, "SELECT") {
			t.Errorf("matching group through a projection: %s", b.SQL)
		}
		if !strings.Contains(b.ValidateSQL, "VALIDATE ALL") || b.ExpectedRows != int64(2*len(b.Files)) {
			t.Errorf("batch %d: validate %s, expected %d", b.N, b.ValidateSQL, b.ExpectedRows)
		}
	}
	// 13 files of aaa over 3 folders (5, 4, 4) and 12 of bbb (4, 4, 4), 3 per statement.
	want = 2 + 2 + 2 + 2 + 2 + 2
	if len(p.Batches) != want || len(seen) != 25 {
		t.Errorf("%d batches for %d files, want %d for 25", len(p.Batches), len(seen), want)
	}
}

func TestPlanBlocksAndRenames(t *testing.T) {
	cur := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer_key", sd.StringType)
	old := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer_id", sd.StringType)
	rep := report(map[string]sd.Schema{"aaa": old}, [][2]string{{"a.parquet", "aaa"}})
	tw := table(cur)
	tw.Source = sd.SourceWarehouse
	blocked, err := NewPlan(rep, tw, orders, dir(t, "s3://lake/orders"), PlanOptions{})
	if !errors.Is(err, ErrBlocked) {
		t.Fatalf("a guessed rename loaded without confirmation: %v", err)
	}
	// The error gives the exact flag that confirms the guess, and where a rename is proved.
	want := "the files' schema blocks the load: 1 schema group cannot be loaded into main.sales.orders as it is. The files hold columns the " +
		"table probably renamed (same type, alike names; the warehouse's DESCRIBE of the table cannot prove a rename): if so, run again " +
		"with --rename customer_id=customer_key (or with --from delta: under column mapping the table's Delta log proves a rename, as inspect shows)"
	if err.Error() != want || strings.Join(blocked.RenameGuesses(), " ") != "customer_id=customer_key" {
		t.Errorf("blocked by a guessed rename:\ngot  %v\nwant %s", err, want)
	}
	p, err := NewPlan(rep, table(cur), orders, dir(t, "s3://lake/orders"), PlanOptions{Renames: map[string]string{"customer_id": "customer_key"}})
	if err != nil || len(p.Batches) != 1 || !strings.Contains(p.Batches[0].SQL, "`customer_id` AS `customer_key`") {
		t.Fatalf("confirmed rename: %v %+v", err, p)
	}
	if _, err := NewPlan(rep, table(cur), orders, dir(t, "s3://lake/orders"), PlanOptions{Renames: map[string]string{"custmer_id": "customer_key"}}); err == nil {
		t.Errorf("a misspelt rename was accepted")
	}
	// No fallback files left (after cleanup): the same command plans nothing, without error.
	if p, err := NewPlan(report(nil, nil), table(cur), orders, dir(t, "s3://lake/orders"), PlanOptions{Renames: map[string]string{"customer_id": "customer_key"}}); err != nil || len(p.Batches) != 0 {
		t.Errorf("a rename with no fallback files: %v %+v", err, p)
	}
	// A column the table lacks blocks with the ALTER TABLE fix.
	extra := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer_key", sd.StringType).Col("gift", sd.BooleanType)
	rep = report(map[string]sd.Schema{"ccc": extra}, [][2]string{{"a.parquet", "ccc"}})
	p, err = NewPlan(rep, table(cur), orders, dir(t, "s3://lake/orders"), PlanOptions{})
	if !errors.Is(err, ErrBlocked) || len(p.Blocked) != 1 || len(p.Blocked[0].DDL) != 1 ||
		p.Blocked[0].DDL[0] != "ALTER TABLE `main`.`sales`.`orders` ADD COLUMNS (`gift` BOOLEAN)" {
		t.Errorf("blocked %v %+v", err, p)
	}
	if !strings.HasSuffix(err.Error(), "as it is; change the table (the suggested ALTER TABLE statements are listed), or confirm a rename with --rename OLD=NEW") {
		t.Errorf("blocked without a rename guess: %v", err)
	}
	// A guessed rename and a column the table lacks: both named, names needing quotes quoted.
	both := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer id", sd.StringType).Col("gift", sd.BooleanType)
	rep = report(map[string]sd.Schema{"ddd": both}, [][2]string{{"a.parquet", "ddd"}})
	_, err = NewPlan(rep, table(sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer key", sd.StringType)), orders, dir(t, "s3://lake/orders"), PlanOptions{})
	if !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), "run again with --rename '`customer id`=`customer key`'") ||
		!strings.HasSuffix(err.Error(), "; the other changes listed need the table changed first: run the suggested ALTER TABLE statements") {
		t.Errorf("a rename and a missing column: %v", err)
	}
}

// TestPlanLoadsARenameTheHistoryProves: the rule is inspect's. Files written before a RENAME
// COLUMN that kept the column's physical name (column mapping) load through `note` AS
// `remark` without --rename, as inspect reports; a rename the history does not prove still
// needs --rename.
func TestPlanLoadsARenameTheHistoryProves(t *testing.T) {
	v0 := sd.NewSchema().Col("id", sd.LongType, sd.Physical("col-a", 1)).Col("note", sd.StringType, sd.Physical("col-b", 2))
	v1 := sd.NewSchema().Col("id", sd.LongType, sd.Physical("col-a", 1)).Col("remark", sd.StringType, sd.Physical("col-b", 2))
	tbl := table(v1)
	tbl.History = []sd.SchemaVersion{{Version: 0, Operation: "CREATE TABLE", Schema: v0}, {Version: 1, Operation: "RENAME COLUMN", User: "bo", Schema: v1}}
	files := sd.NewSchema().Col("id", sd.LongType).Col("note", sd.StringType)
	rep := report(map[string]sd.Schema{"aaa": files}, [][2]string{{"a.parquet", "aaa"}})
	p, err := NewPlan(rep, tbl, orders, dir(t, "s3://lake/orders"), PlanOptions{})
	if err != nil || len(p.Batches) != 1 || !strings.Contains(p.Batches[0].SQL, "`note` AS `remark`") {
		t.Fatalf("a rename the history proves: %v %+v", err, p)
	}
	if g := rep.Groups[0]; g.Suggestion == nil || g.Suggestion.Select != p.Batches[0].Select {
		t.Errorf("inspect's projection %+v differs from reload's %q", g.Suggestion, p.Batches[0].Select)
	}
	tbl.History = nil
	if _, err := NewPlan(rep, tbl, orders, dir(t, "s3://lake/orders"), PlanOptions{}); !errors.Is(err, ErrBlocked) {
		t.Errorf("without the history the rename loaded unconfirmed: %v", err)
	}
	p, err = NewPlan(rep, tbl, orders, dir(t, "s3://lake/orders"), PlanOptions{Renames: map[string]string{"note": "REMARK"}})
	if err != nil || len(p.Batches) != 1 || !strings.Contains(p.Batches[0].SQL, "`note` AS `remark`") {
		t.Fatalf("a confirmed rename (the table column in another case): %v %+v", err, p)
	}
}

func TestPlanSkipsJournaledFiles(t *testing.T) {
	cur := sd.NewSchema().Col("id", sd.LongType, sd.NotNull)
	rep := report(map[string]sd.Schema{"aaa": cur}, [][2]string{{"a.parquet", "aaa"}, {"b.parquet", "aaa"}})
	p, err := NewPlan(rep, table(cur), orders, dir(t, "s3://lake/orders"), PlanOptions{Skip: map[string]string{"a.parquet": "run x"}})
	if err != nil || p.Files() != 1 || p.Batches[0].Files[0].Key != "b.parquet" || len(p.Skipped) != 1 {
		t.Errorf("plan %+v, %v", p, err)
	}
}
