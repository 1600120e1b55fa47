package e2etest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/databricks"
)

// Served is a release binary driven from outside against a running `zbrecover demo serve`.
type Served struct {
	T       *testing.T
	Ctx     context.Context
	Release string
	Env     map[string]string
	Home    string
	State   string
}

// Run runs the release binary with args against the served workspace, with its settings
// only, and returns its exit code and output; a process that did not exit by itself (killed,
// or its context done) fails the test.
func (s *Served) Run(args ...string) (int, string, string) {
	s.T.Helper()
	code, out, errOut, err := s.RunErr(args...)
	if err != nil {
		s.T.Fatalf("zbrecover %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	return code, out, errOut
}

// SQL runs a statement on the served warehouse, as another client of the workspace.
func (s *Served) SQL(stmt string) *databricks.Result {
	s.T.Helper()
	host := strings.TrimPrefix(s.Env["DATABRICKS_HOST"], "http://")
	dsn := "http://token:" + s.Env["DATABRICKS_TOKEN"] + "@" + host + "/sql/1.0/warehouses/" + s.Env["DATABRICKS_WAREHOUSE_ID"]
	wh, err := databricks.OpenDSN(s.Ctx, dsn, databricks.Options{})
	if err != nil {
		s.T.Fatal(err)
	}
	defer wh.Close()
	res, err := wh.QueryAll(s.Ctx, stmt)
	if err != nil {
		s.T.Fatalf("%s: %v", stmt, err)
	}
	return res
}

// Control sends a request to the served workspace's Control endpoints (/api/2.0/fake/…):
// body is encoded as JSON; the answer's body is returned. A status other than 2xx fails the
// test.
func (s *Served) Control(method, path string, body any) string {
	s.T.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.T.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(s.Ctx, method, s.Env["DATABRICKS_HOST"]+"/api/2.0/fake/"+strings.TrimPrefix(path, "/"), r)
	if err != nil {
		s.T.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.Env["DATABRICKS_TOKEN"])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.T.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		s.T.Fatalf("%s /api/2.0/fake/%s: %s: %s", method, path, resp.Status, out)
	}
	return string(out)
}

// Apply applies a control document (internal/fake/workspace.Control) to the served workspace.
func (s *Served) Apply(doc map[string]any) { s.T.Helper(); s.Control(http.MethodPost, "apply", doc) }

// ClearFaults removes every warehouse and API fault and trigger.
func (s *Served) ClearFaults() {
	s.T.Helper()
	s.Control(http.MethodDelete, "faults", nil)
	s.Control(http.MethodDelete, "api-faults", nil)
	s.Control(http.MethodDelete, "triggers", nil)
}

// Count runs a one-number query (SELECT Count(*) …) on the served warehouse.
func (s *Served) Count(stmt string) int64 {
	s.T.Helper()
	return s.Numbers(stmt, 1)[0]
}

// Numbers runs a query that answers one row of n numbers (counts) on the served warehouse.
func (s *Served) Numbers(stmt string, n int) []int64 {
	s.T.Helper()
	res := s.SQL(stmt)
	if len(res.Rows) != 1 || len(res.Rows[0]) != n {
		s.T.Fatalf("%s: %v", stmt, res.Rows)
	}
	out := make([]int64, n)
	for i, v := range res.Rows[0] {
		switch v := v.(type) {
		case int64:
			out[i] = v
		case int32:
			out[i] = int64(v)
		case float64:
			out[i] = int64(v)
		default:
			s.T.Fatalf("%s: %v (%T)", stmt, v, v)
		}
	}
	return out
}

// NewServed is the release binary driven against the served workspace whose settings env
// holds, with a home and a state directory of its own (so its own journal).
func NewServed(ctx context.Context, t *testing.T, release string, env map[string]string) *Served {
	return &Served{T: t, Ctx: ctx, Release: release, Env: env, Home: t.TempDir(), State: t.TempDir()}
}
