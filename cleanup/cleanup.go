package cleanup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
)

// ErrNotCleanable is returned (wrapped) for a run whose loading is not settled: a batch
// planned, in flight, loaded but not classified, failed, or with a row-count mismatch. Only
// a run whose batches are all verified (or settled unknown) has files cleanup may delete.
var ErrNotCleanable = errors.New("the run is not verified")

// Candidate is one file cleanup may delete: a file of a verified batch, with the version that
// was verified.
type Candidate struct {
	journal.File
	Batch    int
	Verified time.Time // when its batch was classified verified
	// Previous is the status an earlier process recorded for it (skipped or failed, or ""
	// when it was never tried, or tried without a recorded result).
	Previous journal.DeleteStatus
	// Evidence is what the re-check found proving its batch's rows in the table.
	Evidence journal.Evidence
	// Changed is set by Survey when the listing shows another version than the verified
	// one: the conditional delete will keep it. The delete is still sent (and journaled):
	// the store, not the listing, decides.
	Changed string
}

// Cond is the precondition of the target's delete: the verified version.
func (t Candidate) Cond() storage.Precondition { return t.File.Precondition() }

// Left is a file cleanup leaves in place, and why.
type Left struct {
	Key    string `json:"key"`
	Size   int64  `json:"size"`
	Batch  int    `json:"batch,omitempty"`
	Reason string `json:"reason"`
}

// Cleanable reports whether st's files may be deleted: every batch is verified or unknown
// (a settled classification: may or may not be loaded, never deleted), and at least one is
// verified. The error wraps ErrNotCleanable and says what to do.
func Cleanable(st *journal.State) error {
	verified := 0
	var pending, mismatch []string
	for _, b := range st.Batches {
		switch b.Status {
		case journal.BatchVerified:
			verified++
		case journal.BatchUnknown:
		case journal.BatchUndone:
			// Taken back by zbrecover undo: its files are kept (NewPlan says why).
		case journal.BatchUndoing:
			return fmt.Errorf("run %s: %w: batch %d is being undone (run %s); run zbrecover undo again to finish it, then clean up",
				st.Run, ErrNotCleanable, b.Batch, st.Status)
		case journal.BatchUndoMismatch:
			return fmt.Errorf("run %s: %w: batch %d's undo deleted another number of rows than it loaded (run %s); nothing is deleted: zbrecover history shows the DELETE",
				st.Run, ErrNotCleanable, b.Batch, st.Status)
		case journal.BatchMismatch:
			mismatch = append(mismatch, fmt.Sprint(b.Batch))
		default:
			pending = append(pending, fmt.Sprintf("%d (%s)", b.Batch, b.Status))
		}
	}
	switch {
	case len(mismatch) > 0:
		return fmt.Errorf("run %s: %w: batch %s loaded another number of rows than its files hold (run %s); nothing is deleted: check the table with zbrecover verify",
			st.Run, ErrNotCleanable, strings.Join(mismatch, ", "), st.Status)
	case len(pending) > 0:
		return fmt.Errorf("run %s: %w: batch %s not settled (run %s); run zbrecover reload again to finish it, then clean up",
			st.Run, ErrNotCleanable, strings.Join(pending, ", "), st.Status)
	case st.MergePending():
		return fmt.Errorf("run %s: %w: the load by key's MERGE has not committed (its rows are in the staging table %s only); "+
			"run zbrecover reload again to send it, then clean up", st.Run, ErrNotCleanable, st.Merge.Staging)
	case verified == 0:
		return fmt.Errorf("run %s: %w: no batch is verified (run %s); nothing may be deleted", st.Run, ErrNotCleanable, st.Status)
	}
	return nil
}

// ErrOutside is returned (wrapped) for a run whose journal names a file outside the
// fallback folder (an edited, truncated or foreign journal): nothing of it is deleted.
var ErrOutside = fallback.ErrOutside

// Confined checks that every file of st, and every staged copy it records, is one cleanup
// may ever touch: a fallback file under prefix (the operator's --prefix, never the
// journal's) with no hidden, "..", or _delta_log element; a staged copy with a relative key
// in a staging location outside the table's root. The error wraps ErrOutside.
func Confined(st *journal.State, prefix, root string) error {
	if _, err := fallback.CheckPrefix(prefix); err != nil {
		return err
	}
	for _, f := range st.Files() {
		if err := fallback.CheckKey(prefix, f.Key); err != nil {
			return fmt.Errorf("run %s names %w; nothing of it is deleted", st.Run, err)
		}
	}
	for _, sg := range st.Staging {
		if overlaps(sg.Location, root) {
			return fmt.Errorf("run %s records staged copies at %s, which is not outside the table's root %s: %w; nothing of it is deleted", st.Run, sg.Location, root, ErrOutside)
		}
		for _, c := range sg.Files {
			if err := fallback.CheckRel(c.Key); err != nil {
				return fmt.Errorf("run %s records a staged copy %w: %w; nothing of it is deleted", st.Run, err, ErrOutside)
			}
		}
	}
	return nil
}

// overlaps reports whether two places, as the journal and the target name them, are the same
// or one lies inside the other (storage.Location.Contains, whatever the spelling). A place
// that does not parse is compared as written, less its query, by whole "/" elements.
func overlaps(a, b string) bool {
	la, errA := storage.Parse(a)
	lb, errB := storage.Parse(b)
	if errA == nil && errB == nil {
		return la.Contains(lb) || lb.Contains(la)
	}
	ka, kb := rawKey(a), rawKey(b)
	return strings.HasPrefix(ka, kb) || strings.HasPrefix(kb, ka)
}

// rawKey is a place that does not parse, as overlaps compares it: no query, one trailing "/".
func rawKey(s string) string {
	if i := strings.IndexByte(s, '?'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, "/") + "/"
}

// Candidates returns the files of st's verified batches that are not yet deleted or gone, in
// the journal's order, or an error wrapping ErrNotCleanable when the run is not verified.
func Candidates(st *journal.State) ([]Candidate, error) {
	if err := Cleanable(st); err != nil {
		return nil, err
	}
	var out []Candidate
	for _, f := range st.VerifiedFiles() {
		if f.Delete == journal.Deleted || f.Delete == journal.DeleteGone {
			continue
		}
		b := st.Batch(f.Batch)
		out = append(out, Candidate{File: f.File, Batch: f.Batch, Verified: b.OutcomeTime, Previous: f.Delete})
	}
	return out, nil
}

// PlanOptions restrict a plan.
type PlanOptions struct {
	// MinAge keeps the files of batches verified less than MinAge before Now.
	MinAge time.Duration
	Now    time.Time // zero: time.Now()
	// Checks is the re-check of the run against the table (Checker.Check): only the files of
	// batches it proves in the table (OK, with evidence) are deleted; the others are kept
	// with its note. Without it nothing is deleted.
	Checks *journal.Verification
	// VerifyFailed are the batches the run's latest verify failed, with why (VerifyFailed):
	// their files are kept whatever the re-check says, until a verify passes for them.
	VerifyFailed map[int]string
}

// Plan is what a cleanup of one run will do.
type Plan struct {
	Run     string            `json:"run"`
	TableID string            `json:"table_id"`
	Table   string            `json:"table,omitempty"`
	Root    string            `json:"root"`
	Status  journal.RunStatus `json:"status"` // before cleanup
	Delete  []Candidate       `json:"-"`
	Files   int               `json:"files"` // len(Delete)
	Bytes   int64             `json:"bytes"` // of Delete
	// Removed counts the verified files an earlier process deleted or found gone.
	Removed int `json:"already_removed"`
	// Kept are files of the run that stay: unknown batches, batches younger than MinAge.
	Kept []Left `json:"kept"`
	// Untracked are objects under the listed prefix that the run does not hold (Survey).
	Untracked []Left `json:"untracked"`
	// Changed counts the files to delete that the listing shows changed (Survey).
	Changed int `json:"changed"`
	// Review counts the files of verified batches kept because the re-check did not prove
	// their rows in the table (Kept says why and what would).
	Review int `json:"needs_review"`
	// CheckFailed are the verified batches the re-check found may no longer have their rows
	// in the table (a commit since removed rows, their commit is not what the journal says,
	// or they were not re-checked); ReviewBatches those whose rows it found in the table by
	// weaker evidence only (verify --key would prove them). The files of both are kept.
	CheckFailed   []int `json:"check_failed_batches"`
	ReviewBatches []int `json:"review_batches"`
	// VerifyFailed are the verified batches the run's latest verify failed: their files are
	// kept until a verify passes for them.
	VerifyFailed []int `json:"verify_failed_batches"`
	// Staged counts the staged copies the run still holds (deleted with its originals).
	Staged int `json:"staged_copies"`
}

// NewPlan returns the plan for st.
func NewPlan(st *journal.State, o PlanOptions) (*Plan, error) {
	ts, err := Candidates(st)
	if err != nil {
		return nil, err
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	p := &Plan{Run: st.Run, TableID: st.TableID, Table: st.Table, Root: st.Root, Status: st.Status, Kept: []Left{}, Untracked: []Left{},
		CheckFailed: []int{}, ReviewBatches: []int{}, VerifyFailed: []int{}}
	note := func(list *[]int, batch int) {
		if !slices.Contains(*list, batch) {
			*list = append(*list, batch)
		}
	}
	checks := map[int]journal.Check{}
	if o.Checks != nil {
		for _, c := range o.Checks.Checks {
			checks[c.Batch] = c
		}
	}
	for _, t := range ts {
		c, checked := checks[t.Batch]
		why, verifyFailed := o.VerifyFailed[t.Batch]
		switch {
		case verifyFailed:
			if !strings.Contains(why, "until zbrecover verify") {
				why += "; kept until zbrecover verify passes for it"
			}
			p.Kept = append(p.Kept, Left{Key: t.Key, Size: t.Size, Batch: t.Batch, Reason: why})
			p.Review++
			note(&p.VerifyFailed, t.Batch)
			continue
		case !checked:
			p.Kept = append(p.Kept, Left{Key: t.Key, Size: t.Size, Batch: t.Batch,
				Reason: fmt.Sprintf("batch %d was not re-checked against the table: kept", t.Batch)})
			p.Review++
			note(&p.CheckFailed, t.Batch)
			continue
		case !c.OK:
			p.Kept = append(p.Kept, Left{Key: t.Key, Size: t.Size, Batch: t.Batch,
				Reason: fmt.Sprintf("batch %d does not check: %s; kept (zbrecover verify shows it)", t.Batch, c.Note)})
			p.Review++
			note(&p.CheckFailed, t.Batch)
			continue
		case c.Evidence == "":
			p.Kept = append(p.Kept, Left{Key: t.Key, Size: t.Size, Batch: t.Batch,
				Reason: fmt.Sprintf("batch %d needs review: %s", t.Batch, c.Note)})
			p.Review++
			note(&p.ReviewBatches, t.Batch)
			continue
		}
		t.Evidence = c.Evidence
		if age := now.Sub(t.Verified); o.MinAge > 0 && age < o.MinAge {
			p.Kept = append(p.Kept, Left{Key: t.Key, Size: t.Size, Batch: t.Batch,
				Reason: fmt.Sprintf("verified less than --min-age %s ago", textfmt.FormatDuration(o.MinAge))})
			continue
		}
		p.Delete = append(p.Delete, t)
		p.Bytes += t.Size
	}
	p.Files = len(p.Delete)
	for _, f := range st.VerifiedFiles() {
		if f.Delete == journal.Deleted || f.Delete == journal.DeleteGone {
			p.Removed++
		}
	}
	for _, f := range st.Files() {
		if f.Status == journal.BatchUndone {
			// Its rows were taken back: the file is kept until a later load verifies it.
			p.Kept = append(p.Kept, Left{Key: f.Key, Size: f.Size, Batch: f.Batch,
				Reason: fmt.Sprintf("batch %d was undone: its rows are not in the table; the file is kept for a reload to load it again, and cleaned up only once that load is verified", f.Batch)})
			continue
		}
		if f.Status != journal.BatchVerified {
			p.Kept = append(p.Kept, Left{Key: f.Key, Size: f.Size, Batch: f.Batch,
				Reason: fmt.Sprintf("batch %d is %s: its rows may not be in the table, so it is kept (zbrecover verify --key COL settles it when every key of its files is in the table)", f.Batch, f.Status)})
		}
	}
	return p, nil
}

// Survey lists prefix (relative to b's root, as journal keys are) and records in
// p.Untracked every object the run does not hold: files that arrived after verification,
// files of other runs, files reload left behind. Cleanup never touches them; Survey only
// reports them. Hidden objects (a path element starting with "_" or "." below prefix) are
// not reported either.
//
// Survey also marks the files to delete whose listed version is not the verified one
// (Candidate.Changed).
func (p *Plan) Survey(ctx context.Context, b storage.Backend, st *journal.State, prefix string) error {
	idx := map[string]int{}
	for i, t := range p.Delete {
		idx[t.Key] = i
	}
	return b.List(ctx, prefix, func(o storage.ObjectInfo) error {
		if fallback.HiddenPath(strings.TrimPrefix(o.Key, prefix)) {
			return nil
		}
		if i, ok := idx[o.Key]; ok {
			if t := &p.Delete[i]; !t.Cond().Matches(o) && t.Changed == "" {
				t.Changed = "changed since it was verified (now " + version(o) + "; verified " + version(t.File.Precondition()) + "): the delete will keep it"
				p.Changed++
			}
			return nil
		}
		if _, ok := st.File(o.Key); ok {
			return nil
		}
		p.Untracked = append(p.Untracked, Left{Key: o.Key, Size: o.Size, Reason: "not in this run's journal: never touched"})
		return nil
	})
}

// version describes the identity a precondition checks, for messages.
func version[T storage.ObjectInfo | storage.Precondition](v T) string {
	var size int64
	var etag string
	var gen int64
	var mod time.Time
	switch x := any(v).(type) {
	case storage.ObjectInfo:
		size, etag, gen, mod = x.Size, x.ETag, x.Generation, x.ModTime
	case storage.Precondition:
		size, etag, gen, mod = x.Size, x.ETag, x.Generation, x.ModTime
	}
	s := fmt.Sprintf("%d bytes", size)
	switch {
	case gen != 0:
		s += fmt.Sprintf(", generation %d", gen)
	case etag != "":
		s += ", ETag " + etag
	case !mod.IsZero():
		s += ", modified " + mod.UTC().Format(time.RFC3339Nano)
	}
	return s
}

// Journal is where RunPlan records what it does: a *journal.Writer continuing the run.
type Journal interface {
	Append(ctx context.Context, r journal.Record) error
}

// Options configure Execute and RunPlan.
type Options struct {
	// Concurrency is the most delete (and archive copy) requests in flight (default 16).
	Concurrency int
	// Limiter adapts the number of delete requests in flight to throttling; nil: one is
	// made with Concurrency as its maximum (batch requests start at 4).
	Limiter *storage.Adaptive
	// Archive, when set, receives a verified copy of every file (same key) before the
	// original is deleted. Execute refuses an archive that is not a second place
	// (CheckArchive, with OtherTables: the roots of the other tables Unity Catalog knows).
	Archive     storage.Backend
	OtherTables []string
	// Prefix is the fallback folder every deleted key must lie in (fallback.CheckKey);
	// default fallback.Prefix. A plan naming any other key is refused whole.
	Prefix string
	// ChunkSize is the number of files per delete_intent record (default: 4 batch requests
	// on a store that deletes in batches, else 1000).
	ChunkSize int
	// Log receives per-chunk progress (with the current concurrency) at info level.
	Log *slog.Logger
	// Progress, when set, is told the files done so far (a delete answered, or a file kept
	// because its archive copy failed) and the total: at the start, as deletes are answered
	// and after each chunk, the last time with done equal to the total unless the run
	// stopped.
	Progress func(done, total int)
	// ArchiveProgress, when set with Archive, is told the files whose archive copy was made
	// and checked (or found already there), or failed (the file is then kept), and the
	// total, after each file.
	ArchiveProgress func(done, total int)
	// StagedProgress, when set, is told the staged copies deleted (or found gone, or failed)
	// and the total of copies to delete, at the start and as deletes are answered.
	StagedProgress func(done, total int)
}

// FileResult is what happened to one file.
type FileResult struct {
	Key     string               `json:"key"`
	Size    int64                `json:"size"`
	Batch   int                  `json:"batch"`
	Status  journal.DeleteStatus `json:"status"`
	Reason  string               `json:"reason,omitempty"`
	Archive string               `json:"archive,omitempty"`
}

// Report is what Execute (or RunPlan) did.
type Report struct {
	*Plan
	Archive      string                `json:"archive,omitempty"`
	Results      []FileResult          `json:"results"`
	Deleted      int                   `json:"deleted"`
	DeletedBytes int64                 `json:"deleted_bytes"`
	Gone         int                   `json:"gone"`
	Skipped      int                   `json:"skipped"`
	Failed       int                   `json:"failed"`
	NotDone      int                   `json:"not_done"` // interrupted before a result came back
	After        journal.RunStatus     `json:"status_after"`
	Limiter      storage.AdaptiveStats `json:"concurrency"`
	Problems     []FileResult          `json:"problems"` // skipped and failed, for the listing
	// StagedCopies are the staged copies deleted (or not) per staging location.
	StagedCopies []StagedResult `json:"staged_copies"`
	verifiedSize int
}

// Partial reports whether some file was skipped, failed or left undone.
func (r *Report) Partial() bool { return r.Skipped+r.Failed+r.NotDone > 0 }

// AccessDenied returns the failed results whose reason reads as a refusal by the store
// (403, access denied): the identity in use may not delete.
func (r *Report) AccessDenied() []FileResult {
	var out []FileResult
	for _, f := range r.Results {
		if f.Status == journal.DeleteFailed && IsAccessDenied(f.Reason) {
			out = append(out, f)
		}
	}
	return out
}

// IsAccessDenied reports whether an error text reads as the store refusing the caller: an
// object store's 403 or access denied, or a file system's EPERM ("operation not permitted",
// an immutable or append-only file or folder), EACCES ("permission denied") or EROFS.
func IsAccessDenied(s string) bool {
	l := strings.ToLower(s)
	for _, w := range []string{"access denied", "accessdenied", "access refused", "forbidden", "403", "authorizationpermissionmismatch", "authorizationfailure", "permission",
		"operation not permitted", "read-only file system"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// RunPlan deletes the files of p, a plan made (and perhaps surveyed) by NewPlan for st,
// recording every step in j. It returns the report and an error only when it could not go on:
// the journal refused a record (nothing more is deleted) or ctx ended (the chunk in flight is
// recorded first). Skipped and failed files are in the report (Partial), not an error.
func RunPlan(ctx context.Context, b storage.Backend, st *journal.State, p *Plan, j Journal, o Options) (*Report, error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	prefix := o.Prefix
	if prefix == "" {
		prefix = fallback.Prefix
	}
	for _, t := range p.Delete {
		if err := fallback.CheckKey(prefix, t.Key); err != nil {
			return &Report{Plan: p, Results: []FileResult{}, Problems: []FileResult{}, StagedCopies: []StagedResult{}},
				fmt.Errorf("run %s: the plan names %w; nothing was deleted", p.Run, err)
		}
	}
	conc := o.Concurrency
	if conc < 1 {
		conc = 16
	}
	bd, batched := storage.AsBatchDeleter(b)
	lim := o.Limiter
	if lim == nil {
		start := conc
		if batched {
			start = min(conc, 4)
		}
		lim = storage.NewAdaptive(storage.AdaptiveOptions{Start: start, Max: conc})
	}
	chunk := o.ChunkSize
	if chunk < 1 {
		chunk = 1000
		if batched && bd.MaxBatchDelete() > 0 {
			chunk = 4 * bd.MaxBatchDelete()
		}
	}
	r := &Report{Plan: p, Results: []FileResult{}, Problems: []FileResult{}, StagedCopies: []StagedResult{}, verifiedSize: len(st.VerifiedFiles())}
	if o.Archive != nil {
		r.Archive = redact.String(o.Archive.Location())
	}
	defer func() { r.Limiter = lim.Stats() }()
	done := 0
	var (
		archiveMu sync.Mutex // the archive copies end on their goroutines: their count is told in order
		archived  int
	)
	onArchived := func() {
		if o.ArchiveProgress != nil {
			archiveMu.Lock()
			archived++
			o.ArchiveProgress(archived, len(p.Delete))
			archiveMu.Unlock()
		}
	}
	if o.Archive != nil && o.ArchiveProgress != nil {
		o.ArchiveProgress(0, len(p.Delete))
	}
	if o.Progress != nil {
		o.Progress(0, len(p.Delete))
	}
	for lo := 0; lo < len(p.Delete); lo += chunk {
		ts := p.Delete[lo:min(lo+chunk, len(p.Delete))]
		if err := ctx.Err(); err != nil {
			r.NotDone += len(p.Delete) - lo
			r.finish()
			return r, err
		}
		files := make([]journal.File, len(ts))
		for i, t := range ts {
			files[i] = t.File
		}
		if err := j.Append(ctx, journal.Record{Kind: journal.KindDeleteIntent, Deletion: &journal.Deletion{Files: files}}); err != nil {
			r.NotDone += len(p.Delete) - lo
			r.finish()
			return r, fmt.Errorf("journal the delete intent (nothing of this chunk was deleted): %w", err)
		}
		base := done
		sent := 0
		onSent := func(n int) {
			if o.Progress != nil {
				sent += n
				o.Progress(base+sent, len(p.Delete))
			}
		}
		res := deleteChunk(ctx, b, ts, lim, conc, o.Archive, onArchived, onSent)
		var recs []journal.DeletedResult
		for i, fr := range res {
			if fr.Status == "" {
				r.NotDone++
				continue
			}
			recs = append(recs, journal.DeletedResult{Key: fr.Key, Status: fr.Status, Reason: fr.Reason, Archive: fr.Archive})
			r.add(res[i])
		}
		if len(recs) > 0 {
			// Recorded even after an interrupt: the deletes happened.
			jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			err := j.Append(jctx, journal.Record{Kind: journal.KindDeleted, Deletion: &journal.Deletion{Results: recs}})
			cancel()
			if err != nil {
				r.NotDone += len(p.Delete) - lo - len(ts)
				r.finish()
				return r, fmt.Errorf("journal the deletions (run cleanup again: it re-checks these files): %w", err)
			}
		}
		done += len(ts)
		log.Info("cleanup chunk", "files", len(ts), "done", done, "of", len(p.Delete), "concurrency", lim.Limit())
		if o.Progress != nil {
			o.Progress(done, len(p.Delete))
		}
		if err := ctx.Err(); err != nil {
			r.NotDone += len(p.Delete) - done
			r.finish()
			return r, err
		}
	}
	r.finish()
	if err := j.Append(ctx, journal.Record{Kind: journal.KindEnd, End: &journal.End{State: r.After}}); err != nil {
		return r, fmt.Errorf("journal the end of cleanup: %w", err)
	}
	return r, nil
}

func (r *Report) add(f FileResult) {
	r.Results = append(r.Results, f)
	switch f.Status {
	case journal.Deleted:
		r.Deleted++
		r.DeletedBytes += f.Size
	case journal.DeleteGone:
		r.Gone++
	case journal.DeleteSkip:
		r.Skipped++
		r.Problems = append(r.Problems, f)
	case journal.DeleteFailed:
		r.Failed++
		r.Problems = append(r.Problems, f)
	}
}

// finish sets the run's status after this process, as the journal will replay it.
func (r *Report) finish() {
	removed := r.Removed + r.Deleted + r.Gone
	switch {
	case removed > 0 && removed == r.verifiedSize:
		r.After = journal.RunCleaned
	case removed > 0:
		r.After = journal.RunPartiallyCleaned
	default:
		r.After = r.Status
	}
	// Files are deleted concurrently: the report lists them by key, the same each time.
	sort.SliceStable(r.Results, func(i, j int) bool { return r.Results[i].Key < r.Results[j].Key })
	sort.SliceStable(r.Problems, func(i, j int) bool { return r.Problems[i].Key < r.Problems[j].Key })
}

// deleteChunk archives (when asked) and deletes ts. A result with no status was interrupted
// before its outcome was known.
func deleteChunk(ctx context.Context, b storage.Backend, ts []Candidate, lim *storage.Adaptive, conc int, archive storage.Backend, onArchived func(), onSent func(keys int)) []FileResult {
	out := make([]FileResult, len(ts))
	for i, t := range ts {
		out[i] = FileResult{Key: t.Key, Size: t.Size, Batch: t.Batch}
	}
	send := make([]int, 0, len(ts)) // indexes of the files to delete
	if archive == nil {
		for i := range ts {
			send = append(send, i)
		}
	} else {
		ok := make([]bool, len(ts))
		var g errgroup.Group
		g.SetLimit(conc)
		for i := range ts {
			g.Go(func() error {
				ok[i] = archiveOne(ctx, b, archive, ts[i], &out[i])
				if ctx.Err() == nil {
					onArchived()
				}
				return nil
			})
		}
		_ = g.Wait()
		for i := range ts {
			if ok[i] {
				send = append(send, i)
			}
		}
	}
	reqs := make([]storage.DeleteRequest, len(send))
	for j, i := range send {
		reqs[j] = storage.DeleteRequest{Key: ts[i].Key, Cond: ts[i].Cond()}
	}
	res := storage.DeleteAll(ctx, b, reqs, storage.DeleteAllOptions{Concurrency: conc, Limiter: lim, Done: onSent})
	for j, i := range send {
		st, why := classify(res[j].Err)
		out[i].Status, out[i].Reason = st, why
	}
	return out
}

// classify maps a conditional delete's error to the journal's status; "" when the outcome
// is unknown (interrupted).
func classify(err error) (journal.DeleteStatus, string) {
	switch {
	case err == nil:
		return journal.Deleted, ""
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "", ""
	case errors.Is(err, storage.ErrPreconditionFailed):
		return journal.DeleteSkip, "changed since it was verified (another ETag, generation, size or time): kept"
	case errors.Is(err, storage.ErrNotExist):
		return journal.DeleteGone, "already absent"
	}
	why := redact.String(err.Error())
	if storage.IsRetryable(err) {
		why += " (the store kept refusing: run cleanup again later)"
	}
	return journal.DeleteFailed, why
}
