package journal

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func (b *runBuilder) undoIntent(n int, ev UndoEvidence) *runBuilder {
	return b.add(Record{Kind: KindUndo, Undo: &Undo{Step: UndoIntent, Batch: n, Evidence: ev, Rows: b.plans[n].ExpectedRows,
		Matched: b.plans[n].ExpectedRows, SQL: fmt.Sprintf("DELETE FROM t WHERE _metadata.row_id BETWEEN %d AND %d", n*100, n*100+9),
		LoadVersion: Int64(int64(n)), BaseVersion: Int64(int64(40 + n)), Tag: fmt.Sprintf("zbrecover:r1:undo:%d:1", n)}})
}

func (b *runBuilder) undoResult(n int, deleted *int64, errText string) *runBuilder {
	return b.add(Record{Kind: KindUndo, Undo: &Undo{Step: UndoResult, Batch: n, Deleted: deleted, Err: errText}})
}

func (b *runBuilder) undoOutcome(n int, st UndoStatus) *runBuilder {
	return b.add(Record{Kind: KindUndo, Undo: &Undo{Step: UndoOutcome, Batch: n, Status: st, Version: Int64(int64(50 + n))}})
}

// undo records a batch's undo that deleted its rows.
func (b *runBuilder) undo(n int) *runBuilder {
	return b.undoIntent(n, UndoByRowIDs).undoResult(n, Int64(b.plans[n].ExpectedRows), "").undoOutcome(n, Undone)
}

// TestReplayUndo: the replay rules of undo records, as TestReplay states those of loads: a
// batch undone is neither verified nor possibly loaded (its files loadable again, never
// deletable by the run), one whose undo may have run counts as possibly loaded, and the run's
// status says both.
func TestReplayUndo(t *testing.T) {
	loaded := func() *runBuilder {
		return newRun("r1").plan(batch(1, "a", "b"), batch(2, "c")).load(1).load(2).end(RunVerified).process("zbrecover undo t")
	}
	type want struct {
		status   RunStatus
		batches  []BatchStatus
		verified []string
		loaded   []string
		undone   []string
		undoOpen []int
		rows     Rows
	}
	cases := []struct {
		name    string
		recs    func() []Record
		wantErr string
		want    want
	}{
		{
			name: "one batch undone",
			recs: func() []Record { return loaded().undo(1).end(RunPartiallyUndone).records() },
			want: want{status: RunPartiallyUndone, batches: []BatchStatus{BatchUndone, BatchVerified},
				verified: []string{"c"}, loaded: []string{"c"}, undone: []string{"a", "b"},
				rows: Rows{Expected: 30, Answered: 30, Loaded: 30, Undone: 20}},
		},
		{
			name: "every batch undone",
			recs: func() []Record { return loaded().undo(1).undo(2).end(RunUndone).records() },
			want: want{status: RunUndone, batches: []BatchStatus{BatchUndone, BatchUndone},
				undone: []string{"a", "b", "c"}, rows: Rows{Expected: 30, Answered: 30, Loaded: 30, Undone: 30}},
		},
		{
			name: "killed after the undo intent: undoing, its files still possibly loaded",
			recs: func() []Record { return loaded().undoIntent(2, UndoByFiles).records() },
			want: want{status: RunUndoing, batches: []BatchStatus{BatchVerified, BatchUndoing},
				verified: []string{"a", "b"}, loaded: []string{"a", "b", "c"}, undoOpen: []int{2},
				rows: Rows{Expected: 30, Answered: 30, Loaded: 30}},
		},
		{
			name: "a DELETE whose answer was lost, settled by a re-run from its commit",
			recs: func() []Record {
				return loaded().undoIntent(2, UndoByRowIDs).process("zbrecover undo t").
					undoResult(2, nil, "no answer was recorded").undoOutcome(2, Undone).records()
			},
			want: want{status: RunPartiallyUndone, batches: []BatchStatus{BatchVerified, BatchUndone},
				verified: []string{"a", "b"}, loaded: []string{"a", "b"}, undone: []string{"c"},
				rows: Rows{Expected: 30, Answered: 30, Loaded: 30, Undone: 10}},
		},
		{
			name: "a DELETE that errored is sent again after settling",
			recs: func() []Record {
				return loaded().undoIntent(2, UndoByRowIDs).undoResult(2, nil, "connection reset").
					process("zbrecover undo t").undo(2).records()
			},
			want: want{status: RunPartiallyUndone, batches: []BatchStatus{BatchVerified, BatchUndone},
				verified: []string{"a", "b"}, loaded: []string{"a", "b"}, undone: []string{"c"},
				rows: Rows{Expected: 30, Answered: 30, Loaded: 30, Undone: 10}},
		},
		{
			name: "a refused DELETE leaves the batch verified, and may be tried again",
			recs: func() []Record {
				return loaded().undoIntent(1, UndoByRowIDs).undoResult(1, nil, "[UNRESOLVED_COLUMN.WITH_SUGGESTION]").
					undoOutcome(1, UndoFailed).undoIntent(1, UndoByKeys).records()
			},
			want: want{status: RunUndoing, batches: []BatchStatus{BatchUndoing, BatchVerified},
				verified: []string{"c"}, loaded: []string{"a", "b", "c"}, undoOpen: []int{1},
				rows: Rows{Expected: 30, Answered: 30, Loaded: 30}},
		},
		{
			name: "a DELETE that deleted another number of rows: the run needs a look",
			recs: func() []Record {
				return loaded().undoIntent(2, UndoByKeys).undoResult(2, Int64(11), "").undoOutcome(2, UndoMismatch).records()
			},
			want: want{status: RunMismatch, batches: []BatchStatus{BatchVerified, BatchUndoMismatch},
				verified: []string{"a", "b"}, loaded: []string{"a", "b", "c"},
				rows: Rows{Expected: 30, Answered: 30, Loaded: 30}},
		},
		{
			name: "undo of a batch not verified",
			recs: func() []Record {
				return newRun("r1").plan(batch(1, "a")).intent(1).undoIntent(1, UndoByRowIDs).records()
			},
			wantErr: "undo intent for batch 1, which is open",
		},
		{
			name:    "undo of an undone batch",
			recs:    func() []Record { return loaded().undo(1).undoIntent(1, UndoByFiles).records() },
			wantErr: "undo intent for batch 1, which is undone",
		},
		{
			name:    "a second undo intent while the first has no answer",
			recs:    func() []Record { return loaded().undoIntent(1, UndoByFiles).undoIntent(1, UndoByFiles).records() },
			wantErr: "undo intent for batch 1, which is undoing",
		},
		{
			name:    "an undo result without an intent",
			recs:    func() []Record { return loaded().undoResult(1, Int64(20), "").records() },
			wantErr: "undo result for batch 1, which is verified",
		},
		{
			name:    "an undo outcome without an intent",
			recs:    func() []Record { return loaded().undoOutcome(1, Undone).records() },
			wantErr: "undo outcome for batch 1, which is verified",
		},
		{
			name:    "an undone batch is never verified again by its load's commit",
			recs:    func() []Record { return loaded().undo(1).outcome(1, BatchVerified).records() },
			wantErr: "classification of batch 1, which is undone",
		},
		{
			name:    "cleanup may not delete an undone batch's files",
			recs:    func() []Record { return loaded().undo(1).deleteIntent("a").records() },
			wantErr: "delete intent for a, which no verified batch holds",
		},
		{
			name:    "a load of an undone batch in the same run",
			recs:    func() []Record { return loaded().undo(1).intent(1).records() },
			wantErr: "intent for batch 1, which is undone",
		},
		{
			name:    "an undo of a batch no plan names",
			recs:    func() []Record { return loaded().undo(3).records() },
			wantErr: "undo of batch 3, which no plan names",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := Replay(c.recs())
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := c.want
			if st.Status != w.status {
				t.Errorf("status %s, want %s", st.Status, w.status)
			}
			var got []BatchStatus
			for _, b := range st.Batches {
				got = append(got, b.Status)
			}
			if !reflect.DeepEqual(got, w.batches) {
				t.Errorf("batches %v, want %v", got, w.batches)
			}
			if g := keys(st.VerifiedFiles()); !reflect.DeepEqual(g, w.verified) {
				t.Errorf("verified files %v, want %v", g, w.verified)
			}
			var lk []FileState
			for _, f := range st.LoadedKeys() {
				lk = append(lk, f)
			}
			if g := keys(lk); !reflect.DeepEqual(g, w.loaded) {
				t.Errorf("possibly loaded files %v, want %v", g, w.loaded)
			}
			if g := keys(st.UndoneFiles()); !reflect.DeepEqual(g, w.undone) {
				t.Errorf("undone files %v, want %v", g, w.undone)
			}
			if g := batchNums(st.UndoOpen()); !reflect.DeepEqual(g, w.undoOpen) {
				t.Errorf("undo open %v, want %v", g, w.undoOpen)
			}
			if st.Rows() != w.rows {
				t.Errorf("rows %+v, want %+v", st.Rows(), w.rows)
			}
			if st.Unfinished() {
				t.Error("a re-run of reload would continue the run: undo is not a load's unfinished work")
			}
		})
	}
}

// TestUndoRecordValidation: an undo record names its batch, and an intent its evidence and
// statement; an outcome is undone or failed.
func TestUndoRecordValidation(t *testing.T) {
	for _, u := range []Undo{
		{Step: UndoIntent, Batch: 1, Evidence: "guess", SQL: "DELETE FROM t"},
		{Step: UndoIntent, Batch: 1, Evidence: UndoByRowIDs},
		{Step: UndoOutcome, Batch: 1, Status: "verified"},
		{Step: "retry", Batch: 1},
		{Step: UndoResult, Batch: 0},
	} {
		r := Record{V: Version, Run: "r1", Seq: 3, Kind: KindUndo, TableID: "tbl-1", Undo: &u}
		if err := r.Validate(); err == nil {
			t.Errorf("%+v passed validation", u)
		}
	}
}

// TestUndoneFilesInFacts: the files of undone batches are not among the table's loaded files
// and are counted, by key, in Facts.Undone, whether the run is replayed or read from its
// snapshot (whose header carries them).
func TestUndoneFilesInFacts(t *testing.T) {
	st, err := Replay(newRun("r1").plan(batch(1, "a", "b"), batch(2, "c")).load(1).load(2).undo(1).end(RunPartiallyUndone).records())
	must(t, err)
	fp := fingerprint{Records: 20, Size: 99, Sum: 7}
	in, err := newSnapshotReader(bytes.NewReader(encodeSnapshot(st, fp))).header("tbl-1", "r1")
	must(t, err)
	if !reflect.DeepEqual(in, infoOf(st, fp)) || strings.Join(in.undone, ",") != "a,b" || in.loaded != 1 {
		t.Fatalf("snapshot header %+v", in)
	}

	ctx := context.Background()
	for _, snapshot := range []bool{false, true} {
		s := dirOpener(t).a
		w, err := Start(ctx, s, Target{TableID: "tbl-1", Table: "main.s.t", Root: "s3://bucket/t"}, "r1", Header{Command: "zbrecover reload"})
		must(t, err)
		for _, r := range newRun("r1").plan(batch(1, "a", "b"), batch(2, "c")).load(1).load(2).undo(1).records()[1:] {
			r.V, r.Seq, r.Time = 0, 0, t0
			must(t, w.Append(ctx, r))
		}
		if snapshot {
			must(t, w.Append(ctx, Record{Kind: KindEnd, End: &End{State: RunPartiallyUndone}}))
		}
		f, err := Facts(ctx, s, "tbl-1")
		must(t, err)
		if g := keys(f.Loaded); !reflect.DeepEqual(g, []string{"c"}) || f.Undone["a"] != 1 || f.Undone["b"] != 1 || len(f.Undone) != 2 {
			t.Errorf("snapshot %v: loaded %v, undone %v", snapshot, g, f.Undone)
		}
		f, err = FactsFor(ctx, s, "tbl-1", func(k string) bool { return k == "b" })
		must(t, err)
		if len(f.Loaded) != 0 || f.Undone["b"] != 1 || len(f.Undone) != 1 {
			t.Errorf("snapshot %v: narrowed loaded %v, undone %v", snapshot, f.Loaded, f.Undone)
		}
	}
}

// TestSnapshotKeepsUndoneRows: the summary history lists says how many of a run's rows undo
// took back, read from the snapshot as from the records.
func TestSnapshotKeepsUndoneRows(t *testing.T) {
	b := newRun("r1").plan(batch(1, "a", "b"), batch(2, "c")).load(1).load(2).end(RunVerified).process("zbrecover undo t").undo(1).end(RunPartiallyUndone)
	st, err := Replay(b.records())
	must(t, err)
	fp := fingerprint{Records: len(b.records()), Size: 1, Sum: 2}
	in, err := newSnapshotReader(bytes.NewReader(encodeSnapshot(st, fp))).header("tbl-1", "r1")
	must(t, err)
	if got := infoOf(st, fp).sum; got.UndoneRows != 20 || got.InsertedRows != 30 {
		t.Errorf("summary from the records: %d undone of %d inserted, want 20 of 30", got.UndoneRows, got.InsertedRows)
	}
	if in.sum.UndoneRows != 20 {
		t.Errorf("summary from the snapshot: %d undone, want 20", in.sum.UndoneRows)
	}
}
