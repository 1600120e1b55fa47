package reload

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// otherJournal is the scene as a second operator sees it: the same table, files and
// warehouse, another journal.
func (sc *scene) otherJournal(t *testing.T) *scene {
	other := *sc
	other.dir = t.TempDir()
	return &other
}

// TestForeignRunOneAfterAnother: a second journal staging the same table to another volume
// after the first loaded it finds the first run's tagged commits in the table's history and
// refuses every file that run may have loaded, naming it; nothing is loaded twice.
func TestForeignRunOneAfterAnother(t *testing.T) {
	sc := newScene(t, 4, 2, 3)
	o := testOpts
	o.Stage = sc.stageOf(mem.New(), "vol1")
	rep, err := sc.reload(t, sc.deps(t, true), o)
	if err != nil {
		t.Fatal(err)
	}
	other := sc.otherJournal(t)
	o.Stage = other.stageOf(mem.New(), "vol2")
	p, err := Prepare(context.Background(), other.deps(t, true), other.tgt, other.report(), other.table, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Plan.Batches) != 0 || len(p.Plan.Refused) != 4 || p.ForeignRefused != 4 {
		t.Fatalf("second journal plans %d batches, refuses %d files", len(p.Plan.Batches), len(p.Plan.Refused))
	}
	if why := p.Plan.Refused[0].Reason; !strings.Contains(why, "run "+rep.Run+" of another journal") || !strings.Contains(why, "--ignore-foreign-runs") {
		t.Errorf("refused because %q", why)
	}
	if len(p.Foreign) != 1 || p.Foreign[0].Run != rep.Run || p.Foreign[0].Loads == 0 {
		t.Errorf("foreign runs %+v", p.Foreign)
	}
	p.Close()
	for _, id := range sc.files {
		if n := sc.inTable(id); n != 1 {
			t.Errorf("%s loaded %d times", id, n)
		}
	}
	// Files parked after that run loaded are not its: they load.
	late := "2026/02/01/f-late.parquet"
	sc.root.Set(fallbackPrefix+late, []byte("late bytes"), time.Now().Add(time.Hour))
	sc.m.fileRows[late] = 2
	sc.m.stagedIDs[sc.stagedPath(late)] = late
	other.files = append(other.files, late)
	if _, err := other.reload(t, other.deps(t, true), o); err != nil {
		t.Fatal(err)
	}
	if n := sc.inTable(late); n != 1 {
		t.Errorf("a file parked after the other run: loaded %d times", n)
	}
}

// TestForeignRunIgnored: --ignore-foreign-runs loads the files anyway, and the journal keeps
// the reason and the runs ignored.
func TestForeignRunIgnored(t *testing.T) {
	sc := newScene(t, 2, 1, 3)
	o := testOpts
	rep, err := sc.reload(t, sc.deps(t, true), o)
	if err != nil {
		t.Fatal(err)
	}
	other := sc.otherJournal(t)
	sc.m.mu.Lock()
	sc.m.loaded = map[string]bool{} // the owner emptied the table's load state (a RESTORE, say)
	sc.m.mu.Unlock()
	o.IgnoreForeignRuns = "INC-42: the first run's rows were restored away"
	if _, err := other.reload(t, other.deps(t, true), o); err != nil {
		t.Fatal(err)
	}
	st := other.state(t)
	if st.Batches[0].Status != journal.BatchVerified {
		t.Errorf("batch 1 %s", st.Batches[0].Status)
	}
	j, err := journal.OpenDir(other.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	log, err := j.Read(context.Background(), other.tgt.TableID, st.Run)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range log.Records {
		if r.Plan != nil && r.Plan.IgnoredForeign != nil {
			found = r.Plan.IgnoredForeign.Reason == o.IgnoreForeignRuns && len(r.Plan.IgnoredForeign.Runs) == 1 && r.Plan.IgnoredForeign.Runs[0] == rep.Run
		}
	}
	if !found {
		t.Error("the journal does not record the reason and the run ignored")
	}
}

// TestForeignRunsAtTheSameMoment: two journals plan the same table at the same moment, each
// staging to its own volume (no shared claims): the table's log orders their claims, the
// first loads, the second stops before any statement.
func TestForeignRunsAtTheSameMoment(t *testing.T) {
	for _, skipEmpty := range []bool{false, true} {
		t.Run(map[bool]string{false: "empty commits recorded", true: "empty commits skipped"}[skipEmpty], func(t *testing.T) {
			sc := newScene(t, 4, 2, 3)
			sc.m.skipEmpty = skipEmpty
			other := sc.otherJournal(t)
			oa, ob := testOpts, testOpts
			oa.Stage = sc.stageOf(mem.New(), "vol1")
			ob.Stage = other.stageOf(mem.New(), "vol2")
			pa, err := Prepare(context.Background(), sc.deps(t, true), sc.tgt, sc.report(), sc.table, oa)
			if err != nil {
				t.Fatal(err)
			}
			pb, err := Prepare(context.Background(), other.deps(t, true), other.tgt, other.report(), other.table, ob)
			if err != nil {
				t.Fatal(err)
			}
			// A claims the table first, then B claims before A sends its first statement.
			var repB *Report
			var errB error
			sc.m.fault = func(stmt string, _ int) faultKind {
				if strings.HasPrefix(stmt, "COPY INTO") && !strings.Contains(stmt, "VALIDATE") && repB == nil && errB == nil {
					sc.m.fault = nil
					sc.m.mu.Unlock()
					repB, errB = pb.Execute(context.Background(), RunOptions{})
					sc.m.mu.Lock()
				}
				return faultNone
			}
			repA, errA := pa.Execute(context.Background(), RunOptions{})
			pa.Close()
			pb.Close()
			if skipEmpty {
				// Without a recorded claim the second run is not excluded: each says so.
				if errA != nil || !strings.Contains(strings.Join(repA.Warnings, " "), "no claim on the table was recorded") {
					t.Errorf("A: %v, warnings %q", errA, repA.Warnings)
				}
				return
			}
			if errA != nil {
				t.Fatalf("the first claim: %v", errA)
			}
			if !errors.Is(errB, ErrForeignRun) || repB == nil || repB.Statements != 0 {
				t.Fatalf("the second claim: %v, report %+v", errB, repB)
			}
			for _, id := range sc.files {
				if n := sc.inTable(id); n != 1 {
					t.Errorf("%s loaded %d times", id, n)
				}
			}
		})
	}
}

// TestStaleForeignClaim: a claim of another journal's run that never loaded, older than
// ClaimLease, refuses nothing.
func TestStaleForeignClaim(t *testing.T) {
	sc := newScene(t, 2, 1, 3)
	sc.m.mu.Lock()
	sc.m.commit(Commit{Operation: "WRITE", User: "other@example.com", UserMetadata: "zbrecover:20260101T000000Z-deadbeef:claim:1", Metrics: map[string]string{"numOutputRows": "0"}})
	sc.m.mu.Unlock()
	o := testOpts
	o.Now = func() time.Time { return time.Now().Add(2 * ClaimLease) }
	p, err := Prepare(context.Background(), sc.deps(t, true), sc.tgt, sc.report(), sc.table, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if len(p.Plan.Refused) != 0 || len(p.Foreign) != 1 || !p.Foreign[0].Stale {
		t.Errorf("refused %d, foreign %+v", len(p.Plan.Refused), p.Foreign)
	}
	// A fresh one refuses the files parked before it.
	o.Now = time.Now
	p2, err := Prepare(context.Background(), sc.otherJournal(t).deps(t, true), sc.tgt, sc.report(), sc.table, o)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if len(p2.Plan.Refused) != 2 {
		t.Errorf("a fresh claim refused %d files", len(p2.Plan.Refused))
	}
}
