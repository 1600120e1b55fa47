package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/journal"
)

// errLeaseLost is the cause of a table's context when its lease was lost.
var errLeaseLost = errors.New("the watcher lost the table's lease")

// lease is a table's lock held by this watcher as a lease, renewed in the background until
// release; ctx is cancelled (cause errLeaseLost) when a renewal finds the lock gone or taken,
// or when no renewal succeeded for a whole lease.
type lease struct {
	lock   journal.Lock
	store  journal.Store // the journal as seen under the lease (journal.UnderLock)
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	wg     sync.WaitGroup
}

// takeLease takes table's lock in store as a lease of length d: a lock held by a live process
// (another watcher, an operator's reload) is left alone and reported as a *journal.LockedError;
// a lock whose holder ran here and is gone, or that is older than its holder's lease (a watcher
// killed on another host), is broken, as the journal's rules allow.
func takeLease(ctx context.Context, store journal.Store, tableID string, d time.Duration, owner journal.Holder, log *slog.Logger) (*lease, error) {
	l, err := store.Lock(ctx, tableID, journal.LockOptions{Owner: owner, Lease: d, Force: true,
		Break: func(le *journal.LockedError) bool { return le.Rule() == journal.BreakWithYes }})
	if err != nil {
		return nil, err
	}
	ls := &lease{lock: l, store: journal.UnderLock(store, tableID, l), done: make(chan struct{})}
	ls.ctx, ls.cancel = context.WithCancelCause(ctx)
	r, ok := l.(journal.Renewer)
	if !ok {
		return ls, nil
	}
	ls.wg.Add(1)
	go func() {
		defer ls.wg.Done()
		ls.renew(r, tableID, d, log)
	}()
	return ls, nil
}

// renew renews the lease every third of it until release.
func (ls *lease) renew(r journal.Renewer, tableID string, d time.Duration, log *slog.Logger) {
	every := max(d/3, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ls.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		err := r.Renew(ctx)
		cancel()
		switch {
		case err == nil:
			last = time.Now()
		case errors.Is(err, journal.ErrLockLost):
			log.Warn("the table's lease was lost: its work stops", "table_id", tableID, "error", err.Error())
			ls.cancel(fmt.Errorf("%w: %v", errLeaseLost, err))
			return
		default:
			log.Warn("the table's lease could not be renewed; trying again", "table_id", tableID, "error", err.Error())
			if time.Since(last) > d-every {
				// Another process may take the lock once the lease is over: stop before.
				ls.cancel(fmt.Errorf("%w: no renewal for %s: %v", errLeaseLost, time.Since(last).Round(time.Second), err))
				return
			}
		}
	}
}

// release stops the renewals and releases the lock.
func (ls *lease) release() error {
	close(ls.done)
	ls.wg.Wait()
	ls.cancel(nil)
	return ls.lock.Close()
}
