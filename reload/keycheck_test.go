package reload

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/keyfile"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// keyScene is one run of two batches, each verified by its own answer and commit (versions 11
// and 12, 4 rows each, after base 10), judged against a history and key checks.
func keyScene() (*journal.State, *commits) {
	st := &journal.State{Run: "r1"}
	for i, v := range []int64{11, 12} {
		ver, base := v, int64(10)
		st.Batches = append(st.Batches, &journal.BatchState{Batch: i + 1, ExpectedRows: 4, Status: journal.BatchVerified, FirstBase: &base,
			Files:   []journal.File{{Key: "f" + string(rune('a'+i)) + ".parquet", Rows: 4}},
			Result:  &journal.Result{Batch: i + 1, Inserted: journal.Int64(4)},
			Outcome: &journal.Outcome{Batch: i + 1, Status: journal.BatchVerified, Version: &ver, Evidence: journal.EvidenceAnswer}})
	}
	cs := &commits{Whole: true, Latest: 12}
	for _, v := range []int64{11, 12} {
		cs.List = append(cs.List, Commit{Version: v, Operation: "COPY INTO", User: "me", Metrics: map[string]string{"numOutputRows": "4"}})
	}
	return st, cs
}

// keyResult is a key check (of this version) at table version v with per-batch verdicts.
func keyResult(v int64, by string, per ...journal.KeyBatch) *journal.Verification {
	kc := &KeyCheck{Key: Keys{"order_id"}, Batches: per}
	finish(kc)
	return &journal.Verification{By: by, Keys: kc.Result(), TableVersion: &v}
}

func kb(batch int, verdict, note string) journal.KeyBatch {
	return journal.KeyBatch{Batch: batch, Rows: 4, Expected: 4, Keys: 4, Verdict: verdict, Note: note}
}

// TestJudgeKeyEvidence: what a key check does to a batch's verdict. A check that failed the
// batch keeps it whatever its answer and commit say, including when it is only the latest
// verify --key (a later passing check by cleanup does not lift it); a check that failed
// another batch leaves its own evidence alone and proves nothing; one that proves it proves
// it by key even after a removal before the check; rows with a NULL key column never prove it; a check of an earlier
// version (NULL keys compared as equal) proves nothing; a batch settled by key needs a check
// that still proves it.
func TestJudgeKeyEvidence(t *testing.T) {
	missing := "4 of its 4 keys are missing from the table"
	for _, c := range []struct {
		name     string
		scene    func(st *journal.State, cs *commits) (keys *journal.Verification)
		ok       bool
		evidence journal.Evidence
		note     []string
	}{
		{"answer alone", func(*journal.State, *commits) *journal.Verification { return nil }, true, journal.EvidenceAnswer, nil},
		{"failing key check vetoes the answer", func(*journal.State, *commits) *journal.Verification {
			return keyResult(12, "cleanup", kb(1, journal.KeyFailed, missing), kb(2, journal.KeyProved, ""))
		}, false, "", []string{"the key check by order_id at version 12 failed it (" + missing + ")", "until zbrecover verify --key order_id passes"}},
		{"a key check failing another batch only: its answer stands, no key proof", func(*journal.State, *commits) *journal.Verification {
			return keyResult(12, "verify", kb(1, journal.KeyProved, ""), kb(2, journal.KeyFailed, missing))
		}, true, journal.EvidenceAnswer, []string{"not proved by key: every key of its files is in the table, but the same check failed batch 2"}},
		{"a key check failing another batch only, after a removal", func(st *journal.State, cs *commits) *journal.Verification {
			cs.List = append(cs.List, Commit{Version: 13, Operation: "DELETE", User: "owner", Metrics: map[string]string{"numDeletedRows": "1"}})
			cs.Latest = 13
			return keyResult(13, "verify", kb(1, journal.KeyProved, ""), kb(2, journal.KeyFailed, "1 of its 4 keys are missing from the table"))
		}, false, "", []string{"version 13 (DELETE by owner) may have removed its rows", "the same check failed batch 2, so it proves nothing"}},
		{"latest verify --key failed, cleanup's later check passes", func(st *journal.State, _ *commits) *journal.Verification {
			st.KeyVerify = keyResult(12, "verify", kb(1, journal.KeyFailed, missing))
			return keyResult(12, "cleanup", kb(1, journal.KeyProved, ""), kb(2, journal.KeyProved, ""))
		}, false, "", []string{"failed it (" + missing + ")"}},
		{"keys file changed", func(*journal.State, *commits) *journal.Verification {
			return keyResult(12, "cleanup", kb(1, journal.KeyFailed, "its keys file /Volumes/x/k.parquet is not the one reload recorded (gone): it proves nothing"))
		}, false, "", []string{"not the one reload recorded"}},
		{"removal after the load, keys proved after it", func(st *journal.State, cs *commits) *journal.Verification {
			cs.List = append(cs.List, Commit{Version: 13, Operation: "DELETE", User: "owner", Metrics: map[string]string{"numDeletedRows": "2"}})
			cs.Latest = 14
			return keyResult(14, "verify", kb(1, journal.KeyProved, ""))
		}, true, EvidenceKey, []string{"version 13 (DELETE by owner) may have removed its rows", "every key of its files was in the table at version 14"}},
		{"removal after the load, NULL keys prove nothing", func(st *journal.State, cs *commits) *journal.Verification {
			cs.List = append(cs.List, Commit{Version: 13, Operation: "DELETE", User: "owner", Metrics: map[string]string{"numDeletedRows": "2"}})
			cs.Latest = 14
			return keyResult(14, "verify", kb(1, journal.KeyUnproved, "2 of its 4 rows have a NULL key column, which proves nothing"))
		}, false, "", []string{"may have removed its rows", "not proved by key: 2 of its 4 rows have a NULL key column"}},
		{"NULL keys leave the answer alone", func(*journal.State, *commits) *journal.Verification {
			return keyResult(12, "verify", kb(1, journal.KeyUnproved, "all 4 of its rows have a NULL key column: it cannot be proved by key"))
		}, true, journal.EvidenceAnswer, []string{"not proved by key: all 4 of its rows"}},
		{"removal after the key check", func(st *journal.State, cs *commits) *journal.Verification {
			cs.List = append(cs.List, Commit{Version: 13, Operation: "TRUNCATE", User: "owner"})
			cs.Latest = 13
			return keyResult(12, "verify", kb(1, journal.KeyProved, ""))
		}, false, "", []string{"version 13 (TRUNCATE by owner) may have removed its rows"}},
		{"a key check of an earlier version", func(st *journal.State, cs *commits) *journal.Verification {
			st.Batches[0].Outcome.Evidence = journal.EvidenceHistory
			v := int64(12)
			return &journal.Verification{Keys: &journal.KeyResult{Key: []string{"order_id"}, OK: true, Batches: []int{1, 2}}, TableVersion: &v}
		}, true, "", []string{"needs review"}},
		{"settled by key, proved again", func(st *journal.State, cs *commits) *journal.Verification {
			st.Batches[0].Outcome = &journal.Outcome{Batch: 1, Status: journal.BatchVerified, Evidence: EvidenceKey}
			return keyResult(12, "verify", kb(1, journal.KeyProved, ""))
		}, true, EvidenceKey, []string{"its commit version is not recorded", "every key of its files was in the table"}},
		{"settled by key, not proved now", func(st *journal.State, cs *commits) *journal.Verification {
			st.Batches[0].Outcome = &journal.Outcome{Batch: 1, Status: journal.BatchVerified, Evidence: EvidenceKey}
			return keyResult(12, "cleanup", kb(1, journal.KeyUnproved, "1 of its 4 rows have a NULL key column, which proves nothing"))
		}, true, "", []string{"settled by key, and the latest key check does not prove it", "needs review"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st, cs := keyScene()
			keys := c.scene(st, cs)
			got := judge(st, st.Batches[0], cs, keys)
			if got.OK != c.ok || got.Evidence != c.evidence {
				t.Errorf("ok %v, evidence %q, want %v, %q; note: %s", got.OK, got.Evidence, c.ok, c.evidence, got.Note)
			}
			for _, w := range c.note {
				if !strings.Contains(got.Note, w) {
					t.Errorf("note %q does not say %q", got.Note, w)
				}
			}
		})
	}
}

// TestKeyVerdicts: a batch with a key missing fails, one with a NULL key column among keys all
// present is unproved (saying how many, and which file, all of whose rows may be NULL-keyed),
// one with neither is proved; the check is OK unless a batch failed.
func TestKeyVerdicts(t *testing.T) {
	for _, c := range []struct {
		name      string
		kb        journal.KeyBatch
		nullFiles []string
		verdict   string
		note      string
	}{
		{"all there", journal.KeyBatch{Rows: 5, Keys: 5}, nil, journal.KeyProved, ""},
		{"missing", journal.KeyBatch{Rows: 5, Keys: 5, Missing: 2}, nil, journal.KeyFailed, "2 of its 5 keys are missing from the table"},
		{"missing and NULL", journal.KeyBatch{Rows: 5, Keys: 3, Missing: 1, NullRows: 2}, nil, journal.KeyFailed, "1 of its 3 keys are missing"},
		{"some NULL", journal.KeyBatch{Rows: 5, Keys: 3, NullRows: 2}, []string{nullFile("a.parquet", 2, 2)}, journal.KeyUnproved,
			"2 of its 5 rows have a NULL key column, which proves nothing (a.parquet: all 2 rows, so that file cannot be proved by key)"},
		{"all NULL", journal.KeyBatch{Rows: 3, NullRows: 3}, nil, journal.KeyUnproved, "all 3 of its rows have a NULL key column: it cannot be proved by key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			kb := c.kb
			verdict(&kb, c.nullFiles)
			if kb.Verdict != c.verdict || !strings.Contains(kb.Note, c.note) {
				t.Errorf("verdict %s (%s), want %s (%s)", kb.Verdict, kb.Note, c.verdict, c.note)
			}
		})
	}
	kc := &KeyCheck{Batches: []journal.KeyBatch{{Batch: 1, Verdict: journal.KeyProved}, {Batch: 2, Verdict: journal.KeyUnproved, Note: "n"},
		{Batch: 4, Verdict: journal.KeyUnproved, Note: "n"}}}
	finish(kc)
	if r := kc.Result(); !kc.OK || len(kc.Problems) != 1 || kc.Problems[0] != "batches 2, 4 not proved by key: n" || len(r.Batches) != 1 || r.Batches[0] != 1 {
		t.Errorf("unproved only: %+v", kc)
	}
	// A failed batch: the check proves nothing.
	kc.Batches = append(kc.Batches, journal.KeyBatch{Batch: 3, Verdict: journal.KeyFailed, Note: "x"})
	kc.Problems = nil
	finish(kc)
	if r := kc.Result(); kc.OK || len(r.Failed) != 1 || r.Failed[0] != 3 || !strings.Contains(r.Note, "batch 3: x") || len(r.Batches) != 0 ||
		kc.Batches[0].Verdict != journal.KeyUnproved || !strings.Contains(kc.Batches[0].Note, "failed batch 3") {
		t.Errorf("a failed batch: %+v %+v", r, kc.Batches)
	}
}

// TestSettleByKey: verify --key records an unknown or open batch as verified by key when its
// key check proves it (every row read, none NULL-keyed, every key in the table, no batch of the
// check failed), and nothing else: not a batch its check leaves unproved or failed, not one
// already settled otherwise, not a batch of a load by key (its MERGE settles it).
func TestSettleByKey(t *testing.T) {
	ctx := context.Background()
	store, err := journal.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w, err := journal.Start(ctx, store, journal.Target{TableID: "tbl", Table: "main.s.t", Root: "file:///t"}, "", journal.Header{Command: "reload"})
	if err != nil {
		t.Fatal(err)
	}
	// Batches 1–4: 1 verified by its answer, 2 unknown, 3 open (no answer), 4 unknown.
	var recs []journal.Record
	var plan []journal.PlanBatch
	for n := 1; n <= 4; n++ {
		f := []journal.File{{Key: fmt.Sprintf("_zerobus/table_rejected_parquets/f%d.parquet", n), Size: 10, Rows: 2}}
		plan = append(plan, journal.PlanBatch{Batch: n, Folder: "_zerobus/table_rejected_parquets/", Files: f, ExpectedRows: 2, SQL: "COPY INTO"})
	}
	recs = append(recs, journal.Record{Kind: journal.KindPlan, Plan: &journal.Plan{Batches: plan}})
	for _, pb := range plan {
		recs = append(recs, journal.Record{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: pb.Batch, Files: pb.Files, ExpectedRows: 2, SQL: pb.SQL}})
		switch pb.Batch {
		case 1:
			recs = append(recs, journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: 1, Inserted: journal.Int64(2)}},
				journal.Record{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: 1, Status: journal.BatchVerified, Evidence: journal.EvidenceAnswer}})
		case 2, 4:
			recs = append(recs, journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: pb.Batch, Inserted: journal.Int64(0)}},
				journal.Record{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: pb.Batch, Status: journal.BatchUnknown, Reason: "0 rows for files no journal shows loading"}})
		}
	}
	for _, r := range recs {
		if err := w.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	read := func() *journal.State {
		t.Helper()
		st, err := journal.ReadState(ctx, store, "tbl", w.Run())
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := read()
	if st.Batch(3).Status != journal.BatchOpen {
		t.Fatalf("batch 3 is %s", st.Batch(3).Status)
	}
	check := func(per ...journal.KeyBatch) *KeyCheck {
		kc := &KeyCheck{Key: Keys{"id"}, Batches: per}
		finish(kc)
		return kc
	}
	row := func(n int, verdict string) journal.KeyBatch {
		return journal.KeyBatch{Batch: n, Rows: 2, Expected: 2, Keys: 2, Verdict: verdict}
	}

	// A check that fails batch 4 proves nothing: nothing is settled.
	if n, err := settleByKey(ctx, w, st, check(row(1, journal.KeyProved), row(2, journal.KeyProved), row(3, journal.KeyProved), row(4, journal.KeyFailed)), 9); err != nil || n != 0 {
		t.Fatalf("a failing check settled %d batches (%v)", n, err)
	}
	// Batch 4 NULL-keyed (unproved), the others proved: 2 and 3 are settled, 1 and 4 are not.
	n, err := settleByKey(ctx, w, st, check(row(1, journal.KeyProved), row(2, journal.KeyProved), row(3, journal.KeyProved), row(4, journal.KeyUnproved)), 9)
	if err != nil || n != 2 {
		t.Fatalf("settled %d batches (%v), want 2", n, err)
	}
	st = read()
	for _, c := range []struct {
		batch    int
		status   journal.BatchStatus
		evidence journal.Evidence
	}{{1, journal.BatchVerified, journal.EvidenceAnswer}, {2, journal.BatchVerified, EvidenceKey}, {3, journal.BatchVerified, EvidenceKey}, {4, journal.BatchUnknown, ""}} {
		b := st.Batch(c.batch)
		if b.Status != c.status || b.Evidence() != c.evidence {
			t.Errorf("batch %d: %s by %q, want %s by %q", c.batch, b.Status, b.Evidence(), c.status, c.evidence)
		}
	}
	if r := st.Batch(2).Outcome.Reason; !strings.Contains(r, "settled by verify --key id") || !strings.Contains(r, "at version 9") || !strings.Contains(r, "it was unknown") {
		t.Errorf("batch 2's reason: %s", r)
	}
	// A load by key's batches are settled by its MERGE only.
	st.Merge = &journal.MergeState{}
	st.Batch(4).Status = journal.BatchUnknown
	if n, err := settleByKey(ctx, w, st, check(row(4, journal.KeyProved)), 9); err != nil || n != 0 {
		t.Errorf("a load by key: settled %d (%v)", n, err)
	}
}

// TestKeysFileNotAsRecorded: a keys file whose bytes are not the ones the journal recorded
// (other bytes, or gone) proves nothing and fails every batch it covers, saying which file
// and why, with no statement sent; one whose location cannot be opened is an error (nothing is
// known of it), not a verdict.
func TestKeysFileNotAsRecorded(t *testing.T) {
	ctx := context.Background()
	var buf bytes.Buffer
	kw, err := keyfile.NewWriter(&buf, []keyfile.Column{{Name: "id", Type: sd.LongType}}, keyfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	ib.AppendValues([]int64{1, 2}, nil)
	a := ib.NewArray()
	if err := kw.Add("1", "_zerobus/table_rejected_parquets/f1.parquet", 0, []arrow.Array{a}); err != nil {
		t.Fatal(err)
	}
	a.Release()
	if err := kw.Close(); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	sum := sha256.Sum256(good)
	vol := mem.New()
	kf := journal.KeysFile{Location: "/Volumes/main/s/v", Key: "_zbrecover/keys/k.parquet", Columns: []string{"id"}, Size: int64(len(good)),
		SHA256: hex.EncodeToString(sum[:]), Rows: 2, Batches: []int{1, 2}}
	st := &journal.State{}
	for n := 1; n <= 2; n++ {
		st.Batches = append(st.Batches, &journal.BatchState{Batch: n, Status: journal.BatchVerified,
			Files: []journal.File{{Key: fmt.Sprintf("_zerobus/table_rejected_parquets/f%d.parquet", n), Rows: 2}}})
	}
	open := func(context.Context, string) (storage.Backend, error) { return vol, nil }
	other := bytes.Clone(good)
	other[len(other)/3] ^= 1
	for _, c := range []struct {
		name string
		data []byte // nil: gone
		why  string
	}{
		{"other bytes", other, "its " + fmt.Sprint(len(good)) + " bytes have SHA-256 "},
		{"gone", nil, "it is gone"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_ = vol.Delete(ctx, kf.Key, storage.Precondition{})
			if c.data != nil {
				vol.Set(kf.Key, c.data, time.Now())
			}
			// No intact keys file: no statement is sent (the warehouse is nil).
			kc, err := checkKeysFiles(ctx, nil, orders, st, Keys{"id"}, []journal.KeysFile{kf}, open)
			if err != nil {
				t.Fatal(err)
			}
			r := kc.Result()
			if kc.OK || len(r.Failed) != 2 || len(r.Batches) != 0 || kc.Statements != 0 {
				t.Fatalf("check %+v", r)
			}
			for _, kb := range kc.Batches {
				if !strings.Contains(kb.Note, KeysFileURL(kf)+" is not the one reload recorded") || !strings.Contains(kb.Note, c.why) ||
					!strings.Contains(kb.Note, "it proves nothing") {
					t.Errorf("batch %d: %s", kb.Batch, kb.Note)
				}
			}
		})
	}
	boom := errors.New("volume unreachable")
	if _, err := checkKeysFiles(ctx, nil, orders, st, Keys{"id"}, []journal.KeysFile{kf},
		func(context.Context, string) (storage.Backend, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("unopenable location: %v", err)
	}
}
