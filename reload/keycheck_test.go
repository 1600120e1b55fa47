package reload

import (
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/journal"
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
// another batch leaves it alone; one that proves it proves it by key even after a removal
// before the check; rows with a NULL key column never prove it; a check of an earlier
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
		}, false, "", []string{"the key check by order_id at version 12 failed it: " + missing, "until zbrecover verify --key order_id passes"}},
		{"a key check failing another batch only", func(*journal.State, *commits) *journal.Verification {
			return keyResult(12, "verify", kb(1, journal.KeyProved, ""), kb(2, journal.KeyFailed, missing))
		}, true, EvidenceKey, []string{"every key of its files was in the table at version 12"}},
		{"latest verify --key failed, cleanup's later check passes", func(st *journal.State, _ *commits) *journal.Verification {
			st.KeyVerify = keyResult(12, "verify", kb(1, journal.KeyFailed, missing))
			return keyResult(12, "cleanup", kb(1, journal.KeyProved, ""), kb(2, journal.KeyProved, ""))
		}, false, "", []string{"failed it: " + missing}},
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
	kc := &KeyCheck{Batches: []journal.KeyBatch{{Batch: 1, Verdict: journal.KeyProved}, {Batch: 2, Verdict: journal.KeyUnproved, Note: "n"}}}
	finish(kc)
	if !kc.OK || len(kc.Problems) != 1 || kc.Result().Batches[0] != 1 || len(kc.Result().Batches) != 1 {
		t.Errorf("unproved only: %+v", kc)
	}
	kc.Batches = append(kc.Batches, journal.KeyBatch{Batch: 3, Verdict: journal.KeyFailed, Note: "x"})
	kc.Problems = nil
	finish(kc)
	if r := kc.Result(); kc.OK || len(r.Failed) != 1 || r.Failed[0] != 3 || !strings.Contains(r.Note, "batch 3: x") {
		t.Errorf("a failed batch: %+v", r)
	}
}
