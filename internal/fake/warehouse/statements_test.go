package warehouse_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// sparkString quotes s as a Spark SQL string literal (backslash escapes).
func sparkString(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// TestOneStatementPerRequest: a warehouse parses one statement (trailing semicolons allowed);
// a second statement after ";" is a syntax error and nothing of the request runs.
func TestOneStatementPerRequest(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id BIGINT)", "INSERT INTO t VALUES (1);", "INSERT INTO t VALUES (2) ; ;")
	for _, stmt := range []string{
		"INSERT INTO t VALUES (3); DELETE FROM t",
		"SELECT 1; DROP TABLE t",
		"DELETE FROM t WHERE id = 5; INSERT INTO t VALUES (4)",
		"COPY INTO t FROM '/tmp' FILEFORMAT = PARQUET; DROP TABLE t",
		"ALTER TABLE t ADD COLUMNS (c INT); DROP TABLE t",
		"CREATE TABLE u (id INT); DROP TABLE t",
	} {
		_, err := db.ExecContext(ctx(t), stmt)
		msg := execError(t, err, "42601", "PARSE_SYNTAX_ERROR")
		if !strings.Contains(msg, "DELETE") && !strings.Contains(msg, "DROP") && !strings.Contains(msg, "INSERT") {
			t.Errorf("%s: the error does not point at the second statement: %s", stmt, msg)
		}
	}
	if n := count(t, db, "t"); n != 2 {
		t.Errorf("table t has %d rows after the rejected requests, want 2", n)
	}
	if _, err := db.ExecContext(ctx(t), "SELECT c FROM t"); err == nil {
		t.Error("column c exists: the ALTER TABLE before ';' ran")
	}
	if _, err := db.ExecContext(ctx(t), "SELECT * FROM u"); err == nil {
		t.Error("table u exists: the CREATE TABLE before ';' ran")
	}
	// A semicolon inside a string literal or a quoted identifier is not a separator.
	mustExec(t, db, "CREATE TABLE `semi;colon` (`a;b` STRING)", "INSERT INTO `semi;colon` VALUES ('x; DROP TABLE t')")
	var v string
	if err := db.QueryRowContext(ctx(t), "SELECT `a;b` FROM `semi;colon`").Scan(&v); err != nil || v != "x; DROP TABLE t" {
		t.Errorf("value = %q, %v", v, err)
	}
}

// TestCopyIntoSpecialCharactersInPathAndName: quotes, backticks and semicolons in the source
// path and in identifiers parse as Spark does (backslash escapes in strings, doubled
// backticks in identifiers) and load the right files.
func TestCopyIntoSpecialCharactersInPathAndName(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE SCHEMA `we'ird`", "CREATE TABLE `we'ird`.`t;``x` (id BIGINT NOT NULL, `na;me` STRING)")
	dir := filepath.Join(t.TempDir(), "it's; `a` \\dir")
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "NA;ME", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	writeParquet(t, filepath.Join(dir, "f'1;.parquet"), schema, `[{"id":1,"NA;ME":"a"},{"id":2,"NA;ME":"b"}]`)
	writeParquet(t, filepath.Join(dir, "f2.parquet"), schema, `[{"id":3,"NA;ME":"c"}]`)
	table := "`we'ird`.`t;``x`"
	got, err := copyInto(t, db, "COPY INTO "+table+" FROM "+sparkString(dir)+" FILEFORMAT = PARQUET FILES = ("+sparkString("f'1;.parquet")+")")
	if err != nil {
		t.Fatal(err)
	}
	if got != (copyCounts{2, 2, 0}) {
		t.Fatalf("COPY INTO = %+v, want 2/2/0", got)
	}
	got, err = copyInto(t, db, "COPY INTO "+table+" FROM "+sparkString(dir)+" FILEFORMAT = PARQUET")
	if err != nil {
		t.Fatal(err)
	}
	if got != (copyCounts{1, 1, 0}) {
		t.Fatalf("second COPY INTO = %+v, want 1/1/0 (only f2.parquet is new)", got)
	}
	rows, err := db.QueryContext(ctx(t), "SELECT `na;me` FROM "+table+" ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	rows.Close()
	if strings.Join(names, ",") != "a,b,c" {
		t.Errorf("names = %q, want a,b,c", names)
	}
	// An unterminated literal is a syntax error, not a partial statement.
	_, err = db.ExecContext(ctx(t), "COPY INTO "+table+" FROM '"+dir+"' FILEFORMAT = PARQUET")
	execError(t, err, "42601", "PARSE_SYNTAX_ERROR")
}

// TestFailedCreateOrReplaceKeepsTable: a CREATE OR REPLACE that fails leaves the existing
// table, its rows and its history as they were (a failed statement commits nothing).
func TestFailedCreateOrReplaceKeepsTable(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id INT)", "INSERT INTO t VALUES (1), (2)")
	_, err := db.ExecContext(ctx(t), "CREATE OR REPLACE TABLE t (id INT) PARTITIONED BY (nope)")
	execError(t, err, "42703", "DELTA_COLUMN_NOT_FOUND")
	_, err = db.ExecContext(ctx(t), "CREATE OR REPLACE TABLE t AS SELECT nope FROM range(3)")
	execError(t, err, "42703", "UNRESOLVED_COLUMN")
	if n := count(t, db, "t"); n != 2 {
		t.Errorf("table t has %d rows after failed replaces, want 2", n)
	}
	if h := describeHistory(t, db, "t"); len(h) != 2 {
		t.Errorf("history has %d versions, want 2", len(h))
	}
	// A successful replace swaps the data.
	mustExec(t, db, "CREATE OR REPLACE TABLE t (id INT, name STRING)")
	if n := count(t, db, "t"); n != 0 {
		t.Errorf("replaced table has %d rows, want 0", n)
	}
}
