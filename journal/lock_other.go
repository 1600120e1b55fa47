//go:build !unix

package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"
)

// lockFile creates path exclusively with the holder in it. Without flock a dead holder's lock
// stays behind, so it follows the object-store rule (see Remote.Lock).
func lockFile(tableID, path string, o LockOptions) (Lock, error) {
	ttl := o.TTL
	if ttl <= 0 {
		ttl = DefaultLockTTL
	}
	h := o.holder(time.Now())
	data, _ := json.Marshal(h)
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			_, err = f.Write(data)
			if err == nil {
				err = syncFile(f)
			}
			f.Close()
			if err != nil {
				os.Remove(path)
				return nil, fmt.Errorf("journal: lock %s: %w", path, err)
			}
			return &fileLock{path: path, token: h.Token}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("journal: lock %s: %w", path, err)
		}
		le := &LockedError{TableID: tableID, Where: path, TTL: ttl}
		since := time.Time{}
		if b, err := os.ReadFile(path); err == nil {
			_ = json.Unmarshal(b, &le.Holder)
			since = le.Holder.Since
		}
		le.TTL = le.Holder.lease(ttl)
		if fi, err := os.Stat(path); err == nil && fi.ModTime().After(since) {
			le.Renewed = !since.IsZero() && fi.ModTime().After(since.Add(time.Second))
			since = fi.ModTime()
		}
		le.describe(time.Now(), since)
		if attempt > 0 || le.Rule() == BreakNever || !(le.Stale && o.Force) && (o.Break == nil || !o.Break(le)) {
			return nil, le
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("journal: break lock %s: %w", path, err)
		}
	}
}

type fileLock struct {
	path, token string
	once        sync.Once
	err         error
}

// Renew implements Renewer: the lock file's modification time is its last renewal.
func (l *fileLock) Renew(context.Context) error {
	var h Holder
	b, err := os.ReadFile(l.path)
	if err == nil {
		err = json.Unmarshal(b, &h)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("journal: lock %s is gone: %w", l.path, ErrLockLost)
	case err != nil:
		return fmt.Errorf("journal: renew lock %s: %w", l.path, err)
	case h.Token != l.token:
		return fmt.Errorf("journal: lock %s was broken and taken by %s: %w", l.path, h, ErrLockLost)
	}
	t := time.Now()
	return os.Chtimes(l.path, t, t)
}

// Close removes the lock file if it is still this process's.
func (l *fileLock) Close() error {
	l.once.Do(func() {
		var h Holder
		if b, err := os.ReadFile(l.path); err == nil && json.Unmarshal(b, &h) == nil && h.Token != l.token {
			l.err = fmt.Errorf("journal: lock %s was broken and taken by %s", l.path, h)
			return
		}
		if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			l.err = err
		}
	})
	return l.err
}

// processAlive cannot tell on this system (known is false): a holder of this host is
// treated as one of another host, by the age of its lock.
func processAlive(int) (alive, known bool) { return false, false }

// lockAppend does nothing on this system: appends to one run file are kept apart by the
// table's lock alone.
func lockAppend(*os.File) (unlock func(), err error) { return func() {}, nil }
