package warehouse_test

// Tests of the other writers a table has: look-alike commits by the same identity, on
// demand and after matching statements, and bursts of Zerobus versions before them.

import (
	"context"
	"testing"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// sameAsOwn compares the columns of two history rows that tell a commit's author.
func sameAsOwn(t *testing.T, own, other map[string]string) {
	t.Helper()
	for _, col := range []string{"operation", "userName", "userId", "engineInfo", "clusterId", "isBlindAppend", "userMetadata"} {
		if own[col] != other[col] {
			t.Errorf("%s: own commit %q, look-alike %q", col, own[col], other[col])
		}
	}
}

// TestCommitLookalike: a look-alike COPY INTO or MERGE by another writer carries the
// operation, identity and metrics of the warehouse's own commits and really inserts its rows.
func TestCommitLookalike(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	if _, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET"); err != nil {
		t.Fatal(err)
	}
	v, err := srv.CommitLookalike(context.Background(), "main.default.events", warehouse.Lookalike{Rows: 5})
	if err != nil || v != 2 {
		t.Fatalf("CommitLookalike = %d %v", v, err)
	}
	h := historyRows(t, db, "events")
	sameAsOwn(t, h[1], h[0])
	if m := jsonMap(t, h[0]["operationMetrics"]); m["numOutputRows"] != "5" || m["numFiles"] != "1" {
		t.Errorf("look-alike metrics = %v", m)
	}
	if n := count(t, db, "events"); n != 10 {
		t.Errorf("rows = %d, want 10: the look-alike inserts its rows", n)
	}
	v, err = srv.CommitLookalike(context.Background(), "main.default.events",
		warehouse.Lookalike{Operation: "MERGE", Rows: 3, UserName: "someone-else@example.com", UserMetadata: "nightly dedupe"})
	if err != nil || v != 3 {
		t.Fatalf("MERGE look-alike = %d %v", v, err)
	}
	h = historyRows(t, db, "events")
	m := jsonMap(t, h[0]["operationMetrics"])
	if h[0]["operation"] != "MERGE" || m["numTargetRowsInserted"] != "3" || m["numSourceRows"] != "3" ||
		h[0]["userName"] != "someone-else@example.com" || h[0]["userMetadata"] != "nightly dedupe" {
		t.Errorf("MERGE look-alike = %v", h[0])
	}
	if got := logRows(t, srv, "main.default.events", 4); got[3] != 13 {
		t.Errorf("rows the log's files hold = %v, want 13 at version 3", got)
	}
	if _, err := srv.CommitLookalike(context.Background(), "main.default.events", warehouse.Lookalike{Operation: "DELETE"}); err == nil {
		t.Error("a DELETE look-alike was accepted")
	}
}

// TestLookalikeTrigger: after each matching statement that committed, another writer commits
// a look-alike of it (same operation, identity and row count); a statement that commits
// nothing triggers nothing; without the trigger nothing is added.
func TestLookalikeTrigger(t *testing.T) {
	srv := warehouse.New(t, warehouse.Options{Unknowns: warehouse.Unknowns{HistoryUserName: "app-id-1"}})
	dir := loadFixture(t, srv)
	db := open(t, srv)
	tr, err := srv.AddTrigger(warehouse.Trigger{Match: `^COPY INTO`, Times: -1, Lookalike: &warehouse.Lookalike{}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('a.parquet')"); err != nil || got.inserted != 3 {
		t.Fatalf("COPY INTO = %+v %v", got, err)
	}
	h := historyRows(t, db, "events")
	if len(h) != 3 || h[1]["version"] != "1" {
		t.Fatalf("history has %d versions, want CREATE, the COPY INTO and its look-alike", len(h))
	}
	sameAsOwn(t, h[1], h[0])
	if a, b := jsonMap(t, h[1]["operationMetrics"])["numOutputRows"], jsonMap(t, h[0]["operationMetrics"])["numOutputRows"]; a != "3" || b != "3" {
		t.Errorf("numOutputRows: own %s, look-alike %s, want 3 and 3", a, b)
	}
	if h[0]["userName"] != "app-id-1" {
		t.Errorf("look-alike userName = %q, want the history identity", h[0]["userName"])
	}
	if st := statementsLike(srv, "COPY INTO"); len(st[0].Commits) != 1 || st[0].Commits[0].Version != 1 {
		t.Errorf("the statement's own commits = %+v", st[0].Commits)
	}
	// A re-run commits nothing, so nothing looks like it.
	if got, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('a.parquet')"); err != nil || got.inserted != 0 {
		t.Fatalf("re-run = %+v %v", got, err)
	}
	if tr.Fired() != 1 || len(historyRows(t, db, "events")) != 3 {
		t.Errorf("after a re-run: fired %d", tr.Fired())
	}
	srv.ClearTriggers()
	if _, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('b.parquet')"); err != nil {
		t.Fatal(err)
	}
	if h := historyRows(t, db, "events"); len(h) != 4 || h[0]["version"] != "3" {
		t.Errorf("without the trigger: %d versions", len(h))
	}
	if n := count(t, db, "events"); n != 3+3+2 {
		t.Errorf("rows = %d, want 8", n)
	}
}

// TestZerobusBurstTrigger: right before each matching statement a burst of Zerobus versions
// is committed, so that a re-check by DESCRIBE HISTORY … LIMIT finds only Zerobus versions.
func TestZerobusBurstTrigger(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	if _, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET"); err != nil {
		t.Fatal(err)
	}
	tr, err := srv.AddTrigger(warehouse.Trigger{Match: `^DESCRIBE HISTORY`, Table: "main.default.events", ZerobusVersions: 150, Times: -1})
	if err != nil {
		t.Fatal(err)
	}
	h := historyRows(t, db, "events")
	if len(h) != 152 || h[0]["engineInfo"] != warehouse.ZerobusEngineInfo || h[150]["operation"] != "COPY INTO" {
		t.Fatalf("history after a burst: %d versions, newest %v", len(h), h[0])
	}
	rows, err := db.QueryContext(ctx(t), "DESCRIBE HISTORY events LIMIT 100")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	rows.Close()
	if h := historyRows(t, db, "events"); len(h) != 452 || tr.Fired() != 3 || tr.Err() != nil {
		t.Errorf("after three bursts: %d versions, fired %d, %v", len(h), tr.Fired(), tr.Err())
	}
	if n := count(t, db, "events"); n != 5+450 {
		t.Errorf("rows = %d, want %d", n, 5+450)
	}
	srv.ClearTriggers()
	if h := historyRows(t, db, "events"); len(h) != 452 {
		t.Errorf("without the trigger: %d versions", len(h))
	}
	if _, err := srv.AddTrigger(warehouse.Trigger{Match: "x", ZerobusVersions: 1}); err == nil {
		t.Error("a burst without a table was accepted")
	}
}
