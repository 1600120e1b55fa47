package cleanup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

const prefix = "_zerobus/table_rejected_parquets/"

// fixture is a journal with one run whose batch 1 is verified over the given keys of b, and
// whose batch 2 (unknownKeys) is unknown.
type fixture struct {
	store *journal.Dir
	table string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	s, err := journal.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &fixture{store: s, table: "tbl-0001"}
}

// verified writes the run and returns its state.
func (fx *fixture) verified(t *testing.T, b storage.Backend, keys, unknownKeys []string, verifiedAt time.Time) *journal.State {
	t.Helper()
	ctx := context.Background()
	files := func(keys []string) []journal.File {
		var out []journal.File
		for _, k := range keys {
			o, err := b.Stat(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, journal.FileOf(o, 2))
		}
		return out
	}
	w, err := journal.Start(ctx, fx.store, journal.Target{TableID: fx.table, Table: "main.s.t", Root: b.Location()}, "", journal.Header{Command: "reload"})
	if err != nil {
		t.Fatal(err)
	}
	batches := []journal.PlanBatch{{Batch: 1, Group: "g", Folder: prefix, Files: files(keys), ExpectedRows: int64(2 * len(keys)), SQL: "COPY INTO 1"}}
	if len(unknownKeys) > 0 {
		batches = append(batches, journal.PlanBatch{Batch: 2, Group: "g", Folder: prefix, Files: files(unknownKeys), ExpectedRows: int64(2 * len(unknownKeys)), SQL: "COPY INTO 2"})
	}
	recs := []journal.Record{{Kind: journal.KindPlan, Plan: &journal.Plan{Batches: batches}}}
	for _, pb := range batches {
		status, ins := journal.BatchVerified, pb.ExpectedRows
		if pb.Batch == 2 {
			status, ins = journal.BatchUnknown, 0
		}
		recs = append(recs,
			journal.Record{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: pb.Batch, Files: pb.Files, ExpectedRows: pb.ExpectedRows, SQL: pb.SQL}},
			journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: pb.Batch, Inserted: journal.Int64(ins)}},
			journal.Record{Time: verifiedAt, Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: pb.Batch, Status: status}})
	}
	recs = append(recs, journal.Record{Kind: journal.KindEnd, End: &journal.End{State: journal.RunVerified}})
	for _, r := range recs {
		if err := w.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return fx.state(t, w.Run())
}

// passing is a re-check that proves every verified batch of st in the table by its answer.
func passing(st *journal.State) *journal.Verification {
	v := &journal.Verification{By: "cleanup"}
	for _, b := range st.Batches {
		c := journal.Check{Batch: b.Batch, Expected: b.ExpectedRows, OK: b.Status == journal.BatchVerified}
		if c.OK {
			c.Evidence = journal.EvidenceAnswer
		}
		v.Checks = append(v.Checks, c)
	}
	return v
}

func (fx *fixture) state(t *testing.T, run string) *journal.State {
	t.Helper()
	st, err := journal.ReadState(context.Background(), fx.store, fx.table, run)
	if err != nil {
		t.Fatalf("the journal does not replay: %v", err)
	}
	return st
}

// cont continues the run as a new process does.
func (fx *fixture) cont(t *testing.T, st *journal.State) *journal.Writer {
	t.Helper()
	w, err := journal.Continue(context.Background(), fx.store, st, journal.Header{Command: "cleanup"})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func fill(b *mem.Backend, n int, folder string) []string {
	var keys []string
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("%s%sf-%05d.parquet", prefix, folder, i)
		b.Set(k, []byte(fmt.Sprintf("data of %s", k)), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		keys = append(keys, k)
	}
	return keys
}

// deleteCounter wraps a backend (hiding its batch deletes) and counts each key's
// successful deletes; after limit successful deletes it calls onLimit.
type deleteCounter struct {
	storage.Backend
	mu      sync.Mutex
	ok      map[string]int
	n       atomic.Int64
	limit   int64
	onLimit func()
	check   func(key string) error // called before each delete
}

func (d *deleteCounter) Delete(ctx context.Context, key string, cond storage.Precondition) error {
	if d.check != nil {
		if err := d.check(key); err != nil {
			return err
		}
	}
	err := d.Backend.Delete(ctx, key, cond)
	if err == nil {
		d.mu.Lock()
		if d.ok == nil {
			d.ok = map[string]int{}
		}
		d.ok[key]++
		d.mu.Unlock()
		if n := d.n.Add(1); n == d.limit && d.onLimit != nil {
			d.onLimit()
		}
	}
	return err
}

func (d *deleteCounter) twice() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for k, n := range d.ok {
		if n > 1 {
			out = append(out, k)
		}
	}
	return out
}

func TestTargetsAndPlan(t *testing.T) {
	b := mem.New()
	keys := fill(b, 5, "a/")
	unknown := fill(b, 3, "b/")
	fx := newFixture(t)
	old := time.Now().Add(-48 * time.Hour)
	st := fx.verified(t, b, keys, unknown, old)
	ts, err := Candidates(st)
	if err != nil || len(ts) != 5 {
		t.Fatalf("targets %d, %v", len(ts), err)
	}
	for i, tg := range ts {
		if tg.Key != keys[i] || tg.Cond().Size == 0 || tg.Batch != 1 {
			t.Errorf("target %+v", tg)
		}
	}
	p, err := NewPlan(st, PlanOptions{Checks: passing(st)})
	if err != nil || p.Files != 5 || len(p.Kept) != 3 || !strings.Contains(p.Kept[0].Reason, "unknown") {
		t.Fatalf("plan %+v, %v", p, err)
	}
	// --min-age longer than the time since verification keeps everything.
	p, err = NewPlan(st, PlanOptions{Checks: passing(st), MinAge: 72 * time.Hour})
	if err != nil || p.Files != 0 || len(p.Kept) != 8 || !strings.Contains(p.Kept[0].Reason, "--min-age") {
		t.Fatalf("plan with min-age %+v, %v", p, err)
	}
	if p, _ = NewPlan(st, PlanOptions{Checks: passing(st), MinAge: 24 * time.Hour}); p.Files != 5 {
		t.Errorf("min-age 24h: %d files", p.Files)
	}
	// A late file, a hidden object and a changed verified file, as the survey sees them.
	b.Set(prefix+"a/late.parquet", []byte("late"), time.Now())
	b.Set(prefix+"_tmp/x.parquet", []byte("hidden"), time.Now())
	b.Set(keys[1], []byte("overwritten"), time.Now())
	p, _ = NewPlan(st, PlanOptions{Checks: passing(st)})
	if err := p.Survey(context.Background(), b, st, prefix); err != nil {
		t.Fatal(err)
	}
	if len(p.Untracked) != 1 || p.Untracked[0].Key != prefix+"a/late.parquet" || p.Changed != 1 || p.Delete[1].Changed == "" {
		t.Errorf("survey: untracked %+v, changed %d", p.Untracked, p.Changed)
	}
}

func TestRefusesUnsettledRuns(t *testing.T) {
	b := mem.New()
	keys := fill(b, 2, "a/")
	fx := newFixture(t)
	ctx := context.Background()
	w, err := journal.Start(ctx, fx.store, journal.Target{TableID: fx.table, Root: b.Location()}, "", journal.Header{})
	if err != nil {
		t.Fatal(err)
	}
	o, _ := b.Stat(ctx, keys[0])
	f := []journal.File{journal.FileOf(o, 2)}
	for _, r := range []journal.Record{
		{Kind: journal.KindPlan, Plan: &journal.Plan{Batches: []journal.PlanBatch{{Batch: 1, Files: f, ExpectedRows: 2}}}},
		{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: 1, Files: f, ExpectedRows: 2}},
	} {
		if err := w.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	st := fx.state(t, w.Run())
	if _, err := Candidates(st); !errors.Is(err, ErrNotCleanable) || !strings.Contains(err.Error(), "reload again") {
		t.Errorf("open batch: %v", err)
	}
	if err := w.Append(ctx, journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: 1, Inserted: journal.Int64(1)}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, journal.Record{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: 1, Status: journal.BatchMismatch}}); err != nil {
		t.Fatal(err)
	}
	st = fx.state(t, w.Run())
	if _, err := run(ctx, b, st, fx.cont(t, st), Options{}); !errors.Is(err, ErrNotCleanable) || !strings.Contains(err.Error(), "another number of rows") {
		t.Errorf("mismatch: %v", err)
	}
	if _, err := b.Stat(ctx, keys[0]); err != nil {
		t.Errorf("file of a refused run: %v", err)
	}
}

// TestRunDeletesVerifiedOnly: batch deletes on mem; the changed file is skipped, the
// missing one gone, the unknown batch untouched, and the journal replays as partially
// cleaned with every fate recorded.
func TestRunDeletesVerifiedOnly(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	keys := fill(b, 2500, "a/")
	unknown := fill(b, 10, "b/")
	fx := newFixture(t)
	st := fx.verified(t, b, keys, unknown, time.Now())
	b.Set(keys[7], []byte("overwritten"), time.Now())
	if err := b.Delete(ctx, keys[8], storage.Precondition{}); err != nil {
		t.Fatal(err)
	}
	counted, c := storage.WithCounting(b)
	var prog progressCalls
	rep, err := run(ctx, counted, st, fx.cont(t, st), Options{Progress: prog.add})
	if err != nil {
		t.Fatal(err)
	}
	prog.check(t, "deletes", 2500, 3)
	if rep.Deleted != 2498 || rep.Skipped != 1 || rep.Gone != 1 || rep.Failed != 0 || !rep.Partial() || rep.After != journal.RunPartiallyCleaned {
		t.Errorf("report: deleted %d skipped %d gone %d failed %d, %s", rep.Deleted, rep.Skipped, rep.Gone, rep.Failed, rep.After)
	}
	if n := c.Counts(); n.DeleteBatches != 3 || n.Deletes != 0 {
		t.Errorf("requests: %s", n)
	}
	for _, k := range unknown {
		if _, err := b.Stat(ctx, k); err != nil {
			t.Errorf("unknown batch file %s: %v", k, err)
		}
	}
	if _, err := b.Stat(ctx, keys[7]); err != nil {
		t.Errorf("changed file: %v", err)
	}
	st = fx.state(t, st.Run)
	if st.Status != journal.RunPartiallyCleaned {
		t.Errorf("status %s", st.Status)
	}
	if f, _ := st.File(keys[7]); f.Delete != journal.DeleteSkip || !strings.Contains(f.DeleteReason, "changed") {
		t.Errorf("changed file in the journal: %+v", f)
	}
	if f, _ := st.File(keys[8]); f.Delete != journal.DeleteGone {
		t.Errorf("missing file in the journal: %+v", f)
	}
}

// TestCrashAndResume: Ctrl-C after 250 deletes, then a journal that fails to record a
// chunk's deletions; each re-run continues the run, nothing is deleted twice, and the last
// leaves it cleaned with a journal that replays.
func TestCrashAndResume(t *testing.T) {
	b := mem.New()
	keys := fill(b, 1000, "a/")
	fx := newFixture(t)
	st := fx.verified(t, b, keys, nil, time.Now())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dc := &deleteCounter{Backend: b, limit: 250, onLimit: cancel}
	rep, err := run(ctx, dc, st, fx.cont(t, st), Options{ChunkSize: 100, Concurrency: 8})
	if !errors.Is(err, context.Canceled) || rep == nil || rep.Deleted < 250 || rep.Deleted >= 1000 {
		t.Fatalf("interrupted run: %v, %+v", err, rep)
	}
	first := rep.Deleted
	st = fx.state(t, st.Run)
	if st.Status != journal.RunPartiallyCleaned || len(st.Deleted()) != first {
		t.Fatalf("after the interrupt: %s, %d recorded, %d deleted", st.Status, len(st.Deleted()), first)
	}

	// The second process loses its journal after the third chunk's deletes went out.
	fj := &failingJournal{w: fx.cont(t, st), failDeleted: 3}
	rep, err = run(context.Background(), dc, st, fj, Options{ChunkSize: 100, Concurrency: 8})
	if err == nil || !strings.Contains(err.Error(), "journal the deletions") {
		t.Fatalf("journal failure: %v", err)
	}
	st = fx.state(t, st.Run)
	intents := 0
	for _, f := range st.VerifiedFiles() {
		if f.DeleteIntent && f.Delete == "" {
			intents++
		}
	}
	if intents == 0 {
		t.Fatal("no file with an intent and no result after the journal failure")
	}

	rep, err = run(context.Background(), dc, st, fx.cont(t, st), Options{ChunkSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Gone < 100 || rep.Failed != 0 || rep.Skipped != 0 || rep.After != journal.RunCleaned {
		t.Errorf("last run: deleted %d gone %d failed %d, %s", rep.Deleted, rep.Gone, rep.Failed, rep.After)
	}
	if tw := dc.twice(); len(tw) > 0 {
		t.Errorf("deleted twice: %v", tw)
	}
	if n := dc.n.Load(); n != 1000 {
		t.Errorf("%d successful deletes, want 1000", n)
	}
	st = fx.state(t, st.Run)
	if st.Status != journal.RunCleaned {
		t.Errorf("final status %s", st.Status)
	}
	var left int
	_ = b.List(context.Background(), "", func(storage.ObjectInfo) error { left++; return nil })
	if left != 0 {
		t.Errorf("%d objects left", left)
	}
	// Nothing to do now.
	if p, err := NewPlan(st, PlanOptions{Checks: passing(st)}); err != nil || p.Files != 0 || p.Removed != 1000 {
		t.Errorf("plan after cleaning: %+v, %v", p, err)
	}
}

// failingJournal fails the failDeleted-th deleted record (and, as a real writer would,
// everything after it).
type failingJournal struct {
	w           *journal.Writer
	failDeleted int
	deleted     int
	failed      bool
}

func (f *failingJournal) Append(ctx context.Context, r journal.Record) error {
	if r.Kind == journal.KindDeleted {
		f.deleted++
		if f.deleted == f.failDeleted {
			f.failed = true
		}
	}
	if f.failed {
		return errors.New("injected: disk full")
	}
	return f.w.Append(ctx, r)
}

// TestArchiveBeforeDelete: every original is deleted only after its archive copy exists with
// the same size; a copy left by an interrupted run is accepted, another object under the
// key is not.
func TestArchiveBeforeDelete(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	keys := fill(b, 50, "a/")
	fx := newFixture(t)
	st := fx.verified(t, b, keys, nil, time.Now())
	archive := mem.New().Sub("archive")
	// An earlier, interrupted run copied keys[0]; something else sits at keys[1].
	d0, _ := storage.ReadAll(ctx, b, keys[0], 0, -1)
	archive.Set(keys[0], d0, time.Now())
	archive.Set(keys[1], []byte("another object"), time.Now())
	dc := &deleteCounter{Backend: b, check: func(key string) error {
		src, err := b.Stat(ctx, key)
		if err != nil {
			return nil // gone already: the delete reports it
		}
		a, err := archive.Stat(ctx, key)
		if err != nil || a.Size != src.Size || a.MD5 != src.MD5 {
			t.Errorf("delete of %s before its archive copy (%v, %d vs %d bytes)", key, err, a.Size, src.Size)
		}
		return nil
	}}
	var archived, deleted progressCalls
	rep, err := run(ctx, dc, st, fx.cont(t, st), Options{Archive: archive, ArchiveProgress: archived.add, Progress: deleted.add})
	if err != nil {
		t.Fatal(err)
	}
	// The file whose archive copy failed is kept: both phases still reach their total.
	archived.check(t, "archive copies", 50, 50)
	deleted.check(t, "deletes", 50, 49)
	if rep.Deleted != 49 || rep.Failed != 1 || rep.Problems[0].Key != keys[1] || !strings.Contains(rep.Problems[0].Reason, "another object") {
		t.Errorf("report: deleted %d failed %d %+v", rep.Deleted, rep.Failed, rep.Problems)
	}
	if _, err := b.Stat(ctx, keys[1]); err != nil {
		t.Errorf("the file whose archive key is taken was deleted: %v", err)
	}
	st = fx.state(t, st.Run)
	for _, k := range keys[2:] {
		if f, _ := st.File(k); f.Delete != journal.Deleted || f.Archive != "mem://archive/"+k {
			t.Errorf("journal: %s %s archive %q", k, f.Delete, f.Archive)
		}
	}
}

// TestRefusesPendingMerge: a load by key whose MERGE has not committed holds its rows in the
// staging table only: cleanup refuses the run (exit 4 in the command), saying so, instead of
// finding nothing to delete.
func TestRefusesPendingMerge(t *testing.T) {
	b := mem.New()
	keys := fill(b, 2, "a/")
	fx := newFixture(t)
	ctx := context.Background()
	w, err := journal.Start(ctx, fx.store, journal.Target{TableID: fx.table, Root: b.Location()}, "", journal.Header{})
	if err != nil {
		t.Fatal(err)
	}
	o, _ := b.Stat(ctx, keys[0])
	f := []journal.File{journal.FileOf(o, 2)}
	for _, r := range []journal.Record{
		{Kind: journal.KindMerge, Merge: &journal.Merge{Step: journal.MergePlanned, Staging: "main.s.t__zbrecover_r1", Key: []string{"id"}}},
		{Kind: journal.KindPlan, Plan: &journal.Plan{Batches: []journal.PlanBatch{{Batch: 1, Folder: prefix, Files: f, ExpectedRows: 2}}}},
		{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: 1, Files: f, ExpectedRows: 2}},
		{Kind: journal.KindResult, Result: &journal.Result{Batch: 1, Inserted: journal.Int64(2)}},
		{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: 1, Status: journal.BatchVerified, Evidence: journal.EvidenceAnswer}},
	} {
		if err := w.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	st := fx.state(t, w.Run())
	if err := Cleanable(st); !errors.Is(err, ErrNotCleanable) || !strings.Contains(err.Error(), "MERGE has not committed") {
		t.Errorf("pending MERGE: %v", err)
	}
}

// progressCalls records a phase's progress callbacks.
type progressCalls struct {
	mu    sync.Mutex
	calls [][2]int
}

func (p *progressCalls) add(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, [2]int{done, total})
}

// check: the phase started at 0 of total, never went back, ended at total, and was told
// at least minCalls times after its start (as the work was answered, not once at the end).
func (p *progressCalls) check(t *testing.T, what string, total, minCalls int) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.calls
	if len(c) < minCalls+1 || c[0] != [2]int{0, total} || c[len(c)-1] != [2]int{total, total} {
		t.Errorf("%s progress: %d calls, first %v, last %v; want (0, %d) first, (%d, %d) last, %d calls at least",
			what, len(c), c[0], c[len(c)-1], total, total, total, minCalls+1)
	}
	for i := 1; i < len(c); i++ {
		if c[i][0] < c[i-1][0] || c[i][1] != total {
			t.Errorf("%s progress went from %v to %v", what, c[i-1], c[i])
			break
		}
	}
}

// TestUndoneBatchesKept: a batch taken back by undo does not stop cleanup of the run's other
// batches, and its files are kept (its rows are not in the table; a reload loads them again
// and cleans them up once verified). A batch being undone stops cleanup of the run.
func TestUndoneBatchesKept(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	keys := fill(b, 4, "a/")
	fx := newFixture(t)
	w, err := journal.Start(ctx, fx.store, journal.Target{TableID: fx.table, Root: b.Location()}, "", journal.Header{Command: "reload"})
	if err != nil {
		t.Fatal(err)
	}
	files := func(ks []string) []journal.File {
		var out []journal.File
		for _, k := range ks {
			o, _ := b.Stat(ctx, k)
			out = append(out, journal.FileOf(o, 2))
		}
		return out
	}
	batches := []journal.PlanBatch{{Batch: 1, Files: files(keys[:2]), ExpectedRows: 4, SQL: "COPY INTO 1"}, {Batch: 2, Files: files(keys[2:]), ExpectedRows: 4, SQL: "COPY INTO 2"}}
	recs := []journal.Record{{Kind: journal.KindPlan, Plan: &journal.Plan{Batches: batches}}}
	for _, pb := range batches {
		recs = append(recs,
			journal.Record{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: pb.Batch, Files: pb.Files, ExpectedRows: 4, SQL: pb.SQL}},
			journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: pb.Batch, Inserted: journal.Int64(4)}},
			journal.Record{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: pb.Batch, Status: journal.BatchVerified}})
	}
	recs = append(recs, journal.Record{Kind: journal.KindUndo, Undo: &journal.Undo{Step: journal.UndoIntent, Batch: 2, Evidence: journal.UndoByRowIDs,
		SQL: "DELETE FROM t WHERE _metadata.row_id BETWEEN 0 AND 3", Rows: 4}})
	for _, r := range recs {
		if err := w.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	st := fx.state(t, w.Run())
	if err := Cleanable(st); !errors.Is(err, ErrNotCleanable) || !strings.Contains(err.Error(), "zbrecover undo again") {
		t.Errorf("a batch being undone: %v", err)
	}
	for _, r := range []journal.Record{
		{Kind: journal.KindUndo, Undo: &journal.Undo{Step: journal.UndoResult, Batch: 2, Deleted: journal.Int64(4)}},
		{Kind: journal.KindUndo, Undo: &journal.Undo{Step: journal.UndoOutcome, Batch: 2, Status: journal.Undone, Version: journal.Int64(9)}},
	} {
		if err := w.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	st = fx.state(t, w.Run())
	if err := Cleanable(st); err != nil {
		t.Fatalf("a run with a batch undone: %v", err)
	}
	p, err := NewPlan(st, PlanOptions{Checks: passing(st)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Files != 2 || p.Delete[0].Key != keys[0] || p.Delete[1].Key != keys[1] {
		t.Errorf("plan deletes %+v, want batch 1's files", p.Delete)
	}
	kept := 0
	for _, k := range p.Kept {
		if k.Batch == 2 && strings.Contains(k.Reason, "was undone") {
			kept++
		}
	}
	if kept != 2 {
		t.Errorf("kept %+v, want batch 2's two files kept as undone", p.Kept)
	}
	rep, err := run(ctx, b, st, fx.cont(t, st), Options{})
	if err != nil || rep.Deleted != 2 {
		t.Fatalf("cleanup: %+v, %v", rep, err)
	}
	for i, k := range keys {
		_, err := b.Stat(ctx, k)
		if gone := errors.Is(err, storage.ErrNotExist); gone != (i < 2) {
			t.Errorf("%s gone %v after cleanup", k, gone)
		}
	}
}

// run plans st with a re-check that proves every batch (passing) and deletes, as Execute does.
func run(ctx context.Context, b storage.Backend, st *journal.State, j Journal, o Options) (*Report, error) {
	p, err := NewPlan(st, PlanOptions{Checks: passing(st)})
	if err != nil {
		return nil, err
	}
	return RunPlan(ctx, b, st, p, j, o)
}
