package journal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// followedRun is a reload of two batches followed by a cleanup of the run, record by record.
func followedRun() []Record {
	return newRun("r-tail").plan(batch(1, "a", "b"), batch(2, "c")).load(1).load(2).end(RunVerified).
		process("zbrecover cleanup t").deleteIntent("a", "b", "c").
		deleted(DeletedResult{Key: "a", Status: Deleted}, DeletedResult{Key: "b", Status: Deleted}).
		deleted(DeletedResult{Key: "c", Status: Deleted}).end(RunCleaned).records()
}

// wholeStore is a Store of no type Tail knows: it is read whole.
type wholeStore struct{ Store }

// TestTailFollowsARun: after each record a writer appends, a Tail's state is the state a
// whole replay gives, it says whether anything was added, and it reads only what was
// appended (on an object store that lists from a key: one list request and one read per new
// record); in a local directory and on object stores with and without listing from a key.
func TestTailFollowsARun(t *testing.T) {
	ctx := context.Background()
	recs := followedRun()
	type setup struct {
		name  string
		open  func(t *testing.T) (Store, *storage.Counter)
		after bool // lists from a key: each Read lists one page
	}
	for _, c := range []setup{
		{"dir", func(t *testing.T) (Store, *storage.Counter) {
			d, err := OpenDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return d, nil
		}, false},
		{"object store listing from a key", func(t *testing.T) (Store, *storage.Counter) {
			b, n := storage.WithCounting(mem.New())
			r, err := OpenRemote(b)
			if err != nil {
				t.Fatal(err)
			}
			return r, n
		}, true},
		{"object store listing whole", func(t *testing.T) (Store, *storage.Counter) {
			r, err := OpenRemote(newMemStore(t))
			if err != nil {
				t.Fatal(err)
			}
			return r, nil
		}, false},
		{"other store", func(t *testing.T) (Store, *storage.Counter) {
			d, err := OpenDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			return wholeStore{d}, nil
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, counter := c.open(t)
			tail := NewTail(s, "tbl-1", "r-tail")
			if _, _, err := tail.Read(ctx); err == nil {
				t.Fatal("a run that does not exist was read")
			}
			tail = NewTail(s, "tbl-1", "r-tail")
			for i, r := range recs {
				if err := s.Append(ctx, r); err != nil {
					t.Fatal(err)
				}
				var before storage.RequestCounts
				if counter != nil {
					before = counter.Counts()
				}
				got, changed, err := tail.Read(ctx)
				if err != nil {
					t.Fatalf("after record %d: %v", i+1, err)
				}
				var used storage.RequestCounts
				if counter != nil {
					n := counter.Counts()
					used = storage.RequestCounts{ListPages: n.ListPages - before.ListPages, ReadRanges: n.ReadRanges - before.ReadRanges}
				}
				if !changed {
					t.Errorf("after record %d (%s): not changed", i+1, r.Kind)
				}
				want, err := ReadState(ctx, s, "tbl-1", "r-tail")
				if err != nil {
					t.Fatal(err)
				}
				if g, w := describe(got), describe(want); g != w {
					t.Fatalf("after record %d (%s) the tail shows\n%s\na replay\n%s", i+1, r.Kind, g, w)
				}
				if c.after && i > 0 && (used.ListPages != 1 || used.ReadRanges != 1) {
					t.Errorf("record %d: %d list pages, %d reads for one new record", i+1, used.ListPages, used.ReadRanges)
				}
				if _, changed, err := tail.Read(ctx); err != nil || changed {
					t.Errorf("a second Read with nothing new: changed %v, %v", changed, err)
				}
			}
		})
	}
}

// describe is what a follower shows of a state.
func describe(st *State) string {
	s := fmt.Sprintf("seq %d status %s end %v processes %d", st.LastSeq, st.Status, st.End != nil, len(st.Processes))
	for _, b := range st.Batches {
		s += fmt.Sprintf("\n  batch %d %s attempts %d rows %v", b.Batch, b.Status, b.Attempts, b.Result != nil)
	}
	for _, f := range st.Files() {
		s += fmt.Sprintf("\n  file %s batch %d %s %s", f.Key, f.Batch, f.Status, f.Delete)
	}
	return s
}

// TestTailLeavesALineBeingWritten: a local run file's last line without its newline (being
// written, or torn) is not read until it is complete; a run file replaced by a shorter one
// is an error.
func TestTailLeavesALineBeingWritten(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b := newRun("r-tail").plan(batch(1, "a"))
	path := filepath.Join(dir, "tbl-1", "r-tail.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	whole := b.jsonl(t)
	if err := os.WriteFile(path, whole, 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tail := NewTail(d, "tbl-1", "r-tail")
	if st, _, err := tail.Read(ctx); err != nil || st.LastSeq != 2 {
		t.Fatalf("%v %v", st, err)
	}
	next, err := encode(b.intent(1).records()[2])
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, next[:len(next)/2])
	if st, changed, err := tail.Read(ctx); err != nil || changed || st.LastSeq != 2 {
		t.Fatalf("half a line was read: changed %v, %v", changed, err)
	}
	appendTo(t, path, next[len(next)/2:])
	if st, changed, err := tail.Read(ctx); err != nil || !changed || st.LastSeq != 3 || st.Batch(1).Status != BatchOpen {
		t.Fatalf("the completed line: changed %v, %v", changed, err)
	}
	if err := os.WriteFile(path, whole[:len(whole)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tail.Read(ctx); err == nil {
		t.Error("a run file shorter than what was read of it was not an error")
	}
}

// TestTailRefusesARecordOutOfTurn: a record that does not follow the ones read is an error
// naming the run; on an object store, a record not yet visible while a later one is stops
// the Read before the later one.
func TestTailRefusesARecordOutOfTurn(t *testing.T) {
	ctx := context.Background()
	recs := newRun("r-tail").plan(batch(1, "a")).load(1).records()
	m := newMemStore(t)
	r, err := OpenRemote(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs[:2] {
		if err := r.Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	tail := NewTail(r, "tbl-1", "r-tail")
	if _, _, err := tail.Read(ctx); err != nil {
		t.Fatal(err)
	}
	// Record 4 is visible, record 3 not yet.
	line, err := encode(recs[3])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Put(ctx, recordKey("tbl-1", "r-tail", 4), bytes.NewReader(line), int64(len(line)), storage.PutOptions{CreateOnly: true}); err != nil {
		t.Fatal(err)
	}
	if st, changed, err := tail.Read(ctx); err != nil || changed || st.LastSeq != 2 {
		t.Fatalf("read past a record not yet visible: %v %v", changed, err)
	}
	if err := r.Append(ctx, recs[2]); err != nil {
		t.Fatal(err)
	}
	if st, changed, err := tail.Read(ctx); err != nil || !changed || st.LastSeq != 4 {
		t.Fatalf("once record 3 is there: %v %v", changed, err)
	}

	// A local run file whose next line is of another run.
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, rec := range recs[:2] {
		if err := d.Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	dt := NewTail(d, "tbl-1", "r-tail")
	if _, _, err := dt.Read(ctx); err != nil {
		t.Fatal(err)
	}
	other := recs[2]
	other.Seq = 7
	line, err = encode(other)
	if err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(dir, "tbl-1", "r-tail.jsonl"), line)
	if _, _, err := dt.Read(ctx); err == nil || !strings.Contains(err.Error(), "r-tail") || !strings.Contains(err.Error(), "seq 7") {
		t.Errorf("a record out of turn: %v", err)
	}
}

func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}
