package warehouse_test

import (
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

func columnsOf(t *testing.T, srv *warehouse.Server, table string) string {
	t.Helper()
	loc, err := srv.Engine().Location(table)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range latestSchema(t, strings.TrimPrefix(loc, "file://")).Fields {
		names = append(names, f.Name)
	}
	return strings.Join(names, ",")
}

const evolvingSource = "(SELECT * FROM VALUES (1, 'a', 'x'), (2, 'b', 'y') AS v(id, name, extra))"

// TestUnknownSchemaAutoMerge: by default MERGE … INSERT * ignores source columns the target
// lacks; with SchemaAutoMerge (a warehouse whose admin set autoMerge) it adds them to the
// target, in DESCRIBE and in the Delta log, and fills them for the inserted rows.
func TestUnknownSchemaAutoMerge(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id BIGINT, name STRING)",
		"MERGE INTO t USING "+evolvingSource+" s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
	if cols := columnsOf(t, srv, "main.default.t"); cols != "id,name" {
		t.Fatalf("default: columns after MERGE = %s, want id,name", cols)
	}
	if n := count(t, db, "t"); n != 2 {
		t.Errorf("rows = %d", n)
	}

	srv.SetUnknowns(warehouse.Unknowns{SchemaAutoMerge: true})
	mustExec(t, db, "MERGE INTO t USING (SELECT * FROM VALUES (2, 'B', 'yy'), (3, 'c', 'z') AS v(id, name, extra)) s ON t.id = s.id "+
		"WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
	if cols := columnsOf(t, srv, "main.default.t"); cols != "id,name,extra" {
		t.Fatalf("SchemaAutoMerge: columns = %s, want id,name,extra", cols)
	}
	if got := ids(t, db, "SELECT string_agg(id || ':' || name || ':' || coalesce(extra, '-'), ',' ORDER BY id) FROM t"); got != "1:a:-,2:B:yy,3:c:z" {
		t.Errorf("rows = %s", got)
	}
	if h := describeHistory(t, db, "t"); h[0].operation != "MERGE" || h[0].metrics["numTargetRowsInserted"] != "1" || h[0].metrics["numTargetRowsUpdated"] != "1" {
		t.Errorf("evolving MERGE commit = %s %v", h[0].operation, h[0].metrics)
	}
	// With evolution, a target column the source lacks is NULL in inserted rows.
	mustExec(t, db, "MERGE INTO t USING (SELECT * FROM VALUES (4) AS v(id)) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
	if got := ids(t, db, "SELECT coalesce(name, 'NULL') FROM t WHERE id = 4"); got != "NULL" {
		t.Errorf("name of the row the source had no name for = %s", got)
	}
}

// TestMergeWithSchemaEvolution: MERGE WITH SCHEMA EVOLUTION INTO and the session's
// autoMerge configuration evolve the target whatever SchemaAutoMerge says.
func TestMergeWithSchemaEvolution(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE a (id BIGINT, name STRING)", "CREATE TABLE b (id BIGINT, name STRING)",
		"MERGE WITH SCHEMA EVOLUTION INTO a USING "+evolvingSource+" s ON a.id = s.id WHEN NOT MATCHED THEN INSERT *")
	if cols := columnsOf(t, srv, "main.default.a"); cols != "id,name,extra" {
		t.Errorf("WITH SCHEMA EVOLUTION: columns = %s", cols)
	}
	c := pinned(t, db)
	connExec(t, c, "SET spark.databricks.delta.schema.autoMerge.enabled = true",
		"MERGE INTO b USING "+evolvingSource+" s ON b.id = s.id WHEN NOT MATCHED THEN INSERT *")
	if cols := columnsOf(t, srv, "main.default.b"); cols != "id,name,extra" {
		t.Errorf("session autoMerge: columns = %s", cols)
	}
}

// TestMergeInsertNamedColumns: INSERT (c1, …) VALUES (s.c1, …) names the columns, backquoted
// names with spaces included, and inserts nothing else.
func TestMergeInsertNamedColumns(t *testing.T) {
	srv := warehouse.New(t, warehouse.Options{Unknowns: warehouse.Unknowns{SchemaAutoMerge: true}})
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (`id` BIGINT, `the name` STRING, other STRING)",
		"MERGE INTO t USING (SELECT * FROM VALUES (1, 'a', 'x') AS v(`id`, `the name`, extra)) s ON t.`id` = s.`id` "+
			"WHEN NOT MATCHED THEN INSERT (`id`, `the name`) VALUES (s.`id`, s.`the name`)")
	if got := ids(t, db, "SELECT `id` || ':' || `the name` || ':' || coalesce(other, '-') FROM t"); got != "1:a:-" {
		t.Errorf("row = %s", got)
	}
	if cols := columnsOf(t, srv, "main.default.t"); cols != "id,the name,other" {
		t.Errorf("named INSERT evolved the schema: %s", cols)
	}
}
