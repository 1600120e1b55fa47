//go:build demo && cgo

package undo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
)

// addFiles writes n more one-row fallback files under root: ids firstID+from+1 … .
func addFiles(t *testing.T, root string, from, n int) {
	t.Helper()
	for i := from + 1; i <= from+n; i++ {
		id := firstID + i
		data, err := pqgen.Bytes(e2etest.OldFiles, fmt.Sprintf(`[{"id":%d,"customer_id":"c%d","amount":"%d.25"}]`, id, id, id%100), pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("2026/02/%02d/f-%07d.parquet", 1+i%2, id)
		if err := pqgen.WriteFile(filepath.Join(root, filepath.FromSlash(fallback.Prefix), filepath.FromSlash(key)), data); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUndoKilledAtRandomMoments kills an undo of a run of 300 one-row batches with SIGKILL at 20
// random moments while Zerobus commits to the table every 5 ms, on a table with row tracking
// where another run's rows sit beside it; a re-run follows each kill. After every kill, no
// row the undone run did not load is gone (the other run's rows all there, Zerobus' rows
// never fewer) and the run's rows only ever decrease; the last re-run converges: every batch
// undone, its rows all gone, each batch's rows deleted by exactly one DELETE, every Zerobus
// row kept.
func TestUndoKilledAtRandomMoments(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; 20 kills of an undo")
	}
	demoBin, release := e2etest.Demo(t), e2etest.Release(t)
	const keep, undone, kills = 20, 300, 20
	const table = "main.sales.orders"
	root := filepath.Join(t.TempDir(), "orders")
	writeTable(t, root, map[string]string{"delta.enableRowTracking": "true"}, keep)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", table+"="+root)
	s := served{e2etest.NewServed(ctx, t, release, w.Env)}
	s.Apply(map[string]any{"zerobus": []map[string]any{{"table": table, "interval_ms": 5, "rows": 1}}})
	s.reload(table, "/Volumes/main/sales/staging/kept", "--rename", "customer_id=customer_key", "--batch-files", "10")
	addFiles(t, root, keep, undone)
	target := s.reload(table, "/Volumes/main/sales/staging/undone", "--rename", "customer_id=customer_key", "--batch-files", "1")
	if target.Inserted != undone {
		t.Fatalf("the run to undo loaded %+v", target)
	}
	counts := func() (kept, run, zerobus int64) {
		n := s.Numbers(fmt.Sprintf("SELECT count(CASE WHEN id BETWEEN %d AND %d THEN 1 END), count(CASE WHEN id > %d THEN 1 END), "+
			"count(CASE WHEN customer_key LIKE 'zerobus-%%' THEN 1 END) FROM %s", firstID+1, firstID+keep, firstID+keep, table), 3)
		return n[0], n[1], n[2]
	}
	args := []string{"-o", "json", "undo", table, "--run", target.Run, "--yes"}

	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 3))
	t.Logf("kill moments drawn with seed %d", seed)
	start := time.Now()
	_, lastRun, lastZB := counts()
	killed, finished, midUndo := 0, 0, 0
	for killed < kills {
		cmd, printed := s.StartKillable(args...)
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		var moment string
		if rng.IntN(10) < 3 || lastRun <= 4 {
			delay := time.Duration(rng.Int64N(int64(600 * time.Millisecond)))
			moment = fmt.Sprintf("%s after the start", delay.Round(time.Millisecond))
			select {
			case <-exited:
			case <-time.After(delay):
			}
		} else {
			// A number of the run's rows deleted, then a random time: a DELETE in flight, its
			// journal records, its settling.
			goal := lastRun - 1 - rng.Int64N(max(1, lastRun/int64(kills-killed+1)))
			delay := time.Duration(rng.Int64N(int64(30 * time.Millisecond)))
			moment = fmt.Sprintf("%d of the run's rows left, then %s", goal, delay.Round(time.Millisecond))
			if e2etest.WaitFor(cmd, exited, time.Minute, func() bool { _, run, _ := counts(); return run <= goal }) {
				time.Sleep(delay)
			}
		}
		select {
		case <-exited:
			if code := cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("undo exited %d before its kill (%s):\n%.3000s", code, moment, printed)
			}
			finished++
			if finished > kills/2 {
				t.Fatalf("the undo finished %d times before its kill moment; %d kills", finished, killed)
			}
		default:
			_ = cmd.Process.Kill()
			<-exited
			killed++
		}
		kept, run, zb := counts()
		t.Logf("kill %d at %s: %d of the run's rows left", killed, moment, run)
		if run > 0 {
			midUndo++
		}
		switch {
		case kept != keep:
			t.Fatalf("after %d kills: %d rows of the other run, want %d: undo deleted rows its run did not load", killed, kept, keep)
		case zb < lastZB:
			t.Fatalf("after %d kills: Zerobus rows went from %d to %d", killed, lastZB, zb)
		case run > lastRun:
			t.Fatalf("after %d kills: the run's rows went from %d to %d", killed, lastRun, run)
		}
		lastRun, lastZB = run, zb
	}
	t.Logf("%d kills, %d before every row of the run was gone, %d runs that finished first, in %s", killed, midUndo, finished, time.Since(start).Round(time.Millisecond))
	if midUndo < kills/2 {
		t.Errorf("only %d of %d kills landed while the run's rows were being deleted", midUndo, killed)
	}

	code, out, errOut := s.Within(2*time.Minute, args...)
	if code != 0 {
		t.Fatalf("re-run after %d kills: exit %d\nstdout: %.3000s\nstderr: %s", killed, code, out, errOut)
	}
	var rep undoReport
	e2etest.DecodeInto(t, out, &rep)
	if rep.Status != "undone" {
		t.Errorf("the run is %s after the last re-run", rep.Status)
	}
	zb := s.stopZerobus(table)
	kept, run, zbRows := counts()
	if kept != keep || run != 0 || zbRows != zb {
		t.Errorf("at the end: %d rows of the other run (want %d), %d of the undone run (want 0), %d Zerobus rows (the writer committed %d)", kept, keep, run, zbRows, zb)
	}
	// Each batch's rows were deleted by exactly one DELETE: the commits carrying its undo tags
	// that deleted rows.
	res := s.SQL("DESCRIBE HISTORY " + table)
	col := map[string]int{}
	for i, c := range res.Columns {
		col[c] = i
	}
	deletes := map[string]int{}
	for _, r := range res.Rows {
		tag, _ := r[col["userMetadata"]].(string)
		metrics, _ := r[col["operationMetrics"]].(string)
		prefix := "zbrecover:" + target.Run + ":undo:"
		if !strings.HasPrefix(tag, prefix) || strings.Contains(metrics, `"numDeletedRows":"0"`) {
			continue
		}
		batch, _, _ := strings.Cut(strings.TrimPrefix(tag, prefix), ":")
		deletes[batch]++
	}
	runs := s.JournalRuns(table)
	st, ok := runs[target.Run]
	if !ok || st.Status != "undone" || len(st.Batches) == 0 {
		t.Fatalf("the journal's run %s: %+v", target.Run, st)
	}
	for b, state := range st.Batches {
		if state != "undone" {
			t.Errorf("batch %d is %s", b, state)
		}
		if n := deletes[fmt.Sprint(b)]; n != 1 {
			t.Errorf("batch %d's rows were deleted by %d DELETEs", b, n)
		}
	}
	w.Stop()
}
