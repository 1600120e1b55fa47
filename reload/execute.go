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
	"github.com/zbrecover/zbrecover/sqlstmt"
)

// Errors Execute returns (wrapped); cmd maps them to exit codes with errors.Is.
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
	// ErrNoBase: the table's newest version could not be read, so no statement was sent
	// (a commit could not be told from the ones before it).
	ErrNoBase = errors.New("the table's newest version cannot be read")
)

// Guarantee is what every reload report states.
const Guarantee = "Each file is loaded at most once (COPY INTO skips files it already loaded into the table, " +
	"and the journal records every batch). Rows are not deduplicated: Zerobus delivery is at-least-once, so " +
	"records Zerobus also published may now be in the table twice; check with zbrecover verify --key COL."

// guaranteeFor is Guarantee with the run's key columns in its advice, when the run has them
// (reload --key): the check to run is then known.
func guaranteeFor(keys Keys) string {
	if len(keys) == 0 {
		return Guarantee
	}
	return strings.Replace(Guarantee, "verify --key COL", "verify --key "+keys.String(), 1)
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
	Evidence journal.Evidence    `json:"evidence,omitempty"`
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
	Staged       int `json:"staged_files,omitempty"`
	StagedReused int `json:"staged_reused,omitempty"`
	// StagedReplaced counts the objects found at copies' paths with other bytes than the
	// originals' (copies cut short), replaced by the copies.
	StagedReplaced int   `json:"staged_replaced,omitempty"`
	Unknown        int   `json:"unknown_batches"`
	Failed         int   `json:"failed_batches"`
	Mismatch       int   `json:"mismatch_batches"`
	Files          int   `json:"files"`
	Rows           int64 `json:"expected_rows"`
	// Inserted is the rows the run put in the table (journal.Rows.Loaded): AnsweredRows, the
	// statements' answers, and HistoryRows, those of batches settled from the table's history.
	Inserted     int64  `json:"inserted_rows"`
	AnsweredRows int64  `json:"answered_rows"`
	HistoryRows  int64  `json:"history_rows"`
	Status       string `json:"status"`
	// Tagging says how commits are told apart: "tag" (each statement carried its own
	// commit tag) or "untagged" (the warehouse takes no tag: a commit settles a batch only
	// when it is the only candidate, weaker evidence); "" when nothing was to load.
	Tagging string `json:"commit_tags,omitempty"`
	// Warnings are what the operator should know about the table (properties the load
	// changed, for example).
	Warnings []string `json:"warnings"`
	// Guarantee is what the load guarantees, for a human; "" when nothing was to load.
	Guarantee string `json:"guarantee,omitempty"`
	// Merge is the load by key's MERGE (reload --dedupe-key); batches then load the
	// staging table.
	Merge *MergeReport `json:"merge,omitempty"`
}

// The values of Report.Tagging.
const (
	Tagged   = "tag"
	Untagged = "untagged"
)

type runner struct {
	p     *Prepared
	d     Deps
	o     Options
	run   RunOptions
	log   *slog.Logger
	table databricks.TableName // the table statements load: the target, or a load by key's staging table
	w     *journal.Writer
	st    *journal.State
	rep   *Report
	hist  *history
	// claimed are the commits batches of the table were proved by (any run), unpinned the
	// answered batches of unknown version.
	claimed  map[int64]journal.BatchRef
	unpinned []journal.BatchRef
	props    map[string]string
	toSend   []string // the statements to preflight
	dd       *dedupeRun
	// session is the warehouse session loads run on when commits are tagged; tagging is
	// set once the warehouse took the probe's tag.
	tagged  TaggedSession
	tagging bool
	// fresh is the newest version read after the last statement, a base for the next one.
	fresh *int64
	// staged are the copies of the run at its staging location, by original key, as
	// recorded once staged.
	staged map[string]journal.Staged
	// holdsClaim is set once this process claimed the table (claimTable).
	holdsClaim bool
}

// work is one batch to settle or send.
type work struct {
	n        int
	group    string
	folder   string // relative to the root, as the journal keeps it
	files    []journal.File
	expected int64
	sql      string
	attempts int
	// firstBase is the base of the batch's first attempt; tags those of every attempt.
	firstBase *int64
	tags      []string
	// answerless is set when an earlier attempt got no row count back: it may have
	// committed.
	answerless bool
}

// NothingReport is the report of a reload with nothing to do (Nothing): no run, no batch.
func (p *Prepared) NothingReport() *Report {
	return &Report{TableID: p.tgt.TableID, Table: p.tgt.TableName(), Root: p.tgt.Display(), Batches: []BatchReport{}, Warnings: []string{},
		Status: "nothing_to_load"}
}

// RunOptions are what Execute needs beyond the plan, known once the operator confirmed it.
type RunOptions struct {
	// Identity is current_user() of the warehouse the statements run as ("" when unknown:
	// no untagged commit is then taken from the history as a batch's); when empty,
	// Deps.Identity is kept.
	Identity string
	// Header is this process's run record; when its Command is empty, Options.Header is kept.
	Header journal.Header
	// Progress tells how far each phase is; StageProgress the files staged (copied or kept)
	// and the total of the staging step.
	Progress      Progress
	StageProgress func(done, total int)
	// Stop, when set, asks for a graceful stop once it is closed: the statement in flight is
	// finished and journaled, not cancelled, and Execute returns an error wrapping
	// ErrInterrupted before the next batch (a service stopping: zbrecover watch on SIGTERM).
	// Cancelling ctx instead cancels the statement in flight.
	Stop <-chan struct{}
}

// stopped reports whether a graceful stop was asked for.
func (ro RunOptions) stopped() bool {
	if ro.Stop == nil {
		return false
	}
	select {
	case <-ro.Stop:
		return true
	default:
		return false
	}
}

// Execute runs a prepared reload: it continues the run Prepare found (settling the batches
// whose statement may have run without its answer being recorded, then sending the rest) or
// starts one, and sends the new batches, each journaled before and after its statement.
// It holds the table's lock Prepare took; Close releases it.
func (p *Prepared) Execute(ctx context.Context, ro RunOptions) (*Report, error) {
	if p.closed {
		return nil, errors.New("reload: the prepared run was closed")
	}
	o := p.o
	d := p.d
	if ro.Identity != "" {
		d.Identity = ro.Identity
	}
	if ro.Header.Command != "" {
		o.Header = ro.Header
	}
	tgt := p.tgt
	r := &runner{p: p, d: d, o: o, run: ro, log: p.d.Logger(), table: tgt.Name, claimed: map[int64]journal.BatchRef{},
		rep: &Report{TableID: tgt.TableID, Table: tgt.TableName(), Root: tgt.Display(), Guarantee: guaranteeFor(o.Keys), Tagging: Untagged}}
	r.hist = &history{wh: p.d.Warehouse, table: tgt.Name, retries: o.HistoryRetries, backoff: o.Backoff}
	for v, ref := range p.facts.Claimed {
		r.claimed[v] = ref
	}
	r.unpinned = append(r.unpinned, p.facts.Unpinned...)
	defer r.tagged.Close()

	st := p.Continues
	newBatches := p.Plan.Batches
	if st == nil && len(newBatches) == 0 {
		return p.NothingReport(), nil
	}
	// Preflight: every statement this process may send, before anything is written.
	var toSend []string // their VALIDATE ALL forms
	r.st = st
	r.recordedCopies()
	if st != nil {
		for _, b := range st.Remaining() {
			toSend = append(toSend, r.statementOf(b, true))
		}
	}
	for _, b := range newBatches {
		toSend = append(toSend, b.ValidateSQL)
	}
	// The table's properties before the load: a property the load changes (a workspace default
	// such as deletion vectors, enabled by the first write) is reported once, after it.
	r.props = r.properties(ctx)
	if o.Stage == nil {
		if err := r.preflight(ctx, toSend); err != nil {
			return r.rep, err
		}
	} else if err := o.Stage.Check(ctx); err != nil {
		// The staging location is checked before anything is journaled: a mistyped volume
		// leaves no run behind.
		return r.rep, err
	}
	r.toSend = toSend

	var err error
	if st != nil {
		r.st = st
		r.rep.Resumed = true
		if r.w, err = journal.Continue(ctx, p.d.Journal, st, o.Header); err != nil {
			return nil, err
		}
	} else if r.w, err = journal.Start(ctx, p.d.Journal, journal.Target{TableID: tgt.TableID, Table: tgt.TableName(), Root: tgt.Display()}, "", o.Header); err != nil {
		return nil, err
	}
	r.rep.Run = r.w.Run()
	if p.sourceChanged {
		// No statement of the run was sent: its batches read the new source from now on.
		if err := r.w.Append(ctx, journal.Record{Kind: journal.KindPlan, Plan: &journal.Plan{Source: p.Source}}); err != nil {
			return r.finish(ctx, err)
		}
		r.log.Info("the run reads a new source", "run", st.Run, "source", p.Source)
	}

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
	if len(newBatches) > 0 || st == nil {
		pr := journal.Plan{Source: p.Source, IgnoredForeign: p.ignoredForeign(), Left: p.left()}
		for i := range newBatches {
			b := &newBatches[i]
			pr.Batches = append(pr.Batches, journal.PlanBatch{Batch: base + i + 1, Group: b.Group, Folder: p.Plan.Prefix + b.Folder,
				Files: r.files(b), ExpectedRows: b.ExpectedRows, SQL: b.SQL, Select: b.Select})
		}
		if err := r.w.Append(ctx, journal.Record{Kind: journal.KindPlan, Plan: &pr}); err != nil {
			return r.finish(ctx, err)
		}
	}
	if err := r.startTagging(ctx); err != nil {
		return r.finish(ctx, err)
	}
	if err := r.claimTable(ctx); err != nil {
		return r.finish(ctx, err)
	}
	err = r.execute(ctx, st, newBatches, base)
	if err == nil {
		err = r.dedupeFinish(ctx)
	}
	return r.finish(ctx, err)
}

func (r *runner) files(b *Batch) []journal.File { return journalFiles(r.p.Plan.Prefix, b.Files) }

func (r *runner) execute(ctx context.Context, st *journal.State, newBatches []Batch, base int) error {
	var todo []work
	if st != nil {
		if r.o.Stage != nil {
			// Open batches may be sent again: their copies must be there.
			var files [][]journal.File
			for _, b := range st.OpenBatches() {
				files = append(files, b.Files)
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
			w := r.workOf(b)
			switch b.Status {
			case journal.BatchOpen:
				if err := r.settleOpen(ctx, b, w); err != nil {
					return err
				}
			case journal.BatchLoaded:
				if err := r.classify(ctx, w, *b.Result.Inserted, b.Intent); err != nil {
					return err
				}
			case journal.BatchVerified, journal.BatchUnknown, journal.BatchMismatch:
				r.rep.add(BatchReport{Batch: b.Batch, Group: b.Group, Folder: b.Folder, Files: len(b.Files), Expected: b.ExpectedRows,
					Inserted: loadedRows(b), Status: b.Status, Reason: outcomeReason(b), Version: outcomeVersion(b), Evidence: b.Evidence(), Attempts: b.Attempts})
			}
		}
		for _, b := range st.Remaining() {
			w := r.workOf(b)
			w.sql = r.statementOf(b, false)
			todo = append(todo, w)
		}
	}
	for i := range newBatches {
		b := &newBatches[i]
		todo = append(todo, work{n: base + i + 1, group: b.Group, folder: r.p.Plan.Prefix + b.Folder, files: r.files(b), expected: b.ExpectedRows, sql: b.SQL})
	}
	if r.o.Stage != nil {
		var files [][]journal.File
		for _, w := range todo {
			files = append(files, w.files)
		}
		if err := r.stage(ctx, files); err != nil {
			return err
		}
		if r.run.stopped() {
			return fmt.Errorf("%w after staging: stopped on request; nothing of these batches was loaded", ErrInterrupted)
		}
		// The copies are in place: check the statements against them now.
		if err := r.preflight(ctx, r.toSend); err != nil {
			return err
		}
	}
	if err := r.writeKeys(ctx, todo); err != nil {
		r.log.Warn("the keys file was not written; verify --key and cleanup cannot check the run by key without it", "error", err)
		r.rep.Warnings = append(r.rep.Warnings, "the keys file of the run's files was not written ("+err.Error()+"): verify --key reads the files while they exist")
	}
	tell(r.run.Progress.Load, 0, len(todo))
	for i, w := range todo {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w before batch %d", ErrInterrupted, w.n)
		}
		if r.run.stopped() {
			return fmt.Errorf("%w before batch %d: stopped on request", ErrInterrupted, w.n)
		}
		if err := r.send(ctx, w); err != nil {
			return err
		}
		tell(r.run.Progress.Load, i+1, len(todo))
	}
	return nil
}

func (r *runner) workOf(b *journal.BatchState) work {
	w := work{n: b.Batch, group: b.Group, folder: b.Folder, files: b.Files, expected: b.ExpectedRows, sql: b.SQL,
		attempts: b.Attempts, firstBase: b.FirstBase, tags: append([]string(nil), b.Tags...)}
	if b.Intent != nil {
		w.sql = b.Intent.SQL
	}
	// Every attempt before the latest got an error or no answer (a count ends the batch's
	// attempts), and an open batch's latest did too.
	w.answerless = b.Attempts > 1 || b.Status == journal.BatchOpen
	return w
}

// settleOpen settles a batch whose statement may have committed without its answer being
// recorded. With commit tags, a commit carrying one of the batch's tags in the table's
// history settles it. Otherwise the batch is sent again: COPY INTO skips files it loaded,
// so a second send cannot load them twice, and its answer decides (0 rows: an earlier
// send committed, which the history must then show).
func (r *runner) settleOpen(ctx context.Context, b *journal.BatchState, w work) error {
	s, why, err := r.byTag(ctx, w)
	if err != nil {
		return err
	}
	if s == nil && sqlstmt.Forced(r.statementOfWork(b, w)) && !r.forcedNotCommitted(w, why) {
		// A forced load (a redo from the fallback folder) loads its files whether or not an
		// earlier send committed: it is sent again only once its tags prove no send did.
		return r.outcome(ctx, w, journal.BatchUnknown, "a forced load whose earlier send may have committed is never sent again blindly ("+
			orDefault(why, "its attempts carried no commit tag")+"); zbrecover verify --key COL shows whether its rows are in the table", nil, nil, "")
	}
	if s != nil {
		c := s.Commit
		n, _ := c.OutputRows()
		if s.Mismatch {
			return r.mismatch(ctx, w, n, fmt.Sprintf("version %d carries the batch's tag and wrote %d rows, the files hold %d", c.Version, n, w.expected))
		}
		v := c.Version
		r.log.Info("batch settled from its tagged commit", "batch", w.n, "version", v)
		return r.outcome(ctx, w, journal.BatchVerified, "settled from DESCRIBE HISTORY: "+why, &v, &n, journal.EvidenceTag)
	} else if why != "" {
		r.log.Info("batch not found in history by its tag; sending it again", "batch", w.n, "why", why)
	}
	if b.Result == nil {
		// Close the unanswered attempt, so that the journal shows what is known of it.
		if err := r.w.Append(ctx, journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: w.n, Ended: r.o.Now().UTC(),
			Err: "no answer was recorded: the process ended while the statement was in flight"}}); err != nil {
			return err
		}
	}
	w.answerless = true
	w.sql = r.statementOfWork(b, w)
	return r.send(ctx, w)
}

// forcedNotCommitted reports whether the table's history, read by byTag (why), proves that
// no attempt of w committed: every attempt carried a tag, the warehouse took tags, and the
// history reaches back to the first attempt's base without a commit carrying one of them.
func (r *runner) forcedNotCommitted(w work, why string) bool {
	if !r.tagging || len(w.tags) == 0 || strings.Contains(why, "no longer reaches") {
		return false
	}
	for _, t := range w.tags {
		if t == "" {
			return false
		}
	}
	return strings.HasPrefix(why, "no commit after version")
}

// send writes the intent, runs the statement (retrying transaction conflicts on the same
// batch), writes the result and classifies the batch.
func (r *runner) send(ctx context.Context, w work) error {
	backoff := r.o.Backoff
	for {
		base, err := r.base(ctx)
		if err != nil {
			return fmt.Errorf("batch %d: %w (%v); nothing was sent: re-run reload once DESCRIBE HISTORY works", w.n, ErrNoBase, err)
		}
		if err := r.checkStaged(ctx, w); err != nil {
			return err
		}
		if sqlstmt.Forced(w.sql) && !r.tagging {
			// A forced load is not idempotent: only a tagged statement on a held session
			// (never run again by the driver on another connection) can be settled.
			return fmt.Errorf("batch %d: not sent: a redo read from the fallback folder loads with COPY INTO's force, "+
				"which needs commit tags the warehouse does not take; stage the files (--stage-to) to load them through fresh paths", w.n)
		}
		w.attempts++
		tag := r.tag(w, w.attempts)
		started := r.o.Now().UTC()
		if err := r.w.Append(ctx, journal.Record{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: w.n, Files: w.files,
			ExpectedRows: w.expected, SQL: w.sql, Started: started, BaseVersion: &base, Tag: tag}}); err != nil {
			return err
		}
		if w.firstBase == nil {
			b := base
			w.firstBase = &b
		}
		w.tags = append(w.tags, tag)
		r.rep.Statements++
		res, err := r.load(ctx, w.sql, tag)
		if err == nil {
			n, ok := inserted(res)
			if !ok {
				_ = r.result(context.WithoutCancel(ctx), w.n, nil, "the statement returned no row count")
				r.rep.addOpen(w, "no row count")
				return fmt.Errorf("batch %d: COPY INTO returned no row count (columns %v): outcome unknown, re-run to settle it", w.n, res.Columns)
			}
			if err := r.w.Append(ctx, journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: w.n, Inserted: &n,
				QueryID: res.QueryID, Ended: r.o.Now().UTC()}}); err != nil {
				return err
			}
			in := &journal.Intent{BaseVersion: &base, Tag: tag}
			return r.classify(ctx, w, n, in)
		}
		se := databricks.Classify(err)
		var ns *NotSentError
		switch {
		case errors.As(err, &ns) && ctx.Err() == nil:
			// The tag could not be set: the statement was never sent.
			if err := r.result(ctx, w.n, nil, "not sent: "+se.Error()); err != nil {
				return err
			}
			if err := r.outcome(ctx, w, journal.BatchFailed, "not sent: the commit tag could not be set: "+se.Error(), nil, nil, ""); err != nil {
				return err
			}
			return fmt.Errorf("batch %d: not sent: %w", w.n, err)
		case ctx.Err() != nil || se.Class == databricks.ClassCanceled:
			_ = r.result(context.WithoutCancel(ctx), w.n, nil, "interrupted: the statement was cancelled; outcome unknown until the next run settles it")
			r.rep.addOpen(w, "interrupted")
			return fmt.Errorf("batch %d: %w", w.n, ErrInterrupted)
		case databricks.IsLocationOverlap(err) && databricks.RefusedBeforeCommit(err):
			_ = r.result(ctx, w.n, nil, se.Error())
			_ = r.outcome(ctx, w, journal.BatchFailed, "LOCATION_OVERLAP: nothing was read", nil, nil, "")
			return fmt.Errorf("batch %d: %w", w.n, ErrLocationOverlap)
		case isConflict(se) && databricks.RefusedBeforeCommit(err) && w.attempts < r.o.MaxAttempts:
			if err := r.result(ctx, w.n, nil, se.Error()); err != nil {
				return err
			}
			r.log.Warn("transaction conflict; retrying the same batch", "batch", w.n, "attempt", w.attempts, "wait", backoff)
			if err := sleep(ctx, backoff); err != nil {
				r.rep.addOpen(w, "interrupted while waiting to retry")
				return fmt.Errorf("batch %d: %w", w.n, ErrInterrupted)
			}
			backoff *= 2
			w.answerless = true // a conflict commits nothing; an earlier unanswered attempt may have
			continue
		case databricks.RefusedBeforeCommit(err):
			// The warehouse refused the statement while it ran, with a class that commits
			// nothing.
			if err := r.result(ctx, w.n, nil, se.Error()); err != nil {
				return err
			}
			if err := r.outcome(ctx, w, journal.BatchFailed, se.Error(), nil, nil, ""); err != nil {
				return err
			}
			return fmt.Errorf("batch %d: %w", w.n, err)
		default:
			// No answer, or an error that does not prove nothing committed (a lost
			// connection, an internal or post-commit error, a failure while the result was
			// read): the statement may have committed.
			_ = r.result(context.WithoutCancel(ctx), w.n, nil, se.Error())
			r.rep.addOpen(w, "the statement may have committed: "+se.Error())
			return fmt.Errorf("batch %d: outcome unknown (the statement may have committed), re-run reload to settle it: %w", w.n, err)
		}
	}
}

// base returns the version a statement starts from: the newest version read after the last
// statement, else a fresh read (retried; an error stops the run before the intent).
func (r *runner) base(ctx context.Context) (int64, error) {
	if r.fresh != nil {
		v := *r.fresh
		r.fresh = nil
		return v, nil
	}
	return r.hist.latest(ctx)
}

// classify decides a batch from the rows its latest statement inserted (in carries that
// statement's base and tag).
func (r *runner) classify(ctx context.Context, w work, n int64, in *journal.Intent) error {
	switch {
	case n == w.expected && n > 0:
		v, why := r.pin(ctx, w, n, in)
		reason := "its answer matches the files' footers"
		if why != "" {
			reason += "; " + why
		}
		return r.outcome(ctx, w, journal.BatchVerified, reason, v, &n, journal.EvidenceAnswer)
	case n == w.expected:
		return r.outcome(ctx, w, journal.BatchVerified, "the files hold no rows", nil, &n, journal.EvidenceAnswer)
	case n == 0:
		// COPY INTO skipped the files: they were loaded before, by an earlier send of this
		// batch (whose answer was lost), or by someone else through the same path.
		if s, why, err := r.byTag(ctx, w); err != nil {
			return err
		} else if s != nil {
			c := s.Commit
			rows, _ := c.OutputRows()
			if s.Mismatch {
				return r.mismatch(ctx, w, rows, fmt.Sprintf("version %d carries the batch's tag and wrote %d rows, the files hold %d", c.Version, rows, w.expected))
			}
			v := c.Version
			return r.outcome(ctx, w, journal.BatchVerified, "0 rows now; an earlier send committed: "+why, &v, &rows, journal.EvidenceTag)
		}
		if !w.answerless {
			return r.outcome(ctx, w, journal.BatchUnknown, "0 rows inserted for files no journal record shows loading: "+
				"they may have been loaded outside zbrecover, or never read (a folder the warehouse did not list); never verified", nil, &n, "")
		}
		s, why, err := r.unique(ctx, w)
		if err != nil {
			return err
		}
		if s != nil {
			v := s.Commit.Version
			rows, _ := s.Commit.OutputRows()
			if s.Evidence == journal.EvidenceTag {
				return r.outcome(ctx, w, journal.BatchVerified, "0 rows on the second send; an earlier send committed: "+why, &v, &rows, journal.EvidenceTag)
			}
			return r.outcome(ctx, w, journal.BatchVerified, "0 rows on the second send; an earlier send committed: "+why+
				" (weaker evidence: no commit tag; cleanup needs verify --key for it)", &v, &rows, journal.EvidenceHistory)
		}
		return r.outcome(ctx, w, journal.BatchUnknown, "0 rows on the second send, and the table's history does not prove which commit loaded the files ("+why+")", nil, &n, "")
	default:
		return r.mismatch(ctx, w, n, fmt.Sprintf("inserted %d rows, the files hold %d", n, w.expected))
	}
}

func (r *runner) mismatch(ctx context.Context, w work, n int64, reason string) error {
	if err := r.outcome(ctx, w, journal.BatchMismatch, reason, nil, &n, ""); err != nil {
		return err
	}
	return fmt.Errorf("batch %d: %w: %s", w.n, ErrMismatch, reason)
}

// properties reads the table's properties (SHOW TBLPROPERTIES); nil when they cannot be read.
func (r *runner) properties(ctx context.Context) map[string]string {
	res, err := r.d.Warehouse.QueryAll(ctx, sqlstmt.Properties(r.p.tgt.Name))
	if err != nil {
		r.log.Debug("could not read the table's properties", "error", err)
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

// deletionVectors is the table property of Delta's deletion vectors.
const deletionVectors = "delta.enableDeletionVectors"

func orNone(v string, ok bool) string {
	if !ok {
		return "unset"
	}
	return v
}

func (r *runner) result(ctx context.Context, n int, inserted *int64, errText string) error {
	return r.w.Append(ctx, journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: n, Inserted: inserted, Ended: r.o.Now().UTC(), Err: errText}})
}

func (r *runner) outcome(ctx context.Context, w work, s journal.BatchStatus, reason string, version, inserted *int64, ev journal.Evidence) error {
	if err := r.w.Append(ctx, journal.Record{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: w.n, Status: s, Reason: reason, Version: version, Evidence: ev}}); err != nil {
		return err
	}
	r.rep.add(BatchReport{Batch: w.n, Group: w.group, Folder: w.folder, Files: len(w.files), Expected: w.expected,
		Inserted: inserted, Status: s, Reason: reason, Version: version, Evidence: ev, Attempts: w.attempts})
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
	if r.holdsClaim && rep.Statements == 0 {
		r.release(ctx)
	}
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
		st, err := journal.ReadState(context.WithoutCancel(ctx), r.d.Journal, r.p.tgt.TableID, r.w.Run())
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
		if st, err := journal.ReadState(context.WithoutCancel(ctx), r.d.Journal, r.p.tgt.TableID, r.w.Run()); err == nil {
			rep.Status = string(st.Status)
			rows := st.Rows()
			rep.Rows, rep.Inserted, rep.AnsweredRows, rep.HistoryRows = rows.Expected, rows.Loaded, rows.Answered, rows.FromHistory
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
			w := "the load changed a table property: " + c
			if strings.HasPrefix(c, deletionVectors+" = true") {
				w += fmt.Sprintf(": COPY INTO enabled deletion vectors (the workspace's setting for writes to a table that does not set "+
					"the property), a table feature every reader of %s must now support; to write without them from now on: "+
					"ALTER TABLE %s SET TBLPROPERTIES ('%s' = false)", r.p.tgt.TableName(), r.p.tgt.Name.SQL(), deletionVectors)
			}
			rep.Warnings = append(rep.Warnings, w)
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

// loadedRows is the rows a batch settled by an earlier process put in the table (its answer,
// or its footer rows when verified from the table's history), nil when none is known.
func loadedRows(b *journal.BatchState) *int64 {
	if n, how := b.LoadedRows(); how != "" {
		return &n
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
