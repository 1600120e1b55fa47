package journal

import (
	"slices"
	"strings"
	"testing"
)

// clone returns a builder holding b's records so far, to write one process's records on.
func (b *runBuilder) clone() *runBuilder {
	c := &runBuilder{run: b.run, recs: slices.Clone(b.recs), plans: map[int]PlanBatch{}}
	for k, v := range b.plans {
		c.plans[k] = v
	}
	return c
}

// proved records batch n's classification with evidence (and its commit, when version > 0).
func (b *runBuilder) proved(n int, st BatchStatus, ev Evidence, version int64) *runBuilder {
	o := &Outcome{Batch: n, Status: st, Evidence: ev}
	if version > 0 {
		o.Version = Int64(version)
	}
	return b.add(Record{Kind: KindOutcome, Outcome: o})
}

// forkRun returns the records of a run two processes wrote at once, as earlier versions let
// them: both read the records of prefix, and each wrote its own records numbered from there
// (a and b add them to copies of prefix); after returns the records a later process wrote
// once it read the wedged run (numbered after the last forked record).
func forkRun(prefix *runBuilder, a, b func(*runBuilder), after func(*runBuilder)) []Record {
	n := len(prefix.recs)
	ba, bb := prefix.clone(), prefix.clone()
	a(ba)
	b(bb)
	recs := slices.Clone(prefix.recs)
	recs = append(recs, ba.recs[n:]...)
	recs = append(recs, bb.recs[n:]...)
	if after != nil {
		last := max(len(ba.recs), len(bb.recs))
		bc := &runBuilder{run: prefix.run, recs: make([]Record, last), plans: ba.plans}
		after(bc)
		recs = append(recs, bc.recs[last:]...)
	}
	return recs
}

func TestReplayWedged(t *testing.T) {
	type want struct {
		status    RunStatus
		batches   []BatchStatus
		seqs      []int
		from, to  int
		unknown   []int
		mismatch  []int
		verified  []string // files cleanup may delete
		loaded    []string // files no run may load again
		remaining []int
		claimed   *int64 // batch 1's outcome version
		deleted   int
		message   []string
	}
	twoBatches := func() *runBuilder { return newRun("r1").plan(batch(1, "a", "b"), batch(2, "c")) }
	cases := []struct {
		name string
		recs func() []Record
		want want
	}{
		{
			// The holder sent batch 1 and went on; a second reload broke its lock, read the
			// run with batch 1 open and continued it: its run record took number 4 beside
			// the holder's result.
			name: "a lock broken under a working reload",
			recs: func() []Record {
				return forkRun(twoBatches().intent(1),
					func(a *runBuilder) {
						a.result(1, Int64(20), "").proved(1, BatchVerified, EvidenceAnswer, 0).
							intent(2).result(2, Int64(10), "").proved(2, BatchVerified, EvidenceAnswer, 0).end(RunVerified)
					},
					// The second reload sent batch 2 too: COPY INTO skipped its loaded file.
					// (Its next record, number 8, met the holder's of the same kind and failed.)
					func(b *runBuilder) {
						b.process("zbrecover reload t --break-lock --yes").intent(2).result(2, Int64(0), "").proved(2, BatchUnknown, "", 0)
					}, nil)
			},
			want: want{status: RunVerified, batches: []BatchStatus{BatchVerified, BatchVerified}, seqs: []int{4, 5, 6, 7}, from: 4, to: 9,
				verified: []string{"a", "b", "c"}, loaded: []string{"a", "b", "c"},
				message: []string{"run r1 was written by two processes at once", "record numbers 4, 5, 6, 7 are held by two records each",
					"records 4 to 9", "batches 1, 2 are verified by their own statement's answer"}},
		},
		{
			name: "no answer of its own: unknown, sent by no re-run, kept by cleanup",
			recs: func() []Record {
				return forkRun(twoBatches().intent(1),
					func(a *runBuilder) { a.result(1, nil, "connection reset") },
					func(b *runBuilder) {
						b.process("zbrecover reload t --break-lock --yes").proved(1, BatchUnknown, "", 0)
					}, nil)
			},
			want: want{status: RunLoading, batches: []BatchStatus{BatchUnknown, BatchPlanned}, seqs: []int{4}, from: 4, to: 5,
				unknown: []int{1}, loaded: []string{"a", "b"}, remaining: []int{2},
				message: []string{"record number 4 is held by two records (", "batch 1 is unknown: either process may have sent its statement",
					"until `zbrecover verify` settles it", "a re-run sends only batches no statement was sent for"}},
		},
		{
			name: "two statements of a batch inserted rows: mismatch",
			recs: func() []Record {
				return forkRun(twoBatches(),
					func(a *runBuilder) { a.load(1) },
					func(b *runBuilder) {
						b.process("zbrecover reload t --break-lock --yes").intent(1).result(1, Int64(20), "").proved(1, BatchVerified, EvidenceAnswer, 0)
					}, nil)
			},
			want: want{status: RunMismatch, batches: []BatchStatus{BatchMismatch, BatchPlanned}, seqs: []int{3, 4, 5}, from: 3, to: 6,
				mismatch: []int{1}, loaded: []string{"a", "b"}, remaining: []int{2},
				message: []string{"batch 1 is mismatched: rows may be in the table twice"}},
		},
		{
			// Settled from the history alone (the only commit by this identity): the other
			// process's commit may be the one taken. The commit stays claimed.
			name: "proved by the history alone: unknown, its commit still claimed",
			recs: func() []Record {
				return forkRun(twoBatches().intent(1),
					func(a *runBuilder) { a.result(1, nil, "lost").proved(1, BatchVerified, EvidenceHistory, 7) },
					func(b *runBuilder) { b.process("zbrecover verify t").proved(1, BatchUnknown, "", 0) }, nil)
			},
			want: want{status: RunLoading, batches: []BatchStatus{BatchUnknown, BatchPlanned}, seqs: []int{4, 5}, from: 4, to: 5,
				unknown: []int{1}, loaded: []string{"a", "b"}, remaining: []int{2}, claimed: Int64(7)},
		},
		{
			// A cleanup and a reload at once: the cleanup's deletes are kept; the reload's
			// batch is proved by its answer.
			name: "a cleanup's deletes in the forked records are kept",
			recs: func() []Record {
				return forkRun(twoBatches().load(1),
					func(a *runBuilder) {
						a.process("zbrecover cleanup t").deleteIntent("a", "b").deleted(DeletedResult{Key: "a", Status: Deleted}, DeletedResult{Key: "b", Status: Deleted})
					},
					func(b *runBuilder) {
						b.process("zbrecover reload t --break-lock --yes").intent(2).result(2, Int64(10), "").proved(2, BatchVerified, EvidenceAnswer, 0)
					}, nil)
			},
			want: want{status: RunPartiallyCleaned, batches: []BatchStatus{BatchVerified, BatchVerified}, seqs: []int{6, 7, 8}, from: 6, to: 9,
				verified: []string{"a", "b", "c"}, loaded: []string{"a", "b", "c"}},
		},
		{
			// A statement may have run with no answer, then a cleanup deleted the files of
			// the batch the other process verified by history: the delete is kept and said.
			name: "deletes of a batch the rule leaves unknown are counted",
			recs: func() []Record {
				return forkRun(twoBatches().intent(1),
					func(a *runBuilder) {
						a.result(1, nil, "lost").proved(1, BatchVerified, EvidenceHistory, 3).deleteIntent("a").deleted(DeletedResult{Key: "a", Status: Deleted})
					},
					func(b *runBuilder) { b.process("zbrecover reload t --break-lock --yes").proved(1, BatchUnknown, "", 0) }, nil)
			},
			want: want{status: RunLoading, batches: []BatchStatus{BatchUnknown, BatchPlanned}, seqs: []int{4, 5}, from: 4, to: 7,
				unknown: []int{1}, loaded: []string{"a", "b"}, remaining: []int{2}, claimed: Int64(3), deleted: 1,
				message: []string{"1 files of those batches were deleted meanwhile"}},
		},
		{
			// The processes planned one batch number with other files: records naming it
			// may mean either, so none proves either.
			name: "one batch number planned twice with other files",
			recs: func() []Record {
				return forkRun(newRun("r1").plan(batch(1, "a")).load(1),
					func(a *runBuilder) { a.plan(batch(2, "c")).intent(2) },
					func(b *runBuilder) {
						b.process("zbrecover reload t").plan(batch(2, "d")).intent(2).result(2, Int64(10), "").proved(2, BatchVerified, EvidenceAnswer, 0)
					}, nil)
			},
			want: want{status: RunUnknown, batches: []BatchStatus{BatchVerified, BatchUnknown, BatchUnknown}, seqs: []int{6, 7}, from: 6, to: 10,
				unknown: []int{2, 3}, verified: []string{"a"}, loaded: []string{"a", "c", "d"},
				message: []string{"batch 2 is planned again with other files: kept as batch 3"}},
		},
		{
			// A later process read the run by the rule and went on: its records are read as
			// always, and verify's settling of the unknown batch holds.
			name: "a later process goes on after the wedge",
			recs: func() []Record {
				return forkRun(twoBatches().intent(1),
					func(a *runBuilder) { a.result(1, nil, "connection reset") },
					func(b *runBuilder) { b.process("zbrecover reload t --break-lock --yes").proved(1, BatchUnknown, "", 0) },
					func(c *runBuilder) {
						c.process("zbrecover verify t").proved(1, BatchVerified, EvidenceTag, 12).
							process("zbrecover reload t").intent(2).result(2, Int64(10), "").proved(2, BatchVerified, EvidenceAnswer, 0).end(RunVerified)
					})
			},
			want: want{status: RunVerified, batches: []BatchStatus{BatchVerified, BatchVerified}, seqs: []int{4}, from: 4, to: 5,
				unknown: []int{1}, verified: []string{"a", "b", "c"}, loaded: []string{"a", "b", "c"}, claimed: Int64(12)},
		},
		{
			// A record after the later run record that does not follow from the rule's
			// state: the run is read by the rule to its end, not refused.
			name: "a later record that does not follow: the rule reads to the end",
			recs: func() []Record {
				return forkRun(twoBatches().intent(1),
					func(a *runBuilder) { a.result(1, nil, "connection reset") },
					func(b *runBuilder) { b.process("zbrecover reload t --break-lock --yes").proved(1, BatchUnknown, "", 0) },
					func(c *runBuilder) { c.process("zbrecover reload t").result(2, Int64(10), "") })
			},
			want: want{status: RunUnknown, batches: []BatchStatus{BatchUnknown, BatchUnknown}, seqs: []int{4}, from: 4, to: 7,
				unknown: []int{1, 2}, loaded: []string{"a", "b", "c"},
				message: []string{"batches 1, 2 are unknown"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs := c.recs()
			// The order the store lists them in does not matter.
			slices.Reverse(recs)
			st, err := Replay(recs)
			if err != nil {
				t.Fatalf("Replay: %v", err)
			}
			w := c.want
			wg := st.Wedge
			if wg == nil {
				t.Fatalf("no wedge reported: %+v", st)
			}
			if st.Status != w.status {
				t.Errorf("status = %s, want %s", st.Status, w.status)
			}
			var got []BatchStatus
			for _, b := range st.Batches {
				got = append(got, b.Status)
			}
			if !slices.Equal(got, w.batches) {
				t.Errorf("batches = %v, want %v", got, w.batches)
			}
			if !slices.Equal(wg.Seqs, w.seqs) || wg.From != w.from || wg.To != w.to {
				t.Errorf("wedge seqs %v, records %d to %d; want %v, %d to %d", wg.Seqs, wg.From, wg.To, w.seqs, w.from, w.to)
			}
			if !slices.Equal(wg.Unknown, w.unknown) || !slices.Equal(wg.Mismatch, w.mismatch) || wg.Deleted != w.deleted {
				t.Errorf("wedge unknown %v, mismatch %v, deleted %d; want %v, %v, %d", wg.Unknown, wg.Mismatch, wg.Deleted, w.unknown, w.mismatch, w.deleted)
			}
			if g := keys(st.VerifiedFiles()); !slices.Equal(g, w.verified) {
				t.Errorf("verified files = %v, want %v", g, w.verified)
			}
			var loaded []string
			for k := range st.LoadedKeys() {
				loaded = append(loaded, k)
			}
			slices.Sort(loaded)
			if !slices.Equal(loaded, w.loaded) {
				t.Errorf("loaded keys = %v, want %v", loaded, w.loaded)
			}
			if g := batchNums(st.Remaining()); !slices.Equal(g, w.remaining) {
				t.Errorf("remaining batches = %v, want %v", g, w.remaining)
			}
			if b := st.Batch(1); w.claimed != nil && (b.Outcome == nil || b.Outcome.Version == nil || *b.Outcome.Version != *w.claimed) {
				t.Errorf("batch 1's outcome %+v, want version %d claimed", b.Outcome, *w.claimed)
			}
			msg := wg.Message(st.Run)
			if !slices.Contains(st.Warnings, msg) {
				t.Errorf("warnings %q lack the wedge's message", st.Warnings)
			}
			for _, want := range w.message {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q lacks %q", msg, want)
				}
			}
			// Summaries, claims and the files a reload must skip come from the same state.
			in := infoOf(st, fingerprint{})
			if in.sum.Status != w.status || in.loaded != len(w.loaded) {
				t.Errorf("summary %s with %d loaded files", in.sum.Status, in.loaded)
			}
		})
	}
}

func TestReplayWedgedRefusals(t *testing.T) {
	twoBatches := func() *runBuilder { return newRun("r1").plan(batch(1, "a", "b"), batch(2, "c")) }
	for _, c := range []struct {
		name    string
		recs    func() []Record
		wantErr string
	}{
		{
			name: "a record missing within the forked records",
			recs: func() []Record {
				rs := forkRun(twoBatches(), func(a *runBuilder) { a.load(1) }, func(b *runBuilder) { b.process("x").intent(1).result(1, nil, "") }, nil)
				return slices.DeleteFunc(rs, func(r Record) bool { return r.Seq == 4 })
			},
			wantErr: "run r1: seq 5 follows seq 3 (records 4 to 4 are missing)",
		},
		{
			name: "record 1 twice",
			recs: func() []Record {
				other := newRun("r1").records()
				other[0].Header = &Header{Command: "another run under this id"}
				return append(twoBatches().records(), other...)
			},
			wantErr: "record 1 is held 2 times",
		},
		{
			name: "a forked record of another table",
			recs: func() []Record {
				rs := forkRun(twoBatches(), func(a *runBuilder) { a.load(1) }, func(b *runBuilder) { b.process("x") }, nil)
				rs[len(rs)-1].TableID = "tbl-2"
				return rs
			},
			wantErr: "table id tbl-2, the run's is tbl-1",
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Replay(c.recs()); err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("Replay: %v, want %q", err, c.wantErr)
			}
		})
	}
}

// A record stored twice with the same bytes says nothing more: it is read once, and said.
func TestReplayRecordStoredTwice(t *testing.T) {
	rs := newRun("r1").plan(batch(1, "a", "b"), batch(2, "c")).load(1).records()
	st, err := Replay(append(rs, rs[3]))
	if err != nil {
		t.Fatal(err)
	}
	if st.Wedge != nil || st.Batch(1).Status != BatchVerified || len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "record 4 (result) is stored twice") {
		t.Errorf("wedge %v, batch 1 %s, warnings %q", st.Wedge, st.Batch(1).Status, st.Warnings)
	}
}
