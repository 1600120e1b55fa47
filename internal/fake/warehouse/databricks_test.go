package warehouse_test

// Tests of the behaviours the local warehouse takes from Databricks, Delta and Spark (see the
// package documentation for the sources), and of the switches for the unknown ones, each
// exercised both ways.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	dbsqlerr "github.com/databricks/databricks-sql-go/errors"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// historyRows returns DESCRIBE HISTORY as one map of column name → text per version, newest
// first, so tests can look columns up by name.
func historyRows(t *testing.T, db *sql.DB, table string) []map[string]string {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), "DESCRIBE HISTORY "+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []map[string]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for i, c := range cols {
			if vals[i] != nil {
				m[c] = fmt.Sprint(vals[i])
			}
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// jsonMap parses a map column (the driver returns maps as JSON text).
func jsonMap(t *testing.T, s string) map[string]string {
	t.Helper()
	m := map[string]string{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("map value %q: %v", s, err)
	}
	return m
}

// TestCopyIntoReadsOnlyTheFromFolder: Spark reads the files of the directory itself; files in
// a plain subfolder are read only with recursiveFileLookup.
func TestCopyIntoReadsOnlyTheFromFolder(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	dir := filepath.Join(t.TempDir(), "fallback")
	writeParquet(t, filepath.Join(dir, "2024-05-01", "f1.parquet"), eventsSchema, eventRows(1, 3))
	writeParquet(t, filepath.Join(dir, "2024-05-02", "f2.parquet"), eventsSchema, eventRows(4, 2))
	stmt := "COPY INTO events FROM '" + dir + "' FILEFORMAT = PARQUET"
	got, err := copyInto(t, db, stmt)
	if err != nil || got != (copyCounts{}) {
		t.Fatalf("COPY INTO on a folder whose files sit in subfolders = %+v, %v; want 0/0/0", got, err)
	}
	if n := count(t, db, "events"); n != 0 {
		t.Fatalf("table has %d rows, want 0", n)
	}
	got, err = copyInto(t, db, stmt+" FORMAT_OPTIONS ('recursiveFileLookup' = 'true')")
	if err != nil || got.inserted != 5 {
		t.Fatalf("with recursiveFileLookup = %+v, %v; want 5 rows", got, err)
	}
	// Files next to the subfolders are read without recursiveFileLookup.
	writeParquet(t, filepath.Join(dir, "f3.parquet"), eventsSchema, eventRows(6, 1))
	got, err = copyInto(t, db, stmt)
	if err != nil || got.inserted != 1 {
		t.Fatalf("top-level file = %+v, %v; want 1 row", got, err)
	}
}

// TestCopyIntoInfersPartitionFolders: folders named k=v are partition columns, so files there
// carry a column the table must have.
func TestCopyIntoInfersPartitionFolders(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, eventsDDL, "CREATE TABLE main.default.by_day (id BIGINT NOT NULL, name STRING, day INT)")
	dir := filepath.Join(t.TempDir(), "fallback")
	writeParquet(t, filepath.Join(dir, "day=1", "f1.parquet"), eventsSchema, eventRows(1, 3))
	writeParquet(t, filepath.Join(dir, "day=2", "f2.parquet"), eventsSchema, eventRows(4, 2))
	_, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	msg := execError(t, err, "42KDG", "COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE")
	if !strings.Contains(msg, "|-- day: integer") {
		t.Errorf("the data schema does not show the partition column: %s", msg)
	}
	got, err := copyInto(t, db, "COPY INTO by_day FROM (SELECT id, name, day FROM '"+dir+"') FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 5 {
		t.Fatalf("load with the partition column = %+v, %v", got, err)
	}
	rows, err := db.QueryContext(ctx(t), "SELECT day FROM by_day ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var ds []string
	for rows.Next() {
		var d int32
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, fmt.Sprint(d))
	}
	rows.Close()
	if days := strings.Join(ds, ","); days != "1,1,1,2,2" {
		t.Errorf("days = %s, want 1,1,1,2,2", days)
	}
	// A plain folder next to partition folders is a conflicting directory structure.
	writeParquet(t, filepath.Join(dir, "other", "f3.parquet"), eventsSchema, eventRows(6, 1))
	_, err = copyInto(t, db, "COPY INTO by_day FROM (SELECT id, name, day FROM '"+dir+"') FILEFORMAT = PARQUET")
	execError(t, err, "KD009", "CONFLICTING_DIRECTORY_STRUCTURES")
}

// TestCopyIntoSchemaFromFirstFile: a multi-file source takes the first file's schema and
// drops columns only later files have; FORMAT_OPTIONS mergeSchema merges the files' schemas
// but does not evolve the table.
func TestCopyIntoSchemaFromFirstFile(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id BIGINT, name STRING)")
	dir := filepath.Join(t.TempDir(), "src")
	narrow := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	wide := arrow.NewSchema(append(narrow.Fields(), arrow.Field{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	writeParquet(t, filepath.Join(dir, "a.parquet"), narrow, `[{"id":1,"name":"ada"}]`)
	writeParquet(t, filepath.Join(dir, "b.parquet"), wide, `[{"id":2,"name":"bob","region":"eu"}]`)

	// FORMAT_OPTIONS mergeSchema: the merged source has region, the table does not, and the
	// table is not evolved.
	_, err := copyInto(t, db, "COPY INTO t FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('a.parquet', 'b.parquet') FORMAT_OPTIONS ('mergeSchema' = 'true')")
	execError(t, err, "42KDG", "COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE")
	rows, err := db.QueryContext(ctx(t), "DESCRIBE t")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if n != 2 {
		t.Errorf("DESCRIBE t has %d columns after FORMAT_OPTIONS mergeSchema, want 2 (only COPY_OPTIONS evolves)", n)
	}

	// Without it the first file's schema wins: b.parquet's region is dropped silently.
	got, err := copyInto(t, db, "COPY INTO t FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('a.parquet', 'b.parquet')")
	if err != nil || got.inserted != 2 {
		t.Fatalf("two schemas in one statement = %+v, %v; want 2 rows, no error", got, err)
	}
	var name string
	if err := db.QueryRowContext(ctx(t), "SELECT name FROM t WHERE id = 2").Scan(&name); err != nil || name != "bob" {
		t.Errorf("row of the second file: %q, %v", name, err)
	}

	// The other order: the wide file first makes region part of the source, which the table
	// lacks.
	mustExec(t, db, "CREATE TABLE t2 (id BIGINT, name STRING)")
	_, err = copyInto(t, db, "COPY INTO t2 FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('b.parquet', 'a.parquet')")
	execError(t, err, "42KDG", "COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE")
}

// TestMergeUnresolvedSourceColumn: INSERT * with a target column the source lacks.
func TestMergeUnresolvedSourceColumn(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id BIGINT, name STRING, region STRING)")
	_, err := db.ExecContext(ctx(t), "MERGE INTO t USING (SELECT 1 AS id, 'a' AS name) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *")
	execError(t, err, "42601", "DELTA_MERGE_UNRESOLVED_EXPRESSION")
}

// TestHistoryMetricsAsDatabricksWritesThem: numFiles and numOutputBytes count data files
// written, numSkippedCorruptFiles is present, COPY INTO's parameters, MERGE's numSourceRows,
// userName and engineInfo.
func TestHistoryMetricsAsDatabricksWritesThem(t *testing.T) {
	srv := warehouse.New(t, warehouse.Options{UserName: "operator@example.com"})
	dir := loadFixture(t, srv) // two source files, 5 rows
	db := open(t, srv)
	if _, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "MERGE INTO events USING (SELECT * FROM events WHERE id <= 2 UNION ALL SELECT 10 AS id, name, amount, payload, ts FROM events WHERE id = 1) s "+
		"ON events.id = s.id WHEN NOT MATCHED THEN INSERT *")
	h := historyRows(t, db, "events")
	if len(h) != 3 || h[1]["operation"] != "COPY INTO" || h[0]["operation"] != "MERGE" {
		t.Fatalf("history = %v", h)
	}
	cp := jsonMap(t, h[1]["operationMetrics"])
	if cp["numFiles"] != "1" || cp["numOutputRows"] != "5" || cp["numSkippedCorruptFiles"] != "0" || cp["numOutputBytes"] == "0" || cp["numOutputBytes"] == "" {
		t.Errorf("COPY INTO metrics = %v; want numFiles 1 (data files written, not the 2 source files), numSkippedCorruptFiles 0, numOutputBytes > 0", cp)
	}
	if p := jsonMap(t, h[1]["operationParameters"]); p["statsOnLoad"] != "false" {
		t.Errorf("COPY INTO parameters = %v", p)
	}
	mg := jsonMap(t, h[0]["operationMetrics"])
	if mg["numSourceRows"] != "3" || mg["numTargetRowsInserted"] != "1" || mg["numTargetRowsUpdated"] != "0" {
		t.Errorf("MERGE metrics = %v", mg)
	}
	if h[1]["userName"] != "operator@example.com" || !strings.HasPrefix(h[1]["engineInfo"], "Databricks-Runtime/") {
		t.Errorf("userName %q, engineInfo %q", h[1]["userName"], h[1]["engineInfo"])
	}
	// The data file the commit added is real Parquet in the table's root.
	loc, _ := srv.Engine().Location("events")
	files, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(loc, "file://"), "part-*.parquet"))
	if len(files) != 2 {
		t.Fatalf("data files = %v, want one for the COPY INTO and one for the MERGE insert", files)
	}
}

// TestCheckConstraints: CHECK constraints are enforced on every write, checked against
// existing rows when added, and refused where they cannot be enforced.
func TestCheckConstraints(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv) // ids 1..5
	db := open(t, srv)
	mustExec(t, db, "INSERT INTO events (id, name) VALUES (0, 'zero')")
	_, err := db.ExecContext(ctx(t), "ALTER TABLE events ADD CONSTRAINT positive CHECK (id > 0)")
	execError(t, err, "23512", "DELTA_NEW_CHECK_CONSTRAINT_VIOLATION")
	mustExec(t, db, "DELETE FROM events WHERE id = 0", "ALTER TABLE events ADD CONSTRAINT small CHECK (id < 5 AND name IS NOT NULL)")
	_, err = copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	msg := execError(t, err, "23001", "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES")
	if !strings.Contains(msg, "small") || !strings.Contains(msg, " - id : 5") {
		t.Errorf("violation message: %s", msg)
	}
	_, err = copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET VALIDATE ALL")
	execError(t, err, "23001", "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES")
	if n := count(t, db, "events"); n != 0 {
		t.Errorf("a refused COPY INTO left %d rows", n)
	}
	_, err = db.ExecContext(ctx(t), "INSERT INTO events (id, name) VALUES (7, 'x')")
	execError(t, err, "23001", "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES")
	mustExec(t, db, "INSERT INTO events (id, name) VALUES (1, 'ok')")
	_, err = db.ExecContext(ctx(t), "UPDATE events SET id = 9")
	execError(t, err, "23001", "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES")
	var props string
	rows, err := db.QueryContext(ctx(t), "SHOW TBLPROPERTIES events")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		if k == "delta.constraints.small" {
			props = v
		}
	}
	rows.Close()
	if props != "id < 5 AND name IS NOT NULL" {
		t.Errorf("delta.constraints.small = %q", props)
	}
	mustExec(t, db, "ALTER TABLE events DROP CONSTRAINT small", "INSERT INTO events (id, name) VALUES (7, 'x')")
	// A CHECK in CREATE TABLE would go unenforced: refused.
	_, err = db.ExecContext(ctx(t), "CREATE TABLE c (id INT, CONSTRAINT pos CHECK (id > 0))")
	execError(t, err, "0A000", "UNSUPPORTED_FEATURE")
}

// TestColumnMapping: a table with delta.columnMapping.mode = name renames and drops columns;
// its log carries physical names and its data files are written with them.
func TestColumnMapping(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE cm (id BIGINT NOT NULL, a STRING, gone INT, s STRUCT<x: INT>) TBLPROPERTIES ('delta.columnMapping.mode' = 'name')",
		"INSERT INTO cm VALUES (1, 'one', 7, named_struct('x', 1))",
		"ALTER TABLE cm RENAME COLUMN a TO b",
		"ALTER TABLE cm DROP COLUMN gone",
		"INSERT INTO cm VALUES (2, 'two', named_struct('x', 2))")
	var b string
	if err := db.QueryRowContext(ctx(t), "SELECT b FROM cm WHERE id = 1").Scan(&b); err != nil || b != "one" {
		t.Fatalf("renamed column: %q, %v", b, err)
	}
	if _, err := db.QueryContext(ctx(t), "SELECT gone FROM cm"); err == nil {
		t.Error("a dropped column can still be read")
	}
	loc, _ := srv.Engine().Location("cm")
	root := strings.TrimPrefix(loc, "file://")
	schema := latestSchema(t, root)
	phys := map[string]string{}
	for _, f := range schema.Fields {
		phys[f.Name] = f.Metadata["delta.columnMapping.physicalName"].(string)
	}
	if len(schema.Fields) != 3 || !strings.HasPrefix(phys["b"], "col-") || !strings.HasPrefix(phys["id"], "col-") || phys["a"] != "" {
		t.Fatalf("log schema physical names = %v", phys)
	}
	// The data file written before the rename names the column by its physical name.
	files, _ := filepath.Glob(filepath.Join(root, "part-*.parquet"))
	if len(files) != 2 {
		t.Fatalf("data files = %v", files)
	}
	names := map[string]bool{}
	for _, f := range files {
		for _, n := range parquetColumns(t, f) {
			names[n] = true
		}
	}
	if !names[phys["b"]] || names["a"] || names["b"] {
		t.Errorf("data file columns = %v, want the physical name %s of b", names, phys["b"])
	}
	// Without column mapping, rename is refused, as Delta does.
	mustExec(t, db, "CREATE TABLE plain (a STRING)")
	_, err := db.ExecContext(ctx(t), "ALTER TABLE plain RENAME COLUMN a TO b")
	execError(t, err, "0AKDC", "DELTA_UNSUPPORTED_RENAME_COLUMN")
}

type logSchema struct {
	Fields []struct {
		Name     string         `json:"name"`
		Metadata map[string]any `json:"metadata"`
	} `json:"fields"`
}

// latestSchema reads the newest metaData schemaString of the Delta log under root.
func latestSchema(t *testing.T, root string) logSchema {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, "_delta_log", "*.json"))
	var s logSchema
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			var a struct {
				MetaData *struct {
					SchemaString string `json:"schemaString"`
				} `json:"metaData"`
			}
			if json.Unmarshal([]byte(line), &a) == nil && a.MetaData != nil {
				s = logSchema{}
				if err := json.Unmarshal([]byte(a.MetaData.SchemaString), &s); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return s
}

func parquetColumns(t *testing.T, path string) []string {
	t.Helper()
	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	root := r.MetaData().Schema.Root()
	out := make([]string, root.NumFields())
	for i := range out {
		out[i] = root.Field(i).Name()
	}
	return out
}

// TestUnknownPathAccess: a path read inside a managed table's storage, each way.
func TestUnknownPathAccess(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	dir := fallbackDir(t, srv, "main.default.events")
	writeParquet(t, filepath.Join(dir, "f1.parquet"), eventsSchema, eventRows(1, 2))
	load := "COPY INTO events FROM '" + dir + "' FILEFORMAT = PARQUET"

	// Default: refused, "[CLASS] … SQLSTATE: 22023".
	_, err := copyInto(t, db, load)
	execError(t, err, "22023", "INVALID_PARAMETER_VALUE.LOCATION_OVERLAP")
	_, err = db.QueryContext(ctx(t), "SELECT * FROM parquet.`"+dir+"` LIMIT 10")
	execError(t, err, "22023", "INVALID_PARAMETER_VALUE.LOCATION_OVERLAP")

	// Without the bracket: "INVALID_PARAMETER_VALUE.LOCATION_OVERLAP: Input path url '…' …".
	srv.SetUnknowns(warehouse.Unknowns{PathAccess: warehouse.OverlapPlain})
	_, err = db.QueryContext(ctx(t), "LIST '"+dir+"'")
	ee := dbError(t, err)
	if !strings.Contains(err.Error(), "INVALID_PARAMETER_VALUE.LOCATION_OVERLAP: Input path url '") ||
		strings.Contains(err.Error(), "[INVALID") || !strings.Contains(err.Error(), "within 'ListFiles' call.") || ee.SqlState() != "22023" {
		t.Errorf("plain form: %v (SQLSTATE %q)", err, ee.SqlState())
	}

	// With an empty SQLSTATE.
	srv.SetUnknowns(warehouse.Unknowns{PathAccess: warehouse.OverlapNoSQLState})
	_, err = copyInto(t, db, load)
	if ee := dbError(t, err); ee.SqlState() != "" || !strings.Contains(err.Error(), "LOCATION_OVERLAP") || strings.Contains(err.Error(), "SQLSTATE") {
		t.Errorf("no-SQLSTATE form: %v (SQLSTATE %q)", err, ee.SqlState())
	}

	// Allowed: the files load.
	srv.SetUnknowns(warehouse.Unknowns{PathAccess: warehouse.OverlapAllowed})
	if got, err := copyInto(t, db, load); err != nil || got.inserted != 2 {
		t.Errorf("allowed: %+v %v", got, err)
	}
}

func dbError(t *testing.T, err error) dbsqlerr.DBExecutionError {
	t.Helper()
	var ee dbsqlerr.DBExecutionError
	if !errors.As(err, &ee) {
		t.Fatalf("error is not a DBExecutionError: %T %v", err, err)
	}
	return ee
}

// TestUnknownFilesPaths: FILES entries that are subpaths or absolute, each way.
func TestUnknownFilesPaths(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	dir := filepath.Join(t.TempDir(), "src")
	writeParquet(t, filepath.Join(dir, "sub", "a.parquet"), eventsSchema, eventRows(1, 2))
	writeParquet(t, filepath.Join(dir, "b.parquet"), eventsSchema, eventRows(3, 1))
	sub := "COPY INTO events FROM '" + dir + "' FILEFORMAT = PARQUET FILES = ('sub/a.parquet')"
	abs := "COPY INTO events FROM '" + dir + "' FILEFORMAT = PARQUET FILES = ('file://" + filepath.ToSlash(dir) + "/b.parquet')"

	srv.SetUnknowns(warehouse.Unknowns{RefuseFilesPaths: true})
	_, err := copyInto(t, db, sub)
	execError(t, err, "22023", "INVALID_PARAMETER_VALUE")
	_, err = copyInto(t, db, abs)
	execError(t, err, "22023", "INVALID_PARAMETER_VALUE")

	srv.SetUnknowns(warehouse.Unknowns{}) // default: accepted
	if got, err := copyInto(t, db, sub); err != nil || got.inserted != 2 {
		t.Errorf("subpath accepted: %+v %v", got, err)
	}
	if got, err := copyInto(t, db, abs); err != nil || got.inserted != 1 {
		t.Errorf("absolute URI accepted: %+v %v", got, err)
	}
}

// TestUnknownSQLState: errors with and without a SQLSTATE.
func TestUnknownSQLState(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	_, err := db.QueryContext(ctx(t), "SELECT * FROM missing")
	execError(t, err, "42P01", "TABLE_OR_VIEW_NOT_FOUND")
	srv.SetUnknowns(warehouse.Unknowns{NoSQLState: true})
	_, err = db.QueryContext(ctx(t), "SELECT * FROM missing")
	if ee := dbError(t, err); ee.SqlState() != "" || strings.Contains(err.Error(), "SQLSTATE") || !strings.Contains(err.Error(), "[TABLE_OR_VIEW_NOT_FOUND]") {
		t.Errorf("without SQLSTATE: %v (SQLSTATE %q)", err, ee.SqlState())
	}
	// Injected faults lose it too.
	srv.Inject(warehouse.Fault{Match: "SELECT 2", Error: &warehouse.SQLError{Class: "DELTA_CONCURRENT_APPEND", SQLState: "2D521", Message: "conflict"}})
	_, err = db.QueryContext(ctx(t), "SELECT 2")
	if ee := dbError(t, err); ee.SqlState() != "" {
		t.Errorf("injected fault SQLSTATE %q", ee.SqlState())
	}
}

// TestUnknownEmptyCopyCommit: a COPY INTO that loads nothing commits a version or not.
func TestUnknownEmptyCopyCommit(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	stmt := "COPY INTO events FROM '" + dir + "' FILEFORMAT = PARQUET"
	if _, err := copyInto(t, db, stmt); err != nil {
		t.Fatal(err)
	}
	before := len(historyRows(t, db, "events"))
	if got, err := copyInto(t, db, stmt); err != nil || got != (copyCounts{}) {
		t.Fatalf("re-run: %+v %v", got, err)
	}
	if n := len(historyRows(t, db, "events")); n != before {
		t.Errorf("an empty COPY INTO committed (%d versions, was %d)", n, before)
	}
	srv.SetUnknowns(warehouse.Unknowns{CommitEmptyCopy: true})
	if got, err := copyInto(t, db, stmt); err != nil || got != (copyCounts{}) {
		t.Fatalf("re-run: %+v %v", got, err)
	}
	h := historyRows(t, db, "events")
	if len(h) != before+1 || h[0]["operation"] != "COPY INTO" || jsonMap(t, h[0]["operationMetrics"])["numOutputRows"] != "0" {
		t.Errorf("with CommitEmptyCopy, newest version = %v", h[0])
	}
}

// TestUnknownMissingNestedMember: a struct member missing from the file is NULL or refused.
func TestUnknownMissingNestedMember(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE n (id BIGINT, s STRUCT<a: STRING, country: STRING>)")
	dir := filepath.Join(t.TempDir(), "src")
	writeParquet(t, filepath.Join(dir, "f.parquet"), arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Nullable: true, Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.BinaryTypes.String, Nullable: true})},
	}, nil), `[{"id":1,"s":{"a":"x"}}]`)
	load := "COPY INTO n FROM '" + dir + "' FILEFORMAT = PARQUET COPY_OPTIONS ('force' = 'true')"
	srv.SetUnknowns(warehouse.Unknowns{RefuseMissingNestedMember: true})
	_, err := copyInto(t, db, load)
	execError(t, err, "21S01", "DELTA_INSERT_COLUMN_ARITY_MISMATCH")
	srv.SetUnknowns(warehouse.Unknowns{})
	if got, err := copyInto(t, db, load); err != nil || got.inserted != 1 {
		t.Fatalf("default: %+v %v", got, err)
	}
	var country sql.NullString
	if err := db.QueryRowContext(ctx(t), "SELECT s.country FROM n").Scan(&country); err != nil || country.Valid {
		t.Errorf("s.country = %v, %v; want NULL", country, err)
	}
}

// TestZerobusWriterInterleavesWithCopyInto: Zerobus commits blind-append WRITE versions while
// other statements run; DESCRIBE HISTORY shows them around the COPY INTO.
func TestZerobusWriterInterleavesWithCopyInto(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	zb, err := srv.Zerobus("main.default.events", warehouse.ZerobusOptions{Rows: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zb.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	zb.Start(5 * time.Millisecond)
	waitFor(t, "a second Zerobus version", func() bool { return len(zb.Versions()) >= 2 })
	got, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 5 {
		t.Fatalf("COPY INTO while Zerobus writes: %+v %v", got, err)
	}
	copyVersion := statementsLike(srv, "COPY INTO")[0].Commits[0].Version
	waitFor(t, "a Zerobus version after the COPY INTO", func() bool {
		vs := zb.Versions()
		return vs[len(vs)-1] > copyVersion
	})
	if err := zb.Close(); err != nil {
		t.Fatal(err)
	}
	h := historyRows(t, db, "events")
	copyAt, writesBefore, writesAfter := -1, 0, 0
	for i := len(h) - 1; i >= 0; i-- { // oldest first
		switch h[i]["operation"] {
		case "COPY INTO":
			copyAt = i
		case "WRITE":
			if h[i]["engineInfo"] != "Zerobus" || h[i]["isBlindAppend"] != "true" || !strings.Contains(h[i]["userName"], "zerobus") {
				t.Errorf("Zerobus commit = %v", h[i])
			}
			if copyAt < 0 {
				writesBefore++
			} else {
				writesAfter++
			}
		}
	}
	if copyAt < 0 || writesBefore < 2 || writesAfter < 1 {
		t.Errorf("history: %d WRITE before the COPY INTO, %d after (want ≥ 2 and ≥ 1)", writesBefore, writesAfter)
	}
	if copyAt == 0 {
		t.Error("the COPY INTO is the newest version: Zerobus did not keep committing")
	}
	want := int64(5 + 2*len(zb.Versions()))
	if n := count(t, db, "events"); n != want {
		t.Errorf("table has %d rows, want %d", n, want)
	}
}

// TestVolumes: CREATE VOLUME makes /Volumes/c/s/v a folder COPY INTO reads from, outside
// managed storage.
func TestVolumes(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, eventsDDL, "CREATE VOLUME main.default.staging")
	local, err := srv.Engine().VolumeFile("/Volumes/main/default/staging/batch1")
	if err != nil {
		t.Fatal(err)
	}
	writeParquet(t, filepath.Join(local, "f1.parquet"), eventsSchema, eventRows(1, 3))
	got, err := copyInto(t, db, "COPY INTO events FROM '/Volumes/main/default/staging/batch1' FILEFORMAT = PARQUET FILES = ('f1.parquet')")
	if err != nil || got.inserted != 3 {
		t.Fatalf("COPY INTO from a volume: %+v %v", got, err)
	}
	_, err = copyInto(t, db, "COPY INTO events FROM '/Volumes/main/default/nope/x' FILEFORMAT = PARQUET")
	execError(t, err, "42704", "UC_VOLUME_NOT_FOUND")
	_, err = db.ExecContext(ctx(t), "CREATE VOLUME main.nope.v")
	execError(t, err, "42704", "SCHEMA_NOT_FOUND")
}
