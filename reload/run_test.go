package reload

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// copyOf reports whether stmt is a load (not VALIDATE) naming file name.
// copyOf reports whether stmt is a load naming the file name: as it is, or as its staged
// copy (name~<identity>.parquet).
func copyOf(stmt, name string) bool {
	stem := strings.TrimSuffix(name, ".parquet")
	return strings.HasPrefix(stmt, "COPY INTO") && !strings.Contains(stmt, "VALIDATE") &&
		(strings.Contains(stmt, "'"+name+"'") || strings.Contains(stmt, "'"+stem+"~"))
}

func batchStatus(st *journal.State, n int) journal.BatchStatus {
	if b := st.Batch(n); b != nil {
		return b.Status
	}
	return ""
}

// TestLostStatementIsNeverSettledByANeighbour is the scenario of two neighbouring batches
// with the same row count: batch 2's base read fails once and every send of its COPY INTO is
// cut before it reaches the warehouse. Batch 1's commit never settles it: batch 2 stays open
// while its sends are cut, and is loaded by its own statement once one gets through; with
// and without commit tags.
func TestLostStatementIsNeverSettledByANeighbour(t *testing.T) {
	for _, tagged := range []bool{true, false} {
		t.Run(map[bool]string{true: "tagged", false: "untagged"}[tagged], func(t *testing.T) {
			sc := newScene(t, 3, 1, 8044)
			name2 := "f-0001.parquet"
			historyFailed, copies := false, 0
			cut := func(stmt string, _ int) faultKind {
				if copyOf(stmt, "f-0000.parquet") {
					copies++
				}
				switch {
				case copyOf(stmt, name2):
					return faultDropBefore
				case !historyFailed && strings.HasSuffix(stmt, "LIMIT 1") && copies == 1:
					historyFailed = true
					return faultHistoryError
				}
				return faultNone
			}
			sc.m.fault = cut
			o := testOpts
			o.BatchFiles = 1
			if _, err := sc.reload(t, sc.deps(t, tagged), o); err == nil {
				t.Fatal("a cut statement was not reported")
			}
			// Every re-run while the sends are cut leaves batch 2 open; none verifies it.
			for i := 0; i < 3; i++ {
				_, _ = sc.reload(t, sc.deps(t, tagged), o)
				st := sc.state(t)
				if s := batchStatus(st, 2); s == journal.BatchVerified {
					t.Fatalf("re-run %d verified batch 2, which never reached the warehouse: %+v", i, st.Batch(2).Outcome)
				}
				if sc.inTable("2026/01/02/"+name2) != 0 {
					t.Fatal("the model loaded a cut statement")
				}
			}
			// The cut ends: batch 2 is loaded by its own statement.
			sc.m.fault = nil
			rep, err := sc.reload(t, sc.deps(t, tagged), o)
			if err != nil {
				t.Fatalf("final re-run: %v (%+v)", err, rep)
			}
			st := sc.state(t)
			for n := 1; n <= 3; n++ {
				if batchStatus(st, n) != journal.BatchVerified {
					t.Errorf("batch %d is %s", n, batchStatus(st, n))
				}
			}
			if b := st.Batch(2); b.Evidence() != journal.EvidenceAnswer {
				t.Errorf("batch 2 evidence %q, want its own answer (%+v)", b.Evidence(), b.Outcome)
			}
			for _, id := range sc.files {
				if n := sc.inTable(id); n != 1 {
					t.Errorf("%s loaded %d times", id, n)
				}
			}
		})
	}
}

// TestNoStatementWithoutABase: when the table's newest version cannot be read, no intent is
// written and nothing is sent.
func TestNoStatementWithoutABase(t *testing.T) {
	sc := newScene(t, 2, 1, 5)
	sc.m.fault = func(stmt string, _ int) faultKind {
		if strings.HasPrefix(stmt, "DESCRIBE HISTORY") {
			return faultHistoryError
		}
		return faultNone
	}
	_, err := sc.reload(t, sc.deps(t, true), testOpts)
	if !errors.Is(err, ErrNoBase) {
		t.Fatalf("err %v, want ErrNoBase", err)
	}
	if n := sc.m.copies(); n != 0 {
		t.Errorf("%d COPY INTO sent without a base", n)
	}
	j, err := journal.OpenDir(sc.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if runs, _ := journal.Runs(context.Background(), j, sc.tgt.TableID); len(runs) == 0 {
		return // refused while planning: nothing journaled
	}
	st := sc.state(t)
	for _, b := range st.Batches {
		if b.Attempts != 0 {
			t.Errorf("batch %d has %d intents", b.Batch, b.Attempts)
		}
	}
}

// TestLostAnswerAmongLookalikes: another writer with the same identity commits a COPY INTO
// with the same row count after each of ours. A batch whose answer was lost is settled by
// its tag; without tags, two candidates remain and the batch stays unknown.
func TestLostAnswerAmongLookalikes(t *testing.T) {
	for _, tagged := range []bool{true, false} {
		t.Run(map[bool]string{true: "tagged", false: "untagged"}[tagged], func(t *testing.T) {
			sc := newScene(t, 2, 1, 7)
			sc.m.lookalike = true
			sc.m.fault = func(stmt string, _ int) faultKind {
				if copyOf(stmt, "f-0001.parquet") {
					return faultDropAfter
				}
				return faultNone
			}
			o := testOpts
			o.BatchFiles = 1
			if _, err := sc.reload(t, sc.deps(t, tagged), o); err == nil {
				t.Fatal("a lost answer was not reported")
			}
			sc.m.fault = nil
			_, _ = sc.reload(t, sc.deps(t, tagged), o)
			b := sc.state(t).Batch(2)
			switch {
			case tagged && (b.Status != journal.BatchVerified || b.Evidence() != journal.EvidenceTag):
				t.Errorf("tagged: batch 2 %s by %q (%+v)", b.Status, b.Evidence(), b.Outcome)
			case !tagged && b.Status == journal.BatchVerified:
				t.Errorf("untagged: batch 2 verified among look-alikes: %+v", b.Outcome)
			}
			if n := sc.inTable("2026/01/02/f-0001.parquet"); n != 1 {
				t.Errorf("batch 2's file loaded %d times", n)
			}
		})
	}
}

// TestCommitThenFailIsNeverFailed: DELTA_POST_COMMIT_HOOK_FAILED after the commit leaves the
// batch open (possibly loaded), never failed; the re-run settles it without loading twice.
func TestCommitThenFailIsNeverFailed(t *testing.T) {
	for _, tagged := range []bool{true, false} {
		t.Run(map[bool]string{true: "tagged", false: "untagged"}[tagged], func(t *testing.T) {
			sc := newScene(t, 1, 1, 3)
			sc.m.fault = func(stmt string, _ int) faultKind {
				if copyOf(stmt, "f-0000.parquet") {
					return faultCommitFail
				}
				return faultNone
			}
			if _, err := sc.reload(t, sc.deps(t, tagged), testOpts); err == nil {
				t.Fatal("a post-commit failure was not reported")
			}
			if s := batchStatus(sc.state(t), 1); s != journal.BatchOpen {
				t.Fatalf("after 2DKD0 the batch is %s, want open", s)
			}
			sc.m.fault = nil
			_, _ = sc.reload(t, sc.deps(t, tagged), testOpts)
			b := sc.state(t).Batch(1)
			want := journal.EvidenceTag
			if !tagged {
				want = journal.EvidenceHistory
			}
			if b.Status != journal.BatchVerified || b.Evidence() != want {
				t.Errorf("batch %s by %q, want verified by %q (%+v)", b.Status, b.Evidence(), want, b.Outcome)
			}
			if n := sc.inTable("2026/01/01/f-0000.parquet"); n != 1 {
				t.Errorf("loaded %d times", n)
			}
		})
	}
}

// TestReexecutedStatementAnswersZero: a statement the driver sent twice answers 0 rows after
// its own commit. Its tag proves it; without a tag it is unknown, never verified.
func TestReexecutedStatementAnswersZero(t *testing.T) {
	for _, tagged := range []bool{true, false} {
		t.Run(map[bool]string{true: "tagged", false: "untagged"}[tagged], func(t *testing.T) {
			sc := newScene(t, 1, 1, 3)
			sc.m.fault = func(stmt string, _ int) faultKind {
				if copyOf(stmt, "f-0000.parquet") {
					return faultReexecute
				}
				return faultNone
			}
			_, _ = sc.reload(t, sc.deps(t, tagged), testOpts)
			b := sc.state(t).Batch(1)
			switch {
			case tagged && (b.Status != journal.BatchVerified || b.Evidence() != journal.EvidenceTag):
				t.Errorf("tagged: %s by %q (%+v)", b.Status, b.Evidence(), b.Outcome)
			case !tagged && b.Status != journal.BatchUnknown:
				t.Errorf("untagged: %s (%+v)", b.Status, b.Outcome)
			}
		})
	}
}

// TestIdentityMustMatch: without a tag, a commit whose userName differs from current_user()
// (a service principal's application id against its name), or a run with no known identity,
// never settles a batch.
func TestIdentityMustMatch(t *testing.T) {
	for _, c := range []struct {
		name        string
		historyUser string
		identity    string
	}{{"service principal", "0a1b2c3d-app-id", "me@example.com"}, {"no identity", "", ""}} {
		t.Run(c.name, func(t *testing.T) {
			sc := newScene(t, 1, 1, 3)
			sc.m.historyUser = c.historyUser
			sc.m.fault = func(stmt string, _ int) faultKind {
				if copyOf(stmt, "f-0000.parquet") {
					return faultDropAfter
				}
				return faultNone
			}
			d := sc.deps(t, false)
			d.Identity = c.identity
			_, _ = sc.reload(t, d, testOpts)
			sc.m.fault = nil
			d = sc.deps(t, false)
			d.Identity = c.identity
			_, _ = sc.reload(t, d, testOpts)
			if s := batchStatus(sc.state(t), 1); s == journal.BatchVerified {
				t.Errorf("settled without a matching identity: %+v", sc.state(t).Batch(1).Outcome)
			}
			// With tags the identity does not matter: the tag names the batch.
			sc2 := newScene(t, 1, 1, 3)
			sc2.m.historyUser = c.historyUser
			sc2.m.fault = sc.m.fault
			sc2.m.fault = func(stmt string, _ int) faultKind {
				if copyOf(stmt, "f-0000.parquet") {
					return faultDropAfter
				}
				return faultNone
			}
			d = sc2.deps(t, true)
			d.Identity = c.identity
			_, _ = sc2.reload(t, d, testOpts)
			sc2.m.fault = nil
			d = sc2.deps(t, true)
			d.Identity = c.identity
			_, _ = sc2.reload(t, d, testOpts)
			if b := sc2.state(t).Batch(1); b.Status != journal.BatchVerified || b.Evidence() != journal.EvidenceTag {
				t.Errorf("tagged: %s by %q", b.Status, b.Evidence())
			}
		})
	}
}

// TestThousandsOfCommitsBetween: Zerobus commits hundreds of versions before every
// statement; a batch whose answer was lost is still found by its tag, however far back.
func TestThousandsOfCommitsBetween(t *testing.T) {
	sc := newScene(t, 2, 1, 4)
	sc.m.zerobus = 700
	sc.m.fault = func(stmt string, _ int) faultKind {
		if copyOf(stmt, "f-0000.parquet") {
			return faultDropAfter
		}
		return faultNone
	}
	o := testOpts
	o.BatchFiles = 1
	_, _ = sc.reload(t, sc.deps(t, true), o)
	sc.m.fault = nil
	if _, err := sc.reload(t, sc.deps(t, true), o); err != nil {
		t.Fatal(err)
	}
	st := sc.state(t)
	if b := st.Batch(1); b.Status != journal.BatchVerified || b.Evidence() != journal.EvidenceTag {
		t.Errorf("batch 1 %s by %q: %+v", b.Status, b.Evidence(), b.Outcome)
	}
	if len(sc.m.commits) < 2000 {
		t.Errorf("only %d commits", len(sc.m.commits))
	}
}

// TestRefusedTagIsUntagged: a warehouse that refuses the SET runs untagged and says so; one
// that takes it but does not put it in its commits is noticed at the first answer.
func TestRefusedTagIsUntagged(t *testing.T) {
	sc := newScene(t, 2, 1, 4)
	sc.m.refuseTag = true
	rep, err := sc.reload(t, sc.deps(t, true), testOpts)
	if err != nil || rep.Tagging != Untagged || !strings.Contains(strings.Join(rep.Warnings, " "), "commit tag") {
		t.Errorf("refused tag: %v, tagging %q, warnings %q", err, rep.Tagging, rep.Warnings)
	}
	sc2 := newScene(t, 2, 1, 4)
	sc2.m.ignoreTag = true
	rep, err = sc2.reload(t, sc2.deps(t, true), Options{Backoff: testOpts.Backoff, HistoryRetries: 2, BatchFiles: 1})
	if err != nil || rep.Tagging != Untagged || !strings.Contains(strings.Join(rep.Warnings, " "), "do not carry it") {
		t.Errorf("ignored tag: %v, tagging %q, warnings %q", err, rep.Tagging, rep.Warnings)
	}
}

// TestMismatchStops: a batch that inserts another number of rows stops the run.
func TestMismatchStops(t *testing.T) {
	sc := newScene(t, 3, 1, 4)
	sc.m.bias = map[string]int64{"2026/01/01/f-0000.parquet": 1} // the table gets 5 rows of a 4-row file
	o := testOpts
	o.BatchFiles = 1
	rep, err := sc.reload(t, sc.deps(t, true), o)
	if !errors.Is(err, ErrMismatch) || rep.Mismatch != 1 {
		t.Fatalf("err %v, report %+v", err, rep)
	}
	if n := sc.m.copies(); n != 1 {
		t.Errorf("%d load statements after a mismatch, want 1", n)
	}
}

// TestZeroRowsForUnseenFilesIsUnknown: 0 rows for files no journal record shows loading
// (loaded through the same path by someone else) is unknown, never verified.
func TestZeroRowsForUnseenFilesIsUnknown(t *testing.T) {
	sc := newScene(t, 2, 2, 4)
	for _, k := range sc.files {
		sc.m.loaded[sc.m.sources[0]+k] = true
	}
	rep, err := sc.reload(t, sc.deps(t, true), testOpts)
	if !errors.Is(err, ErrUnknown) || rep.Unknown != 1 || rep.Verified != 0 {
		t.Fatalf("err %v, report %+v", err, rep)
	}
}

// TestRefusedStatementFails: a refusal that commits nothing (42KDG) is failed; a conflict is
// retried on the same batch.
func TestRefusedStatementFails(t *testing.T) {
	sc := newScene(t, 1, 1, 4)
	sc.m.fault = func(stmt string, _ int) faultKind {
		if copyOf(stmt, "f-0000.parquet") {
			return faultError
		}
		return faultNone
	}
	if _, err := sc.reload(t, sc.deps(t, true), testOpts); err == nil {
		t.Fatal("no error")
	}
	if s := batchStatus(sc.state(t), 1); s != journal.BatchFailed {
		t.Errorf("status %s, want failed", s)
	}
	conflicts := 0
	sc.m.fault = func(stmt string, _ int) faultKind {
		if copyOf(stmt, "f-0000.parquet") && conflicts < 2 {
			conflicts++
			return faultConflict
		}
		return faultNone
	}
	if _, err := sc.reload(t, sc.deps(t, true), testOpts); err != nil {
		t.Fatal(err)
	}
	if s := batchStatus(sc.state(t), 1); s != journal.BatchVerified {
		t.Errorf("after conflicts: %s", s)
	}
}

// stageOf is a staging location in the scene's volume.
func (sc *scene) stageOf(vol *mem.Backend, dir string) *Stage {
	loc := "/Volumes/main/sales/staging/" + dir
	sc.m.sources = append(sc.m.sources, loc+"/")
	return &Stage{Src: sc.root, Dst: vol.Sub(dir + "/"), Location: loc, Claims: vol, ClaimsLocation: "/Volumes/main/sales/staging"}
}

// TestTwoJournalsTwoStagingPaths: a second journal (another operator, a CI job that lost its
// state) staging the same table to another folder of the volume loads nothing: with commit
// tags the table's history names the first journal's run and its files are refused while
// planning; without them the first journal's claims name the other path, and the staging
// step refuses them before any statement.
func TestTwoJournalsTwoStagingPaths(t *testing.T) {
	for _, tagged := range []bool{true, false} {
		t.Run(map[bool]string{true: "tagged", false: "untagged"}[tagged], func(t *testing.T) {
			sc := newScene(t, 4, 2, 3)
			vol := mem.New()
			o := testOpts
			o.Stage = sc.stageOf(vol, "run1")
			if !tagged {
				// Without tags the table's history cannot name the first journal's run: the
				// claims are what refuses the second. The first run dies once its files are
				// staged and claimed, before its first load.
				sc.m.fault = func(stmt string, _ int) faultKind {
					if strings.HasPrefix(stmt, "COPY INTO") && !strings.Contains(stmt, "VALIDATE") {
						sc.m.dead = true
						return faultDropBefore
					}
					return faultNone
				}
				_, _ = sc.reload(t, sc.deps(t, tagged), o)
				sc.m.fault = nil
				sc.m.revive()
			} else if _, err := sc.reload(t, sc.deps(t, tagged), o); err != nil {
				t.Fatal(err)
			}
			other := *sc
			other.dir = t.TempDir() // another journal, knowing nothing
			o.Stage = other.stageOf(vol, "run2")
			before := sc.m.copies()
			rep, err := other.reload(t, other.deps(t, tagged), o)
			switch {
			case !tagged && !errors.Is(err, ErrSecondPath):
				t.Fatalf("second journal through another path: %v", err)
			case tagged && (err != nil || rep.Status != "nothing_to_load"):
				t.Fatalf("second journal, tagged history: %v, %+v", err, rep)
			}
			if n := sc.m.copies() - before; n != 0 {
				t.Errorf("%d statements sent through the second path", n)
			}
			for _, id := range sc.files {
				if n := sc.inTable(id); n > 1 || tagged && n != 1 {
					t.Errorf("%s loaded %d times", id, n)
				}
			}
		})
	}
}

// TestSourceChangesOnlyBeforeAnIntent: a mistyped staging volume fails before anything is
// sent, and the next run with the right one loads; once a statement was sent, the source
// is fixed.
func TestSourceChangesOnlyBeforeAnIntent(t *testing.T) {
	sc := newScene(t, 2, 1, 3)
	vol := mem.New()
	o := testOpts
	o.BatchFiles = 1
	bad := sc.stageOf(vol, "typo")
	bad.Dst = readOnly{bad.Dst}
	o.Stage = bad
	if _, err := sc.reload(t, sc.deps(t, true), o); !errors.Is(err, ErrStageLocation) {
		t.Fatalf("mistyped volume: %v", err)
	}
	// Checked before anything is journaled: no run is left to continue.
	if j, err := journal.OpenDir(sc.dir); err == nil {
		runs, _ := journal.Runs(context.Background(), j, sc.tgt.TableID)
		j.Close()
		if len(runs) != 0 {
			t.Errorf("a refused staging location left %d runs", len(runs))
		}
	}
	o.Stage = sc.stageOf(vol, "right")
	if _, err := sc.reload(t, sc.deps(t, true), o); err != nil {
		t.Fatalf("the right volume: %v", err)
	}
	st := sc.state(t)
	if st.Status != journal.RunVerified || !strings.HasSuffix(st.Source, "/right/") {
		t.Errorf("run %s reading %s", st.Status, st.Source)
	}

	// Once a statement of a run was sent, another source is refused.
	sc2 := newScene(t, 2, 1, 3)
	vol2 := mem.New()
	o.Stage = sc2.stageOf(vol2, "a")
	sc2.m.fault = func(stmt string, _ int) faultKind {
		if copyOf(stmt, "f-0001.parquet") {
			return faultDropAfter
		}
		return faultNone
	}
	_, _ = sc2.reload(t, sc2.deps(t, true), o)
	sc2.m.fault = nil
	o.Stage = sc2.stageOf(vol2, "b")
	if _, err := sc2.reload(t, sc2.deps(t, true), o); !errors.Is(err, ErrSecondPath) {
		t.Errorf("another source after an intent: %v", err)
	}
	o.Stage = sc2.stageOf(vol2, "a")
	if _, err := sc2.reload(t, sc2.deps(t, true), o); err != nil {
		t.Errorf("the run's own source: %v", err)
	}
	if st := sc2.state(t); st.Status != journal.RunVerified {
		t.Errorf("run %s", st.Status)
	}
}

type storageBackend = storage.Backend

// readOnly is a store that refuses writes.
type readOnly struct{ storageBackend }

// TestTruncateAfterLoadKeepsFiles: rows that left the table after the load (TRUNCATE) undo
// every proof from the history: the check fails for every batch.
func TestTruncateAfterLoadKeepsFiles(t *testing.T) {
	sc := newScene(t, 2, 1, 3)
	o := testOpts
	o.BatchFiles = 1
	if _, err := sc.reload(t, sc.deps(t, true), o); err != nil {
		t.Fatal(err)
	}
	sc.m.truncate()
	ck := Checker{Warehouse: sc.m, Table: orders, Identity: sc.m.identity, Backoff: o.Backoff}
	v, err := ck.Check(context.Background(), sc.state(t))
	if err != nil {
		t.Fatal(err)
	}
	if v.Passed() {
		t.Errorf("the check passed after TRUNCATE: %+v", v)
	}
	for _, c := range v.Checks {
		if c.OK || c.Evidence != "" || !strings.Contains(c.Note, "TRUNCATE") {
			t.Errorf("batch %d: ok %v, evidence %q, note %q", c.Batch, c.OK, c.Evidence, c.Note)
		}
	}
}

var _ = databricks.Classify

// TestDeletionVectorsWarnedOnceWhenEnabled: a load says nothing of deletion vectors before it
// runs; when the load turned them on (a workspace default), one warning says so with the
// statement that turns them off, and a re-run that loads nothing says nothing.
func TestDeletionVectorsWarnedOnceWhenEnabled(t *testing.T) {
	for _, enable := range []bool{false, true} {
		sc := newScene(t, 2, 2, 10)
		sc.m.props = map[string]string{"delta.minReaderVersion": "3"}
		sc.m.enableDV = enable
		rep, err := sc.reload(t, sc.deps(t, true), testOpts)
		if err != nil {
			t.Fatal(err)
		}
		var dv []string
		for _, w := range rep.Warnings {
			if strings.Contains(w, "deletion vectors") || strings.Contains(w, "enableDeletionVectors") {
				dv = append(dv, w)
			}
		}
		want := "the load changed a table property: delta.enableDeletionVectors = true (was unset): COPY INTO enabled deletion vectors " +
			"(the workspace's setting for writes to a table that does not set the property), a table feature every reader of main.sales.orders " +
			"must now support; to write without them from now on: ALTER TABLE `main`.`sales`.`orders` SET TBLPROPERTIES ('delta.enableDeletionVectors' = false)"
		switch {
		case enable && (len(dv) != 1 || dv[0] != want):
			t.Errorf("deletion vectors enabled by the load: warnings %q\nwant %s", dv, want)
		case !enable && len(dv) != 0:
			t.Errorf("deletion vectors untouched: warnings %q", dv)
		}
		rep, err = sc.reload(t, sc.deps(t, true), testOpts)
		if err != nil || len(rep.Warnings) != 0 {
			t.Errorf("a re-run with nothing to load: %v, warnings %q", err, rep.Warnings)
		}
	}
}
