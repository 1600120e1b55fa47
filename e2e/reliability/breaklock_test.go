//go:build demo && cgo

package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// TestReliabBreakLockOfALiveRun keeps the journal on the S3 emulator (--journal s3://…): a
// reload holds the table's lock while the warehouse holds its second load statement; a
// second `reload --break-lock --yes` is refused (its holder is a running process of this
// host) and breaks nothing; the first reload finishes, verified, every row once; the next
// reload, verify, cleanup and history work and say nothing of a wedge. A lock held on
// another host, just taken, is not broken by --break-lock --yes without a terminal either,
// and the refusal says when its lease ends and what to do.
func TestReliabBreakLockOfALiveRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	const n = 40
	const table = "main.sales.orders"
	site := newRemoteJournalSite(t, table, n)
	s, fallbackDir, srv, with := site.s, site.fallbackDir, site.srv, site.with
	reload := with("-o", "json", "reload", table, "--rename", "customer_id=customer_key",
		"--stage-to", "/Volumes/main/sales/staging/live", "--batch-files", "10", "--no-validate", "--yes")

	// The first batch loads; the second statement is held by the warehouse for 10 s.
	s.Apply(map[string]any{"faults": []map[string]any{{"method": "ExecuteStatement", "match": "(?i)^COPY INTO .* FILES", "skip": 2, "times": 1,
		"action": "delay", "delay_ms": 10000}}})
	first := s.Command(reload...)
	var out1, err1 strings.Builder
	first.Stdout, first.Stderr = &out1, &err1
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = first.Wait(); close(exited) }()
	t.Cleanup(func() {
		if first.ProcessState == nil {
			_ = first.Process.Kill()
			<-exited
		}
	})
	if !e2etest.WaitFor(first, exited, 2*time.Minute, func() bool { return s.faultSeen() > 0 }) {
		t.Fatalf("the reload did not send its second batch:\nstdout: %s\nstderr: %s", out1.String(), err1.String())
	}
	pid := first.Process.Pid

	// --break-lock --yes while the holder works: refused, exit 1, nothing broken.
	code, out, errOut := s.Within(time.Minute, append(reload, "--break-lock")...)
	select {
	case <-exited:
		t.Fatalf("the first reload ended before the second was refused: the check proves nothing\nstderr: %s", err1.String())
	default:
	}
	for _, want := range []string{"is locked by", fmt.Sprintf("pid %d on this host", pid), "wait for it to finish",
		"--break-lock never breaks the lock of a running process"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("reload --break-lock --yes under a live holder: exit %d, stderr lacks %q\nstdout: %s\nstderr: %s", code, want, out, errOut)
		}
	}
	t.Logf("refusal under a live holder:\n%s", errOut)
	if strings.Contains(errOut, "Break the lock?") || strings.Contains(errOut, "no longer running") {
		t.Errorf("the refusal offered to break the lock:\n%s", errOut)
	}

	<-exited
	if code := first.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the first reload: exit %d\nstdout: %s\nstderr: %s", code, out1.String(), err1.String())
	}
	if r := decodeStatus(t, out1.String()); r.Status != "verified" || r.Verified != n/10 || r.Unknown != 0 {
		t.Errorf("the first reload: %+v", r)
	}
	s.ClearFaults()
	if rows, distinct := s.FileRows(table); rows != n || distinct != n {
		t.Errorf("%s holds %d rows (%d distinct ids), want %d once each", table, rows, distinct, n)
	}

	// Every later command works on the run, which one process wrote.
	code, out, errOut = s.Within(time.Minute, reload...)
	if r := decodeStatus(t, out); code != 0 || r.Status != "nothing_to_load" {
		t.Errorf("reload after the run: exit %d %+v\nstderr: %s", code, r, errOut)
	}
	if code, out, errOut := s.Within(time.Minute, with("verify", table)...); code != 0 || strings.Contains(errOut, "two processes") {
		t.Errorf("verify: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	code, out, errOut = s.Within(time.Minute, with("cleanup", table, "--yes")...)
	if code != 0 || countFiles(t, fallbackDir, ".parquet") != 0 || strings.Contains(errOut, "two processes") {
		t.Errorf("cleanup: exit %d, %d fallback files left\nstdout: %s\nstderr: %s", code, countFiles(t, fallbackDir, ".parquet"), out, errOut)
	}
	code, out, errOut = s.Within(time.Minute, with("-o", "json", "history", table)...)
	var hist struct {
		Runs []struct {
			TableID string `json:"table_id"`
			Status  string `json:"status"`
			Wedged  string `json:"wedged"`
		} `json:"runs"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &hist) != nil || len(hist.Runs) != 1 || hist.Runs[0].Status != "cleaned" || hist.Runs[0].Wedged != "" {
		t.Fatalf("history: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// A lock just taken on another host: without a terminal, --break-lock --yes refuses.
	since := time.Now().UTC().Truncate(time.Second)
	lock, _ := json.Marshal(map[string]any{"user": "alice", "host": "build-7.example", "pid": 4242,
		"command": "zbrecover reload " + table, "since": since, "token": "elsewhere"})
	if err := srv.Put("zbrecover/journal/"+hist.Runs[0].TableID+"/lock.json", lock); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = s.Within(time.Minute, append(reload, "--break-lock")...)
	for _, want := range []string{"by alice@build-7.example, pid 4242", "runs on build-7.example",
		"younger than its lease of 24h0m0s, which ends ",
		"its rows loaded twice", "Without a terminal the lock is not broken, even with --yes", "Check that pid 4242 on build-7.example has ended"} {
		if code != 1 || !strings.Contains(errOut, want) {
			t.Errorf("reload --break-lock --yes under another host's lock: exit %d, stderr lacks %q\nstdout: %s\nstderr: %s", code, want, out, errOut)
		}
	}
	t.Logf("refusal under another host's lock:\n%s", errOut)
	site.ws.Stop()
}

// TestReliabWedgedJournalGoesOn: a journal on the S3 emulator holding a run an earlier version
// wedged (a process that broke the lock of a working reload wrote its run record under the
// number of the holder's next record: <seq>-run.json beside <seq>-intent.json), which made
// every later command of the table exit 1. Now each command reads the run by the wedge rule,
// says so, and goes on: reload has nothing to load, verify passes, cleanup deletes the files
// the holder's statements proved loaded, history shows the run with its note.
func TestReliabWedgedJournalGoesOn(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	const n = 20
	const table = "main.sales.orders"
	site := newRemoteJournalSite(t, table, n)
	s, fallbackDir, srv, with := site.s, site.fallbackDir, site.srv, site.with
	reload := with("-o", "json", "reload", table, "--rename", "customer_id=customer_key",
		"--stage-to", "/Volumes/main/sales/staging/wedged", "--batch-files", "5", "--no-validate", "--yes")
	code, out, errOut := s.Within(2*time.Minute, reload...)
	if r := decodeStatus(t, out); code != 0 || r.Status != "verified" {
		t.Fatalf("reload: exit %d %+v\nstderr: %s", code, r, errOut)
	}
	history := func() (string, string, string) {
		t.Helper()
		code, out, errOut := s.Within(time.Minute, with("-o", "json", "history", table)...)
		var hist struct {
			Runs []struct {
				TableID string `json:"table_id"`
				Run     string `json:"run"`
				Status  string `json:"status"`
				Wedged  string `json:"wedged"`
			} `json:"runs"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &hist) != nil || len(hist.Runs) != 1 {
			t.Fatalf("history: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		return hist.Runs[0].TableID + "/runs/" + hist.Runs[0].Run, hist.Runs[0].Status, hist.Runs[0].Wedged
	}
	prefix, _, _ := history()
	// The second process's run record, number 3, as an earlier version named it.
	rec, _ := json.Marshal(map[string]any{"v": 1, "run": strings.Split(prefix, "/")[2], "seq": 3, "time": time.Now().UTC(), "kind": "run",
		"table_id": strings.Split(prefix, "/")[0], "table": table,
		"header": map[string]any{"user": "bob", "host": "bastion-2", "pid": 777, "command": "zbrecover reload " + table + " --break-lock --yes"}})
	if err := srv.Put("zbrecover/journal/"+prefix+"/00000003-run.json", rec); err != nil {
		t.Fatal(err)
	}

	const said = "was written by two processes at once"
	_, status, wedged := history()
	if status != "verified" || !strings.Contains(wedged, said) || !strings.Contains(wedged, "record number 3 is held by two records") {
		t.Errorf("history of the wedged run: %s, %q", status, wedged)
	}
	code, out, errOut = s.Within(time.Minute, reload...)
	if r := decodeStatus(t, out); code != 0 || r.Status != "nothing_to_load" || !strings.Contains(errOut, said) {
		t.Errorf("reload of the wedged table: exit %d %+v\nstderr: %s", code, r, errOut)
	}
	if code, out, errOut := s.Within(time.Minute, with("verify", table)...); code != 0 || !strings.Contains(errOut, said) {
		t.Errorf("verify of the wedged run: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	code, out, errOut = s.Within(time.Minute, with("cleanup", table, "--yes")...)
	if code != 0 || countFiles(t, fallbackDir, ".parquet") != 0 || !strings.Contains(errOut, said) {
		t.Errorf("cleanup of the wedged run: exit %d, %d fallback files left\nstdout: %s\nstderr: %s", code, countFiles(t, fallbackDir, ".parquet"), out, errOut)
	}
	if rows, distinct := s.FileRows(table); rows != n || distinct != n {
		t.Errorf("%s holds %d rows (%d distinct ids), want %d once each", table, rows, distinct, n)
	}
	if _, status, _ := history(); status != "cleaned" {
		t.Errorf("history after cleanup: %s", status)
	}
	site.ws.Stop()
}

// remoteJournalSite is demo serve with table's n one-row parked files, the release binary
// against it, and a journal on the S3 emulator.
type remoteJournalSite struct {
	s           *served
	ws          *e2etest.ServedWorkspace
	root        string // the table's storage root
	fallbackDir string
	srv         *s3test.Server
	journal     string // the journal's URL
	// with returns args with the S3 emulator's flags before them and --journal after.
	with func(args ...string) []string
}

func newRemoteJournalSite(t *testing.T, table string, n int) *remoteJournalSite {
	t.Helper()
	demoBin, release := reliabBinaries(t)
	root := filepath.Join(t.TempDir(), "orders")
	e2etest.WriteOneRowFiles(t, root, 0, n)
	srv := s3test.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", table+"="+root)
	env := map[string]string{"AWS_ACCESS_KEY_ID": s3test.AccessKeyID, "AWS_SECRET_ACCESS_KEY": s3test.SecretAccessKey, "AWS_REGION": s3test.Region}
	for k, v := range w.Env {
		env[k] = v
	}
	site := &remoteJournalSite{s: &served{e2etest.NewServed(ctx, t, release, env)}, ws: w, root: root,
		fallbackDir: filepath.Join(root, filepath.FromSlash(fallback.Prefix)), srv: srv, journal: srv.URLFor("zbrecover/journal")}
	global := []string{"--s3-endpoint", srv.URL, "--s3-region", s3test.Region}
	site.with = func(args ...string) []string {
		return append(append(append([]string(nil), global...), args...), "--journal", site.journal)
	}
	return site
}
