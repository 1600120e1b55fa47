package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/zbrecover/zbrecover/storage"
)

var _ runStore = (*Remote)(nil)

// snapshotKey is where a run's snapshot is kept: <table_id>/snapshots/<run_id>.snapshot,
// outside runs/, so that listing a run lists its records only.
func snapshotKey(tableID, run string) string {
	return tableID + "/snapshots/" + run + ".snapshot"
}

func (j *Remote) runCache() *infoCache { return &j.cache }

var crc64Table = crc64.MakeTable(crc64.ECMA)

// objectSum is the checksum of one record object's listed identity.
func objectSum(name string, o storage.ObjectInfo) uint64 {
	id := name + "\x00" + strconv.FormatInt(o.Size, 10) + "\x00" + o.ETag + "\x00" + strconv.FormatInt(o.Generation, 10) + "\x00" + o.MD5 +
		"\x00" + strconv.FormatInt(o.ModTime.UnixNano(), 10)
	return crc64.Checksum([]byte(id), crc64Table)
}

// add counts one record object into f (the sum does not depend on listing order).
func (f *fingerprint) add(name string, o storage.ObjectInfo) {
	f.Records++
	f.Size += o.Size
	f.Sum += objectSum(name, o)
}

// probeRuns implements runStore with one listing of <table_id>/runs/: each run's fingerprint
// is that of its record objects as listed.
func (j *Remote) probeRuns(ctx context.Context, tableID string) ([]runProbe, error) {
	if err := checkName("table id", tableID); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	prefix := tableID + "/runs/"
	fps := map[string]*fingerprint{}
	var ids []string
	err := j.b.List(ctx, prefix, func(o storage.ObjectInfo) error {
		id, name, ok := strings.Cut(strings.TrimPrefix(o.Key, prefix), "/")
		if !ok || checkName("run id", id) != nil {
			return nil
		}
		fp := fps[id]
		if fp == nil {
			fp = &fingerprint{}
			fps[id] = fp
			ids = append(ids, id)
		}
		fp.add(name, o)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("journal: list %s: %w", prefix, err)
	}
	out := make([]runProbe, len(ids))
	for i, id := range ids {
		out[i] = runProbe{run: id, id: fps[id].String(), fp: fps[id]}
	}
	return out, nil
}

// openSnapshot implements runStore.
func (j *Remote) openSnapshot(ctx context.Context, tableID, run string) (io.ReadCloser, error) {
	return j.b.ReadRange(ctx, snapshotKey(tableID, run), 0, -1)
}

// current implements runStore: fp is the fingerprint the listing gave.
func (j *Remote) current(_ context.Context, _ string, p runProbe, fp fingerprint) bool {
	return p.fp != nil && *p.fp == fp
}

// storeSnapshot implements runStore with a plain Put, which replaces the object whole.
func (j *Remote) storeSnapshot(ctx context.Context, tableID, run string, data []byte) error {
	_, err := j.put.Put(ctx, snapshotKey(tableID, run), bytes.NewReader(data), int64(len(data)), storage.PutOptions{})
	return err
}

// replayWindow is how many record objects of a run are fetched ahead of the replay.
const replayWindow = 64

// replayRun implements runStore: the run's record objects are fetched in order, a window at
// a time (readConcurrency GETs at once), and applied as they arrive, so that a run is never
// held whole. Anything irregular sends the read to Read and Replay, which report it as they
// always have.
func (j *Remote) replayRun(ctx context.Context, tableID, run string) (*State, fingerprint, bool, error) {
	st, fp, err := j.streamRun(ctx, tableID, run)
	if errors.Is(err, errRereadWhole) {
		st, err = readStateWhole(ctx, j, tableID, run)
		return st, fingerprint{}, false, err
	}
	return st, fp, err == nil, err
}

func (j *Remote) streamRun(ctx context.Context, tableID, run string) (*State, fingerprint, error) {
	if checkName("table id", tableID) != nil || checkName("run id", run) != nil {
		return nil, fingerprint{}, errRereadWhole
	}
	prefix := tableID + "/runs/" + run + "/"
	type object struct {
		key, name string
		seq       int
		kind      Kind
	}
	var objs []object
	var fp fingerprint
	if err := j.b.List(ctx, prefix, func(o storage.ObjectInfo) error {
		name := strings.TrimPrefix(o.Key, prefix)
		seq, kind, ok := parseRecordName(name)
		if !ok {
			return errRereadWhole
		}
		objs = append(objs, object{o.Key, name, seq, kind})
		fp.add(name, o)
		return nil
	}); err != nil {
		if errors.Is(err, errRereadWhole) {
			return nil, fingerprint{}, err
		}
		return nil, fingerprint{}, fmt.Errorf("journal: list %s: %w", prefix, err)
	}
	sort.Slice(objs, func(a, b int) bool { return objs[a].seq < objs[b].seq })
	if len(objs) == 0 {
		return nil, fingerprint{}, errRereadWhole
	}
	p := newReplayer()
	p.owned = true
	recs := make([]Record, replayWindow)
	errs := make([]error, replayWindow)
	for lo := 0; lo < len(objs); lo += replayWindow {
		win := objs[lo:min(lo+replayWindow, len(objs))]
		var wg sync.WaitGroup
		sem := make(chan struct{}, readConcurrency)
		for i, o := range win {
			if o.seq != lo+i+1 {
				return nil, fingerprint{}, errRereadWhole
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				recs[i], errs[i] = j.readRecord(ctx, o.key, run, o.name)
			}()
		}
		wg.Wait()
		for i := range win {
			if errs[i] != nil {
				if ctx.Err() != nil {
					return nil, fingerprint{}, ctx.Err()
				}
				return nil, fingerprint{}, errRereadWhole
			}
			if err := p.add(recs[i]); err != nil {
				return nil, fingerprint{}, errRereadWhole
			}
			recs[i] = Record{}
		}
	}
	st, err := p.finish()
	if err != nil {
		return nil, fingerprint{}, errRereadWhole
	}
	return st, fp, nil
}
