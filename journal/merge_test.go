package journal

import "testing"

func (b *runBuilder) merge(m Merge) *runBuilder {
	if m.Staging == "" {
		m.Staging = "main.s.t__zbrecover_r1"
	}
	return b.add(Record{Kind: KindMerge, Merge: &m})
}

// TestReplayLoadByKey: a batch of a load by key is verified into the staging table but is
// not a file cleanup may delete until a MERGE with a row count follows it; the run stays
// unfinished until then and until the staging table is dropped; a batch loaded after the
// MERGE needs another one.
func TestReplayLoadByKey(t *testing.T) {
	b := newRun("r1").merge(Merge{Step: MergePlanned, Key: []string{"id"}}).plan(batch(1, "a.parquet"), batch(2, "b.parquet")).load(1).load(2)
	st, err := Replay(b.records())
	if err != nil {
		t.Fatal(err)
	}
	if !st.MergePending() || !st.Unfinished() || len(st.VerifiedFiles()) != 0 || st.Status != RunLoading {
		t.Fatalf("before the MERGE: pending %v, unfinished %v, verified files %d, status %s", st.MergePending(), st.Unfinished(), len(st.VerifiedFiles()), st.Status)
	}
	// The MERGE got no answer: still pending.
	b.merge(Merge{Step: MergeIntent, SQL: "MERGE INTO t"}).merge(Merge{Step: MergeResult, Err: "connection reset"}).end(RunFailed)
	if st, err = Replay(b.records()); err != nil || !st.MergePending() || st.Status != RunFailed || len(st.VerifiedFiles()) != 0 {
		t.Fatalf("lost MERGE answer: %v, status %v", err, st.Status)
	}
	// Sent again, it returns its count: both batches are in the table.
	b.process("zbrecover reload t").merge(Merge{Step: MergeIntent, SQL: "MERGE INTO t"}).merge(Merge{Step: MergeResult, Inserted: Int64(15)})
	if st, err = Replay(b.records()); err != nil || st.MergePending() || len(st.VerifiedFiles()) != 2 || !st.Unfinished() || st.Merge.Attempts != 2 {
		t.Fatalf("after the MERGE: %v, pending %v, verified files %d, unfinished %v", err, st.MergePending(), len(st.VerifiedFiles()), st.Unfinished())
	}
	b.merge(Merge{Step: MergeDropped}).end(RunVerified)
	if st, err = Replay(b.records()); err != nil || st.Unfinished() || st.Status != RunVerified {
		t.Fatalf("after the drop: %v, unfinished %v, status %s", err, st.Unfinished(), st.Status)
	}
	// A re-run that found a new file loads it into a new staging table: it needs a MERGE of
	// its own; the first two files stay deletable.
	b.process("zbrecover reload t").merge(Merge{Step: MergePlanned, Key: []string{"id"}}).plan(batch(3, "c.parquet")).load(3)
	if st, err = Replay(b.records()); err != nil || !st.MergePending() || len(st.VerifiedFiles()) != 2 || !st.Unfinished() {
		t.Fatalf("new batch after the MERGE: %v, pending %v, verified %d", err, st.MergePending(), len(st.VerifiedFiles()))
	}
	// A delete intent for the unmerged file is refused.
	bad := append(b.records()[:len(b.records()):len(b.records())], b.deleteIntent("c.parquet").records()[len(b.records())-1])
	if _, err := Replay(bad); err == nil {
		t.Error("a delete intent for a file not merged yet was accepted")
	}
}

func TestReplayMergeRecordsChecked(t *testing.T) {
	for name, recs := range map[string][]Record{
		"intent before planned":    newRun("r1").merge(Merge{Step: MergeIntent}).records(),
		"result without intent":    newRun("r1").merge(Merge{Step: MergePlanned, Key: []string{"id"}}).merge(Merge{Step: MergeResult, Inserted: Int64(1)}).records(),
		"another staging table":    newRun("r1").merge(Merge{Step: MergePlanned, Key: []string{"id"}}).merge(Merge{Step: MergeDropped, Staging: "main.s.other"}).records(),
		"planned with another key": newRun("r1").merge(Merge{Step: MergePlanned, Key: []string{"id"}}).merge(Merge{Step: MergePlanned, Key: []string{"k"}}).records(),
	} {
		if _, err := Replay(recs); err == nil {
			t.Errorf("%s: replay accepted it", name)
		}
	}
	r := Record{V: Version, Run: "r1", Seq: 2, TableID: "tbl-1", Kind: KindMerge, Merge: &Merge{Step: "merged", Staging: "x"}}
	if err := r.Validate(); err == nil {
		t.Error("an unknown merge step passed validation")
	}
}
