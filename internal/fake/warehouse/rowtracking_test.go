package warehouse_test

// Tests of row tracking, _metadata and OPTIMIZE: what undo relies on (the Delta log's
// baseRowId and defaultRowCommitVersion, stable row IDs through UPDATE, MERGE and OPTIMIZE,
// DELETE by _metadata) and the switch for _metadata in a DELETE.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// logAction is one add, remove or domainMetadata action of a version.
type logAction struct {
	Add *struct {
		Path                    string `json:"path"`
		DataChange              bool   `json:"dataChange"`
		Stats                   string `json:"stats"`
		BaseRowID               *int64 `json:"baseRowId"`
		DefaultRowCommitVersion *int64 `json:"defaultRowCommitVersion"`
	} `json:"add"`
	Remove *struct {
		Path       string `json:"path"`
		DataChange bool   `json:"dataChange"`
		BaseRowID  *int64 `json:"baseRowId"`
	} `json:"remove"`
	DomainMetadata *struct {
		Domain        string `json:"domain"`
		Configuration string `json:"configuration"`
	} `json:"domainMetadata"`
	Protocol *struct {
		WriterFeatures []string `json:"writerFeatures"`
	} `json:"protocol"`
	MetaData *struct {
		Configuration map[string]string `json:"configuration"`
	} `json:"metaData"`
}

// versionActions reads the actions of one version of a local table's Delta log.
func versionActions(t *testing.T, srv *warehouse.Server, table string, v int64) []logAction {
	t.Helper()
	loc, err := srv.Engine().Location(table)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(strings.TrimPrefix(loc, "file://"), "_delta_log", fmt.Sprintf("%020d.json", v)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []logAction
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var a logAction
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// highWaterMark returns the rowIdHighWaterMark a version's domain metadata records (-2
// for none).
func highWaterMark(t *testing.T, as []logAction) int64 {
	t.Helper()
	for _, a := range as {
		if a.DomainMetadata != nil && a.DomainMetadata.Domain == "delta.rowTracking" {
			var c struct{ RowIDHighWaterMark int64 }
			if err := json.Unmarshal([]byte(a.DomainMetadata.Configuration), &c); err != nil {
				t.Fatal(err)
			}
			return c.RowIDHighWaterMark
		}
	}
	return -2
}

func adds(as []logAction) []logAction {
	var out []logAction
	for _, a := range as {
		if a.Add != nil {
			out = append(out, a)
		}
	}
	return out
}

func numRecords(t *testing.T, stats string) int64 {
	t.Helper()
	var st struct{ NumRecords int64 }
	if err := json.Unmarshal([]byte(stats), &st); err != nil {
		t.Fatal(err)
	}
	return st.NumRecords
}

func query1(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRowContext(ctx(t), q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

// TestRowTrackingThroughRewrites: with delta.enableRowTracking, each insert's add action
// carries baseRowId and defaultRowCommitVersion, the high-water mark grows, and the rows of
// a commit are exactly [baseRowId, baseRowId + numRecords − 1] by _metadata.row_id, before and
// after an UPDATE, a MERGE and an OPTIMIZE that rewrite every file; UPDATE and MERGE give the
// rows they change the commit's version; OPTIMIZE keeps IDs and versions, moves the rows to
// its one new file and commits with dataChange false.
func TestRowTrackingThroughRewrites(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id INT, v STRING) TBLPROPERTIES ('delta.enableRowTracking' = 'true')", // v0
		"INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')", // v1
		"INSERT INTO t VALUES (4, 'd'), (5, 'e')")           // v2
	v0 := versionActions(t, srv, "main.default.t", 0)
	var features []string
	var conf map[string]string
	for _, a := range v0 {
		if a.Protocol != nil {
			features = a.Protocol.WriterFeatures
		}
		if a.MetaData != nil {
			conf = a.MetaData.Configuration
		}
	}
	if !strings.Contains(fmt.Sprint(features), "rowTracking") || !strings.Contains(fmt.Sprint(features), "domainMetadata") ||
		!strings.HasPrefix(conf["delta.rowTracking.materializedRowIdColumnName"], "_row-id-col-") {
		t.Errorf("version 0: writer features %v, configuration %v", features, conf)
	}
	ranges := map[int64][2]int64{} // version → [first, last] row ID of its add
	for _, v := range []int64{1, 2} {
		as := versionActions(t, srv, "main.default.t", v)
		a := adds(as)
		if len(a) != 1 || a[0].Add.BaseRowID == nil || a[0].Add.DefaultRowCommitVersion == nil || *a[0].Add.DefaultRowCommitVersion != v {
			t.Fatalf("version %d adds %+v", v, a)
		}
		n := numRecords(t, a[0].Add.Stats)
		ranges[v] = [2]int64{*a[0].Add.BaseRowID, *a[0].Add.BaseRowID + n - 1}
		if hwm := highWaterMark(t, as); hwm != ranges[v][1] {
			t.Errorf("version %d: high-water mark %d, want %d", v, hwm, ranges[v][1])
		}
	}
	if ranges[1] != [2]int64{0, 2} || ranges[2] != [2]int64{3, 4} {
		t.Fatalf("row ID ranges %v", ranges)
	}
	byRange := func(v int64) string {
		r := ranges[v]
		return query1(t, db, fmt.Sprintf("SELECT string_agg(CAST(id AS STRING), ',' ORDER BY id) FROM t WHERE _metadata.row_id BETWEEN %d AND %d", r[0], r[1]))
	}
	check := func(when string) {
		t.Helper()
		if got := byRange(1); got != "1,2,3" {
			t.Errorf("%s: rows of version 1 by row ID = %s", when, got)
		}
		if got := byRange(2); got != "4,5" {
			t.Errorf("%s: rows of version 2 by row ID = %s", when, got)
		}
	}
	check("after the inserts")
	if got := query1(t, db, "SELECT string_agg(CAST(_metadata.row_commit_version AS STRING), ',' ORDER BY id) FROM t"); got != "1,1,1,2,2" {
		t.Errorf("row commit versions = %s", got)
	}
	loc, _ := srv.Engine().Location("main.default.t")
	file2 := adds(versionActions(t, srv, "main.default.t", 2))[0].Add.Path
	if got := query1(t, db, fmt.Sprintf("SELECT count(*) FROM t WHERE _metadata.file_path IN ('%s/%s')", loc, file2)); got != "2" {
		t.Errorf("rows of version 2's file by _metadata.file_path = %s", got)
	}
	// SELECT * shows the table's columns only.
	rows, err := db.QueryContext(ctx(t), "SELECT * FROM t")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	rows.Close()
	if strings.Join(cols, ",") != "id,v" {
		t.Errorf("SELECT * columns = %v", cols)
	}

	mustExec(t, db, "UPDATE t SET v = 'B' WHERE id = 2", // v3
		"MERGE INTO t USING (SELECT * FROM VALUES (3, 'C'), (6, 'f') AS s(id, v)) s ON t.id = s.id "+
			"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *") // v4
	check("after UPDATE and MERGE")
	// The UPDATE rewrote version 1's file (rows 1-3: IDs 5..7 reserved), the MERGE that file
	// again with its insert (4 rows: 8..11): the row it inserted is 8. Version 2's file was
	// touched by neither.
	if got := query1(t, db, "SELECT string_agg(id || ':' || _metadata.row_id || ':' || _metadata.row_commit_version, ',' ORDER BY id) FROM t"); got != "1:0:1,2:1:3,3:2:4,4:3:2,5:4:2,6:8:4" {
		t.Errorf("id:row_id:row_commit_version after UPDATE and MERGE = %s", got)
	}
	// A third file, then OPTIMIZE compacts them all into one.
	mustExec(t, db, "INSERT INTO t VALUES (7, 'g')")  // v5
	res, err := db.QueryContext(ctx(t), "OPTIMIZE t") // v6
	if err != nil {
		t.Fatal(err)
	}
	res.Close()
	check("after OPTIMIZE")
	if got := query1(t, db, "SELECT string_agg(id || ':' || _metadata.row_id || ':' || _metadata.row_commit_version, ',' ORDER BY id) FROM t WHERE id <= 5"); got != "1:0:1,2:1:3,3:2:4,4:3:2,5:4:2" {
		t.Errorf("id:row_id:row_commit_version after OPTIMIZE = %s", got)
	}
	h := describeHistory(t, db, "t")
	if h[0].operation != "OPTIMIZE" || h[0].params["predicate"] != "[]" || h[0].params["zOrderBy"] != "[]" || h[0].params["auto"] != "false" ||
		h[0].metrics["numRemovedFiles"] != "3" || h[0].metrics["numAddedFiles"] != "1" || h[0].metrics["p50FileSize"] == "0" {
		t.Errorf("OPTIMIZE commit = %s %v %v", h[0].operation, h[0].params, h[0].metrics)
	}
	v6 := versionActions(t, srv, "main.default.t", 6)
	removed := 0
	for _, a := range v6 {
		if a.Remove != nil {
			removed++
			if a.Remove.DataChange || a.Remove.BaseRowID == nil {
				t.Errorf("OPTIMIZE remove %+v", a.Remove)
			}
		}
	}
	a6 := adds(v6)
	if removed != 3 || len(a6) != 1 || a6[0].Add.DataChange || a6[0].Add.BaseRowID == nil || numRecords(t, a6[0].Add.Stats) != 7 {
		t.Errorf("OPTIMIZE actions: %d removes, adds %+v", removed, a6)
	}
	if got := query1(t, db, "SELECT count(DISTINCT _metadata.file_path) FROM t"); got != "1" {
		t.Errorf("files after OPTIMIZE = %s", got)
	}
	// A second OPTIMIZE has one file to work on: no commit.
	if _, err := db.ExecContext(ctx(t), "OPTIMIZE t"); err != nil {
		t.Fatal(err)
	}
	if h := describeHistory(t, db, "t"); h[0].version != 6 {
		t.Errorf("an OPTIMIZE of one file committed version %d", h[0].version)
	}

	// DELETE by row ID ranges deletes exactly those rows, once.
	r1 := ranges[1]
	del := fmt.Sprintf("DELETE FROM t WHERE _metadata.row_id BETWEEN %d AND %d", r1[0], r1[1])
	if n := execRows(t, db, del); n != 3 {
		t.Errorf("DELETE by row IDs deleted %d rows", n)
	}
	if h := describeHistory(t, db, "t"); h[0].operation != "DELETE" || h[0].metrics["numDeletedRows"] != "3" {
		t.Errorf("DELETE commit %s %v", h[0].operation, h[0].metrics)
	}
	if n := execRows(t, db, del); n != 0 {
		t.Errorf("the DELETE sent again deleted %d rows", n)
	}
	if got := query1(t, db, "SELECT string_agg(CAST(id AS STRING), ',' ORDER BY id) FROM t"); got != "4,5,6,7" {
		t.Errorf("rows left = %s", got)
	}
	check2 := byRange(2)
	if check2 != "4,5" {
		t.Errorf("rows of version 2 after the DELETE = %s", check2)
	}
}

func execRows(t *testing.T, db *sql.DB, stmt string) int64 {
	t.Helper()
	res, err := db.ExecContext(ctx(t), stmt)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	n, _ := res.RowsAffected()
	return n
}

// TestMetadataInDelete: _metadata.file_path and _metadata.row_id in a DELETE's condition are
// taken by default; with the switch RefuseMetadataInDelete the DELETE is refused (nothing
// committed) while SELECT still takes them. Without row tracking, row_id is no field of
// _metadata (FIELD_NOT_FOUND) and file_path works.
func TestMetadataInDelete(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE plain (id INT)", "INSERT INTO plain VALUES (1), (2)", "INSERT INTO plain VALUES (3)")
	loc, _ := srv.Engine().Location("main.default.plain")
	file := adds(versionActions(t, srv, "main.default.plain", 2))[0].Add.Path
	_, err := db.QueryContext(ctx(t), "SELECT count(*) FROM plain WHERE _metadata.row_id = 0")
	execError(t, err, "42704", "FIELD_NOT_FOUND")
	_, err = db.ExecContext(ctx(t), "DELETE FROM plain WHERE _metadata.row_id = 0")
	execError(t, err, "42704", "FIELD_NOT_FOUND")

	byFile := fmt.Sprintf("DELETE FROM plain WHERE _metadata.file_path IN ('%s/%s')", loc, file)
	srv.SetUnknowns(warehouse.Unknowns{RefuseMetadataInDelete: true})
	_, err = db.ExecContext(ctx(t), byFile)
	msg := execError(t, err, "42703", "UNRESOLVED_COLUMN.WITH_SUGGESTION")
	if !strings.Contains(msg, "_metadata") {
		t.Errorf("refusal %q does not name _metadata", msg)
	}
	if h := describeHistory(t, db, "plain"); h[0].version != 2 {
		t.Errorf("a refused DELETE committed version %d", h[0].version)
	}
	if got := query1(t, db, fmt.Sprintf("SELECT count(*) FROM plain WHERE _metadata.file_path IN ('%s/%s')", loc, file)); got != "1" {
		t.Errorf("SELECT by file path under the switch = %s", got)
	}
	srv.SetUnknowns(warehouse.Unknowns{})
	if n := execRows(t, db, byFile); n != 1 {
		t.Errorf("DELETE by file path deleted %d rows", n)
	}
	if got := query1(t, db, "SELECT string_agg(CAST(id AS STRING), ',' ORDER BY id) FROM plain"); got != "1,2" {
		t.Errorf("rows left = %s", got)
	}
	// A qualified reference to the target's _metadata works too.
	if n := execRows(t, db, "DELETE FROM plain p WHERE p._metadata.file_name LIKE 'part-%' AND id = 1"); n != 1 {
		t.Errorf("DELETE by the qualified file name deleted %d rows", n)
	}
}

// TestEnableRowTrackingBackfills: enabling row tracking on a table with rows commits its live
// files again with baseRowId (dataChange false) in the same commit, every row gets an ID, and
// a Zerobus writer's appends carry IDs from then on.
func TestEnableRowTrackingBackfills(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id BIGINT, v STRING)", "INSERT INTO t VALUES (1, 'a'), (2, 'b')", "INSERT INTO t VALUES (3, 'c')",
		"ALTER TABLE t SET TBLPROPERTIES ('delta.enableRowTracking' = 'true')") // v3
	v3 := versionActions(t, srv, "main.default.t", 3)
	a3 := adds(v3)
	if len(a3) != 2 || highWaterMark(t, v3) != 2 {
		t.Fatalf("backfill: adds %+v, high-water mark %d", a3, highWaterMark(t, v3))
	}
	for _, a := range a3 {
		if a.Add.DataChange || a.Add.BaseRowID == nil || *a.Add.DefaultRowCommitVersion != 3 {
			t.Errorf("backfill add %+v", a.Add)
		}
	}
	if got := query1(t, db, "SELECT count(DISTINCT _metadata.row_id) FROM t WHERE _metadata.row_id BETWEEN 0 AND 2"); got != "3" {
		t.Errorf("rows with IDs 0..2 = %s", got)
	}
	zb, err := srv.Zerobus("main.default.t", warehouse.ZerobusOptions{Rows: 4})
	if err != nil {
		t.Fatal(err)
	}
	v, err := zb.Flush(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	as := versionActions(t, srv, "main.default.t", v)
	a := adds(as)
	if len(a) != 1 || a[0].Add.BaseRowID == nil || *a[0].Add.BaseRowID != 3 || *a[0].Add.DefaultRowCommitVersion != v || highWaterMark(t, as) != 6 {
		t.Fatalf("Zerobus version %d: adds %+v, high-water mark %d", v, a, highWaterMark(t, as))
	}
	if got := query1(t, db, "SELECT count(*) FROM t WHERE _metadata.row_id BETWEEN 3 AND 6 AND v LIKE 'zerobus-%'"); got != "4" {
		t.Errorf("Zerobus rows by their row IDs = %s", got)
	}
	// INSERT without a column list still fills the table's own columns only.
	mustExec(t, db, "INSERT INTO t SELECT id + 100, v FROM t WHERE id = 1")
	if got := query1(t, db, "SELECT _metadata.row_id FROM t WHERE id = 101"); got != "7" {
		t.Errorf("row ID of the next insert = %s", got)
	}
}

// TestDeleteRewritesOnlyTouchedFiles: a DELETE or UPDATE removes the data files holding the
// rows it deleted or changed and adds one file of their remaining (and changed) rows; the other
// files stay live, with their rows' _metadata.file_path (Delta's copy-on-write).
func TestDeleteRewritesOnlyTouchedFiles(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id INT)", "INSERT INTO t VALUES (1), (2), (3)", "INSERT INTO t VALUES (4), (5)", "INSERT INTO t VALUES (6)")
	second := query1(t, db, "SELECT DISTINCT _metadata.file_path FROM t WHERE id = 4")
	mustExec(t, db, "DELETE FROM t WHERE id = 1 OR id = 6")
	h := describeHistory(t, db, "t")
	if h[0].metrics["numRemovedFiles"] != "2" || h[0].metrics["numAddedFiles"] != "1" || h[0].metrics["numCopiedRows"] != "2" || h[0].metrics["numDeletedRows"] != "2" {
		t.Errorf("DELETE metrics %v", h[0].metrics)
	}
	if got := query1(t, db, "SELECT count(*) FROM t WHERE _metadata.file_path = '"+second+"'"); got != "2" {
		t.Errorf("the untouched file's rows = %s", got)
	}
	mustExec(t, db, "UPDATE t SET id = 40 WHERE id = 4")
	h = describeHistory(t, db, "t")
	if h[0].metrics["numRemovedFiles"] != "1" || h[0].metrics["numCopiedRows"] != "1" || h[0].metrics["numUpdatedRows"] != "1" {
		t.Errorf("UPDATE metrics %v", h[0].metrics)
	}
	if got := query1(t, db, "SELECT count(DISTINCT _metadata.file_path) FROM t"); got != "2" {
		t.Errorf("live files = %s, want 2", got)
	}
	if got := logRows(t, srv, "main.default.t", 6); fmt.Sprint(got) != "[0 3 5 6 4 4]" {
		t.Errorf("rows the log's live files hold per version = %v", got)
	}
}
