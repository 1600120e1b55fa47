//go:build unix

package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock on path and writes the holder into it. The kernel drops
// the lock when the holding process dies, so a crashed holder never leaves a stale lock and
// TTL and Force are not needed.
func lockFile(tableID, path string, o LockOptions) (Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			le := &LockedError{TableID: tableID, Where: path, Live: true}
			if data, err := readAll(f); err == nil {
				_ = json.Unmarshal(data, &le.Holder)
			}
			le.describe(time.Now(), le.Holder.Since)
			return nil, le
		}
		return nil, fmt.Errorf("journal: lock %s: %w", path, err)
	}
	h := o.holder(time.Now())
	data, _ := json.Marshal(h)
	if err := writeHolder(f, data); err != nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		return nil, fmt.Errorf("journal: lock %s: %w", path, err)
	}
	return &flockLock{f: f}, nil
}

func writeHolder(f *os.File, data []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return err
	}
	return syncFile(f)
}

type flockLock struct {
	f      *os.File
	once   sync.Once
	err    error
	mu     sync.Mutex
	closed bool
}

// Renew implements Renewer: a flock lasts as long as its holder, so there is no lease to
// renew; it fails only once the lock was closed.
func (l *flockLock) Renew(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return fmt.Errorf("journal: lock %s was released: %w", l.f.Name(), ErrLockLost)
	}
	return nil
}

// Close empties the lock file and releases the flock; a second Close does nothing.
func (l *flockLock) Close() error {
	l.once.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		_ = l.f.Truncate(0)
		err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		l.err = errors.Join(err, l.f.Close())
	})
	return l.err
}

// processAlive reports whether a process with this pid exists on this host (known is always
// set: signal 0 tells).
func processAlive(pid int) (alive, known bool) {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM), true
}

// lockAppend takes an exclusive flock on a run file for one append (see Dir.Append); unlock
// releases it and must be called before f is closed.
func lockAppend(f *os.File) (unlock func(), err error) {
	fd := int(f.Fd())
	for {
		err = syscall.Flock(fd, syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return func() { _ = syscall.Flock(fd, syscall.LOCK_UN) }, nil
}
