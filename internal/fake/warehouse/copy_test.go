package warehouse_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	dbsqlerr "github.com/databricks/databricks-sql-go/errors"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
)

// copyCounts is COPY INTO's single result row.
type copyCounts struct{ affected, inserted, skippedCorrupt int64 }

// copyInto runs a COPY INTO statement with QueryContext and scans its result row.
func copyInto(t *testing.T, db *sql.DB, stmt string) (copyCounts, error) {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), stmt)
	if err != nil {
		return copyCounts{}, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if want := "num_affected_rows,num_inserted_rows,num_skipped_corrupt_files"; strings.Join(cols, ",") != want {
		t.Fatalf("COPY INTO columns = %v, want %s", cols, want)
	}
	var c copyCounts
	if !rows.Next() {
		t.Fatalf("COPY INTO returned no row: %v", rows.Err())
	}
	if err := rows.Scan(&c.affected, &c.inserted, &c.skippedCorrupt); err != nil {
		t.Fatal(err)
	}
	if rows.Next() {
		t.Fatal("COPY INTO returned more than one row")
	}
	return c, rows.Err()
}

func mustExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx(t), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func count(t *testing.T, db *sql.DB, table string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRowContext(ctx(t), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// execError asserts err is the driver's execution error with the given SQLSTATE and error
// class, and returns its text.
func execError(t *testing.T, err error, sqlState, class string) string {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %s (%s), got success", class, sqlState)
	}
	var ee dbsqlerr.DBExecutionError
	if !errors.As(err, &ee) {
		t.Fatalf("error is not a DBExecutionError: %T %v", err, err)
	}
	if ee.SqlState() != sqlState {
		t.Errorf("SqlState() = %q, want %q (%v)", ee.SqlState(), sqlState, err)
	}
	if !strings.Contains(err.Error(), "["+class) {
		t.Errorf("error %q does not carry class [%s", err, class)
	}
	if !strings.Contains(err.Error(), "SQLSTATE: "+sqlState) {
		t.Errorf("error %q does not end with SQLSTATE: %s", err, sqlState)
	}
	return err.Error()
}

// fallbackDir is where the tests put fallback files: <table root>/_zerobus/table_rejected_parquets.
func fallbackDir(t *testing.T, srv *warehouse.Server, table string) string {
	t.Helper()
	loc, err := srv.Engine().Location(table)
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimPrefix(loc, "file://")
	return filepath.Join(root, "_zerobus", "table_rejected_parquets")
}

// allowManagedPaths is the switch for tests that load fallback files where Zerobus parks them,
// under the table's managed storage: whether Databricks allows that is unknown.
var allowManagedPaths = warehouse.Options{Unknowns: warehouse.Unknowns{PathAccess: warehouse.OverlapAllowed}}

func TestCopyIntoLoadsFilesOnceAndReadsBack(t *testing.T) {
	srv := warehouse.New(t, allowManagedPaths)
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	dir := fallbackDir(t, srv, "main.default.events")
	writeParquet(t, filepath.Join(dir, "2024", "f1.parquet"), eventsSchema, eventRows(1, 3))
	writeParquet(t, filepath.Join(dir, "f2.parquet"), eventsSchema, eventRows(4, 2))
	// Hidden files and folders are not data (Spark's rule), wherever they are.
	writeParquet(t, filepath.Join(dir, "_tmp", "hidden.parquet"), eventsSchema, eventRows(100, 5))
	writeParquet(t, filepath.Join(dir, ".staging.parquet"), eventsSchema, eventRows(200, 5))
	writeParquet(t, filepath.Join(dir, "2024", "_SUCCESS"), eventsSchema, eventRows(300, 5))

	// The subfolder 2024 is read only with recursiveFileLookup (Spark's rule).
	stmt := "COPY INTO main.default.events FROM '" + dir + "' FILEFORMAT = PARQUET FORMAT_OPTIONS ('recursiveFileLookup' = 'true') COPY_OPTIONS ('mergeSchema' = 'false')"
	got, err := copyInto(t, db, stmt)
	if err != nil {
		t.Fatal(err)
	}
	if got != (copyCounts{5, 5, 0}) {
		t.Fatalf("first COPY INTO = %+v, want 5/5/0", got)
	}
	// A re-run skips the loaded files: 0/0/0, even after a file changed.
	writeParquet(t, filepath.Join(dir, "f2.parquet"), eventsSchema, eventRows(40, 7))
	got, err = copyInto(t, db, stmt)
	if err != nil {
		t.Fatal(err)
	}
	if got != (copyCounts{0, 0, 0}) {
		t.Fatalf("second COPY INTO = %+v, want 0/0/0", got)
	}

	// Read the table back: counts and values, nested and decimal included.
	if n := count(t, db, "main.default.events"); n != 5 {
		t.Fatalf("table has %d rows, want 5", n)
	}
	var (
		name    string
		amount  string
		payload string
		ts      time.Time
	)
	err = db.QueryRowContext(ctx(t), "SELECT name, amount, payload, ts FROM events WHERE id = 2").Scan(&name, &amount, &payload, &ts)
	if err != nil {
		t.Fatal(err)
	}
	if name != "user-2" || amount != "2.50" || payload != `{"kind":"click","tags":["a","b2"]}` || !ts.Equal(time.Date(2024, 5, 1, 12, 0, 2, 0, time.UTC)) {
		t.Errorf("row 2 = %q %q %q %v", name, amount, payload, ts)
	}
	var sum string
	if err := db.QueryRowContext(ctx(t), "SELECT CAST(sum(amount) AS STRING) FROM events").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum != "17.50" { // 1.50+2.50+3.50+4.50+5.50
		t.Errorf("sum(amount) = %s, want 17.50", sum)
	}
	var tags int64
	if err := db.QueryRowContext(ctx(t), "SELECT count(*) FROM events WHERE payload.kind = 'click' AND array_contains(payload.tags, 'b5')").Scan(&tags); err != nil {
		t.Fatal(err)
	}
	if tags != 1 {
		t.Errorf("rows with tag b5 = %d, want 1", tags)
	}
	loaded, err := srv.Engine().LoadedFiles("main.default.events")
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 2 || !strings.HasSuffix(loaded[0], "/2024/f1.parquet") || !strings.HasSuffix(loaded[1], "/f2.parquet") {
		t.Errorf("loaded files = %v", loaded)
	}

	// force reloads the files (and appends their rows again).
	got, err = copyInto(t, db, "COPY INTO main.default.events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('f2.parquet') COPY_OPTIONS ('force' = 'true')")
	if err != nil {
		t.Fatal(err)
	}
	if got.inserted != 7 || count(t, db, "main.default.events") != 12 {
		t.Errorf("force reload inserted %d, table has %d rows; want 7 and 12", got.inserted, count(t, db, "main.default.events"))
	}
}

func TestCopyIntoFilesAndPattern(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	dir := filepath.Join(t.TempDir(), "src")
	writeParquet(t, filepath.Join(dir, "a.parquet"), eventsSchema, eventRows(1, 1))
	writeParquet(t, filepath.Join(dir, "b.parquet"), eventsSchema, eventRows(2, 2))
	writeParquet(t, filepath.Join(dir, "sub", "c.parquet"), eventsSchema, eventRows(4, 3))
	writeParquet(t, filepath.Join(dir, "_hidden", "d.parquet"), eventsSchema, eventRows(7, 4))

	// FILES loads exactly the named files; it may name files under hidden folders, and names
	// that do not exist are ignored.
	got, err := copyInto(t, db, "COPY INTO events FROM 'file://"+dir+"/' FILEFORMAT = PARQUET "+
		"FILES = ('b.parquet', '_hidden/d.parquet', 'missing.parquet')")
	if err != nil {
		t.Fatal(err)
	}
	if got.inserted != 6 {
		t.Fatalf("FILES load inserted %d, want 6", got.inserted)
	}
	if ids := strings.Join(idList(t, db), ","); ids != "2,3,7,8,9,10" {
		t.Errorf("ids after FILES load = %s", ids)
	}
	// PATTERN selects by glob relative to the source directory.
	got, err = copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET PATTERN = 'sub/*.parquet'")
	if err != nil {
		t.Fatal(err)
	}
	if got.inserted != 3 {
		t.Errorf("PATTERN load inserted %d, want 3", got.inserted)
	}
	// The directory form loads what is left and skips the loaded files.
	got, err = copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	if err != nil {
		t.Fatal(err)
	}
	if got.inserted != 1 {
		t.Errorf("directory load inserted %d, want 1 (a.parquet)", got.inserted)
	}
	if n := count(t, db, "events"); n != 10 {
		t.Errorf("table has %d rows, want 10", n)
	}

	// FILES takes at most 1000 names; FILES and PATTERN exclude each other.
	names := make([]string, 1001)
	for i := range names {
		names[i] = fmt.Sprintf("'f%d.parquet'", i)
	}
	_, err = copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ("+strings.Join(names, ",")+")")
	execError(t, err, "22023", "INVALID_PARAMETER_VALUE")
	_, err = copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('a.parquet') PATTERN = '*.parquet'")
	execError(t, err, "42601", "PARSE_SYNTAX_ERROR")
}

func idList(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), "SELECT id FROM events ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(id))
	}
	return out
}

func TestCopyIntoValidateWritesNothing(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	dir := filepath.Join(t.TempDir(), "src")
	writeParquet(t, filepath.Join(dir, "a.parquet"), eventsSchema, eventRows(1, 60))

	rows, err := db.QueryContext(ctx(t), "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET VALIDATE ALL")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if strings.Join(cols, ",") != "id,name,amount,payload,ts" || n != 50 {
		t.Errorf("VALIDATE returned columns %v and %d rows; want the table's columns and a 50-row preview", cols, n)
	}
	if c := count(t, db, "events"); c != 0 {
		t.Fatalf("VALIDATE wrote %d rows", c)
	}
	// VALIDATE does not mark files as loaded: the real load still loads them.
	got, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	if err != nil {
		t.Fatal(err)
	}
	if got.inserted != 60 {
		t.Errorf("load after VALIDATE inserted %d, want 60", got.inserted)
	}
	// VALIDATE 5 ROWS previews five rows.
	writeParquet(t, filepath.Join(dir, "b.parquet"), eventsSchema, eventRows(100, 20))
	rows, err = db.QueryContext(ctx(t), "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET VALIDATE 5 ROWS")
	if err != nil {
		t.Fatal(err)
	}
	n = 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if n != 5 {
		t.Errorf("VALIDATE 5 ROWS returned %d rows", n)
	}
	// VALIDATE reports schema problems as the load would.
	mustExec(t, db, "CREATE TABLE narrow (id BIGINT NOT NULL)")
	_, err = db.QueryContext(ctx(t), "COPY INTO narrow FROM '"+dir+"' FILEFORMAT = PARQUET VALIDATE ALL")
	execError(t, err, "42KDG", "COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE")
}

func TestCopyIntoSchemaEnforcement(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	dir := filepath.Join(t.TempDir(), "src")
	writeParquet(t, filepath.Join(dir, "a.parquet"), eventsSchema, eventRows(1, 2))
	from := " FROM '" + dir + "' FILEFORMAT = PARQUET COPY_OPTIONS ('mergeSchema' = 'false')"

	// A source column the table does not have (dropped or renamed): DELTA_METADATA_MISMATCH.
	mustExec(t, db, "CREATE TABLE t_dropped (id BIGINT, name STRING, amount DECIMAL(10,2), ts TIMESTAMP)")
	_, err := copyInto(t, db, "COPY INTO t_dropped"+from)
	msg := execError(t, err, "42KDG", "COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE")
	if !strings.Contains(msg, "Table schema:") || !strings.Contains(msg, "|-- payload: struct (nullable = true)") {
		t.Errorf("mismatch message lacks the schemas: %s", msg)
	}

	// A table column missing from the source: NULL when nullable…
	mustExec(t, db, "CREATE TABLE t_added (ID BIGINT, NAME STRING, amount DECIMAL(10,2), payload STRUCT<kind: STRING, tags: ARRAY<STRING>>, ts TIMESTAMP, country STRING)")
	got, err := copyInto(t, db, "COPY INTO t_added"+from)
	if err != nil || got.inserted != 2 {
		t.Fatalf("load into a wider table: %+v %v", got, err)
	}
	var nulls int64
	if err := db.QueryRowContext(ctx(t), "SELECT count(*) FROM t_added WHERE country IS NULL AND name IS NOT NULL").Scan(&nulls); err != nil || nulls != 2 {
		t.Errorf("rows with NULL country = %d, %v; want 2", nulls, err)
	}
	// … and a NOT NULL violation otherwise.
	mustExec(t, db, "CREATE TABLE t_required (id BIGINT, name STRING, amount DECIMAL(10,2), payload STRUCT<kind: STRING, tags: ARRAY<STRING>>, ts TIMESTAMP, country STRING NOT NULL)")
	_, err = copyInto(t, db, "COPY INTO t_required"+from)
	msg = execError(t, err, "23502", "DELTA_MISSING_NOT_NULL_COLUMN_VALUE")
	if !strings.Contains(msg, "country") {
		t.Errorf("NOT NULL error does not name the column: %s", msg)
	}

	// An incompatible type (the table widened amount): an error, not a silent cast.
	mustExec(t, db, "CREATE TABLE t_widened (id BIGINT, name STRING, amount DECIMAL(12,2), payload STRUCT<kind: STRING, tags: ARRAY<STRING>>, ts TIMESTAMP)")
	_, err = copyInto(t, db, "COPY INTO t_widened"+from)
	execError(t, err, "22005", "DELTA_FAILED_TO_MERGE_FIELDS")
	// timestamp vs timestamp_ntz is a real difference.
	mustExec(t, db, "CREATE TABLE t_ntz (id BIGINT, name STRING, amount DECIMAL(10,2), payload STRUCT<kind: STRING, tags: ARRAY<STRING>>, ts TIMESTAMP_NTZ)")
	_, err = copyInto(t, db, "COPY INTO t_ntz"+from)
	execError(t, err, "22005", "DELTA_FAILED_TO_MERGE_FIELDS")

	// A projection fixes it: FROM (SELECT CAST(…) …).
	got, err = copyInto(t, db, "COPY INTO t_widened FROM (SELECT id, name, CAST(amount AS DECIMAL(12,2)) AS amount, payload, ts FROM '"+dir+"') FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 2 {
		t.Fatalf("load with a CAST projection: %+v %v", got, err)
	}
	var amount string
	if err := db.QueryRowContext(ctx(t), "SELECT amount FROM t_widened WHERE id = 1").Scan(&amount); err != nil || amount != "1.50" {
		t.Errorf("amount = %q, %v; want 1.50", amount, err)
	}
	// mergeSchema = true adds the missing columns instead.
	got, err = copyInto(t, db, "COPY INTO t_dropped FROM '"+dir+"' FILEFORMAT = PARQUET COPY_OPTIONS ('mergeSchema' = 'true')")
	if err != nil || got.inserted != 2 {
		t.Fatalf("load with mergeSchema: %+v %v", got, err)
	}
	var kind string
	if err := db.QueryRowContext(ctx(t), "SELECT payload.kind FROM t_dropped WHERE id = 2").Scan(&kind); err != nil || kind != "click" {
		t.Errorf("payload.kind after mergeSchema = %q, %v", kind, err)
	}
}

func TestCopyIntoIsAtomic(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id BIGINT NOT NULL, name STRING)")
	dir := filepath.Join(t.TempDir(), "src")
	small := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	writeParquet(t, filepath.Join(dir, "a.parquet"), small, `[{"id":1,"name":"a"},{"id":2,"name":"b"}]`)
	writeParquet(t, filepath.Join(dir, "b.parquet"), small, `[{"id":3,"name":"c"},{"id":null,"name":"d"}]`)
	// b.parquet carries a NULL id: the statement fails and loads neither file.
	_, err := copyInto(t, db, "COPY INTO t FROM '"+dir+"' FILEFORMAT = PARQUET")
	execError(t, err, "23502", "DELTA_NOT_NULL_CONSTRAINT_VIOLATED")
	if n := count(t, db, "t"); n != 0 {
		t.Fatalf("a failed COPY INTO left %d rows", n)
	}
	// A corrupt file fails the statement too, unless ignoreCorruptFiles skips it.
	if err := os.WriteFile(filepath.Join(dir, "b.parquet"), []byte("PAR1 not really parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = copyInto(t, db, "COPY INTO t FROM '"+dir+"' FILEFORMAT = PARQUET")
	execError(t, err, "KD001", "FAILED_READ_FILE")
	got, err := copyInto(t, db, "COPY INTO t FROM '"+dir+"' FILEFORMAT = PARQUET FORMAT_OPTIONS ('ignoreCorruptFiles' = 'true')")
	if err != nil {
		t.Fatal(err)
	}
	if got != (copyCounts{2, 2, 1}) {
		t.Errorf("load skipping a corrupt file = %+v, want 2/2/1", got)
	}
	// The skipped file is not recorded as loaded.
	loaded, _ := srv.Engine().LoadedFiles("t")
	if len(loaded) != 1 || !strings.HasSuffix(loaded[0], "a.parquet") {
		t.Errorf("loaded = %v", loaded)
	}
}

func TestCopyIntoCaseInsensitiveAndNarrowInts(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (Id INT, Score SMALLINT, Label STRING)")
	dir := filepath.Join(t.TempDir(), "src")
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "ID", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
		{Name: "LABEL", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	writeParquet(t, filepath.Join(dir, "a.parquet"), sch, `[{"ID":7,"score":3,"LABEL":"x"}]`)
	got, err := copyInto(t, db, "COPY INTO t FROM '"+dir+"' FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 1 {
		t.Fatalf("%+v %v", got, err)
	}
	var id int32
	var score int16
	var label string
	if err := db.QueryRowContext(ctx(t), "SELECT id, score, label FROM t").Scan(&id, &score, &label); err != nil || id != 7 || score != 3 || label != "x" {
		t.Errorf("row = %d %d %q %v", id, score, label, err)
	}
	// int64 data into an INT column is not a silent narrowing.
	writeParquet(t, filepath.Join(dir, "b.parquet"), arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), `[{"id":1}]`)
	_, err = copyInto(t, db, "COPY INTO t FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('b.parquet')")
	execError(t, err, "22005", "DELTA_FAILED_TO_MERGE_FIELDS")
}

func TestCopyIntoErrors(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	_, err := copyInto(t, db, "COPY INTO main.nope.t FROM '/tmp' FILEFORMAT = PARQUET")
	execError(t, err, "42P01", "TABLE_OR_VIEW_NOT_FOUND")
	mustExec(t, db, "CREATE TABLE t (id BIGINT)")
	_, err = copyInto(t, db, "COPY INTO t FROM '"+filepath.Join(t.TempDir(), "absent")+"' FILEFORMAT = PARQUET")
	execError(t, err, "42K03", "PATH_NOT_FOUND")
	_, err = copyInto(t, db, "COPY INTO t FROM '/tmp' FILEFORMAT = CSV")
	execError(t, err, "0A000", "UNSUPPORTED_FEATURE")
	_, err = db.ExecContext(ctx(t), "COPY INTO t FROM '/tmp' FILEFORMAT PARQUET")
	execError(t, err, "42601", "PARSE_SYNTAX_ERROR")
}

// TestCopyIntoThroughStorage loads from an object-store URL: the engine lists and stages the
// files through the storage hook (here a storage/local backend standing in for the bucket).
func TestCopyIntoThroughStorage(t *testing.T) {
	bucket := t.TempDir()
	var opened []string
	srv := warehouse.New(t, warehouse.Options{
		Unknowns:    allowManagedPaths.Unknowns,
		StorageRoot: "s3://lake/uc",
		Storage: func(_ context.Context, url string) (storage.Backend, error) {
			opened = append(opened, url)
			loc, err := storage.Parse(url)
			if err != nil {
				return nil, err
			}
			return local.New(filepath.Join(bucket, loc.Bucket, filepath.FromSlash(loc.Path))), nil
		},
	})
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	loc, err := srv.Engine().Location("main.default.events")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(loc, "s3://lake/uc/__unitystorage/catalogs/") {
		t.Fatalf("managed location = %s", loc)
	}
	root := strings.TrimPrefix(loc, "s3://")
	fb := filepath.Join(bucket, filepath.FromSlash(root), "_zerobus", "table_rejected_parquets")
	writeParquet(t, filepath.Join(fb, "f1.parquet"), eventsSchema, eventRows(1, 4))
	got, err := copyInto(t, db, "COPY INTO events FROM '"+loc+"/_zerobus/table_rejected_parquets/' FILEFORMAT = PARQUET")
	if err != nil {
		t.Fatal(err)
	}
	if got.inserted != 4 {
		t.Errorf("inserted %d, want 4", got.inserted)
	}
	loaded, _ := srv.Engine().LoadedFiles("events")
	if len(loaded) != 1 || loaded[0] != loc+"/_zerobus/table_rejected_parquets/f1.parquet" {
		t.Errorf("loaded = %v", loaded)
	}
	if len(opened) == 0 {
		t.Error("the storage hook was not used")
	}
	// parquet.`s3://…` reads go through the hook as well.
	var n int64
	if err := db.QueryRowContext(ctx(t), "SELECT count(*) FROM parquet.`"+loc+"/_zerobus/table_rejected_parquets/`").Scan(&n); err != nil || n != 4 {
		t.Errorf("parquet path count = %d, %v", n, err)
	}
}

func TestLocationOverlap(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	dir := fallbackDir(t, srv, "main.default.events")
	writeParquet(t, filepath.Join(dir, "f1.parquet"), eventsSchema, eventRows(1, 2))
	_, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	execError(t, err, "22023", "INVALID_PARAMETER_VALUE.LOCATION_OVERLAP")
	_, err = db.QueryContext(ctx(t), "SELECT * FROM parquet.`"+dir+"` LIMIT 10")
	execError(t, err, "22023", "INVALID_PARAMETER_VALUE.LOCATION_OVERLAP")
	// Outside managed storage (a volume, an external location) the same files load.
	staged := filepath.Join(t.TempDir(), "volume")
	writeParquet(t, filepath.Join(staged, "f1.parquet"), eventsSchema, eventRows(1, 2))
	got, err := copyInto(t, db, "COPY INTO events FROM '"+staged+"' FILEFORMAT = PARQUET FILES = ('f1.parquet')")
	if err != nil || got.inserted != 2 {
		t.Errorf("load from outside managed storage: %+v %v", got, err)
	}
}

func TestCopyIntoFromFileAndGlobPaths(t *testing.T) {
	srv := warehouse.New(t, warehouse.Options{Unknowns: warehouse.Unknowns{GlobPaths: true}})
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	dir := filepath.Join(t.TempDir(), "src")
	writeParquet(t, filepath.Join(dir, "a.parquet"), eventsSchema, eventRows(1, 1))
	writeParquet(t, filepath.Join(dir, "b.parquet"), eventsSchema, eventRows(2, 2))
	writeParquet(t, filepath.Join(dir, "c.json.parquet"), eventsSchema, eventRows(4, 4))
	got, err := copyInto(t, db, "COPY INTO events FROM '"+filepath.Join(dir, "b.parquet")+"' FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 2 {
		t.Fatalf("single file: %+v %v", got, err)
	}
	got, err = copyInto(t, db, "COPY INTO events FROM '"+dir+"/[ab].parquet' FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 1 {
		t.Fatalf("glob path: %+v %v (b.parquet is loaded already)", got, err)
	}
	loaded, _ := srv.Engine().LoadedFiles("events")
	if len(loaded) != 2 || loaded[0] != "file://"+filepath.ToSlash(dir)+"/a.parquet" {
		t.Errorf("loaded = %v", loaded)
	}
	// Without GlobPaths the same path names a file "[ab].parquet", which does not exist.
	srv.SetUnknowns(warehouse.Unknowns{})
	_, err = copyInto(t, db, "COPY INTO events FROM '"+dir+"/[ab].parquet' FILEFORMAT = PARQUET")
	execError(t, err, "42K03", "PATH_NOT_FOUND")
}

// TestCopyIntoParquetTypeMapping loads Parquet types whose Spark type is not the obvious one:
// unsigned integers widen, INT96 is timestamp, a timestamp not adjusted to UTC is
// timestamp_ntz.
func TestCopyIntoParquetTypeMapping(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (u8 SMALLINT, u32 BIGINT, u64 DECIMAL(20,0), ntz TIMESTAMP_NTZ, d DATE, "+
		"m MAP<STRING, INT>, bin BINARY, f FLOAT)",
		"CREATE TABLE legacy (ts TIMESTAMP)", "CREATE TABLE legacy_ntz (ts TIMESTAMP_NTZ)")
	dir := filepath.Join(t.TempDir(), "src")
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
		{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	}, nil)
	writeParquet(t, filepath.Join(dir, "types", "a.parquet"), sch,
		`[{"u8":255,"u32":4294967295,"u64":42,"ntz":"2024-01-02T03:04:05","d":"2024-01-02","m":[{"key":"k","value":7}],"bin":"AP8=","f":0.5}]`)
	got, err := copyInto(t, db, "COPY INTO t FROM '"+filepath.Join(dir, "types")+"' FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 1 {
		t.Fatalf("%+v %v", got, err)
	}
	var (
		u8     int16
		u32    int64
		u64, m string
		ntz, d time.Time
		bin    []byte
		f      float32
	)
	if err := db.QueryRowContext(ctx(t), "SELECT * FROM t").Scan(&u8, &u32, &u64, &ntz, &d, &m, &bin, &f); err != nil {
		t.Fatal(err)
	}
	if u8 != 255 || u32 != 4294967295 || u64 != "42" || !ntz.Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) ||
		!d.Equal(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)) || m != `{"k":7}` || string(bin) != "\x00\xff" || f != 0.5 {
		t.Errorf("row = %d %d %s %v %v %s %x %v", u8, u32, u64, ntz, d, m, bin, f)
	}

	ts := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true}}, nil)
	writeParquetWith(t, filepath.Join(dir, "int96", "a.parquet"), ts, `[{"ts":"2024-01-02T03:04:05Z"}]`,
		pqarrow.NewArrowWriterProperties(pqarrow.WithDeprecatedInt96Timestamps(true)))
	got, err = copyInto(t, db, "COPY INTO legacy FROM '"+filepath.Join(dir, "int96")+"' FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 1 {
		t.Fatalf("INT96 into TIMESTAMP: %+v %v", got, err)
	}
	var at time.Time
	if err := db.QueryRowContext(ctx(t), "SELECT ts FROM legacy").Scan(&at); err != nil || !at.Equal(time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("INT96 value = %v %v", at, err)
	}
	_, err = copyInto(t, db, "COPY INTO legacy_ntz FROM '"+filepath.Join(dir, "int96")+"' FILEFORMAT = PARQUET")
	execError(t, err, "22005", "DELTA_FAILED_TO_MERGE_FIELDS")
}

// TestCopyIntoNestedMembers: with mergeSchema = false, struct members are held to the table
// as top-level columns are: an extra member is a schema mismatch (42KDG), a missing nullable
// member is NULL, a missing NOT NULL member is a NOT NULL violation (23502), a member of
// another type is a merge failure (22005); member names match case-insensitively.
func TestCopyIntoNestedMembers(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	dir := filepath.Join(t.TempDir(), "src")
	member := func(name string, typ arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: typ, Nullable: true}
	}
	file := func(name string, fields ...arrow.Field) string {
		s := arrow.NewSchema([]arrow.Field{
			{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			{Name: "s", Type: arrow.StructOf(fields...), Nullable: true},
		}, nil)
		obj := "{"
		for i, f := range fields {
			if i > 0 {
				obj += ","
			}
			if f.Type.ID() == arrow.STRING {
				obj += `"` + f.Name + `":"v"`
			} else {
				obj += `"` + f.Name + `":7`
			}
		}
		writeParquet(t, filepath.Join(dir, name), s, `[{"id":1,"s":`+obj+`}}]`)
		return name
	}
	extra := file("extra.parquet", member("a", arrow.BinaryTypes.String), member("b", arrow.PrimitiveTypes.Int32), member("c", arrow.PrimitiveTypes.Int32))
	missing := file("missing.parquet", member("B", arrow.PrimitiveTypes.Int32))
	retyped := file("retyped.parquet", member("a", arrow.BinaryTypes.String), member("b", arrow.PrimitiveTypes.Int64))
	load := func(table, f string) (copyCounts, error) {
		return copyInto(t, db, "COPY INTO "+table+" FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('"+f+"') COPY_OPTIONS ('mergeSchema' = 'false')")
	}
	mustExec(t, db,
		"CREATE TABLE nested (id BIGINT, s STRUCT<a: STRING, b: INT>)",
		"CREATE TABLE nested_required (id BIGINT, s STRUCT<a: STRING NOT NULL, b: INT>)")

	_, err := load("nested", extra)
	msg := execError(t, err, "42KDG", "COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE")
	if !strings.Contains(msg, "|    |-- c: integer") {
		t.Errorf("mismatch message does not show the extra member: %s", msg)
	}
	_, err = copyInto(t, db, "COPY INTO nested FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('"+extra+"') VALIDATE ALL")
	execError(t, err, "42KDG", "COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE")
	_, err = load("nested", retyped)
	execError(t, err, "22005", "DELTA_FAILED_TO_MERGE_FIELDS")
	_, err = load("nested_required", missing)
	msg = execError(t, err, "42K09", "DELTA_NOT_NULL_COLUMN_NOT_FOUND_IN_STRUCT")
	if !strings.Contains(msg, "s.a") {
		t.Errorf("NOT NULL error does not name the member: %s", msg)
	}
	got, err := load("nested", missing)
	if err != nil || got.inserted != 1 {
		t.Fatalf("load with a missing nullable member: %+v %v", got, err)
	}
	var a sql.NullString
	var b int64
	if err := db.QueryRowContext(ctx(t), "SELECT s.a, s.b FROM nested WHERE id = 1").Scan(&a, &b); err != nil || a.Valid || b != 7 {
		t.Errorf("s.a, s.b = %v, %d, %v; want NULL, 7", a, b, err)
	}
	if n := count(t, db, "nested_required"); n != 0 {
		t.Errorf("nested_required has %d rows, want 0", n)
	}
}
