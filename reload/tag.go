package reload

import (
	"context"
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/sqlstmt"
)

// A commit tag ties a commit to the statement that made it: before each load, on the
// session the load runs on, reload sets
//
//	SET spark.databricks.delta.commitInfo.userMetadata = 'zbrecover:<run>:<batch>:<attempt>:<files>'
//
// (<files> a digest of the batch's files and their versions), and Delta writes the value into
// the commit's commitInfo, where DESCRIBE HISTORY shows it as userMetadata. A commit whose userMetadata is a batch's tag is that batch's, whoever
// else commits to the table with the same identity. Whether a SQL warehouse takes the SET is
// not known: a run probes it once, and without it tells commits apart by their operation,
// identity and row count only when exactly one candidate remains (weaker evidence).

// tagKey is the session configuration Delta copies into each commit's userMetadata.
const tagKey = sqlstmt.TagKey

// Tag is the commit tag of one attempt of one batch of a run; files is the digest of the
// batch's files (batchDigest).
func Tag(run string, batch, attempt int, files string) string {
	return fmt.Sprintf("zbrecover:%s:%d:%d:%s", run, batch, attempt, files)
}

// claimTag is the commit tag of a run's claim on the table (Claim).
func claimTag(run string, attempt int) string {
	return fmt.Sprintf("zbrecover:%s:claim:%d", run, attempt)
}

// releaseTag is the commit tag of a run's release of its claim: it loaded nothing and stops.
func releaseTag(run string) string { return fmt.Sprintf("zbrecover:%s:release:1", run) }

// tagKind returns what a zbrecover tag marks: "claim", "release", "undo" (an undo's DELETE,
// package undo), or "" for a load.
func tagKind(tag string) string {
	rest, ok := strings.CutPrefix(tag, "zbrecover:")
	if !ok {
		return ""
	}
	_, kind, _ := strings.Cut(rest, ":")
	kind, _, _ = strings.Cut(kind, ":")
	switch kind {
	case "claim", "release", "undo":
		return kind
	}
	return ""
}

// mergeTag is the commit tag of one attempt of a load by key's MERGE.
func mergeTag(run string, attempt int) string {
	return fmt.Sprintf("zbrecover:%s:merge:%d", run, attempt)
}

// tagRun returns the run a zbrecover commit tag names.
func tagRun(tag string) (string, bool) {
	rest, ok := strings.CutPrefix(tag, "zbrecover:")
	if !ok {
		return "", false
	}
	run, _, ok := strings.Cut(rest, ":")
	return run, ok && run != ""
}

// startTagging opens the session loads run on and probes whether the warehouse takes a
// commit tag. A refusal leaves the run untagged (the report says so); any other failure to
// open a session is an error.
func (r *runner) startTagging(ctx context.Context) error {
	if r.o.NoTag || r.d.Session == nil {
		r.rep.Tagging = Untagged
		return nil
	}
	s, err := r.d.Session(ctx)
	if err != nil {
		return err
	}
	r.tagged.Hold(s)
	if err := databricks.ProbeTagging(ctx, s, r.w.Run()); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w while probing commit tags", ErrInterrupted)
		}
		r.log.Info("the warehouse takes no commit tag; commits are told apart without it", "error", databricks.Classify(err).Error())
		r.rep.Warnings = append(r.rep.Warnings, "the warehouse does not take a commit tag ("+tagKey+"): a batch whose answer is lost "+
			"is settled from the table's history only when exactly one commit can be its (weaker evidence; cleanup then needs verify --key)")
		r.rep.Tagging = Untagged
		r.tagged.Close()
		return nil
	}
	r.tagging = true
	r.rep.Tagging = Tagged
	return nil
}

// tag returns the tag of an attempt of w, "" when the run is untagged.
func (r *runner) tag(w work, attempt int) string {
	if !r.tagging {
		return ""
	}
	return Tag(r.w.Run(), w.n, attempt, batchDigest(w.files))
}

// load runs a load statement: with a tag, the SET and the statement on the run's session
// (opened again after an error, since a broken session is not reused), else through the
// pool.
func (r *runner) load(ctx context.Context, stmt, tag string) (*databricks.Result, error) {
	if tag == "" {
		return r.d.Warehouse.QueryAll(ctx, stmt)
	}
	return r.tagged.Run(ctx, stmt, tag, r.d.Session)
}

// TaggedSession is the warehouse session that statements with a commit tag run on: the tag's
// SET and its statement must share one session. A session that fails a statement is closed,
// not reused. The zero value holds no session.
type TaggedSession struct {
	s Session
}

// Hold makes s the session held.
func (t *TaggedSession) Hold(s Session) { t.s = s }

// Close closes the session held, if any.
func (t *TaggedSession) Close() {
	if t.s != nil {
		_ = t.s.Close()
		t.s = nil
	}
}

// Run sets tag on the session held, opening one with open when none is held (open's error is
// returned as it is), and runs stmt on it. When the tag cannot be set the error is a
// *NotSentError: the statement never ran. After either error the session is closed.
func (t *TaggedSession) Run(ctx context.Context, stmt, tag string, open func(context.Context) (Session, error)) (*databricks.Result, error) {
	if t.s == nil {
		s, err := open(ctx)
		if err != nil {
			return nil, err
		}
		t.s = s
	}
	if _, err := t.s.QueryAll(ctx, sqlstmt.SetTag(tag)); err != nil {
		t.Close()
		return nil, &NotSentError{err}
	}
	res, err := t.s.QueryAll(ctx, stmt)
	if err != nil {
		t.Close()
	}
	return res, err
}

// NotSentError is an error before a statement was sent (its commit tag could not be set, or
// no session could be opened for it): nothing ran.
type NotSentError struct{ Err error }

func (e *NotSentError) Error() string { return "set the commit tag: " + e.Err.Error() }
func (e *NotSentError) Unwrap() error { return e.Err }
