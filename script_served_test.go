//go:build demo && cgo

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/databricks"
)

// served is a release binary driven from outside against a running `zbrecover demo serve`.
type served struct {
	t       *testing.T
	ctx     context.Context
	release string
	env     map[string]string
	home    string
	state   string
}

func (s *served) run(args ...string) (int, string, string) {
	s.t.Helper()
	cmd := exec.CommandContext(s.ctx, s.release, args...)
	cmd.Env = []string{"HOME=" + s.home, "PATH=" + os.Getenv("PATH"), "XDG_STATE_HOME=" + s.state}
	for k, v := range s.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee) && ee.Exited():
		return ee.ExitCode(), out.String(), errb.String()
	}
	s.t.Fatalf("zbrecover %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
	return 0, "", ""
}

// sql runs a statement on the served warehouse, as another client of the workspace.
func (s *served) sql(stmt string) *databricks.Result {
	s.t.Helper()
	host := strings.TrimPrefix(s.env["DATABRICKS_HOST"], "http://")
	dsn := "http://token:" + s.env["DATABRICKS_TOKEN"] + "@" + host + "/sql/1.0/warehouses/" + s.env["DATABRICKS_WAREHOUSE_ID"]
	wh, err := databricks.OpenDSN(s.ctx, dsn, databricks.Options{})
	if err != nil {
		s.t.Fatal(err)
	}
	defer wh.Close()
	res, err := wh.QueryAll(s.ctx, stmt)
	if err != nil {
		s.t.Fatalf("%s: %v", stmt, err)
	}
	return res
}

// control sends a request to the served workspace's control endpoints (/api/2.0/fake/…):
// body is encoded as JSON; the answer's body is returned. A status other than 2xx fails the
// test.
func (s *served) control(method, path string, body any) string {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(s.ctx, method, s.env["DATABRICKS_HOST"]+"/api/2.0/fake/"+strings.TrimPrefix(path, "/"), r)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.env["DATABRICKS_TOKEN"])
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		s.t.Fatalf("%s /api/2.0/fake/%s: %s: %s", method, path, resp.Status, out)
	}
	return string(out)
}

// apply applies a control document (internal/fakeworkspace.Control) to the served workspace.
func (s *served) apply(doc map[string]any) { s.t.Helper(); s.control(http.MethodPost, "apply", doc) }

// clearFaults removes every warehouse and API fault and trigger.
func (s *served) clearFaults() {
	s.t.Helper()
	s.control(http.MethodDelete, "faults", nil)
	s.control(http.MethodDelete, "api-faults", nil)
	s.control(http.MethodDelete, "triggers", nil)
}

// count runs a one-number query (SELECT count(*) …) on the served warehouse.
func (s *served) count(stmt string) int64 {
	s.t.Helper()
	res := s.sql(stmt)
	if len(res.Rows) != 1 || len(res.Rows[0]) != 1 {
		s.t.Fatalf("%s: %v", stmt, res.Rows)
	}
	switch v := res.Rows[0][0].(type) {
	case int64:
		return v
	case int32:
		return int64(v)
	case float64:
		return int64(v)
	}
	s.t.Fatalf("%s: %v (%T)", stmt, res.Rows[0][0], res.Rows[0][0])
	return 0
}
