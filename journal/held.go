package journal

import (
	"context"
	"io"
)

// UnderLock returns s as seen by a caller that holds the lock of table tableID itself (held,
// typically a lease it renews) and runs steps that take that lock (reload, verify, cleanup)
// under it: their Lock of that table returns at once, holding nothing of its own (its Close
// does nothing), so that the table stays locked, by held, from the first step to the last.
// Every other call, the Lock of any other table included, goes to s; the store keeps what it
// reads quickly (snapshots, cached run summaries).
func UnderLock(s Store, tableID string, held Lock) Store {
	u := underLock{Store: s, tableID: tableID, held: held}
	if rs, ok := s.(runStore); ok {
		return runUnderLock{underLock: u, rs: rs}
	}
	return u
}

type underLock struct {
	Store
	tableID string
	held    Lock
}

// Lock implements Store.
func (u underLock) Lock(ctx context.Context, tableID string, o LockOptions) (Lock, error) {
	if tableID != u.tableID {
		return u.Store.Lock(ctx, tableID, o)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return heldLock{}, nil
}

// heldLock is a lock its holder's caller took: Close leaves it held.
type heldLock struct{}

func (heldLock) Close() error { return nil }

// runUnderLock is underLock over a store of this package, whose run reads it keeps.
type runUnderLock struct {
	underLock
	rs runStore
}

func (r runUnderLock) replayRun(ctx context.Context, tableID, run string) (*State, fingerprint, bool, error) {
	return r.rs.replayRun(ctx, tableID, run)
}

func (r runUnderLock) probeRuns(ctx context.Context, tableID string) ([]runProbe, error) {
	return r.rs.probeRuns(ctx, tableID)
}

func (r runUnderLock) openSnapshot(ctx context.Context, tableID, run string) (io.ReadCloser, error) {
	return r.rs.openSnapshot(ctx, tableID, run)
}

func (r runUnderLock) current(ctx context.Context, tableID string, p runProbe, fp fingerprint) bool {
	return r.rs.current(ctx, tableID, p, fp)
}

func (r runUnderLock) storeSnapshot(ctx context.Context, tableID, run string, data []byte) error {
	return r.rs.storeSnapshot(ctx, tableID, run, data)
}

func (r runUnderLock) runCache() *infoCache { return r.rs.runCache() }

var _ runStore = runUnderLock{}
