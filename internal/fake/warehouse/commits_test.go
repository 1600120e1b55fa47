package warehouse_test

// Tests of what a commit records about the statement and the identity that made it:
// commitInfo.userMetadata from the session, and the userName of history.

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

// logCommitInfo returns the commitInfo action of one version of a local table's Delta log.
func logCommitInfo(t *testing.T, srv *warehouse.Server, table string, version int64) map[string]any {
	t.Helper()
	loc, err := srv.Engine().Location(table)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(strings.TrimPrefix(loc, "file://"), "_delta_log", fmt.Sprintf("%020d.json", version)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var a map[string]map[string]any
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatal(err)
		}
		if ci, ok := a["commitInfo"]; ok {
			return ci
		}
	}
	t.Fatalf("version %d of %s has no commitInfo", version, table)
	return nil
}

// pinned returns one connection (one session) of db.
func pinned(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func connExec(t *testing.T, c *sql.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := c.ExecContext(ctx(t), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestUserMetadata: SET spark.databricks.delta.commitInfo.userMetadata tags every later
// commit of that session, in history and in the Delta log; other sessions' commits are not
// tagged; an empty SET or a RESET clears it.
func TestUserMetadata(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	tagged, other := pinned(t, db), pinned(t, db)
	connExec(t, tagged, "SET spark.databricks.delta.commitInfo.userMetadata = 'zbrecover run 42'")
	rows, err := tagged.QueryContext(ctx(t), "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('a.parquet')")
	if err != nil {
		t.Fatal(err)
	}
	rows.Close()
	connExec(t, other, "INSERT INTO events (id) VALUES (100)")
	connExec(t, tagged, "INSERT INTO events (id) VALUES (101)")
	connExec(t, tagged, "SET spark.databricks.delta.commitInfo.userMetadata =")
	connExec(t, tagged, "INSERT INTO events (id) VALUES (102)")
	connExec(t, tagged, "SET spark.databricks.delta.commitInfo.userMetadata = 'second'", "INSERT INTO events (id) VALUES (103)")
	connExec(t, tagged, "RESET spark.databricks.delta.commitInfo.userMetadata", "INSERT INTO events (id) VALUES (104)")

	want := map[int64]string{1: "zbrecover run 42", 2: "", 3: "zbrecover run 42", 4: "", 5: "second", 6: ""}
	got := map[int64]string{}
	for _, h := range historyRows(t, db, "events") {
		var v int64
		fmt.Sscan(h["version"], &v)
		got[v] = h["userMetadata"]
	}
	for v, meta := range want {
		if got[v] != meta {
			t.Errorf("version %d: history userMetadata = %q, want %q", v, got[v], meta)
		}
		ci := logCommitInfo(t, srv, "main.default.events", v)
		logMeta, present := ci["userMetadata"].(string)
		if logMeta != meta || present != (meta != "") {
			t.Errorf("version %d: log commitInfo userMetadata = %v, want %q", v, ci["userMetadata"], meta)
		}
	}
}

// TestUnknownRefuseUserMetadata: with RefuseUserMetadata the SET fails as a warehouse
// refuses a configuration it does not allow, and commits carry nothing; without it the same
// SET is accepted.
func TestUnknownRefuseUserMetadata(t *testing.T) {
	srv := warehouse.New(t, warehouse.Options{Unknowns: warehouse.Unknowns{RefuseUserMetadata: true}})
	db := open(t, srv)
	c := pinned(t, db)
	connExec(t, c, "CREATE TABLE t (id INT)")
	_, err := c.ExecContext(ctx(t), "SET spark.databricks.delta.commitInfo.userMetadata = 'x'")
	msg := execError(t, err, "42K0I", "CONFIG_NOT_AVAILABLE")
	if !strings.Contains(msg, "Configuration spark.databricks.delta.commitInfo.userMetadata is not available.") {
		t.Errorf("refusal = %q", msg)
	}
	_, err = c.ExecContext(ctx(t), "RESET spark.databricks.delta.commitInfo.userMetadata")
	execError(t, err, "42K0I", "CONFIG_NOT_AVAILABLE")
	connExec(t, c, "SET spark.sql.ansi.enabled = true", "INSERT INTO t VALUES (1)")
	if h := historyRows(t, db, "t"); h[0]["userMetadata"] != "" {
		t.Errorf("userMetadata after a refused SET = %q", h[0]["userMetadata"])
	}

	srv.SetUnknowns(warehouse.Unknowns{})
	connExec(t, c, "SET spark.databricks.delta.commitInfo.userMetadata = 'x'", "INSERT INTO t VALUES (2)")
	if h := historyRows(t, db, "t"); h[0]["userMetadata"] != "x" {
		t.Errorf("userMetadata after an accepted SET = %q", h[0]["userMetadata"])
	}
}

// TestUnknownHistoryUserName: with HistoryUserName commits record another name than
// current_user() returns (a service principal's application id against its display name);
// by default the two are the same.
func TestUnknownHistoryUserName(t *testing.T) {
	srv := warehouse.New(t, warehouse.Options{UserName: "recovery-sp"})
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id INT)", "INSERT INTO t VALUES (1)")
	var me string
	if err := db.QueryRowContext(ctx(t), "SELECT current_user()").Scan(&me); err != nil || me != "recovery-sp" {
		t.Fatalf("current_user() = %q %v", me, err)
	}
	if h := historyRows(t, db, "t"); h[0]["userName"] != "recovery-sp" {
		t.Errorf("default: history userName = %q, want current_user() %q", h[0]["userName"], me)
	}

	srv.SetUnknowns(warehouse.Unknowns{HistoryUserName: "0b5e1c9a-7d1f-4c55-9e0a-5a0c3a9d2f11"})
	mustExec(t, db, "INSERT INTO t VALUES (2)")
	if err := db.QueryRowContext(ctx(t), "SELECT current_user()").Scan(&me); err != nil || me != "recovery-sp" {
		t.Errorf("current_user() with HistoryUserName = %q %v, want the session user", me, err)
	}
	h := historyRows(t, db, "t")
	if h[0]["userName"] != "0b5e1c9a-7d1f-4c55-9e0a-5a0c3a9d2f11" {
		t.Errorf("history userName = %q, want the application id", h[0]["userName"])
	}
	if ci := logCommitInfo(t, srv, "main.default.t", 2); ci["userName"] != "0b5e1c9a-7d1f-4c55-9e0a-5a0c3a9d2f11" {
		t.Errorf("log userName = %v", ci["userName"])
	}
	if h[1]["userName"] != "recovery-sp" {
		t.Errorf("an earlier commit's userName changed to %q", h[1]["userName"])
	}
}
