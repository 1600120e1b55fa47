package workspace_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/databricks/databricks-sdk-go/service/catalog"
	dbsql "github.com/databricks/databricks-sdk-go/service/sql"

	"github.com/zbrecover/zbrecover/internal/fake/workspace"
)

// TestStopWarehouse: the SQL warehouses API reports the state, stop and start are the API's
// POST …/stop and …/start, and while stopped every statement fails (a session still opens).
func TestStopWarehouse(t *testing.T) {
	ws := start(t, workspace.Options{})
	w := sdkClient(t, ws)
	state := func() string {
		t.Helper()
		info, err := w.Warehouses.Get(ctx(t), dbsql.GetWarehouseRequest{Id: ws.WarehouseID()})
		if err != nil {
			t.Fatal(err)
		}
		return string(info.State)
	}
	db := openSQL(t, ws)
	if s := state(); s != "RUNNING" {
		t.Fatalf("state %s, want RUNNING", s)
	}
	if _, err := w.Warehouses.Stop(ctx(t), dbsql.StopRequest{Id: ws.WarehouseID()}); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != "STOPPED" {
		t.Fatalf("state after stop %s, want STOPPED", s)
	}
	if _, err := db.ExecContext(ctx(t), "SELECT 1"); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("statement on a stopped warehouse: %v, want a refusal", err)
	}
	if st := ws.Statements(); len(st) == 0 || st[len(st)-1].State != "REJECTED" {
		t.Errorf("statement log %+v, want the refusal logged", st)
	}
	if _, err := w.Warehouses.Start(ctx(t), dbsql.StartRequest{Id: ws.WarehouseID()}); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != "RUNNING" {
		t.Fatalf("state after start %s, want RUNNING", s)
	}
	if _, err := db.ExecContext(ctx(t), "SELECT 1"); err != nil {
		t.Fatalf("statement after start: %v", err)
	}
	ws.StopWarehouse()
	if s := state(); s != "STOPPED" {
		t.Fatalf("state after StopWarehouse %s", s)
	}
}

// TestEffectivePermissions: registering a table grants the workspace user what a recovery
// needs; the API reports grants on the securable and inherited ones, and follows Revoke.
func TestEffectivePermissions(t *testing.T) {
	ws := start(t, workspace.Options{UserName: "op@example.com"})
	if err := ws.RegisterTable(ctx(t), "main.sales.orders", ordersRoot(t), true); err != nil {
		t.Fatal(err)
	}
	w := sdkClient(t, ws)
	privs := func(typ, name string) map[string][]string {
		t.Helper()
		resp, err := w.Grants.GetEffective(ctx(t), catalog.GetEffectiveRequest{SecurableType: typ, FullName: name})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]string{}
		for _, a := range resp.PrivilegeAssignments {
			for _, p := range a.Privileges {
				s := string(p.Privilege)
				if p.InheritedFromName != "" {
					s += "<" + p.InheritedFromName
				}
				out[a.Principal] = append(out[a.Principal], s)
			}
		}
		return out
	}
	if got := privs("table", "main.sales.orders")["op@example.com"]; !slices.Equal(got, []string{"SELECT", "MODIFY", "USE_SCHEMA<main.sales", "USE_CATALOG<main"}) {
		t.Errorf("table: %v", got)
	}
	if got := privs("catalog", "main")["op@example.com"]; !slices.Equal(got, []string{"USE_CATALOG"}) {
		t.Errorf("catalog: %v", got)
	}
	if got := privs("volume", "main.sales.staging")["op@example.com"]; !slices.Equal(got, []string{"READ_VOLUME", "WRITE_VOLUME", "USE_SCHEMA<main.sales", "USE_CATALOG<main"}) {
		t.Errorf("volume: %v", got)
	}
	ws.Grant("schema", "main.sales", "analysts", "SELECT")
	if got := privs("table", "main.sales.orders")["analysts"]; !slices.Equal(got, []string{"SELECT<main.sales"}) {
		t.Errorf("inherited: %v", got)
	}
	ws.Revoke("table", "main.sales.orders", "op@example.com", "MODIFY")
	if got := privs("table", "main.sales.orders")["op@example.com"]; !slices.Equal(got, []string{"SELECT", "USE_SCHEMA<main.sales", "USE_CATALOG<main"}) {
		t.Errorf("after revoke: %v", got)
	}
	if _, err := w.Grants.GetEffective(ctx(t), catalog.GetEffectiveRequest{SecurableType: "table", FullName: "main.sales.nope"}); err == nil {
		t.Error("an unknown table has effective permissions")
	}
}
