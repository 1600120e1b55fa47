package reload

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
)

// Errors Run returns (wrapped); cmd maps them to exit codes with errors.Is.
var (
	// ErrMismatch: a batch inserted another number of rows than its files hold (exit 4).
	ErrMismatch = errors.New("rows inserted differ from the rows in the files")
	// ErrLocationOverlap: Unity Catalog refuses path access to the fallback folder, which
	// lies inside the managed table's storage. Nothing was loaded.
	ErrLocationOverlap = errors.New("Unity Catalog refuses to read the fallback folder: it lies inside the managed table's storage (LOCATION_OVERLAP)")
	// ErrUnknown: some batch's outcome could not be settled; it is never verified, and
	// cleanup will not delete its files (exit 4 from verify, 5 from reload).
	ErrUnknown = errors.New("some batches could not be verified")
	// ErrInterrupted: the run was interrupted; the statement in flight was cancelled and is
	// recorded as outcome unknown, to be settled by the next run.
	ErrInterrupted = errors.New("interrupted")
	// ErrValidate: VALIDATE refused a batch before anything was loaded.
	ErrValidate = errors.New("VALIDATE refused a batch")
)

// Guarantee is what every reload report states.
const Guarantee = "Each file is loaded at most once (COPY INTO skips files it already loaded into the table, " +
	"and the journal records every batch). Rows are not deduplicated: Zerobus delivery is at-least-once, so " +
	"records Zerobus also published may now be in the table twice; check with zbrecover verify --key COL."

// Warehouse runs SQL: databricks.Warehouse, or a test double.
type Warehouse interface {
	QueryAll(ctx context.Context, stmt string, args ...any) (*databricks.Result, error)
}

// Options configure Run.
type Options struct {
	// NoValidate skips the VALIDATE ALL preflight (a cheap probe of path access still runs).
	NoValidate bool
	// Header is this process's run record.
	Header journal.Header
	// Root is the table root as shown (redacted); with the table id it finds a run to continue.
	Root string
	// Prefix is the fallback folder under the root; journal keys are root-relative.
	Prefix string
	// MaxAttempts bounds the tries of one batch on transaction conflicts (default 5).
	MaxAttempts int
	// Backoff is the first wait after a conflict, doubled each time (default 1s).
	Backoff time.Duration
	// HistoryLimit is how many commits DESCRIBE HISTORY reads to settle a batch (default 500).
	HistoryLimit int
	// HistorySkew is how far before an intent's start a commit may be (clock skew between
	// this host and the warehouse; default 2m).
	HistorySkew time.Duration
	// Log receives progress lines (retries, settling).
	Log *slog.Logger
	// Progress is called before the first batch and after each batch with batches done and
	// total.
	Progress func(done, total int)
	// Now is the clock (tests).
	Now func() time.Time
	// Stage, when set, copies the files to a staging location before loading them from it.
	Stage *Stage
	// Source is the folder URL the statements of this process read (the fallback folder's,
	// or the staging location's), with a trailing slash; batches of an earlier process that
	// read elsewhere are refused (ErrSecondPath). Empty skips the check.
	Source string
	// Dedupe, when set, loads by key through a staging table and one MERGE (dedupe.go).
	Dedupe *Dedupe
}

// BatchReport is one batch's fate.
type BatchReport struct {
	Batch    int                 `json:"batch"`
	Group    string              `json:"group"`
	Folder   string              `json:"folder"`
	Files    int                 `json:"files"`
	Expected int64               `json:"expected_rows"`
	Inserted *int64              `json:"inserted_rows,omitempty"`
	Status   journal.BatchStatus `json:"status"`
	Reason   string              `json:"reason,omitempty"`
	Version  *int64              `json:"history_version,omitempty"`
	Attempts int                 `json:"attempts"`
}

// Report is what a reload did.
type Report struct {
	Run     string `json:"run"`
	Resumed bool   `json:"resumed"`
	TableID string `json:"table_id"`
	Table   string `json:"table"`
	Root    string `json:"root"`
	// Statements counts the load statements sent by this process (VALIDATE not included).
	Statements int           `json:"load_statements"`
	Batches    []BatchReport `json:"batches"`
	Verified   int           `json:"verified_batches"`
	// Staged and StagedReused count the copies made and the verified copies reused.
	Staged       int    `json:"staged_files,omitempty"`
	StagedReused int    `json:"staged_reused,omitempty"`
	Unknown      int    `json:"unknown_batches"`
	Failed       int    `json:"failed_batches"`
	Mismatch     int    `json:"mismatch_batches"`
	Files        int    `json:"files"`
	Rows         int64  `json:"expected_rows"`
	Inserted     int64  `json:"inserted_rows"`
	Status       string `json:"status"`
	// Warnings are what the operator should know about the table (properties the load
	// changed, for example).
	Warnings  []string `json:"warnings"`
	Guarantee string   `json:"guarantee"`
	// Merge is the load by key's MERGE (reload --dedupe-key); batches then load the
	// staging table.
	Merge *MergeReport `json:"merge,omitempty"`
}

// Deps are what Run works with.
type Deps struct {
	Warehouse Warehouse
	Journal   journal.Store
	// Target identifies the table: TableID is the journal key.
	Target journal.Target
	// User is the warehouse identity statements run as (DESCRIBE HISTORY userName); "" when
	// unknown, and commits are then matched without it.
	User string
}

type runner struct {
	d       Deps
	o       Options
	table   databricks.TableName
	w       *journal.Writer
	st      *journal.State
	rep     *Report
	claimed map[int64]bool // history versions that settled a batch
	props   map[string]string
	toSend  []string   // the statements to preflight
	dd      *dedupeRun // a load by key, or nil
}

// Run executes the plan, continuing the table's latest unfinished run on the same root if
// there is one. p may be nil or empty when only an unfinished run is left to finish.
func Run(ctx context.Context, d Deps, table databricks.TableName, p *Plan, o Options) (*Report, error) {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.HistoryLimit <= 0 {
		o.HistoryLimit = 500
	}
	if o.HistorySkew <= 0 {
		o.HistorySkew = 2 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	r := &runner{d: d, o: o, table: table, claimed: map[int64]bool{},
		rep: &Report{TableID: d.Target.TableID, Table: d.Target.Table, Root: o.Root, Guarantee: Guarantee}}

	lock, err := d.Journal.Lock(ctx, d.Target.TableID, journal.LockOptions{Owner: journal.Holder{Command: o.Header.Command}})
	if err != nil {
		return nil, err
	}
	defer lock.Close()

	st, err := journal.LatestUnfinished(ctx, d.Journal, d.Target.TableID, o.Root)
	if err != nil {
		return nil, err
	}
	if err := checkDedupe(st, o); err != nil {
		return nil, err
	}
	var newBatches []Batch
	if p != nil {
		newBatches = p.Batches
	}
	if st == nil && len(newBatches) == 0 {
		r.rep.Status = "nothing_to_load"
		return r.rep, nil
	}

	// Preflight: every statement this process may send, before anything is written.
	var toSend []string
	if st != nil {
		for _, b := range st.Remaining() {
			toSend = append(toSend, b.SQL)
		}
	}
	for _, b := range newBatches {
		toSend = append(toSend, b.SQL)
	}
	r.props = r.properties(ctx)
	if r.props != nil && len(toSend) > 0 {
		if _, ok := r.props["delta.enableDeletionVectors"]; !ok {
			r.rep.Warnings = append(r.rep.Warnings, "the table does not set delta.enableDeletionVectors: with the workspace setting for it on, "+
				"COPY INTO may enable deletion vectors on the table (a table feature other readers must support)")
		}
	}
	if o.Stage == nil {
		if err := r.preflight(ctx, p, toSend); err != nil {
			return r.rep, err
		}
	}
	r.toSend = toSend

	if st != nil {
		r.st = st
		r.rep.Resumed = true
		if r.w, err = journal.Continue(ctx, d.Journal, st, o.Header); err != nil {
			return nil, err
		}
		for _, b := range st.Batches {
			if b.Outcome != nil && b.Outcome.Version != nil {
				r.claimed[*b.Outcome.Version] = true
			}
		}
	} else if r.w, err = journal.Start(ctx, d.Journal, d.Target, "", o.Header); err != nil {
		return nil, err
	}
	r.rep.Run = r.w.Run()

	// New batches are numbered after the run's own.
	base := 0
	if st != nil {
		for _, b := range st.Batches {
			base = max(base, b.Batch)
		}
	}
	if newBatches, err = r.dedupeStart(ctx, st, newBatches, base); err != nil {
		return r.finish(ctx, err)
	}
	if len(newBatches) > 0 {
		pr := journal.Plan{}
		for i := range newBatches {
			b := &newBatches[i]
			pr.Batches = append(pr.Batches, journal.PlanBatch{Batch: base + i + 1, Group: b.Group, Folder: o.Prefix + b.Folder,
				Files: r.files(b), ExpectedRows: b.ExpectedRows, SQL: b.SQL})
		}
		if err := r.w.Append(ctx, journal.Record{Kind: journal.KindPlan, Plan: &pr}); err != nil {
			return r.rep, err
		}
	}
	err = r.execute(ctx, st, newBatches, base)
	if err == nil {
		err = r.dedupeFinish(ctx)
	}
	return r.finish(ctx, err)
}

func (r *runner) files(b *Batch) []journal.File {
	out := make([]journal.File, len(b.Files))
	for i, f := range b.Files {
		out[i] = journal.File{Key: r.o.Prefix + f.Key, Size: f.Size, ETag: f.ETag, Generation: f.Generation, ModTime: f.Modified, Rows: f.Rows}
	}
	return out
}

// work is one batch to settle or send.
type work struct {
	n        int
	group    string
	folder   string
	files    []journal.File
	expected int64
	sql      string
	// prior is the start of an earlier intent of this batch that got no row count back:
	// 0 rows now may mean that statement committed.
	prior time.Time
	// base is the table's newest version before the earliest unanswered send, when known.
	base     *int64
	attempts int
}

func (r *runner) execute(ctx context.Context, st *journal.State, newBatches []Batch, base int) error {
	var todo []work
	if st != nil {
		for _, b := range st.Batches {
			switch b.Status {
			case journal.BatchOpen, journal.BatchPlanned, journal.BatchFailed:
				sql := b.SQL
				if b.Intent != nil {
					sql = b.Intent.SQL
				}
				if err := r.checkSource(sql, b.Batch); err != nil {
					return err
				}
			}
		}
		if r.o.Stage != nil {
			// Open batches may be sent again: their copies must be there.
			var files []journal.File
			for _, b := range st.OpenBatches() {
				files = append(files, b.Files...)
			}
			if len(files) > 0 {
				if err := r.stage(ctx, files); err != nil {
					return err
				}
			}
		}
		// Batches the crashed process classified nothing for come first: open ones (no row
		// count) and loaded ones (a count, no classification yet).
		for _, b := range st.Batches {
			switch b.Status {
			case journal.BatchOpen:
				w := work{n: b.Batch, group: b.Group, folder: b.Folder, files: b.Files, expected: b.ExpectedRows, sql: b.SQL, attempts: b.Attempts}
				if b.Intent != nil {
					w.prior, w.sql, w.base = b.Intent.Started, b.Intent.SQL, b.Intent.BaseVersion
				}
				if err := r.settleOpen(ctx, b, w); err != nil {
					return err
				}
			case journal.BatchLoaded:
				w := work{n: b.Batch, group: b.Group, folder: b.Folder, files: b.Files, expected: b.ExpectedRows, sql: b.SQL, attempts: b.Attempts}
				if b.Intent != nil {
					w.prior, w.base = b.Intent.Started, b.Intent.BaseVersion
				}
				if err := r.classify(ctx, w, *b.Result.Inserted, b.Attempts > 1); err != nil {
					return err
				}
			case journal.BatchVerified, journal.BatchUnknown, journal.BatchMismatch:
				r.rep.add(BatchReport{Batch: b.Batch, Group: b.Group, Folder: b.Folder, Files: len(b.Files), Expected: b.ExpectedRows,
					Inserted: resultRows(b), Status: b.Status, Reason: outcomeReason(b), Version: outcomeVersion(b), Attempts: b.Attempts})
			}
		}
		for _, b := range st.Remaining() {
			todo = append(todo, work{n: b.Batch, group: b.Group, folder: b.Folder, files: b.Files, expected: b.ExpectedRows, sql: b.SQL, attempts: b.Attempts})
		}
	}
	for i := range newBatches {
		b := &newBatches[i]
		todo = append(todo, work{n: base + i + 1, group: b.Group, folder: r.o.Prefix + b.Folder, files: r.files(b), expected: b.ExpectedRows, sql: b.SQL})
	}
	if r.o.Stage != nil {
		var files []journal.File
		for _, w := range todo {
			files = append(files, w.files...)
		}
		if err := r.stage(ctx, files); err != nil {
			return err
		}
		// The copies are in place: check the statements against them now.
		if err := r.preflight(ctx, nil, r.toSend); err != nil {
			return err
		}
	}
	if r.o.Progress != nil {
		r.o.Progress(0, len(todo))
	}
	for i, w := range todo {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w before batch %d", ErrInterrupted, w.n)
		}
		if err := r.send(ctx, w); err != nil {
			return err
		}
		if r.o.Progress != nil {
			r.o.Progress(i+1, len(todo))
		}
	}
	return nil
}

// settleOpen settles a batch whose statement may have committed without its answer being
// recorded: from the table's history first, else by sending it again (COPY INTO skips files
// it loaded, so a second send cannot load them twice).
func (r *runner) settleOpen(ctx context.Context, b *journal.BatchState, w work) error {
	c, why, err := r.fromHistory(ctx, w)
	if err != nil {
		return err
	}
	if c != nil {
		v := c.Version
		n, _ := c.OutputRows()
		r.o.Log.Info("batch settled from history", "batch", w.n, "version", v)
		return r.outcome(ctx, w, journal.BatchVerified, "settled from DESCRIBE HISTORY: "+why, &v, &n)
	}
	r.o.Log.Info("batch not found in history; sending it again", "batch", w.n, "why", why)
	if b.Result == nil {
		// Close the unanswered attempt, so that the journal shows what is known of it.
		if err := r.w.Append(ctx, journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: w.n, Ended: r.o.Now().UTC(),
			Err: "no answer was recorded: the process ended while the statement was in flight"}}); err != nil {
			return err
		}
	}
	return r.send(ctx, w)
}

// send writes the intent, runs the statement (retrying transaction conflicts on the same
// batch), writes the result and classifies the batch.
func (r *runner) send(ctx context.Context, w work) error {
	backoff := r.o.Backoff
	for {
		w.attempts++
		base := r.latestVersion(ctx)
		started := r.o.Now().UTC()
		if err := r.w.Append(ctx, journal.Record{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: w.n, Files: w.files,
			ExpectedRows: w.expected, SQL: w.sql, Started: started, BaseVersion: base}}); err != nil {
			return err
		}
		r.rep.Statements++
		res, err := r.d.Warehouse.QueryAll(ctx, w.sql)
		if err == nil {
			n, ok := inserted(res)
			if !ok {
				_ = r.result(context.WithoutCancel(ctx), w.n, nil, "the statement returned no row count")
				return fmt.Errorf("batch %d: COPY INTO returned no row count (columns %v): outcome unknown, re-run to settle it", w.n, res.Columns)
			}
			if err := r.w.Append(ctx, journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: w.n, Inserted: &n,
				QueryID: res.QueryID, Ended: r.o.Now().UTC()}}); err != nil {
				return err
			}
			return r.classify(ctx, w, n, !w.prior.IsZero())
		}
		se := databricks.Classify(err)
		switch {
		case ctx.Err() != nil || se.Class == databricks.ClassCanceled:
			_ = r.result(context.WithoutCancel(ctx), w.n, nil, "interrupted: the statement was cancelled; outcome unknown until the next run settles it")
			r.rep.addOpen(w, "interrupted")
			return fmt.Errorf("batch %d: %w", w.n, ErrInterrupted)
		case isLocationOverlap(err):
			_ = r.result(ctx, w.n, nil, se.Error())
			_ = r.outcome(ctx, w, journal.BatchFailed, "LOCATION_OVERLAP: nothing was read", nil, nil)
			return fmt.Errorf("batch %d: %w", w.n, ErrLocationOverlap)
		case isConflict(se) && w.attempts < r.o.MaxAttempts:
			if err := r.result(ctx, w.n, nil, se.Error()); err != nil {
				return err
			}
			r.o.Log.Warn("transaction conflict; retrying the same batch", "batch", w.n, "attempt", w.attempts, "wait", backoff)
			if err := sleep(ctx, backoff); err != nil {
				r.rep.addOpen(w, "interrupted while waiting to retry")
				return fmt.Errorf("batch %d: %w", w.n, ErrInterrupted)
			}
			backoff *= 2
			if w.prior.IsZero() {
				w.prior, w.base = started, base // the conflicting attempt may have committed after all
			}
			continue
		case se.Class == databricks.ClassConnection || se.SQLState == "" && se.ErrorClass == "":
			// No answer from the warehouse: the statement may have committed.
			_ = r.result(context.WithoutCancel(ctx), w.n, nil, se.Error())
			r.rep.addOpen(w, "no answer from the warehouse")
			return fmt.Errorf("batch %d: outcome unknown, re-run to settle it: %w", w.n, err)
		default:
			// The warehouse refused the statement: nothing was committed.
			if err := r.result(ctx, w.n, nil, se.Error()); err != nil {
				return err
			}
			if err := r.outcome(ctx, w, journal.BatchFailed, se.Error(), nil, nil); err != nil {
				return err
			}
			return fmt.Errorf("batch %d: %w", w.n, err)
		}
	}
}

// classify decides a batch from its inserted rows (DESIGN: verified, settled from history,
// unknown, mismatch).
func (r *runner) classify(ctx context.Context, w work, n int64, resent bool) error {
	switch {
	case n == w.expected:
		return r.outcome(ctx, w, journal.BatchVerified, fmt.Sprintf("inserted %d rows, the sum of the files' footers", n), nil, &n)
	case n == 0 && resent:
		c, why, err := r.fromHistory(ctx, w)
		if err != nil {
			return err
		}
		if c != nil {
			v := c.Version
			rows, _ := c.OutputRows()
			return r.outcome(ctx, w, journal.BatchVerified, "0 rows on the second send; an earlier send committed: "+why, &v, &rows)
		}
		return r.outcome(ctx, w, journal.BatchUnknown, "0 rows on the second send and no matching COPY INTO in the table's history ("+why+")", nil, &n)
	case n == 0:
		return r.outcome(ctx, w, journal.BatchUnknown, "0 rows inserted for files no journal record shows loading: "+
			"they may have been loaded outside zbrecover, or never read (a folder the warehouse did not list); never verified", nil, &n)
	default:
		if err := r.outcome(ctx, w, journal.BatchMismatch, fmt.Sprintf("inserted %d rows, the files hold %d", n, w.expected), nil, &n); err != nil {
			return err
		}
		return fmt.Errorf("batch %d: %w: inserted %d, expected %d", w.n, ErrMismatch, n, w.expected)
	}
}

// fromHistory looks for the COPY INTO commit of an earlier send of w: by this user, after
// that send started, with numOutputRows = expected, not claimed by another batch. It never
// takes "the newest version" (Zerobus keeps committing) and never compares numFiles (the
// data files written, not the source files).
func (r *runner) fromHistory(ctx context.Context, w work) (*Commit, string, error) {
	res, err := r.d.Warehouse.QueryAll(ctx, HistorySQL(r.table, r.o.HistoryLimit))
	if err != nil {
		return nil, "", fmt.Errorf("batch %d: read the table's history to settle it: %w", w.n, err)
	}
	commits, err := ParseHistory(res)
	if err != nil {
		return nil, "", err
	}
	since := w.prior.Add(-r.o.HistorySkew)
	var found []Commit
	for _, c := range commits {
		if !strings.EqualFold(c.Operation, "COPY INTO") || r.claimed[c.Version] {
			continue
		}
		if w.base != nil && c.Version <= *w.base {
			continue // committed before the send
		}
		if w.base == nil && !w.prior.IsZero() && c.Time.Before(since) {
			continue
		}
		if r.d.User != "" && !strings.EqualFold(c.User, r.d.User) {
			continue
		}
		if n, ok := c.OutputRows(); ok && n == w.expected {
			found = append(found, c)
		}
	}
	switch len(found) {
	case 0:
		return nil, "no COPY INTO commit with " + fmt.Sprint(w.expected) + " output rows since the earlier send", nil
	case 1:
		r.claimed[found[0].Version] = true
		return &found[0], fmt.Sprintf("version %d (COPY INTO, %d output rows)", found[0].Version, w.expected), nil
	}
	return nil, fmt.Sprintf("%d COPY INTO commits match; cannot tell which was this batch's", len(found)), nil
}

// properties reads the table's properties (SHOW TBLPROPERTIES); nil when they cannot be read.
func (r *runner) properties(ctx context.Context) map[string]string {
	res, err := r.d.Warehouse.QueryAll(ctx, "SHOW TBLPROPERTIES "+r.table.SQL())
	if err != nil {
		r.o.Log.Debug("could not read the table's properties", "error", err)
		return nil
	}
	out := map[string]string{}
	for _, row := range res.Rows {
		if len(row) >= 2 {
			out[asString(row[0])] = asString(row[1])
		}
	}
	return out
}

func orNone(v string, ok bool) string {
	if !ok {
		return "unset"
	}
	return v
}

// latestVersion returns the table's newest version, or nil when history cannot be read (the
// batch is then settled by time window instead).
func (r *runner) latestVersion(ctx context.Context) *int64 {
	res, err := r.d.Warehouse.QueryAll(ctx, HistorySQL(r.table, 1))
	if err != nil {
		r.o.Log.Debug("could not read the table's newest version", "error", err)
		return nil
	}
	commits, err := ParseHistory(res)
	if err != nil || len(commits) == 0 {
		return nil
	}
	v := commits[0].Version
	return &v
}

func (r *runner) result(ctx context.Context, n int, inserted *int64, errText string) error {
	return r.w.Append(ctx, journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: n, Inserted: inserted, Ended: r.o.Now().UTC(), Err: errText}})
}

func (r *runner) outcome(ctx context.Context, w work, s journal.BatchStatus, reason string, version, inserted *int64) error {
	if err := r.w.Append(ctx, journal.Record{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: w.n, Status: s, Reason: reason, Version: version}}); err != nil {
		return err
	}
	r.rep.add(BatchReport{Batch: w.n, Group: w.group, Folder: w.folder, Files: len(w.files), Expected: w.expected,
		Inserted: inserted, Status: s, Reason: reason, Version: version, Attempts: w.attempts})
	return nil
}

func (rep *Report) add(b BatchReport) {
	for i := range rep.Batches {
		if rep.Batches[i].Batch == b.Batch {
			rep.Batches[i] = b
			return
		}
	}
	rep.Batches = append(rep.Batches, b)
}

func (rep *Report) addOpen(w work, reason string) {
	rep.add(BatchReport{Batch: w.n, Group: w.group, Folder: w.folder, Files: len(w.files), Expected: w.expected,
		Status: journal.BatchOpen, Reason: reason, Attempts: w.attempts})
}

// finish writes the end record and sums up the report.
func (r *runner) finish(ctx context.Context, runErr error) (*Report, error) {
	rep := r.rep
	for _, b := range rep.Batches {
		rep.Files += b.Files
		rep.Rows += b.Expected
		if b.Inserted != nil {
			rep.Inserted += *b.Inserted
		}
		switch b.Status {
		case journal.BatchVerified:
			rep.Verified++
		case journal.BatchUnknown, journal.BatchOpen:
			rep.Unknown++
		case journal.BatchFailed:
			rep.Failed++
		case journal.BatchMismatch:
			rep.Mismatch++
		}
	}
	if r.w != nil {
		st, err := journal.ReadState(context.WithoutCancel(ctx), r.d.Journal, r.d.Target.TableID, r.w.Run())
		state := journal.RunLoading
		if err == nil {
			state = st.Status
		}
		end := &journal.End{State: state}
		if runErr != nil {
			end.Err = runErr.Error()
		}
		if err := r.w.Append(context.WithoutCancel(ctx), journal.Record{Kind: journal.KindEnd, End: end}); err != nil && runErr == nil {
			runErr = err
		}
		if st, err := journal.ReadState(context.WithoutCancel(ctx), r.d.Journal, r.d.Target.TableID, r.w.Run()); err == nil {
			rep.Status = string(st.Status)
		}
	}
	if r.props != nil {
		after := r.properties(context.WithoutCancel(ctx))
		var changed []string
		for k, v := range after {
			if old, ok := r.props[k]; !ok || old != v {
				changed = append(changed, fmt.Sprintf("%s = %s (was %s)", k, v, orNone(r.props[k], ok)))
			}
		}
		for k := range r.props {
			if _, ok := after[k]; !ok && after != nil {
				changed = append(changed, k+" removed")
			}
		}
		sort.Strings(changed)
		for _, c := range changed {
			rep.Warnings = append(rep.Warnings, "the load changed a table property: "+c)
		}
	}
	if rep.Warnings == nil {
		rep.Warnings = []string{}
	}
	if runErr == nil && rep.Unknown > 0 {
		runErr = fmt.Errorf("%w: %d batch(es) are unknown; their files are not verified and cleanup keeps them", ErrUnknown, rep.Unknown)
	}
	return rep, runErr
}

// preflight runs VALIDATE ALL for every statement (pass/fail only; its rows are never read),
// or, with NoValidate, one cheap probe of path access. A LOCATION_OVERLAP refusal anywhere
// stops the reload before anything is loaded.
func (r *runner) preflight(ctx context.Context, p *Plan, stmts []string) error {
	if len(stmts) == 0 {
		return nil
	}
	check := func(stmt string) error {
		_, err := r.d.Warehouse.QueryAll(ctx, stmt)
		if err == nil {
			return nil
		}
		if isLocationOverlap(err) {
			return ErrLocationOverlap
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w during preflight", ErrInterrupted)
		}
		return fmt.Errorf("%w: %v", ErrValidate, err)
	}
	if r.o.NoValidate {
		return check(validateOf(stmts[0]))
	}
	for _, s := range stmts {
		if err := check(validateOf(s)); err != nil {
			return err
		}
	}
	return nil
}

// validateOf turns a load statement into its VALIDATE ALL form.
func validateOf(stmt string) string {
	return strings.Replace(stmt, " FILEFORMAT = PARQUET FILES = (", " FILEFORMAT = PARQUET VALIDATE ALL FILES = (", 1)
}

// StageToSuggestion is the --stage-to path suggested when Unity Catalog refuses the fallback
// folder: a directory of a volume (to be named) in the table's schema.
func StageToSuggestion(n databricks.TableName) string {
	return fmt.Sprintf("/Volumes/%s/%s/<volume>/zbrecover-%s", n.Catalog, n.Schema, n.Table)
}

// IsLocationOverlap reports whether err is Unity Catalog's refusal of a path read inside a
// managed table's storage: the class LOCATION_OVERLAP, recognised by SQLSTATE-free text too.
func IsLocationOverlap(err error) bool { return isLocationOverlap(err) }

func isLocationOverlap(err error) bool {
	if err == nil {
		return false
	}
	se := databricks.Classify(err)
	return se.Class == databricks.ClassLocationOverlap || strings.Contains(err.Error(), "LOCATION_OVERLAP")
}

// isConflict reports a transaction conflict: retryable on the same batch.
func isConflict(se *databricks.SQLError) bool {
	if se.Class == databricks.ClassConcurrentCopy {
		return true
	}
	switch se.SQLState {
	case "25000", "2D521", "40001":
		return true
	}
	return strings.Contains(se.Error(), "Concurrent")
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func resultRows(b *journal.BatchState) *int64 {
	if b.Result != nil {
		return b.Result.Inserted
	}
	return nil
}

func outcomeReason(b *journal.BatchState) string {
	if b.Outcome != nil {
		return b.Outcome.Reason
	}
	return ""
}

func outcomeVersion(b *journal.BatchState) *int64 {
	if b.Outcome != nil {
		return b.Outcome.Version
	}
	return nil
}
