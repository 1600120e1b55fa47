package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// runStore is what the package's stores (Dir, Remote) offer besides Store: a run replayed as
// it is read, the fingerprint of what was read, and snapshots. Stores of other types are
// read through Store alone (every run replayed).
type runStore interface {
	Store
	// replayRun reads a run's records and replays them as they are read. ok is set when fp
	// is the fingerprint of the records replayed (a run whose records had to be read whole
	// and sorted has none).
	replayRun(ctx context.Context, tableID, run string) (st *State, fp fingerprint, ok bool, err error)
	// probeRuns returns the table's runs, each with what identifies, cheaply, its records as
	// stored now.
	probeRuns(ctx context.Context, tableID string) ([]runProbe, error)
	// openSnapshot opens the run's stored snapshot.
	openSnapshot(ctx context.Context, tableID, run string) (io.ReadCloser, error)
	// current reports whether fp is the fingerprint of the run's records as stored now (as
	// the probe found them).
	current(ctx context.Context, tableID string, p runProbe, fp fingerprint) bool
	// storeSnapshot stores (replacing) the run's snapshot.
	storeSnapshot(ctx context.Context, tableID, run string, data []byte) error
	// runCache returns the store's cache of run summaries.
	runCache() *infoCache
}

// runProbe is a run as a store's listing shows it.
type runProbe struct {
	run string
	// id changes whenever the run's stored records change: the file's size, modification
	// time and identity in a local directory, the fingerprint on an object store.
	id string
	// fp is the fingerprint of the records, when the listing gives it (object stores).
	fp *fingerprint
	// size is the run file's size (local directory).
	size int64
}

// infoCache keeps, for one process, the summaries of the runs it read, by the probe id they
// were read at: a command that reads a table's runs several times (reload's Facts, then
// LatestUnfinished) reads each run once. Entries hold no files.
type infoCache struct {
	mu   sync.Mutex
	runs map[string]cachedInfo // by table id and run id
	// wedged holds the notes of the runs replayed by this process that two processes wrote
	// at once (Wedge.Message), by table id and run id.
	wedged map[string]string
}

// noteWedge remembers st's wedge, if it has one.
func (c *infoCache) noteWedge(st *State) {
	if st == nil || st.Wedge == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wedged == nil {
		c.wedged = map[string]string{}
	}
	c.wedged[st.TableID+"/"+st.Run] = st.Wedge.Message(st.Run)
}

// Wedges returns the notes (Wedge.Message) of the runs of the table that this process has
// read from s, and found written by two processes at once, in run order. It does no I/O: a
// command that read the table's runs (to plan, verify or clean up) learns which of them were
// read by the wedge rule without listing the journal again.
func Wedges(s Store, tableID string) []string {
	rs, ok := s.(runStore)
	if !ok {
		return nil
	}
	c := rs.runCache()
	c.mu.Lock()
	defer c.mu.Unlock()
	var keys []string
	for k := range c.wedged {
		if strings.HasPrefix(k, tableID+"/") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = c.wedged[k]
	}
	return out
}

type cachedInfo struct {
	probe string
	info  *runInfo
}

func (c *infoCache) get(tableID, run, probe string) *runInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.runs[tableID+"/"+run]; ok && e.probe == probe {
		return e.info
	}
	return nil
}

func (c *infoCache) put(tableID, run, probe string, in *runInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]cachedInfo{}
	}
	c.runs[tableID+"/"+run] = cachedInfo{probe, in}
}

// runEntry is one run of a table as scanRuns found it: its info, or why it cannot be read or
// replayed.
type runEntry struct {
	run  string
	info *runInfo
	err  error
}

// scanRuns returns every run of the table, sorted by id. When files is set, it is called
// once per run, in id order, with the run's files that are verified or may be loaded (see
// Facts) whose key keep accepts (all when keep is nil); share says whether they may share
// the memory of the snapshot they come from.
//
// A run is read from its snapshot when one summarises its records as stored now, else
// replayed from its records; a run replayed whose last record is an end record gets its
// snapshot written (best effort: a journal that cannot be written is still read).
func scanRuns(ctx context.Context, s Store, tableID string, keep func(string) bool, share bool, files func([]FileState)) ([]runEntry, error) {
	rs, ok := s.(runStore)
	if !ok {
		return scanReplaying(ctx, s, tableID, keep, files)
	}
	probes, err := rs.probeRuns(ctx, tableID)
	if err != nil {
		return nil, err
	}
	sort.Slice(probes, func(i, j int) bool { return probes[i].run < probes[j].run })
	cache := rs.runCache()
	out := make([]runEntry, 0, len(probes))
	for _, p := range probes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e := runEntry{run: p.run}
		if files == nil {
			e.info = cache.get(tableID, p.run, p.id)
		}
		if e.info == nil {
			var fs []FileState
			if e.info, fs = snapshotOf(ctx, rs, tableID, p, files != nil, keep, share); e.info != nil && files != nil {
				files(fs)
			}
		}
		if e.info == nil {
			st, fp, fpOK, err := rs.replayRun(ctx, tableID, p.run)
			cache.noteWedge(st)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				e.err = err
				out = append(out, e)
				continue
			}
			e.info = infoOf(st, fp)
			if files != nil {
				files(keptFiles(st, keep))
			}
			if fpOK && e.info.atRest {
				_ = rs.storeSnapshot(ctx, tableID, p.run, encodeSnapshot(st, fp))
			}
			if !fpOK {
				out = append(out, e)
				continue // no fingerprint to cache it by
			}
		}
		cache.put(tableID, p.run, p.id, e.info)
		out = append(out, e)
	}
	return out, nil
}

// keptFiles returns st's loaded files whose key keep accepts (all when keep is nil).
func keptFiles(st *State, keep func(string) bool) []FileState {
	var out []FileState
	loadedFiles(st, func(fs FileState) {
		if keep == nil || keep(fs.Key) {
			out = append(out, fs)
		}
	})
	return out
}

// snapshotOf returns the run's info from its snapshot, and with withFiles its files (those
// keep accepts), when a snapshot is stored, readable, and summarises the records the probe
// found; else nil.
func snapshotOf(ctx context.Context, rs runStore, tableID string, p runProbe, withFiles bool, keep func(string) bool, share bool) (*runInfo, []FileState) {
	rc, err := rs.openSnapshot(ctx, tableID, p.run)
	if err != nil {
		return nil, nil
	}
	defer rc.Close()
	sr := newSnapshotReader(rc)
	defer sr.close()
	in, err := sr.header(tableID, p.run)
	if err != nil || !rs.current(ctx, tableID, p, in.fp) {
		return nil, nil
	}
	if !withFiles {
		return in, nil
	}
	fs, err := sr.files(keep, share)
	if err != nil {
		return nil, nil
	}
	return in, fs
}

// scanReplaying is scanRuns for a store of another type: every run replayed.
func scanReplaying(ctx context.Context, s Store, tableID string, keep func(string) bool, files func([]FileState)) ([]runEntry, error) {
	ids, err := s.RunIDs(ctx, tableID)
	if err != nil {
		return nil, err
	}
	sort.Strings(ids)
	out := make([]runEntry, 0, len(ids))
	for _, id := range ids {
		e := runEntry{run: id}
		st, err := ReadState(ctx, s, tableID, id)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			e.err = err
		} else {
			e.info = infoOf(st, fingerprint{})
			if files != nil {
				files(keptFiles(st, keep))
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// writeSnapshot stores the snapshot of the run w writes, replayed from the store, when its
// last record is the one w wrote last. A snapshot is derived data: when it cannot be made or
// stored, readers replay the run instead, so failures are not reported.
func (w *Writer) writeSnapshot(ctx context.Context) {
	rs, ok := w.s.(runStore)
	if !ok {
		return
	}
	st, fp, ok, err := rs.replayRun(ctx, w.t.TableID, w.run)
	if err != nil || !ok || st.LastSeq != w.next-1 {
		return
	}
	_ = rs.storeSnapshot(ctx, w.t.TableID, w.run, encodeSnapshot(st, fp))
}

// readStateFrom replays a run from a store of the package, or through Store.Read.
func readStateFrom(ctx context.Context, s Store, tableID, run string) (*State, error) {
	if rs, ok := s.(runStore); ok {
		st, _, _, err := rs.replayRun(ctx, tableID, run)
		rs.runCache().noteWedge(st)
		return st, err
	}
	return readStateWhole(ctx, s, tableID, run)
}

// readStateWhole reads a run's records whole and replays them.
func readStateWhole(ctx context.Context, s Store, tableID, run string) (*State, error) {
	log, err := s.Read(ctx, tableID, run)
	if err != nil {
		return nil, err
	}
	if len(log.Records) == 0 {
		return nil, fmt.Errorf("run %s of table %s has no records", run, tableID)
	}
	st, err := Replay(log.Records)
	if err != nil {
		return nil, err
	}
	st.Warnings = append(log.Warnings, st.Warnings...)
	return st, nil
}

// errRereadWhole is returned by a streaming read that met anything irregular (records out of
// order, damage, a replay error): the run is then read whole and replayed as Read and Replay
// do, which report the irregularity exactly as they always have.
var errRereadWhole = errors.New("read the run whole")
