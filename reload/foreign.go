package reload

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/sqlstmt"
)

// Every operator of a table shares one place, whatever journal and staging location each
// uses: the table. A run tags its commits (tag.go), so the table's history says which runs
// loaded it. Before planning, reload reads the history back to the oldest fallback file and
// refuses the files a run of another journal may have loaded (older than that run's newest
// load, with a margin for clocks), naming the run; --ignore-foreign-runs, with a reason that
// is journaled, loads them anyway. Before its first statement a run claims the table with
// an empty, tagged commit (sqlstmt.Claim): of two runs of two journals planning at the same
// moment, the one whose claim the table's log orders first loads, and the other stops before
// sending anything.

// ErrForeignRun is returned (wrapped) when a run of another journal loads the table: its
// files are refused, or this run stops before its first statement.
var ErrForeignRun = errors.New("a run of another journal loads this table")

// ForeignRun is a run of another journal whose tagged commits the table's history shows.
type ForeignRun struct {
	// Run is the run's id; "" for a COPY INTO without a zbrecover tag.
	Run string `json:"run"`
	// Version, Time and User are those of its newest commit.
	Version int64     `json:"version"`
	Time    time.Time `json:"time"`
	User    string    `json:"user"`
	// Loads counts its load commits; a run with none only claimed the table.
	Loads int `json:"loads"`
	// Released is set for a run that released its claim (it stopped without loading).
	Released bool `json:"released,omitempty"`
	// Stale is set for a run that only claimed the table and released it, or claimed it
	// longer ago than ClaimLease: it gave up before loading, and refuses nothing.
	Stale bool `json:"stale,omitempty"`
}

// ClaimLease is how long a claim on the table without a load keeps other journals' runs
// from loading the files parked before it.
const ClaimLease = time.Hour

// clockMargin is added to a foreign run's newest commit time: a file parked up to that much
// later may still have been listed by it (the store's and the warehouse's clocks differ).
const clockMargin = 10 * time.Minute

// ownUntagged reports whether a COPY INTO without a zbrecover tag may be a batch of this
// journal: a version one of its batches was proved by, or one a batch of unknown commit
// version with the same row count may have made.
func (p *Prepared) ownUntagged(c taggedCommit) bool {
	if _, ok := p.facts.Claimed[c.Version]; ok {
		return true
	}
	for _, u := range p.facts.Unpinned {
		if u.Rows == c.Rows && (u.Base == nil || *u.Base < c.Version) {
			return true
		}
	}
	return false
}

func (f ForeignRun) describe() string {
	if f.Run == "" {
		return fmt.Sprintf("a COPY INTO without a zbrecover tag (version %d, by %s at %s: a load by hand, or a run of another journal whose warehouse takes no tag) loaded this table",
			f.Version, orDefault(f.User, "an unknown identity"), f.Time.UTC().Format(time.RFC3339))
	}
	what := fmt.Sprintf("loaded this table (%d commits, the newest version %d", f.Loads, f.Version)
	if f.Loads == 0 {
		what = fmt.Sprintf("claimed this table to load it (version %d", f.Version)
	}
	return fmt.Sprintf("run %s of another journal %s, by %s at %s)", f.Run, what, orDefault(f.User, "an unknown identity"), f.Time.UTC().Format(time.RFC3339))
}

// foreignRuns reads the table's history back to the oldest listed file for runs of other
// journals, records them in p.Foreign, and returns the listed files (relative to the prefix)
// they may have loaded, with why, unless the operator ignores them. A continued run whose
// unsent batches hold such files is refused (ErrForeignRun).
func (p *Prepared) foreignRuns(ctx context.Context, rep *inspect.Report) (map[string]string, error) {
	if p.d.Warehouse == nil || len(rep.Files) == 0 && p.Continues == nil {
		return nil, nil
	}
	oldest := time.Time{}
	for _, f := range rep.Files {
		if oldest.IsZero() || f.Modified.Before(oldest) {
			oldest = f.Modified
		}
	}
	if st := p.Continues; st != nil && (oldest.IsZero() || st.Started.Before(oldest)) {
		oldest = st.Started
	}
	h := &history{wh: p.d.Warehouse, table: p.tgt.Name, retries: p.o.HistoryRetries, backoff: p.o.Backoff}
	scan, err := h.tagsSince(ctx, oldest.Add(-clockMargin))
	if err != nil {
		return nil, fmt.Errorf("%w: the history, read for runs of other journals, could not be read (%v); nothing was sent: re-run once DESCRIBE HISTORY works", ErrNoBase, err)
	}
	latest := scan.Latest
	p.historyBase = &latest
	byRun := map[string]*ForeignRun{}
	var order []string
	for _, c := range scan.Tagged {
		if c.Run == "" && p.ownUntagged(c) || p.facts.Runs[c.Run] {
			continue
		}
		if c.Run == "" && p.o.Stage == nil {
			// Reading the fallback folder itself, as the manual procedure's COPY INTO does:
			// COPY INTO skips the files such a load read through these very paths (its
			// batch then inserts nothing and stays unknown, never verified).
			continue
		}
		if c.Run == "" && p.Continues != nil && c.Time.After(p.Continues.Started) {
			// After the run this reload continues started: another writer's commit that
			// looks like a load (ours are settled or pinned by the rules of settle), not a
			// load the run's plan could have missed.
			continue
		}
		id := c.Run
		if id == "" {
			id = fmt.Sprintf("version %d", c.Version) // a load without a tag: one entry each
		}
		fr := byRun[id]
		if fr == nil {
			fr = &ForeignRun{Run: c.Run, Version: c.Version, Time: c.Time, User: c.User}
			byRun[id] = fr
			order = append(order, id)
		}
		switch c.Kind {
		case "":
			fr.Loads++
		case "release":
			fr.Released = true
		}
	}
	now := p.o.Now()
	var cutoff time.Time
	var why []string
	for _, run := range order {
		fr := byRun[run]
		if fr.Loads == 0 && (fr.Released || now.Sub(fr.Time) > ClaimLease) {
			fr.Stale = true
		}
		p.Foreign = append(p.Foreign, *fr)
		if fr.Stale {
			continue
		}
		why = append(why, fr.describe())
		if fr.Time.After(cutoff) {
			cutoff = fr.Time
		}
	}
	if len(why) == 0 {
		return nil, nil
	}
	if p.o.IgnoreForeignRuns != "" {
		return nil, nil
	}
	cutoff = cutoff.Add(clockMargin)
	reason := strings.Join(why, "; ") + ": it may have loaded this file; finish with that run's journal (--journal), or, once sure it did not, load with --ignore-foreign-runs REASON"
	refuse := map[string]string{}
	for _, f := range rep.Files {
		if f.Modified.IsZero() || !f.Modified.After(cutoff) {
			refuse[f.Key] = reason
		}
	}
	if st := p.Continues; st != nil {
		for _, b := range st.Remaining() {
			for _, f := range b.Files {
				if f.ModTime.IsZero() || !f.ModTime.After(cutoff) {
					return nil, fmt.Errorf("run %s, which this reload would continue, has unsent batches of files that %w may have loaded: %s; nothing was sent",
						st.Run, ErrForeignRun, reason)
				}
			}
		}
	}
	p.ForeignRefused = len(refuse)
	return refuse, nil
}

// ignoredForeign is the journal's record of an operator's --ignore-foreign-runs, nil when
// nothing was ignored.
func (p *Prepared) ignoredForeign() *journal.IgnoredForeign {
	if p.o.IgnoreForeignRuns == "" {
		return nil
	}
	out := &journal.IgnoredForeign{Reason: p.o.IgnoreForeignRuns, Runs: []string{}}
	for _, f := range p.Foreign {
		switch {
		case f.Stale:
		case f.Run == "":
			out.Runs = append(out.Runs, fmt.Sprintf("untagged COPY INTO at version %d", f.Version))
		default:
			out.Runs = append(out.Runs, f.Run)
		}
	}
	sort.Strings(out.Runs)
	return out
}

// left is the journal's record of the files the plan leaves behind: unreadable, refused.
func (p *Prepared) left() []journal.LeftFile {
	out := []journal.LeftFile{}
	for _, u := range p.Plan.Unreadable {
		out = append(out, journal.LeftFile{Key: p.Plan.Prefix + u.Key, Reason: "unreadable: " + u.Error})
	}
	for _, f := range p.Plan.Refused {
		out = append(out, journal.LeftFile{Key: p.Plan.Prefix + f.Key, Reason: f.Reason})
	}
	return out
}

// claimTable claims the table for this run before its first statement: an insert of no row
// carrying the run's claim tag, then the history from the version read when planning up to
// that claim. A claim of another journal's run, or a load by one, ordered before this run's
// claim stops this run (ErrForeignRun): that run got there first. Without commit tags, or
// when the warehouse records no empty commit, no claim is possible, and the report says so.
func (r *runner) claimTable(ctx context.Context) error {
	if !r.tagging || r.p.historyBase == nil {
		return nil
	}
	tag := claimTag(r.w.Run(), 1)
	stmt := sqlstmt.Claim(r.p.tgt.Name, r.p.table.Schema.Fields)
	if _, err := r.load(ctx, stmt, tag); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w while claiming the table", ErrInterrupted)
		}
		r.noClaim("the claim was refused: " + err.Error())
		return nil
	}
	cs, err := r.hist.since(ctx, *r.p.historyBase)
	if err != nil {
		r.noClaim("the history could not be read after it: " + err.Error())
		return nil
	}
	latest := cs.Latest
	r.fresh = &latest
	mine := int64(-1)
	for _, c := range cs.List {
		if c.UserMetadata == tag {
			mine = c.Version
		}
	}
	if mine < 0 {
		r.noClaim("the warehouse recorded no commit for it (it skips empty commits)")
		return nil
	}
	for _, c := range cs.List {
		run, ok := tagRun(c.UserMetadata)
		if !ok || c.Version >= mine || run == r.w.Run() || r.p.facts.Runs[run] || r.o.IgnoreForeignRuns != "" {
			continue
		}
		r.release(ctx)
		return fmt.Errorf("%w: run %s of another journal committed version %d (%s by %s) before this run's claim (version %d): it loads the same table "+
			"now; nothing was sent; finish with that run's journal (--journal), or wait for it and run reload again", ErrForeignRun, run, c.Version, c.Operation, orDefault(c.User, "unknown"), mine)
	}
	r.holdsClaim = true
	r.log.Info("claimed the table", "version", mine)
	return nil
}

// release records that this run gives up its claim without having loaded anything (it lost
// the claim, or stopped before its first load), so that runs of other journals need not wait
// for ClaimLease. A release that fails is only logged: the claim then lapses by itself.
func (r *runner) release(ctx context.Context) {
	stmt := sqlstmt.Claim(r.p.tgt.Name, r.p.table.Schema.Fields)
	if _, err := r.load(context.WithoutCancel(ctx), stmt, releaseTag(r.w.Run())); err != nil {
		r.log.Warn("could not release the claim on the table; it lapses by itself", "after", ClaimLease.String(), "error", err)
	}
}

func (r *runner) noClaim(why string) {
	r.rep.Warnings = append(r.rep.Warnings, "no claim on the table was recorded ("+why+"): a run of another journal starting at the same moment is not excluded; "+
		"runs of other journals that loaded before this one were checked")
}
