package undo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/reload"
)

// The fates of a batch in a report.
const (
	StatusUndone    = "undone"    // its DELETE's commit shows its rows deleted
	StatusRefused   = "refused"   // nothing sent: no evidence, or the counts did not allow it
	StatusFailed    = "failed"    // the warehouse refused the DELETE before it committed
	StatusMismatch  = "mismatch"  // the DELETE deleted another number of rows
	StatusUnsettled = "unsettled" // the DELETE may have run; a re-run settles it
	StatusNotDone   = "not_done"  // not reached (the run stopped before it)
)

// BatchReport is one batch's fate.
type BatchReport struct {
	Batch    int                  `json:"batch"`
	Evidence journal.UndoEvidence `json:"evidence,omitempty"`
	Rows     int64                `json:"rows"`
	Matched  int64                `json:"matched"`
	Modified int64                `json:"modified"`
	Deleted  *int64               `json:"deleted_rows,omitempty"`
	Version  *int64               `json:"delete_version,omitempty"`
	Status   string               `json:"status"`
	Reason   string               `json:"reason,omitempty"`
	Attempts int                  `json:"attempts,omitempty"`
}

// Report is what an undo did.
type Report struct {
	Run     string `json:"run"`
	TableID string `json:"table_id"`
	Table   string `json:"table"`
	Root    string `json:"root"`
	// Statements counts the DELETEs this process sent.
	Statements  int           `json:"delete_statements"`
	Batches     []BatchReport `json:"batches"`
	Undone      int           `json:"undone_batches"`
	Refused     int           `json:"refused_batches"`
	Failed      int           `json:"failed_batches"`
	Mismatch    int           `json:"mismatch_batches"`
	Unsettled   int           `json:"unsettled_batches"`
	DeletedRows int64         `json:"deleted_rows"`
	// Tagging is "tag" when each DELETE carried its commit tag, "untagged" otherwise.
	Tagging string `json:"commit_tags"`
	// Status is the run's status after the undo.
	Status    journal.RunStatus `json:"run_status"`
	Redo      string            `json:"redo"`
	Warnings  []string          `json:"warnings"`
	Guarantee string            `json:"guarantee"`
}

// RunOptions are what Execute needs beyond the plan, known once the operator confirmed it.
type RunOptions struct {
	// Identity is current_user() of the warehouse ("" keeps Deps.Identity).
	Identity string
	// Header is this process's run record (its Command "" keeps Request.Header).
	Header journal.Header
	// Progress is told the batches done and their total.
	Progress func(done, total int)
}

// undoWork is one batch's undo as Execute carries it.
type undoWork struct {
	bp        BatchPlan
	attempts  int
	tags      []string
	firstBase *int64
	// open is set while an intent of this undo has no result yet; answered when its result
	// carries a count and no error.
	open, answered bool
}

type executor struct {
	p        *Prepared
	d        Deps
	w        *journal.Writer
	hist     *reload.History
	rep      *Report
	tagged   reload.TaggedSession
	tagging  bool
	claimed  map[int64]journal.BatchRef
	identity string
}

// Execute runs the plan: for each planned batch, in order, it settles an unfinished undo
// from the table's history, then counts, journals the intent, sends the DELETE (tagged on a
// held session when the warehouse takes tags), journals its answer and, once the history
// shows its commit with the batch's rows, the outcome. A mismatch, a refusal of the DELETE
// by the warehouse, a lost answer or an interrupt stops it (errors wrapping ErrMismatch,
// ErrInterrupted, ErrUnsettled); a batch whose counts refuse it is reported and skipped. It
// holds the table's lock Prepare took; Close releases it.
func (p *Prepared) Execute(ctx context.Context, ro RunOptions) (*Report, error) {
	if p.closed {
		return nil, errors.New("undo: the prepared run was closed")
	}
	d := p.d
	if ro.Identity != "" {
		d.Identity = ro.Identity
	}
	h := p.req.Header
	if ro.Header.Command != "" {
		h = ro.Header
	}
	st := p.State
	x := &executor{p: p, d: d, identity: d.Identity, claimed: map[int64]journal.BatchRef{},
		hist: reload.NewHistory(d.Warehouse, p.tgt.Name, p.req.HistoryRetries, p.req.Backoff),
		rep: &Report{Run: st.Run, TableID: st.TableID, Table: st.Table, Root: st.Root, Batches: []BatchReport{}, Tagging: "untagged",
			Redo: p.Plan.Redo, Warnings: []string{}, Guarantee: Guarantee, Status: st.Status}}
	for _, b := range st.Undone() {
		if u := b.Undo.Outcome; u != nil && u.Version != nil {
			x.claimed[*u.Version] = journal.BatchRef{Run: st.Run, Batch: b.Batch, Rows: loadedRows(b)}
		}
	}
	var todo []BatchPlan
	for _, bp := range p.Plan.Batches {
		if bp.Refused != "" {
			x.add(BatchReport{Batch: bp.Batch, Evidence: bp.Evidence, Rows: bp.Rows, Matched: bp.Matched, Modified: bp.Modified, Status: StatusRefused, Reason: bp.Refused})
			continue
		}
		todo = append(todo, bp)
	}
	if len(todo) == 0 {
		return x.rep, fmt.Errorf("%w: no batch of run %s can be undone (each says why); nothing was deleted", ErrRefused, st.Run)
	}
	w, err := journal.Continue(ctx, d.Journal, st, h)
	if err != nil {
		return nil, err
	}
	x.w = w
	defer x.tagged.Close()
	x.startTagging(ctx)
	if ro.Progress != nil {
		ro.Progress(0, len(todo))
	}
	var runErr error
	for i, bp := range todo {
		if runErr != nil {
			x.add(BatchReport{Batch: bp.Batch, Evidence: bp.Evidence, Rows: bp.Rows, Status: StatusNotDone, Reason: "the undo stopped before this batch"})
			continue
		}
		if err := ctx.Err(); err != nil {
			runErr = fmt.Errorf("%w before batch %d", ErrInterrupted, bp.Batch)
			x.add(BatchReport{Batch: bp.Batch, Evidence: bp.Evidence, Rows: bp.Rows, Status: StatusNotDone, Reason: "interrupted before this batch"})
			continue
		}
		runErr = x.batch(ctx, bp, st.Batch(bp.Batch))
		if ro.Progress != nil {
			ro.Progress(i+1, len(todo))
		}
	}
	return x.finish(ctx, runErr)
}

// finish writes the end record with the run's state as the journal now shows it.
func (x *executor) finish(ctx context.Context, runErr error) (*Report, error) {
	cctx := context.WithoutCancel(ctx)
	if st, err := journal.ReadState(cctx, x.d.Journal, x.p.State.TableID, x.p.State.Run); err == nil {
		x.rep.Status = st.Status
		_ = x.w.Append(cctx, journal.Record{Kind: journal.KindEnd, End: &journal.End{State: st.Status, Err: errText(runErr)}})
	}
	if runErr == nil && x.rep.Refused > 0 && x.rep.Undone == 0 {
		runErr = fmt.Errorf("%w: no batch was undone", ErrRefused)
	}
	return x.rep, runErr
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (x *executor) add(b BatchReport) {
	x.rep.Batches = append(x.rep.Batches, b)
	switch b.Status {
	case StatusUndone:
		x.rep.Undone++
		if b.Deleted != nil {
			x.rep.DeletedRows += *b.Deleted
		}
	case StatusRefused:
		x.rep.Refused++
	case StatusFailed:
		x.rep.Failed++
	case StatusMismatch:
		x.rep.Mismatch++
	case StatusUnsettled:
		x.rep.Unsettled++
	}
}

// batch undoes one batch: an unfinished undo is settled first.
func (x *executor) batch(ctx context.Context, bp BatchPlan, b *journal.BatchState) error {
	u := &undoWork{bp: bp}
	if b.Undo != nil && b.Status == journal.BatchUndoing {
		u.attempts, u.tags, u.firstBase = b.Undo.Attempts, append([]string(nil), b.Undo.Tags...), b.Undo.FirstBase
		u.open = b.Undo.Result == nil
		u.answered = b.Undo.Result != nil && b.Undo.Result.Err == ""
		done, err := x.settle(ctx, u)
		if done || err != nil {
			return err
		}
	}
	return x.send(ctx, u)
}

func (u *undoWork) facts(base int64) reload.DeleteFacts {
	return reload.DeleteFacts{Batch: u.bp.Batch, Tags: u.tags, Rows: u.bp.Rows, Base: base}
}

// settle looks for the commit of an unfinished undo's DELETE in the table's history: by its
// tags, else as the only unclaimed DELETE by the statements' identity with the batch's rows.
// It returns true when the batch is settled (its outcome written, or a mismatch found).
func (x *executor) settle(ctx context.Context, u *undoWork) (bool, error) {
	n := u.bp.Batch
	if u.firstBase == nil {
		return false, x.closeOpen(ctx, u, "no answer was recorded, and no base version: its DELETE is counted and sent again")
	}
	cs, _, whole, err := x.hist.Since(ctx, *u.firstBase)
	if err != nil {
		return true, fmt.Errorf("batch %d: read the table's history to settle its DELETE: %w; nothing was sent", n, err)
	}
	f := u.facts(*u.firstBase)
	f.Run = x.p.State.Run
	s, err := reload.SettleDelete(cs, whole, f, x.identity, x.claimed)
	if err != nil {
		return true, err
	}
	if s.Commit == nil {
		if u.answered {
			x.add(BatchReport{Batch: n, Evidence: u.bp.Evidence, Rows: u.bp.Rows, Status: StatusUnsettled, Attempts: u.attempts,
				Reason: "its DELETE answered, but no commit of it is in the table's history yet (" + s.Why + "): re-run undo"})
			return true, fmt.Errorf("batch %d: %w: %s", n, ErrUnsettled, s.Why)
		}
		x.d.Logger().Info("the DELETE of an unfinished undo is not in the history; it is counted and sent again", "batch", n, "why", s.Why)
		return false, x.closeOpen(ctx, u, "no answer was recorded: the process ended while its DELETE was in flight; "+s.Why)
	}
	c := s.Commit
	deleted, _ := c.DeletedRows()
	v := c.Version
	if u.open {
		if err := x.result(ctx, u, nil, "no answer was recorded: settled from the table's history"); err != nil {
			return true, err
		}
	}
	if s.Mismatch || deleted != u.bp.Rows {
		return true, x.mismatch(ctx, u, &deleted, &v, fmt.Sprintf("version %d, its DELETE, deleted %d rows; the batch loaded %d", v, deleted, u.bp.Rows))
	}
	return true, x.undone(ctx, u, &deleted, v, "settled from DESCRIBE HISTORY: "+s.Why)
}

// closeOpen records, for an intent left without a result, that its answer was lost.
func (x *executor) closeOpen(ctx context.Context, u *undoWork, why string) error {
	if !u.open {
		return nil
	}
	return x.result(ctx, u, nil, why)
}

// send counts what the batch's condition matches, journals the intent, sends the DELETE and
// settles its commit.
func (x *executor) send(ctx context.Context, u *undoWork) error {
	bp := &u.bp
	n := bp.Batch
	base, err := x.hist.Latest(ctx)
	if err != nil {
		return fmt.Errorf("batch %d: %w; nothing was sent: re-run undo once DESCRIBE HISTORY works", n, err)
	}
	// Counted again right before the DELETE: the plan's count is older.
	res, err := x.d.Warehouse.QueryAll(ctx, bp.CountSQL)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("batch %d: %w", n, ErrInterrupted)
		}
		return fmt.Errorf("batch %d: count what its DELETE matches: %w; nothing was sent", n, err)
	}
	bp.Matched, bp.Modified = twoCounts(res)
	if why := x.p.countRefusal(*bp); why != "" {
		if bp.Resume && bp.Matched == 0 {
			// Its rows are gone, and no DELETE of this undo was found: whose commit took
			// them is not proved.
			x.add(BatchReport{Batch: n, Evidence: bp.Evidence, Rows: bp.Rows, Status: StatusUnsettled, Attempts: u.attempts,
				Reason: "its rows are no longer in the table, but the table's history shows no DELETE of its undo with its rows: zbrecover history shows the run; check the table's history"})
			return fmt.Errorf("batch %d: %w: its rows are gone, and no commit of its DELETE is proved", n, ErrUnsettled)
		}
		x.add(BatchReport{Batch: n, Evidence: bp.Evidence, Rows: bp.Rows, Matched: bp.Matched, Modified: bp.Modified, Status: StatusRefused, Reason: why, Attempts: u.attempts})
		return nil
	}
	u.attempts++
	tag := ""
	if x.tagging {
		tag = reload.UndoTag(x.p.State.Run, n, u.attempts)
	}
	in := &journal.Undo{Step: journal.UndoIntent, Batch: n, Evidence: bp.Evidence, SQL: bp.DeleteSQL, Rows: bp.Rows, Matched: bp.Matched,
		Modified: bp.Modified, LoadVersion: bp.LoadVersion, Started: x.p.req.Now().UTC(), BaseVersion: &base, Tag: tag}
	if err := x.w.Append(ctx, journal.Record{Kind: journal.KindUndo, Undo: in}); err != nil {
		return err
	}
	u.open, u.answered = true, false
	u.tags = append(u.tags, tag)
	if u.firstBase == nil {
		b := base
		u.firstBase = &b
	}
	x.rep.Statements++
	out, err := x.delete(ctx, bp.DeleteSQL, tag)
	if err != nil {
		return x.failed(ctx, u, err)
	}
	deleted, ok := affected(out)
	if !ok {
		_ = x.result(context.WithoutCancel(ctx), u, nil, "the DELETE returned no row count")
		x.add(BatchReport{Batch: n, Evidence: bp.Evidence, Rows: bp.Rows, Status: StatusUnsettled, Attempts: u.attempts, Reason: "its DELETE returned no row count: re-run undo"})
		return fmt.Errorf("batch %d: %w: the DELETE returned no row count (columns %v)", n, ErrUnsettled, out.Columns)
	}
	if err := x.result(ctx, u, &deleted, ""); err != nil {
		return err
	}
	u.answered = true
	// The commit, with exactly the batch's rows deleted, must be in the history. Every
	// attempt's tag is looked for since the first attempt's base: a DELETE of an earlier
	// process, still running when that process was killed, may have committed the rows before
	// this one (which then deleted none).
	cs, _, whole, err := x.hist.Since(ctx, *u.firstBase)
	if err != nil {
		x.add(BatchReport{Batch: n, Evidence: bp.Evidence, Rows: bp.Rows, Deleted: &deleted, Status: StatusUnsettled, Attempts: u.attempts,
			Reason: "its DELETE answered, but the table's history could not be read to check its commit: re-run undo"})
		return fmt.Errorf("batch %d: %w: read the table's history: %v", n, ErrUnsettled, err)
	}
	f := u.facts(*u.firstBase)
	f.Run = x.p.State.Run
	s, err := reload.SettleDelete(cs, whole, f, x.identity, x.claimed)
	if err != nil {
		return err
	}
	if s.Commit == nil {
		if deleted != bp.Rows {
			return x.mismatch(ctx, u, &deleted, nil, fmt.Sprintf("its DELETE deleted %d rows; the batch loaded %d", deleted, bp.Rows))
		}
		x.add(BatchReport{Batch: n, Evidence: bp.Evidence, Rows: bp.Rows, Deleted: &deleted, Status: StatusUnsettled, Attempts: u.attempts,
			Reason: "its DELETE answered, but its commit is not proved in the table's history (" + s.Why + "): re-run undo"})
		return fmt.Errorf("batch %d: %w: %s", n, ErrUnsettled, s.Why)
	}
	c := s.Commit
	v := c.Version
	inCommit, _ := c.DeletedRows()
	earlier := c.UserMetadata != tag && deleted == 0 // an earlier attempt's DELETE took the rows
	if (deleted != bp.Rows && !earlier) || inCommit != bp.Rows || s.Mismatch {
		return x.mismatch(ctx, u, &inCommit, &v, fmt.Sprintf("its DELETE answered %d deleted rows and its commit (version %d) shows %d; the batch loaded %d", deleted, v, inCommit, bp.Rows))
	}
	why := fmt.Sprintf("version %d deleted exactly its %d rows", v, bp.Rows)
	if s.Evidence == journal.EvidenceTag {
		why += " (tagged)"
	}
	return x.undone(ctx, u, &deleted, v, why)
}

// failed records a DELETE that returned an error: refused before it committed (the batch
// stays verified), or of unknown outcome (a re-run settles it).
func (x *executor) failed(ctx context.Context, u *undoWork, err error) error {
	n := u.bp.Batch
	se := databricks.Classify(err)
	var ns *reload.NotSentError
	switch {
	case errors.As(err, &ns) && ctx.Err() == nil:
		if err := x.result(ctx, u, nil, "not sent: "+se.Error()); err != nil {
			return err
		}
		if err := x.outcome(ctx, u, journal.UndoFailed, nil, "not sent: the commit tag could not be set"); err != nil {
			return err
		}
		x.add(BatchReport{Batch: n, Evidence: u.bp.Evidence, Rows: u.bp.Rows, Status: StatusFailed, Attempts: u.attempts, Reason: "not sent: " + se.Error()})
		return fmt.Errorf("batch %d: not sent: %w", n, err)
	case ctx.Err() != nil || se.Class == databricks.ClassCanceled:
		_ = x.result(context.WithoutCancel(ctx), u, nil, "interrupted: the DELETE was cancelled; its outcome is settled by the next run")
		x.add(BatchReport{Batch: n, Evidence: u.bp.Evidence, Rows: u.bp.Rows, Status: StatusUnsettled, Attempts: u.attempts, Reason: "interrupted"})
		return fmt.Errorf("batch %d: %w", n, ErrInterrupted)
	case databricks.RefusedBeforeCommit(err):
		if err := x.result(ctx, u, nil, se.Error()); err != nil {
			return err
		}
		why := "the warehouse refused the DELETE: " + se.Error()
		if strings.Contains(u.bp.DeleteSQL, "_metadata") {
			why += "; if it does not take _metadata in a DELETE's condition, undo by keys (reload --key writes the keys file it needs; --evidence keys)"
		}
		if err := x.outcome(ctx, u, journal.UndoFailed, nil, why); err != nil {
			return err
		}
		x.add(BatchReport{Batch: n, Evidence: u.bp.Evidence, Rows: u.bp.Rows, Status: StatusFailed, Attempts: u.attempts, Reason: why})
		return fmt.Errorf("batch %d: %s; nothing was deleted", n, why)
	}
	_ = x.result(ctx, u, nil, se.Error())
	x.add(BatchReport{Batch: n, Evidence: u.bp.Evidence, Rows: u.bp.Rows, Status: StatusUnsettled, Attempts: u.attempts,
		Reason: "its DELETE's answer was lost (" + se.Error() + "): re-run undo, which settles it from the table's history"})
	return fmt.Errorf("batch %d: %w: %v", n, ErrUnsettled, se)
}

func (x *executor) result(ctx context.Context, u *undoWork, deleted *int64, errText string) error {
	u.open = false
	return x.w.Append(ctx, journal.Record{Kind: journal.KindUndo, Undo: &journal.Undo{Step: journal.UndoResult, Batch: u.bp.Batch, Deleted: deleted, Err: errText}})
}

func (x *executor) outcome(ctx context.Context, u *undoWork, st journal.UndoStatus, v *int64, reason string) error {
	return x.w.Append(ctx, journal.Record{Kind: journal.KindUndo, Undo: &journal.Undo{Step: journal.UndoOutcome, Batch: u.bp.Batch, Status: st, Version: v, Reason: reason}})
}

func (x *executor) undone(ctx context.Context, u *undoWork, deleted *int64, v int64, why string) error {
	if err := x.outcome(ctx, u, journal.Undone, &v, why); err != nil {
		return err
	}
	x.claimed[v] = journal.BatchRef{Run: x.p.State.Run, Batch: u.bp.Batch, Rows: u.bp.Rows}
	x.add(BatchReport{Batch: u.bp.Batch, Evidence: u.bp.Evidence, Rows: u.bp.Rows, Matched: u.bp.Matched, Modified: u.bp.Modified,
		Deleted: deleted, Version: &v, Status: StatusUndone, Reason: why, Attempts: u.attempts})
	x.d.Logger().Info("batch undone", "batch", u.bp.Batch, "version", v, "rows", u.bp.Rows)
	return nil
}

func (x *executor) mismatch(ctx context.Context, u *undoWork, deleted, v *int64, why string) error {
	if err := x.outcome(ctx, u, journal.UndoMismatch, v, why); err != nil {
		return err
	}
	x.add(BatchReport{Batch: u.bp.Batch, Evidence: u.bp.Evidence, Rows: u.bp.Rows, Deleted: deleted, Version: v, Status: StatusMismatch, Reason: why, Attempts: u.attempts})
	return fmt.Errorf("batch %d: %w: %s", u.bp.Batch, ErrMismatch, why)
}

// affected reads a DELETE's num_affected_rows.
func affected(res *databricks.Result) (int64, bool) {
	if res == nil || len(res.Rows) == 0 {
		return 0, false
	}
	for i, c := range res.Columns {
		if strings.EqualFold(c, "num_affected_rows") && i < len(res.Rows[0]) {
			return reload.AsInt(res.Rows[0][i])
		}
	}
	return 0, false
}

// startTagging opens the session DELETEs run on and probes whether the warehouse takes a
// commit tag; without one, DELETEs go untagged and their commits are settled as the only
// candidates (weaker evidence).
func (x *executor) startTagging(ctx context.Context) {
	if x.d.Session == nil {
		return
	}
	s, err := x.d.Session(ctx)
	if err != nil {
		x.rep.Warnings = append(x.rep.Warnings, "no session could be held for commit tags ("+err.Error()+"): DELETEs go untagged")
		return
	}
	if err := databricks.ProbeTagging(ctx, s, x.p.State.Run); err != nil {
		_ = s.Close()
		x.rep.Warnings = append(x.rep.Warnings, "the warehouse does not take a commit tag: a DELETE's commit is settled from the history only as the only candidate (weaker evidence)")
		return
	}
	x.tagged.Hold(s)
	x.tagging = true
	x.rep.Tagging = "tag"
}

// delete runs a DELETE: with a tag, the SET and the DELETE on the held session (opened again
// after an error: a broken session is not reused), else through the pool. A DELETE by row ID
// ranges or by data files may run twice without harm (the driver runs a statement again on a
// new connection after a dead session): stable row IDs are never reused, and a data file's
// rows, once deleted, are in no file the condition names, so the second deletes nothing.
func (x *executor) delete(ctx context.Context, stmt, tag string) (*databricks.Result, error) {
	if tag == "" {
		return x.d.Warehouse.QueryAll(ctx, stmt)
	}
	// A session that cannot be opened sends nothing.
	return x.tagged.Run(ctx, stmt, tag, func(ctx context.Context) (reload.Session, error) {
		s, err := x.d.Session(ctx)
		if err != nil {
			return nil, &reload.NotSentError{Err: err}
		}
		return s, nil
	})
}
