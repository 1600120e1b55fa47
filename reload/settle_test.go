package reload

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/journal"
)

// TestSettle is the table of "which commit is this batch's": the one rule reload, verify and
// cleanup's re-check share.
func TestSettle(t *testing.T) {
	load := func(v int64, user, tag string, rows int64) Commit {
		return Commit{Version: v, Operation: "COPY INTO", User: user, UserMetadata: tag, Metrics: map[string]string{"numOutputRows": fmt.Sprint(rows)}}
	}
	zerobus := Commit{Version: 11, Operation: "WRITE", User: "zerobus-sp", BlindAppend: true, Metrics: map[string]string{"numOutputRows": "8"}}
	me := "me@example.com"
	base := batchFacts{Run: "r1", Batch: 2, Tags: []string{"zbrecover:r1:2:1"}, Rows: 8, Base: 10}
	untagged := base
	untagged.Tags = nil
	seven := int64(7)
	cases := []struct {
		name     string
		cs       []Commit
		b        batchFacts
		k        knownCommits
		version  int64 // 0: none
		evidence journal.Evidence
		mismatch bool
		err      string
		why      string
	}{
		{name: "its tag", cs: []Commit{zerobus, load(12, "other@x", "zbrecover:r1:2:1", 8)}, b: base, k: knownCommits{Identity: me}, version: 12, evidence: journal.EvidenceTag},
		{name: "its tag, another identity: still its", cs: []Commit{load(12, "0a1b-app-id", "zbrecover:r1:2:1", 8)}, b: base, k: knownCommits{}, version: 12, evidence: journal.EvidenceTag},
		{name: "its tag, other rows", cs: []Commit{load(12, me, "zbrecover:r1:2:1", 5)}, b: base, version: 12, evidence: journal.EvidenceTag, mismatch: true},
		{name: "its tag twice", cs: []Commit{load(12, me, "zbrecover:r1:2:1", 8), load(14, me, "zbrecover:r1:2:1", 8)}, b: base, err: "2 commits carry its tags"},
		{name: "its tag on a send that loaded nothing", cs: []Commit{load(12, me, "zbrecover:r1:2:1", 0)}, b: base, k: knownCommits{Identity: me}, why: "no commit after version 10 carries its tag"},
		{name: "its tag before the base", cs: []Commit{load(9, me, "zbrecover:r1:2:1", 8)}, b: base, why: "no commit after version 10"},
		{name: "a tag of an earlier attempt", cs: []Commit{load(12, me, "zbrecover:r1:2:1", 8)}, b: batchFacts{Run: "r1", Batch: 2, Tags: []string{"zbrecover:r1:2:1", "zbrecover:r1:2:2"}, Rows: 8, Base: 10}, version: 12, evidence: journal.EvidenceTag},
		{name: "only candidate", cs: []Commit{zerobus, load(12, " Me@Example.com ", "", 8)}, b: untagged, k: knownCommits{Identity: me}, version: 12, evidence: journal.EvidenceHistory},
		{name: "unknown identity", cs: []Commit{load(12, me, "", 8)}, b: untagged, k: knownCommits{Identity: "  "}, why: "identity is not known"},
		{name: "another identity", cs: []Commit{load(12, "someone@else", "", 8)}, b: untagged, k: knownCommits{Identity: me}, why: "no unclaimed COPY INTO commit"},
		{name: "claimed by another batch", cs: []Commit{load(12, me, "", 8)}, b: untagged, k: knownCommits{Identity: me, Claimed: map[int64]journal.BatchRef{12: {Run: "r1", Batch: 1}}}, why: "no unclaimed"},
		{name: "another statement's tag", cs: []Commit{load(12, me, "zbrecover:r9:1:1", 8)}, b: base, k: knownCommits{Identity: me}, why: "no unclaimed"},
		{name: "two candidates", cs: []Commit{load(12, me, "", 8), load(13, me, "", 8)}, b: untagged, k: knownCommits{Identity: me}, why: "2 unclaimed COPY INTO commits"},
		{name: "other row counts", cs: []Commit{load(12, me, "", 7)}, b: untagged, k: knownCommits{Identity: me}, why: "no unclaimed"},
		{name: "a batch of unknown version may own it", cs: []Commit{load(12, me, "", 8)}, b: untagged,
			k: knownCommits{Identity: me, Unpinned: []journal.BatchRef{{Run: "r0", Batch: 5, Rows: 8, Base: &seven}}}, why: "may be the commit of run r0 batch 5"},
		{name: "itself among the unknown versions", cs: []Commit{load(12, me, "", 8)}, b: untagged,
			k: knownCommits{Identity: me, Unpinned: []journal.BatchRef{{Run: "r1", Batch: 2, Rows: 8, Base: &seven}}}, version: 12, evidence: journal.EvidenceHistory},
		{name: "a MERGE is not a COPY INTO", cs: []Commit{{Version: 12, Operation: "MERGE", User: me, Metrics: map[string]string{"numOutputRows": "8"}}}, b: untagged, k: knownCommits{Identity: me}, why: "no unclaimed"},
		{name: "a MERGE of a load by key", cs: []Commit{{Version: 12, Operation: "MERGE", User: me, UserMetadata: "zbrecover:r1:merge:1", Metrics: map[string]string{"numOutputRows": "8"}}},
			b: batchFacts{Run: "r1", Tags: []string{"zbrecover:r1:merge:1"}, Rows: 8, Base: 10, Operation: "MERGE"}, version: 12, evidence: journal.EvidenceTag},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := settle(c.cs, true, c.b, c.k)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var v int64
			if s.Commit != nil {
				v = s.Commit.Version
			}
			if v != c.version || s.Evidence != c.evidence || s.Mismatch != c.mismatch {
				t.Errorf("version %d, evidence %q, mismatch %v (%s); want %d, %q, %v", v, s.Evidence, s.Mismatch, s.Why, c.version, c.evidence, c.mismatch)
			}
			if c.why != "" && !strings.Contains(s.Why, c.why) {
				t.Errorf("why %q, want %q", s.Why, c.why)
			}
		})
	}
}

// TestConfirm: a recorded commit is a batch's only when it is a load of its rows, carrying
// its tag when it was recorded as tagged.
func TestConfirm(t *testing.T) {
	b := batchFacts{Tags: []string{"zbrecover:r1:2:1"}, Rows: 8}
	c := Commit{Version: 12, Operation: "COPY INTO", UserMetadata: "zbrecover:r1:2:1", Metrics: map[string]string{"numOutputRows": "8"}}
	if ok, why := confirm(c, b, true); !ok {
		t.Errorf("its own tagged commit: %s", why)
	}
	other := c
	other.UserMetadata = ""
	if ok, _ := confirm(other, b, true); ok {
		t.Error("an untagged commit confirmed as the tagged one")
	}
	if ok, _ := confirm(other, b, false); !ok {
		t.Error("an untagged commit of its rows refused")
	}
	other.Metrics = map[string]string{"numOutputRows": "7"}
	if ok, why := confirm(other, b, false); ok || !strings.Contains(why, "7 output rows") {
		t.Errorf("another row count: %v %s", ok, why)
	}
	del := Commit{Version: 12, Operation: "DELETE", Metrics: map[string]string{"numOutputRows": "8"}}
	if ok, _ := confirm(del, b, false); ok {
		t.Error("a DELETE confirmed as a load")
	}
}
