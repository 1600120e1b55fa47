package reload

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/journal"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/sqlstmt"
)

// TestRedoStagedPathsAreNew: a file loaded again after an undo is staged under a path of its
// redo generation, which no earlier load read (COPY INTO skips a path it loaded, even if the
// file changed since); each generation is another path, and generation 0 is StagedPath.
func TestRedoStagedPathsAreNew(t *testing.T) {
	f := journal.File{Key: fallback.Prefix + "2026/01/01/f-1.parquet", Size: 10, ETag: `"abc"`, ModTime: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	seen := map[string]int{}
	for gen := 0; gen < 4; gen++ {
		p := StagedPathRedo("tid-a", f, gen)
		if prev, ok := seen[p]; ok {
			t.Errorf("generations %d and %d share the path %s", prev, gen, p)
		}
		seen[p] = gen
		if !strings.HasPrefix(p, "tid-a/2026/01/01/f-1~") {
			t.Errorf("generation %d: %s", gen, p)
		}
	}
	if StagedPathRedo("tid-a", f, 0) != StagedPath("tid-a", f) {
		t.Error("generation 0 is not the file's staged path")
	}
}

// TestPlanRedo: staged, the files of undone batches load through their redo paths, in the
// batches they would be in anyway; read from the fallback folder, they go in batches of
// their own whose COPY INTO is forced on exactly their FILES, and the other files' batches
// are not forced.
func TestPlanRedo(t *testing.T) {
	cur := sd.NewSchema().Col("id", sd.LongType, sd.NotNull)
	rep := report(map[string]sd.Schema{"aaa": cur}, [][2]string{
		{"2026/01/01/a.parquet", "aaa"}, {"2026/01/01/b.parquet", "aaa"}, {"2026/01/01/c.parquet", "aaa"}})
	redo := map[string]int{fallback.Prefix + "2026/01/01/b.parquet": 1}

	p, err := NewPlan(rep, table(cur), orders, dir(t, "s3://lake/orders"), PlanOptions{Redo: redo})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Batches) != 2 {
		t.Fatalf("batches %+v", p.Batches)
	}
	fresh, forced := p.Batches[0], p.Batches[1]
	if fresh.Forced || sqlstmt.Forced(fresh.SQL) || len(fresh.Files) != 2 || fresh.Redo != 0 {
		t.Errorf("first batch %+v", fresh)
	}
	if !forced.Forced || !sqlstmt.Forced(forced.SQL) || !sqlstmt.Forced(forced.ValidateSQL) || len(forced.Files) != 1 ||
		forced.Files[0].Key != "2026/01/01/b.parquet" || !strings.Contains(forced.SQL, "FILES = ('b.parquet')") || forced.Redo != 1 {
		t.Errorf("redo batch %+v", forced)
	}
	if files, n := p.Redo(); files != 1 || n != 1 {
		t.Errorf("Redo() = %d, %d", files, n)
	}

	p, err = NewPlan(rep, table(cur), orders, dir(t, "s3://lake/orders"), PlanOptions{Redo: redo, Staged: true, TableID: "tid-a",
		Source: "/Volumes/main/sales/staging/run2/"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Batches) != 1 || p.Batches[0].Forced || sqlstmt.Forced(p.Batches[0].SQL) || p.Batches[0].Redo != 1 {
		t.Fatalf("staged plan %+v", p.Batches)
	}
	jb := journal.File{Key: fallback.Prefix + "2026/01/01/b.parquet", Size: 100}
	_, name := splitLast(StagedPathRedo("tid-a", jb, 1))
	_, old := splitLast(StagedPath("tid-a", jb))
	if !strings.Contains(p.Batches[0].SQL, name) || strings.Contains(p.Batches[0].SQL, old) {
		t.Errorf("staged redo reads %s, want its redo path %s (not %s)", p.Batches[0].SQL, name, old)
	}
	if files, n := p.Redo(); files != 1 || n != 0 {
		t.Errorf("staged Redo() = %d, %d", files, n)
	}
}

func splitLast(p string) (string, string) {
	i := strings.LastIndex(p, "/")
	return p[:i+1], p[i+1:]
}

// undoBatch records, as zbrecover undo does, that batch n of the scene's latest run was
// taken back, and takes its file's rows out of the model table.
func (sc *scene) undoBatch(t *testing.T, n int) {
	t.Helper()
	st := sc.state(t)
	w, err := journal.Continue(context.Background(), sc.store(t), st, journal.Header{Command: "zbrecover undo"})
	if err != nil {
		t.Fatal(err)
	}
	b := st.Batch(n)
	for _, r := range []journal.Record{
		{Kind: journal.KindUndo, Undo: &journal.Undo{Step: journal.UndoIntent, Batch: n, Evidence: journal.UndoByRowIDs, SQL: "DELETE …", Rows: b.ExpectedRows}},
		{Kind: journal.KindUndo, Undo: &journal.Undo{Step: journal.UndoResult, Batch: n, Deleted: journal.Int64(b.ExpectedRows)}},
		{Kind: journal.KindUndo, Undo: &journal.Undo{Step: journal.UndoOutcome, Batch: n, Status: journal.Undone}},
		{Kind: journal.KindEnd, End: &journal.End{State: journal.RunPartiallyUndone}},
	} {
		if err := w.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	sc.m.mu.Lock()
	for _, f := range b.Files {
		sc.m.rows[relOf(f.Key)]--
	}
	sc.m.mu.Unlock()
}

// TestRedoFromTheFallbackFolder: after an undo, the next reload from the fallback folder
// loads the undone batch's file again, once, in a batch of its own forced on exactly its
// FILES (COPY INTO would skip it there); a forced send whose answer is lost is settled from
// its tagged commit, never sent again; one cut before it reached the warehouse is sent again
// once the history shows no commit of it; without commit tags a forced load is not sent.
func TestRedoFromTheFallbackFolder(t *testing.T) {
	for _, c := range []struct {
		name   string
		fault  faultKind
		tagged bool
	}{{"answered", faultNone, true}, {"answer lost", faultDropAfter, true}, {"cut before", faultDropBefore, true}, {"untagged", faultNone, false}} {
		t.Run(c.name, func(t *testing.T) {
			sc := newScene(t, 3, 3, 40)
			o := testOpts
			o.BatchFiles = 1
			if _, err := sc.reload(t, sc.deps(t, true), o); err != nil {
				t.Fatal(err)
			}
			sc.undoBatch(t, 2)
			undone := sc.files[1]
			faulted := false
			sc.m.fault = func(stmt string, _ int) faultKind {
				if !faulted && sqlstmt.Forced(stmt) && !strings.Contains(stmt, "VALIDATE") {
					faulted = true
					return c.fault
				}
				return faultNone
			}
			rep, err := sc.reload(t, sc.deps(t, c.tagged), o)
			if !c.tagged {
				if err == nil || !strings.Contains(err.Error(), "--stage-to") || sc.inTable(undone) != 0 {
					t.Fatalf("untagged forced load: %v, rows %d", err, sc.inTable(undone))
				}
				return
			}
			if c.fault != faultNone {
				if err == nil {
					t.Fatalf("a %s send was not reported (%+v)", c.name, rep)
				}
				sc.m.fault = nil
				if rep, err = sc.reload(t, sc.deps(t, true), o); err != nil {
					t.Fatalf("re-run: %v (%+v)", err, rep)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			st := sc.state(t)
			if len(st.Batches) != 1 || st.Batches[0].Status != journal.BatchVerified || !sqlstmt.Forced(st.Batches[0].SQL) ||
				len(st.Batches[0].Files) != 1 || relOf(st.Batches[0].Files[0].Key) != undone {
				t.Fatalf("the redo run: %+v", st.Batches[0])
			}
			for _, id := range sc.files {
				if n := sc.inTable(id); n != 1 {
					t.Errorf("%s is in the table %d times", id, n)
				}
			}
			// Nothing is left to load: a further reload sends nothing.
			if rep, err := sc.reload(t, sc.deps(t, true), o); err != nil || rep.Statements != 0 {
				t.Errorf("a further reload: %+v, %v", rep, err)
			}
		})
	}
}
