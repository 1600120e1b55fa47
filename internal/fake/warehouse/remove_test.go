package warehouse_test

// Tests of the commits that remove data (TRUNCATE, DELETE, UPDATE, INSERT OVERWRITE, MERGE
// that deletes or updates) and of RESTORE, which brings removed data back.

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// logRows replays a local table's Delta log up to each version and returns, per version,
// the number of rows its live data files hold (the add actions' numRecords), so a test can
// check that the log describes the table's rows at every version.
func logRows(t *testing.T, srv *warehouse.Server, table string, versions int) []int64 {
	t.Helper()
	loc, err := srv.Engine().Location(table)
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimPrefix(loc, "file://")
	live := map[string]int64{}
	out := make([]int64, versions)
	for v := 0; v < versions; v++ {
		f, err := os.Open(filepath.Join(root, "_delta_log", fmt.Sprintf("%020d.json", v)))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var a struct {
				Add *struct {
					Path  string `json:"path"`
					Stats string `json:"stats"`
				} `json:"add"`
				Remove *struct {
					Path string `json:"path"`
				} `json:"remove"`
			}
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatal(err)
			}
			switch {
			case a.Add != nil:
				var st struct{ NumRecords int64 }
				if err := json.Unmarshal([]byte(a.Add.Stats), &st); err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(filepath.Join(root, a.Add.Path)); err != nil {
					t.Errorf("version %d adds %s, which is not on disk", v, a.Add.Path)
				}
				live[a.Add.Path] = st.NumRecords
			case a.Remove != nil:
				if _, ok := live[a.Remove.Path]; !ok {
					t.Errorf("version %d removes %s, which is not live", v, a.Remove.Path)
				}
				delete(live, a.Remove.Path)
			}
		}
		f.Close()
		for _, n := range live {
			out[v] += n
		}
	}
	return out
}

// TestDataRemovingCommits: each statement that removes or rewrites rows commits the Delta
// operation and metrics Delta records for it, and the log's add and remove actions describe
// the table's rows at every version.
func TestDataRemovingCommits(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id INT, v STRING)",
		"INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')",
		"UPDATE t SET v = upper(v) WHERE id >= 2",
		"DELETE FROM t WHERE id = 1",
		"MERGE INTO t USING (SELECT * FROM VALUES (2, 'x'), (3, 'y'), (4, 'z') AS s(id, v)) s ON t.id = s.id "+
			"WHEN MATCHED AND s.id = 2 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
		"INSERT OVERWRITE t VALUES (9, 'q')",
		"TRUNCATE TABLE t")
	h := describeHistory(t, db, "t")
	ops := make([]string, len(h))
	for i, r := range h {
		ops[len(h)-1-i] = r.operation
	}
	if got := strings.Join(ops, ","); got != "CREATE TABLE,WRITE,UPDATE,DELETE,MERGE,WRITE,TRUNCATE" {
		t.Fatalf("operations = %s", got)
	}
	byVersion := func(v int64) historyRow { return h[len(h)-1-int(v)] }
	want := []struct {
		version int64
		params  map[string]string
		metrics map[string]string
	}{
		{2, map[string]string{"predicate": `["id >= 2"]`}, map[string]string{"numUpdatedRows": "2", "numCopiedRows": "1", "numRemovedFiles": "1", "numAddedFiles": "1"}},
		{3, map[string]string{"predicate": `["id = 1"]`}, map[string]string{"numDeletedRows": "1", "numCopiedRows": "2", "numRemovedFiles": "1", "numAddedFiles": "1"}},
		{4, map[string]string{"predicate": `["t.id = s.id"]`}, map[string]string{"numSourceRows": "3", "numTargetRowsDeleted": "1", "numTargetRowsUpdated": "1",
			"numTargetRowsInserted": "1", "numTargetRowsCopied": "0", "numTargetFilesRemoved": "1", "numTargetFilesAdded": "1", "numOutputRows": "2"}},
		{5, map[string]string{"mode": "Overwrite"}, map[string]string{"numOutputRows": "1", "numFiles": "1"}},
		{6, map[string]string{}, map[string]string{"numRemovedFiles": "1"}},
	}
	for _, w := range want {
		r := byVersion(w.version)
		for k, v := range w.params {
			if r.params[k] != v {
				t.Errorf("version %d %s: operationParameters %s = %q, want %q", w.version, r.operation, k, r.params[k], v)
			}
		}
		for k, v := range w.metrics {
			if r.metrics[k] != v {
				t.Errorf("version %d %s: %s = %q, want %q (%v)", w.version, r.operation, k, r.metrics[k], v, r.metrics)
			}
		}
		if r.blind {
			t.Errorf("version %d %s is a blind append", w.version, r.operation)
		}
	}
	if m := byVersion(4).params["matchedPredicates"]; m != `[{"predicate":"s.id = 2","actionType":"delete"},{"actionType":"update"}]` {
		t.Errorf("MERGE matchedPredicates = %s", m)
	}
	if _, ok := byVersion(6).metrics["numDeletedRows"]; ok {
		t.Errorf("TRUNCATE metrics %v: Delta's TRUNCATE has no row counts", byVersion(6).metrics)
	}
	if got := logRows(t, srv, "main.default.t", 7); fmt.Sprint(got) != "[0 3 3 2 2 1 0]" {
		t.Errorf("rows the log's live files hold per version = %v, want [0 3 3 2 2 1 0]", got)
	}
}

func ids(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRowContext(ctx(t), q).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

// TestRestore: RESTORE brings back the rows, schema and properties of an earlier version
// from the data files live at it, and records the files it removes and restores.
func TestRestore(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id INT, s STRUCT<a: INT, b: STRING>) TBLPROPERTIES ('delta.columnMapping.mode' = 'name')", // v0
		"INSERT INTO t VALUES (1, named_struct('a', 1, 'b', 'x')), (2, named_struct('a', 2, 'b', 'y')), (3, NULL)", // v1
		"ALTER TABLE t ADD COLUMNS (c STRING)",                            // v2
		"INSERT INTO t VALUES (4, named_struct('a', 4, 'b', 'w'), 'new')", // v3
		"ALTER TABLE t RENAME COLUMN c TO note",                           // v4
		"DELETE FROM t WHERE id <= 2",                                     // v5
		"TRUNCATE TABLE t")                                                // v6
	rows, err := db.QueryContext(ctx(t), "RESTORE TABLE t TO VERSION AS OF 3")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	if strings.Join(cols, ",") != "table_size_after_restore,num_of_files_after_restore,num_removed_files,num_restored_files,removed_files_size,restored_files_size" {
		t.Errorf("RESTORE columns = %v", cols)
	}
	var size, files, removed, restored, removedSize, restoredSize int64
	if !rows.Next() {
		t.Fatal("RESTORE returned no row")
	}
	if err := rows.Scan(&size, &files, &removed, &restored, &removedSize, &restoredSize); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if files != 2 || removed != 0 || restored != 2 || restoredSize != size || size == 0 {
		t.Errorf("RESTORE result = size %d files %d removed %d restored %d", size, files, removed, restored)
	}
	// Version 3's rows and schema: c is back under its old name.
	if got := ids(t, db, "SELECT string_agg(id || ':' || coalesce(s.b, '-') || ':' || coalesce(c, '-'), ',' ORDER BY id) FROM t"); got != "1:x:-,2:y:-,3:-:-,4:w:new" {
		t.Errorf("rows after RESTORE to 3 = %s", got)
	}
	h := describeHistory(t, db, "t")
	if h[0].version != 7 || h[0].operation != "RESTORE" || h[0].params["version"] != "3" ||
		h[0].metrics["numRestoredFiles"] != "2" || h[0].metrics["numOfFilesAfterRestore"] != "2" || h[0].metrics["numRemovedFiles"] != "0" {
		t.Errorf("RESTORE commit = %d %s %v %v", h[0].version, h[0].operation, h[0].params, h[0].metrics)
	}
	// Back to version 1: one file, two columns; the file of version 3 is removed again.
	mustExec(t, db, "RESTORE t VERSION AS OF 1")
	if got := ids(t, db, "SELECT string_agg(CAST(id AS STRING), ',' ORDER BY id) FROM t"); got != "1,2,3" {
		t.Errorf("rows after RESTORE to 1 = %s", got)
	}
	if _, err := db.QueryContext(ctx(t), "SELECT c FROM t"); err == nil {
		t.Error("a column added after version 1 is still there")
	}
	if h := describeHistory(t, db, "t"); h[0].metrics["numRemovedFiles"] != "1" || h[0].metrics["numRestoredFiles"] != "0" {
		t.Errorf("second RESTORE metrics = %v", h[0].metrics)
	}
	if got := logRows(t, srv, "main.default.t", 9); fmt.Sprint(got) != "[0 3 3 4 4 2 0 4 3]" {
		t.Errorf("rows the log's live files hold per version = %v", got)
	}

	_, err = db.ExecContext(ctx(t), "RESTORE TABLE t TO VERSION AS OF 42")
	execError(t, err, "22003", "DELTA_CANNOT_RESTORE_TABLE_VERSION")
	mustExec(t, db, "CREATE TABLE remote (id INT)", "INSERT INTO remote VALUES (1)")
	if err := srv.Engine().SetLocation("remote", "s3://bucket/tables/remote"); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx(t), "RESTORE TABLE remote TO VERSION AS OF 0")
	execError(t, err, "0A000", "UNSUPPORTED_FEATURE")
}
