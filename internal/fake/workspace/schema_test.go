package workspace_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/storage/local"
)

// TestZerobusParksWhileTheSchemaIsBroken: a parking Zerobus writer commits while the table
// takes its records; a break (a column dropped, through the control endpoint) makes it park
// them as fallback files in the producers' schema, which inspect reads and finds blocking;
// the fix (the column added back) makes it commit again. Every row the writer produced is
// either in the table or in a parked file, once.
func TestZerobusParksWhileTheSchemaIsBroken(t *testing.T) {
	ws := start(t, workspace.Options{})
	root := ordersRoot(t)
	if err := ws.RegisterTable(ctx(t), "main.sales.orders", root, true); err != nil {
		t.Fatal(err)
	}
	db := openSQL(t, ws)
	count := func() int64 {
		var n int64
		if err := db.QueryRowContext(ctx(t), "SELECT count(*) FROM main.sales.orders").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	zb := mustCall(t, ws, "POST", "/api/2.0/fake/zerobus", `{"table":"main.sales.orders","interval_ms":2,"park":true}`)
	writer := func() map[string]any {
		for _, w := range list(mustCall(t, ws, "GET", "/api/2.0/fake/zerobus", ""), "writers") {
			if w["id"] == zb["id"] {
				return w
			}
		}
		t.Fatal("the writer is not listed")
		return nil
	}
	waitFor(t, "committed rows", func() bool { return count() >= 3 })

	bt := mustCall(t, ws, "POST", "/api/2.0/fake/schema", `{"table":"main.sales.orders","action":"break","column":"channel"}`)
	if bt["column"] != "channel" || bt["type"] != "STRING" || bt["breaks"] != 1.0 {
		t.Fatalf("break: %v", bt)
	}
	waitFor(t, "parked files", func() bool { f, _ := writer()["parked_files"].(float64); return f >= 3 })
	before := count()
	waitFor(t, "more parked files", func() bool { f, _ := writer()["parked_files"].(float64); return f >= 6 })
	if count() != before {
		t.Error("rows were committed while the table was broken")
	}
	if tables := list(mustCall(t, ws, "GET", "/api/2.0/fake/schema", ""), "tables"); len(tables) != 1 || tables[0]["broken"] != true {
		t.Errorf("schema state: %v", tables)
	}
	// The parked files are in the producers' schema, which blocks until the fix.
	rep, err := inspect.StreamReport(ctx(t), local.New(root), inspect.Options{}, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Unreadable != 0 || len(rep.Groups) != 1 || !strings.Contains(fmt.Sprint(rep.Groups[0].Schema), "channel") {
		t.Fatalf("parked files: %d unreadable, groups %+v", rep.Totals.Unreadable, rep.Groups)
	}

	mustCall(t, ws, "POST", "/api/2.0/fake/schema", `{"table":"main.sales.orders","action":"fix"}`)
	after := count()
	waitFor(t, "commits after the fix", func() bool { return count() >= after+3 })
	stopped := mustCall(t, ws, "DELETE", fmt.Sprintf("/api/2.0/fake/zerobus/%v", zb["id"]), "")
	rows, parked := int64(stopped["rows"].(float64)), int64(stopped["parked_rows"].(float64))
	if got := count(); got+parked != rows {
		t.Errorf("%d rows in the table + %d parked != %d produced", got, parked, rows)
	}
	var distinct int64
	if err := db.QueryRowContext(ctx(t), "SELECT count(DISTINCT id) FROM main.sales.orders").Scan(&distinct); err != nil || distinct != count() {
		t.Errorf("%d distinct ids for %d rows (%v)", distinct, count(), err)
	}
	// Mistakes are refused.
	for _, body := range []string{`{"table":"main.sales.orders","action":"drop"}`, `{"table":"main.sales.nope","action":"break"}`,
		`{"table":"main.sales.orders","action":"break","column":"nope"}`} {
		if status, _ := call(t, ws, "POST", "/api/2.0/fake/schema", body, true); status != http.StatusBadRequest {
			t.Errorf("%s: %d", body, status)
		}
	}
}

// TestSchemaSchedule: a scheduled break and fix happen on time, again every period, and stop
// when the schedules are stopped.
func TestSchemaSchedule(t *testing.T) {
	ws := start(t, workspace.Options{})
	if err := ws.RegisterTable(ctx(t), "main.sales.orders", ordersRoot(t), true); err != nil {
		t.Fatal(err)
	}
	if status, _ := call(t, ws, "POST", "/api/2.0/fake/schema-schedule", `{"table":"main.sales.orders","break_after_ms":50,"fix_after_ms":20}`, true); status != http.StatusBadRequest {
		t.Errorf("a fix before the break was accepted: %d", status)
	}
	mustCall(t, ws, "POST", "/api/2.0/fake/apply", `{"schema_changes":[{"table":"main.sales.orders","break_after_ms":10,"fix_after_ms":60,"every_ms":120}]}`)
	state := func() map[string]any {
		tables := list(mustCall(t, ws, "GET", "/api/2.0/fake/schema", ""), "tables")
		if len(tables) == 0 {
			return map[string]any{}
		}
		return tables[0]
	}
	waitFor(t, "two breaks and two fixes", func() bool { s := state(); f, _ := s["fixes"].(float64); return f >= 2 })
	mustCall(t, ws, "DELETE", "/api/2.0/fake/schema", "")
	if errs := mustCall(t, ws, "GET", "/api/2.0/fake/schema", "")["errors"].([]any); len(errs) != 0 {
		t.Errorf("schedule errors: %v", errs)
	}
	ops, _ := historyOps(t, openSQL(t, ws), "main.sales.orders")
	if !strings.Contains(strings.Join(ops, ","), "DROP COLUMNS") || !strings.Contains(strings.Join(ops, ","), "ADD COLUMNS") {
		t.Errorf("history %v", ops)
	}
}
