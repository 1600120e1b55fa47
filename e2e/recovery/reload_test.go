//go:build cgo

package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/journal"
)

// recovery is a table whose latest schema broke the producers, with fallback files in two
// producer schemas over three date folders, on a local workspace.
type recovery struct {
	ws    *workspace.Workspace
	root  string
	table string
	rows  int // fallback rows in all
	ids   map[int64]bool
	files map[string]int // files per group kind: "old" and "new"
}

// newRecovery writes nOld + nNew fallback files (2 rows each, unique ids) under the root of a
// managed table of a new local workspace, and points the environment at the workspace and a
// fresh journal directory. Path access inside the table's storage is allowed (whether
// Databricks allows it is unknown; TestReloadLocationOverlapStopsBeforeLoading covers the
// refusal).
func newRecovery(t *testing.T, nOld, nNew int) *recovery {
	t.Helper()
	root := filepath.Join(t.TempDir(), "orders")
	if _, err := deltatest.Write(root, deltatest.Table{Schema: e2etest.TableSchema, ID: "0b6c1c8e-0000-4000-8000-00000000e2e1",
		Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	r := &recovery{root: root, table: "main.sales.orders", ids: map[int64]bool{}, files: map[string]int{}}
	id := int64(0)
	write := func(kind string, i int, sc *arrow.Schema) {
		folder := fmt.Sprintf("2026/01/%02d/", 1+i%3)
		var rows []string
		for k := 0; k < 2; k++ {
			id++
			r.ids[id] = true
			if kind == "old" {
				rows = append(rows, fmt.Sprintf(`{"id":%d,"customer_id":"c%d","amount":"%d.25"}`, id, id, id%100))
			} else {
				rows = append(rows, fmt.Sprintf(`{"id":%d,"customer_key":"k%d","amount":"%d.5000","gift":%v}`, id, id, id%100, id%2 == 0))
			}
		}
		data, err := pqgen.Bytes(sc, "["+strings.Join(rows, ",")+"]", pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.FromSlash(fallback.Prefix+folder), fmt.Sprintf("%s-%05d.parquet", kind, i))
		if err := pqgen.WriteFile(p, data); err != nil {
			t.Fatal(err)
		}
		r.rows += 2
		r.files[kind]++
	}
	for i := 0; i < nOld; i++ {
		write("old", i, e2etest.OldFiles)
	}
	for i := 0; i < nNew; i++ {
		write("new", i, e2etest.NewFiles)
	}
	ws := startWorkspace(t, workspace.Options{}, r.table, root)
	r.ws = ws
	return r
}

// startWorkspace starts a local workspace (stopped when the test ends) with table registered
// as a managed table at root, path reads inside its storage allowed, and points the process
// environment at it, with a journal of the test's own and no profile file.
func startWorkspace(t *testing.T, opts workspace.Options, table, root string) *workspace.Workspace {
	t.Helper()
	ws, err := workspace.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	if err := ws.RegisterTable(context.Background(), table, root, true); err != nil {
		t.Fatal(err)
	}
	u := ws.Warehouse().Unknowns()
	u.PathAccess = warehouse.OverlapAllowed
	ws.Warehouse().SetUnknowns(u)
	for _, kv := range ws.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("DATABRICKS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	return ws
}

func (r *recovery) exec(t testing.TB, stmt string) {
	t.Helper()
	if _, err := r.ws.Warehouse().Engine().Exec(context.Background(), stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// tableIDs reads the table back: the number of rows and of distinct ids, and ids missing.
func (r *recovery) check(t testing.TB) (rows, distinct, missing int) {
	t.Helper()
	res, err := r.ws.Warehouse().Engine().Exec(context.Background(), "SELECT id FROM "+r.table)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for _, row := range res.Rows {
		n, _ := row[0].(int64)
		seen[n]++
		rows++
	}
	for id := range r.ids {
		if seen[id] == 0 {
			missing++
		}
	}
	return rows, len(seen), missing
}

// copyStatements counts the COPY INTO statements (not VALIDATE) the warehouse ran since from.
func (r *recovery) copyStatements(from int) int {
	n := 0
	for _, s := range r.ws.Statements()[from:] {
		q := strings.ToUpper(s.SQL)
		if strings.HasPrefix(strings.TrimSpace(q), "COPY INTO") && !strings.Contains(q, "VALIDATE") {
			n++
		}
	}
	return n
}

// writes counts the statements of sts that are not reads (DESCRIBE, SHOW, SELECT, the
// history): what a dry run must never send.
func writes(sts []warehouse.Statement) int {
	n := 0
	for _, s := range sts {
		q := strings.ToUpper(strings.TrimSpace(s.SQL))
		if !strings.HasPrefix(q, "DESCRIBE") && !strings.HasPrefix(q, "SHOW") && !strings.HasPrefix(q, "SELECT") {
			n++
		}
	}
	return n
}

type reloadJSON struct {
	Run        string `json:"run"`
	Resumed    bool   `json:"resumed"`
	Statements int    `json:"load_statements"`
	Verified   int    `json:"verified_batches"`
	Unknown    int    `json:"unknown_batches"`
	Status     string `json:"status"`
	Guarantee  string `json:"guarantee"`
	Batches    []struct {
		Batch    int    `json:"batch"`
		Status   string `json:"status"`
		Files    int    `json:"files"`
		Inserted *int64 `json:"inserted_rows"`
	} `json:"batches"`
}

func decodeReload(t *testing.T, out string) reloadJSON {
	t.Helper()
	var r reloadJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("reload JSON: %v\n%s", err, out)
	}
	return r
}

// TestReloadHappyPath: inspect → ALTER TABLE → reload --rename → every fallback row is in the
// table exactly once, the journal says verified; a second reload sends no load statement.
func TestReloadHappyPath(t *testing.T) {
	if testing.Short() {
		t.Skip("2,500 files")
	}
	r := newRecovery(t, 1300, 1250)
	code, out, errOut := runZbrecover(t, "inspect", r.table, "--from", "warehouse")
	if code != 3 || !strings.Contains(out, "probably renamed") || !strings.Contains(out, "gift") {
		t.Fatalf("inspect: exit %d\n%s%s", code, out, errOut)
	}
	// Without the fix, reload refuses before running anything (exit 3).
	before := len(r.ws.Statements())
	code, out, errOut = runZbrecover(t, "reload", r.table, "--yes")
	if code != 3 || r.copyStatements(before) != 0 || !strings.Contains(out+errOut, "ALTER TABLE") {
		t.Fatalf("blocked reload: exit %d, %d COPY INTO\n%s%s", code, r.copyStatements(before), out, errOut)
	}
	// --dry-run executes nothing.
	before = len(r.ws.Statements())
	code, out, errOut = runZbrecover(t, "reload", r.table, "--rename", "customer_id=customer_key", "--dry-run")
	if code != 3 || writes(r.ws.Statements()[before:]) != 0 { // reads only: DESCRIBE, current user, the history
		t.Fatalf("dry run: exit %d, statements %v\n%s%s", code, r.ws.Statements()[before:], out, errOut)
	}

	r.exec(t, "ALTER TABLE main.sales.orders ADD COLUMNS (gift BOOLEAN)")
	// Without a terminal and without --yes, reload refuses (exit 2).
	if code, _, errOut := runZbrecover(t, "reload", r.table, "--rename", "customer_id=customer_key"); code != 2 || !strings.Contains(errOut, "--yes") {
		t.Fatalf("no --yes: exit %d: %s", code, errOut)
	}
	before = len(r.ws.Statements())
	code, out, errOut = runZbrecover(t, "-o", "json", "reload", r.table, "--rename", "customer_id=customer_key", "--yes")
	if code != 0 {
		t.Fatalf("reload: exit %d\n%s%s", code, out, errOut)
	}
	rep := decodeReload(t, out)
	// Σ⌈files/1000⌉ over (group, folder): 1300 old files in 3 folders (434, 433, 433) and 1250
	// new ones (417, 417, 416) fit one statement each.
	if rep.Statements != 6 || rep.Verified != 6 || rep.Unknown != 0 || rep.Status != "verified" || r.copyStatements(before) != 6 ||
		!strings.Contains(rep.Guarantee, "at most once") {
		t.Errorf("report %+v, %d COPY INTO sent", rep, r.copyStatements(before))
	}
	rows, distinct, missing := r.check(t)
	if rows != r.rows || distinct != r.rows || missing != 0 {
		t.Errorf("table: %d rows, %d distinct ids, %d missing; want %d", rows, distinct, missing, r.rows)
	}

	if code, out, errOut := runZbrecover(t, "verify", r.table); code != 0 || !strings.Contains(out, "6 batches, 0 failed") {
		t.Errorf("verify: exit %d\n%s%s", code, out, errOut)
	}
	// A second reload loads nothing and says why.
	before = len(r.ws.Statements())
	code, out, errOut = runZbrecover(t, "reload", r.table, "--rename", "customer_id=customer_key", "--yes")
	if code != 0 || r.copyStatements(before) != 0 || !strings.Contains(errOut, "loaded by earlier runs") {
		t.Errorf("second reload: exit %d, %d COPY INTO\n%s%s", code, r.copyStatements(before), out, errOut)
	}
}

// reloadSmall is a small recovery already fixed (ALTER TABLE done), reloaded with batches of
// 10 files so that one run has several statements.
func reloadSmall(t *testing.T) *recovery {
	r := newRecovery(t, 30, 0)
	return r
}

func reloadArgs(r *recovery, extra ...string) []string {
	return append([]string{"-o", "json", "reload", r.table, "--rename", "customer_id=customer_key", "--batch-files", "10", "--yes"}, extra...)
}

// converge re-runs reload until it exits 0 (at most 3 times) and checks the final table.
func converge(t *testing.T, r *recovery) reloadJSON {
	t.Helper()
	var rep reloadJSON
	for i := 0; i < 3; i++ {
		code, out, errOut := runZbrecover(t, reloadArgs(r)...)
		if code == 0 {
			if strings.TrimSpace(out) != "" {
				rep = decodeReload(t, out)
			}
			rows, distinct, missing := r.check(t)
			if rows != r.rows || distinct != r.rows || missing != 0 {
				t.Fatalf("after re-run: %d rows, %d distinct, %d missing; want %d", rows, distinct, missing, r.rows)
			}
			// The journal replays and every batch verifies against the table's history.
			if code, out, errOut := runZbrecover(t, "verify", r.table); code != 0 {
				t.Fatalf("verify after convergence: exit %d\n%s%s", code, out, errOut)
			}
			return rep
		}
		t.Logf("re-run %d: exit %d\n%s%s", i+1, code, out, errOut)
	}
	t.Fatal("reload did not converge in 3 re-runs")
	return rep
}

// TestReloadLostResponse: the second statement commits and its answer is lost; the re-run
// settles it from history (or by sending it again) and loads nothing twice.
func TestReloadLostResponse(t *testing.T) {
	r := reloadSmall(t)
	r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Skip: 1, DropResponse: true})
	code, out, errOut := runZbrecover(t, reloadArgs(r)...)
	if code == 0 {
		t.Fatalf("reload with a lost answer exited 0\n%s%s", out, errOut)
	}
	rep := converge(t, r)
	if !rep.Resumed || rep.Status != "verified" {
		t.Errorf("re-run report %+v", rep)
	}
}

// TestReloadFailureOnBatch2: the warehouse refuses batch 2 of 3; batch 1 stays verified, the
// re-run loads 2 and 3.
func TestReloadFailureOnBatch2(t *testing.T) {
	r := reloadSmall(t)
	r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Skip: 1,
		Error: &warehouse.SQLError{Class: "INTERNAL_ERROR", SQLState: "XX000", Message: "injected"}})
	code, out, errOut := runZbrecover(t, reloadArgs(r)...)
	if code != 1 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if rows, _, _ := r.check(t); rows != 20 {
		t.Errorf("after the failure the table has %d rows, want batch 1's 20", rows)
	}
	converge(t, r)
}

// TestReloadConflictRetried: a transaction conflict on a batch is retried on the same batch.
func TestReloadConflictRetried(t *testing.T) {
	r := reloadSmall(t)
	f := r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Skip: 1,
		Error: &warehouse.SQLError{Class: "DELTA_CONCURRENT_APPEND", SQLState: "2D521", Message: "ConcurrentAppendException: injected"}})
	code, out, errOut := runZbrecover(t, reloadArgs(r)...)
	if code != 0 || f.Fired() != 1 {
		t.Fatalf("exit %d, fault fired %d\n%s%s", code, f.Fired(), out, errOut)
	}
	if rows, distinct, missing := r.check(t); rows != r.rows || distinct != r.rows || missing != 0 {
		t.Errorf("table: %d rows, %d distinct, %d missing", rows, distinct, missing)
	}
}

// TestReloadZerobusCommitting: Zerobus commits to the table throughout; batches are still
// verified by their own counts, and a lost answer is settled by the next run without taking a
// Zerobus commit.
func TestReloadZerobusCommitting(t *testing.T) {
	r := reloadSmall(t)
	zb, err := r.ws.Warehouse().Zerobus(r.table, warehouse.ZerobusOptions{Rows: 20, Row: func(i int64) []string {
		return []string{fmt.Sprint(1_000_000 + i), fmt.Sprintf("'z%d'", i), "1.0"}
	}})
	if err != nil {
		t.Fatal(err)
	}
	zb.Start(5 * time.Millisecond)
	defer zb.Close()
	r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Skip: 1, DropResponse: true})
	if code, out, errOut := runZbrecover(t, reloadArgs(r)...); code == 0 {
		t.Fatalf("the reload whose second answer was lost exited 0\n%s%s", out, errOut)
	}
	if code, out, errOut := runZbrecover(t, reloadArgs(r)...); code != 0 {
		t.Fatalf("the re-run did not settle the lost answer while Zerobus committed: exit %d\n%s%s", code, out, errOut)
	}
	zb.Close()
	loadedOnceAndVerified(t, r)
}

// loadedOnceAndVerified checks what TestReloadZerobusCommitting claims after its runs: every
// batch of the run verified, verify passing, every fallback id in the table, none twice.
func loadedOnceAndVerified(t testing.TB, r *recovery) {
	for _, b := range runState(t).Batches {
		if b.Status != journal.BatchVerified {
			t.Errorf("batch %d is %s, want verified (%+v)", b.Batch, b.Status, b.Outcome)
		}
	}
	if code, out, errOut := runZbrecover(t, "verify", r.table); code != 0 {
		t.Errorf("verify: exit %d\n%s%s", code, out, errOut)
	}
	if _, _, missing := r.check(t); missing != 0 {
		t.Errorf("%d fallback ids missing", missing)
	}
	res, err := r.ws.Warehouse().Engine().Exec(context.Background(), "SELECT id, count(*) FROM "+r.table+" WHERE id < 1000000 GROUP BY id HAVING count(*) > 1")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 0 {
		t.Errorf("fallback ids loaded twice: %v", res.Rows)
	}
}

// TestZerobusCheckCatches is a test of the test: after a good reload, a fallback id deleted
// from the table and another loaded twice are both reported by loadedOnceAndVerified.
func TestZerobusCheckCatches(t *testing.T) {
	r := reloadSmall(t)
	if code, out, errOut := runZbrecover(t, reloadArgs(r)...); code != 0 {
		t.Fatalf("reload: exit %d\n%s%s", code, out, errOut)
	}
	var good recorder
	good.run(t, func(tb testing.TB) { loadedOnceAndVerified(tb, r) })
	if len(good.errs) != 0 {
		t.Fatalf("a good reload reported: %q", good.errs)
	}
	ids := slices.Sorted(maps.Keys(r.ids))
	r.exec(t, fmt.Sprintf("DELETE FROM %s WHERE id = %d", r.table, ids[0]))
	r.exec(t, fmt.Sprintf("INSERT INTO %s SELECT * FROM %s WHERE id = %d", r.table, r.table, ids[1]))
	var bad recorder
	bad.run(t, func(tb testing.TB) { loadedOnceAndVerified(tb, r) })
	all := strings.Join(bad.errs, "\n")
	if !strings.Contains(all, "1 fallback ids missing") || !strings.Contains(all, "fallback ids loaded twice") {
		t.Errorf("a table missing one id and holding another twice reported:\n%s", all)
	}
}

// recorder is a testing.TB that records failures instead of failing the test: a test of a
// test runs the check against it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Error(a ...any)            { r.errs = append(r.errs, fmt.Sprint(a...)) }
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, fmt.Sprintf(f, a...)) }
func (r *recorder) Fatal(a ...any)            { r.Error(a...); runtime.Goexit() }
func (r *recorder) Fatalf(f string, a ...any) { r.Errorf(f, a...); runtime.Goexit() }

// run runs check against r in a goroutine of its own (Fatal ends that goroutine only).
func (r *recorder) run(t *testing.T, check func(testing.TB)) {
	r.TB = t
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r)
	}()
	<-done
}

// TestReloadLocationOverlapStopsBeforeLoading: on a managed table Unity Catalog refuses path
// reads in its storage; reload stops before loading anything and names staging.
func TestReloadLocationOverlapStopsBeforeLoading(t *testing.T) {
	r := reloadSmall(t)
	// Databricks' likely answer: path access inside the managed table's storage is refused.
	u := r.ws.Warehouse().Unknowns()
	u.PathAccess = warehouse.OverlapBracketed
	r.ws.Warehouse().SetUnknowns(u)
	before := len(r.ws.Statements())
	code, out, errOut := runZbrecover(t, reloadArgs(r)...)
	if code != 1 || r.copyStatements(before) != 0 || !strings.Contains(errOut, "LOCATION_OVERLAP") || !strings.Contains(errOut, "--stage-to") {
		t.Fatalf("exit %d, %d COPY INTO\n%s%s", code, r.copyStatements(before), out, errOut)
	}
	if rows, _, _ := r.check(t); rows != 0 {
		t.Errorf("%d rows loaded", rows)
	}
}

// startReload starts the release binary's reload and waits until the warehouse holds the
// second load statement (delayed by a fault), then returns the running process.
func startReload(t *testing.T, r *recovery) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	bin := e2etest.Release(t)
	r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Skip: 1, Delay: 20 * time.Second})
	var out strings.Builder
	c := exec.Command(bin, reloadArgs(r)...)
	c.Env = os.Environ()
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		running := 0
		for _, s := range r.ws.Statements() {
			if s.State == "RUNNING" && s.Fault != "" && strings.HasPrefix(s.SQL, "COPY INTO") {
				running++
			}
		}
		if running > 0 {
			return c, &out
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = c.Process.Kill()
	t.Fatalf("the second statement never started:\n%s", out.String())
	return nil, nil
}

// TestReloadKilledAfterIntent: the process is killed after the intent of batch 2 was
// written, while its statement waits on the warehouse; a plain re-run converges.
func TestReloadKilledAfterIntent(t *testing.T) {
	r := reloadSmall(t)
	c, out := startReload(t, r)
	_ = c.Process.Kill()
	_ = c.Wait()
	t.Logf("killed run:\n%s", out)
	rep := converge(t, r)
	if !rep.Resumed {
		t.Errorf("the re-run did not continue the killed run: %+v", rep)
	}
}

// TestReloadInterrupted: Ctrl-C during a slow statement cancels it on the warehouse, exits
// 130 and records the batch as unknown; a plain re-run converges.
func TestReloadInterrupted(t *testing.T) {
	r := reloadSmall(t)
	c, out := startReload(t, r)
	_ = c.Process.Signal(os.Interrupt)
	err := c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("interrupted reload: %v\n%s", err, out)
	}
	cancelled := false
	for _, s := range r.ws.Statements() {
		cancelled = cancelled || s.State == "CANCELED"
	}
	if !cancelled {
		t.Errorf("the statement in flight was not cancelled on the warehouse")
	}
	converge(t, r)
}

// TestReload503 : the warehouse answers 503 with Retry-After to a load statement; the driver
// waits and retries, and the reload completes.
func TestReload503(t *testing.T) {
	r := reloadSmall(t)
	f := r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Skip: 1, HTTPStatus: 503, RetryAfter: "1"})
	code, out, errOut := runZbrecover(t, reloadArgs(r)...)
	if f.Fired() != 1 {
		t.Errorf("fault fired %d times", f.Fired())
	}
	if code != 0 {
		t.Logf("first run: exit %d\n%s%s", code, out, errOut)
	}
	converge(t, r)
}

// TestReloadLoadedOutsideIsUnknown: files someone already loaded by hand insert 0 rows; reload
// never calls them verified (they may as well never have been read), verify fails (exit 4).
func TestReloadLoadedOutsideIsUnknown(t *testing.T) {
	r := reloadSmall(t)
	dir := "file://" + filepath.ToSlash(filepath.Join(r.root, filepath.FromSlash(fallback.Prefix)))
	r.exec(t, "COPY INTO main.sales.orders FROM (SELECT id, customer_id AS customer_key, CAST(amount AS DECIMAL(18,4)) AS amount FROM '"+
		dir+"/2026/01/01/') FILEFORMAT = PARQUET")
	code, out, errOut := runZbrecover(t, reloadArgs(r)...)
	rep := decodeReload(t, out)
	if code != 5 || rep.Unknown != 1 || rep.Verified != 2 {
		t.Fatalf("exit %d, report %+v\n%s", code, rep, errOut)
	}
	if code, out, _ := runZbrecover(t, "verify", r.table); code != 4 || !strings.Contains(out, "unknown") {
		t.Errorf("verify: exit %d\n%s", code, out)
	}
	code, out, _ = runZbrecover(t, "history", r.table)
	if code != 0 || !strings.Contains(out, rep.Run) || !strings.Contains(out, "unknown") {
		t.Errorf("history: exit %d\n%s", code, out)
	}
}

// TestReloadVerifyAndHistory: after a verified reload, verify passes and history lists the
// run and, per file, its batch and state.
func TestReloadVerifyAndHistory(t *testing.T) {
	r := reloadSmall(t)
	code, out, errOut := runZbrecover(t, reloadArgs(r)...)
	if code != 0 {
		t.Fatalf("reload: exit %d\n%s%s", code, out, errOut)
	}
	run := decodeReload(t, out).Run
	code, out, errOut = runZbrecover(t, "-o", "json", "verify", r.table)
	var v struct {
		OK     bool `json:"ok"`
		Checks []struct {
			OK bool `json:"ok"`
		} `json:"checks"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || !v.OK || len(v.Checks) != 3 {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runZbrecover(t, "history", r.table, "--run", run)
	if code != 0 || strings.Count(out, "\tverified") != 30 || !strings.Contains(out, "old-00000.parquet\t2 rows\tbatch 1") {
		t.Errorf("history --run: exit %d\n%s", code, out)
	}
	code, out, _ = runZbrecover(t, "-o", "json", "history")
	if code != 0 || !strings.Contains(out, `"Status": "verified"`) && !strings.Contains(out, `"status": "verified"`) {
		t.Errorf("history: exit %d\n%s", code, out)
	}

	// A verified file overwritten since is flagged, neither loaded again nor skipped silently.
	p := filepath.Join(r.root, filepath.FromSlash(fallback.Prefix), "2026/01/01/old-00000.parquet")
	data, err := pqgen.Bytes(e2etest.OldFiles, `[{"id":1,"customer_id":"changed","amount":"1.00"},{"id":2,"customer_id":"x","amount":"2.00"},{"id":3,"customer_id":"y","amount":"3.00"}]`, pqgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before := len(r.ws.Statements())
	code, out, errOut = runZbrecover(t, reloadArgs(r)...)
	if code != 5 || r.copyStatements(before) != 0 || !strings.Contains(errOut, "changed since a run recorded it") || !strings.Contains(errOut, "old-00000.parquet") {
		t.Errorf("changed file: exit %d, %d COPY INTO\n%s%s", code, r.copyStatements(before), out, errOut)
	}
}

// TestReloadDryRun: --dry-run prints the plan and every statement and runs none of them.
func TestReloadDryRun(t *testing.T) {
	r := reloadSmall(t)
	before := len(r.ws.Statements())
	code, out, errOut := runZbrecover(t, "reload", r.table, "--rename", "customer_id=customer_key", "--batch-files", "10", "--dry-run")
	if code != 0 || strings.Count(out, "COPY INTO `main`.`sales`.`orders` FROM (SELECT") != 3 || !strings.Contains(errOut, "nothing was executed") {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	for _, s := range r.ws.Statements()[before:] {
		if strings.HasPrefix(s.SQL, "COPY INTO") || strings.HasPrefix(s.SQL, "MERGE") {
			t.Errorf("dry run executed %s", s.SQL)
		}
	}
	if rows, _, _ := r.check(t); rows != 0 {
		t.Errorf("dry run loaded %d rows", rows)
	}
}

// TestReloadHostileNames: a table name and file names that need quoting load correctly; a
// table name that attempts SQL injection is refused before anything runs.
func TestReloadHostileNames(t *testing.T) {
	r := newRecovery(t, 0, 0)
	// Files whose names hold quotes, a semicolon, a percent sign and spaces.
	names := []string{"it's.parquet", "a;b.parquet", "100%.parquet", "with space.parquet", "back\\slash.parquet"}
	for i, n := range names {
		id := int64(100 + i)
		r.ids[id] = true
		data, err := pqgen.Bytes(e2etest.OldFiles, fmt.Sprintf(`[{"id":%d,"customer_id":"x","amount":"1.00"}]`, id), pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := pqgen.WriteFile(filepath.Join(r.root, filepath.FromSlash(fallback.Prefix), "d'ir", n), data); err != nil {
			t.Fatal(err)
		}
		r.rows++
	}
	// A backslash is a glob character: loaded from the fallback folder itself, its name could
	// be read as a pattern, so that file is left behind (exit 5) and says how to load it.
	code, out, errOut := runZbrecover(t, reloadArgs(r)...)
	if code != 5 || !strings.Contains(errOut, "glob character") || !strings.Contains(errOut, "--stage-to") {
		t.Fatalf("reload: exit %d\n%s%s", code, out, errOut)
	}
	if rows, distinct, missing := r.check(t); rows != r.rows-1 || distinct != r.rows-1 || missing != 1 {
		t.Errorf("table: %d rows, %d distinct, %d missing; want %d", rows, distinct, missing, r.rows-1)
	}
	before := len(r.ws.Statements())
	for _, bad := range []string{"main.sales.orders; DROP TABLE main.sales.orders", "main.sales.`orders`; DROP TABLE x --`", "main.sales.orders`"} {
		code, _, errOut := runZbrecover(t, "reload", "--table", bad, "--root", r.root, "--yes")
		if code != 2 {
			t.Errorf("reload --table %q: exit %d: %s", bad, code, errOut)
		}
	}
	if n := len(r.ws.Statements()) - before; n != 0 {
		t.Errorf("%d statements ran for refused table names", n)
	}
}

// setUnknowns changes the local warehouse's answers where Databricks' are unknown.
func (r *recovery) setUnknowns(change func(*warehouse.Unknowns)) {
	u := r.ws.Warehouse().Unknowns()
	change(&u)
	r.ws.Warehouse().SetUnknowns(u)
}

// TestReloadUnderTheOtherUnknowns runs the fault scenarios against the other plausible
// answers of Databricks where they are unknown: errors without a SQLSTATE, an empty COPY INTO
// that commits a version, the LOCATION_OVERLAP refusal without a SQLSTATE.
func TestReloadUnderTheOtherUnknowns(t *testing.T) {
	t.Run("conflict without a SQLSTATE", func(t *testing.T) {
		r := reloadSmall(t)
		r.setUnknowns(func(u *warehouse.Unknowns) { u.NoSQLState = true })
		f := r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Skip: 1,
			Error: &warehouse.SQLError{Class: "DELTA_CONCURRENT_APPEND", SQLState: "2D521", Message: "ConcurrentAppendException: injected"}})
		if code, out, errOut := runZbrecover(t, reloadArgs(r)...); code != 0 || f.Fired() != 1 {
			t.Fatalf("exit %d, fault fired %d\n%s%s", code, f.Fired(), out, errOut)
		}
		if rows, distinct, missing := r.check(t); rows != r.rows || distinct != r.rows || missing != 0 {
			t.Errorf("table: %d rows, %d distinct, %d missing", rows, distinct, missing)
		}
	})
	t.Run("lost answer, empty COPY INTO commits a version", func(t *testing.T) {
		r := reloadSmall(t)
		r.setUnknowns(func(u *warehouse.Unknowns) { u.CommitEmptyCopy = true })
		r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Skip: 1, DropResponse: true})
		if code, _, _ := runZbrecover(t, reloadArgs(r)...); code == 0 {
			t.Fatal("a lost answer was not reported")
		}
		converge(t, r)
	})
	t.Run("failure on batch 2 without a SQLSTATE", func(t *testing.T) {
		r := reloadSmall(t)
		r.setUnknowns(func(u *warehouse.Unknowns) { u.NoSQLState = true })
		r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Skip: 1,
			Error: &warehouse.SQLError{Class: "INTERNAL_ERROR", SQLState: "XX000", Message: "injected"}})
		if code, out, errOut := runZbrecover(t, reloadArgs(r)...); code == 0 {
			t.Fatalf("a failed batch exited 0\n%s%s", out, errOut)
		}
		converge(t, r)
	})
	t.Run("LOCATION_OVERLAP without a SQLSTATE", func(t *testing.T) {
		r := reloadSmall(t)
		r.setUnknowns(func(u *warehouse.Unknowns) { u.PathAccess = warehouse.OverlapNoSQLState })
		before := len(r.ws.Statements())
		code, out, errOut := runZbrecover(t, reloadArgs(r)...)
		if code != 1 || r.copyStatements(before) != 0 || !strings.Contains(errOut, "--stage-to") {
			t.Fatalf("exit %d, %d COPY INTO\n%s%s", code, r.copyStatements(before), out, errOut)
		}
	})
}
