//go:build demo && cgo

// Package kill holds the test that kills a staged reload with SIGKILL at random moments: the
// longest of the end-to-end tests, in a test binary of its own.
package kill

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/e2e/e2etest"
)

// TestKilledAtRandomMoments kills a staged reload of 2,500 one-row files (batches of
// 20) with SIGKILL at 20 random moments while a Zerobus writer commits to the table every
// 5 ms; a re-run follows each kill. Never is a fallback row in the table twice; the last
// re-run converges: every row once, the run verified, and no batch is unknown whose commit,
// by the run's tag zbrecover:<run>:<batch>:<attempt>, is in the table's history.
func TestKilledAtRandomMoments(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; 20 kills of a reload of 2,500 files")
	}
	demoBin, release := e2etest.Demo(t), e2etest.Release(t)
	const n, kills, batch = 2500, 20, 20
	root := filepath.Join(t.TempDir(), "orders")
	e2etest.WriteOneRowFiles(t, root, 0, n)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root)
	s := e2etest.NewServed(ctx, t, release, w.Env)
	s.Apply(map[string]any{"zerobus": []map[string]any{{"table": "main.sales.orders", "interval_ms": 5, "rows": 1}}})
	const table = "main.sales.orders"
	args := []string{"-o", "json", "reload", table, "--rename", "customer_id=customer_key",
		"--stage-to", "/Volumes/main/sales/staging/kill9", "--batch-files", fmt.Sprint(batch), "--yes"}

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 9))
	t.Logf("kill moments drawn with seed %d", seed)
	start := time.Now()
	killed, finished, midLoad := 0, 0, 0
	for killed < kills {
		// A kill moment: a random time from the start (listing, planning, staging, claims),
		// or a random number of rows loaded and then a random time (a statement in flight,
		// its journal records, settling).
		before, _ := s.FileRows(table)
		var moment string
		cmd, printed := s.StartKillable(args...)
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if rng.IntN(10) < 3 || before >= n-batch {
			delay := time.Duration(rng.Int64N(int64(1500 * time.Millisecond)))
			moment = fmt.Sprintf("%s after the start", delay.Round(time.Millisecond))
			select {
			case <-exited:
			case <-time.After(delay):
			}
		} else {
			// At most the rows left shared by the kills left, and half of that on average:
			// with the rows that load while a kill is on its way, every kill lands while
			// batches load.
			target := before + 1 + rng.Int64N(max(1, (n-before)/int64(kills-killed+1)))
			delay := time.Duration(rng.Int64N(int64(80 * time.Millisecond)))
			moment = fmt.Sprintf("%d rows in the table, then %s", target, delay.Round(time.Millisecond))
			if e2etest.WaitFor(cmd, exited, 2*time.Minute, func() bool { rows, _ := s.FileRows(table); return rows >= target }) {
				time.Sleep(delay)
			}
		}
		select {
		case <-exited:
			// The run finished before its moment came: it must have converged.
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("reload exited %d before its kill (%s):\n%s", code, moment, printed)
			}
			finished++
			if finished > kills/2 {
				t.Fatalf("the reload finished %d times before its kill moment; %d kills", finished, killed)
			}
		default:
			_ = cmd.Process.Kill()
			<-exited
			killed++
		}
		rows, distinct := s.FileRows(table)
		t.Logf("kill %d at %s: %d fallback rows in the table", killed, moment, rows)
		if rows < n {
			midLoad++
		}
		if rows != distinct {
			t.Fatalf("after %d kills: %d fallback rows in the table, %d distinct ids", killed, rows, distinct)
		}
	}
	t.Logf("%d kills, %d of them before every row was in, and %d runs that finished first, in %s", killed, midLoad, finished, time.Since(start).Round(time.Millisecond))
	if midLoad < kills/2 {
		t.Errorf("only %d of %d kills landed before every row was in the table", midLoad, killed)
	}

	code, out, errOut := s.Within(2*time.Minute, args...)
	if code != 0 || strings.Contains(errOut, "Refused through") {
		t.Fatalf("re-run after %d kills: exit %d\nstdout: %.3000s\nstderr: %s", killed, code, out, errOut)
	}
	if rows, distinct := s.FileRows(table); rows != n || distinct != n {
		t.Errorf("%s holds %d fallback rows (%d distinct ids), want %d once each", table, rows, distinct, n)
	}
	// What the journal says of every run and batch, as history shows it.
	tags := s.HistoryTags(table)
	runs := s.JournalRuns(table)
	if len(runs) == 0 {
		t.Fatal("history lists no run")
	}
	files := 0
	for run, st := range runs {
		if st.Status != "verified" {
			t.Errorf("run %s is %s", run, st.Status)
		}
		for b, state := range st.Batches {
			prefix := fmt.Sprintf("zbrecover:%s:%d:", run, b)
			commit := ""
			for tag := range tags {
				if strings.HasPrefix(tag, prefix) {
					commit = tag
				}
			}
			switch {
			case state != "verified" && commit != "":
				t.Errorf("run %s batch %d is %s, but the table's history holds its commit %s", run, b, state, commit)
			case state == "verified" && commit == "":
				t.Errorf("run %s batch %d is verified, and no commit of the table's history carries its tag", run, b)
			}
		}
		files += st.Files
	}
	if files != n {
		t.Errorf("the runs hold %d files, want %d", files, n)
	}
	if code, out, errOut := s.Within(time.Minute, "verify", table); code != 0 {
		t.Errorf("verify: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	w.Stop()
}
