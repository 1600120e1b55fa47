package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/zbrecover/zbrecover/storage/local"
	"github.com/zbrecover/zbrecover/storage/mem"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
)

// memStore is an in-memory object store with ETags, create-only Put and conditional Delete,
// enough for the journal's tests.
type memStore struct {
	mu   sync.Mutex
	objs map[string]memObject
	n    int
	puts int
	// lostAnswer makes the next Put store the object and then fail, as a lost response does.
	lostAnswer bool
}

type memObject struct {
	data []byte
	info storage.ObjectInfo
}

func newMemStore(*testing.T) ObjectStore { return &memStore{objs: map[string]memObject{}} }

func (m *memStore) Location() string { return "mem://journal" }

func (m *memStore) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	m.mu.Lock()
	var infos []storage.ObjectInfo
	for k, o := range m.objs {
		if strings.HasPrefix(k, prefix) {
			infos = append(infos, o.info)
		}
	}
	m.mu.Unlock()
	sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
	for _, o := range infos {
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

func (m *memStore) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return storage.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, storage.ErrNotExist)
	}
	return o.info, nil
}

func (m *memStore) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return nil, fmt.Errorf("read %s: %w", key, storage.ErrNotExist)
	}
	data := o.data[min(off, int64(len(o.data))):]
	if n >= 0 && n < int64(len(data)) {
		data = data[:n]
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (m *memStore) Delete(ctx context.Context, key string, cond storage.Precondition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		if cond.IsZero() {
			return nil
		}
		return fmt.Errorf("delete %s: %w", key, storage.ErrNotExist)
	}
	if cond.ETag != "" && cond.ETag != o.info.ETag {
		return fmt.Errorf("delete %s: %w", key, storage.ErrPreconditionFailed)
	}
	delete(m.objs, key)
	return nil
}

func (m *memStore) Put(ctx context.Context, key string, r io.Reader, size int64, opts storage.PutOptions) (storage.ObjectInfo, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	if int64(len(data)) != size {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: %d bytes, size says %d", key, len(data), size)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if _, ok := m.objs[key]; ok && opts.CreateOnly {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: %w", key, storage.ErrExist)
	}
	m.n++
	info := storage.ObjectInfo{Key: key, Size: size, ModTime: now().UTC(), ETag: fmt.Sprintf(`"%d"`, m.n)}
	m.objs[key] = memObject{data: data, info: info}
	if m.lostAnswer {
		m.lostAnswer = false
		return storage.ObjectInfo{}, storage.Retryable(errors.New("connection reset after the write"))
	}
	return info, nil
}

// remoteOpener returns an openStore over any backend that can write, so that the suite runs
// against every store that gets Put.
func remoteOpener(newBackend func(t *testing.T) ObjectStore) openStore {
	return func(t *testing.T) testStore {
		be := newBackend(t)
		a, err := OpenRemote(be)
		must(t, err)
		b, err := OpenRemote(be)
		must(t, err)
		raw := func() []byte {
			var all []byte
			ctx := context.Background()
			must(t, be.List(ctx, "", func(o storage.ObjectInfo) error {
				data, err := storage.ReadAll(ctx, be, o.Key, 0, -1)
				all = append(all, data...)
				return err
			}))
			return all
		}
		// Planted records are named as earlier versions named them (<seq>-<kind>.json), so
		// that the suite reads journals of both namings, and one number can be held twice.
		plant := func(r Record) error { return plantOld(be, r) }
		fresh := func() Store {
			j, err := OpenRemote(be)
			must(t, err)
			return j
		}
		ctx := context.Background()
		snapshot := func(tableID, run string) []byte {
			data, err := storage.ReadAll(ctx, be, snapshotKey(tableID, run), 0, -1)
			if errors.Is(err, storage.ErrNotExist) {
				return nil
			}
			must(t, err)
			return data
		}
		setSnapshot := func(tableID, run string, data []byte) {
			_, err := be.Put(ctx, snapshotKey(tableID, run), bytes.NewReader(data), int64(len(data)), storage.PutOptions{})
			must(t, err)
		}
		editRecord := func(tableID, run string, seq int, edit func([]byte) []byte) {
			key := recordKey(tableID, run, seq)
			data, err := storage.ReadAll(ctx, be, key, 0, -1)
			must(t, err)
			must(t, be.Delete(ctx, key, storage.Precondition{}))
			data = edit(data)
			_, err = be.Put(ctx, key, bytes.NewReader(data), int64(len(data)), storage.PutOptions{CreateOnly: true})
			must(t, err)
		}
		return testStore{a: a, b: b, raw: raw, plant: plant, fresh: fresh, snapshot: snapshot, setSnapshot: setSnapshot, editRecord: editRecord}
	}
}

// plantOld stores r as earlier versions named records: <seq:08d>-<kind>.json.
func plantOld(be storage.Backend, r Record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	p, _ := storage.AsPutter(be)
	key := fmt.Sprintf("%s/runs/%s/%08d-%s.json", r.TableID, r.Run, r.Seq, r.Kind)
	_, err = p.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)), storage.PutOptions{})
	return err
}

// runRemoteSuite runs the store suite and the object-store tests on fresh backends from
// newBackend; any backend that implements storage.Putter can be passed.
func runRemoteSuite(t *testing.T, newBackend func(t *testing.T) ObjectStore) {
	runStoreSuite(t, remoteOpener(newBackend))
	ctx := context.Background()

	t.Run("layout", func(t *testing.T) {
		be := newBackend(t)
		j, err := OpenRemote(be)
		must(t, err)
		writeRun(t, j, target, "run-1", t0, [][]string{{"a"}}, 1)
		l, err := j.Lock(ctx, target.TableID, LockOptions{})
		must(t, err)
		defer l.Close()
		var ks []string
		must(t, be.List(ctx, "", func(o storage.ObjectInfo) error { ks = append(ks, o.Key); return nil }))
		want := []string{"lock.json", "runs/run-1/00000001.json", "runs/run-1/00000002.json",
			"runs/run-1/00000003.json", "runs/run-1/00000004.json", "runs/run-1/00000005.json", "runs/run-1/00000006.json",
			"snapshots/run-1.snapshot"}
		for i := range want {
			want[i] = target.TableID + "/" + want[i]
		}
		if strings.Join(ks, " ") != strings.Join(want, " ") {
			t.Errorf("objects:\n%s\nwant:\n%s", strings.Join(ks, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("a journal of an earlier version is read, and continued under the new names", func(t *testing.T) {
		be := newBackend(t)
		j, err := OpenRemote(be)
		must(t, err)
		// An earlier version wrote a run whose batch 2 was never sent.
		for _, r := range newRun("r1").plan(batch(1, "a", "b"), batch(2, "c")).load(1).records() {
			must(t, plantOld(be, r))
		}
		st, err := LatestUnfinished(ctx, j, "tbl-1", "s3://bucket/t/_zerobus/table_rejected_parquets")
		must(t, err)
		if st == nil || st.Run != "r1" || st.Batch(1).Status != BatchVerified || st.Batch(2).Status != BatchPlanned || st.Wedge != nil {
			t.Fatalf("latest unfinished of an old-format journal: %+v", st)
		}
		w, err := Continue(ctx, j, st, Header{Command: "zbrecover reload t"})
		must(t, err)
		pb := batch(2, "c")
		must(t, w.Append(ctx, Record{Kind: KindIntent, Intent: &Intent{Batch: 2, Files: pb.Files, ExpectedRows: 10, SQL: pb.SQL}}))
		must(t, w.Append(ctx, Record{Kind: KindResult, Result: &Result{Batch: 2, Inserted: Int64(10)}}))
		must(t, w.Append(ctx, Record{Kind: KindOutcome, Outcome: &Outcome{Batch: 2, Status: BatchVerified, Evidence: EvidenceAnswer}}))
		must(t, w.Append(ctx, Record{Kind: KindEnd, End: &End{State: RunVerified}}))
		var names []string
		must(t, be.List(ctx, "tbl-1/runs/r1/", func(o storage.ObjectInfo) error {
			names = append(names, strings.TrimPrefix(o.Key, "tbl-1/runs/r1/"))
			return nil
		}))
		want := "00000001-run.json 00000002-plan.json 00000003-intent.json 00000004-result.json 00000005-outcome.json " +
			"00000006.json 00000007.json 00000008.json 00000009.json 00000010.json"
		if strings.Join(names, " ") != want {
			t.Errorf("record objects:\n%s\nwant:\n%s", strings.Join(names, " "), want)
		}
		fresh, err := OpenRemote(be)
		must(t, err)
		sums, err := Runs(ctx, fresh, "tbl-1")
		must(t, err)
		if len(sums) != 1 || sums[0].Status != RunVerified || sums[0].Problem != "" {
			t.Errorf("history of the mixed run: %+v", sums)
		}
		if data, err := storage.ReadAll(ctx, be, snapshotKey("tbl-1", "r1"), 0, -1); err != nil || len(data) == 0 {
			t.Errorf("no snapshot of the mixed run: %v", err)
		}
		// An old name that disagrees with its record's kind is still an error.
		data := []byte(`{"v":1,"run":"r2","seq":1,"kind":"end","table_id":"tbl-1","end":{"state":"failed"}}`)
		_, err = be.Put(ctx, "tbl-1/runs/r2/00000001-run.json", bytes.NewReader(data), int64(len(data)), storage.PutOptions{CreateOnly: true})
		must(t, err)
		if _, err := fresh.Read(ctx, "tbl-1", "r2"); err == nil || !strings.Contains(err.Error(), "holds record 1 (end)") {
			t.Errorf("read of a record under another kind's name: %v", err)
		}
	})

	t.Run("a record under the wrong name is an error", func(t *testing.T) {
		be := newBackend(t)
		j, err := OpenRemote(be)
		must(t, err)
		writeRun(t, j, target, "run-1", t0, [][]string{{"a"}}, 0)
		data := []byte(`{"v":1,"run":"run-1","seq":3,"kind":"end","table_id":"x","end":{"state":"failed"}}`)
		_, err = be.Put(ctx, target.TableID+"/runs/run-1/00000004.json", bytes.NewReader(data), int64(len(data)), storage.PutOptions{CreateOnly: true})
		must(t, err)
		if _, err := j.Read(ctx, target.TableID, "run-1"); err == nil || !strings.Contains(err.Error(), "holds record 3") {
			t.Errorf("read: %v", err)
		}
	})

	t.Run("stale lock is broken only with force", func(t *testing.T) {
		be := newBackend(t)
		j, err := OpenRemote(be)
		must(t, err)
		// A holder on another host, whose process cannot be looked up from here.
		old, err := j.Lock(ctx, target.TableID, LockOptions{Owner: Holder{User: "gone", Host: "build-7.example", PID: 4242}})
		must(t, err)
		later := time.Now().Add(2 * time.Hour)
		j2, err := OpenRemote(be)
		must(t, err)
		j2.now = func() time.Time { return later }
		_, err = j2.Lock(ctx, target.TableID, LockOptions{TTL: 3 * time.Hour, Force: true})
		var le *LockedError
		if !errors.As(err, &le) || le.Stale {
			t.Fatalf("young lock with force: %v", err)
		}
		_, err = j2.Lock(ctx, target.TableID, LockOptions{TTL: time.Hour})
		if !errors.As(err, &le) || !le.Stale || le.Holder.User != "gone" || !strings.Contains(err.Error(), "--break-lock") {
			t.Fatalf("stale lock without force: %v", err)
		}
		l, err := j2.Lock(ctx, target.TableID, LockOptions{TTL: time.Hour, Force: true, Owner: Holder{User: "new"}})
		must(t, err)
		// The broken holder's Close leaves the new lock alone and says so.
		if err := old.Close(); err == nil || !strings.Contains(err.Error(), "new@") {
			t.Errorf("close of a broken lock: %v", err)
		}
		if _, err := j.Lock(ctx, target.TableID, LockOptions{}); !errors.Is(err, ErrLocked) {
			t.Errorf("lock after the broken holder's close: %v", err)
		}
		must(t, l.Close())
	})

	t.Run("break-lock asks, then breaks; a dead holder on this host is named", func(t *testing.T) {
		be := newBackend(t)
		j, err := OpenRemote(be)
		must(t, err)
		host, _ := os.Hostname()
		// A holder on this host whose process is gone: a pid that cannot exist.
		_, err = j.Lock(ctx, target.TableID, LockOptions{Owner: Holder{User: "ops", Host: host, PID: 1 << 30}})
		must(t, err)
		var asked *LockedError
		_, err = j.Lock(ctx, target.TableID, LockOptions{Break: func(le *LockedError) bool { asked = le; return false }})
		var le *LockedError
		if !errors.As(err, &le) || asked == nil || !le.Dead || !strings.Contains(err.Error(), "no longer running") {
			t.Fatalf("declined break of a dead holder's lock: asked %v, %v", asked != nil, err)
		}
		l, err := j.Lock(ctx, target.TableID, LockOptions{Owner: Holder{User: "next"}, Break: func(*LockedError) bool { return true }})
		must(t, err)
		_, err = j.Lock(ctx, target.TableID, LockOptions{})
		if !errors.As(err, &le) || le.Holder.User != "next" {
			t.Errorf("lock after the break: %v", err)
		}
		must(t, l.Close())
	})
}

func TestRemoteStore(t *testing.T) { runRemoteSuite(t, newMemStore) }

func TestRemoteStoreOnMem(t *testing.T) {
	runRemoteSuite(t, func(*testing.T) ObjectStore { return mem.New() })
}

func TestRemoteStoreOnLocal(t *testing.T) {
	runRemoteSuite(t, func(t *testing.T) ObjectStore { return local.New(t.TempDir()) })
}

func TestRemoteLostAnswer(t *testing.T) {
	be := &memStore{objs: map[string]memObject{}}
	j, err := OpenRemote(be)
	must(t, err)
	ctx := context.Background()
	_, err = Start(ctx, j, target, "run-1", Header{})
	must(t, err)
	// The Put stores the record, its answer is lost; the retry finds the same bytes.
	be.lostAnswer = true
	rec := Record{V: 1, Run: "run-1", Seq: 2, TableID: target.TableID, Time: t0, Kind: KindEnd, End: &End{State: RunPlanned}}
	if err := j.Append(ctx, rec); err == nil {
		t.Fatal("the lost answer was not reported")
	}
	must(t, j.Append(ctx, rec))
	// Other bytes under the same number are a conflict.
	rec.End.State = RunFailed
	if err := j.Append(ctx, rec); !errors.Is(err, ErrRunConflict) || !errors.Is(err, storage.ErrExist) {
		t.Errorf("different record under the same seq: %v", err)
	}
	log, err := j.Read(ctx, target.TableID, "run-1")
	must(t, err)
	if len(log.Records) != 2 || log.Records[1].End.State != RunPlanned {
		t.Errorf("records: %+v", log.Records)
	}
}

// readOnly is a backend without Put.
type readOnly struct{ storage.Backend }

func TestOpenRemoteNeedsPut(t *testing.T) {
	if _, err := OpenRemote(readOnly{newMemStore(t)}); err == nil || !strings.Contains(err.Error(), "cannot write objects") {
		t.Errorf("OpenRemote on a read-only backend: %v", err)
	}
}
