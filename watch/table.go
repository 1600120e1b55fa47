package watch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/cleanup"
	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/recovery"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/scan"
	"github.com/zbrecover/zbrecover/tableref"
)

// ErrorKind says what failed: where a failure comes from decides whether a table's backoff
// or the whole cycle's applies.
type ErrorKind string

// The kinds of failures.
const (
	KindWarehouse ErrorKind = "warehouse" // a statement failed, or the warehouse could not be reached
	KindStorage   ErrorKind = "storage"   // the table's storage, the staging or archive place
	KindWorkspace ErrorKind = "workspace" // Unity Catalog or another workspace API
	KindJournal   ErrorKind = "journal"   // the journal could not be read or written
	KindLease     ErrorKind = "lease"     // the table's lease was lost while working on it
	KindOther     ErrorKind = "other"
)

// stepError is a failure in one step of a table's recovery.
type stepError struct {
	step string
	err  error
}

func (e *stepError) Error() string { return e.step + ": " + e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

func inStep(step string, err error) error {
	if err == nil {
		return nil
	}
	return &stepError{step: step, err: err}
}

// classify names the kind of a failure in step.
func classify(err error, step string) ErrorKind {
	var (
		se *databricks.SQLError
		ae *databricks.APIError
		ue *databricks.UnreachableError
	)
	switch {
	case errors.Is(err, errLeaseLost), errors.Is(err, journal.ErrLockLost):
		return KindLease
	case errors.Is(err, journal.ErrRunConflict):
		return KindJournal
	case errors.As(err, &se):
		return KindWarehouse
	case errors.As(err, &ue) && step == "scan", errors.As(err, &ae):
		return KindWorkspace
	case errors.As(err, &ue):
		return KindWarehouse
	case strings.HasPrefix(err.Error(), "journal:"):
		return KindJournal
	}
	switch step {
	case "scan", "inspect", "stage", "cleanup", "storage":
		return KindStorage
	case "schema", "load", "verify":
		return KindWarehouse
	}
	return KindOther
}

// isOutage reports whether err says the workspace cannot be reached at all: no table of the
// cycle is tried further, and none is counted as failing.
func isOutage(err error) bool {
	var ue *databricks.UnreachableError
	return errors.As(err, &ue)
}

// tableOutcome is what a cycle did with one table.
type tableOutcome struct {
	err       error
	skipped   bool // locked by another process, backing off or quarantined
	recovered bool // rows were loaded
	rows      int64
	deleted   int
}

// table works on one scanned table: a parked one is recovered, an unreadable one is a
// failure of its own.
func (w *Watcher) table(ctx context.Context, stop <-chan struct{}, t scan.Table) tableOutcome {
	st := w.state(t)
	now := w.d.Now()
	switch {
	case st.quarantined:
		return tableOutcome{skipped: true}
	case now.Before(st.retryAt):
		w.d.Log.Info("the table failed recently; it is tried again later", "table", t.Name, "retry_at", st.retryAt.UTC().Format(time.RFC3339))
		return tableOutcome{skipped: true}
	}
	var out tableOutcome
	if t.Status == scan.Unreadable {
		out.err = inStep("scan", errors.New(t.Error))
	} else {
		w.emit(Event{Event: TableFound, Table: t.Name, TableID: t.TableID, Files: t.Files, Bytes: t.Bytes, Oldest: t.Oldest})
		out = w.recover(ctx, stop, t, st)
	}
	switch {
	case out.err == nil:
		st.failures, st.retryAt = 0, time.Time{}
	case stopped(stop) && (errors.Is(out.err, reload.ErrInterrupted) || errors.Is(out.err, context.Canceled)):
		out.err = nil // stopped at a journaled point, on request
	case isOutage(out.err):
		w.failure(ctx, t, st, out.err, false)
	default:
		w.failure(ctx, t, st, out.err, true)
	}
	return out
}

// state returns what the watcher remembers of t.
func (w *Watcher) state(t scan.Table) *tableState {
	key := t.TableID
	if key == "" {
		key = t.Name
	}
	st, ok := w.tables[key]
	if !ok {
		st = &tableState{reviewed: map[string]bool{}}
		w.tables[key] = st
	}
	st.name = t.Name
	return st
}

// failure records a failed attempt: an error event (alerted for the first failure in a
// row), the table's backoff, and its quarantine after MaxFailures in a row. An outage is not
// held against the table (counts is false).
func (w *Watcher) failure(ctx context.Context, t scan.Table, st *tableState, err error, counts bool) {
	step := "recover"
	var se *stepError
	if errors.As(err, &se) {
		step = se.step
	}
	kind := classify(err, step)
	w.d.Metrics.failed(kind)
	e := Event{Event: Error, Table: t.Name, TableID: t.TableID, ErrorKind: kind, Step: step, Error: err.Error()}
	if !counts {
		w.emit(e)
		return
	}
	st.failures++
	e.Failures = st.failures
	if st.failures >= w.cfg.MaxFailures {
		st.quarantined = true
		w.emit(e)
		w.alert(ctx, Event{Event: Quarantined, Table: t.Name, TableID: t.TableID, ErrorKind: kind, Step: step, Error: err.Error(), Failures: st.failures,
			Reason: fmt.Sprintf("failed %d cycles in a row: it is no longer tried until watch restarts (fix the cause, then restart it)", st.failures)})
		return
	}
	retry := w.d.Now().Add(min(backoff(w.cfg.Backoff, st.failures), w.cfg.MaxBackoff)).UTC()
	st.retryAt = retry
	e.RetryAt = &retry
	if st.failures == 1 {
		w.alert(ctx, e)
		return
	}
	w.emit(e)
}

// recover takes the table's lease and, under it, reloads, verifies and cleans up.
func (w *Watcher) recover(ctx context.Context, stop <-chan struct{}, t scan.Table, st *tableState) tableOutcome {
	owner := journal.Holder{Command: w.d.Header.Command}
	ls, err := takeLease(ctx, w.d.Recovery.Journal, t.TableID, w.cfg.Lease, owner, w.d.Log)
	var le *journal.LockedError
	if errors.As(err, &le) {
		w.emit(Event{Event: SkippedLocked, Table: t.Name, TableID: t.TableID, Holder: le.Holder.String(), Reason: le.Error()})
		return tableOutcome{skipped: true}
	}
	if err != nil {
		return tableOutcome{err: inStep("lease", err)}
	}
	defer func() {
		if err := ls.release(); err != nil {
			w.d.Log.Warn("the table's lease was not released cleanly", "table", t.Name, "error", err.Error())
		}
	}()
	out := w.reload(ls.ctx, stop, t, st, ls.store)
	if out.err == nil && w.cfg.CleanupAfter > 0 && !stopped(stop) {
		var n int
		n, out.err = w.cleanup(ls.ctx, t, st, ls.store)
		out.deleted += n
	}
	if cause := context.Cause(ls.ctx); out.err != nil && errors.Is(cause, errLeaseLost) {
		out.err = inStep("lease", cause)
	}
	return out
}

// reload gathers the table's reload through recovery.Prepare (the path zbrecover reload
// takes), reports the groups that block, loads the others, and verifies the run.
func (w *Watcher) reload(ctx context.Context, stop <-chan struct{}, t scan.Table, st *tableState, store journal.Store) tableOutcome {
	env := w.d.Recovery
	env.Journal = store
	req := recovery.Request{Target: tableref.Spec{Table: t.Name}, Prefix: w.cfg.Prefix, Header: w.d.Header,
		StageTo: TablePlace(w.cfg.StageTo, t.TableID), Schema: recovery.Schema{Source: w.d.Source, From: "warehouse"}}
	rec, err := recovery.Prepare(ctx, env, req)
	if rec == nil || rec.Prepared == nil {
		return tableOutcome{err: inStep(prepareStep(err), err)}
	}
	defer rec.Close()
	if errors.Is(err, reload.ErrBlocked) {
		w.blocked(ctx, t, st, rec.Plan.Blocked)
	} else if err != nil {
		return tableOutcome{err: inStep("plan", err)}
	} else if st.blocked != "" {
		st.blocked, st.blockedAlerted = "", false
		w.d.Metrics.blocked(t.Name, 0)
		w.emit(Event{Event: Unblocked, Table: t.Name, TableID: t.TableID})
	}
	if rec.Nothing() {
		return tableOutcome{}
	}
	rep, runErr := rec.Execute(ctx, reload.RunOptions{Identity: w.d.Identity, Header: w.d.Header, Stop: stop})
	out := tableOutcome{}
	if rep != nil {
		out.rows, out.recovered = rep.Inserted, rep.Inserted > 0
		w.loaded(t, rep)
	}
	switch {
	case errors.Is(runErr, reload.ErrMismatch), errors.Is(runErr, reload.ErrUnknown):
		// Not a failure to retry: the journal holds the batch, a person looks at it.
		if rep != nil {
			w.review(ctx, t, st, rep.Run, len(rep.Batches), rep.Mismatch+rep.Unknown, 0, runErr.Error())
		}
		return out
	case runErr != nil:
		out.err = inStep(loadStep(runErr), runErr)
		return out
	case rep == nil || rep.Run == "" || stopped(stop):
		return out
	}
	vr, err := reload.VerifyRun(ctx, reload.Deps{Warehouse: env.Warehouse, Journal: store, Identity: w.d.Identity, Log: w.d.Log, Session: env.Session},
		rec.Target, reload.VerifyOptions{Run: rep.Run, Header: w.d.Header, OpenKeys: env.Places.OpenStaged})
	if err != nil {
		out.err = inStep("verify", err)
		return out
	}
	if vr.OK {
		w.emit(Event{Event: Verified, Table: t.Name, TableID: t.TableID, Run: vr.Run, Batches: len(vr.Checks), ExpectedRows: vr.Expected, InsertedRows: vr.Inserted})
	} else {
		w.review(ctx, t, st, vr.Run, len(vr.Checks), vr.Failed, vr.Review, "verify did not pass: zbrecover verify "+t.Name+" --run "+vr.Run+" shows why")
	}
	return out
}

// prepareStep names the step recovery.Prepare failed in, as far as its error tells.
func prepareStep(err error) string {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "inspect "):
		return "inspect"
	case strings.HasPrefix(msg, "read the table schema"):
		return "schema"
	case strings.HasPrefix(msg, "--stage-to"), errors.Is(err, reload.ErrStageLocation):
		return "stage"
	}
	return "prepare"
}

// loadStep names the step a reload's Execute failed in.
func loadStep(err error) string {
	if errors.Is(err, reload.ErrStageLocation) || errors.Is(err, reload.ErrStagedChanged) {
		return "stage"
	}
	return "load"
}

// blocked reports the groups that block the table's load: an event when they change, the
// alert once until the table is fixed.
func (w *Watcher) blocked(ctx context.Context, t scan.Table, st *tableState, groups []reload.BlockedGroup) {
	files := 0
	ids := make([]string, 0, len(groups))
	groups = append([]reload.BlockedGroup(nil), groups...)
	for i, g := range groups {
		files += g.Files
		ids = append(ids, g.Group)
		// Lists are [] in the event, never null.
		if g.DDL == nil {
			groups[i].DDL = []string{}
		}
		if g.Notes == nil {
			groups[i].Notes = []string{}
		}
	}
	sort.Strings(ids)
	fp := strings.Join(ids, ",")
	w.d.Metrics.blocked(t.Name, files)
	if fp == st.blocked {
		return
	}
	st.blocked = fp
	e := Event{Event: Blocked, Table: t.Name, TableID: t.TableID, Files: int64(files), BlockedGroups: groups,
		Reason: "the files' schema blocks the load into the table as it is: the files wait, the table is not changed; apply the fix (or confirm renames with zbrecover reload --rename), and the next cycle loads them"}
	if st.blockedAlerted {
		w.emit(e)
		return
	}
	st.blockedAlerted = true
	w.alert(ctx, e)
}

// loaded reports the batches of a reload and counts its rows.
func (w *Watcher) loaded(t scan.Table, rep *reload.Report) {
	states := map[string]int{}
	for _, b := range rep.Batches {
		states[string(b.Status)]++
		e := Event{Event: BatchLoaded, Table: t.Name, TableID: t.TableID, Run: rep.Run, Batch: b.Batch, Status: string(b.Status),
			Files: int64(b.Files), ExpectedRows: b.Expected, Reason: b.Reason}
		if b.Inserted != nil {
			e.InsertedRows = *b.Inserted
		}
		w.emit(e)
	}
	w.d.Metrics.loaded(t.Name, rep.Inserted, states)
}

// review reports a run a person must look at: alerted once per run.
func (w *Watcher) review(ctx context.Context, t scan.Table, st *tableState, run string, batches, failed, review int, reason string) {
	w.reviews++
	e := Event{Event: NeedsReview, Table: t.Name, TableID: t.TableID, Run: run, Batches: batches, Failed: failed, ReviewCount: review, Reason: reason}
	if st.reviewed[run] {
		w.emit(e)
		return
	}
	st.reviewed[run] = true
	w.alert(ctx, e)
}

// cleanup deletes (archiving first with ArchiveTo) the files of the table's runs on its root
// whose batches were verified at least CleanupAfter ago and that cleanup proves in the table
// again now; it returns the files deleted. A run cleanup may not touch is reported for
// review, once.
func (w *Watcher) cleanup(ctx context.Context, t scan.Table, st *tableState, store journal.Store) (int, error) {
	runs, err := journal.Runs(ctx, store, t.TableID)
	if err != nil {
		return 0, inStep("journal", err)
	}
	now := w.d.Now()
	var tgt *tableref.Ref
	deleted := 0
	for _, r := range runs {
		due := r.Status == journal.RunVerified || r.Status == journal.RunPartiallyCleaned || (r.Status == journal.RunCleaned && r.StagedLeft > 0)
		// No batch of a run is verified before the run started.
		if !due || now.Sub(r.Started) < w.cfg.CleanupAfter {
			continue
		}
		if tgt == nil {
			if tgt, err = recovery.Open(ctx, w.d.Cleanup.Storage.Resolver(w.d.Cleanup.Resolver), tableref.Spec{Table: t.Name}, tableref.ReadWrite); err != nil {
				return deleted, inStep("cleanup", err)
			}
		}
		if !journal.SameRoot(r.Root, tgt.Display()) {
			continue
		}
		n, err := w.cleanRun(ctx, t, st, store, tgt, r.Run)
		deleted += n
		if err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}

// cleanRun cleans up one run of the table.
func (w *Watcher) cleanRun(ctx context.Context, t scan.Table, st *tableState, store journal.Store, tgt *tableref.Ref, run string) (int, error) {
	env := w.d.Cleanup
	env.Journal, env.Warehouse, env.Identity, env.Log = store, w.d.Recovery.Warehouse, w.d.Identity, w.d.Log
	prep, err := recovery.PrepareCleanup(ctx, env, tgt, recovery.CleanupRequest{Run: run, MinAge: w.cfg.CleanupAfter, Now: w.d.Now(), Prefix: w.cfg.Prefix, Header: w.d.Header})
	if errors.Is(err, cleanup.ErrNotCleanable) || errors.Is(err, cleanup.ErrOutside) {
		w.review(ctx, t, st, run, 0, 0, 0, "cleanup keeps the run's files: "+err.Error())
		return 0, nil
	}
	if errors.Is(err, cleanup.ErrNothing) {
		return 0, nil
	}
	if err != nil {
		return 0, inStep("cleanup", err)
	}
	defer prep.Close()
	plan := prep.Plan
	if len(plan.CheckFailed)+len(plan.VerifyFailed)+len(plan.ReviewBatches) > 0 {
		w.review(ctx, t, st, run, 0, len(plan.CheckFailed)+len(plan.VerifyFailed), len(plan.ReviewBatches),
			"cleanup keeps the files of batches the re-check does not prove in the table: zbrecover cleanup "+t.Name+" --run "+run+" lists them with the reason")
	}
	if len(plan.Delete) == 0 && plan.Staged == 0 {
		return 0, nil
	}
	if w.cfg.ArchiveTo != "" {
		if err := prep.CheckArchive(ctx, TablePlace(w.cfg.ArchiveTo, t.TableID)); err != nil {
			return 0, inStep("archive", err)
		}
	}
	opts := prep.Options()
	if w.cfg.ArchiveTo != "" {
		if opts.Archive, err = prep.OpenArchive(ctx); err != nil {
			return 0, inStep("archive", err)
		}
	}
	rep, err := prep.Execute(ctx, opts)
	if rep != nil {
		w.d.Metrics.deleted(t.Name, rep.Deleted)
		w.emit(Event{Event: Cleaned, Table: t.Name, TableID: t.TableID, Run: run, Deleted: rep.Deleted, DeletedBytes: rep.DeletedBytes,
			Archive: rep.Archive, Kept: len(rep.Kept) + rep.Skipped + rep.Failed + rep.NotDone, Status: string(rep.After)})
		if err == nil && rep.Failed > 0 {
			err = fmt.Errorf("%d files of run %s could not be deleted (zbrecover history %s --run %s lists them)", rep.Failed, run, t.Name, run)
		}
	}
	if err != nil {
		return 0, inStep("cleanup", err)
	}
	return rep.Deleted, nil
}
