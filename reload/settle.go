package reload

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/zbrecover/zbrecover/journal"
)

// Which commit holds a batch's rows is decided in one place, settle, for reload (a lost
// answer, a second send that inserted nothing, the commit of an answered statement), verify
// (the commit of an answered batch whose version was not recorded) and cleanup's re-check
// (confirm, for a recorded version). The rules:
//
//  1. A load commit (COPY INTO, or MERGE for a load by key) after the batch's first base that
//     carries one of the batch's own tags is its commit: the evidence of a tag. It must have
//     written rows (a send that found every file loaded commits nothing of the batch's);
//     two such commits mean the journal and the table disagree (an error, nothing more is
//     sent); one that wrote another number of rows than the batch expects is a mismatch.
//  2. Without one, a load commit after the base by the statements' identity (compared with
//     letter case and surrounding spaces ignored; never when the identity is unknown),
//     carrying no other statement's tag, claimed by no batch of any run of the table, that
//     wrote exactly the batch's rows, is its commit only when it is the only such commit and
//     no batch of unknown commit version with the same row count may have made it: the
//     weaker evidence of history (another writer with the same identity could have made it).
//  3. Anything else settles nothing.

// batchFacts is what settling knows of one batch.
type batchFacts struct {
	Run   string
	Batch int
	// Tags are the tags of its attempts ("" for untagged attempts).
	Tags []string
	// Rows is what its commit must have written: the files' footer rows, or the rows its
	// statement answered with.
	Rows int64
	// Base is the version its first statement started from: its commit comes after.
	Base int64
	// Operation is the load's operation in the history ("COPY INTO" when empty).
	Operation string
	// Metric is the operation metric that counts its rows ("numOutputRows" when empty; an
	// undo's DELETE counts numDeletedRows).
	Metric string
}

// rows is the count of c's rows the batch's commit must show.
func (b batchFacts) rows(c Commit) (int64, bool) {
	if b.Metric == "" {
		return c.OutputRows()
	}
	return c.metric(b.Metric)
}

// knownCommits is what the journal says of the table's other batches.
type knownCommits struct {
	// Identity is current_user() of the warehouse the statements ran as.
	Identity string
	// Claimed are the versions that settled batches (any run of the table).
	Claimed map[int64]journal.BatchRef
	// Unpinned are the batches whose statement answered but whose commit version is not
	// recorded: each may own an untagged commit with its row count.
	Unpinned []journal.BatchRef
}

// settlement is what settle found.
type settlement struct {
	// Commit is the batch's commit, nil when none is proved.
	Commit *Commit
	// Evidence is EvidenceTag (rule 1) or EvidenceHistory (rule 2).
	Evidence journal.Evidence
	// Mismatch is set when the tagged commit wrote another number of rows than Rows.
	Mismatch bool
	// Why says what settled it, or why nothing did.
	Why string
}

func (b batchFacts) operation() string {
	if b.Operation == "" {
		return "COPY INTO"
	}
	return b.Operation
}

func (b batchFacts) tagged(c Commit) bool {
	return c.UserMetadata != "" && slices.Contains(b.Tags, c.UserMetadata)
}

func sameIdentity(a, b string) bool {
	return strings.TrimSpace(a) != "" && strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b))
}

// settle decides which commit of cs (the table's commits after b.Base, as read; whole says
// the read reached back to the base) holds b's rows, by the rules above. It reads nothing.
func settle(cs []Commit, whole bool, b batchFacts, k knownCommits) (settlement, error) {
	var tagged []Commit
	for _, c := range cs {
		if c.Version <= b.Base || !strings.EqualFold(c.Operation, b.operation()) || !b.tagged(c) {
			continue
		}
		if rows, _ := b.rows(c); rows > 0 || b.Rows == 0 {
			tagged = append(tagged, c)
		}
	}
	switch len(tagged) {
	case 1:
		c := tagged[0]
		rows, _ := b.rows(c)
		return settlement{Commit: &c, Evidence: journal.EvidenceTag, Mismatch: rows != b.Rows,
			Why: fmt.Sprintf("version %d carries its tag %s", c.Version, c.UserMetadata)}, nil
	case 0:
	default:
		return settlement{}, fmt.Errorf("batch %d: %d commits carry its tags (versions %d and %d): the journal and the table disagree; nothing more is sent",
			b.Batch, len(tagged), tagged[0].Version, tagged[1].Version)
	}
	noTag := fmt.Sprintf("no commit after version %d carries its tag", b.Base)
	if !whole {
		noTag += ", but the history no longer reaches that version"
	}
	if !slices.ContainsFunc(b.Tags, func(t string) bool { return t != "" }) {
		noTag = ""
	}
	if strings.TrimSpace(k.Identity) == "" {
		return settlement{Why: join(noTag, "the warehouse identity is not known, so no untagged commit can be told to be this batch's")}, nil
	}
	var found []Commit
	for _, c := range cs {
		if c.Version <= b.Base || !strings.EqualFold(c.Operation, b.operation()) || !sameIdentity(c.User, k.Identity) {
			continue
		}
		if _, ok := k.Claimed[c.Version]; ok {
			continue
		}
		if c.UserMetadata != "" && !b.tagged(c) {
			continue // another statement's tagged commit
		}
		if n, ok := b.rows(c); ok && n == b.Rows {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return settlement{Why: join(noTag, fmt.Sprintf("no unclaimed %s commit by %s with %d output rows after version %d", b.operation(), k.Identity, b.Rows, b.Base))}, nil
	case 1:
	default:
		return settlement{Why: join(noTag, fmt.Sprintf("%d unclaimed %s commits with %d output rows follow version %d; cannot tell which was this batch's",
			len(found), b.operation(), b.Rows, b.Base))}, nil
	}
	c := found[0]
	for _, u := range k.Unpinned {
		if u.Run == b.Run && u.Batch == b.Batch {
			continue
		}
		if u.Rows == b.Rows && (u.Base == nil || *u.Base < c.Version) {
			return settlement{Why: join(noTag, fmt.Sprintf("version %d may be the commit of run %s batch %d, whose commit version is not recorded", c.Version, u.Run, u.Batch))}, nil
		}
	}
	return settlement{Commit: &c, Evidence: journal.EvidenceHistory,
		Why: fmt.Sprintf("version %d (%s by %s, %d output rows) is the only unclaimed candidate after version %d", c.Version, b.operation(), k.Identity, b.Rows, b.Base)}, nil
}

// confirm checks a recorded commit against the rules: the commit recorded as b's (by tag
// when tagged) must be a load of b's rows, carrying b's tag when tagged is set.
func confirm(c Commit, b batchFacts, tagged bool) (bool, string) {
	rows, _ := b.rows(c)
	if !strings.EqualFold(c.Operation, b.operation()) || rows != b.Rows {
		return false, fmt.Sprintf("version %d, recorded as the batch's commit, is %s with %d output rows, not a %s of the files' %d rows",
			c.Version, c.Operation, rows, b.operation(), b.Rows)
	}
	if tagged && !b.tagged(c) {
		return false, fmt.Sprintf("version %d, recorded as the batch's tagged commit, does not carry its tag", c.Version)
	}
	return true, ""
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// facts is what the runner knows of batch w for settling, with rows its commit must have
// written.
func (r *runner) facts(w work, rows int64) (batchFacts, knownCommits) {
	b := batchFacts{Run: r.w.Run(), Batch: w.n, Tags: w.tags, Rows: rows}
	if w.firstBase != nil {
		b.Base = *w.firstBase
	}
	return b, knownCommits{Identity: r.d.Identity, Claimed: r.claimed, Unpinned: r.unpinned}
}

// pin finds the commit of a statement that answered with n rows (in carries its base and
// tag), so that it is claimed and settles no other batch. It returns nil and why when none
// is proved; the batch is then recorded as of unknown commit version.
func (r *runner) pin(ctx context.Context, w work, n int64, in *journal.Intent) (*int64, string) {
	if in == nil || in.BaseVersion == nil {
		return nil, ""
	}
	cs, err := r.hist.since(ctx, *in.BaseVersion)
	if err != nil {
		r.log.Warn("could not read the table's history to record the batch's commit", "batch", w.n, "error", err)
		return nil, "its commit version is not recorded (the history could not be read)"
	}
	latest := cs.Latest
	r.fresh = &latest
	r.noteForeign(cs)
	if in.Tag != "" && !slices.Contains(w.tags, in.Tag) {
		w.tags = append(w.tags, in.Tag)
	}
	b, k := r.facts(w, n)
	b.Base = *in.BaseVersion
	s, err := settle(cs.List, cs.Whole, b, k)
	if err != nil || s.Mismatch {
		s = settlement{Why: "its tagged commit does not match its answer"}
	}
	if s.Evidence != journal.EvidenceTag && in.Tag != "" && r.tagging {
		r.tagging = false
		r.rep.Tagging = Untagged
		r.rep.Warnings = append(r.rep.Warnings, "the warehouse took the commit tag, but its commits do not carry it: "+
			"the rest of the run tells commits apart without tags (weaker evidence)")
		r.log.Warn("commits do not carry the tag; continuing without tags", "batch", w.n)
	}
	if s.Commit == nil {
		r.unpinned = append(r.unpinned, journal.BatchRef{Run: r.w.Run(), Batch: w.n, Rows: n, Base: in.BaseVersion})
		return nil, "its commit version is not recorded (" + s.Why + ")"
	}
	r.claim(s.Commit.Version, w, n)
	v := s.Commit.Version
	if s.Evidence == journal.EvidenceTag {
		return &v, fmt.Sprintf("its commit is version %d (tagged)", v)
	}
	return &v, fmt.Sprintf("its commit is version %d", v)
}

func (r *runner) claim(v int64, w work, n int64) {
	r.claimed[v] = journal.BatchRef{Run: r.w.Run(), Batch: w.n, Rows: n, Base: w.firstBase}
}

// byTag looks for the commit carrying one of the batch's tags after its first base (rule 1).
// It returns nil and "" when the batch has no tag to look for.
func (r *runner) byTag(ctx context.Context, w work) (*settlement, string, error) {
	if !slices.ContainsFunc(w.tags, func(t string) bool { return t != "" }) || w.firstBase == nil {
		return nil, "", nil
	}
	s, err := r.settleSince(ctx, w)
	if err != nil {
		return nil, "", err
	}
	if s.Evidence != journal.EvidenceTag {
		why, _, _ := strings.Cut(s.Why, "; ")
		return nil, why, nil
	}
	r.claim(s.Commit.Version, w, w.expected)
	return &s, s.Why, nil
}

// settleSince reads the table's history since w's first base (noting its latest version and
// any foreign commits) and settles w against it with the facts of w's expected rows.
func (r *runner) settleSince(ctx context.Context, w work) (settlement, error) {
	cs, err := r.hist.since(ctx, *w.firstBase)
	if err != nil {
		return settlement{}, fmt.Errorf("batch %d: read the table's history to settle it: %w", w.n, err)
	}
	latest := cs.Latest
	r.fresh = &latest
	r.noteForeign(cs)
	b, k := r.facts(w, w.expected)
	return settle(cs.List, cs.Whole, b, k)
}

// unique looks for the commit of an earlier send of w (rule 2, or rule 1 when a tag shows up
// late). Without a known identity, or a first base, nothing is settled this way.
func (r *runner) unique(ctx context.Context, w work) (*settlement, string, error) {
	if strings.TrimSpace(r.d.Identity) == "" {
		return nil, "the warehouse identity is not known, so no commit can be told to be this batch's", nil
	}
	if w.firstBase == nil {
		return nil, "the journal records no base version for the earlier send", nil
	}
	s, err := r.settleSince(ctx, w)
	if err != nil {
		return nil, "", err
	}
	if s.Commit == nil || s.Mismatch {
		return nil, s.Why, nil
	}
	r.claim(s.Commit.Version, w, w.expected)
	return &s, s.Why, nil
}

// noteForeign warns about commits tagged by zbrecover runs this journal does not hold:
// another journal loads the same table.
func (r *runner) noteForeign(cs *commits) {
	for _, c := range cs.List {
		run, ok := tagRun(c.UserMetadata)
		if !ok || run == r.w.Run() || r.p.facts.Runs[run] {
			continue
		}
		msg := fmt.Sprintf("version %d carries the tag of run %s, which the journal at %s does not hold: another journal loads this table "+
			"(use one journal per table, --journal URL)", c.Version, run, r.d.Journal.Location())
		for _, w := range r.rep.Warnings {
			if w == msg {
				return
			}
		}
		r.rep.Warnings = append(r.rep.Warnings, msg)
		r.log.Warn("a commit of another journal's run", "version", c.Version, "run", run)
		return
	}
}
