package warehouse_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

func TestMergeByKey(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE main.default.events (id BIGINT NOT NULL, name STRING, amount DECIMAL(10,2))",
		"INSERT INTO events VALUES (1, 'one', 1.00), (2, 'two', 2.00), (3, 'three', 3.00)")
	dir := filepath.Join(t.TempDir(), "fallback")
	// The fallback file has its columns in another order, a duplicate of rows 2 and 3 (they
	// were also published) and two new rows.
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	writeParquet(t, filepath.Join(dir, "f1.parquet"), sch,
		`[{"id":2,"name":"two-again","amount":"2.00"},{"id":3,"name":"three-again","amount":"3.00"},`+
			`{"id":4,"name":"four","amount":"4.25"},{"id":5,"name":"five","amount":"5.75"}]`)

	merge := "MERGE INTO main.default.events AS t USING (SELECT * FROM parquet.`" + dir + "`) AS src " +
		"ON t.id = src.id WHEN NOT MATCHED THEN INSERT *"
	rows, err := db.QueryContext(ctx(t), merge)
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	if strings.Join(cols, ",") != "num_affected_rows,num_updated_rows,num_deleted_rows,num_inserted_rows" {
		t.Fatalf("MERGE columns = %v", cols)
	}
	var affected, updated, deleted, inserted int64
	rows.Next()
	if err := rows.Scan(&affected, &updated, &deleted, &inserted); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if affected != 2 || inserted != 2 || updated != 0 || deleted != 0 {
		t.Fatalf("MERGE = %d affected, %d updated, %d deleted, %d inserted; want 2/0/0/2", affected, updated, deleted, inserted)
	}
	// Idempotent by key: a second MERGE inserts nothing.
	res, err := db.ExecContext(ctx(t), merge)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 0 {
		t.Errorf("second MERGE affected %d rows", n)
	}
	if got := strings.Join(idList(t, db), ","); got != "1,2,3,4,5" {
		t.Errorf("ids = %s", got)
	}
	var name, amount string
	if err := db.QueryRowContext(ctx(t), "SELECT name, amount FROM events WHERE id = 5").Scan(&name, &amount); err != nil || name != "five" || amount != "5.75" {
		t.Errorf("row 5 = %q %q %v (INSERT * must match columns by name)", name, amount, err)
	}
	if err := db.QueryRowContext(ctx(t), "SELECT name FROM events WHERE id = 2").Scan(&name); err != nil || name != "two" {
		t.Errorf("row 2 = %q %v (matched rows must be left alone)", name, err)
	}
	h := describeHistory(t, db, "events")
	if h[0].operation != "MERGE" || h[0].metrics["numTargetRowsInserted"] != "0" || h[1].operation != "MERGE" || h[1].metrics["numTargetRowsInserted"] != "2" {
		t.Errorf("history = %s %v / %s %v", h[0].operation, h[0].metrics, h[1].operation, h[1].metrics)
	}

	// UPDATE SET * and read_files work too.
	rows, err = db.QueryContext(ctx(t), "MERGE INTO events USING (SELECT * FROM read_files('"+dir+"', format => 'parquet')) src "+
		"ON events.id = src.id WHEN MATCHED AND src.id = 2 THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
	if err != nil {
		t.Fatal(err)
	}
	rows.Next()
	if err := rows.Scan(&affected, &updated, &deleted, &inserted); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if updated != 1 || inserted != 0 {
		t.Errorf("MERGE with UPDATE SET *: updated %d inserted %d", updated, inserted)
	}
	if err := db.QueryRowContext(ctx(t), "SELECT name FROM events WHERE id = 2").Scan(&name); err != nil || name != "two-again" {
		t.Errorf("row 2 after UPDATE SET * = %q %v", name, err)
	}
}

func TestAlterTable(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id INT NOT NULL, name STRING NOT NULL)")
	dir := filepath.Join(t.TempDir(), "src")
	writeParquet(t, filepath.Join(dir, "a.parquet"), arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "extra", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil), `[{"id":1,"extra":"x"}]`)
	load := "COPY INTO t FROM '" + dir + "' FILEFORMAT = PARQUET"
	_, err := copyInto(t, db, load)
	execError(t, err, "42KDG", "COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE")
	mustExec(t, db, "ALTER TABLE t ADD COLUMNS (extra STRING)")
	_, err = copyInto(t, db, load)
	execError(t, err, "23502", "DELTA_MISSING_NOT_NULL_COLUMN_VALUE")
	mustExec(t, db, "ALTER TABLE t ALTER COLUMN name DROP NOT NULL")
	got, err := copyInto(t, db, load)
	if err != nil || got.inserted != 1 {
		t.Fatalf("load after ALTER: %+v %v", got, err)
	}
	d := describeJSON(t, db, "t")
	if len(d.Columns) != 3 || d.Columns[2].Name != "extra" || !d.Columns[1].Nullable || d.Columns[0].Nullable {
		t.Errorf("columns after ALTER = %+v", d.Columns)
	}

	// Type changes need type widening on the table, and only widen.
	_, err = db.ExecContext(ctx(t), "ALTER TABLE t ALTER COLUMN id TYPE BIGINT")
	execError(t, err, "0A000", "NOT_SUPPORTED_CHANGE_COLUMN")
	mustExec(t, db, "ALTER TABLE t SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')", "ALTER TABLE t ALTER COLUMN id TYPE BIGINT")
	_, err = db.ExecContext(ctx(t), "ALTER TABLE t ALTER COLUMN id TYPE INT")
	execError(t, err, "0A000", "NOT_SUPPORTED_CHANGE_COLUMN")
	if d := describeJSON(t, db, "t"); string(d.Columns[0].Type) != `{"name":"bigint"}` {
		t.Errorf("id type after widening = %s", d.Columns[0].Type)
	}
	// The table now wants bigint: the int32 file no longer loads without a CAST.
	writeParquet(t, filepath.Join(dir, "b.parquet"), arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil), `[{"id":2}]`)
	_, err = copyInto(t, db, load)
	execError(t, err, "22005", "DELTA_FAILED_TO_MERGE_FIELDS")
	got, err = copyInto(t, db, "COPY INTO t FROM (SELECT CAST(id AS BIGINT) AS id FROM '"+dir+"') FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 1 {
		t.Fatalf("load with CAST: %+v %v", got, err)
	}
	_, err = db.ExecContext(ctx(t), "ALTER TABLE t DROP COLUMN extra")
	execError(t, err, "0AKDC", "DELTA_UNSUPPORTED_DROP_COLUMN")
	if n := count(t, db, "t"); n != 2 {
		t.Errorf("rows = %d, want 2", n)
	}
}

func TestCatalogsAndSchemas(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	_, err := db.ExecContext(ctx(t), "CREATE TABLE cat.s.t (id INT)")
	execError(t, err, "42704", "NO_SUCH_CATALOG_EXCEPTION")
	mustExec(t, db, "CREATE CATALOG IF NOT EXISTS cat", "CREATE CATALOG IF NOT EXISTS cat")
	_, err = db.ExecContext(ctx(t), "CREATE TABLE cat.s.t (id INT)")
	execError(t, err, "42704", "SCHEMA_NOT_FOUND")
	mustExec(t, db, "CREATE SCHEMA `cat`.`s`", "CREATE TABLE `cat`.`s`.`T` (`Weird Name` INT, id BIGINT)",
		"INSERT INTO cat.s.t VALUES (1, 10), (2, 20)")
	_, err = db.ExecContext(ctx(t), "CREATE TABLE cat.s.t (id INT)")
	execError(t, err, "42P07", "TABLE_OR_VIEW_ALREADY_EXISTS")
	var n int64
	if err := db.QueryRowContext(ctx(t), "SELECT sum(`Weird Name`) FROM cat.s.T WHERE t.id > 5").Scan(&n); err != nil || n != 3 {
		t.Errorf("sum = %d %v", n, err)
	}
	// USE changes the session's namespace; a pinned connection keeps it.
	conn, err := db.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx(t), "USE cat.s"); err != nil {
		t.Fatal(err)
	}
	var cat, sch string
	if err := conn.QueryRowContext(ctx(t), "SELECT current_catalog(), current_schema()").Scan(&cat, &sch); err != nil || cat != "cat" || sch != "s" {
		t.Errorf("namespace = %s.%s %v", cat, sch, err)
	}
	if err := conn.QueryRowContext(ctx(t), "SELECT count(*) FROM t").Scan(&n); err != nil || n != 2 {
		t.Errorf("count in USEd schema = %d %v", n, err)
	}
	rows, err := conn.QueryContext(ctx(t), "SHOW TABLES")
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var db, name string
		var tmp bool
		if err := rows.Scan(&db, &name, &tmp); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, db+"."+name)
	}
	rows.Close()
	if strings.Join(tables, ",") != "s.t" {
		t.Errorf("SHOW TABLES = %v", tables)
	}
	_, err = db.ExecContext(ctx(t), "DROP SCHEMA cat.s")
	execError(t, err, "2BP01", "SCHEMA_NOT_EMPTY")
	mustExec(t, db, "DROP TABLE cat.s.t", "DROP TABLE IF EXISTS cat.s.t", "DROP SCHEMA cat.s")
	_, err = db.QueryContext(ctx(t), "SELECT * FROM cat.s.t")
	execError(t, err, "42P01", "TABLE_OR_VIEW_NOT_FOUND")
}

func TestDMLAndInspection(t *testing.T) {
	srv := warehouse.New(t, allowManagedPaths)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id INT, v STRING) PARTITIONED BY (id) TBLPROPERTIES ('owner.team' = 'ingest')",
		"INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	res, err := db.ExecContext(ctx(t), "UPDATE t SET v = upper(v) WHERE id >= 2")
	if n, _ := res.RowsAffected(); err != nil || n != 2 {
		t.Fatalf("UPDATE: %d %v", n, err)
	}
	res, err = db.ExecContext(ctx(t), "DELETE FROM t WHERE t.id = 1")
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("DELETE: %d %v", n, err)
	}
	var vs string
	if err := db.QueryRowContext(ctx(t), "SELECT string_agg(v, ',' ORDER BY id) FROM t").Scan(&vs); err != nil || vs != "B,C" {
		t.Errorf("values = %q %v", vs, err)
	}
	mustExec(t, db, "INSERT OVERWRITE t VALUES (9, 'z')")
	if n := count(t, db, "t"); n != 1 {
		t.Errorf("rows after INSERT OVERWRITE = %d", n)
	}
	mustExec(t, db, "TRUNCATE TABLE t")
	if n := count(t, db, "t"); n != 0 {
		t.Errorf("rows after TRUNCATE = %d", n)
	}
	var ops []string
	for _, h := range describeHistory(t, db, "t") {
		ops = append(ops, h.operation)
	}
	if strings.Join(ops, ",") != "TRUNCATE,WRITE,DELETE,UPDATE,WRITE,CREATE TABLE" {
		t.Errorf("history = %v", ops)
	}

	// DESCRIBE DETAIL, SHOW TBLPROPERTIES and LIST.
	rows, err := db.QueryContext(ctx(t), "DESCRIBE DETAIL t")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	rows.Close()
	if len(cols) < 5 || cols[0] != "format" || cols[4] != "location" {
		t.Errorf("DESCRIBE DETAIL columns = %v", cols)
	}
	var key, val string
	if err := db.QueryRowContext(ctx(t), "SHOW TBLPROPERTIES t").Scan(&key, &val); err != nil || key != "owner.team" || val != "ingest" {
		t.Errorf("SHOW TBLPROPERTIES = %s=%s %v", key, val, err)
	}
	loc, _ := srv.Engine().Location("t")
	rows, err = db.QueryContext(ctx(t), "LIST '"+loc+"'")
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for rows.Next() {
		var p, n string
		var size, mtime int64
		if err := rows.Scan(&p, &n, &size, &mtime); err != nil {
			t.Fatal(err)
		}
		listed = append(listed, n)
	}
	rows.Close()
	logs, data := 0, 0
	for _, n := range listed {
		switch {
		case strings.HasSuffix(n, ".json"):
			logs++
		case strings.HasPrefix(n, "part-") && strings.HasSuffix(n, ".parquet"):
			data++
		}
	}
	// The Delta log (hidden folder included) and the data files of the INSERT, the UPDATE
	// and DELETE rewrites and the INSERT OVERWRITE: removed files stay until a VACUUM.
	if logs != 6 || data != 4 || len(listed) != 10 || listed[0] != "00000000000000000000.json" {
		t.Errorf("LIST of the table root = %v (want the 6 log files and 4 data files)", listed)
	}
}
