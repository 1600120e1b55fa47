//go:build cgo

package cmd

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/doctor"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

// doctorWorkspace starts a local workspace with the managed table main.sales.orders, one
// fallback file in its root, and points the environment at it (nothing else of the machine's
// Databricks or cloud settings is seen). Path access inside the table's storage is refused,
// the workspace's default for managed tables.
func doctorWorkspace(t *testing.T) (*workspace.Workspace, string) {
	t.Helper()
	uctest.Isolate(t)
	t.Setenv("DATABRICKS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	root := filepath.Join(t.TempDir(), "orders")
	schema := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer", sd.StringType)
	if _, err := deltatest.Write(root, deltatest.Table{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	file := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	data, err := pqgen.Bytes(file, `[{"id":1,"customer":"a"},{"id":2,"customer":"b"}]`, pqgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pqgen.WriteFile(filepath.Join(root, filepath.FromSlash(fallback.Prefix+"2026/01/part-1.parquet")), data); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Start(workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	if err := ws.RegisterTable(context.Background(), "main.sales.orders", root, true); err != nil {
		t.Fatal(err)
	}
	for _, kv := range ws.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return ws, root
}

func allowPathAccess(ws *workspace.Workspace) {
	u := ws.Warehouse().Unknowns()
	u.PathAccess = warehouse.OverlapAllowed
	ws.Warehouse().SetUnknowns(u)
}

func doctorJSON(t *testing.T, args ...string) (int, *doctor.Report, string) {
	t.Helper()
	code, out, errOut := run(t, append([]string{"doctor", "-o", "json"}, args...)...)
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("doctor -o json: %v\nstdout: %s\nstderr: %s", err, out, errOut)
	}
	if raw["schema_version"] != float64(2) {
		t.Errorf("schema_version %v, want 2", raw["schema_version"])
	}
	var rep doctor.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	return code, &rep, out + errOut
}

// wantCheck checks a check's status, and that its detail or its fix holds each of has.
func wantCheck(t *testing.T, rep *doctor.Report, id string, status doctor.Status, has ...string) *doctor.Check {
	t.Helper()
	c := rep.Check(id)
	if c == nil {
		t.Fatalf("no check %s", id)
	}
	if c.Status != status {
		t.Errorf("check %s: %s (%s; fix %s), want %s", id, c.Status, c.Detail, c.Fix, status)
	}
	for _, s := range has {
		if !strings.Contains(c.Detail, s) && !strings.Contains(c.Fix, s) {
			t.Errorf("check %s: neither detail %q nor fix %q holds %q", id, c.Detail, c.Fix, s)
		}
	}
	return c
}

func wantSteps(t *testing.T, rep *doctor.Report, ready map[string]bool) {
	t.Helper()
	for _, s := range rep.Steps {
		if want, ok := ready[s.Step]; ok && s.Ready != want {
			t.Errorf("step %s ready %v (failed %v), want %v", s.Step, s.Ready, s.Failed, want)
		}
	}
}

// TestDoctorAllPass: against a workspace that allows everything, every check passes (or does
// not apply: no --stage-to, no vended credentials needed), every step is ready, exit 0; the
// delete probe leaves no object behind.
func TestDoctorAllPass(t *testing.T) {
	ws, root := doctorWorkspace(t)
	allowPathAccess(ws)
	enableRowTracking(t, ws)
	code, rep, all := doctorJSON(t, "main.sales.orders")
	if code != ExitOK || !rep.OK {
		t.Fatalf("exit %d, ok %v\n%s", code, rep.OK, all)
	}
	for _, c := range rep.Checks {
		na := c.ID == doctor.CheckStaging || c.ID == doctor.CheckVending
		if c.Status != doctor.OK && !(na && c.Status == doctor.NA && strings.HasPrefix(c.Detail, "not needed: ")) {
			t.Errorf("check %s: %s: %s", c.ID, c.Status, c.Detail)
		}
	}
	if d := rep.Check(doctor.CheckIdentity).Detail; !strings.Contains(d, "operator@example.com") || !strings.Contains(d, "pat auth") {
		t.Errorf("identity: %s", d)
	}
	if strings.Contains(all, ws.Token()) {
		t.Error("the token appears in the output")
	}
	entries, _ := os.ReadDir(filepath.Join(root, "_zerobus"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), doctor.ProbePrefix) {
			t.Errorf("probe object %s left behind", e.Name())
		}
	}
	// The text form: aligned columns, and the summary.
	code, out, _ := run(t, "doctor", "main.sales.orders")
	if code != ExitOK || !strings.Contains(out, "CHECK               STATUS  DETAIL") || !strings.Contains(out, "\npath_access         ok      ") ||
		!strings.Contains(out, "Every step's checks pass.") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
}

// TestDoctorToken: a wrong token and no token fail the identity check with what to set, exit
// 1, and the token is never printed.
func TestDoctorToken(t *testing.T) {
	ws, root := doctorWorkspace(t)
	allowPathAccess(ws)
	t.Setenv("DATABRICKS_TOKEN", "dapi-wrong-0123456789abcdef")
	code, rep, all := doctorJSON(t, "main.sales.orders")
	if code != ExitFailure || rep.OK {
		t.Fatalf("wrong token: exit %d\n%s", code, all)
	}
	wantCheck(t, rep, doctor.CheckIdentity, doctor.Fail, "DATABRICKS_TOKEN")
	if d := rep.Check(doctor.CheckIdentity).Detail; !strings.Contains(d, "authentication failed") {
		t.Errorf("identity detail: %s", d)
	}
	wantSteps(t, rep, map[string]bool{"inspect": false, "reload": false, "verify": false, "cleanup": false})
	for _, s := range rep.Steps {
		if want := map[string]string{"cleanup": "unknown"}[s.Step]; want != "" && s.Status != want || want == "" && s.Status != "blocked" {
			t.Errorf("step %s: %s", s.Step, s.Status)
		}
	}
	if strings.Contains(all, "dapi-wrong-0123456789abcdef") {
		t.Error("the wrong token appears in the output")
	}

	// With --root the storage checks still run, with the store's own credentials.
	code, rep, all = doctorJSON(t, "--table", "main.sales.orders", "--root", root)
	if code != ExitFailure {
		t.Fatalf("wrong token, --root: exit %d\n%s", code, all)
	}
	wantCheck(t, rep, doctor.CheckRead, doctor.OK)
	wantCheck(t, rep, doctor.CheckDelete, doctor.OK)
	wantSteps(t, rep, map[string]bool{"inspect": false, "cleanup": true})

	os.Unsetenv("DATABRICKS_TOKEN")
	code, rep, all = doctorJSON(t, "main.sales.orders")
	if code != ExitFailure {
		t.Fatalf("no token: exit %d\n%s", code, all)
	}
	wantCheck(t, rep, doctor.CheckIdentity, doctor.Fail, "DATABRICKS_TOKEN")
	if c := rep.Check(doctor.CheckWarehouse); c.Status != doctor.Skip {
		t.Errorf("warehouse after a failed identity: %s", c.Status)
	}
	// Text: the failing check and its fix.
	_, out, errOut := run(t, "doctor", "main.sales.orders")
	if !strings.Contains(out, "identity            fail") || !strings.Contains(out, "fix: set DATABRICKS_HOST and DATABRICKS_TOKEN") ||
		!strings.Contains(errOut, "doctor: failed: identity") {
		t.Errorf("text:\n%s\nstderr: %s", out, errOut)
	}
}

// TestDoctorWarehouseStopped: a stopped warehouse that a query does not start fails the
// warehouse check with how to start it; inspect and cleanup are still ready.
func TestDoctorWarehouseStopped(t *testing.T) {
	ws, _ := doctorWorkspace(t)
	allowPathAccess(ws)
	ws.StopWarehouse()
	code, rep, all := doctorJSON(t, "main.sales.orders")
	if code != ExitFailure {
		t.Fatalf("exit %d\n%s", code, all)
	}
	wantCheck(t, rep, doctor.CheckWarehouse, doctor.Fail, "STOPPED", "databricks warehouses start local")
	wantCheck(t, rep, doctor.CheckPathAccess, doctor.Skip, "not run: it needs the warehouse check to pass")
	wantSteps(t, rep, map[string]bool{"inspect": true, "reload": false, "verify": false, "cleanup": true})
}

// TestDoctorWarehouseStoppedOtherAnswers: what a stopped warehouse does is not known for
// certain (docs: a query starts it for an identity that may use it; seen: one that cannot
// start refuses each statement, or answers 503 until the driver gives up). Reported STOPPED
// but answering, the check passes and says the query started it; reported STOPPED and
// answering 503, the check fails with how to start it.
func TestDoctorWarehouseStoppedOtherAnswers(t *testing.T) {
	ws, _ := doctorWorkspace(t)
	allowPathAccess(ws)
	ws.StopWarehouse()
	ws.Warehouse().SetStopped("") // the API still says STOPPED; statements are served
	code, rep, all := doctorJSON(t, "main.sales.orders")
	if code != ExitOK {
		t.Fatalf("stopped but answering: exit %d\n%s", code, all)
	}
	wantCheck(t, rep, doctor.CheckWarehouse, doctor.OK)
	if c := rep.Check(doctor.CheckWarehouse); !strings.Contains(c.Detail, "STOPPED; the query started it") {
		t.Errorf("warehouse check detail %q", c.Detail)
	}

	ws.Warehouse().Inject(warehouse.Fault{Method: "OpenSession", Times: -1, HTTPStatus: http.StatusServiceUnavailable, RetryAfter: "0"})
	code, rep, all = doctorJSON(t, "main.sales.orders")
	if code != ExitFailure {
		t.Fatalf("stopped and answering 503: exit %d\n%s", code, all)
	}
	wantCheck(t, rep, doctor.CheckWarehouse, doctor.Fail, "STOPPED", "databricks warehouses start local")
	if c := rep.Check(doctor.CheckWarehouse); !strings.Contains(c.Detail, "503") {
		t.Errorf("warehouse check detail %q does not name the 503", c.Detail)
	}
}

// TestDoctorLocationOverlapForms: the refusal is recognised in each form Databricks may give it
// (with or without the [CLASS] prefix, with or without a SQLSTATE).
func TestDoctorLocationOverlapForms(t *testing.T) {
	ws, _ := doctorWorkspace(t)
	for _, form := range []warehouse.PathAccess{warehouse.OverlapBracketed, warehouse.OverlapPlain, warehouse.OverlapNoSQLState} {
		u := ws.Warehouse().Unknowns()
		u.PathAccess = form
		ws.Warehouse().SetUnknowns(u)
		code, rep, all := doctorJSON(t, "main.sales.orders")
		if code != ExitFailure {
			t.Fatalf("form %d: exit %d\n%s", form, code, all)
		}
		wantCheck(t, rep, doctor.CheckPathAccess, doctor.Fail, "reload needs --stage-to /Volumes/")
	}
}

// TestDoctorLocationOverlap: with path access refused (the default for managed tables) the
// path-access check fails and prints the reload command with --stage-to; with --stage-to a
// volume the identity may use, every step is ready.
func TestDoctorLocationOverlap(t *testing.T) {
	doctorWorkspace(t)
	code, rep, all := doctorJSON(t, "main.sales.orders")
	if code != ExitFailure {
		t.Fatalf("exit %d\n%s", code, all)
	}
	wantCheck(t, rep, doctor.CheckPathAccess, doctor.Fail, "reload needs --stage-to /Volumes/",
		"zbrecover reload main.sales.orders --stage-to /Volumes/main/sales/staging/zbrecover-orders --yes")
	wantSteps(t, rep, map[string]bool{"inspect": true, "reload": false, "verify": true, "cleanup": true})

	code, rep, all = doctorJSON(t, "main.sales.orders", "--stage-to", "/Volumes/main/sales/staging/zbrecover-orders")
	if code != ExitOK {
		t.Fatalf("--stage-to: exit %d\n%s", code, all)
	}
	wantCheck(t, rep, doctor.CheckPathAccess, doctor.OK, "reload loads through the staged copies in /Volumes/main/sales/staging/zbrecover-orders")
	wantCheck(t, rep, doctor.CheckStaging, doctor.OK, "reload can stage to /Volumes/main/sales/staging/zbrecover-orders: the volume exists", "WRITE_VOLUME on main.sales.staging")
}

// TestDoctorStageToMissingVolume: a --stage-to volume that does not exist fails the staging
// check saying so, with the volumes of the schema the identity can write and the one probably
// meant; no GRANT is suggested for it; path access, refused (LOCATION_OVERLAP), fails too; and
// verify (which stages nothing) stays ready. Without
// --stage-to, the path-access fix names a volume the identity can write.
func TestDoctorStageToMissingVolume(t *testing.T) {
	doctorWorkspace(t)
	code, rep, all := doctorJSON(t, "main.sales.orders", "--stage-to", "/Volumes/main/sales/stagin/x")
	if code != ExitFailure {
		t.Fatalf("exit %d\n%s", code, all)
	}
	c := wantCheck(t, rep, doctor.CheckStaging, doctor.Fail,
		"the volume main.sales.stagin does not exist, or operator@example.com may not see it; the volumes of main.sales it can write: staging")
	if c.Fix != "did you mean --stage-to /Volumes/main/sales/staging/x? Or create it (CREATE VOLUME main.sales.stagin; the identity then needs READ VOLUME and WRITE VOLUME on it)" {
		t.Errorf("fix: %s", c.Fix)
	}
	if strings.Contains(all, "GRANT") {
		t.Errorf("a GRANT suggested for a volume that does not exist:\n%s", all)
	}
	wantCheck(t, rep, doctor.CheckPrivileges, doctor.OK)
	// The warehouse may not read the fallback folder (LOCATION_OVERLAP) and the staging place
	// cannot be used: path access fails, never "reload loads through the staged copies".
	wantCheck(t, rep, doctor.CheckPathAccess, doctor.Fail, "LOCATION_OVERLAP", "--stage-to /Volumes/main/sales/stagin/x cannot be used")
	wantSteps(t, rep, map[string]bool{"inspect": true, "reload": false, "verify": true, "cleanup": true})

	// The text form: four states, a check not run shown as n/a.
	_, out, _ := run(t, "doctor", "main.sales.orders", "--stage-to", "/Volumes/main/sales/stagin/x", "--no-write-probe")
	for _, want := range []string{"\nstaging             fail    the volume main.sales.stagin does not exist",
		"\n                            fix: did you mean --stage-to /Volumes/main/sales/staging/x?",
		"\nvended_credentials  n/a     not needed: the storage is read with the store's own credentials",
		"\ndelete              n/a     not run (--no-write-probe)"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.Contains(line, "  ") && line[0] != ' ' && !strings.HasPrefix(line, "CHECK") &&
			!strings.HasPrefix(line, "STEP") && !strings.HasPrefix(line, "Doctor") && f[1] != "ok" && f[1] != "n/a" && f[1] != "warn" && f[1] != "fail" &&
			f[0] != "inspect" && f[0] != "reload" && f[0] != "verify" && f[0] != "cleanup" && f[0] != "undo" {
			t.Errorf("a check's state is not one of ok, n/a, warn, fail: %q", line)
		}
	}

	_, rep, _ = doctorJSON(t, "main.sales.orders")
	wantCheck(t, rep, doctor.CheckStaging, doctor.NA, "not needed: no --stage-to given")
	wantCheck(t, rep, doctor.CheckPathAccess, doctor.Fail,
		"zbrecover reload main.sales.orders --stage-to /Volumes/main/sales/staging/zbrecover-orders --yes\n(the volumes of main.sales operator@example.com can write: staging;")
	wantCheck(t, rep, doctor.CheckVending, doctor.NA, "not needed: the storage is read with the store's own credentials (Unity Catalog vends none for this table")
}

// TestDoctorPrivileges: a missing privilege fails the check with the GRANT to run; a group's
// grant counts; --no-write-probe leaves cleanup unknown but not failed.
func TestDoctorPrivileges(t *testing.T) {
	ws, _ := doctorWorkspace(t)
	allowPathAccess(ws)
	ws.Revoke("table", "main.sales.orders", "operator@example.com", "MODIFY")
	code, rep, all := doctorJSON(t, "main.sales.orders", "--no-write-probe")
	if code != ExitFailure {
		t.Fatalf("exit %d\n%s", code, all)
	}
	wantCheck(t, rep, doctor.CheckPrivileges, doctor.Fail, "GRANT MODIFY ON TABLE `main`.`sales`.`orders` TO `operator@example.com`")
	wantCheck(t, rep, doctor.CheckDelete, doctor.Skip, "not run (--no-write-probe)")
	ws.Grant("schema", "main.sales", "account users", "ALL_PRIVILEGES")
	code, rep, all = doctorJSON(t, "main.sales.orders", "--no-write-probe")
	if code != ExitOK {
		t.Fatalf("after a grant to account users: exit %d\n%s", code, all)
	}
	for _, s := range rep.Steps {
		if s.Step == "cleanup" && (s.Status != "unknown" || len(s.Unknown) != 1 || s.Unknown[0] != doctor.CheckDelete) {
			t.Errorf("cleanup: %+v", s)
		}
	}
}

func TestDoctorUsage(t *testing.T) {
	for _, args := range [][]string{{"doctor"}, {"doctor", "./some/root"}, {"doctor", "main.sales.orders", "--stage-to", "/Volumes/main"}} {
		if code, _, errOut := run(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
}

func enableRowTracking(t *testing.T, ws *workspace.Workspace) {
	t.Helper()
	if _, err := ws.Warehouse().Engine().Exec(context.Background(), "ALTER TABLE main.sales.orders SET TBLPROPERTIES ('delta.enableRowTracking' = 'true')"); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorTableFeatures: doctor reports row tracking, deletion vectors and change data feed;
// with row tracking off it warns (no step is blocked) and explains the trade-off of enabling
// it on a table Zerobus writes to; with it on, the check passes.
func TestDoctorTableFeatures(t *testing.T) {
	ws, _ := doctorWorkspace(t)
	allowPathAccess(ws)
	code, rep, all := doctorJSON(t, "main.sales.orders")
	if code != ExitOK || !rep.OK {
		t.Fatalf("exit %d\n%s", code, all)
	}
	wantCheck(t, rep, doctor.CheckTableFeatures, doctor.Warn, "MetadataChangedException", "zbrecover never enables it", "before the load")
	if d := rep.Check(doctor.CheckTableFeatures).Detail; !strings.Contains(d, "row tracking off, deletion vectors off, change data feed off") {
		t.Errorf("detail %q", d)
	}
	wantSteps(t, rep, map[string]bool{"undo": true, "reload": true})
	enableRowTracking(t, ws)
	_, rep, _ = doctorJSON(t, "main.sales.orders")
	wantCheck(t, rep, doctor.CheckTableFeatures, doctor.OK)
	if d := rep.Check(doctor.CheckTableFeatures).Detail; !strings.Contains(d, "row tracking on") || !strings.Contains(d, "stable row IDs") {
		t.Errorf("detail with row tracking %q", d)
	}
}
