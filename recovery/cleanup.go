package recovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zbrecover/zbrecover/cleanup"
	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/place"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/tableref"
)

// DeleteStorage is cleanup's storage policy: every request counted, retried under one
// adaptive limit (which throttling halves), at most Concurrency in flight.
type DeleteStorage struct {
	// Opener opens a table's storage under this policy.
	Opener      storage.Opener
	Concurrency int
	Limiter     *storage.Adaptive
	// Counters counts the requests of every backend opened.
	Counters *storage.Counters
	log      *slog.Logger
}

// NewDeleteStorage returns cleanup's storage policy over o's registry: at most concurrency
// requests in flight (16 when not positive).
func NewDeleteStorage(o storage.Opener, concurrency int, log *slog.Logger) *DeleteStorage {
	log = reload.Deps{Log: log}.Logger()
	conc := concurrency
	if conc < 1 {
		conc = 16
	}
	// Start low and grow: 8 batch requests of 1000 keys are already more than S3 takes per
	// prefix in a second; single deletes reach the limit after a few thousand requests.
	lim := storage.NewAdaptive(storage.AdaptiveOptions{Start: min(conc, 8), Max: conc, OnChange: func(from, to int, cause error) {
		if to < from {
			log.Info("delete concurrency", "limit", to, "why", "throttled", "was", from, "error", cause.Error())
		} else {
			log.Info("delete concurrency", "limit", to, "why", "recovered", "max", conc)
		}
	}})
	p := storage.DefaultRetryPolicy()
	p.OnRetry = lim.OnRetry(func(op string, attempt int, err error, wait time.Duration) {
		log.Info("retry", "op", op, "attempt", attempt, "wait", wait.Round(time.Millisecond), "error", err, "concurrency", lim.Limit())
	})
	counters := &storage.Counters{}
	return &DeleteStorage{Opener: o.WithPolicy(storage.Policy{Retry: p, Limit: conc, SDKAttempts: 1, Counters: counters}),
		Concurrency: conc, Limiter: lim, Counters: counters, log: log}
}

// Resolver returns a copy of r that opens tables' storage under d's policy.
func (d *DeleteStorage) Resolver(r *tableref.Resolver) *tableref.Resolver {
	c := *r
	c.Open = d.Opener.Open
	return &c
}

// CleanupEnv is what a cleanup works with: the table resolver, the run's places and cleanup's
// storage policy; the journal of the table's runs (for PrepareCleanup: OpenCleanup opens the
// one the request names); the warehouse that re-checks the table: Warehouse with Identity when
// one is open (watch), else one opened from Workspace on first use (a plan with nothing to
// check needs none).
type CleanupEnv struct {
	Resolver  *tableref.Resolver
	Places    *Places
	Storage   *DeleteStorage
	Journal   journal.Store
	Warehouse reload.Warehouse
	Identity  string
	Workspace *tableref.Workspace
	Log       *slog.Logger
}

// CleanupRequest is the cleanup asked for: the table (Target, for OpenCleanup) and the journal
// it names (Journal, the --journal URL, "" for the local state directory); the run ("" for the
// newest the journal can clean), how long ago its batches must have been verified, the
// fallback folder, the archive place as given ("" for none), the run record of this process
// and the question about a lock another process holds.
type CleanupRequest struct {
	Target    tableref.Spec
	Journal   string
	Run       string
	MinAge    time.Duration
	Now       time.Time
	Prefix    string
	ArchiveTo string
	Header    journal.Header
	BreakLock func(*journal.LockedError) bool
}

// Cleanup is a table's cleanup ready to run: the table, its journal, the prepared cleanup
// (nil when preparing failed), the identity the re-check ran as and the storage policy of its
// deletes.
type Cleanup struct {
	Target  *tableref.Ref
	Journal journal.Store
	*cleanup.Prepared
	// Identity is current_user() of the warehouse that re-checked the run ("" when none did).
	Identity string
	Storage  *DeleteStorage

	env        CleanupEnv
	ownJournal bool
	prefix     string
	archive    storage.Location
	others     []string
}

// OpenCleanup gathers and prepares the cleanup `zbrecover cleanup` asks for, in one call: it
// opens the table with write access under cleanup's storage policy and identifies it, checks
// and opens the journal, checks the run asked for, prepares the cleanup under the table's lock
// (PrepareCleanup), checks the archive place (before anything is written) and lists the
// fallback folder for what stays. It deletes nothing.
//
// The Cleanup is returned once the table is open, with an error too when a later step
// failed; an error wrapping cleanup.ErrNothing says the journal holds no run to clean up.
// Close releases what it holds (the lock, the journal it opened).
func OpenCleanup(ctx context.Context, env CleanupEnv, req CleanupRequest) (*Cleanup, error) {
	tgt, err := Open(ctx, env.Storage.Resolver(env.Resolver), req.Target, tableref.ReadWrite)
	if err != nil {
		return nil, err
	}
	c := &Cleanup{Target: tgt, Storage: env.Storage, env: env, prefix: req.Prefix}
	store, err := openTableRunJournal(ctx, env.Places, req.Journal, tgt, req.Run)
	c.Journal, c.env.Journal, c.ownJournal = store, store, store != nil
	if err != nil {
		return c, err
	}
	if c.Prepared, err = c.prepare(ctx, req); err != nil {
		return c, err
	}
	if req.ArchiveTo != "" {
		if err := c.CheckArchive(ctx, req.ArchiveTo); err != nil {
			return c, err
		}
	}
	plan := c.Plan
	if err := plan.Survey(ctx, tgt.Root, c.State, req.Prefix); err != nil {
		return c, fmt.Errorf("list %s to report what stays: %w", storage.ObjectURL(tgt.Root, req.Prefix), err)
	}
	return c, nil
}

// PrepareCleanup prepares the cleanup of tgt (opened with write access, identified) the one
// way `zbrecover cleanup` and `zbrecover watch` do: cleanup.Prepare under the table's lock,
// with the run re-checked against the table by reload's rules (reload.LazyChecker) before
// anything is deleted. It deletes nothing; the Prepared's Execute does.
func PrepareCleanup(ctx context.Context, env CleanupEnv, tgt *tableref.Ref, req CleanupRequest) (*Cleanup, error) {
	c := &Cleanup{Target: tgt, Journal: env.Journal, Storage: env.Storage, env: env, prefix: req.Prefix}
	var err error
	c.Prepared, err = c.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Cleanup) prepare(ctx context.Context, req CleanupRequest) (*cleanup.Prepared, error) {
	env, tgt := c.env, c.Target
	checker := reload.LazyChecker{Table: tgt.TableName(), Connect: c.connect, OpenKeys: env.Places.OpenStaged}
	return cleanup.Prepare(ctx, cleanup.Config{Journal: env.Journal, TableID: tgt.TableID, Root: tgt.Display(), Backend: tgt.Root,
		Prefix: req.Prefix, Checker: checker, OpenStaged: env.Places.OpenStaged, Header: req.Header, BreakLock: req.BreakLock, Log: env.Log},
		cleanup.Request{Run: req.Run, MinAge: req.MinAge, Now: req.Now})
}

// connect opens the warehouse that re-checks name, noting the identity it runs as.
func (c *Cleanup) connect(ctx context.Context, name databricks.TableName) (reload.Warehouse, string, error) {
	if c.env.Warehouse != nil {
		c.Identity = c.env.Identity
		return c.env.Warehouse, c.env.Identity, nil
	}
	if c.env.Workspace == nil {
		return nil, "", fmt.Errorf("cleanup re-checks table %s before deleting anything: %w", name, tableref.ErrNeedsDatabricks)
	}
	wh, err := c.env.Workspace.Warehouse(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("cleanup re-checks table %s before deleting anything: %w", name, err)
	}
	c.Identity = CurrentUser(ctx, wh)
	return wh, c.Identity, nil
}

// CheckArchive refuses the archive place raw with place.Check, before anything is written or
// deleted: the table's root, another table's root or the run's staging location (in any
// spelling, through symbolic links and a volume's storage location), a _zerobus/ folder, a
// table's root its probes find. A refusal is a usage error. OpenArchive opens it.
func (c *Cleanup) CheckArchive(ctx context.Context, raw string) error {
	var staging []storage.Location
	for _, s := range c.StagingLocations() {
		l, err := storage.Parse(s)
		if err != nil {
			return fmt.Errorf("the journal names a staging location zbrecover cannot read (%s): %w; nothing was deleted", s, err)
		}
		staging = append(staging, l)
	}
	c.others = c.env.Places.OtherTableRoots(ctx, c.Target)
	loc, err := c.env.Places.Checked(ctx, place.Archive, raw, c.Target, staging)
	var ue *UsageError
	if errors.As(err, &ue) {
		return &UsageError{Msg: ue.Msg + "; nothing was deleted", Flag: ue.Flag}
	}
	if err != nil {
		return err
	}
	c.archive = loc
	return nil
}

// OpenArchive opens the archive place CheckArchive passed and checks it again as cleanup sees
// it once opened (cleanup.Prepared.CheckArchive), before anything is written.
func (c *Cleanup) OpenArchive(ctx context.Context) (storage.Backend, error) {
	if c.archive.Scheme == "" {
		return nil, errors.New("no archive place was checked")
	}
	archive, err := c.env.Places.OpenChecked(ctx, place.Archive, c.archive)
	if err != nil {
		return nil, err
	}
	if err := c.Prepared.CheckArchive(ctx, archive, c.others); err != nil {
		if errors.Is(err, cleanup.ErrArchiveLocation) {
			return nil, flagErrorf("--archive-to: %v; nothing was deleted", err)
		}
		return nil, err
	}
	return archive, nil
}

// Options are cleanup's options for this cleanup: the deletes under its storage policy, the
// fallback folder, and the archive when one was checked (opened with OpenArchive).
func (c *Cleanup) Options() cleanup.Options {
	return cleanup.Options{Concurrency: c.Storage.Concurrency, Limiter: c.Storage.Limiter, Log: c.env.Log, Prefix: c.prefix, OtherTables: c.others}
}

// Close releases the table's lock and the journal OpenCleanup opened.
func (c *Cleanup) Close() {
	if c == nil {
		return
	}
	if c.Prepared != nil {
		_ = c.Prepared.Close()
	}
	if c.ownJournal {
		CloseJournal(c.Journal)
	}
}
