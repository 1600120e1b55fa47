//go:build demo && cgo

package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// reliabBinaries builds the demo binary (the workspace) and the release binary once for the
// calling test.
func reliabBinaries(t *testing.T) (demoBin, release string) {
	t.Helper()
	return e2etest.Demo(t), e2etest.Release(t)
}

// runStatus is the part of the JSON report of reload and verify the tests check.
type runStatus struct {
	Run      string `json:"run"`
	Resumed  bool   `json:"resumed"`
	Status   string `json:"status"`
	Verified int    `json:"verified_batches"`
	Unknown  int    `json:"unknown_batches"`
	Staged   int    `json:"staged_files"`
	Reused   int    `json:"staged_reused"`
	Batches  []struct {
		Batch  int    `json:"batch"`
		Status string `json:"status"`
		Reason string `json:"reason"`
	} `json:"batches"`
}

func decodeStatus(t *testing.T, out string) runStatus {
	t.Helper()
	var r runStatus
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("JSON report: %v\n%.3000s", err, out)
	}
	return r
}

// countFiles counts the regular files under dir whose name ends with suffix.
func countFiles(t *testing.T, dir, suffix string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) && p == dir {
				return filepath.SkipDir
			}
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, suffix) {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReliabConcurrency stages 500 files of a managed table to a volume of `demo serve` with
// reload --stage-to, then archives them to a local folder that does not exist yet with
// cleanup --archive-to, at --concurrency 1, 2, 16 and 64: every command finishes within its
// deadline, every row is in the table once, every original is archived and deleted.
func TestReliabConcurrency(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; 2,000 files through the release binary")
	}
	demoBin, release := reliabBinaries(t)
	const n = 500
	concs := []int{1, 2, 16, 64}
	var args []string
	roots := map[int]string{}
	for _, c := range concs {
		roots[c] = filepath.Join(t.TempDir(), fmt.Sprintf("orders_c%d", c))
		e2etest.WriteOneRowFiles(t, roots[c], 0, n)
		args = append(args, "--table", fmt.Sprintf("main.sales.orders_c%d=%s", c, roots[c]))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, args...)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	for _, c := range concs {
		t.Run(fmt.Sprintf("concurrency-%d", c), func(t *testing.T) {
			s := s.clone()
			s.T = t
			table := fmt.Sprintf("main.sales.orders_c%d", c)
			conc := fmt.Sprint(c)
			code, out, errOut := s.Within(2*time.Minute, "--concurrency", conc, "-o", "json", "reload", table,
				"--rename", "customer_id=customer_key", "--stage-to", "/Volumes/main/sales/staging/c"+conc, "--yes")
			if code != 0 {
				t.Fatalf("reload: exit %d\nstdout: %.2000s\nstderr: %s", code, out, errOut)
			}
			if r := decodeStatus(t, out); r.Status != "verified" || r.Staged != n {
				t.Errorf("reload: %+v", r)
			}
			if rows, distinct := s.FileRows(table); rows != n || distinct != n {
				t.Errorf("%s holds %d rows (%d distinct ids), want %d once each", table, rows, distinct, n)
			}
			archive := filepath.Join(t.TempDir(), "not", "yet", "there")
			code, out, errOut = s.Within(2*time.Minute, "--concurrency", conc, "cleanup", table, "--archive-to", archive, "--yes")
			if code != 0 {
				t.Fatalf("cleanup --archive-to: exit %d\nstdout: %.2000s\nstderr: %s", code, out, errOut)
			}
			if got := countFiles(t, archive, ".parquet"); got != n {
				t.Errorf("%d files archived in %s, want %d", got, archive, n)
			}
			if left := countFiles(t, filepath.Join(roots[c], filepath.FromSlash(fallback.Prefix)), ".parquet"); left != 0 {
				t.Errorf("%d fallback files left after cleanup", left)
			}
		})
	}
	w.Stop()
}

// apiFaultsFired is how many times the workspace's API faults fired, in all.
func (s *served) apiFaultsFired() int { return s.sumFaults("api-faults", "api_faults", "fired") }

// faultSeen is how many statements the warehouse's faults have matched, in all.
func (s *served) faultSeen() int { return s.sumFaults("faults", "faults", "seen") }

// sumFaults sums one counter (fired, seen) over the faults a control endpoint lists.
func (s *served) sumFaults(path, member, counter string) int {
	s.T.Helper()
	var doc map[string]json.RawMessage
	var faults []map[string]any
	if err := json.Unmarshal([]byte(s.Control("GET", path, nil)), &doc); err != nil {
		s.T.Fatal(err)
	}
	if raw, ok := doc[member]; !ok {
		return 0
	} else if err := json.Unmarshal(raw, &faults); err != nil {
		s.T.Fatalf("%s: %v", member, err)
	}
	n := 0
	for _, f := range faults {
		v, _ := f[counter].(float64)
		n += int(v)
	}
	return n
}

// TestReliabFilesAPIThrottled stages a reload to a volume while the Files API answers one
// request, then 20% of its requests, with 503 or 429 and Retry-After: each reload finishes
// verified in the same run, every row is in the table once, and -v shows one retry line for
// every fault that fired.
func TestReliabFilesAPIThrottled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := reliabBinaries(t)
	const n = 200
	cases := []struct {
		name   string
		faults []map[string]any
	}{
		{"one-503", []map[string]any{{"method": "PUT", "path": "^/api/2.0/fs/files/Volumes/main/sales/staging/", "skip": 20, "times": 1,
			"action": "http", "http_status": 503, "retry_after": "1"}}},
		{"one-429", []map[string]any{{"method": "PUT", "path": "^/api/2.0/fs/files/", "skip": 50, "times": 1,
			"action": "http", "http_status": 429, "retry_after": "1"}}},
		{"20pct-503", []map[string]any{{"path": "^/api/2.0/fs/", "percent": 20, "seed": 7, "times": -1,
			"action": "http", "http_status": 503, "retry_after": "1"}}},
		{"20pct-429", []map[string]any{{"path": "^/api/2.0/fs/", "percent": 20, "seed": 11, "times": -1,
			"action": "http", "http_status": 429, "retry_after": "1"}}},
	}
	var args []string
	for i := range cases {
		root := filepath.Join(t.TempDir(), "orders")
		e2etest.WriteOneRowFiles(t, root, 0, n)
		args = append(args, "--table", fmt.Sprintf("main.sales.orders_%d=%s", i, root))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, args...)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := s.clone()
			s.T = t
			s.ClearFaults()
			defer s.ClearFaults()
			s.Apply(map[string]any{"api_faults": c.faults})
			table := fmt.Sprintf("main.sales.orders_%d", i)
			code, out, errOut := s.Within(3*time.Minute, "-v", "--no-progress", "-o", "json", "reload", table,
				"--rename", "customer_id=customer_key", "--stage-to", "/Volumes/main/sales/staging/"+c.name, "--yes")
			fired := s.apiFaultsFired()
			if code != 0 {
				t.Fatalf("reload: exit %d (%d faults fired)\nstdout: %.2000s\nstderr: %s", code, fired, out, errOut)
			}
			r := decodeStatus(t, out)
			if r.Status != "verified" || r.Staged != n || strings.Contains(errOut, "Continued") {
				t.Errorf("reload: %+v", r)
			}
			if rows, distinct := s.FileRows(table); rows != n || distinct != n {
				t.Errorf("%s holds %d rows (%d distinct ids), want %d once each", table, rows, distinct, n)
			}
			retries := 0
			for _, l := range logLines(errOut) {
				if l["msg"] != "files api request failed, retrying" {
					continue
				}
				retries++
				if wait, err := time.ParseDuration(l["wait"]); err != nil || wait < time.Second {
					t.Errorf("a retry does not wait the Retry-After of 1 s: %v", l)
				}
			}
			if fired == 0 || retries != fired {
				t.Errorf("%d faults fired, %d retry lines at -v:\n%s", fired, retries, errOut)
			}
			if strings.Contains(errOut, s.Env["DATABRICKS_TOKEN"]) {
				t.Errorf("the token is in the output")
			}
		})
	}
	w.Stop()
}

// logLines reads the JSON log lines of stderr (-v under -o json), each as its string members.
func logLines(stderr string) []map[string]string {
	var out []map[string]string
	for _, l := range strings.Split(stderr, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		sm := map[string]string{}
		for k, v := range m {
			sm[k] = fmt.Sprint(v)
		}
		out = append(out, sm)
	}
	return out
}

// TestReliabStageLocationMistakes: a reload staged to a volume that does not exist stops
// before any copy or load, saying so with the volumes of its schema; the same reload to the
// right volume continues the run and loads. A staging folder with a ' in its name, and the
// reload killed with SIGKILL while it loads: the re-run converges (every row once, the run
// verified by verify).
func TestReliabStageLocationMistakes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := reliabBinaries(t)
	const n = 240
	rootA, rootB := filepath.Join(t.TempDir(), "orders"), filepath.Join(t.TempDir(), "returns")
	e2etest.WriteOneRowFiles(t, rootA, 0, 40)
	e2etest.WriteOneRowFiles(t, rootB, 0, n)
	logFile := filepath.Join(t.TempDir(), "statements.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+rootA, "--table", "main.sales.returns="+rootB, "--log", logFile)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	host, token := w.Env["DATABRICKS_HOST"], w.Env["DATABRICKS_TOKEN"]

	// (1) A mistyped volume: refused before any copy, the volume named as missing with the
	// volumes of its schema.
	reloadArgs := []string{"-o", "json", "reload", "main.sales.orders", "--rename", "customer_id=customer_key", "--yes"}
	from := e2etest.StatementLogLen(t, logFile)
	code, out, errOut := s.Within(time.Minute, append(reloadArgs, "--stage-to", "/Volumes/main/sales/nosuchvolume/x")...)
	copies, _ := e2etest.Loads(e2etest.ReadStatementLog(t, logFile, from))
	if code == 0 || len(copies) != 0 || !strings.Contains(errOut, "volume main.sales.nosuchvolume does not exist") ||
		!strings.Contains(errOut, "(the volumes of main.sales: staging)") || !strings.Contains(errOut, "CREATE VOLUME main.sales.nosuchvolume") {
		t.Errorf("reload to a missing volume: exit %d, %d COPY INTO\nstdout: %s\nstderr: %s", code, len(copies), out, errOut)
	}
	if got := e2etest.ListVolume(t, host, token, "/Volumes/main/sales/staging"); len(got) != 0 {
		t.Errorf("something was staged: %v", got)
	}
	if rows, _ := s.FileRows("main.sales.orders"); rows != 0 {
		t.Errorf("%d rows loaded by a refused reload", rows)
	}
	// (2) The right volume: the same run, loaded and verified.
	code, out, errOut = s.Within(time.Minute, append(reloadArgs, "--stage-to", "/Volumes/main/sales/staging/x")...)
	if r := decodeStatus(t, out); code != 0 || r.Status != "verified" || r.Staged != 40 {
		t.Errorf("reload to the right volume: exit %d %+v\nstderr: %s", code, r, errOut)
	}
	if rows, distinct := s.FileRows("main.sales.orders"); rows != 40 || distinct != 40 {
		t.Errorf("main.sales.orders holds %d rows (%d distinct ids), want 40 once each", rows, distinct)
	}

	// (3) A ' in the staging folder; SIGKILL once two batches of ten are in the table.
	const quoted = "/Volumes/main/sales/staging/o'brien's run"
	args := []string{"-o", "json", "reload", "main.sales.returns", "--rename", "customer_id=customer_key", "--yes",
		"--stage-to", quoted, "--batch-files", "10"}
	cmd, printed := s.StartKillable(args...)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if !e2etest.WaitFor(cmd, exited, 2*time.Minute, func() bool { rows, _ := s.FileRows("main.sales.returns"); return rows >= 20 }) {
		t.Fatalf("the reload did not load two batches while it ran:\n%s", printed)
	}
	_ = cmd.Process.Kill()
	<-exited
	rows, _ := s.FileRows("main.sales.returns")
	t.Logf("killed with %d of %d rows in the table", rows, n)
	if rows >= n {
		t.Fatalf("the reload had finished before the kill (%d rows)", rows)
	}
	code, out, errOut = s.Within(2*time.Minute, args...)
	if r := decodeStatus(t, out); code != 0 || r.Status != "verified" || !r.Resumed || strings.Contains(errOut, "Refused through") ||
		!strings.Contains(errOut, fmt.Sprintf("%d files belong to run %s, which this reload continues", n, r.Run)) ||
		strings.Contains(errOut, "loaded by earlier runs") {
		t.Fatalf("re-run after SIGKILL: exit %d %+v\nstderr: %s", code, r, errOut)
	}
	if rows, distinct := s.FileRows("main.sales.returns"); rows != n || distinct != n {
		t.Errorf("main.sales.returns holds %d rows (%d distinct ids), want %d once each", rows, distinct, n)
	}
	if code, out, errOut := s.Within(time.Minute, "verify", "main.sales.returns"); code != 0 {
		t.Errorf("verify: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if got := e2etest.ListVolume(t, host, token, quoted); len(got) != n {
		t.Errorf("%d staged copies under %s, want %d", len(got), quoted, n)
	}
	// Through the same folder again nothing is refused, only already loaded; through another,
	// every file is refused as loaded through a second path.
	code, _, errOut = s.Within(time.Minute, args...)
	if code != 0 || strings.Contains(errOut, "Refused through") || !strings.Contains(errOut, "Nothing to load") {
		t.Errorf("reload through the same folder again: exit %d\nstderr: %s", code, errOut)
	}
	other := []string{"reload", "main.sales.returns", "--rename", "customer_id=customer_key", "--yes", "--stage-to", "/Volumes/main/sales/staging/other"}
	code, _, errOut = s.Within(time.Minute, other...)
	if code != 0 || !strings.Contains(errOut, fmt.Sprintf("Refused through /Volumes/main/sales/staging/other: %d files", n)) {
		t.Errorf("reload through another folder: exit %d\nstderr: %s", code, errOut)
	}
	w.Stop()
}

// TestReliabRemoteJournalBreakLock keeps the journal on the S3 emulator (--journal s3://…,
// where the lock is an object nobody releases for a killed process): the reload killed with
// SIGKILL while it loads leaves its lock; the next reload says the table is locked by a
// process of this host that is no longer running and names --break-lock; --break-lock --yes
// shows the holder, breaks the lock, and the re-run converges, verified by verify.
func TestReliabRemoteJournalBreakLock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := reliabBinaries(t)
	const n = 200
	root := filepath.Join(t.TempDir(), "orders")
	e2etest.WriteOneRowFiles(t, root, 0, n)
	srv := s3test.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root)
	env := map[string]string{"AWS_ACCESS_KEY_ID": s3test.AccessKeyID, "AWS_SECRET_ACCESS_KEY": s3test.SecretAccessKey, "AWS_REGION": s3test.Region}
	for k, v := range w.Env {
		env[k] = v
	}
	s := &served{e2etest.NewServed(ctx, t, release, env)}
	journalURL := srv.URLFor("zbrecover/journal")
	global := []string{"--s3-endpoint", srv.URL, "--s3-region", s3test.Region}
	args := append(append([]string(nil), global...), "-o", "json", "reload", "main.sales.orders", "--rename", "customer_id=customer_key",
		"--stage-to", "/Volumes/main/sales/staging/remote", "--batch-files", "10", "--journal", journalURL, "--yes")

	cmd, printed := s.StartKillable(args...)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if !e2etest.WaitFor(cmd, exited, 2*time.Minute, func() bool { rows, _ := s.FileRows("main.sales.orders"); return rows >= 20 }) {
		t.Fatalf("the reload did not load two batches while it ran:\n%s", printed)
	}
	_ = cmd.Process.Kill()
	<-exited
	pid := cmd.Process.Pid

	// The lock object stays: the next reload is refused, and says why and what to do.
	code, out, errOut := s.Within(time.Minute, args...)
	for _, want := range []string{"is locked by", fmt.Sprintf("pid %d on this host, is no longer running", pid), "--break-lock"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("reload after SIGKILL: exit %d, stderr lacks %q\nstdout: %s\nstderr: %s", code, want, out, errOut)
		}
	}
	// verify and cleanup take the same lock and say the same.
	for _, c := range [][]string{{"verify", "main.sales.orders"}, {"cleanup", "main.sales.orders", "--yes"}} {
		code, out, errOut := s.Within(time.Minute, append(append(append([]string(nil), global...), c...), "--journal", journalURL)...)
		if code != 1 || !strings.Contains(errOut, "is locked by") || strings.Contains(errOut, "reload again to finish") {
			t.Errorf("%s after SIGKILL: exit %d\nstdout: %s\nstderr: %s", c[0], code, out, errOut)
		}
	}
	// Without --yes and without a terminal, --break-lock shows the holder and breaks nothing.
	code, _, errOut = s.Within(time.Minute, append(append([]string(nil), args[:len(args)-1]...), "--break-lock")...)
	if code == 0 || !strings.Contains(errOut, fmt.Sprintf("pid %d", pid)) || !strings.Contains(errOut, "--break-lock needs --yes") {
		t.Errorf("--break-lock without --yes: exit %d\nstderr: %s", code, errOut)
	}
	if rows, _ := s.FileRows("main.sales.orders"); rows >= n {
		t.Fatalf("a reload ran past the lock: %d rows", rows)
	}

	code, out, errOut = s.Within(2*time.Minute, append(args, "--break-lock")...)
	if r := decodeStatus(t, out); code != 0 || r.Status != "verified" || !r.Resumed {
		t.Fatalf("reload --break-lock --yes: exit %d %+v\nstderr: %s", code, r, errOut)
	}
	for _, want := range []string{fmt.Sprintf("pid %d", pid), "no longer running on this host"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("reload --break-lock does not show %q:\n%s", want, errOut)
		}
	}
	if rows, distinct := s.FileRows("main.sales.orders"); rows != n || distinct != n {
		t.Errorf("main.sales.orders holds %d rows (%d distinct ids), want %d once each", rows, distinct, n)
	}
	if code, out, errOut := s.Within(time.Minute, append(append([]string(nil), global...), "verify", "main.sales.orders", "--journal", journalURL)...); code != 0 {
		t.Errorf("verify: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	w.Stop()
}

// TestReliabCredentialsRefusedMidRun: the warehouse answers the second load statement with
// HTTP 401 (the token expired in the middle of the run): the run stops with a message that
// says the credentials were refused, the batch is journaled as refused (failed: nothing ran),
// not as a statement that may have committed; the re-run loads it, and everything converges.
func TestReliabCredentialsRefusedMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := reliabBinaries(t)
	const n = 40
	root := filepath.Join(t.TempDir(), "orders")
	e2etest.WriteOneRowFiles(t, root, 0, n)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	const table = "main.sales.orders"
	args := []string{"reload", table, "--rename", "customer_id=customer_key", "--stage-to", "/Volumes/main/sales/staging/auth",
		"--batch-files", "5", "--no-validate", "--yes"}
	// Refused at the preflight (VALIDATE): the credentials, not the files, are the problem
	// (exit 1, not the schema's 3), and nothing was loaded.
	s.Apply(map[string]any{"faults": []map[string]any{{"method": "ExecuteStatement", "match": "(?i)^COPY INTO .*VALIDATE", "times": 1,
		"action": "http", "http_status": 401}}})
	validated := []string{"reload", table, "--rename", "customer_id=customer_key", "--stage-to", "/Volumes/main/sales/staging/auth", "--batch-files", "5", "--yes"}
	code, out, errOut := s.Within(time.Minute, validated...)
	if code != 1 || !strings.Contains(errOut, "refused the credentials") || strings.Contains(errOut, "VALIDATE refused") {
		t.Errorf("reload meeting a 401 at VALIDATE: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if rows, _ := s.FileRows(table); rows != 0 {
		t.Errorf("%d rows loaded after a refused preflight", rows)
	}
	s.ClearFaults()

	// The token stops working at the third load statement (after the path-access probe and
	// two batches): HTTP 401 to its request.
	s.Apply(map[string]any{"faults": []map[string]any{{"method": "ExecuteStatement", "match": "(?i)^COPY INTO .* FILES", "skip": 3, "times": 1,
		"action": "http", "http_status": 401}}})
	code, out, errOut = s.Within(time.Minute, args...)
	if code != 1 || !strings.Contains(errOut, "refused the credentials") || !strings.Contains(errOut, "did not run") ||
		strings.Contains(out+errOut, "may have committed") || strings.Contains(out+errOut, "unknown (") {
		t.Errorf("reload meeting a 401: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if strings.Contains(out+errOut, s.Env["DATABRICKS_TOKEN"]) {
		t.Errorf("the token is in the output")
	}
	s.ClearFaults()
	runs := s.JournalRuns(table)
	if len(runs) != 1 {
		t.Fatalf("runs: %+v", runs)
	}
	for run, st := range runs {
		failed, open := 0, 0
		for _, state := range st.Batches {
			switch state {
			case "failed":
				failed++
			case "open", "unknown":
				open++
			}
		}
		if failed != 1 || open != 0 {
			t.Errorf("run %s after the 401: %d failed and %d open or unknown batches, want the refused one failed: %+v", run, failed, open, st)
		}
	}
	if rows, _ := s.FileRows(table); rows != 10 {
		t.Errorf("%d rows loaded before the 401, want the 2 batches of 5 sent before it", rows)
	}
	code, out, errOut = s.Within(time.Minute, append([]string{"-o", "json"}, args...)...)
	if r := decodeStatus(t, out); code != 0 || r.Status != "verified" || !r.Resumed {
		t.Errorf("re-run with working credentials: exit %d %+v\nstderr: %s", code, r, errOut)
	}
	if rows, distinct := s.FileRows(table); rows != n || distinct != n {
		t.Errorf("%s holds %d rows (%d distinct ids), want %d once each", table, rows, distinct, n)
	}
	w.Stop()
}

// TestReliabCleanupWhileReloadRuns: cleanup and verify of a table whose reload is running
// say that the table is locked, by whom, and to wait; they delete nothing and do not send
// the operator to run reload again. Both while the reload's statement is held on the
// warehouse, and while a re-run of a killed reload still reads the table's schema (before
// it plans anything).
func TestReliabCleanupWhileReloadRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := reliabBinaries(t)
	const n = 20
	root := filepath.Join(t.TempDir(), "orders")
	e2etest.WriteOneRowFiles(t, root, 0, n)
	fallbackDir := filepath.Join(root, filepath.FromSlash(fallback.Prefix))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	const table = "main.sales.orders"
	args := []string{"reload", table, "--rename", "customer_id=customer_key", "--stage-to", "/Volumes/main/sales/staging/busy",
		"--batch-files", "5", "--no-validate", "--yes"}
	locked := func(pid int, when string) {
		t.Helper()
		for _, c := range [][]string{{"cleanup", table, "--yes"}, {"verify", table}} {
			code, out, errOut := s.Within(time.Minute, c...)
			if code != 1 || !strings.Contains(errOut, "is locked by") || !strings.Contains(errOut, fmt.Sprintf("(pid %d)", pid)) ||
				!strings.Contains(errOut, "wait for it to finish") || strings.Contains(errOut, "reload again") {
				t.Errorf("%s while the reload %s: exit %d\nstdout: %s\nstderr: %s", c[0], when, code, out, errOut)
			}
		}
		if left := countFiles(t, fallbackDir, ".parquet"); left != n {
			t.Errorf("%d fallback files left, want %d", left, n)
		}
	}

	// (1) The first batch loads; the second statement is held on the warehouse for 8 s, and
	// the reload is killed once cleanup and verify were refused.
	s.Apply(map[string]any{"faults": []map[string]any{{"method": "ExecuteStatement", "match": "(?i)^COPY INTO .* FILES", "skip": 2, "times": 1,
		"action": "delay", "delay_ms": 8000}}})
	cmd, printed := s.StartKillable(args...)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if !e2etest.WaitFor(cmd, exited, time.Minute, func() bool { rows, _ := s.FileRows(table); return rows >= 5 }) {
		t.Fatalf("the reload did not load its first batch:\n%s", printed)
	}
	locked(cmd.Process.Pid, "sends statements")
	_ = cmd.Process.Kill()
	<-exited
	s.ClearFaults()

	// (2) The re-run reads the table's schema (held 8 s): the killed run's batch is still
	// open, and nothing may act on the journal meanwhile.
	s.Apply(map[string]any{"faults": []map[string]any{{"method": "ExecuteStatement", "match": "(?i)^DESCRIBE TABLE", "times": 1,
		"action": "delay", "delay_ms": 8000}}})
	cmd, printed = s.StartKillable(args...)
	exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if !e2etest.WaitFor(cmd, exited, time.Minute, func() bool { return s.faultSeen() > 0 }) {
		t.Fatalf("the re-run did not read the table's schema:\n%s", printed)
	}
	locked(cmd.Process.Pid, "reads the table's schema")
	select {
	case <-exited:
		t.Fatalf("the re-run ended before the checks:\n%s", printed)
	default:
	}
	<-exited
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the re-run: exit %d\n%s", code, printed)
	}
	if rows, distinct := s.FileRows(table); rows != n || distinct != n {
		t.Errorf("%s holds %d rows (%d distinct ids), want %d once each", table, rows, distinct, n)
	}
	if code, out, errOut := s.Within(time.Minute, "cleanup", table, "--yes"); code != 0 || countFiles(t, fallbackDir, ".parquet") != 0 {
		t.Errorf("cleanup after the reload: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	w.Stop()
}

var (
	// A table whose column names hold spaces, after a rename of `customer id`.
	spacedTable = schemadiff.NewSchema().Col("id", schemadiff.LongType, schemadiff.NotNull).
			Col("customer key", schemadiff.StringType).Col("amount", schemadiff.DecimalType(18, 4)).Col("seq no", schemadiff.LongType)
	spacedFiles = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "seq no", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
)

// writeSpaced writes the table at root with n files of two rows: ids i and i+1 (so every id
// but the first and last is in two files), `seq no` the file's number.
func writeSpaced(t *testing.T, root string, n int) {
	t.Helper()
	if _, err := deltatest.Write(root, deltatest.Table{Schema: spacedTable}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		rows := fmt.Sprintf(`[{"id":%d,"customer id":"c%d","amount":"1.25","seq no":%d},{"id":%d,"customer id":"c%d","amount":"2.50","seq no":%d}]`,
			i, i, i, i+1, i+1, i)
		data, err := pqgen.Bytes(spacedFiles, rows, pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.FromSlash(fallback.Prefix), fmt.Sprintf("2026/01/01/s-%03d.parquet", i))
		if err := pqgen.WriteFile(p, data); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReliabQuotedNames drives reload, verify, history and cleanup on tables whose names
// need quoting: main.sales.`or“ders` (a backquote in the table's name), loaded with
// --rename 'customer id=customer key' (names with spaces); and main.sales.`re“turns`,
// loaded by key with the backquoted forms --rename '`customer id`=`customer key`' and
// --dedupe-order '`seq no`', which keeps, of the two records of an id, the one with the
// highest `seq no`.
func TestReliabQuotedNames(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := reliabBinaries(t)
	const n = 12
	rootA, rootB := filepath.Join(t.TempDir(), "orders"), filepath.Join(t.TempDir(), "returns")
	writeSpaced(t, rootA, n)
	writeSpaced(t, rootB, n)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const tableA, tableB = "main.sales.`or``ders`", "main.sales.`re``turns`"
	// demo serve takes the parts as they are (split at the dots), the release binary the
	// quoted form.
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.or`ders="+rootA, "--table", "main.sales.re`turns="+rootB)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}

	// (1) A plain reload of the table with a backquote in its name, renames with spaces.
	code, out, errOut := s.Within(time.Minute, "-o", "json", "reload", tableA, "--rename", "customer id=customer key",
		"--stage-to", "/Volumes/main/sales/staging/quoted", "--yes")
	if code != 0 {
		t.Fatalf("reload %s: exit %d\nstdout: %s\nstderr: %s", tableA, code, out, errOut)
	}
	if r := decodeStatus(t, out); r.Status != "verified" {
		t.Fatalf("reload %s: %+v\nstderr: %s", tableA, r, errOut)
	}
	if got := s.Count("SELECT count(*) FROM " + tableA + " WHERE `customer key` LIKE 'c%'"); got != 2*n {
		t.Errorf("%s holds %d rows with a customer key, want %d", tableA, got, 2*n)
	}
	for _, c := range [][]string{{"verify", tableA}, {"history", tableA}, {"cleanup", tableA, "--yes"}} {
		if code, out, errOut := s.Within(time.Minute, c...); code != 0 {
			t.Errorf("%s %s: exit %d\nstdout: %s\nstderr: %s", c[0], tableA, code, out, errOut)
		}
	}
	if left := countFiles(t, filepath.Join(rootA, filepath.FromSlash(fallback.Prefix)), ".parquet"); left != 0 {
		t.Errorf("%d fallback files of %s left after cleanup", left, tableA)
	}

	// (2) A load by key, with the backquoted forms.
	code, out, errOut = s.Within(time.Minute, "-o", "json", "reload", tableB, "--rename", "`customer id`=`customer key`",
		"--dedupe-key", "id", "--dedupe-order", "`seq no`", "--stage-to", "/Volumes/main/sales/staging/quoted-b", "--yes")
	if code != 0 {
		t.Fatalf("reload %s by key: exit %d\nstdout: %s\nstderr: %s", tableB, code, out, errOut)
	}
	if r := decodeStatus(t, out); r.Status != "verified" {
		t.Fatalf("reload %s by key: %+v\nstderr: %s", tableB, r, errOut)
	}
	res := s.SQL("SELECT id, `seq no` FROM " + tableB + " ORDER BY id")
	if len(res.Rows) != n+1 {
		t.Fatalf("%s holds %d rows, want one per id (%d): %v", tableB, len(res.Rows), n+1, res.Rows)
	}
	for _, r := range res.Rows {
		id, seq := fmt.Sprint(r[0]), fmt.Sprint(r[1])
		// id k is in files k-1 and k (seq no k-1 and k): the highest wins, and id n+1 is
		// only in file n.
		want := id
		if id == fmt.Sprint(n+1) {
			want = fmt.Sprint(n)
		}
		if seq != want {
			t.Errorf("%s: id %s kept `seq no` %s, want %s", tableB, id, seq, want)
		}
	}
	if code, out, errOut := s.Within(time.Minute, "verify", tableB, "--key", "id"); code != 0 {
		t.Errorf("verify --key id %s: exit %d\nstdout: %s\nstderr: %s", tableB, code, out, errOut)
	}
	w.Stop()
}

// served is the release binary driven against `zbrecover demo serve`, with this package's
// checks as methods.
type served struct{ *e2etest.Served }

// clone is a copy of s whose fields (test, context) can change without changing s.
func (s *served) clone() *served {
	c := *s.Served
	return &served{&c}
}
