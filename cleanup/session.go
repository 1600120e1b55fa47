package cleanup

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
)

// Checker re-checks a run against the table now, reading the table, not the journal: for
// every batch whether its rows are provably still there (reload.Checker implements it).
type Checker interface {
	Check(ctx context.Context, st *journal.State) (*journal.Verification, error)
}

// Config is what a cleanup works with.
type Config struct {
	Journal journal.Store
	// TableID keys the journal; Root is the table's root as shown (runs on another root are
	// not this cleanup's); Backend is rooted at it (fallback keys are relative to it).
	TableID string
	Root    string
	Backend storage.Backend
	// Prefix is the fallback folder the operator names (--prefix): every key cleanup
	// deletes must lie in it, whatever a journal says.
	Prefix string
	// Checker re-checks the run against the table before anything is deleted. Required.
	Checker Checker
	// OpenStaged opens a staging location as the journal names it (a /Volumes/… path or a
	// URL), for deleting staged copies; nil when the run staged nothing.
	OpenStaged func(ctx context.Context, location string) (storage.Backend, error)
	// Header is this process's run record.
	Header journal.Header
	// BreakLock is asked about a lock another process holds (--break-lock).
	BreakLock func(*journal.LockedError) bool
	Log       *slog.Logger
}

// Request says which run to clean and what to leave.
type Request struct {
	// Run is the run to clean; "" takes the newest run of the table on Root that has files
	// to delete (verified, partially cleaned, or cleaned with staged copies left).
	Run    string
	MinAge time.Duration
	Now    time.Time
}

// ErrNothing is returned by Prepare when the journal holds no run of the table on this root
// to clean up.
var ErrNothing = errors.New("no verified run of the table on this root in the journal")

// ErrStagedLeft is returned (wrapped) by Execute when staged copies it meant to delete were
// refused or failed: they are kept, the journal says which are gone, and a re-run deletes the
// rest.
var ErrStagedLeft = errors.New("staged copies left")

// ErrVerifyFailed is returned (wrapped, with ErrNotCleanable) when the run's latest verify
// failed without naming a batch it failed: cleanup deletes nothing of the run until a verify
// passes. A verify that failed some batches keeps only those (Plan.VerifyFailed).
var ErrVerifyFailed = errors.New("the run's latest verification failed")

// Prepared is a cleanup ready to run: the table's lock held, the run re-read under it, its
// batches re-checked against the table, the plan made. Close releases the lock.
type Prepared struct {
	State *journal.State
	Plan  *Plan
	// Checks is the re-check (recorded by Execute before the first delete).
	Checks *journal.Verification
	cfg    Config
	lock   journal.Lock
}

// Close releases the table's lock; a second Close does nothing.
func (p *Prepared) Close() error {
	if p == nil || p.lock == nil {
		return nil
	}
	l := p.lock
	p.lock = nil
	return l.Close()
}

// Prepare takes the table's lock, picks the run, checks that every key its journal names is
// one cleanup may touch (Confined), re-checks every batch against the table with cfg.Checker
// and plans: only files of batches the re-check proves in the table, and the run's latest
// verify did not fail, are to be deleted, each at its verified version; the others are kept
// with the reason and what would settle them. A run whose latest verify failed without naming
// a batch is refused whole (ErrVerifyFailed).
func Prepare(ctx context.Context, cfg Config, req Request) (*Prepared, error) {
	if cfg.Checker == nil {
		return nil, errors.New("cleanup: no way to check the table (a warehouse is needed)")
	}
	lock, err := cfg.Journal.Lock(ctx, cfg.TableID, journal.LockOptions{Owner: journal.Holder{Command: cfg.Header.Command}, Break: cfg.BreakLock})
	if err != nil {
		return nil, err
	}
	p := &Prepared{cfg: cfg, lock: lock}
	fail := func(err error) (*Prepared, error) {
		_ = p.Close()
		return nil, err
	}
	st, err := Select(ctx, cfg.Journal, cfg.TableID, cfg.Root, req.Run)
	if err != nil {
		return fail(err)
	}
	if err := Confined(st, cfg.Prefix, cfg.Root); err != nil {
		return fail(err)
	}
	failed, whole := VerifyFailed(st)
	if whole {
		return fail(fmt.Errorf("run %s: %w (%w at %s): nothing is deleted; zbrecover verify says why, and a passing verify lets cleanup go on",
			st.Run, ErrNotCleanable, ErrVerifyFailed, st.LastVerifyTime.UTC().Format(time.RFC3339)))
	}
	checks, err := cfg.Checker.Check(ctx, st)
	if err != nil {
		return fail(fmt.Errorf("re-check run %s against the table before deleting (nothing was deleted): %w", st.Run, err))
	}
	plan, err := NewPlan(st, PlanOptions{MinAge: req.MinAge, Now: req.Now, Checks: checks, VerifyFailed: failed})
	if err != nil {
		return fail(err)
	}
	plan.Staged = len(stagedLeft(st, plan, checks))
	p.State, p.Plan, p.Checks = st, plan, checks
	return p, nil
}

// VerifyFailed returns the batches the run's latest verify failed, each with the verify's
// note: cleanup keeps their files until a later verify passes for them. whole is set when
// that verify failed without failing any batch (the run is then refused whole).
func VerifyFailed(st *journal.State) (failed map[int]string, whole bool) {
	v := st.LastVerify
	if v == nil || v.Passed() {
		return nil, false
	}
	at := st.LastVerifyTime.UTC().Format(time.RFC3339)
	failed = map[int]string{}
	for _, c := range v.Checks {
		if !c.OK {
			failed[c.Batch] = fmt.Sprintf("the run's latest verification (%s) failed batch %d: %s", at, c.Batch, c.Note)
		}
	}
	if v.Keys != nil {
		for _, n := range v.Keys.Failed {
			if _, ok := failed[n]; !ok {
				kb, _ := v.Keys.Batch(n)
				failed[n] = fmt.Sprintf("the run's latest verification (%s) failed batch %d by key: %s", at, n, kb.Note)
			}
		}
	}
	return failed, len(failed) == 0
}

// Select returns the run to clean: run, else the newest run of the table on root that has
// something left to delete. A run that cannot be replayed is an error; ErrNothing when no
// run qualifies; a run that is not settled wraps ErrNotCleanable.
func Select(ctx context.Context, store journal.Store, tableID, root, run string) (*journal.State, error) {
	if run != "" {
		st, err := journal.ReadState(ctx, store, tableID, run)
		if err != nil {
			return nil, fmt.Errorf("--run %s: %w", run, err)
		}
		if !journal.SameRoot(st.Root, root) {
			return nil, fmt.Errorf("run %s worked on %s, not on %s", run, st.Root, redact.String(root))
		}
		if err := Cleanable(st); err != nil {
			return nil, err
		}
		return st, nil
	}
	sums, err := journal.Runs(ctx, store, tableID)
	if err != nil {
		return nil, err
	}
	var refused error
	for _, s := range sums {
		if s.Problem != "" {
			return nil, fmt.Errorf("run %s of table %s cannot be replayed: %s", s.Run, tableID, s.Problem)
		}
		if !journal.SameRoot(s.Root, root) || (s.Status == journal.RunCleaned && s.StagedLeft == 0) || s.Status == journal.RunUndone {
			continue // a cleaned run with no staged copy left, or an undone one, has nothing to clean: not replayed
		}
		st, err := journal.ReadState(ctx, store, tableID, s.Run)
		if err != nil {
			return nil, err
		}
		if st.Status == journal.RunCleaned && !stagedPending(st) {
			continue
		}
		if err := Cleanable(st); err != nil {
			if refused == nil {
				refused = err
			}
			continue
		}
		return st, nil
	}
	if refused != nil {
		return nil, refused
	}
	return nil, ErrNothing
}

// stagedPending reports whether verified files of st still have staged copies.
func stagedPending(st *journal.State) bool {
	for _, f := range st.VerifiedFiles() {
		if f.Staged != "" && !f.StagedRemoved {
			return true
		}
	}
	return false
}

// stagedLeft returns the verified files whose staged copies cleanup deletes now: those with
// a copy left whose batch the re-check proves and the run's latest verify did not fail (their
// original is deleted now or was before).
func stagedLeft(st *journal.State, p *Plan, checks *journal.Verification) []journal.FileState {
	proved := map[int]bool{}
	if checks != nil {
		for _, c := range checks.Checks {
			proved[c.Batch] = c.OK && c.Evidence != ""
		}
	}
	for _, n := range p.VerifyFailed {
		proved[n] = false
	}
	var out []journal.FileState
	for _, f := range st.VerifiedFiles() {
		if f.Staged != "" && !f.StagedRemoved && proved[f.Batch] {
			out = append(out, f)
		}
	}
	return out
}

// Execute records the re-check, deletes the plan's files (archiving each first with
// o.Archive) and then the staged copies of the files whose batches the re-check proves,
// journaling every chunk before and after its deletes. It returns the report; see RunPlan
// for the errors.
func (p *Prepared) Execute(ctx context.Context, o Options) (*Report, error) {
	if p.lock == nil {
		return nil, errors.New("cleanup: the prepared run was closed")
	}
	if o.Archive != nil {
		if err := p.CheckArchive(ctx, o.Archive, o.OtherTables); err != nil {
			return nil, err
		}
	}
	if o.Prefix == "" {
		o.Prefix = p.cfg.Prefix
	}
	w, err := journal.Continue(ctx, p.cfg.Journal, p.State, p.cfg.Header)
	if err != nil {
		return nil, err
	}
	if err := w.Append(ctx, journal.Record{Kind: journal.KindVerification, Verification: p.Checks}); err != nil {
		return nil, err
	}
	rep, err := RunPlan(ctx, p.cfg.Backend, p.State, p.Plan, noEnd{w}, o)
	if err != nil {
		_ = w.Append(context.WithoutCancel(ctx), journal.Record{Kind: journal.KindEnd, End: &journal.End{State: rep.After, Err: err.Error()}})
		return rep, err
	}
	serr := p.removeStaged(ctx, w, rep, o)
	st, rerr := journal.ReadState(context.WithoutCancel(ctx), p.cfg.Journal, p.State.TableID, p.State.Run)
	if rerr == nil {
		rep.After = st.Status
	}
	end := &journal.End{State: rep.After}
	if serr != nil {
		end.Err = serr.Error()
	}
	if err := w.Append(context.WithoutCancel(ctx), journal.Record{Kind: journal.KindEnd, End: end}); err != nil && serr == nil {
		serr = err
	}
	return rep, serr
}

// CheckArchiveLocation refuses an archive location (a URL, or a volume path) that is not a
// second place for the run's files: CheckArchive with the run's root and staging locations.
// It reads nothing: it is checked before anything is opened or written. Errors wrap
// ErrArchiveLocation.
func (p *Prepared) CheckArchiveLocation(loc string, otherTables []string) error {
	return CheckArchive(loc, p.cfg.Root, p.stagingLocations(), otherTables)
}

// CheckArchive refuses an opened archive that is not a second place for the run's files: its
// location as CheckArchiveLocation checks it, and a Delta table under it
// (CheckArchiveHoldsNoTable). Errors wrap ErrArchiveLocation, or are the listing's.
func (p *Prepared) CheckArchive(ctx context.Context, archive storage.Backend, otherTables []string) error {
	if err := p.CheckArchiveLocation(archive.Location(), otherTables); err != nil {
		return err
	}
	return CheckArchiveHoldsNoTable(ctx, archive)
}

// StagingLocations are the staging locations of the run, as the journal names them (a
// /Volumes path or a URL without its query).
func (p *Prepared) StagingLocations() []string { return p.stagingLocations() }

func (p *Prepared) stagingLocations() []string {
	var out []string
	for _, sg := range p.State.Staging {
		out = append(out, sg.Location)
	}
	return out
}

// DryRun sends no delete: it runs the plan against a store that only reports, through line,
// each delete it would send (and journals nothing). A dry run checks no precondition, so the
// files the listing shows changed are left out of the plan. It returns what the plan would
// have deleted.
func (p *Prepared) DryRun(ctx context.Context, o Options, line func(string)) (*Report, error) {
	var keep []Candidate
	for _, t := range p.Plan.Delete {
		if t.Changed == "" {
			keep = append(keep, t)
		}
	}
	p.Plan.Delete = keep
	o.Archive = nil
	if o.Prefix == "" {
		o.Prefix = p.cfg.Prefix
	}
	return RunPlan(ctx, storage.DryRun(p.cfg.Backend, line), p.State, p.Plan, discard{}, o)
}

// discard is a journal that records nothing: a dry run's.
type discard struct{}

func (discard) Append(context.Context, journal.Record) error { return nil }

// Record journals the re-check and the end of this process's work on the run, for a cleanup
// that has nothing to delete (every file kept, or removed earlier): what the table showed is
// in the journal either way.
func (p *Prepared) Record(ctx context.Context) error {
	if p.lock == nil {
		return errors.New("cleanup: the prepared run was closed")
	}
	w, err := journal.Continue(ctx, p.cfg.Journal, p.State, p.cfg.Header)
	if err != nil {
		return err
	}
	if err := w.Append(ctx, journal.Record{Kind: journal.KindVerification, Verification: p.Checks}); err != nil {
		return err
	}
	return w.Append(ctx, journal.Record{Kind: journal.KindEnd, End: &journal.End{State: p.State.Status}})
}

// noEnd is a journal that leaves the end record to Execute.
type noEnd struct{ w *journal.Writer }

func (n noEnd) Append(ctx context.Context, r journal.Record) error {
	if r.Kind == journal.KindEnd {
		return nil
	}
	return n.w.Append(ctx, r)
}

// StagedResult is what cleanup did with the staged copies at one location.
type StagedResult struct {
	Location string   `json:"location"`
	Deleted  int      `json:"deleted"`
	Failed   []string `json:"failed,omitempty"`
}

// removeStaged deletes the staged copies of the files whose batches the re-check proves,
// in journaled chunks (removing, then removed), each with its verified size as
// precondition. Copies of any other batch are kept.
func (p *Prepared) removeStaged(ctx context.Context, w *journal.Writer, rep *Report, o Options) error {
	st, err := journal.ReadState(ctx, p.cfg.Journal, p.State.TableID, p.State.Run)
	if err != nil {
		return err
	}
	left := stagedLeft(st, p.Plan, p.Checks)
	if len(left) == 0 {
		return nil
	}
	if p.cfg.OpenStaged == nil {
		return fmt.Errorf("%d staged copies are left, and this cleanup cannot open their location", len(left))
	}
	byLoc := map[string][]journal.FileState{}
	var order []string
	for _, f := range left {
		if _, ok := byLoc[f.StagedLocation]; !ok {
			order = append(order, f.StagedLocation)
		}
		byLoc[f.StagedLocation] = append(byLoc[f.StagedLocation], f)
	}
	var errs []error
	handled := 0 // copies whose delete was answered, or that cannot be reached
	if o.StagedProgress != nil {
		o.StagedProgress(0, len(left))
	}
	onSent := func(n int) {
		if o.StagedProgress != nil {
			handled += n
			o.StagedProgress(handled, len(left))
		}
	}
	for _, loc := range order {
		files := byLoc[loc]
		b, err := p.cfg.OpenStaged(ctx, loc)
		if err != nil {
			errs = append(errs, fmt.Errorf("staged copies at %s: %w", loc, err))
			onSent(len(files))
			continue
		}
		res := StagedResult{Location: loc}
		for lo := 0; lo < len(files); lo += 1000 {
			chunk := files[lo:min(lo+1000, len(files))]
			staged := make([]journal.Staged, len(chunk))
			reqs := make([]storage.DeleteRequest, len(chunk))
			for i, f := range chunk {
				staged[i] = journal.Staged{Source: f.Key, Key: f.Staged, Size: f.StagedSize}
				reqs[i] = storage.DeleteRequest{Key: f.Staged, Cond: storage.Precondition{Size: f.StagedSize}}
			}
			if err := w.Append(ctx, journal.Record{Kind: journal.KindStaging, Staging: &journal.Staging{Location: loc, Files: staged, Removing: true}}); err != nil {
				return errors.Join(append(errs, err)...)
			}
			// A staging location has its own limit (a volume adapts to the Files API's answers).
			out := storage.DeleteAll(ctx, b, reqs, storage.DeleteAllOptions{Concurrency: max(o.Concurrency, 16), Done: onSent})
			var removed []journal.Staged
			for i, r := range out {
				switch {
				case r.Err == nil, errors.Is(r.Err, storage.ErrNotExist):
					removed = append(removed, staged[i])
				case errors.Is(r.Err, context.Canceled), errors.Is(r.Err, context.DeadlineExceeded):
				default:
					res.Failed = append(res.Failed, fmt.Sprintf("%s: %v", staged[i].Key, redact.Error(r.Err)))
				}
			}
			if len(removed) > 0 {
				if err := w.Append(context.WithoutCancel(ctx), journal.Record{Kind: journal.KindStaging, Staging: &journal.Staging{Location: loc, Files: removed, Removed: true}}); err != nil {
					return errors.Join(append(errs, err)...)
				}
			}
			res.Deleted += len(removed)
			if err := ctx.Err(); err != nil {
				rep.StagedCopies = append(rep.StagedCopies, res)
				return err
			}
		}
		rep.StagedCopies = append(rep.StagedCopies, res)
		if len(res.Failed) > 0 {
			errs = append(errs, fmt.Errorf("%w: %d staged copies at %s were not deleted: %s", ErrStagedLeft, len(res.Failed), loc, strings.Join(res.Failed, "; ")))
		}
	}
	return errors.Join(errs...)
}
