package recovery

import (
	"context"
	"log/slog"
	"time"

	"github.com/zbrecover/zbrecover/cleanup"
	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/tableref"
)

// CleanupEnv is what PrepareCleanup works with: the journal of the table's runs, the
// warehouse that re-checks the table (connected on first use, so that a plan with nothing to
// check needs none), and the opener of the places the journal names (staged copies, keys
// files).
type CleanupEnv struct {
	Journal    journal.Store
	Connect    func(ctx context.Context, table databricks.TableName) (reload.Warehouse, string, error)
	OpenStaged func(ctx context.Context, location string) (storage.Backend, error)
	Log        *slog.Logger
}

// CleanupRequest is the cleanup asked for: the run ("" for the newest the journal can clean),
// how long ago its batches must have been verified, the fallback folder, the run record of
// this process and the question about a lock another process holds.
type CleanupRequest struct {
	Run       string
	MinAge    time.Duration
	Now       time.Time
	Prefix    string
	Header    journal.Header
	BreakLock func(*journal.LockedError) bool
}

// PrepareCleanup prepares the cleanup of tgt (opened with write access, identified) the one
// way `zbrecover cleanup` and `zbrecover watch` do: cleanup.Prepare under the table's lock,
// with the run re-checked against the table by reload's rules (reload.LazyChecker) before
// anything is deleted. It deletes nothing; the Prepared's Execute does.
func PrepareCleanup(ctx context.Context, env CleanupEnv, tgt *tableref.Ref, req CleanupRequest) (*cleanup.Prepared, error) {
	checker := reload.LazyChecker{Table: tgt.TableName(), Connect: env.Connect, OpenKeys: env.OpenStaged}
	return cleanup.Prepare(ctx, cleanup.Config{Journal: env.Journal, TableID: tgt.TableID, Root: tgt.Display(), Backend: tgt.Root,
		Prefix: req.Prefix, Checker: checker, OpenStaged: env.OpenStaged, Header: req.Header, BreakLock: req.BreakLock, Log: env.Log},
		cleanup.Request{Run: req.Run, MinAge: req.MinAge, Now: req.Now})
}
