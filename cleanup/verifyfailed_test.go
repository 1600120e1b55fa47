package cleanup

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// checkerFunc is a re-check given as a function.
type checkerFunc func(st *journal.State) *journal.Verification

func (f checkerFunc) Check(_ context.Context, st *journal.State) (*journal.Verification, error) {
	return f(st), nil
}

// TestFailedVerifyKeepsOnlyItsBatches: the run's latest verify failed some batches: cleanup
// keeps exactly those (saying why, until a verify passes for them) and deletes the batches the
// re-check proves; a plain verify that fails only the unknown batch leaves the batch proved by
// its own answer deletable. A verify that failed without naming a batch still refuses the
// whole run. A later passing verify lifts it.
func TestFailedVerifyKeepsOnlyItsBatches(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	keys := fill(b, 3, "a/")
	unknown := fill(b, 2, "b/")
	fx := newFixture(t)
	st := fx.verified(t, b, keys, unknown, time.Now().Add(-time.Hour))
	run := st.Run
	prepare := func() (*Prepared, error) {
		t.Helper()
		return Prepare(ctx, Config{Journal: fx.store, TableID: fx.table, Root: b.Location(), Backend: b, Prefix: prefix,
			Checker: checkerFunc(passing)}, Request{Run: run})
	}
	verify := func(v *journal.Verification) {
		t.Helper()
		w := fx.cont(t, fx.state(t, run))
		if err := w.Append(ctx, journal.Record{Kind: journal.KindVerification, Verification: v}); err != nil {
			t.Fatal(err)
		}
	}
	no, yes := false, true

	// verify (plain) failed the unknown batch only: batch 1, proved by its answer, is deleted.
	verify(&journal.Verification{By: "verify", OK: &no, Checks: []journal.Check{
		{Batch: 1, Expected: 6, OK: true, Evidence: journal.EvidenceAnswer}, {Batch: 2, Expected: 4, Note: "batch is unknown"}}})
	p, err := prepare()
	if err != nil {
		t.Fatalf("a verify that failed the unknown batch only: %v", err)
	}
	if p.Plan.Files != 3 || len(p.Plan.VerifyFailed) != 0 {
		t.Errorf("plan: %d files to delete, verify failed %v", p.Plan.Files, p.Plan.VerifyFailed)
	}
	p.Close()

	// verify --key failed batch 1 by key: it is kept whatever the re-check says.
	verify(&journal.Verification{By: "verify", OK: &no, Checks: []journal.Check{
		{Batch: 1, Expected: 6, Note: "the key check by order_id at version 7 failed it: 6 of its 6 keys are missing from the table"},
		{Batch: 2, Expected: 4, Note: "batch is unknown"}},
		Keys: &journal.KeyResult{Key: []string{"order_id"}, Failed: []int{1}}})
	p, err = prepare()
	if err != nil {
		t.Fatal(err)
	}
	if p.Plan.Files != 0 || len(p.Plan.VerifyFailed) != 1 || p.Plan.VerifyFailed[0] != 1 {
		t.Errorf("plan: %d files to delete, verify failed %v", p.Plan.Files, p.Plan.VerifyFailed)
	}
	kept := 0
	for _, k := range p.Plan.Kept {
		if k.Batch == 1 {
			kept++
			if !strings.Contains(k.Reason, "the run's latest verification") || !strings.Contains(k.Reason, "6 of its 6 keys are missing") ||
				!strings.Contains(k.Reason, "until zbrecover verify passes for it") {
				t.Errorf("kept %s: %s", k.Key, k.Reason)
			}
		}
	}
	if kept != 3 {
		t.Errorf("%d files of batch 1 kept, want 3: %+v", kept, p.Plan.Kept)
	}
	p.Close()

	// A verify that failed naming no batch refuses the run whole.
	verify(&journal.Verification{By: "verify", OK: &no, Checks: []journal.Check{{Batch: 1, Expected: 6, OK: true, Evidence: journal.EvidenceAnswer}}})
	if _, err := prepare(); !errors.Is(err, ErrVerifyFailed) || !errors.Is(err, ErrNotCleanable) {
		t.Errorf("a verify failed as a whole: %v", err)
	}

	// A passing verify lifts it.
	verify(&journal.Verification{By: "verify", OK: &yes, Checks: []journal.Check{{Batch: 1, Expected: 6, OK: true, Evidence: journal.EvidenceAnswer}}})
	p, err = prepare()
	if err != nil || p.Plan.Files != 3 {
		t.Fatalf("after a passing verify: %v", err)
	}
	p.Close()
}
