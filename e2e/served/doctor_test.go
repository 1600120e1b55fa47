//go:build demo && cgo

package served

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
)

// doctorReport is the part of `zbrecover doctor -o json` the test reads.
type doctorReport struct {
	SchemaVersion int  `json:"schema_version"`
	OK            bool `json:"ok"`
	Checks        []struct {
		ID, Status, Detail, Fix string
	} `json:"checks"`
}

func (r doctorReport) status(id string) (string, string) {
	for _, c := range r.Checks {
		if c.ID == id {
			return c.Status, c.Fix
		}
	}
	return "", ""
}

// TestDemoServeDoctor runs the release binary's doctor against `zbrecover demo serve`: path
// access refused (the default for a managed table) fails with the ready --stage-to command;
// with --stage-to every check passes (vended credentials, not needed, are n/a); a warehouse stopped through the SQL warehouses API and
// a wrong token each fail their check, exit 1.
func TestDemoServeDoctor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)

	root := filepath.Join(t.TempDir(), "orders")
	// Row tracking on: the table_features check passes too (off, it warns).
	if _, err := deltatest.Write(root, deltatest.Table{Schema: e2etest.TableSchema, Configuration: map[string]string{"delta.enableRowTracking": "true"}}); err != nil {
		t.Fatal(err)
	}
	data, err := pqgen.Bytes(e2etest.OldFiles, `[{"id":1,"customer_id":"c1","amount":"1.25"}]`, pqgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pqgen.WriteFile(filepath.Join(root, filepath.FromSlash(fallback.Prefix+"2026/01/01/old-1.parquet")), data); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root).Env

	home := t.TempDir()
	doctor := func(token string, args ...string) (int, doctorReport, string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, release, append([]string{"doctor", "main.sales.orders", "-o", "json"}, args...)...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "DATABRICKS_HOST=" + env["DATABRICKS_HOST"],
			"DATABRICKS_WAREHOUSE_ID=" + env["DATABRICKS_WAREHOUSE_ID"], "DATABRICKS_TOKEN=" + token}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		code := 0
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !ee.Exited() {
				t.Fatalf("doctor: %v\n%s", err, errb.String())
			}
			code = ee.ExitCode()
		}
		var rep doctorReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.SchemaVersion != 2 {
			t.Fatalf("doctor -o json: %v (schema_version %d)\nstdout: %s\nstderr: %s", err, rep.SchemaVersion, out.String(), errb.String())
		}
		return code, rep, out.String() + errb.String()
	}
	token := env["DATABRICKS_TOKEN"]

	code, rep, all := doctor(token)
	if st, fix := rep.status("path_access"); code != 1 || st != "fail" ||
		!strings.Contains(fix, "zbrecover reload main.sales.orders --stage-to /Volumes/main/sales/staging/zbrecover-orders --yes") {
		t.Fatalf("LOCATION_OVERLAP: exit %d, path_access %s\n%s", code, st, all)
	}
	code, rep, all = doctor(token, "--stage-to", "/Volumes/main/sales/staging/zbrecover-orders")
	if code != 0 || !rep.OK {
		t.Fatalf("--stage-to: exit %d\n%s", code, all)
	}
	for _, c := range rep.Checks {
		if c.Status != "ok" && !(c.ID == "vended_credentials" && c.Status == "n/a") {
			t.Errorf("--stage-to: check %s is %s: %s", c.ID, c.Status, c.Detail)
		}
	}

	code, rep, all = doctor("dapi-not-the-token")
	if st, fix := rep.status("identity"); code != 1 || st != "fail" || !strings.Contains(fix, "DATABRICKS_TOKEN") || strings.Contains(all, "dapi-not-the-token") {
		t.Fatalf("wrong token: exit %d, identity %s\n%s", code, st, all)
	}

	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env["DATABRICKS_HOST"]+"/api/2.0/sql/warehouses/"+env["DATABRICKS_WAREHOUSE_ID"]+"/stop", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("stop the warehouse: %v %v", err, resp)
	}
	resp.Body.Close()
	code, rep, all = doctor(token, "--stage-to", "/Volumes/main/sales/staging/zbrecover-orders")
	if st, fix := rep.status("warehouse"); code != 1 || st != "fail" || !strings.Contains(fix, "STOPPED") {
		t.Fatalf("stopped warehouse: exit %d, warehouse %s\n%s", code, st, all)
	}
	if strings.Contains(all, token) {
		t.Error("the token appears in doctor's output")
	}
}
