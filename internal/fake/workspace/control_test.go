package workspace_test

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/databricks/databricks-sdk-go/service/files"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
)

// call sends a request to the workspace with its token (or none) and decodes a JSON answer.
func call(t *testing.T, ws *workspace.Workspace, method, path, body string, token bool) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), method, ws.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token {
		req.Header.Set("Authorization", "Bearer "+ws.Token())
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := map[string]any{}
	if len(bytes.TrimSpace(b)) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %s: %v", method, path, b, err)
		}
	}
	return resp.StatusCode, m
}

func mustCall(t *testing.T, ws *workspace.Workspace, method, path, body string) map[string]any {
	t.Helper()
	status, m := call(t, ws, method, path, body, true)
	if status != http.StatusOK {
		t.Fatalf("%s %s %s = %d %v", method, path, body, status, m)
	}
	return m
}

func list(m map[string]any, key string) []map[string]any {
	var out []map[string]any
	items, _ := m[key].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any))
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func historyOps(t *testing.T, db *sql.DB, table string) (ops, metas []string) {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), "DESCRIBE HISTORY "+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, c := range cols {
			switch c {
			case "operation":
				ops = append(ops, fmt.Sprint(vals[i]))
			case "userMetadata":
				if vals[i] == nil {
					metas = append(metas, "")
				} else {
					metas = append(metas, fmt.Sprint(vals[i]))
				}
			}
		}
	}
	return ops, metas
}

// TestControlEndpoints: every control endpoint changes the running workspace, through HTTP
// with the workspace's token, and its effect shows through the SQL driver or the APIs.
func TestControlEndpoints(t *testing.T) {
	ws := start(t, workspace.Options{})
	if err := ws.RegisterTable(ctx(t), "main.sales.orders", ordersRoot(t), true); err != nil {
		t.Fatal(err)
	}
	db := openSQL(t, ws)
	if status, _ := call(t, ws, "GET", "/api/2.0/fake/faults", "", false); status != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", status)
	}

	// Faults: add, see fire, list with counts, clear.
	mustCall(t, ws, "POST", "/api/2.0/fake/faults", `{"method":"ExecuteStatement","match":"(?i)^SELECT 42","times":1,"action":"error",`+
		`"error":{"class":"X_INJECTED","sqlstate":"XX000","message":"boom"}}`)
	var n int
	if err := db.QueryRowContext(ctx(t), "SELECT 42").Scan(&n); err == nil || !strings.Contains(err.Error(), "[X_INJECTED] boom") {
		t.Errorf("SELECT 42 with the fault = %v", err)
	}
	faults := list(mustCall(t, ws, "GET", "/api/2.0/fake/faults", ""), "faults")
	if len(faults) != 1 || faults[0]["fired"] != 1.0 || faults[0]["seen"] != 1.0 || faults[0]["action"] != "error" || faults[0]["id"] != 1.0 {
		t.Errorf("faults = %v", faults)
	}
	if status, m := call(t, ws, "POST", "/api/2.0/fake/faults", `{"action":"explode"}`, true); status != http.StatusBadRequest || m["error_code"] != "INVALID_PARAMETER_VALUE" {
		t.Errorf("a bad fault = %d %v", status, m)
	}
	if status, _ := call(t, ws, "POST", "/api/2.0/fake/faults", `{"action":"drop_request","tmes":3}`, true); status != http.StatusBadRequest {
		t.Errorf("a misspelt member = %d, want 400", status)
	}
	mustCall(t, ws, "DELETE", "/api/2.0/fake/faults", "")
	if faults := list(mustCall(t, ws, "GET", "/api/2.0/fake/faults", ""), "faults"); len(faults) != 0 {
		t.Errorf("after DELETE: %v", faults)
	}

	// Unknowns: a partial document changes only what it names.
	u := mustCall(t, ws, "PATCH", "/api/2.0/fake/unknowns", `{"history_user_name":"app-1","glob_paths":true}`)
	if u["history_user_name"] != "app-1" || u["glob_paths"] != true || u["path_access"] != "bracketed" {
		t.Errorf("unknowns after PATCH = %v", u)
	}
	if got := ws.Warehouse().Unknowns(); got.HistoryUserName != "app-1" || !got.GlobPaths {
		t.Errorf("warehouse unknowns = %+v", got)
	}
	if status, _ := call(t, ws, "PATCH", "/api/2.0/fake/unknowns", `{"history_username":"x"}`, true); status != http.StatusBadRequest {
		t.Errorf("a misspelt unknown = %d, want 400", status)
	}

	// Look-alike now.
	v := mustCall(t, ws, "POST", "/api/2.0/fake/lookalike", `{"table":"main.sales.orders","rows":2,"user_metadata":"other run"}`)
	ops, metas := historyOps(t, db, "main.sales.orders")
	if v["version"] != 2.0 || ops[0] != "COPY INTO" || metas[0] != "other run" {
		t.Errorf("look-alike = %v; history %v %v", v, ops, metas)
	}

	// Triggers: a Zerobus burst before each DESCRIBE HISTORY.
	mustCall(t, ws, "POST", "/api/2.0/fake/triggers", `{"match":"(?i)^DESCRIBE HISTORY","table":"main.sales.orders","zerobus_versions":5,"times":-1}`)
	ops, _ = historyOps(t, db, "main.sales.orders")
	// The registered table's history in the warehouse starts at the look-alike.
	if len(ops) != 6 || ops[0] != "WRITE" || ops[5] != "COPY INTO" {
		t.Errorf("history after a burst = %v", ops)
	}
	trs := list(mustCall(t, ws, "GET", "/api/2.0/fake/triggers", ""), "triggers")
	if len(trs) != 1 || trs[0]["fired"] != 1.0 || trs[0]["zerobus_versions"] != 5.0 {
		t.Errorf("triggers = %v", trs)
	}
	mustCall(t, ws, "DELETE", "/api/2.0/fake/triggers", "")

	// Zerobus: start at 1 ms, stop, nothing more after the stop.
	zb := mustCall(t, ws, "POST", "/api/2.0/fake/zerobus", `{"table":"main.sales.orders","interval_ms":1}`)
	path := fmt.Sprintf("/api/2.0/fake/zerobus/%v", zb["id"])
	waitFor(t, "20 Zerobus versions", func() bool {
		ws := list(mustCall(t, ws, "GET", "/api/2.0/fake/zerobus", ""), "writers")
		return len(ws) == 1 && ws[0]["versions"].(float64) >= 20
	})
	stopped := mustCall(t, ws, "DELETE", path, "")
	if stopped["running"] != false {
		t.Errorf("stopped writer = %v", stopped)
	}
	if ws := list(mustCall(t, ws, "GET", "/api/2.0/fake/zerobus", ""), "writers"); ws[0]["versions"] != stopped["versions"] {
		t.Errorf("versions after the stop: %v, at the stop %v", ws[0]["versions"], stopped["versions"])
	}
	if status, _ := call(t, ws, "DELETE", "/api/2.0/fake/zerobus/99", "", true); status != http.StatusNotFound {
		t.Errorf("stopping an unknown writer = %d", status)
	}
	if status, _ := call(t, ws, "POST", "/api/2.0/fake/zerobus", `{"table":"main.sales.nope"}`, true); status != http.StatusBadRequest {
		t.Errorf("a writer on a missing table = %d", status)
	}

	// API faults and latency on the Files API.
	if _, err := ws.CreateVolume("main.sales.staging"); err != nil {
		t.Fatal(err)
	}
	mustCall(t, ws, "POST", "/api/2.0/fake/api-faults", `{"method":"PUT","path":"^/api/2.0/fs/files/","action":"http","http_status":429,"retry_after":"3"}`)
	req, _ := http.NewRequestWithContext(ctx(t), "PUT", ws.URL()+"/api/2.0/fs/files/Volumes/main/sales/staging/a.parquet", strings.NewReader("data"))
	req.Header.Set("Authorization", "Bearer "+ws.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || !strings.Contains(string(body), "REQUEST_LIMIT_EXCEEDED") {
		t.Errorf("throttled PUT = %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	af := list(mustCall(t, ws, "GET", "/api/2.0/fake/api-faults", ""), "api_faults")
	if len(af) != 1 || af[0]["fired"] != 1.0 || af[0]["http_status"] != 429.0 {
		t.Errorf("api faults = %v", af)
	}
	mustCall(t, ws, "DELETE", "/api/2.0/fake/api-faults", "")
	mustCall(t, ws, "PUT", "/api/2.0/fake/latency", `{"files_ms":40}`)
	began := time.Now()
	if status, _ := call(t, ws, "HEAD", "/api/2.0/fs/directories/Volumes/main/sales/staging", "", true); status != http.StatusOK {
		t.Errorf("HEAD = %d", status)
	}
	if el := time.Since(began); el < 40*time.Millisecond {
		t.Errorf("a Files API request with 40 ms latency took %v", el)
	}
	if l := mustCall(t, ws, "GET", "/api/2.0/fake/latency", ""); l["files_ms"] != 40.0 {
		t.Errorf("latency = %v", l)
	}
	mustCall(t, ws, "PUT", "/api/2.0/fake/latency", `{"files_ms":0}`)
}

// TestApplyControlDocument: a whole document applies at once, and a document with a wrong
// part applies nothing.
func TestApplyControlDocument(t *testing.T) {
	root := ordersRoot(t) // before start: the Zerobus writer the document starts stops with ws, before root goes
	ws := start(t, workspace.Options{})
	if err := ws.RegisterTable(ctx(t), "main.sales.orders", root, true); err != nil {
		t.Fatal(err)
	}
	bad := `{"unknowns":{"glob_paths":true},"faults":[{"action":"drop_request"}],"triggers":[{"match":"x","zerobus_versions":3}]}`
	if status, _ := call(t, ws, "POST", "/api/2.0/fake/apply", bad, true); status != http.StatusBadRequest {
		t.Errorf("a document with a trigger lacking its table = %d, want 400", status)
	}
	if ws.Warehouse().Unknowns().GlobPaths || len(ws.Warehouse().Faults()) != 0 {
		t.Error("a rejected document applied some of its parts")
	}
	doc := `{
	  "unknowns": {"refuse_user_metadata": true, "copy_conflict": "none"},
	  "faults": [{"match": "(?i)^COPY INTO", "action": "commit_then_error", "times": -1},
	             {"method": "GetOperationStatus", "action": "http", "http_status": 503, "retry_after": "0", "percent": 20, "seed": 3, "times": -1}],
	  "api_faults": [{"method": "PUT", "path": "^/api/2.0/fs/", "action": "http", "http_status": 503, "percent": 50, "times": -1}],
	  "latency": {"files_ms": 5},
	  "zerobus": [{"table": "main.sales.orders", "interval_ms": 2}],
	  "triggers": [{"match": "(?i)^COPY INTO", "lookalike": {"operation": "MERGE", "user_name": "etl@example.com"}, "times": -1}]
	}`
	c, err := workspace.DecodeControl([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Apply(ctx(t), c); err != nil {
		t.Fatal(err)
	}
	u := ws.Warehouse().Unknowns()
	if !u.RefuseUserMetadata || u.CopyConflict != warehouse.ConflictNone {
		t.Errorf("unknowns = %+v", u)
	}
	fs := ws.Warehouse().Faults()
	if len(fs) != 2 || fs[0].Fault().CommitThenError == nil || fs[0].Fault().CommitThenError.Class != "DELTA_POST_COMMIT_HOOK_FAILED" || fs[1].Fault().Percent != 20 {
		t.Errorf("faults = %d", len(fs))
	}
	if af := ws.APIFaults(); len(af) != 1 || af[0].Fault().Percent != 50 {
		t.Errorf("api faults = %v", af)
	}
	if ws.CurrentLatency().Files != 5*time.Millisecond {
		t.Errorf("latency = %v", ws.CurrentLatency())
	}
	if zs := ws.ZerobusWriters(); len(zs) != 1 || !zs[0].Running {
		t.Errorf("writers = %+v", zs)
	}
	if trs := ws.Warehouse().Triggers(); len(trs) != 1 || trs[0].Trigger().Lookalike.UserName != "etl@example.com" {
		t.Errorf("triggers = %v", trs)
	}
	if _, err := workspace.DecodeControl([]byte(`{"fault":[]}`)); err == nil {
		t.Error("a misspelt part was accepted")
	}
}

// TestAPIFaultsAndLatency: throttling the Files API on a share of the requests is
// reproducible and the SDK's retries get through it; a latency applies to every request;
// without faults the same uploads go straight through.
func TestAPIFaultsAndLatency(t *testing.T) {
	ws := start(t, workspace.Options{})
	if _, err := ws.Warehouse().Engine().Exec(ctx(t), "CREATE SCHEMA main.sales"); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.CreateVolume("main.sales.staging"); err != nil {
		t.Fatal(err)
	}
	w := sdkClient(t, ws)
	upload := func(name string) error {
		return w.Files.Upload(ctx(t), files.UploadRequest{FilePath: "/Volumes/main/sales/staging/" + name, Contents: seekCloser{strings.NewReader("x")}, Overwrite: true})
	}
	// Which of 40 PUTs a 20% fault throttles depends only on the seed.
	pattern := func(seed uint64) string {
		ws.ClearAPIFaults()
		if _, err := ws.InjectAPI(workspace.APIFault{Method: "PUT", Path: "^/api/2.0/fs/files/", Times: -1, Percent: 20, Seed: seed, HTTPStatus: 429, RetryAfter: "1"}); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i := 0; i < 40; i++ {
			status, _ := call(t, ws, "PUT", fmt.Sprintf("/api/2.0/fs/files/Volumes/main/sales/staging/f%d?overwrite=true", i), "x", true)
			switch status {
			case http.StatusTooManyRequests:
				b.WriteByte('x')
			case http.StatusNoContent:
				b.WriteByte('.')
			default:
				t.Fatalf("PUT %d = %d", i, status)
			}
		}
		return b.String()
	}
	a, b, other := pattern(11), pattern(11), pattern(12)
	if n := strings.Count(a, "x"); a != b || n < 3 || n > 16 || a == other {
		t.Errorf("throttled PUTs: seed 11 %s and %s, seed 12 %s", a, b, other)
	}
	// The SDK retries a throttled upload and gets through.
	ws.ClearAPIFaults()
	f429, _ := ws.InjectAPI(workspace.APIFault{Method: "PUT", Path: "^/api/2.0/fs/files/", HTTPStatus: 429, RetryAfter: "0"})
	if err := upload("after-429"); err != nil || f429.Fired() != 1 {
		t.Errorf("upload through one 429 = %v (fired %d)", err, f429.Fired())
	}
	ws.ClearAPIFaults()
	f, _ := ws.InjectAPI(workspace.APIFault{Path: "^/api/2.0/fs/", HTTPStatus: 503, RetryAfter: "0"})
	if err := upload("after-503"); err != nil || f.Fired() != 1 {
		t.Errorf("upload through one 503 = %v (fired %d)", err, f.Fired())
	}
	ws.ClearAPIFaults()
	ws.SetLatency(workspace.Latency{Files: 20 * time.Millisecond})
	began := time.Now()
	for i := 0; i < 5; i++ {
		if err := upload(fmt.Sprintf("slow%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if el := time.Since(began); el < 100*time.Millisecond {
		t.Errorf("5 uploads at 20 ms latency took %v", el)
	}
	ws.SetLatency(workspace.Latency{})
	// A PUT cut before the workspace writes nothing; one whose answer is lost wrote its file.
	put := func(name string) error {
		req, _ := http.NewRequestWithContext(ctx(t), "PUT", ws.URL()+"/api/2.0/fs/files/Volumes/main/sales/staging/"+name, strings.NewReader("data"))
		req.Header.Set("Authorization", "Bearer "+ws.Token())
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for name, f := range map[string]workspace.APIFault{"cut": {DropRequest: true}, "lost": {DropResponse: true}} {
		ws.ClearAPIFaults()
		f.Method = "PUT"
		if _, err := ws.InjectAPI(f); err != nil {
			t.Fatal(err)
		}
		if err := put(name); err == nil {
			t.Errorf("%s: the PUT got an answer", name)
		}
		status, _ := call(t, ws, "HEAD", "/api/2.0/fs/files/Volumes/main/sales/staging/"+name, "", true)
		if want := map[string]int{"cut": 404, "lost": 200}[name]; status != want {
			t.Errorf("%s: HEAD after the PUT = %d, want %d", name, status, want)
		}
	}
	// Unity Catalog's endpoints take faults too.
	ws.ClearAPIFaults()
	if _, err := ws.InjectAPI(workspace.APIFault{Path: "^/api/2.1/unity-catalog/", HTTPStatus: 503}); err != nil {
		t.Fatal(err)
	}
	if status, m := call(t, ws, "GET", "/api/2.1/unity-catalog/tables/main.sales.x", "", true); status != 503 || m["error_code"] != "TEMPORARILY_UNAVAILABLE" {
		t.Errorf("Unity Catalog with a 503 fault = %d %v", status, m)
	}
	if _, err := ws.InjectAPI(workspace.APIFault{}); err == nil {
		t.Error("an API fault without an action was accepted")
	}
}

// seekCloser is a rewindable upload body, as the SDK needs to retry an upload.
type seekCloser struct{ *strings.Reader }

func (seekCloser) Close() error { return nil }
