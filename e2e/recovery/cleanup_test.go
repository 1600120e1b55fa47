//go:build cgo

package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/cmd"
	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

type cleanupJSON struct {
	Run       string `json:"run"`
	Deleted   int    `json:"deleted"`
	Gone      int    `json:"gone"`
	Skipped   int    `json:"skipped"`
	Failed    int    `json:"failed"`
	After     string `json:"status_after"`
	Archive   string `json:"archive"`
	Kept      []left `json:"kept"`
	Untracked []left `json:"untracked"`
	Problems  []struct {
		Key    string `json:"key"`
		Status string `json:"status"`
		Reason string `json:"reason"`
	} `json:"problems"`
	Results []struct {
		Key     string `json:"key"`
		Status  string `json:"status"`
		Archive string `json:"archive"`
	} `json:"results"`
}

type left struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// fallbackFiles returns the fallback files on disk, relative to the root.
func (r *recovery) fallbackFiles(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	base := filepath.Join(r.root, filepath.FromSlash(fallback.Prefix))
	err := filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(r.root, p)
		out[filepath.ToSlash(rel)] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runState reads the one run of the recovery's journal.
func runState(t testing.TB) *journal.State {
	t.Helper()
	ctx := context.Background()
	s, err := journal.OpenDir(filepath.Join(os.Getenv("XDG_STATE_HOME"), "zbrecover"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tables, err := s.Tables(ctx)
	if err != nil || len(tables) != 1 {
		t.Fatalf("journal tables %v, %v", tables, err)
	}
	ids, err := s.RunIDs(ctx, tables[0])
	if err != nil || len(ids) != 1 {
		t.Fatalf("runs %v, %v", ids, err)
	}
	st, err := journal.ReadState(ctx, s, tables[0], ids[0])
	if err != nil {
		t.Fatalf("the journal does not replay: %v", err)
	}
	return st
}

// reloadWithUnknownBatch reloads 30 files in three folders (10 each, one batch per folder);
// the files of folder 01 were loaded by hand before, so reload's batch for them inserts 0
// rows and stays unknown. It returns the verified and the unknown keys.
func reloadWithUnknownBatch(t *testing.T) (*recovery, []string, []string) {
	t.Helper()
	r := reloadSmall(t)
	code, out, errOut := runZbrecover(t, append(reloadArgs(r), "--dry-run")...)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	var plan struct {
		Batches []struct {
			Folder string `json:"folder"`
			SQL    string `json:"sql"`
		} `json:"batches"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	byHand := false
	for _, b := range plan.Batches {
		if strings.HasSuffix(strings.TrimSuffix(b.Folder, "/"), "2026/01/01") {
			r.exec(t, b.SQL)
			byHand = true
		}
	}
	if !byHand {
		t.Fatalf("no batch for folder 2026/01/01 in %s", out)
	}
	code, out, errOut = runZbrecover(t, reloadArgs(r)...)
	if code != 5 {
		t.Fatalf("reload: exit %d, want 5 (one batch unknown)\n%s%s", code, out, errOut)
	}
	if rep := decodeReload(t, out); rep.Verified != 2 || rep.Unknown != 1 {
		t.Fatalf("reload report %+v", rep)
	}
	var verified, unknown []string
	for _, f := range runState(t).Files() {
		switch f.Status {
		case journal.BatchVerified:
			verified = append(verified, f.Key)
		case journal.BatchUnknown:
			unknown = append(unknown, f.Key)
		}
	}
	if len(verified) != 20 || len(unknown) != 10 {
		t.Fatalf("%d verified, %d unknown files", len(verified), len(unknown))
	}
	sort.Strings(verified)
	return r, verified, unknown
}

// checkPartialCleanup checks the report of `cleanup --yes -o json` (out) and the fallback
// files left (after) in the scenario both cleanup end-to-end tests build: 19 verified files
// deleted, one changed since it was verified (skipped), a late file and the files of an
// unknown batch kept with their reasons. It returns the files that must remain.
func checkPartialCleanup(t *testing.T, out string, after map[string]bool, changed, late string, unknown []string) map[string]bool {
	t.Helper()
	var rep cleanupJSON
	e2etest.DecodeInto(t, out, &rep)
	if rep.Deleted != 19 || rep.Skipped != 1 || rep.Failed != 0 || len(rep.Problems) != 1 || rep.Problems[0].Key != changed ||
		!strings.Contains(rep.Problems[0].Reason, "changed since it was verified") || rep.After != "partially_cleaned" {
		t.Errorf("report %+v", rep)
	}
	reasons := map[string]string{}
	for _, k := range append(rep.Kept, rep.Untracked...) {
		reasons[k.Key] = k.Reason
	}
	if !strings.Contains(reasons[late], "not in this run's journal") {
		t.Errorf("late file: %q", reasons[late])
	}
	for _, k := range unknown {
		if !strings.Contains(reasons[k], "unknown") {
			t.Errorf("unknown file %s: %q", k, reasons[k])
		}
	}
	want := map[string]bool{late: true, changed: true}
	for _, k := range unknown {
		want[k] = true
	}
	for k := range want {
		if !after[k] {
			t.Errorf("%s was deleted", k)
		}
	}
	return want
}

// TestCleanupDeletesExactlyTheVerifiedFiles: after a reload with one unknown batch, a file
// added after verification and a verified file overwritten since, cleanup without --yes
// deletes nothing (exit 2 without a terminal, the plan on a terminal), and cleanup --yes
// deletes exactly the verified, unchanged files, keeps the rest with reasons, and exits 5.
func TestCleanupDeletesExactlyTheVerifiedFiles(t *testing.T) {
	r, verified, unknown := reloadWithUnknownBatch(t)
	late := fallback.Prefix + "2026/01/02/late-00001.parquet"
	if err := os.WriteFile(filepath.Join(r.root, filepath.FromSlash(late)), []byte("arrived after verification"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed := verified[3]
	p := filepath.Join(r.root, filepath.FromSlash(changed))
	if err := os.WriteFile(p, []byte("overwritten after verification"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	before := r.fallbackFiles(t)

	// No terminal, no --yes: refused, the plan printed, nothing deleted.
	code, out, errOut := runZbrecover(t, "cleanup", r.table)
	if code != 2 || !strings.Contains(errOut, "--yes") || !strings.Contains(out, "Plan: delete 19 files") ||
		!strings.Contains(out, "keep 1 file: changed since it was verified") || !strings.Contains(out, "    "+changed+"\n") {
		t.Fatalf("no --yes: exit %d\n%s%s", code, out, errOut)
	}
	// On a terminal without --yes: the plan (the files kept, the totals; each file to delete
	// only at -v), exit 0, nothing deleted.
	code, out, errOut = runZbrecoverTTY(t, "cleanup", r.table)
	if code != 0 || strings.Contains(out, "delete "+verified[0]) || !strings.Contains(out, "    "+late+"\n") ||
		!strings.Contains(out, "    "+unknown[0]+"\n") || !strings.Contains(errOut, "Nothing was deleted") {
		t.Fatalf("terminal, no --yes: exit %d\n%s%s", code, out, errOut)
	}
	// --dry-run prints the deletes and sends none.
	code, out, errOut = runZbrecover(t, "cleanup", r.table, "--dry-run")
	if code != 0 || strings.Count(out, "would delete ") != 19 {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	// Under -o json the dry run is the plan's document, the deletes on stderr as notices.
	code, out, errOut = runZbrecover(t, "-o", "json", "cleanup", r.table, "--dry-run")
	var dry struct {
		DryRun bool     `json:"dry_run"`
		Keys   []string `json:"keys"`
	}
	if err := json.Unmarshal([]byte(out), &dry); code != 0 || err != nil || !dry.DryRun || len(dry.Keys) != 19 ||
		strings.Count(errOut, `{"notice":"would delete `) != 19 {
		t.Fatalf("dry run -o json: exit %d, %+v (%v)\n%s%s", code, dry, err, out, errOut)
	}
	if after := r.fallbackFiles(t); len(after) != len(before) {
		t.Fatalf("%d files before, %d after the runs without --yes", len(before), len(after))
	}

	code, out, errOut = runZbrecover(t, "-o", "json", "cleanup", r.table, "--yes")
	if code != 5 {
		t.Fatalf("cleanup: exit %d, want 5\n%s%s", code, out, errOut)
	}
	after := r.fallbackFiles(t)
	want := checkPartialCleanup(t, out, after, changed, late, unknown)
	for _, k := range verified {
		if k != changed && after[k] {
			t.Errorf("verified file %s is still there", k)
		}
	}
	if len(after) != len(want) {
		t.Errorf("%d files left, want %d", len(after), len(want))
	}
	st := runState(t)
	if st.Status != journal.RunPartiallyCleaned {
		t.Errorf("run status %s", st.Status)
	}
	if f, _ := st.File(changed); f.Delete != journal.DeleteSkip {
		t.Errorf("journal: %s is %q", changed, f.Delete)
	}

	// Again: only the changed file is tried, kept again, and named with the reason.
	code, out, errOut = runZbrecover(t, "cleanup", r.table, "--yes")
	if code != 5 || !strings.Contains(out, "0 deleted") || !strings.Contains(out, "1 skipped") ||
		!strings.Contains(out, "skipped "+changed+": changed since it was verified") || !strings.Contains(errOut, "1 file changed since it was verified and was kept") {
		t.Errorf("second cleanup: exit %d\n%s%s", code, out, errOut)
	}
	if got := r.fallbackFiles(t); len(got) != len(want) {
		t.Errorf("second cleanup: %d files left, want %d", len(got), len(want))
	}
}

// TestCleanupArchive: --archive-to another store: every file is in the archive with its
// size, the originals are gone, and the journal names each archive copy.
func TestCleanupArchive(t *testing.T) {
	r, verified, _ := reloadWithUnknownBatch(t)
	sizes := map[string]int64{}
	for _, k := range verified {
		fi, err := os.Stat(filepath.Join(r.root, filepath.FromSlash(k)))
		if err != nil {
			t.Fatal(err)
		}
		sizes[k] = fi.Size()
	}
	archive := t.TempDir()
	code, out, errOut := runZbrecover(t, "-o", "json", "cleanup", r.table, "--yes", "--archive-to", archive)
	if code != 0 {
		t.Fatalf("cleanup: exit %d\n%s%s", code, out, errOut)
	}
	var rep cleanupJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != 20 || rep.After != "cleaned" || rep.Archive == "" {
		t.Errorf("report %+v", rep)
	}
	left := r.fallbackFiles(t)
	for k, n := range sizes {
		fi, err := os.Stat(filepath.Join(archive, filepath.FromSlash(k)))
		if err != nil || fi.Size() != n {
			t.Errorf("archive copy of %s: %v (size %v, want %d)", k, err, fi, n)
		}
		if left[k] {
			t.Errorf("%s still there", k)
		}
	}
	st := runState(t)
	if st.Status != journal.RunCleaned {
		t.Errorf("status %s", st.Status)
	}
	for _, f := range st.VerifiedFiles() {
		if f.Delete != journal.Deleted || !strings.HasSuffix(f.Archive, f.Key) {
			t.Errorf("journal: %s %s archive %q", f.Key, f.Delete, f.Archive)
		}
	}
	// A cleaned run has nothing left to clean.
	if code, out, errOut := runZbrecover(t, "cleanup", r.table, "--yes"); code != 0 || !strings.Contains(errOut, "Nothing to clean up") {
		t.Errorf("cleanup of a cleaned run: exit %d\n%s%s", code, out, errOut)
	}
}

// TestCleanupRefusesAnUnsettledRun: a run whose reload stopped with a batch not loaded is
// refused with exit 4 and nothing is deleted.
func TestCleanupRefusesAnUnsettledRun(t *testing.T) {
	r := reloadSmall(t)
	r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Skip: 1,
		Error: &warehouse.SQLError{Class: "INTERNAL_ERROR", SQLState: "XX000", Message: "injected"}})
	if code, out, errOut := runZbrecover(t, reloadArgs(r)...); code == 0 {
		t.Fatalf("reload with a failing batch exited 0\n%s%s", out, errOut)
	}
	before := r.fallbackFiles(t)
	code, out, errOut := runZbrecover(t, "cleanup", r.table, "--yes", "--run", runState(t).Run)
	if code != 4 || !strings.Contains(out+errOut, "reload again") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if after := r.fallbackFiles(t); len(after) != len(before) {
		t.Errorf("%d files deleted", len(before)-len(after))
	}
}

func runZbrecoverTTY(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	io, _, out, errOut := iostreams.Test()
	io.SetStdinTTY(true)
	io.SetStderrTTY(true)
	f := cmd.NewFactory(io)
	code := cmd.Run(context.Background(), f, args)
	return code, out.String(), errOut.String()
}

// TestCleanupS3SlowDownVerbose: a verified run on an S3 root (the emulator); two of the
// three DeleteObjects requests first get 503 SlowDown. Cleanup completes, and -v shows the
// retries with their backoff, the concurrency limit halving with its cause, and the request
// counts.
func TestCleanupS3SlowDownVerbose(t *testing.T) {
	ctx := context.Background()
	srv := s3test.NewServer(t)
	const id = "0b6c1c8e-0000-4000-8000-00000000e2e5"
	dir := t.TempDir()
	if _, err := deltatest.Write(dir, deltatest.Table{Schema: e2etest.TableSchema, ID: id, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		return srv.Put("orders/"+filepath.ToSlash(rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2500
	var keys []string
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("%s2026/01/01/f-%05d.parquet", fallback.Prefix, i)
		if err := srv.Put("orders/"+k, []byte("parquet bytes of "+k)); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	b, err := all.Registry().Open(ctx, srv.URLFor("orders"), srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	var files []journal.File
	for _, k := range keys {
		o, err := b.Stat(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, journal.FileOf(o, 2))
	}
	jdir := t.TempDir()
	js, err := journal.OpenDir(jdir)
	if err != nil {
		t.Fatal(err)
	}
	// The table, registered in a local workspace from a copy of the same Delta log: cleanup
	// re-checks its history before deleting.
	startWorkspace(t, workspace.Options{}, "main.sales.orders", dir)
	w, err := journal.Start(ctx, js, journal.Target{TableID: id, Table: "main.sales.orders", Root: b.Location()}, "", journal.Header{Command: "reload"})
	if err != nil {
		t.Fatal(err)
	}
	base := int64(-1)
	for _, r := range []journal.Record{
		{Kind: journal.KindPlan, Plan: &journal.Plan{Batches: []journal.PlanBatch{{Batch: 1, Folder: fallback.Prefix + "2026/01/01/", Files: files, ExpectedRows: 2 * n}}}},
		{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: 1, Files: files, ExpectedRows: 2 * n, BaseVersion: &base}},
		{Kind: journal.KindResult, Result: &journal.Result{Batch: 1, Inserted: journal.Int64(2 * n)}},
		{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: 1, Status: journal.BatchVerified, Evidence: journal.EvidenceAnswer}},
		{Kind: journal.KindEnd, End: &journal.End{State: journal.RunVerified}},
	} {
		if err := w.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	js.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretAccessKey)
	t.Setenv("AWS_REGION", s3test.Region)

	srv.FailNext(storagetest.KindBatchDelete, 503, 2)
	code, out, errOut := runZbrecover(t, "-v", "--no-progress", "--s3-endpoint", srv.URL, "--s3-region", s3test.Region,
		"cleanup", "--table", "main.sales.orders", "--root", srv.URLFor("orders"), "--yes", "--journal", jdir)
	if code != 0 || !strings.Contains(out, textfmt.Count(n)+" deleted") {
		t.Fatalf("cleanup: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{`level=info msg=retry op="delete batch"`, "SlowDown", "wait=", `msg="delete concurrency" limit=4 why=throttled was=8 error=`,
		"delete-batches=5 (", "throttles=2", "decreases=1"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("-v output lacks %q:\n%s", want, errOut)
		}
	}
	for _, l := range strings.Split(errOut, "\n") {
		if strings.Contains(l, "delete concurrency") && strings.Contains(l, "why=throttled") && !strings.Contains(l, "SlowDown") {
			t.Errorf("the lowering does not name its cause: %s", l)
		}
	}
	if c := srv.Counts(); c.BatchDeletes != 5 {
		t.Errorf("emulator: %s", c)
	}
	var left int
	_ = b.List(ctx, fallback.Prefix, func(storage.ObjectInfo) error { left++; return nil })
	if left != 0 {
		t.Errorf("%d files left", left)
	}
}
