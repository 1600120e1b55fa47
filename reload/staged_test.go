package reload

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// TestStagedPathIsTheFilesIdentity: a staged copy's path is derived from the table, the key
// under the fallback folder and the version, never from how a run's prefix spells the key.
func TestStagedPathIsTheFilesIdentity(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := journal.File{Key: "_zerobus/table_rejected_parquets/2026/01/01/f-1.parquet", Size: 10, ETag: `"abc"`, ModTime: at}
	p := StagedPath("tid-a", f)
	if !strings.HasPrefix(p, "tid-a/2026/01/01/f-1~") || !strings.HasSuffix(p, ".parquet") {
		t.Errorf("staged path %q", p)
	}
	other := map[string]journal.File{
		"another table":   f,
		"another key":     {Key: "_zerobus/table_rejected_parquets/2026/01/02/f-1.parquet", Size: 10, ETag: `"abc"`},
		"another version": {Key: f.Key, Size: 10, ETag: `"abd"`},
	}
	for what, g := range other {
		table := "tid-a"
		if what == "another table" {
			table = "tid-b"
		}
		if q := StagedPath(table, g); q == p {
			t.Errorf("%s: the same staged path %q", what, q)
		}
	}
	// A weak and a strong ETag of one version name one copy; a local file's version is its
	// size and modification time.
	if StagedPath("tid-a", journal.File{Key: f.Key, ETag: `W/"abc"`}) != StagedPath("tid-a", journal.File{Key: f.Key, ETag: `"abc"`}) {
		t.Error("a weak ETag names another copy")
	}
	local := journal.File{Key: f.Key, Size: 10, ModTime: at}
	if StagedPath("tid-a", local) == StagedPath("tid-a", journal.File{Key: f.Key, Size: 10, ModTime: at.Add(time.Second)}) {
		t.Error("a local file modified since names the same copy")
	}
	// Names a statement would read as a pattern, or a listing would hide, are made safe.
	for _, key := range []string{"_zerobus/table_rejected_parquets/a[1].parquet", "_zerobus/table_rejected_parquets/_x/b*.parquet"} {
		p := StagedPath("tid-a", journal.File{Key: key, Size: 1})
		if strings.ContainsAny(p, "[]*?{}") || strings.Contains(p, "/_") {
			t.Errorf("%s staged as %q", key, p)
		}
	}
}

// TestTwoTablesOneStagingFolder: two tables whose fallback files have the same names, staged
// to one folder, never meet: every copy holds its own table's bytes, and each table's
// statements name only its own copies.
func TestTwoTablesOneStagingFolder(t *testing.T) {
	vol := mem.New()
	a := newScene(t, 4, 2, 3)
	b := newScene(t, 4, 2, 3)
	b.tgt.TableID = "tid-0002"
	for _, k := range b.files {
		b.root.Set(fallbackPrefix+k, []byte("table b's bytes of "+k), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	}
	b.m.stagedIDs = map[string]string{}
	for _, k := range b.files {
		b.m.stagedIDs[b.stagedPath(k)] = k
	}
	for _, sc := range []*scene{a, b} {
		o := testOpts
		o.Stage = sc.stageOf(vol, "shared")
		if _, err := sc.reload(t, sc.deps(t, true), o); err != nil {
			t.Fatalf("table %s: %v", sc.tgt.TableID, err)
		}
	}
	for _, k := range a.files {
		pa, pb := a.stagedPath(k), b.stagedPath(k)
		if pa == pb {
			t.Fatalf("%s: both tables stage it to %s", k, pa)
		}
		for _, c := range []struct {
			sc   *scene
			path string
		}{{a, pa}, {b, pb}} {
			copyBytes, err := storage.ReadAll(context.Background(), vol, "shared/"+c.path, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			orig, _ := storage.ReadAll(context.Background(), c.sc.root, fallbackPrefix+k, 0, -1)
			if !bytes.Equal(copyBytes, orig) {
				t.Errorf("table %s's copy of %s holds %q", c.sc.tgt.TableID, k, copyBytes)
			}
			if n := c.sc.inTable(k); n != 1 {
				t.Errorf("table %s: %s loaded %d times", c.sc.tgt.TableID, k, n)
			}
		}
	}
}

// TestAPrefixNamesTheSameCopies: a second journal listing the table through a narrower
// --prefix stages each file to the same path as the first: the claims agree and COPY INTO,
// which tracks files by path, loads none of them twice.
func TestAPrefixNamesTheSameCopies(t *testing.T) {
	sc := newScene(t, 4, 2, 3)
	vol := mem.New()
	o := testOpts
	o.Stage = sc.stageOf(vol, "shared")
	if _, err := sc.reload(t, sc.deps(t, true), o); err != nil {
		t.Fatal(err)
	}
	other := *sc
	other.dir = t.TempDir() // another journal
	rep := other.report()
	sub := "2026/01/01/"
	rep.Prefix = fallbackPrefix + sub
	var files = rep.Files[:0]
	for _, f := range rep.Files {
		if rel, ok := strings.CutPrefix(f.Key, sub); ok {
			f.Key = rel
			files = append(files, f)
		}
	}
	rep.Files = files
	p, err := Prepare(context.Background(), other.deps(t, true), other.tgt, rep, other.table, o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Execute(context.Background(), RunOptions{})
	p.Close()
	if err == nil || !errors.Is(err, ErrUnknown) {
		t.Logf("second journal: %v", err)
	}
	for _, k := range sc.files {
		if n := sc.inTable(k); n != 1 {
			t.Errorf("%s loaded %d times", k, n)
		}
	}
}

// TestStagedCopyChangedBeforeItsStatement: a staged copy replaced between staging and the
// statement that reads it stops that batch before its statement: nothing of it is loaded,
// and the error says which copy changed.
func TestStagedCopyChangedBeforeItsStatement(t *testing.T) {
	sc := newScene(t, 2, 1, 3)
	vol := mem.New()
	o := testOpts
	o.BatchFiles = 1
	o.Stage = sc.stageOf(vol, "run")
	target := "run/" + sc.stagedPath(sc.files[1])
	sc.m.fault = func(stmt string, _ int) faultKind {
		if copyOf(stmt, "f-0000.parquet") {
			vol.Set(target, []byte("other bytes, written by someone else"), time.Now())
		}
		return faultNone
	}
	_, err := sc.reload(t, sc.deps(t, true), o)
	if !errors.Is(err, ErrStagedChanged) || !strings.Contains(err.Error(), sc.files[1]) {
		t.Fatalf("a copy replaced before its statement: %v", err)
	}
	if n := sc.inTable(sc.files[1]); n != 0 {
		t.Errorf("the changed copy's file was loaded %d times", n)
	}
	sc.m.mu.Lock()
	log := append([]string(nil), sc.m.log...)
	sc.m.mu.Unlock()
	for _, s := range log {
		if copyOf(s, "f-0001.parquet") {
			t.Errorf("a statement read the changed copy: %s", s)
		}
	}
}

// TestStagedPathHeldByOtherBytes: an object with other bytes at a copy's path (a copy cut
// short) is replaced by the copy before any statement reads it; one with the original's bytes
// (another journal's copy of the same file) is taken as it is.
func TestStagedPathHeldByOtherBytes(t *testing.T) {
	sc := newScene(t, 2, 1, 3)
	vol := mem.New()
	o := testOpts
	o.Stage = sc.stageOf(vol, "run")
	cut := "run/" + sc.stagedPath(sc.files[0])
	vol.Set(cut, []byte("PAR1 cut short"), time.Now())
	orig, _ := storage.ReadAll(context.Background(), sc.root, fallbackPrefix+sc.files[1], 0, -1)
	vol.Set("run/"+sc.stagedPath(sc.files[1]), orig, time.Now())
	rep, err := sc.reload(t, sc.deps(t, true), o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.StagedReplaced != 1 || rep.StagedReused != 1 || rep.Staged != 1 {
		t.Errorf("copied %d, reused %d, replaced %d; want 1, 1, 1", rep.Staged, rep.StagedReused, rep.StagedReplaced)
	}
	got, _ := storage.ReadAll(context.Background(), vol, cut, 0, -1)
	want, _ := storage.ReadAll(context.Background(), sc.root, fallbackPrefix+sc.files[0], 0, -1)
	if !bytes.Equal(got, want) {
		t.Errorf("the copy holds %q", got)
	}
	for _, k := range sc.files {
		if n := sc.inTable(k); n != 1 {
			t.Errorf("%s loaded %d times", k, n)
		}
	}
}
