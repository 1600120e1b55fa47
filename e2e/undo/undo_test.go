//go:build demo && cgo

package undo

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/e2e/e2etest"
)

// TestUndoThenRedo: on four managed tables that Zerobus keeps writing to, a staged reload with
// the wrong fix (customer_id renamed into note), then undo, then a staged reload with the
// right fix: the table ends with every fallback record exactly once, loaded right, and every
// Zerobus row written meanwhile. Undo names the rows by row IDs (row tracking on; an OPTIMIZE
// between the load and the undo leaves them exact and refuses the files evidence, saying which
// commit removed the files), by the load's files (untouched), by keys (the run's keys file,
// after an OPTIMIZE), and is refused cleanly, deleting nothing, when none applies. Between the
// undo and the redo, cleanup deletes none of the undone run's files.
func TestUndoThenRedo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := e2etest.Demo(t), e2etest.Release(t)
	const n, batch = 40, 10
	type scenario struct {
		table, evidence string
		conf            map[string]string
		optimize, key   bool
	}
	scenarios := []scenario{
		{table: "rowids", evidence: "row_ids", conf: map[string]string{"delta.enableRowTracking": "true"}, optimize: true},
		{table: "files", evidence: "files"},
		{table: "keys", evidence: "keys", optimize: true, key: true},
		{table: "none", evidence: "", optimize: true},
	}
	var args []string
	roots := map[string]string{}
	for _, sc := range scenarios {
		root := filepath.Join(t.TempDir(), sc.table)
		roots[sc.table] = root
		writeTable(t, root, sc.conf, n)
		args = append(args, "--table", "main.sales."+sc.table+"="+root)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, args...)
	s := served{e2etest.NewServed(ctx, t, release, w.Env)}
	var writers []map[string]any
	for _, sc := range scenarios {
		writers = append(writers, map[string]any{"table": "main.sales." + sc.table, "interval_ms": 10, "rows": 1})
	}
	s.Apply(map[string]any{"zerobus": writers})

	for _, sc := range scenarios {
		t.Run(sc.table, func(t *testing.T) {
			sub := *s.Served
			sub.T = t
			s := served{&sub}
			table := "main.sales." + sc.table
			vol := "/Volumes/main/sales/staging/" + sc.table
			// (1) The wrong fix, loaded and verified.
			wrongArgs := []string{"--rename", "customer_id=note", "--batch-files", fmt.Sprint(batch)}
			if sc.key {
				wrongArgs = append(wrongArgs, "--key", "id")
			}
			wrong := s.reload(table, vol+"/wrong", wrongArgs...)
			if wrong.Inserted != n || s.wrongRows(table) != n {
				t.Fatalf("the wrong load: %+v, %d rows with the wrong rename", wrong, s.wrongRows(table))
			}
			if sc.optimize {
				s.SQL("OPTIMIZE " + table)
			}
			time.Sleep(50 * time.Millisecond) // Zerobus commits after the load and the OPTIMIZE
			zbBefore := s.zerobusRows(table)

			// (2) The plan: the evidence chosen per batch, the stronger ones' reasons.
			code, out, errOut := s.Run("-o", "json", "undo", table, "--dry-run")
			var plan undoPlan
			e2etest.DecodeInto(t, out, &plan)
			if sc.evidence == "" {
				if code != 4 || plan.Undo != 0 || plan.Refused != n/batch {
					t.Fatalf("undo without evidence: exit %d, plan %+v\nstderr: %s", code, plan, errOut)
				}
				for _, b := range plan.Batches {
					if !strings.Contains(b.Refused, "no evidence names exactly its rows") || !strings.Contains(b.Refused, "row tracking is not enabled") ||
						!strings.Contains(b.Refused, "(OPTIMIZE) removed") || !strings.Contains(b.Refused, "no keys file") ||
						!strings.Contains(b.Refused, "row tracking enabled on the table before the load") {
						t.Errorf("batch %d refused: %s", b.Batch, b.Refused)
					}
				}
				code, out, errOut = s.Run("undo", table, "--yes")
				if code != 4 || !strings.Contains(errOut, "nothing was deleted") {
					t.Fatalf("undo --yes without evidence: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
				}
				if s.wrongRows(table) != n {
					t.Fatalf("a refused undo changed the table: %d wrong rows left", s.wrongRows(table))
				}
				if z := s.zerobusRows(table); z < zbBefore {
					t.Errorf("Zerobus rows went from %d to %d", zbBefore, z)
				}
				return
			}
			if code != 0 || plan.Undo != n/batch || plan.Refused != 0 || plan.Rows != n || !strings.Contains(plan.Redo, "fresh staged paths") {
				t.Fatalf("dry run: exit %d, plan %+v\nstderr: %s", code, plan, errOut)
			}
			for _, b := range plan.Batches {
				if b.Evidence != sc.evidence || b.Matched != b.Rows {
					t.Errorf("batch %d: evidence %s (want %s), matched %d of %d", b.Batch, b.Evidence, sc.evidence, b.Matched, b.Rows)
				}
				for _, o := range b.Options {
					switch {
					case sc.table == "rowids" && o.Evidence == "files":
						// (must-show 2) OPTIMIZE between the load and the undo: files refused, saying why.
						if o.Usable || !strings.Contains(o.Why, "(OPTIMIZE) removed") {
							t.Errorf("batch %d files option after OPTIMIZE: %+v", b.Batch, o)
						}
					case sc.table == "keys" && o.Evidence == "row_ids":
						if o.Usable || !strings.Contains(o.Why, "row tracking is not enabled") {
							t.Errorf("batch %d row IDs option: %+v", b.Batch, o)
						}
					}
				}
			}
			if s.wrongRows(table) != n {
				t.Fatal("the dry run deleted rows")
			}

			// (3) The undo: every batch's rows, and only them.
			code, out, errOut = s.Run("-o", "json", "undo", table, "--yes")
			if code != 0 {
				t.Fatalf("undo: exit %d\nstdout: %.3000s\nstderr: %s", code, out, errOut)
			}
			var rep undoReport
			e2etest.DecodeInto(t, out, &rep)
			if rep.Undone != n/batch || rep.Deleted != n || rep.Status != "undone" || rep.Tagging != "tag" {
				t.Fatalf("undo report %+v", rep)
			}
			if rows, _, _ := s.fileRows(table); rows != 0 {
				t.Errorf("%d fallback rows left after the undo", rows)
			}
			if z := s.zerobusRows(table); z < zbBefore {
				t.Errorf("the undo deleted Zerobus rows: %d before, %d after", zbBefore, z)
			}
			// Every batch's DELETE carries its undo tag, once.
			tags := s.HistoryTags(table)
			for i := 1; i <= n/batch; i++ {
				if !tags[fmt.Sprintf("zbrecover:%s:undo:%d:1", rep.Run, i)] {
					t.Errorf("no commit carries the undo tag of batch %d", i)
				}
			}

			// (4) Cleanup between the undo and the redo deletes none of the undone files.
			code, _, errOut = s.Run("cleanup", table, "--yes")
			if code != 0 || e2etest.FallbackLeft(t, roots[sc.table]) != n {
				t.Errorf("cleanup after the undo: exit %d, %d of %d files left\n%s", code, e2etest.FallbackLeft(t, roots[sc.table]), n, errOut)
			}

			// (5) The redo with the right fix: the plan says so; through fresh staged paths,
			// every file once more.
			code, out, errOut = s.Run("-o", "json", "reload", table, "--stage-to", vol+"/right", "--rename", "customer_id=customer_key",
				"--batch-files", fmt.Sprint(batch), "--dry-run")
			var redoPlan struct {
				Redo   int `json:"redo_files"`
				Forced int `json:"forced_files"`
			}
			e2etest.DecodeInto(t, out, &redoPlan)
			if code != 0 || redoPlan.Redo != n || redoPlan.Forced != 0 {
				t.Errorf("the redo's plan: exit %d, %+v\n%s", code, redoPlan, errOut)
			}
			right := s.reload(table, vol+"/right", "--rename", "customer_id=customer_key", "--batch-files", fmt.Sprint(batch))
			if right.Inserted != n || right.Staged != n {
				t.Errorf("the redo: %+v", right)
			}
			zb := s.stopZerobus(table)
			rows, distinct, ok := s.fileRows(table)
			if rows != n || distinct != n || ok != n {
				t.Errorf("after the redo: %d fallback rows, %d distinct, %d right; want %d of each", rows, distinct, ok, n)
			}
			if z := s.zerobusRows(table); z != zb || zb == 0 {
				t.Errorf("%d Zerobus rows in the table, the writer committed %d", z, zb)
			}
			// A further reload has nothing to load.
			code, out, _ = s.Run("-o", "json", "reload", table, "--stage-to", vol+"/again", "--rename", "customer_id=customer_key", "--yes")
			if code != 0 || !strings.Contains(out, `"nothing_to_load"`) {
				t.Errorf("a further reload: exit %d\n%.2000s", code, out)
			}
		})
	}
	w.Stop()
}

// TestUndoOfACleanedRun: undo of a run whose files cleanup deleted without an archive is
// refused (its rows, once deleted, could not be loaded again) and deletes nothing; after a
// cleanup that archived every file, the plan says the rows will be reloaded from the archive,
// and they are: a staged reload with the right fix reading the archive as the root loads
// every record once, right.
func TestUndoOfACleanedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := e2etest.Demo(t), e2etest.Release(t)
	const n = 12
	gone, kept := filepath.Join(t.TempDir(), "gone"), filepath.Join(t.TempDir(), "kept")
	writeTable(t, gone, map[string]string{"delta.enableRowTracking": "true"}, n)
	writeTable(t, kept, map[string]string{"delta.enableRowTracking": "true"}, n)
	archive := "file://" + filepath.Join(t.TempDir(), "archive")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.gone="+gone, "--table", "main.sales.kept="+kept)
	s := served{e2etest.NewServed(ctx, t, release, w.Env)}
	s.Apply(map[string]any{"zerobus": []map[string]any{{"table": "main.sales.gone", "interval_ms": 10, "rows": 1}, {"table": "main.sales.kept", "interval_ms": 10, "rows": 1}}})

	for _, c := range []struct{ table, root string }{{"main.sales.gone", gone}, {"main.sales.kept", kept}} {
		s.reload(c.table, "/Volumes/main/sales/staging/"+filepath.Base(c.root), "--rename", "customer_id=note", "--batch-files", "4")
		args := []string{"cleanup", c.table, "--yes"}
		if c.root == kept {
			args = append(args, "--archive-to", archive)
		}
		if code, out, errOut := s.Run(args...); code != 0 || e2etest.FallbackLeft(t, c.root) != 0 {
			t.Fatalf("cleanup of %s: exit %d, %d files left\n%s%s", c.table, code, e2etest.FallbackLeft(t, c.root), out, errOut)
		}
	}

	// Without an archive: refused, nothing deleted.
	code, out, errOut := s.Run("-o", "json", "undo", "main.sales.gone", "--yes")
	var plan undoPlan
	e2etest.DecodeInto(t, out, &plan)
	if code != 4 || plan.Undo != 0 || plan.Refused != len(plan.Batches) || !strings.Contains(plan.Batches[0].Refused, "cleanup deleted 4 of its files and no archive holds 4 of them") ||
		!strings.Contains(plan.Batches[0].Refused, "--archive-to") {
		t.Fatalf("undo of a run cleaned without an archive: exit %d\n%s\n%s", code, out, errOut)
	}
	if s.wrongRows("main.sales.gone") != n {
		t.Fatal("the refused undo deleted rows")
	}

	// With one: the plan reloads from it; the undo deletes the rows; the reload from the archive
	// brings every record back, right.
	code, out, errOut = s.Run("-o", "json", "undo", "main.sales.kept", "--dry-run")
	plan = undoPlan{}
	e2etest.DecodeInto(t, out, &plan)
	if code != 0 || plan.Undo == 0 || plan.Undo != len(plan.Batches) || len(plan.Archives) != 1 || plan.Archives[0] != archive ||
		!strings.Contains(plan.Redo, "reloaded from the archive at "+archive) || !strings.Contains(plan.Redo, "--root "+archive) {
		t.Fatalf("undo plan of a run cleaned with an archive: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, errOut := s.Run("undo", "main.sales.kept", "--yes"); code != 0 {
		t.Fatalf("undo: exit %d\n%s%s", code, out, errOut)
	}
	if rows, _, _ := s.fileRows("main.sales.kept"); rows != 0 {
		t.Fatalf("%d fallback rows left after the undo", rows)
	}
	code, out, errOut = s.Run("-o", "json", "reload", "--table", "main.sales.kept", "--root", archive, "--stage-to", "/Volumes/main/sales/staging/kept-redo",
		"--rename", "customer_id=customer_key", "--yes")
	if code != 0 {
		t.Fatalf("reload from the archive: exit %d\n%.3000s\n%s", code, out, errOut)
	}
	zb := s.stopZerobus("main.sales.kept")
	if rows, distinct, right := s.fileRows("main.sales.kept"); rows != n || distinct != n || right != n {
		t.Errorf("after the reload from the archive: %d rows, %d distinct, %d right; want %d", rows, distinct, right, n)
	}
	if z := s.zerobusRows("main.sales.kept"); z != zb {
		t.Errorf("%d Zerobus rows, the writer committed %d", z, zb)
	}
	w.Stop()
}
