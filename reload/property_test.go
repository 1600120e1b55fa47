package reload

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/cleanup"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// TestPropertyNothingDeletedWithoutItsRows drives reload, verify and cleanup over the model
// warehouse through many random histories: processes killed at random statements, answers
// lost before and after commits, post-commit failures, statements run twice, failed history
// reads, conflicts, look-alike commits by the same identity, Zerobus commits between every
// statement, identities that do not match, warehouses with and without commit tags, staged
// and direct loads, and rows removed from the table before cleanup (a TRUNCATE, or a DELETE
// of one file's rows by the identity that reloads). The invariants:
//
//   - no file's rows are ever in the table twice (no file is loaded twice, through one path
//     or two);
//   - a batch the journal calls verified, by any evidence, has every file's rows in the table;
//   - cleanup deletes a file (original or staged copy) only if its rows are in the table;
//   - with commit tags and a last process without faults, every batch ends verified: none
//     stays unknown when the history holds its commit.
func TestPropertyNothingDeletedWithoutItsRows(t *testing.T) {
	seeds := 80
	if testing.Short() {
		seeds = 15
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { propertyRun(t, seed) })
	}
}

type scenario struct {
	files, per     int
	rows           int64
	tagged, staged bool
	lookalike      bool
	zerobus        int
	historyUser    string
	identity       string
	processes      int
	faultRate      float64
	truncate       bool
	deleteOne      bool
}

func randomScenario(r *rand.Rand) scenario {
	s := scenario{files: 2 + r.Intn(10), per: 1 + r.Intn(3), rows: int64(1 + r.Intn(2)), tagged: r.Intn(3) > 0, staged: r.Intn(2) == 0,
		lookalike: r.Intn(3) == 0, zerobus: r.Intn(4) * r.Intn(10), identity: "me@example.com", processes: 2 + r.Intn(6),
		faultRate: []float64{0.05, 0.15, 0.3}[r.Intn(3)], truncate: r.Intn(4) == 0, deleteOne: r.Intn(4) == 0}
	if r.Intn(8) == 0 {
		s.historyUser = "0a1b2c3d-app-id"
	}
	if r.Intn(10) == 0 {
		s.identity = ""
	}
	return s
}

func propertyRun(t *testing.T, seed int64) {
	r := rand.New(rand.NewSource(seed))
	s := randomScenario(r)
	t.Logf("scenario %+v", s)
	sc := newScene(t, s.files, s.per, s.rows)
	sc.m.lookalike, sc.m.zerobus, sc.m.historyUser = s.lookalike, s.zerobus, s.historyUser
	sc.m.identity = orDefault(s.identity, "me@example.com")
	staged := map[string]string{}
	for _, id := range sc.files {
		staged[id] = sc.stagedPath(id)
	}
	vol := mem.New()
	o := testOpts
	o.BatchFiles = 1 + r.Intn(3)
	if s.staged {
		o.Stage = sc.stageOf(vol, "run")
	}
	check := func(when string) {
		t.Helper()
		for _, id := range sc.files {
			if n := sc.inTable(id); n > 1 {
				t.Fatalf("%s: %s is in the table %d times", when, id, n)
			}
		}
	}
	faults := []faultKind{faultDropBefore, faultDropAfter, faultCommitFail, faultReexecute, faultHistoryError, faultConflict}
	for p := 0; p < s.processes; p++ {
		last := p == s.processes-1
		killAt := -1
		if !last && r.Intn(2) == 0 {
			killAt = sc.m.n + 1 + r.Intn(20)
		}
		if !last {
			rate := s.faultRate
			sc.m.fault = func(stmt string, n int) faultKind {
				if n == killAt {
					sc.m.dead = true
					return faultDropBefore
				}
				if r.Float64() < rate {
					return faults[r.Intn(len(faults))]
				}
				return faultNone
			}
		}
		d := sc.deps(t, s.tagged)
		d.Identity = s.identity
		_, _ = sc.reload(t, d, o)
		sc.m.revive()
		check(fmt.Sprintf("after process %d", p+1))
	}
	st := sc.state(t)
	// Verified means loaded: a batch the journal calls verified, by whatever evidence, has
	// every file's rows in the table.
	for _, b := range st.Batches {
		if b.Status != journal.BatchVerified {
			continue
		}
		for _, f := range b.Files {
			if n := sc.inTable(relOf(f.Key)); n != 1 {
				t.Errorf("batch %d is verified (%s: %s) but %s is in the table %d times", b.Batch, b.Evidence(), b.Outcome.Reason, f.Key, n)
			}
		}
	}
	if s.tagged {
		for _, b := range st.Batches {
			if b.Status != journal.BatchVerified {
				t.Errorf("tagged, last process without faults: batch %d is %s (%+v)", b.Batch, b.Status, b.Outcome)
			}
		}
	}
	if s.truncate {
		sc.m.truncate()
	}
	// The owner deletes the rows of one file that is in the table.
	deletedOne := ""
	if s.deleteOne {
		for _, id := range sc.files {
			if sc.inTable(id) == 1 {
				deletedOne = id
				sc.m.deleteFile(id)
				break
			}
		}
	}
	// Cleanup, through a re-check of the table.
	j := sc.store(t)
	prep, err := cleanup.Prepare(context.Background(), cleanup.Config{Journal: j, TableID: sc.tgt.TableID, Root: sc.tgt.Display(),
		Backend: sc.root, Prefix: fallbackPrefix, Checker: Checker{Warehouse: sc.m, Table: orders, Identity: s.identity, Backoff: time.Millisecond},
		OpenStaged: func(context.Context, string) (storageBackend, error) { return vol.Sub("run/"), nil }},
		cleanup.Request{})
	if err != nil {
		t.Logf("cleanup refused: %v", err)
	} else {
		if _, err := prep.Execute(context.Background(), cleanup.Options{Prefix: fallbackPrefix}); err != nil {
			t.Logf("cleanup: %v", err)
		}
		prep.Close()
	}
	deleted := 0
	for _, id := range sc.files {
		_, errOrig := sc.root.Stat(context.Background(), fallbackPrefix+id)
		_, errCopy := vol.Stat(context.Background(), "run/"+staged[id])
		origGone := errOrig != nil
		copyGone := !s.staged || errCopy != nil
		if origGone {
			deleted++
		}
		if origGone && copyGone && sc.inTable(id) != 1 {
			t.Errorf("%s: every copy deleted, rows in the table %d times", id, sc.inTable(id))
		}
		if origGone && sc.inTable(id) != 1 {
			t.Errorf("%s: the original was deleted, its rows are in the table %d times", id, sc.inTable(id))
		}
	}
	if (s.truncate || deletedOne != "") && deleted > 0 {
		t.Errorf("%d files deleted after rows left the table", deleted)
	}
	if _, err := journal.ReadState(context.Background(), j, sc.tgt.TableID, st.Run); err != nil {
		t.Errorf("the journal does not replay: %v", err)
	}
	_ = strings.TrimSpace
}
