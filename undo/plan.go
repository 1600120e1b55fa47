package undo

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/delta"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/sqlstmt"
	"github.com/zbrecover/zbrecover/tableref"
)

// Errors Prepare and Execute return (wrapped); cmd maps them to exit codes with errors.Is.
var (
	// ErrNothing: the journal holds no run of the table on this root with a verified batch.
	ErrNothing = errors.New("no run with a verified batch to undo")
	// ErrRefused: no batch asked for can be undone (each says why); nothing was deleted.
	ErrRefused = errors.New("undo refused")
	// ErrMismatch: a DELETE deleted another number of rows than its batch loaded.
	ErrMismatch = errors.New("a DELETE deleted another number of rows than its batch loaded")
	// ErrUnsettled: a DELETE's commit could not be found in the table's history yet; a
	// re-run settles it.
	ErrUnsettled = errors.New("a DELETE's outcome is not settled")
	// ErrInterrupted: the run was interrupted; a re-run settles the DELETE in flight.
	ErrInterrupted = errors.New("interrupted")
)

// MaxRanges is the most row ID ranges, or data files, one DELETE names by default.
const MaxRanges = 1000

// Deps are what an undo works with: a reload's. Session opens the session on which a DELETE
// and its commit tag's SET run (nil sends DELETEs untagged); without Identity an untagged
// DELETE's commit is never taken from the history.
type Deps = reload.Deps

// Request says what to undo.
type Request struct {
	// Run is the run to undo; "" takes the newest run of the table on this root with a
	// verified batch (or an undo to finish).
	Run string
	// Batches are the batch numbers to undo; none means every verified batch of the run.
	Batches []int
	// Evidence, when set, is the only evidence used (row_ids, files or keys).
	Evidence journal.UndoEvidence
	// IncludeModified confirms deleting rows an UPDATE or MERGE changed since the load.
	IncludeModified bool
	// MaxRanges bounds the row ID ranges or data files one DELETE names (default MaxRanges).
	MaxRanges int
	// Header is this process's run record.
	Header journal.Header
	// BreakLock is asked about a lock another process holds (--break-lock).
	BreakLock func(*journal.LockedError) bool
	// HistoryRetries and Backoff are how a failed history read is retried (3, 1s).
	HistoryRetries int
	Backoff        time.Duration
	// Now is the clock (tests).
	Now func() time.Time
}

func (r *Request) defaults() {
	if r.MaxRanges <= 0 {
		r.MaxRanges = MaxRanges
	}
	if r.HistoryRetries <= 0 {
		r.HistoryRetries = 3
	}
	if r.Backoff <= 0 {
		r.Backoff = time.Second
	}
	if r.Now == nil {
		r.Now = time.Now
	}
}

// Option is one kind of evidence as the plan weighed it for a batch.
type Option struct {
	Evidence journal.UndoEvidence `json:"evidence"`
	Usable   bool                 `json:"usable"`
	// Why says what the evidence rests on, or why it does not apply (and what would have
	// made it possible).
	Why string `json:"why"`
}

// BatchPlan is one batch's undo as planned.
type BatchPlan struct {
	Batch int `json:"batch"`
	Files int `json:"files"`
	// Rows is what the batch loaded: what its DELETE must delete.
	Rows int64 `json:"rows"`
	// LoadVersion is the batch's load commit, when the journal records it.
	LoadVersion *int64 `json:"load_version,omitempty"`
	// Status is the batch's status in the journal (verified, or undoing: an undo to finish).
	Status journal.BatchStatus `json:"status"`
	// Options are the kinds of evidence weighed, strongest first; Evidence the one chosen
	// ("" when the batch is refused).
	Options  []Option             `json:"evidence_considered"`
	Evidence journal.UndoEvidence `json:"evidence,omitempty"`
	// Ranges are the row ID ranges (row IDs), Paths the data files (files), KeysFile the
	// keys file (keys) the condition names.
	Ranges   []sqlstmt.RowIDRange `json:"row_id_ranges,omitempty"`
	Paths    []string             `json:"data_files,omitempty"`
	KeysFile string               `json:"keys_file,omitempty"`
	// CountSQL counts what DeleteSQL's condition matches; Matched and Modified are the
	// counts the plan read.
	CountSQL  string `json:"count_sql,omitempty"`
	DeleteSQL string `json:"delete_sql,omitempty"`
	Matched   int64  `json:"matched"`
	Modified  int64  `json:"modified"`
	// Refused says why the batch is not undone ("" when it is planned).
	Refused string `json:"refused,omitempty"`
	// Resume is set for a batch whose undo a process left unfinished: its DELETE may have
	// run, and is settled from the history before anything is sent.
	Resume bool `json:"resume,omitempty"`
	// Archived is set when cleanup deleted the batch's files and an archive holds them: the
	// redo reloads them from there.
	Archived bool `json:"archived,omitempty"`
}

// Plan is what an undo will do, read without changing anything.
type Plan struct {
	Run     string            `json:"run"`
	TableID string            `json:"table_id"`
	Table   string            `json:"table"`
	Root    string            `json:"root"`
	Status  journal.RunStatus `json:"run_status"`
	// RowTracking says whether row tracking is enabled on the table (delta.enableRowTracking).
	RowTracking bool        `json:"row_tracking"`
	Batches     []BatchPlan `json:"batches"`
	// Rows is the rows the planned DELETEs delete; Undo the batches planned, Refused those
	// refused.
	Rows    int64 `json:"rows"`
	Undo    int   `json:"batches_to_undo"`
	Refused int   `json:"batches_refused"`
	// Archives are the archive locations the redo reloads deleted files from.
	Archives []string `json:"archives,omitempty"`
	// Redo says how the rows come back: the next reload loads the files again.
	Redo string `json:"redo"`
	// Guarantee is what undo guarantees, per evidence.
	Guarantee string `json:"guarantee"`
}

// Guarantee is what every undo plan and report states.
const Guarantee = "Undo deletes only the rows its evidence names, after counting them: by row IDs, exactly the rows the batch's commit " +
	"inserted (stable through UPDATE, MERGE and OPTIMIZE; rows changed since are counted and deleted only when confirmed); by data files, " +
	"exactly the rows of the files the commit added, none of which a later commit removed; by keys, the rows with the batch's keys, " +
	"only when no other row has them when counted. Every DELETE's commit is checked in the table's history for the batch's row count. " +
	"Zerobus rows are never named: its appends are other commits, other files, other row IDs."

// Prepared is an undo ready to run: the table's lock held, the run and the plan.
type Prepared struct {
	Plan  *Plan
	State *journal.State

	d      Deps
	req    Request
	tgt    *tableref.Ref
	lock   journal.Lock
	closed bool
}

// Close releases the table's lock. A second Close does nothing.
func (p *Prepared) Close() error {
	if p == nil || p.closed || p.lock == nil {
		return nil
	}
	p.closed = true
	return p.lock.Close()
}

// Prepare takes the table's lock, picks the run, and plans each batch's undo: the evidence,
// the statements, and the counts read now (read-only: SELECT count(*) and the table's log).
// Nothing is written to the journal or the table.
func Prepare(ctx context.Context, d Deps, tgt *tableref.Ref, req Request) (*Prepared, error) {
	req.defaults()
	if !tgt.HasName {
		return nil, errors.New("undo needs the table's name")
	}
	lock, err := d.Journal.Lock(ctx, tgt.TableID, journal.LockOptions{Owner: journal.Holder{Command: req.Header.Command}, Break: req.BreakLock})
	if err != nil {
		return nil, err
	}
	p := &Prepared{d: d, req: req, tgt: tgt, lock: lock}
	fail := func(err error) (*Prepared, error) {
		_ = p.Close()
		return nil, err
	}
	st, err := pickRun(ctx, d.Journal, tgt, req.Run)
	if err != nil {
		return fail(err)
	}
	p.State = st
	if st.Wedge != nil {
		return fail(fmt.Errorf("run %s was written by two processes at once (%s): undo refuses it", st.Run, st.Wedge.Message(st.Run)))
	}
	if st.Merge != nil {
		return fail(fmt.Errorf("%w: run %s loaded by key (reload --dedupe-key): its batches' rows came in one MERGE with the rows of every other batch, "+
			"so no commit names one batch's rows; a plain reload's batches can be undone", ErrRefused, st.Run))
	}
	batches, err := chosen(st, req.Batches)
	if err != nil {
		return fail(err)
	}
	plan := &Plan{Run: st.Run, TableID: st.TableID, Table: st.Table, Root: st.Root, Status: st.Status, Batches: []BatchPlan{}, Guarantee: Guarantee}
	snap, snapErr := delta.Read(ctx, tgt.Root)
	if snapErr == nil {
		plan.RowTracking = strings.EqualFold(snap.Configuration["delta.enableRowTracking"], "true") &&
			!strings.EqualFold(snap.Configuration["delta.rowTrackingSuspended"], "true")
	}
	pl := &planner{p: p, snap: snap, snapErr: snapErr, commits: map[int]*delta.Commit{}, commitWhy: map[int]string{}}
	pl.readCommits(ctx, batches)
	archives := map[string]bool{}
	for _, b := range batches {
		bp := pl.batch(ctx, b)
		if bp.Archived {
			for _, f := range st.Files() {
				if f.Batch == b.Batch && f.Archive != "" {
					archives[archiveRoot(f.Archive, f.Key)] = true
				}
			}
		}
		plan.Batches = append(plan.Batches, bp)
		if bp.Refused != "" {
			plan.Refused++
			continue
		}
		plan.Undo++
		plan.Rows += bp.Rows
	}
	for a := range archives {
		plan.Archives = append(plan.Archives, a)
	}
	sort.Strings(plan.Archives)
	plan.Redo = redoNote(plan)
	p.Plan = plan
	return p, nil
}

// redoNote says how the undone rows come back.
func redoNote(p *Plan) string {
	s := "the files of the undone batches become loadable again: the next zbrecover reload of the table loads each of them once more " +
		"(staged, through fresh staged paths; read from the fallback folder, with COPY INTO's force on exactly those FILES, which the undo proved gone)"
	if len(p.Archives) > 0 {
		s += "; cleanup deleted some of them: their rows will be reloaded from the archive at " + strings.Join(p.Archives, ", ") +
			" (zbrecover reload TABLE --root " + p.Archives[0] + " --stage-to VOLUME reads the archived copies, which keep the files' keys)"
	}
	return s
}

// archiveRoot is the archive location of a file archived at url under its key.
func archiveRoot(url, key string) string {
	return strings.TrimSuffix(strings.TrimSuffix(url, key), "/")
}

// pickRun returns the run asked for, or the newest run of the table on the target's root
// with a verified batch or an undo to finish.
func pickRun(ctx context.Context, s journal.Store, tgt *tableref.Ref, run string) (*journal.State, error) {
	if run != "" {
		st, err := journal.ReadState(ctx, s, tgt.TableID, run)
		if err != nil {
			return nil, fmt.Errorf("--run %s: %w", run, err)
		}
		if !journal.SameRoot(st.Root, tgt.Display()) {
			return nil, fmt.Errorf("run %s worked on %s, not on %s", run, st.Root, tgt.Display())
		}
		return st, nil
	}
	sums, err := journal.Runs(ctx, s, tgt.TableID)
	if err != nil {
		return nil, err
	}
	for _, sum := range sums {
		if sum.Problem != "" || !journal.SameRoot(sum.Root, tgt.Display()) {
			continue
		}
		switch sum.Status {
		case journal.RunPlanned, journal.RunUndone:
			continue
		}
		st, err := journal.ReadState(ctx, s, tgt.TableID, sum.Run)
		if err != nil {
			return nil, err
		}
		for _, b := range st.Batches {
			if b.Status == journal.BatchVerified || b.Status == journal.BatchUndoing {
				return st, nil
			}
		}
	}
	return nil, ErrNothing
}

// chosen returns the batches to undo: those asked for (each must be verified, or undoing),
// or every verified or undoing batch of the run.
func chosen(st *journal.State, nums []int) ([]*journal.BatchState, error) {
	if len(nums) == 0 {
		var out []*journal.BatchState
		for _, b := range st.Batches {
			if b.Status == journal.BatchVerified || b.Status == journal.BatchUndoing {
				out = append(out, b)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%w: run %s has no verified batch (it is %s)", ErrNothing, st.Run, st.Status)
		}
		return out, nil
	}
	var out []*journal.BatchState
	for _, n := range nums {
		b := st.Batch(n)
		switch {
		case b == nil:
			return nil, fmt.Errorf("run %s has no batch %d", st.Run, n)
		case b.Status == journal.BatchUndone:
			return nil, fmt.Errorf("run %s batch %d is undone already", st.Run, n)
		case b.Status != journal.BatchVerified && b.Status != journal.BatchUndoing:
			return nil, fmt.Errorf("%w: run %s batch %d is %s: only a verified batch is undone (its rows are known to be in the table)", ErrRefused, st.Run, n, b.Status)
		}
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Batch < out[j].Batch })
	return out, nil
}

// planner plans batches against the table's log.
type planner struct {
	p       *Prepared
	snap    *delta.Snapshot
	snapErr error
	// commits are the batches' load commits as the log holds them (by batch), commitWhy why
	// one is not; removed the later commits that removed their files (by add path), read
	// once for every batch, removedErr why that could not be read, newest the newest
	// version read.
	commits    map[int]*delta.Commit
	commitWhy  map[int]string
	removed    map[string]delta.Removal
	removedErr error
	newest     int64
	// deleted counts, by batch, its files cleanup deleted (or found gone) and those of them
	// an archive holds.
	deleted map[int][2]int
}

// readCommits reads the load commit of each batch from the table's log, then, in one pass,
// the commits since the oldest of them that could remove files: those the table's history
// shows are not blind appends (Zerobus' writes and loads are, and never remove a file).
func (pl *planner) readCommits(ctx context.Context, batches []*journal.BatchState) {
	pl.deleted = map[int][2]int{}
	for _, f := range pl.p.State.Files() {
		if f.Delete == journal.Deleted || f.Delete == journal.DeleteGone {
			c := pl.deleted[f.Batch]
			c[0]++
			if f.Archive != "" {
				c[1]++
			}
			pl.deleted[f.Batch] = c
		}
	}
	oldest := int64(-1)
	var paths []string
	for _, b := range batches {
		if b.Status != journal.BatchVerified {
			continue
		}
		v := loadVersion(b)
		switch c, err := pl.readCommit(ctx, v); {
		case v == nil:
			pl.commitWhy[b.Batch] = "the journal records no commit version for its load (zbrecover verify records it when the history shows it)"
		case err != nil:
			pl.commitWhy[b.Batch] = fmt.Sprintf("its load commit (version %d) cannot be read from the table's log: %v", *v, err)
		default:
			if why := pl.isLoadOf(c, b, loadedRows(b)); why != "" {
				pl.commitWhy[b.Batch] = why
				continue
			}
			pl.commits[b.Batch] = c
			if oldest < 0 || c.Version < oldest {
				oldest = c.Version
			}
			for _, a := range c.Adds {
				if a.DataChange {
					paths = append(paths, a.Path)
				}
			}
		}
	}
	if oldest < 0 {
		return
	}
	cs, latest, whole, err := reload.NewHistory(pl.p.d.Warehouse, pl.p.tgt.Name, pl.p.req.HistoryRetries, pl.p.req.Backoff).Since(ctx, oldest)
	switch {
	case err != nil:
		pl.removedErr = fmt.Errorf("the table's history cannot be read: %w", err)
		return
	case !whole:
		pl.removedErr = fmt.Errorf("the table's history no longer reaches version %d", oldest)
		return
	}
	pl.newest = latest
	var versions []int64
	for _, c := range cs {
		if !c.BlindAppend {
			versions = append(versions, c.Version)
		}
	}
	rm, err := delta.RemovedIn(ctx, pl.p.tgt.Root, versions, paths)
	if err != nil {
		pl.removedErr = err
		return
	}
	pl.removed = map[string]delta.Removal{}
	for _, r := range rm {
		pl.removed[r.Path] = r
	}
}

func (pl *planner) readCommit(ctx context.Context, v *int64) (*delta.Commit, error) {
	if v == nil {
		return nil, nil
	}
	return delta.ReadCommit(ctx, pl.p.tgt.Root, *v)
}

// loadedRows is what batch b put in the table: its answer, else its files' rows.
func loadedRows(b *journal.BatchState) int64 {
	n, _ := b.LoadedRows()
	return n
}

// loadVersion is the version of b's load commit, when recorded.
func loadVersion(b *journal.BatchState) *int64 {
	if b.Outcome != nil && b.Outcome.Version != nil {
		return b.Outcome.Version
	}
	if b.Result != nil && b.Result.Version != nil {
		return b.Result.Version
	}
	return nil
}

func (pl *planner) batch(ctx context.Context, b *journal.BatchState) BatchPlan {
	bp := BatchPlan{Batch: b.Batch, Files: len(b.Files), Rows: loadedRows(b), LoadVersion: loadVersion(b), Status: b.Status, Options: []Option{}}
	// Files cleanup deleted: the redo needs them, from an archive.
	deleted, archived := pl.deleted[b.Batch][0], pl.deleted[b.Batch][1]
	if deleted > archived {
		bp.Refused = fmt.Sprintf("cleanup deleted %d of its files and no archive holds %d of them: their rows, once undone, could not be loaded again "+
			"(cleanup --archive-to keeps a copy of each file it deletes)", deleted, deleted-archived)
		return bp
	}
	bp.Archived = deleted > 0
	if b.Status == journal.BatchUndoing {
		// An undo a process left unfinished: its DELETE is settled first, then sent again
		// with the evidence it chose.
		in := b.Undo.Intent
		bp.Resume, bp.Evidence, bp.DeleteSQL = true, in.Evidence, in.SQL
		bp.CountSQL = countFor(pl.p.tgt, in)
		bp.Options = append(bp.Options, Option{Evidence: in.Evidence, Usable: true, Why: "chosen by the unfinished undo (its DELETE may have run: settled from the table's history first)"})
		bp.Matched, bp.Modified = in.Matched, in.Modified
		return bp
	}
	commit, commitWhy := pl.commits[b.Batch], pl.commitWhy[b.Batch]
	for _, ev := range []journal.UndoEvidence{journal.UndoByRowIDs, journal.UndoByFiles, journal.UndoByKeys} {
		opt := pl.option(ctx, ev, b, &bp, commit, commitWhy)
		bp.Options = append(bp.Options, opt)
		want := pl.p.req.Evidence
		if bp.Evidence == "" && opt.Usable && (want == "" || want == ev) {
			bp.Evidence = ev
		}
	}
	if bp.Evidence == "" {
		var why []string
		for _, o := range bp.Options {
			why = append(why, string(o.Evidence)+": "+o.Why)
		}
		if w := pl.p.req.Evidence; w != "" {
			bp.Refused = fmt.Sprintf("the evidence asked for (%s) does not apply: %s", w, strings.Join(why, "; "))
		} else {
			bp.Refused = "no evidence names exactly its rows: " + strings.Join(why, "; ") +
				"; what would have made it possible: row tracking enabled on the table before the load (zbrecover doctor explains the trade-off), " +
				"or its load's files left as they were, or reload --key (a keys file of its records)"
		}
		return bp
	}
	pl.fill(ctx, &bp, b)
	return bp
}

// isLoadOf checks that c is b's load: a COPY INTO whose added rows are the batch's, carrying
// one of its tags when the batch recorded any.
func (pl *planner) isLoadOf(c *delta.Commit, b *journal.BatchState, rows int64) string {
	if c.Info == nil || !strings.EqualFold(c.Info.Operation, "COPY INTO") {
		op := "no commitInfo"
		if c.Info != nil {
			op = c.Info.Operation
		}
		return fmt.Sprintf("version %d, recorded as its load, is %s, not a COPY INTO", c.Version, op)
	}
	if tagged := slices.ContainsFunc(b.Tags, func(t string) bool { return t != "" }); tagged && c.Info.UserMetadata != "" && !slices.Contains(b.Tags, c.Info.UserMetadata) {
		return fmt.Sprintf("version %d carries another statement's tag (%s)", c.Version, c.Info.UserMetadata)
	}
	var n int64
	for _, a := range c.Adds {
		if a.NumRecords < 0 {
			return fmt.Sprintf("version %d adds %s without a row count (stats numRecords)", c.Version, a.Path)
		}
		if a.DataChange {
			n += a.NumRecords
		}
	}
	if n != rows {
		return fmt.Sprintf("version %d added %d rows, the batch loaded %d", c.Version, n, rows)
	}
	return ""
}

// option weighs one kind of evidence for b; when usable it sets bp's condition parts.
func (pl *planner) option(ctx context.Context, ev journal.UndoEvidence, b *journal.BatchState, bp *BatchPlan, c *delta.Commit, commitWhy string) Option {
	o := Option{Evidence: ev}
	req := pl.p.req
	switch ev {
	case journal.UndoByRowIDs:
		switch {
		case pl.snapErr != nil:
			o.Why = "the table's properties cannot be read from its log: " + pl.snapErr.Error()
		case !strings.EqualFold(pl.snap.Configuration["delta.enableRowTracking"], "true"):
			o.Why = "row tracking is not enabled on the table (delta.enableRowTracking); zbrecover never enables it (enabling fails concurrent writers, Zerobus included, for its duration)"
		case strings.EqualFold(pl.snap.Configuration["delta.rowTrackingSuspended"], "true"):
			o.Why = "row tracking is suspended on the table (delta.rowTrackingSuspended): stable row IDs may not have been kept"
		case c == nil:
			o.Why = commitWhy
		default:
			var rs []sqlstmt.RowIDRange
			for _, a := range c.Adds {
				if !a.DataChange || a.NumRecords == 0 {
					continue
				}
				if a.BaseRowID == nil {
					o.Why = fmt.Sprintf("its load commit (version %d) assigned no row IDs (row tracking was enabled after the load)", c.Version)
					return o
				}
				rs = append(rs, sqlstmt.RowIDRange{First: *a.BaseRowID, Last: *a.BaseRowID + a.NumRecords - 1})
			}
			rs = mergeRanges(rs)
			if len(rs) > req.MaxRanges {
				o.Why = fmt.Sprintf("its rows are %d separate row ID ranges, more than one statement names (%d)", len(rs), req.MaxRanges)
				return o
			}
			o.Usable = true
			o.Why = fmt.Sprintf("version %d assigned its rows the stable row IDs %s", c.Version, describeRanges(rs))
			if bp.Evidence == "" && (req.Evidence == "" || req.Evidence == ev) {
				bp.Ranges = rs
			}
		}
	case journal.UndoByFiles:
		if c == nil {
			o.Why = commitWhy
			return o
		}
		var paths []string
		for _, a := range c.Adds {
			if a.DataChange {
				paths = append(paths, a.Path)
			}
		}
		if len(paths) > req.MaxRanges {
			o.Why = fmt.Sprintf("its rows are in %d data files, more than one statement names (%d)", len(paths), req.MaxRanges)
			return o
		}
		var removed []delta.Removal
		for _, p := range paths {
			if r, ok := pl.removed[p]; ok {
				removed = append(removed, r)
			}
		}
		switch {
		case pl.removedErr != nil:
			o.Why = "the commits after its load cannot all be read (" + pl.removedErr.Error() + "): whether its files are still live is unknown"
		case len(removed) > 0:
			r := removed[0]
			which := "the data file its load added"
			if len(paths) > 1 {
				which = fmt.Sprintf("one of the %d data files its load added", len(paths))
			}
			o.Why = fmt.Sprintf("version %d (%s) removed %s, %s: its rows now share files with other rows", r.Version, r.Operation, r.Path, which)
		default:
			o.Usable = true
			o.Why = fmt.Sprintf("version %d added %s holding only its rows, and no commit up to version %d removed one", c.Version, textfmt.Plural(len(paths), "data file"), pl.newest)
			if bp.Evidence == "" && (req.Evidence == "" || req.Evidence == ev) {
				for _, p := range paths {
					bp.Paths = append(bp.Paths, pl.fileURL(p))
				}
			}
		}
	case journal.UndoByKeys:
		kf, ok := keysFileOf(pl.p.State, b.Batch)
		if !ok {
			o.Why = "the run has no keys file of its records (reload --key writes one)"
			return o
		}
		url := reload.KeysFileURL(kf)
		res, err := pl.p.d.Warehouse.QueryAll(ctx, sqlstmt.KeysOfBatch(url, b.Batch, len(kf.Columns)))
		if err != nil {
			o.Why = "its keys file cannot be read: " + err.Error()
			return o
		}
		records, nulls := twoCounts(res)
		switch {
		case records != bp.Rows:
			o.Why = fmt.Sprintf("the keys file holds %d of its records, the batch loaded %d rows", records, bp.Rows)
		case nulls > 0:
			o.Why = fmt.Sprintf("%d of its records have a NULL key, which names no row", nulls)
		default:
			o.Usable = true
			o.Why = fmt.Sprintf("the keys (%s) of its %d records, in %s", strings.Join(kf.Columns, ", "), records, url)
			if bp.Evidence == "" && (req.Evidence == "" || req.Evidence == ev) {
				bp.KeysFile = url
			}
		}
	}
	return o
}

// fill renders the batch's statements and counts what the condition matches now; a count
// that is not the batch's rows refuses the batch.
func (pl *planner) fill(ctx context.Context, bp *BatchPlan, b *journal.BatchState) {
	cond := pl.condition(bp, b)
	var lv *int64
	if bp.Evidence == journal.UndoByRowIDs {
		lv = bp.LoadVersion
	}
	bp.CountSQL = sqlstmt.UndoCount(pl.p.tgt.Name, cond, lv)
	bp.DeleteSQL = sqlstmt.UndoDelete(pl.p.tgt.Name, cond)
	res, err := pl.p.d.Warehouse.QueryAll(ctx, bp.CountSQL)
	if err != nil {
		bp.Refused = "counting what its condition matches failed: " + err.Error()
		return
	}
	bp.Matched, bp.Modified = twoCounts(res)
	if why := pl.p.countRefusal(*bp); why != "" {
		bp.Refused = why
	}
}

// countRefusal says why counts refuse a batch's DELETE ("" when they allow it).
func (p *Prepared) countRefusal(bp BatchPlan) string {
	switch {
	case bp.Matched == bp.Rows && bp.Modified > 0 && !p.req.IncludeModified:
		return fmt.Sprintf("%d of its %d rows were changed since the load (UPDATE or MERGE: their row commit version is not the load's); "+
			"undo would delete the changed rows too: confirm with --include-modified", bp.Modified, bp.Rows)
	case bp.Matched == bp.Rows:
		return ""
	case bp.Evidence == journal.UndoByKeys && bp.Matched > bp.Rows:
		return fmt.Sprintf("%d other rows of the table have keys of its records (Zerobus published some of those records too, at-least-once, "+
			"or another load holds them): a DELETE by key would take them too", bp.Matched-bp.Rows)
	case bp.Matched > bp.Rows:
		return fmt.Sprintf("its condition matches %d rows, the batch loaded %d", bp.Matched, bp.Rows)
	}
	return fmt.Sprintf("only %d of its %d rows are in the table as loaded (%d were deleted or changed since): undo deletes a batch's rows only when all of them are there",
		bp.Matched, bp.Rows, bp.Rows-bp.Matched)
}

// condition is the batch's DELETE condition for its evidence.
func (pl *planner) condition(bp *BatchPlan, b *journal.BatchState) string {
	switch bp.Evidence {
	case journal.UndoByRowIDs:
		return sqlstmt.RowIDCondition(bp.Ranges)
	case journal.UndoByFiles:
		return sqlstmt.FileCondition(bp.Paths)
	}
	kf, _ := keysFileOf(pl.p.State, b.Batch)
	return sqlstmt.KeyCondition(kf.Columns, bp.KeysFile, b.Batch)
}

// countFor is the count statement of an unfinished undo's intent.
func countFor(tgt *tableref.Ref, in *journal.Undo) string {
	cond, ok := strings.CutPrefix(in.SQL, "DELETE FROM "+tgt.Name.SQL()+" WHERE ")
	if !ok {
		return ""
	}
	var lv *int64
	if in.Evidence == journal.UndoByRowIDs {
		lv = in.LoadVersion
	}
	return sqlstmt.UndoCount(tgt.Name, cond, lv)
}

// fileURL is a data file's full path, as _metadata.file_path names it: the table's root and
// the add action's (URI-encoded) path, decoded. A spelling the warehouse does not share
// matches nothing, which the count before the DELETE catches (0 of the batch's rows).
func (pl *planner) fileURL(p string) string {
	if d, err := url.PathUnescape(p); err == nil {
		p = d
	}
	if strings.Contains(p, "://") {
		return p
	}
	return strings.TrimSuffix(pl.p.tgt.Loc.URL(), "/") + "/" + p
}

// keysFileOf returns the run's latest keys file that holds batch n's records.
func keysFileOf(st *journal.State, n int) (journal.KeysFile, bool) {
	for i := len(st.KeysFiles) - 1; i >= 0; i-- {
		if slices.Contains(st.KeysFiles[i].Batches, n) {
			return st.KeysFiles[i], true
		}
	}
	return journal.KeysFile{}, false
}

// mergeRanges sorts row ID ranges and merges those that overlap or touch.
func mergeRanges(rs []sqlstmt.RowIDRange) []sqlstmt.RowIDRange {
	sort.Slice(rs, func(i, j int) bool { return rs[i].First < rs[j].First })
	var out []sqlstmt.RowIDRange
	for _, r := range rs {
		if n := len(out); n > 0 && r.First <= out[n-1].Last+1 {
			out[n-1].Last = max(out[n-1].Last, r.Last)
			continue
		}
		out = append(out, r)
	}
	return out
}

func describeRanges(rs []sqlstmt.RowIDRange) string {
	var parts []string
	for i, r := range rs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more ranges", len(rs)-3))
			break
		}
		parts = append(parts, fmt.Sprintf("%d–%d", r.First, r.Last))
	}
	return strings.Join(parts, ", ")
}

// twoCounts reads the two numbers of a one-row count (-1 for one that is not a number).
func twoCounts(res *databricks.Result) (int64, int64) {
	get := func(i int) int64 {
		if res == nil || len(res.Rows) == 0 || len(res.Rows[0]) <= i {
			return -1
		}
		n, ok := reload.AsInt(res.Rows[0][i])
		if !ok {
			return -1
		}
		return n
	}
	return get(0), get(1)
}

// ParseEvidence reads an --evidence value: row-ids (or row_ids), files or keys; "" for the
// strongest available.
func ParseEvidence(s string) (journal.UndoEvidence, error) {
	switch strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "-", "_")) {
	case "":
		return "", nil
	case "row_ids", "rowids":
		return journal.UndoByRowIDs, nil
	case "files":
		return journal.UndoByFiles, nil
	case "keys":
		return journal.UndoByKeys, nil
	}
	return "", fmt.Errorf("evidence %q: want row-ids, files or keys", s)
}
