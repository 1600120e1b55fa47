package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/storage"
)

// ObjectStore is what a journal on object storage needs from a backend: the Backend methods
// and create-only writes.
type ObjectStore interface {
	storage.Backend
	storage.Putter
}

// Remote is a journal on any storage backend that writes (`--journal URL`): one object per
// record, <table_id>/runs/<run_id>/<seq:08d>.json, written create-only, and a lock object
// <table_id>/lock.json. Under a table's root, root the backend at HiddenDir.
//
// A record's name holds its number alone (its kind is inside), so that of any two processes
// writing one number of a run, whatever they write, one gets ErrRunConflict. Earlier versions
// named records <seq:08d>-<kind>.json, which guarded a number only against a record of the
// same kind: such names are still read, and a run that holds two records under one number is
// read by the wedge rule (see Replay).
type Remote struct {
	b     storage.Backend
	put   storage.Putter
	now   func() time.Time
	cache infoCache // run summaries read by this process
}

var _ Store = (*Remote)(nil)

// readConcurrency bounds the GETs of one Read.
const readConcurrency = 8

// OpenRemote returns the journal kept in b, which must be able to write objects.
func OpenRemote(b storage.Backend) (*Remote, error) {
	p, ok := storage.AsPutter(b)
	if !ok {
		return nil, fmt.Errorf("journal: %s cannot write objects, so it cannot hold a journal", b.Location())
	}
	return &Remote{b: b, put: p, now: func() time.Time { return now() }}, nil
}

// Location implements Store.
func (j *Remote) Location() string { return j.b.Location() }

// recordKey is where record seq of a run is written.
func recordKey(tableID, run string, seq int) string {
	return fmt.Sprintf("%s/runs/%s/%08d.json", tableID, run, seq)
}

// Append implements Store with a create-only Put: of two processes writing the same record
// number, one gets storage.ErrExist, and Append returns an error wrapping ErrRunConflict. An
// object already holding exactly this record (a retried Put whose first answer was lost)
// counts as written.
func (j *Remote) Append(ctx context.Context, r Record) error {
	line, err := encode(r)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	key := recordKey(r.TableID, r.Run, r.Seq)
	_, err = j.put.Put(ctx, key, bytes.NewReader(line), int64(len(line)), storage.PutOptions{CreateOnly: true})
	if errors.Is(err, storage.ErrExist) {
		if have, rerr := storage.ReadAll(ctx, j.b, key, 0, -1); rerr == nil && bytes.Equal(have, line) {
			return nil
		}
		return fmt.Errorf("journal: run %s: record %d already exists (%s in %s): %w", r.Run, r.Seq, key, j.b.Location(), errors.Join(ErrRunConflict, err))
	}
	if err != nil {
		return fmt.Errorf("journal: write %s: %w", key, err)
	}
	return nil
}

// parseRecordName reads a record's name: "<seq:08d>.json", or "<seq:08d>-<kind>.json" as
// earlier versions wrote it (kind is "" for the first).
func parseRecordName(name string) (int, Kind, bool) {
	base, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return 0, "", false
	}
	seqText, kind, old := strings.Cut(base, "-")
	if len(seqText) < 8 || (old && kind == "") {
		return 0, "", false
	}
	for _, c := range seqText {
		if c < '0' || c > '9' {
			return 0, "", false
		}
	}
	seq, err := strconv.Atoi(seqText)
	if err != nil || seq < 1 {
		return 0, "", false
	}
	return seq, Kind(kind), true
}

// Read implements Store. Objects are written whole, so there are no torn records; an object
// that does not decode, or whose name disagrees with its content, is an error.
func (j *Remote) Read(ctx context.Context, tableID, run string) (*Log, error) {
	if err := checkName("table id", tableID); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := checkName("run id", run); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	prefix := tableID + "/runs/" + run + "/"
	var keys []string
	if err := j.b.List(ctx, prefix, func(o storage.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("journal: list %s: %w", prefix, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("journal: table %s has no run %s in %s: %w", tableID, run, j.b.Location(), storage.ErrNotExist)
	}
	recs := make([]Record, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	sem := make(chan struct{}, readConcurrency)
	for i, key := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			recs[i], errs[i] = j.readRecord(ctx, key, run, strings.TrimPrefix(key, prefix))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	sort.SliceStable(recs, func(a, b int) bool { return recs[a].Seq < recs[b].Seq })
	return &Log{TableID: tableID, Run: run, Records: recs}, nil
}

func (j *Remote) readRecord(ctx context.Context, key, run, name string) (Record, error) {
	seq, kind, ok := parseRecordName(name)
	if !ok {
		return Record{}, fmt.Errorf("journal: %s is not a record name (<seq>.json)", key)
	}
	data, err := storage.ReadAll(ctx, j.b, key, 0, -1)
	if err != nil {
		return Record{}, fmt.Errorf("journal: read %s: %w", key, err)
	}
	r, err := decode(bytes.TrimSuffix(data, []byte("\n")))
	if err != nil {
		return Record{}, fmt.Errorf("journal: %s: %w", key, err)
	}
	if r.Run != run || r.Seq != seq || (kind != "" && r.Kind != kind) {
		return Record{}, fmt.Errorf("journal: %s holds record %d (%s) of run %s", key, r.Seq, r.Kind, r.Run)
	}
	return r, nil
}

// RunIDs implements Store.
func (j *Remote) RunIDs(ctx context.Context, tableID string) ([]string, error) {
	if err := checkName("table id", tableID); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	prefix := tableID + "/runs/"
	seen := map[string]bool{}
	var ids []string
	err := j.b.List(ctx, prefix, func(o storage.ObjectInfo) error {
		id, _, ok := strings.Cut(strings.TrimPrefix(o.Key, prefix), "/")
		if ok && !seen[id] && checkName("run id", id) == nil {
			seen[id] = true
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("journal: list %s: %w", prefix, err)
	}
	return ids, nil
}

// Tables implements Store. It lists the whole journal.
func (j *Remote) Tables(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var ids []string
	err := j.b.List(ctx, "", func(o storage.ObjectInfo) error {
		id, rest, ok := strings.Cut(o.Key, "/")
		if ok && (rest == "lock.json" || strings.HasPrefix(rest, "runs/")) && !seen[id] && checkName("table id", id) == nil {
			seen[id] = true
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("journal: list %s: %w", j.b.Location(), err)
	}
	return ids, nil
}

// Lock implements Store with a create-only lock object <table_id>/lock.json holding the
// owner and the time. Object stores have no lease and no way to tell that a holder died, so
// a lock stays until its holder deletes it. A lock is broken (deleted with its version as
// precondition, then taken) only as LockedError.Rule allows, because breaking the lock of a
// process that is still working would let two runs overlap: never when its holder ran on
// this host and its pid is running; when o.Break confirms it otherwise; without asking only
// when it is older than o.TTL and o.Force is set.
func (j *Remote) Lock(ctx context.Context, tableID string, o LockOptions) (Lock, error) {
	if err := checkName("table id", tableID); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	ttl := o.TTL
	if ttl <= 0 {
		ttl = DefaultLockTTL
	}
	key := tableID + "/lock.json"
	h := o.holder(j.now())
	data, _ := json.Marshal(h)
	for attempt := 0; ; attempt++ {
		_, err := j.put.Put(ctx, key, bytes.NewReader(data), int64(len(data)), storage.PutOptions{CreateOnly: true})
		if err == nil {
			return &remoteLock{j: j, key: key, tableID: tableID, token: h.Token}, nil
		}
		if !errors.Is(err, storage.ErrExist) {
			return nil, fmt.Errorf("journal: lock %s: %w", key, err)
		}
		info, held, err := j.holder(ctx, key)
		if errors.Is(err, storage.ErrNotExist) && attempt == 0 {
			continue // released between the Put and the read
		}
		if err != nil {
			return nil, fmt.Errorf("journal: lock %s: %w", key, err)
		}
		since := held.Since
		if info.ModTime.After(since) {
			since = info.ModTime // the store's clock, when it is later than the holder's
		}
		renewed, err := j.renewedAt(ctx, tableID, held.Token)
		if err != nil {
			return nil, fmt.Errorf("journal: lock %s: %w", key, err)
		}
		le := &LockedError{TableID: tableID, Where: j.b.Location() + "/" + key, Holder: held, TTL: held.lease(ttl)}
		if renewed.After(since) {
			since, le.Renewed = renewed, true
		}
		le.describe(j.now(), since)
		if attempt > 0 || le.Rule() == BreakNever {
			return nil, le
		}
		if !(le.Stale && o.Force) && (o.Break == nil || !o.Break(le)) {
			return nil, le
		}
		err = j.b.Delete(ctx, key, info.Version())
		if err != nil && !errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("journal: break lock %s: %w", key, err)
		}
		j.dropRenewals(ctx, tableID, held.Token, "")
	}
}

// renewalPrefix is where the renewals of the lease of the lock with token are kept:
// <table_id>/lease/<token>-<n:08d>.json, each written create-only.
func renewalPrefix(tableID, token string) string {
	return tableID + "/lease/" + token + "-"
}

// renewal is a renewal object: the holder's token and clock.
type renewal struct {
	Token string    `json:"token"`
	Time  time.Time `json:"time"`
}

// renewedAt returns when the lease of the lock with token was last renewed: the later of the
// holder's clock and the store's over its renewal objects; zero when it never was.
func (j *Remote) renewedAt(ctx context.Context, tableID, token string) (time.Time, error) {
	var last time.Time
	if token == "" || checkName("token", token) != nil {
		return last, nil
	}
	var keys []string
	err := j.b.List(ctx, renewalPrefix(tableID, token), func(o storage.ObjectInfo) error {
		if o.ModTime.After(last) {
			last = o.ModTime
		}
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		return time.Time{}, err
	}
	if len(keys) > 0 {
		sort.Strings(keys)
		if data, err := storage.ReadAll(ctx, j.b, keys[len(keys)-1], 0, -1); err == nil {
			var r renewal
			if json.Unmarshal(data, &r) == nil && r.Token == token && r.Time.After(last) {
				last = r.Time
			}
		}
	}
	return last, nil
}

// dropRenewals deletes the renewal objects of token's lease but keep (best effort: a renewal
// left behind names a token no lock holds, and is never read).
func (j *Remote) dropRenewals(ctx context.Context, tableID, token, keep string) {
	if token == "" || checkName("token", token) != nil {
		return
	}
	var keys []string
	_ = j.b.List(ctx, renewalPrefix(tableID, token), func(o storage.ObjectInfo) error {
		if o.Key != keep {
			keys = append(keys, o.Key)
		}
		return nil
	})
	for _, k := range keys {
		_ = j.b.Delete(ctx, k, storage.Precondition{})
	}
}

// holder reads the lock object and its version.
func (j *Remote) holder(ctx context.Context, key string) (storage.ObjectInfo, Holder, error) {
	info, err := j.b.Stat(ctx, key)
	if err != nil {
		return info, Holder{}, err
	}
	data, err := storage.ReadAll(ctx, j.b, key, 0, -1)
	if err != nil {
		return info, Holder{}, err
	}
	var h Holder
	if err := json.Unmarshal(data, &h); err != nil {
		return info, Holder{}, fmt.Errorf("lock object is not a journal lock: %v", err)
	}
	return info, h, nil
}

type remoteLock struct {
	j       *Remote
	key     string
	tableID string
	token   string
	once    sync.Once
	err     error

	mu      sync.Mutex
	renewal int    // the number of the last renewal written
	last    string // its key
}

// Renew implements Renewer: it checks that the lock object is still this holder's (same
// token), then writes a new create-only renewal object and deletes the previous one. An
// object store cannot rewrite the lock object on a condition everywhere (a conditional
// overwrite is not in every store's API, and a delete then create would leave a moment in
// which another process takes the lock), so the lease is renewed beside it: another process
// judges the lock's age from its newest renewal, and a renewal never stands in anyone's way.
func (l *remoteLock) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.owned(ctx); err != nil {
		return err
	}
	l.renewal++
	key := fmt.Sprintf("%s%08d.json", renewalPrefix(l.tableID, l.token), l.renewal)
	data, _ := json.Marshal(renewal{Token: l.token, Time: l.j.now().UTC()})
	if _, err := l.j.put.Put(ctx, key, bytes.NewReader(data), int64(len(data)), storage.PutOptions{CreateOnly: true}); err != nil {
		return fmt.Errorf("journal: renew lock %s: %w", l.key, err)
	}
	if l.last != "" {
		_ = l.j.b.Delete(ctx, l.last, storage.Precondition{})
	}
	l.last = key
	// Broken in between (the lease had run out): the renewal names a token no lock holds.
	return l.owned(ctx)
}

// owned checks that the lock object still holds this holder's token.
func (l *remoteLock) owned(ctx context.Context) error {
	_, h, err := l.j.holder(ctx, l.key)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		return fmt.Errorf("journal: lock %s is gone (broken by another process?): %w", l.key, ErrLockLost)
	case err != nil:
		return fmt.Errorf("journal: renew lock %s: %w", l.key, err)
	case h.Token != l.token:
		return fmt.Errorf("journal: lock %s was broken and is now held by %s: %w", l.key, h, ErrLockLost)
	}
	return nil
}

// Close deletes the lock object if it is still this process's (same token), with the
// version just read as precondition, so a lock broken and taken by another process is
// left alone. A second Close does nothing.
func (l *remoteLock) Close() error {
	l.once.Do(func() {
		ctx := context.Background()
		info, h, err := l.j.holder(ctx, l.key)
		switch {
		case errors.Is(err, storage.ErrNotExist):
			l.err = fmt.Errorf("journal: lock %s was already gone (broken by another process?)", l.key)
		case err != nil:
			l.err = fmt.Errorf("journal: release lock %s: %w", l.key, err)
		case h.Token != l.token:
			l.err = fmt.Errorf("journal: lock %s was broken and is now held by %s", l.key, h)
		default:
			if err := l.j.b.Delete(ctx, l.key, info.Version()); err != nil {
				l.err = fmt.Errorf("journal: release lock %s: %w", l.key, err)
			}
		}
		l.j.dropRenewals(ctx, l.tableID, l.token, "")
	})
	return l.err
}
