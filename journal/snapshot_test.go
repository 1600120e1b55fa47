package journal

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// craftSnapshot stores a snapshot of the run's records as stored now, made from their
// replay changed by change: a snapshot that says something the records do not, so that a
// reader that shows it has read the snapshot, and one that does not has replayed the run.
func craftSnapshot(t *testing.T, ts testStore, tableID, run string, change func(*State)) {
	t.Helper()
	rs, ok := ts.fresh().(runStore)
	if !ok {
		t.Fatal("the store keeps no snapshots")
	}
	st, fp, ok, err := rs.replayRun(context.Background(), tableID, run)
	must(t, err)
	if !ok {
		t.Fatal("no fingerprint")
	}
	change(st)
	ts.setSnapshot(tableID, run, encodeSnapshot(st, fp))
}

// plainStore is a store seen through Store alone: it reads every run from its records and
// writes no snapshots.
type plainStore struct{ Store }

const crafted = "zbrecover reload (as the snapshot says)"

// markCrafted changes what a snapshot of st holds: the first process's command and the
// archive of every file.
func markCrafted(st *State) {
	st.Processes[0].Command = crafted
	for _, f := range st.files {
		f.Archive = "s3://archive/" + f.Key
	}
}

// readBoth reads the table's runs and facts through a new handle.
func readBoth(t *testing.T, ts testStore, tableID string) ([]RunSummary, *TableFacts) {
	t.Helper()
	s := ts.fresh()
	sums, err := Runs(context.Background(), s, tableID)
	must(t, err)
	f, err := Facts(context.Background(), ts.fresh(), tableID)
	must(t, err)
	return sums, f
}

func fromSnapshot(sums []RunSummary, f *TableFacts) (summary, files bool) {
	summary = len(sums) > 0 && sums[0].Command == crafted
	files = slices.ContainsFunc(f.Loaded, func(fs FileState) bool { return fs.Archive != "" })
	return summary, files
}

// snapshotSuite runs on every store: a run's snapshot is read when it summarises the run's
// records as stored, and ignored (the run replayed) when it is stale, damaged, of another
// format, or the records changed under it.
func snapshotSuite(t *testing.T, open openStore) {
	ctx := context.Background()
	twoBatches := [][]string{{"f/a.parquet", "f/b.parquet"}, {"g/c.parquet"}}

	t.Run("snapshot written at the end, used while current", func(t *testing.T) {
		ts := open(t)
		writeRun(t, ts.a, target, "run-1", t0, twoBatches, 1) // no end record: no snapshot
		if ts.snapshot(target.TableID, "run-1") != nil {
			t.Fatal("a run with no end record has a snapshot")
		}
		if _, err := Runs(ctx, ts.fresh(), target.TableID); err != nil || ts.snapshot(target.TableID, "run-1") != nil {
			t.Fatalf("a reader wrote the snapshot of a run in progress (%v)", err)
		}
		writeRun(t, ts.a, target, "run-2", t0.Add(time.Hour), twoBatches, 2) // ends
		if ts.snapshot(target.TableID, "run-2") == nil {
			t.Fatal("the end record wrote no snapshot")
		}
		craftSnapshot(t, ts, target.TableID, "run-2", markCrafted)
		sums, f := readBoth(t, ts, target.TableID)
		if s, fs := fromSnapshot(sums, f); !s || !fs || sums[0].Run != "run-2" {
			t.Errorf("a current snapshot was not read: %+v, %+v", sums[0], f.Loaded)
		}
		// ReadState always replays.
		st, err := ReadState(ctx, ts.fresh(), target.TableID, "run-2")
		must(t, err)
		if st.Processes[0].Command == crafted {
			t.Error("ReadState read the snapshot")
		}
		// LatestUnfinished finds run-1 from its records and run-2 from its snapshot.
		got, err := LatestUnfinished(ctx, ts.fresh(), target.TableID, target.Root)
		if err != nil || got == nil || got.Run != "run-1" {
			t.Errorf("latest unfinished = %v, %v", got, err)
		}
	})

	t.Run("a run continued after its snapshot is replayed", func(t *testing.T) {
		ts := open(t)
		writeRun(t, ts.a, target, "run-1", t0, twoBatches, 2)
		craftSnapshot(t, ts, target.TableID, "run-1", markCrafted)
		reader := ts.fresh()
		sums, err := Runs(ctx, reader, target.TableID) // cached by this handle
		must(t, err)
		if sums[0].Command != crafted {
			t.Fatal("the snapshot was not read")
		}
		// Another process continues the run: a later record, no end yet.
		st, err := ReadState(ctx, ts.b, target.TableID, "run-1")
		must(t, err)
		w, err := Continue(ctx, ts.b, st, Header{Command: "zbrecover verify"})
		must(t, err)
		must(t, w.Append(ctx, Record{Kind: KindVerification, Verification: &Verification{Checks: []Check{{Batch: 1, OK: false}}}}))
		for name, s := range map[string]Store{"the same handle": reader, "a new handle": ts.fresh()} {
			sums, err := Runs(ctx, s, target.TableID)
			must(t, err)
			if sums[0].Command == crafted {
				t.Errorf("%s read a stale snapshot: %+v", name, sums[0])
			}
			f, err := Facts(ctx, s, target.TableID)
			must(t, err)
			if _, fs := fromSnapshot(sums, f); fs {
				t.Errorf("%s read the files of a stale snapshot", name)
			}
		}
		// The process ends its work: the snapshot is written again, and current.
		must(t, w.Append(ctx, Record{Kind: KindEnd, End: &End{State: RunVerified}}))
		sums, f := readBoth(t, ts, target.TableID)
		if s, fs := fromSnapshot(sums, f); s || fs || sums[0].Status != RunVerified {
			t.Errorf("after the end: %+v", sums[0])
		}
		in := snapshotInfo(t, ts, target.TableID, "run-1")
		if in.fp.Records != 12 || in.sum.Status != RunVerified {
			t.Errorf("snapshot after the end: %+v", in)
		}
	})

	t.Run("a damaged snapshot is ignored", func(t *testing.T) {
		ts := open(t)
		writeRun(t, ts.a, target, "run-1", t0, twoBatches, 2)
		craftSnapshot(t, ts, target.TableID, "run-1", markCrafted)
		good := ts.snapshot(target.TableID, "run-1")
		hstart := len(snapshotMagic) + 2
		n, k := binary.Uvarint(good[hstart:])
		inHeader := hstart + k + int(n)/2
		for _, c := range []struct {
			name          string
			data          []byte
			summary, file bool // still read from the snapshot
		}{
			{"intact", good, true, true},
			{"a byte of the header", flip(good, inHeader), false, false},
			{"a byte of the files", flip(good, len(good)-10), true, false},
			{"cut short", good[:len(good)-7], true, false},
			{"cut in the header", good[:inHeader], false, false},
			{"another format", flip(good, len(snapshotMagic)), false, false},
			{"not a snapshot", []byte("{}"), false, false},
			{"empty", nil, false, false},
			{"trailing bytes", append(append([]byte(nil), good...), 0), true, false},
		} {
			ts.setSnapshot(target.TableID, "run-1", c.data)
			sums, f := readBoth(t, ts, target.TableID)
			summary, file := fromSnapshot(sums, f)
			if summary != c.summary || file != c.file {
				t.Errorf("%s: summary from the snapshot %v, files %v; want %v, %v", c.name, summary, file, c.summary, c.file)
			}
			if sums[0].Status != RunVerified || len(f.Loaded) != 3 || sums[0].Problem != "" {
				t.Errorf("%s: %+v, %d files", c.name, sums[0], len(f.Loaded))
			}
		}
	})

	t.Run("records changed under the snapshot", func(t *testing.T) {
		ts := open(t)
		writeRun(t, ts.a, target, "run-1", t0, twoBatches, 2)
		craftSnapshot(t, ts, target.TableID, "run-1", markCrafted)
		ts.editRecord(target.TableID, "run-1", 1, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"user":"ops"`), []byte(`"user":"opz"`), 1)
		})
		sums, f := readBoth(t, ts, target.TableID)
		if s, fs := fromSnapshot(sums, f); s || fs || sums[0].User != "opz" {
			t.Errorf("a snapshot of other records was read: %+v", sums[0])
		}
		// The replay rewrote the snapshot (the run is at rest): it is current again.
		if in := snapshotInfo(t, ts, target.TableID, "run-1"); in.sum.User != "opz" {
			t.Errorf("snapshot not rewritten: %+v", in.sum)
		}
	})

	t.Run("a missing snapshot is rebuilt by a reader", func(t *testing.T) {
		ts := open(t)
		b := newRun("r-1").plan(batch(1, "a", "b")).load(1).end(RunVerified)
		for _, r := range b.records() {
			must(t, ts.plant(r))
		}
		if ts.snapshot("tbl-1", "r-1") != nil {
			t.Fatal("planted records have a snapshot")
		}
		sums, err := Runs(ctx, ts.fresh(), "tbl-1")
		must(t, err)
		in := snapshotInfo(t, ts, "tbl-1", "r-1")
		if !reflect.DeepEqual(in.sum, sums[0]) || in.fp.Records != 6 {
			t.Errorf("rebuilt snapshot %+v, summary %+v", in, sums[0])
		}
	})

	t.Run("a run that cannot be replayed is an error, whatever its snapshot says", func(t *testing.T) {
		ts := open(t)
		writeRun(t, ts.a, target, "run-1", t0, twoBatches, 2)
		good := ts.snapshot(target.TableID, "run-1")
		// A record of another run planted as the run's next: the snapshot is stale, the
		// replay fails, and the run is named.
		must(t, ts.plant(Record{V: 1, Run: "run-1", Seq: 12, TableID: target.TableID, Kind: KindEnd, End: &End{}}))
		ts.setSnapshot(target.TableID, "run-1", good)
		sums, err := Runs(ctx, ts.fresh(), target.TableID)
		must(t, err)
		if sums[0].Problem == "" || !strings.Contains(sums[0].Problem, "run-1") {
			t.Errorf("summary of a broken run: %+v", sums[0])
		}
		if _, err := Facts(ctx, ts.fresh(), target.TableID); err == nil || !strings.Contains(err.Error(), "run-1") {
			t.Errorf("facts of a broken run: %v", err)
		}
	})

	t.Run("snapshots say what replay says", func(t *testing.T) {
		ts := open(t)
		v7 := int64(7)
		runs := map[string]*runBuilder{
			// cleaned: verified, every file deleted or gone
			"r-clean": newRun("r-clean").plan(batch(1, "a", "b"), batch(2, "c")).load(1).load(2).end(RunVerified).
				process("zbrecover cleanup").deleteIntent("a", "b", "c").
				deleted(DeletedResult{Key: "a", Status: Deleted}, DeletedResult{Key: "b", Status: DeleteGone, Reason: "already gone"},
					DeletedResult{Key: "c", Status: Deleted, Archive: "s3://arch/c"}).end(RunCleaned),
			// partially cleaned, with staged copies, one removed
			"r-staged": newRun("r-staged").plan(batch(1, "d", "e")).
				add(Record{Kind: KindStaging, Staging: &Staging{Location: "/Volumes/m/s/v/stage", Files: []Staged{{Source: "d", Key: "d1", Size: 100}, {Source: "e", Key: "e1", Size: 101}}}}).
				load(1).add(Record{Kind: KindStaging, Staging: &Staging{Location: "/Volumes/m/s/v/stage", Files: []Staged{{Source: "d", Key: "d1"}}, Removed: true}}).
				deleteIntent("d").deleted(DeletedResult{Key: "d", Status: Deleted}).end(RunPartiallyCleaned),
			// an unknown batch, a failed one, an open one with an error, a claimed commit
			"r-mixed": newRun("r-mixed").plan(batch(1, "f"), batch(2, "g"), batch(3, "h"), batch(4, "i")).
				intent(1).add(Record{Kind: KindResult, Result: &Result{Batch: 1, Inserted: Int64(10), Version: &v7}}).outcome(1, BatchVerified).
				intent(2).result(2, nil, "timeout").outcome(2, BatchUnknown).
				intent(3).result(3, nil, "refused").outcome(3, BatchFailed).
				intent(4).result(4, Int64(10), "").end(RunUnknown),
			// a load by key, merged and dropped
			"r-merge": newRun("r-merge").merge(Merge{Step: MergePlanned, Key: []string{"id"}}).plan(batch(1, "j")).load(1).
				merge(Merge{Step: MergeIntent, SQL: "MERGE"}).merge(Merge{Step: MergeResult, Inserted: Int64(5)}).
				merge(Merge{Step: MergeDropped}).end(RunVerified),
			// planned only
			"r-planned": newRun("r-planned").plan(batch(1, "k")).end(RunPlanned),
		}
		for _, b := range runs {
			for _, r := range b.records() {
				must(t, ts.plant(r))
			}
		}
		// The first read replays every run and writes their snapshots; the second reads them.
		replayed := readTable(t, plainStore{ts.fresh()}, "tbl-1")
		first := readTable(t, ts.fresh(), "tbl-1")
		for id := range runs {
			if ts.snapshot("tbl-1", id) == nil {
				t.Errorf("run %s has no snapshot after a read", id)
			}
		}
		second := readTable(t, ts.fresh(), "tbl-1")
		for name, got := range map[string]tableRead{"first read": first, "from the snapshots": second} {
			if !reflect.DeepEqual(got, replayed) {
				t.Errorf("%s:\n%+v\nreplayed:\n%+v", name, got, replayed)
			}
		}
		if len(replayed.facts.Claimed) != 1 || len(replayed.facts.Unpinned) != 4 || replayed.staging != 1 || len(replayed.keep.Loaded) != 2 {
			t.Errorf("facts %+v, runs %+v", replayed.facts, replayed.runs)
		}
	})
}

// tableRead is what the readers of a table return.
type tableRead struct {
	runs    []RunSummary
	facts   *TableFacts
	loaded  []FileState
	keep    *TableFacts // FactsFor keys starting with "d" or "g"
	latest  string
	staging int // StagedLeft summed
}

func readTable(t *testing.T, s Store, tableID string) tableRead {
	t.Helper()
	ctx := context.Background()
	var r tableRead
	var err error
	r.runs, err = Runs(ctx, s, tableID)
	must(t, err)
	r.facts, err = Facts(ctx, s, tableID)
	must(t, err)
	r.loaded = r.facts.Loaded
	r.keep, err = FactsFor(ctx, s, tableID, func(k string) bool { return k[0] == 'd' || k[0] == 'g' })
	must(t, err)
	st, err := LatestUnfinished(ctx, s, tableID, "s3://bucket/t/_zerobus/table_rejected_parquets")
	must(t, err)
	if st != nil {
		r.latest = st.Run
	}
	for _, sum := range r.runs {
		r.staging += sum.StagedLeft
	}
	return r
}

// snapshotInfo reads the stored snapshot's header.
func snapshotInfo(t *testing.T, ts testStore, tableID, run string) *runInfo {
	t.Helper()
	data := ts.snapshot(tableID, run)
	if data == nil {
		t.Fatalf("run %s has no snapshot", run)
	}
	in, err := newSnapshotReader(bytes.NewReader(data)).header(tableID, run)
	must(t, err)
	return in
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x55
	return c
}

// TestSnapshotRoundTrip: a snapshot gives back what it was made from, its files with or
// without sharing memory, narrowed to the keys asked for.
func TestSnapshotRoundTrip(t *testing.T) {
	b := newRun("r1").plan(batch(1, "a", "b"), batch(2, "c")).load(1).intent(2).result(2, nil, "timeout")
	st, err := Replay(b.records())
	must(t, err)
	fp := fingerprint{Records: 9, Size: 1234, Sum: 0xfeedface12345678}
	data := encodeSnapshot(st, fp)
	for _, share := range []bool{false, true} {
		sr := newSnapshotReader(bytes.NewReader(data))
		in, err := sr.header("tbl-1", "r1")
		must(t, err)
		if !reflect.DeepEqual(in, infoOf(st, fp)) {
			t.Errorf("header %+v, want %+v", in, infoOf(st, fp))
		}
		fs, err := sr.files(nil, share)
		must(t, err)
		var want []FileState
		loadedFiles(st, func(f FileState) { want = append(want, f) })
		if !reflect.DeepEqual(fs, want) || len(fs) != 3 {
			t.Errorf("files (share %v) %+v, want %+v", share, fs, want)
		}
	}
	sr := newSnapshotReader(bytes.NewReader(data))
	_, err = sr.header("tbl-1", "r1")
	must(t, err)
	fs, err := sr.files(func(k string) bool { return k == "c" }, false)
	if err != nil || len(fs) != 1 || fs[0].Key != "c" || fs[0].Status != BatchOpen {
		t.Errorf("narrowed files %+v, %v", fs, err)
	}
	if _, err := newSnapshotReader(bytes.NewReader(data)).header("tbl-1", "r2"); err == nil {
		t.Error("the snapshot of r1 was read as r2's")
	}
}

// TestSnapshotBlocks: a run of more files than a file section holds.
func TestSnapshotBlocks(t *testing.T) {
	var keys []string
	for i := range snapshotBlock*2 + 5 {
		keys = append(keys, fmt.Sprintf("k%05d", i))
	}
	st, err := Replay(newRun("r1").plan(batch(1, keys...)).load(1).records())
	must(t, err)
	sr := newSnapshotReader(bytes.NewReader(encodeSnapshot(st, fingerprint{})))
	_, err = sr.header("tbl-1", "r1")
	must(t, err)
	fs, err := sr.files(nil, true)
	if err != nil || len(fs) != len(keys) || fs[len(fs)-1].Key != keys[len(keys)-1] {
		t.Errorf("%d files, %v", len(fs), err)
	}
}
