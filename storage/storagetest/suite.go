// Package storagetest is the conformance suite that every storage backend runs, the
// request-counting front that the emulator helpers (s3test, gcstest, azuretest) share, and
// the small helpers their tests have in common (OpenURL, MustPut, ListAndReadTails,
// TransportFunc).
//
// A backend's test calls Run with a function that opens the backend on a fresh root and
// returns a Put that writes objects under that root with the store's own SDK (or os), so that
// the read tests do not depend on the backend's own writes (storage.Putter, which the Put and
// Copy tests check):
//
//	func TestConformance(t *testing.T) {
//		dir := t.TempDir()
//		storagetest.Run(t, "local", func(t *testing.T, root string) (storage.Backend, storagetest.Put) { ... })
//	}
//
// A backend tested on an emulator helper calls RunOn, which takes the root's URL and the Put
// from the helper (an Emulator):
//
//	func TestConformance(t *testing.T) {
//		srv := s3test.NewServer(t)
//		storagetest.RunOn(t, "s3", srv, func(t *testing.T, url string) storage.Backend { ... })
//	}
package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
)

// Put writes an object under the backend's root (key is relative to it), replacing any object
// with that key.
type Put func(key string, data []byte) error

// Open returns a backend rooted at root, a "/"-separated path the suite makes unique per
// test (the harness places it under its bucket, container or temporary directory), and a Put
// for the same root. Backends that list in pages must be opened with a page size of 2
// (storage.Config.PageSize) so that the listing tests cross page boundaries.
type Open func(t *testing.T, root string) (storage.Backend, Put)

// Run runs the conformance suite as the subtest name (TestConformance/<name>/...).
func Run(t *testing.T, name string, open Open) {
	t.Helper()
	s := &suite{open: open}
	t.Run(name, func(t *testing.T) {
		t.Run("Location", s.testLocation)
		t.Run("List", s.testList)
		t.Run("ListPages", s.testListPages)
		t.Run("ListStopsAtError", s.testListStop)
		t.Run("ListRootIsolation", s.testRootIsolation)
		t.Run("Stat", s.testStat)
		t.Run("ReadRange", s.testReadRange)
		t.Run("ReadRangeEmptyObject", s.testReadRangeEmpty)
		t.Run("ReadRangeLarge", s.testReadRangeLarge)
		t.Run("NotExist", s.testNotExist)
		t.Run("Delete", s.testDelete)
		t.Run("DeletePrecondition", s.testDeletePrecondition)
		t.Run("DeleteBatch", s.testDeleteBatch)
		t.Run("Cancel", s.testCancel)
		t.Run("CancelDuringList", s.testCancelDuringList)
		t.Run("HostileKeys", s.testHostileKeys)
		t.Run("PutCreateOnly", s.testPutCreateOnly)
		t.Run("PutCreateOnlyRace", s.testPutCreateOnlyRace)
		t.Run("PutOverwrite", s.testPutOverwrite)
		t.Run("PutWrongSize", s.testPutWrongSize)
		t.Run("PutHostileKeys", s.testPutHostileKeys)
		t.Run("Copy", s.testCopy)
		t.Run("CopyPrecondition", s.testCopyPrecondition)
		t.Run("CopyCreateOnly", s.testCopyCreateOnly)
		t.Run("CopyObject", s.testCopyObject)
	})
}

type suite struct {
	open Open
	n    atomic.Int64
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

// root returns a fresh root for the running test.
func (s *suite) root(t *testing.T) string {
	name := t.Name()
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return fmt.Sprintf("conf%d-%s", s.n.Add(1), strings.ToLower(nonWord.ReplaceAllString(name, "-")))
}

func (s *suite) backend(t *testing.T) (storage.Backend, Put) {
	t.Helper()
	return s.open(t, s.root(t))
}

// content returns n reproducible bytes that differ between seeds.
func content(seed int64, n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewSource(seed))
	r.Read(b)
	return b
}

func listAll(ctx context.Context, b storage.Backend, prefix string) ([]storage.ObjectInfo, error) {
	var out []storage.ObjectInfo
	err := b.List(ctx, prefix, func(o storage.ObjectInfo) error {
		out = append(out, o)
		return nil
	})
	return out, err
}

func keys(objs []storage.ObjectInfo) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Key
	}
	sort.Strings(out)
	return out
}

// listedOrder returns the keys of objs in the order they were listed.
func listedOrder(objs []storage.ObjectInfo) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Key
	}
	return out
}

func checkInfo(t *testing.T, what string, o storage.ObjectInfo, wantKey string, wantSize int64) {
	t.Helper()
	if o.Key != wantKey {
		t.Errorf("%s: key %q, want %q", what, o.Key, wantKey)
	}
	if o.Size != wantSize {
		t.Errorf("%s %q: size %d, want %d", what, o.Key, o.Size, wantSize)
	}
	if o.ModTime.IsZero() {
		t.Errorf("%s %q: zero modification time", what, o.Key)
	} else {
		if o.ModTime.Location() != time.UTC {
			t.Errorf("%s %q: modification time %v is not UTC", what, o.Key, o.ModTime)
		}
		// Generous bounds: the object was written moments ago on this machine.
		if d := time.Since(o.ModTime); d < -time.Hour || d > time.Hour {
			t.Errorf("%s %q: modification time %v is not near now", what, o.Key, o.ModTime)
		}
	}
	if o.ETag != "" && (len(o.ETag) < 2 || o.ETag[0] != '"' || o.ETag[len(o.ETag)-1] != '"') {
		t.Errorf("%s %q: ETag %s is not quoted", what, o.Key, o.ETag)
	}
}

func (s *suite) testLocation(t *testing.T) {
	b, _ := s.backend(t)
	loc := b.Location()
	if loc == "" {
		t.Fatal("Location() is empty")
	}
	if storage.Redact(loc) != loc {
		t.Errorf("Location() %q carries a secret", loc)
	}
}

// nested is the tree the listing tests use; the sizes differ so that a mix-up shows.
var nested = map[string]int{
	"a/1":       1,
	"a/2":       2,
	"a/b/3":     3,
	"a/b/c/4":   4,
	"a/bc":      5,
	"a/b-x":     6,
	"b/5":       7,
	"top":       8,
	"topaz/x/y": 9,
}

func putNested(t *testing.T, put Put) {
	t.Helper()
	for k, n := range nested {
		MustPut(t, put, k, content(int64(n), n))
	}
}

func wantKeys(prefix string) []string {
	var out []string
	for k := range nested {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (s *suite) testList(t *testing.T) {
	b, put := s.backend(t)
	ctx := context.Background()
	putNested(t, put)
	for _, prefix := range []string{"", "a/", "a/b", "a/b/", "a/b/c/", "top", "topaz/", "b/5", "nothing/", "a/bz"} {
		objs, err := listAll(ctx, b, prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		got, want := keys(objs), wantKeys(prefix)
		if !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q, want %q", prefix, got, want)
		}
		// Every store lists in lexical (byte) order of the whole key: "a/bc" after "a/b-x"
		// and "a/b/3", "top" before "topaz/x/y", whatever folders the keys run through.
		if order := listedOrder(objs); !slices.IsSorted(order) {
			t.Errorf("List(%q) returned %q, not in lexical key order", prefix, order)
		}
		if len(objs) != len(got) {
			t.Errorf("List(%q) returned %d objects for %d keys", prefix, len(objs), len(got))
		}
		seen := map[string]bool{}
		for _, o := range objs {
			if seen[o.Key] {
				t.Errorf("List(%q) returned %q twice", prefix, o.Key)
			}
			seen[o.Key] = true
			if n, ok := nested[o.Key]; ok {
				checkInfo(t, "List", o, o.Key, int64(n))
			}
		}
	}
}

// testListPages checks the page size of Pager backends: 9 objects in pages of 2 is 5 pages.
func (s *suite) testListPages(t *testing.T) {
	b, put := s.backend(t)
	p, ok := storage.AsPager(b)
	if !ok {
		t.Skip("backend lists without pages (no storage.Pager)")
	}
	ctx := context.Background()
	putNested(t, put)
	var all []string
	token, pages := "", 0
	for {
		page, next, err := p.ListPage(ctx, "", token)
		if err != nil {
			t.Fatalf("ListPage(token %q): %v", token, err)
		}
		pages++
		if len(page) > 2 {
			t.Errorf("page %d has %d objects; the harness must open the backend with PageSize 2", pages, len(page))
		}
		for _, o := range page {
			all = append(all, o.Key)
		}
		if next == "" {
			break
		}
		if pages > 20 {
			t.Fatal("ListPage does not end")
		}
		token = next
	}
	if want := (len(nested) + 1) / 2; pages < want {
		t.Errorf("%d pages, want at least %d", pages, want)
	}
	sort.Strings(all)
	if want := wantKeys(""); !slices.Equal(all, want) {
		t.Errorf("pages hold %q, want %q", all, want)
	}
	// A fresh listing resumes from a token taken from an earlier one.
	first, next, err := p.ListPage(ctx, "a/", "")
	if err != nil || next == "" {
		t.Fatalf("ListPage(a/) = %d objects, next %q, %v; want a next page", len(first), next, err)
	}
	rest, _, err := p.ListPage(ctx, "a/", next)
	if err != nil {
		t.Fatalf("ListPage(a/, %q): %v", next, err)
	}
	for _, o := range rest {
		if slices.ContainsFunc(first, func(f storage.ObjectInfo) bool { return f.Key == o.Key }) {
			t.Errorf("key %q is on the first and the second page", o.Key)
		}
	}
}

func (s *suite) testListStop(t *testing.T) {
	b, put := s.backend(t)
	putNested(t, put)
	stop := errors.New("stop here")
	calls := 0
	err := b.List(context.Background(), "", func(storage.ObjectInfo) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("List returned %v, want the callback's error", err)
	}
	if calls != 3 {
		t.Errorf("callback called %d times after returning an error on call 3", calls)
	}
}

func (s *suite) testRootIsolation(t *testing.T) {
	base := s.root(t)
	short, _ := s.open(t, base+"/a")
	long, putLong := s.open(t, base+"/ab")
	MustPut(t, putLong, "x", []byte("x"))
	objs, err := listAll(context.Background(), short, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 0 {
		t.Errorf("backend rooted at %s lists %q, which belong to %s", short.Location(), keys(objs), long.Location())
	}
	objs, err = listAll(context.Background(), long, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(objs); !slices.Equal(got, []string{"x"}) {
		t.Errorf("List = %q, want [x]", got)
	}
	if _, err := short.Stat(context.Background(), "x"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat of a key under another root: %v, want ErrNotExist", err)
	}
	// A prefix is matched literally against keys: ".." climbs out of nothing.
	for _, prefix := range []string{"../", "../ab/", "./../ab/x", "../ab/../ab/x"} {
		objs, err := listAll(context.Background(), short, prefix)
		if err != nil {
			t.Errorf("List(%q): %v", prefix, err)
		}
		if len(objs) != 0 {
			t.Errorf("backend rooted at %s lists %q for prefix %q: objects outside its root", short.Location(), keys(objs), prefix)
		}
	}
}

func (s *suite) testStat(t *testing.T) {
	b, put := s.backend(t)
	ctx := context.Background()
	putNested(t, put)
	listed, err := listAll(ctx, b, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range listed {
		o, err := b.Stat(ctx, l.Key)
		if err != nil {
			t.Errorf("Stat(%q): %v", l.Key, err)
			continue
		}
		checkInfo(t, "Stat", o, l.Key, int64(nested[l.Key]))
		if o.ETag != l.ETag {
			t.Errorf("Stat(%q).ETag = %s, List gave %s", l.Key, o.ETag, l.ETag)
		}
		if o.Generation != l.Generation {
			t.Errorf("Stat(%q).Generation = %d, List gave %d", l.Key, o.Generation, l.Generation)
		}
	}
	// A "directory" is not an object.
	if _, err := b.Stat(ctx, "a"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat(a) where only a/... exist: %v, want ErrNotExist", err)
	}
	if _, err := b.Stat(ctx, ""); err == nil || errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat of the empty key: %v, want an invalid-key error", err)
	}
}

func readRange(ctx context.Context, b storage.Backend, key string, off, n int64) ([]byte, error) {
	rc, err := b.ReadRange(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(rc)
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	return data, err
}

func (s *suite) testReadRange(t *testing.T) {
	b, put := s.backend(t)
	ctx := context.Background()
	data := content(42, 100)
	MustPut(t, put, "obj", data)
	cases := []struct{ off, n int64 }{
		{0, 10},   // start
		{45, 10},  // middle
		{90, 10},  // end, exactly
		{95, 10},  // runs past the end: clamped
		{0, 100},  // whole
		{0, 1000}, // whole, clamped
		{99, 1},   // last byte
		{100, 10}, // at the end: empty
		{150, 10}, // past the end: empty
		{0, -1},   // n < 0: to the end
		{60, -1},
		{99, -1},
		{100, -1},
		{10, 0},
	}
	for _, c := range cases {
		got, err := readRange(ctx, b, "obj", c.off, c.n)
		if err != nil {
			t.Errorf("ReadRange(%d, %d): %v", c.off, c.n, err)
			continue
		}
		lo, hi := min(c.off, 100), int64(100)
		if c.n >= 0 {
			hi = min(c.off+c.n, 100)
		}
		if !bytes.Equal(got, data[lo:hi]) {
			t.Errorf("ReadRange(%d, %d) = %d bytes, want bytes [%d, %d) of the object", c.off, c.n, len(got), lo, hi)
		}
	}
	// A length that reaches past the largest offset ("everything from here") is clamped too.
	for _, off := range []int64{0, 95, 100} {
		got, err := readRange(ctx, b, "obj", off, math.MaxInt64)
		if err != nil || !bytes.Equal(got, data[off:]) {
			t.Errorf("ReadRange(%d, MaxInt64) = %d bytes, %v; want the %d bytes from %d to the end", off, len(got), err, 100-off, off)
		}
	}
	if _, err := readRange(ctx, b, "obj", -1, 10); err == nil || errors.Is(err, storage.ErrNotExist) {
		t.Errorf("ReadRange with a negative offset: %v, want an invalid-argument error", err)
	}
}

func (s *suite) testReadRangeEmpty(t *testing.T) {
	b, put := s.backend(t)
	ctx := context.Background()
	MustPut(t, put, "empty", nil)
	for _, c := range []struct{ off, n int64 }{{0, -1}, {0, 10}, {5, 10}} {
		got, err := readRange(ctx, b, "empty", c.off, c.n)
		if err != nil || len(got) != 0 {
			t.Errorf("ReadRange(empty object, %d, %d) = %d bytes, %v; want nothing", c.off, c.n, len(got), err)
		}
	}
	o, err := b.Stat(ctx, "empty")
	if err != nil || o.Size != 0 {
		t.Errorf("Stat(empty object) = %+v, %v", o, err)
	}
}

func (s *suite) testReadRangeLarge(t *testing.T) {
	b, put := s.backend(t)
	ctx := context.Background()
	const size = 300 << 10
	data := content(7, size)
	MustPut(t, put, "dir/large.parquet", data)
	got, err := readRange(ctx, b, "dir/large.parquet", 0, -1)
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("whole read: %d bytes, %v; want the %d written", len(got), err, size)
	}
	// The footer read that inspect makes: the last 64 KiB, from the listed size.
	got, err = readRange(ctx, b, "dir/large.parquet", size-64<<10, 64<<10)
	if err != nil || !bytes.Equal(got, data[size-64<<10:]) {
		t.Errorf("tail read: %d bytes, %v", len(got), err)
	}
}

func (s *suite) testNotExist(t *testing.T) {
	b, put := s.backend(t)
	ctx := context.Background()
	MustPut(t, put, "present", []byte("here"))
	for _, key := range []string{"missing", "dir/missing", "presen", "present/child"} {
		if _, err := b.Stat(ctx, key); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("Stat(%q): %v, want ErrNotExist", key, err)
		}
		if _, err := readRange(ctx, b, key, 0, 10); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("ReadRange(%q): %v, want ErrNotExist", key, err)
		}
		if _, err := readRange(ctx, b, key, 0, -1); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("ReadRange(%q, 0, -1): %v, want ErrNotExist", key, err)
		}
		cond := storage.Precondition{ETag: `"0123456789abcdef0123456789abcdef"`, Generation: 1234, Size: 4, ModTime: time.Now().UTC()}
		if err := b.Delete(ctx, key, cond); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("conditional Delete(%q): %v, want ErrNotExist", key, err)
		}
	}
}

func (s *suite) testDelete(t *testing.T) {
	b, put := s.backend(t)
	ctx := context.Background()
	putNested(t, put)
	if err := b.Delete(ctx, "a/b/3", storage.Precondition{}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := b.Stat(ctx, "a/b/3"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat after Delete: %v, want ErrNotExist", err)
	}
	objs, err := listAll(ctx, b, "a/")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(keys(objs), "a/b/3") {
		t.Error("deleted object is still listed")
	}
	if len(objs) != len(wantKeys("a/"))-1 {
		t.Errorf("List(a/) after deleting one: %q", keys(objs))
	}
	// Idempotent: deleting an absent object without a precondition succeeds, twice.
	for i := 0; i < 2; i++ {
		if err := b.Delete(ctx, "a/b/3", storage.Precondition{}); err != nil {
			t.Errorf("Delete of an absent object (try %d): %v, want nil", i+1, err)
		}
	}
	if err := b.Delete(ctx, "never/existed", storage.Precondition{}); err != nil {
		t.Errorf("Delete of a never-written key: %v, want nil", err)
	}
	if err := b.Delete(ctx, "", storage.Precondition{}); err == nil {
		t.Error("Delete of the empty key succeeded, want an invalid-key error")
	}
}

func (s *suite) testDeletePrecondition(t *testing.T) {
	b, put := s.backend(t)
	ctx := context.Background()
	MustPut(t, put, "f.parquet", content(1, 100))
	old, err := b.Stat(ctx, "f.parquet")
	if err != nil {
		t.Fatal(err)
	}
	// The object is replaced after it was verified: the delete must be refused.
	newData := content(2, 150)
	MustPut(t, put, "f.parquet", newData)
	err = b.Delete(ctx, "f.parquet", old.Version())
	if !errors.Is(err, storage.ErrPreconditionFailed) {
		t.Fatalf("Delete with a stale version: %v, want ErrPreconditionFailed", err)
	}
	if got, err := readRange(ctx, b, "f.parquet", 0, -1); err != nil || !bytes.Equal(got, newData) {
		t.Fatalf("after a refused delete the object reads %d bytes, %v; want the new content kept", len(got), err)
	}
	// The current version, as listed, deletes.
	objs, err := listAll(ctx, b, "f.parquet")
	if err != nil || len(objs) != 1 {
		t.Fatalf("List(f.parquet) = %v, %v", objs, err)
	}
	if err := b.Delete(ctx, "f.parquet", objs[0].Version()); err != nil {
		t.Fatalf("Delete with the listed version: %v", err)
	}
	if _, err := b.Stat(ctx, "f.parquet"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Stat after a conditional delete: %v, want ErrNotExist", err)
	}
	// Again: the object is gone, which a conditional delete reports.
	if err := b.Delete(ctx, "f.parquet", objs[0].Version()); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("second conditional Delete: %v, want ErrNotExist", err)
	}
	// A version taken from Stat deletes too.
	MustPut(t, put, "g", content(3, 10))
	cur, err := b.Stat(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "g", cur.Version()); err != nil {
		t.Errorf("Delete with the stat'ed version: %v", err)
	}
}

func (s *suite) testDeleteBatch(t *testing.T) {
	b, put := s.backend(t)
	bd, ok := storage.AsBatchDeleter(b)
	if !ok {
		t.Skip("backend has no batch delete")
	}
	ctx := context.Background()
	max := bd.MaxBatchDelete()
	if max < 2 {
		t.Fatalf("MaxBatchDelete() = %d", max)
	}
	for i := 1; i <= 5; i++ {
		MustPut(t, put, fmt.Sprintf("k%d", i), content(int64(i), 10+i))
	}
	stale, err := b.Stat(ctx, "k3")
	if err != nil {
		t.Fatal(err)
	}
	MustPut(t, put, "k3", content(99, 50))
	cur2, err := b.Stat(ctx, "k2")
	if err != nil {
		t.Fatal(err)
	}
	listed, err := listAll(ctx, b, "k4")
	if err != nil || len(listed) != 1 {
		t.Fatalf("List(k4) = %v, %v", listed, err)
	}
	reqs := []storage.DeleteRequest{
		{Key: "k1"},                            // unconditional
		{Key: "k2", Cond: cur2.Version()},      // current version from Stat
		{Key: "k3", Cond: stale.Version()},     // replaced since: refused
		{Key: "k4", Cond: listed[0].Version()}, // current version from List
		{Key: "gone"},                          // absent, unconditional: fine
		{Key: "gone2", Cond: cur2.Version()},   // absent, conditional: ErrNotExist
	}
	res, err := bd.DeleteBatch(ctx, reqs)
	if err != nil {
		t.Fatalf("DeleteBatch: %v", err)
	}
	if len(res) != len(reqs) {
		t.Fatalf("DeleteBatch returned %d results for %d requests", len(res), len(reqs))
	}
	want := []error{nil, nil, storage.ErrPreconditionFailed, nil, nil, storage.ErrNotExist}
	for i, r := range res {
		if r.Key != reqs[i].Key {
			t.Errorf("result %d is for %q, want %q (results must follow the request order)", i, r.Key, reqs[i].Key)
		}
		if want[i] == nil && r.Err != nil || want[i] != nil && !errors.Is(r.Err, want[i]) {
			t.Errorf("result for %q: %v, want %v", r.Key, r.Err, want[i])
		}
	}
	objs, err := listAll(ctx, b, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(objs); !slices.Equal(got, []string{"k3", "k5"}) {
		t.Errorf("after the batch, List = %q, want [k3 k5]", got)
	}
	if o, err := b.Stat(ctx, "k3"); err != nil || o.Size != 50 {
		t.Errorf("k3 after a refused batch delete: %+v, %v; want the replacement kept", o, err)
	}
	if _, err := bd.DeleteBatch(ctx, make([]storage.DeleteRequest, max+1)); err == nil {
		t.Errorf("DeleteBatch of %d > MaxBatchDelete() requests succeeded", max+1)
	}
	if res, err := bd.DeleteBatch(ctx, nil); err != nil || len(res) != 0 {
		t.Errorf("empty DeleteBatch = %v, %v", res, err)
	}
}

func (s *suite) testCancel(t *testing.T) {
	b, put := s.backend(t)
	MustPut(t, put, "x/obj", content(5, 20))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.List(ctx, "", func(storage.ObjectInfo) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context: %v", err)
	}
	if _, err := b.Stat(ctx, "x/obj"); !errors.Is(err, context.Canceled) {
		t.Errorf("Stat with a cancelled context: %v", err)
	}
	if _, err := readRange(ctx, b, "x/obj", 0, -1); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadRange with a cancelled context: %v", err)
	}
	if err := b.Delete(ctx, "x/obj", storage.Precondition{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a cancelled context: %v", err)
	}
	if bd, ok := storage.AsBatchDeleter(b); ok {
		if _, err := bd.DeleteBatch(ctx, []storage.DeleteRequest{{Key: "x/obj"}}); !errors.Is(err, context.Canceled) {
			t.Errorf("DeleteBatch with a cancelled context: %v", err)
		}
	}
	if _, err := b.Stat(context.Background(), "x/obj"); err != nil {
		t.Errorf("the object is gone after cancelled deletes: %v", err)
	}
}

func (s *suite) testCancelDuringList(t *testing.T) {
	b, put := s.backend(t)
	putNested(t, put)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	err := b.List(ctx, "", func(storage.ObjectInfo) error {
		calls++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("List cancelled from its callback returned %v", err)
	}
	if calls >= len(nested) {
		t.Errorf("List went on for all %d objects after its context was cancelled", calls)
	}
}

// HostileKeys are object keys with characters that URL, XML and path handling get wrong:
// spaces, unicode, query and fragment markers, percent signs, quotes, plus and ampersand.
var HostileKeys = []string{
	"space dir/file name.parquet",
	"unicode/日本語/Grüße €.parquet",
	"query?x=1&y=2",
	"hash#fragment",
	"percent%20encoded",
	"percent%zz%",
	`quotes "double" 'single'`,
	"plus+sign+",
	"amp&ersand&amp;",
	"semi;colon=eq,comma",
	"tilde~bang!star*paren(1)",
	"brackets[0]{1}",
	"dollar$at@colon:",
	"lt<gt>",
	"caret^pipe|backtick`",
	"dots..dots/.hidden",
	"mixed/ ?#%+&\"'",
	"long/" + strings.Repeat("x", 200),
	" leading space",
	"trailing space ",
	"nfc/caf\u00e9",  // é as one code point
	"nfd/cafe\u0301", // é as e and a combining accent: a different key
	"tab\there",
	"very/" + strings.Repeat("long-segment-", 18) + "/" + strings.Repeat("y", 240) + "/" + strings.Repeat("z", 240) + "/" + strings.Repeat("w", 240),
}

func (s *suite) testHostileKeys(t *testing.T) {
	b, put := s.backend(t)
	ctx := context.Background()
	data := map[string][]byte{}
	for i, k := range HostileKeys {
		data[k] = content(int64(100+i), 10+i)
		MustPut(t, put, k, data[k])
	}
	objs, err := listAll(ctx, b, "")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(HostileKeys)
	sort.Strings(want)
	if got := keys(objs); !slices.Equal(got, want) {
		t.Fatalf("List = %q\nwant   %q", got, want)
	}
	if order := listedOrder(objs); !slices.IsSorted(order) {
		t.Errorf("List returned %q, not in lexical key order", order)
	}
	for _, o := range objs {
		k := o.Key
		checkInfo(t, "List", o, k, int64(len(data[k])))
		byPrefix, err := listAll(ctx, b, k)
		if err != nil || !slices.Contains(keys(byPrefix), k) {
			t.Errorf("List(prefix %q) = %q, %v; want it to include the key", k, keys(byPrefix), err)
		}
		st, err := b.Stat(ctx, k)
		if err != nil {
			t.Errorf("Stat(%q): %v", k, err)
		} else {
			checkInfo(t, "Stat", st, k, int64(len(data[k])))
		}
		got, err := readRange(ctx, b, k, 2, 5)
		if err != nil || !bytes.Equal(got, data[k][2:7]) {
			t.Errorf("ReadRange(%q, 2, 5) = %q, %v", k, got, err)
		}
		if err := b.Delete(ctx, k, o.Version()); err != nil {
			t.Errorf("Delete(%q): %v", k, err)
		}
		if _, err := b.Stat(ctx, k); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("Stat(%q) after Delete: %v, want ErrNotExist", k, err)
		}
	}
	objs, err = listAll(ctx, b, "")
	if err != nil || len(objs) != 0 {
		t.Errorf("after deleting every key, List = %q, %v", keys(objs), err)
	}
}
