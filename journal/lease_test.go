package journal

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
)

// fakeClock is the journal's clock (now) in a test: it moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func withClock(t *testing.T) *fakeClock {
	c := &fakeClock{t: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)}
	old := now
	now = c.now
	t.Cleanup(func() { now = old })
	return c
}

// TestRemoteLeaseRenewed: a lock held as a lease is judged by its holder's lease from its
// last renewal: while renewed it is never broken, even by Force with a short TTL and a
// holder on another host; once its holder stops renewing and the lease passes, Force breaks
// it, and the old holder's next renewal says the lock is lost.
func TestRemoteLeaseRenewed(t *testing.T) {
	ctx := context.Background()
	clock := withClock(t)
	be := &memStore{objs: map[string]memObject{}}
	j, err := OpenRemote(be)
	must(t, err)
	// The holder runs on another host (its pid cannot be checked from here).
	held, err := j.Lock(ctx, target.TableID, LockOptions{Owner: Holder{Host: "watch-1.example", PID: 4242, Command: "zbrecover watch"}, Lease: 2 * time.Minute})
	must(t, err)
	lease, ok := held.(Renewer)
	if !ok {
		t.Fatalf("a remote lock (%T) cannot be renewed", held)
	}
	if data, _ := storage.ReadAll(ctx, be, target.TableID+"/lock.json", 0, -1); !strings.Contains(string(data), `"lease_seconds":120`) {
		t.Errorf("the lock does not record its lease: %s", data)
	}
	other := LockOptions{Owner: Holder{Host: "watch-2.example", Command: "zbrecover watch"}, Lease: 2 * time.Minute, Force: true, TTL: time.Second,
		Break: func(le *LockedError) bool { return le.Rule() == BreakWithYes }}

	// Ten minutes of renewals every 40 s: never broken, its age never more than 40 s.
	for i := 0; i < 15; i++ {
		clock.add(40 * time.Second)
		must(t, lease.Renew(ctx))
		clock.add(time.Second)
		_, err := j.Lock(ctx, target.TableID, other)
		var le *LockedError
		if !errors.As(err, &le) {
			t.Fatalf("after %d renewals the lease was broken: %v", i+1, err)
		}
		if le.Stale || !le.Renewed || le.Age != time.Second || le.TTL != 2*time.Minute || le.Rule() != BreakIfConfirmed {
			t.Fatalf("renewal %d: stale %v, renewed %v, age %s, TTL %s, rule %d", i+1, le.Stale, le.Renewed, le.Age, le.TTL, le.Rule())
		}
		if !strings.Contains(le.Error(), "its lease of 2m0s last renewed 1s ago") {
			t.Errorf("%v", le)
		}
	}
	// Only the newest renewal is kept.
	var renewals []string
	must(t, be.List(ctx, target.TableID+"/lease/", func(o storage.ObjectInfo) error { renewals = append(renewals, o.Key); return nil }))
	if len(renewals) != 1 {
		t.Errorf("renewal objects: %v", renewals)
	}
	// Tables lists the table once; renewals are not runs.
	if ids, err := j.Tables(ctx); err != nil || len(ids) != 1 {
		t.Errorf("tables %v, %v", ids, err)
	}

	// The holder stops renewing (killed): a minute later the lease still holds...
	clock.add(time.Minute)
	if _, err := j.Lock(ctx, target.TableID, other); !errors.Is(err, ErrLocked) {
		t.Fatalf("a lease one minute from its last renewal was broken: %v", err)
	}
	// ...past the lease, Force breaks it, and the renewals go with it.
	clock.add(90 * time.Second)
	taken, err := j.Lock(ctx, target.TableID, other)
	if err != nil {
		t.Fatalf("a lease past its end was not broken: %v", err)
	}
	renewals = nil
	must(t, be.List(ctx, target.TableID+"/lease/", func(o storage.ObjectInfo) error { renewals = append(renewals, o.Key); return nil }))
	if len(renewals) != 0 {
		t.Errorf("the broken lease's renewals were left: %v", renewals)
	}
	// The old holder comes back: its renewal says the lock is lost, its Close leaves the new
	// holder's lock alone.
	if err := lease.Renew(ctx); !errors.Is(err, ErrLockLost) {
		t.Fatalf("renewal of a broken lease: %v", err)
	}
	if err := held.Close(); err == nil {
		t.Error("closing a broken lock said nothing")
	}
	if _, err := j.Lock(ctx, target.TableID, other); !errors.Is(err, ErrLocked) {
		t.Fatalf("the new holder's lock was released by the old holder: %v", err)
	}
	must(t, taken.Close())
	l, err := j.Lock(ctx, target.TableID, LockOptions{})
	must(t, err)
	must(t, l.Close())
}

// TestLockWithoutLeaseKeepsItsTTL: a lock taken without a lease (a manual reload) is judged
// by the TTL of whoever finds it: a watcher with a lease of two minutes does not take an
// operator's reload running for an hour on another host as stale.
func TestLockWithoutLeaseKeepsItsTTL(t *testing.T) {
	ctx := context.Background()
	clock := withClock(t)
	be := &memStore{objs: map[string]memObject{}}
	j, err := OpenRemote(be)
	must(t, err)
	held, err := j.Lock(ctx, target.TableID, LockOptions{Owner: Holder{Host: "laptop.example", PID: 7, Command: "zbrecover reload"}})
	must(t, err)
	defer held.Close()
	clock.add(time.Hour)
	_, err = j.Lock(ctx, target.TableID, LockOptions{Lease: 2 * time.Minute, Force: true,
		Break: func(le *LockedError) bool { return le.Rule() == BreakWithYes }})
	var le *LockedError
	if !errors.As(err, &le) || le.Stale || le.TTL != DefaultLockTTL || le.Renewed {
		t.Fatalf("an hour-old manual lock: %v (%+v)", err, le)
	}
}

// TestDirLockRenews: a local lock is a flock, live as long as its holder: Renew succeeds
// until Close, then says the lock is lost.
func TestDirLockRenews(t *testing.T) {
	ctx := context.Background()
	d, err := OpenDir(t.TempDir())
	must(t, err)
	defer d.Close()
	l, err := d.Lock(ctx, target.TableID, LockOptions{Lease: time.Minute})
	must(t, err)
	r, ok := l.(Renewer)
	if !ok {
		t.Fatalf("a local lock (%T) cannot be renewed", l)
	}
	must(t, r.Renew(ctx))
	must(t, l.Close())
	if err := r.Renew(ctx); !errors.Is(err, ErrLockLost) {
		t.Errorf("renewal after Close: %v", err)
	}
}

// TestUnderLock: under a held lock, a step's Lock of that table returns at once and its Close
// leaves the table locked; another process still finds it locked; another table's lock is
// taken as usual; and the store keeps its run reads (a store of this package stays one).
func TestUnderLock(t *testing.T) {
	ctx := context.Background()
	d, err := OpenDir(t.TempDir())
	must(t, err)
	defer d.Close()
	held, err := d.Lock(ctx, target.TableID, LockOptions{Lease: time.Minute})
	must(t, err)
	s := UnderLock(d, target.TableID, held)
	if _, ok := s.(runStore); !ok {
		t.Errorf("UnderLock of a Dir (%T) lost its run reads", s)
	}
	step, err := s.Lock(ctx, target.TableID, LockOptions{})
	must(t, err)
	must(t, step.Close())
	other, err := OpenDir(d.dir)
	must(t, err)
	defer other.Close()
	if _, err := other.Lock(ctx, target.TableID, LockOptions{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("the table is not locked after a step under the lock closed its lock: %v", err)
	}
	l2, err := s.Lock(ctx, "another-table", LockOptions{})
	must(t, err)
	if _, err := other.Lock(ctx, "another-table", LockOptions{}); !errors.Is(err, ErrLocked) {
		t.Errorf("another table's lock was not taken: %v", err)
	}
	must(t, l2.Close())
	must(t, held.Close())
	l, err := other.Lock(ctx, target.TableID, LockOptions{})
	must(t, err)
	must(t, l.Close())
}
