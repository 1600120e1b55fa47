package recovery

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/zbrecover/zbrecover/history"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/tableref"
)

// VerifyEnv is what a verify works with: the table resolver, the run's places (the journal,
// the keys files the journal names) and the workspace whose warehouse checks the table.
type VerifyEnv struct {
	Resolver  *tableref.Resolver
	Places    *Places
	Workspace *tableref.Workspace
	Log       *slog.Logger
}

// VerifyRequest is the verify asked for: the table, the journal's place as given ("" for the
// local state directory), the run ("" for the newest), the key columns to reconcile by (nil
// for none), this process's run record and the UI ports (the answer about a lock another
// process holds, the key check's progress).
type VerifyRequest struct {
	Target      tableref.Spec
	Journal     string
	Run         string
	Keys        reload.Keys
	Header      journal.Header
	BreakLock   func(*journal.LockedError) bool
	KeyProgress func(done, total int)
}

// Verified is a verify's outcome: the table, the journal it read (closed by Close), the
// identity the checks ran as and the report (nil when verify failed).
type Verified struct {
	Target   *tableref.Ref
	Journal  journal.Store
	Identity string
	Report   *reload.VerifyReport
}

// Close releases the journal Verify opened.
func (v *Verified) Close() {
	if v != nil && v.Journal != nil {
		CloseJournal(v.Journal)
	}
}

// Verify checks a run against the table, the one path `zbrecover verify` takes: it opens the
// table and gives it its identity, checks and opens the journal, checks the run asked for,
// connects the warehouse (noting who statements run as) and calls reload.VerifyRun, which
// takes the table's lock and journals the verification. The Verified is returned once the
// table is open, with an error too when a later step failed.
func Verify(ctx context.Context, env VerifyEnv, req VerifyRequest) (*Verified, error) {
	if env.Workspace == nil {
		return nil, fmt.Errorf("table %s: %w", req.Target.Table, tableref.ErrNeedsDatabricks)
	}
	tgt, err := Open(ctx, env.Resolver, req.Target, tableref.Read)
	if err != nil {
		return nil, err
	}
	v := &Verified{Target: tgt}
	if v.Journal, err = openTableRunJournal(ctx, env.Places, req.Journal, tgt, req.Run); err != nil {
		return v, err
	}
	wh, err := env.Workspace.Warehouse(ctx)
	if err != nil {
		return v, err
	}
	v.Identity = CurrentUser(ctx, wh)
	hdr := req.Header
	hdr.Identity = v.Identity
	v.Report, err = reload.VerifyRun(ctx, WarehouseDeps(wh, v.Journal, v.Identity, env.Log), tgt, reload.VerifyOptions{Run: req.Run,
		Header: hdr, BreakLock: req.BreakLock, Keys: req.Keys, OpenKeys: env.Places.OpenStaged, KeyProgress: req.KeyProgress})
	return v, err
}

// openTableRunJournal checks the journal's place against tgt and opens it; when run is given,
// it refuses a run the journal does not hold for the table (history.MissingRun names the
// runs it does hold). The store is returned open whenever it was opened.
func openTableRunJournal(ctx context.Context, places *Places, url string, tgt *tableref.Ref, run string) (journal.Store, error) {
	store, err := places.OpenTableJournal(ctx, url, tgt)
	if err != nil {
		return nil, err
	}
	if run != "" {
		if err := history.MissingRun(ctx, store, []string{tgt.TableID}, tgt.TableName(), run); err != nil {
			return store, err
		}
	}
	return store, nil
}
