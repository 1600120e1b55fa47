//go:build demo

package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

// TestDemoServeFaults: demo serve --faults FILE applies the document once the tables are
// registered; a wrong document stops it before it serves.
func TestDemoServeFaults(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "orders")
	if _, err := deltatest.Write(root, deltatest.Table{Schema: sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer", sd.StringType)}); err != nil {
		t.Fatal(err)
	}
	doc := filepath.Join(dir, "faults.json")
	if err := os.WriteFile(doc, []byte(`{
	  "unknowns": {"history_user_name": "app-id-7"},
	  "faults": [{"match": "(?i)^COPY INTO", "action": "commit_then_bad_conn"}],
	  "api_faults": [{"method": "PUT", "path": "^/api/2.0/fs/", "action": "http", "http_status": 429, "percent": 20, "times": -1}],
	  "latency": {"files_ms": 20},
	  "zerobus": [{"table": "main.sales.orders", "interval_ms": 5}],
	  "triggers": [{"match": "(?i)^DESCRIBE HISTORY", "table": "main.sales.orders", "zerobus_versions": 10}]
	}`), 0o600); err != nil {
		t.Fatal(err)
	}
	io, _, _, errOut := iostreams.Test()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var checked bool
	o := &DemoServeOptions{F: NewFactory(io), Tables: []string{"main.sales.orders=" + root}, Listen: "127.0.0.1:0", WarehouseID: "local", Faults: doc,
		Ready: func(ws *workspace.Workspace) {
			defer cancel()
			checked = true
			wh := ws.Warehouse()
			if wh.Unknowns().HistoryUserName != "app-id-7" || len(wh.Faults()) != 1 || !wh.Faults()[0].Fault().CommitThenBadConn {
				t.Errorf("warehouse: unknowns %+v, %d faults", wh.Unknowns(), len(wh.Faults()))
			}
			if af := ws.APIFaults(); len(af) != 1 || af[0].Fault().Percent != 20 || ws.CurrentLatency().Files != 20*time.Millisecond {
				t.Errorf("API faults %d, latency %v", len(af), ws.CurrentLatency())
			}
			if zs := ws.ZerobusWriters(); len(zs) != 1 || !zs[0].Running || len(wh.Triggers()) != 1 {
				t.Errorf("writers %+v, %d triggers", zs, len(wh.Triggers()))
			}
		}}
	if err := demoServe(c, o); err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("demo serve never served")
	}
	if !strings.Contains(errOut.String(), "applied "+doc+": 1 faults, 1 API faults, 1 triggers, 1 Zerobus writers") {
		t.Errorf("stderr = %s", errOut)
	}

	if err := os.WriteFile(doc, []byte(`{"faults": [{"action": "commit_then_error"}], "zerobus": [{"table": "main.sales.missing"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	o.Ready = func(*workspace.Workspace) { t.Error("demo serve served with a wrong document") }
	if err := demoServe(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--faults") || !strings.Contains(err.Error(), "zerobus[0]") {
		t.Errorf("wrong document: %v", err)
	}
	if err := os.WriteFile(doc, []byte(`{"faults": [], "latency": {"file_ms": 3}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := demoServe(context.Background(), o); err == nil || !strings.Contains(err.Error(), "file_ms") {
		t.Errorf("misspelt member: %v", err)
	}
}
