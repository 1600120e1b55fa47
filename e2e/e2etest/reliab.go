package e2etest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
)

// WriteOneRowFiles writes a managed table whose producers still write customer_id (renamed
// customer_key since) and DECIMAL(10,2) at root, with n fallback files of one row each over
// four date folders: ids first+1 … first+n, customer "c<id>". It returns the files' keys
// under the fallback folder.
func WriteOneRowFiles(t *testing.T, root string, first, n int) []string {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "_delta_log")); err != nil {
		if _, err := deltatest.Write(root, deltatest.Table{Schema: TableSchema}); err != nil {
			t.Fatal(err)
		}
	}
	fallbackDir := filepath.Join(root, filepath.FromSlash(fallback.Prefix))
	keys := make([]string, 0, n)
	for i := 0; i < n; i++ {
		id := first + i + 1
		data, err := pqgen.Bytes(OldFiles, fmt.Sprintf(`[{"id":%d,"customer_id":"c%d","amount":"%d.25"}]`, id, id, id%100), pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("2026/01/%02d/f-%06d.parquet", 1+i%4, id)
		if err := pqgen.WriteFile(filepath.Join(fallbackDir, filepath.FromSlash(key)), data); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	return keys
}

// FileRows counts the rows of the fallback files in table (every row whose customer_key
// is not a Zerobus writer's), and how many distinct ids they have.
func (s *Served) FileRows(table string) (rows, distinct int64) {
	s.T.Helper()
	n := s.Numbers("SELECT count(*), count(DISTINCT id) FROM "+table+" WHERE customer_key NOT LIKE 'zerobus-%'", 2)
	return n[0], n[1]
}

// Within runs the release binary and fails the test when it has not exited after d: a hang
// is a failure, not a test that runs until the suite's timeout.
func (s *Served) Within(d time.Duration, args ...string) (int, string, string) {
	s.T.Helper()
	ctx, cancel := context.WithTimeout(s.Ctx, d)
	defer cancel()
	sub := *s
	sub.Ctx = ctx
	start := time.Now()
	code, out, errOut, err := sub.RunErr(args...)
	if err != nil {
		if ctx.Err() != nil {
			s.T.Fatalf("zbrecover %s did not finish within %s (hung?)\nstderr: %.4000s", strings.Join(args, " "), d, errOut)
		}
		s.T.Fatalf("zbrecover %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, errOut)
	}
	s.T.Logf("zbrecover %s: exit %d in %s", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond))
	return code, out, errOut
}

// RunErr runs the release binary as Run does, and returns the error of a process that did
// not exit by itself (killed, or its context done) instead of failing the test.
func (s *Served) RunErr(args ...string) (int, string, string, error) {
	cmd := s.Command(args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String(), nil
	case errors.As(err, &ee) && ee.Exited():
		return ee.ExitCode(), out.String(), errb.String(), nil
	}
	return -1, out.String(), errb.String(), err
}

// Command is the release binary's command line with the workspace's settings only.
func (s *Served) Command(args ...string) *exec.Cmd {
	cmd := exec.CommandContext(s.Ctx, s.Release, args...)
	cmd.Env = []string{"HOME=" + s.Home, "PATH=" + os.Getenv("PATH"), "XDG_STATE_HOME=" + s.State}
	for k, v := range s.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// StartKillable starts the release binary with args; the returned function kills it with
// SIGKILL and waits for it, returning what it printed.
func (s *Served) StartKillable(args ...string) (*exec.Cmd, *strings.Builder) {
	s.T.Helper()
	cmd := s.Command(args...)
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		s.T.Fatal(err)
	}
	s.T.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, out
}

// HistoryTags returns the userMetadata of every commit in the table's history.
func (s *Served) HistoryTags(table string) map[string]bool {
	s.T.Helper()
	res := s.SQL("DESCRIBE HISTORY " + table)
	col := -1
	for i, c := range res.Columns {
		if c == "userMetadata" {
			col = i
		}
	}
	if col < 0 {
		s.T.Fatalf("DESCRIBE HISTORY %s has no userMetadata column: %v", table, res.Columns)
	}
	tags := map[string]bool{}
	for _, r := range res.Rows {
		if v, ok := r[col].(string); ok && v != "" {
			tags[v] = true
		}
	}
	return tags
}

// JournalRun is a run as history shows it: its state, its files and each batch's state.
type JournalRun struct {
	Status  string
	Files   int
	Batches map[int]string
}

// JournalRuns reads the table's runs through history -o json, and each run's files through
// history --run.
func (s *Served) JournalRuns(table string) map[string]JournalRun {
	s.T.Helper()
	code, out, errOut := s.Run("-o", "json", "history", table)
	if code != 0 {
		s.T.Fatalf("history: exit %d\n%s", code, errOut)
	}
	var list struct {
		Runs []struct {
			Run    string `json:"run"`
			Status string `json:"status"`
		} `json:"runs"`
	}
	DecodeInto(s.T, out, &list)
	runs := map[string]JournalRun{}
	for _, r := range list.Runs {
		code, out, errOut := s.Run("-o", "json", "history", table, "--run", r.Run)
		if code != 0 {
			s.T.Fatalf("history --run %s: exit %d\n%s", r.Run, code, errOut)
		}
		var doc struct {
			Files []struct {
				Batch int    `json:"batch"`
				State string `json:"state"`
			} `json:"files"`
		}
		DecodeInto(s.T, out, &doc)
		jr := JournalRun{Status: r.Status, Files: len(doc.Files), Batches: map[int]string{}}
		for _, f := range doc.Files {
			jr.Batches[f.Batch] = f.State
		}
		runs[r.Run] = jr
	}
	return runs
}
