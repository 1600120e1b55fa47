package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// putter returns b's storage.Putter, or skips the test for a read-only backend.
func putter(t *testing.T, b storage.Backend) storage.Putter {
	t.Helper()
	p, ok := storage.AsPutter(b)
	if !ok {
		t.Skip("backend does not write (no storage.Putter)")
	}
	return p
}

func copier(t *testing.T, b storage.Backend) storage.Copier {
	t.Helper()
	c, ok := storage.AsCopier(b)
	if !ok {
		t.Skip("backend does not copy (no storage.Copier)")
	}
	return c
}

// mustRead reads the whole object, failing the test on an error.
func mustRead(t *testing.T, b storage.Backend, key string) []byte {
	t.Helper()
	got, err := readRange(context.Background(), b, key, 0, -1)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return got
}

// checkWritten checks the info a Put or Copy returned against the object as Stat sees it
// and against the data that should be there.
func checkWritten(t *testing.T, b storage.Backend, what string, got storage.ObjectInfo, key string, data []byte) storage.ObjectInfo {
	t.Helper()
	st, err := b.Stat(context.Background(), key)
	if err != nil {
		t.Fatalf("%s: Stat(%q) of the new object: %v", what, key, err)
	}
	if got.Key != key || got.Size != int64(len(data)) {
		t.Errorf("%s returned key %q, size %d; want %q, %d", what, got.Key, got.Size, key, len(data))
	}
	if got.ETag != st.ETag || got.Generation != st.Generation {
		t.Errorf("%s returned ETag %s, generation %d; Stat says %s, %d", what, got.ETag, got.Generation, st.ETag, st.Generation)
	}
	if got.ETag == "" && got.Generation == 0 && st.ModTime.IsZero() {
		t.Errorf("%s: the object has no version at all (ETag, generation or modification time)", what)
	}
	if got.MD5 != "" && len(got.MD5) != 32 {
		t.Errorf("%s returned MD5 %q, not 32 hex digits", what, got.MD5)
	}
	checkInfo(t, what+" then Stat", st, key, int64(len(data)))
	if read := mustRead(t, b, key); !bytes.Equal(read, data) {
		t.Errorf("%s: %q reads %d bytes, want the %d written", what, key, len(read), len(data))
	}
	return st
}

// A create-only put writes a new key once; the second fails with ErrExist and leaves the
// first object as it was.
func (s *suite) testPutCreateOnly(t *testing.T) {
	b, put := s.backend(t)
	p := putter(t, b)
	ctx := context.Background()
	first, second := content(11, 300), content(12, 200)
	o, err := p.Put(ctx, "journal/000001-intent.json", bytes.NewReader(first), int64(len(first)), storage.PutOptions{CreateOnly: true})
	if err != nil {
		t.Fatalf("first create-only Put: %v", err)
	}
	before := checkWritten(t, b, "create-only Put", o, "journal/000001-intent.json", first)
	_, err = p.Put(ctx, "journal/000001-intent.json", bytes.NewReader(second), int64(len(second)), storage.PutOptions{CreateOnly: true})
	if !errors.Is(err, storage.ErrExist) {
		t.Fatalf("second create-only Put: %v, want ErrExist", err)
	}
	if errors.Is(err, storage.ErrPreconditionFailed) || errors.Is(err, storage.ErrNotExist) || storage.IsRetryable(err) {
		t.Errorf("ErrExist error %v also says another thing", err)
	}
	if got := mustRead(t, b, "journal/000001-intent.json"); !bytes.Equal(got, first) {
		t.Errorf("after a refused create-only Put the object reads %d bytes, want the first %d", len(got), len(first))
	}
	after, err := b.Stat(ctx, "journal/000001-intent.json")
	if err != nil || after.ETag != before.ETag || after.Generation != before.Generation || after.Size != before.Size {
		t.Errorf("after a refused create-only Put: %+v, %v; want %+v", after, err, before)
	}
	// An object the store's own tools wrote counts as existing too.
	MustPut(t, put, "other", []byte("there"))
	if _, err := p.Put(ctx, "other", bytes.NewReader(first), int64(len(first)), storage.PutOptions{CreateOnly: true}); !errors.Is(err, storage.ErrExist) {
		t.Errorf("create-only Put over an existing object: %v, want ErrExist", err)
	}
	if got := mustRead(t, b, "other"); string(got) != "there" {
		t.Errorf("existing object changed to %q", got)
	}
	// An empty object is an object.
	if _, err := p.Put(ctx, "empty", strings.NewReader(""), 0, storage.PutOptions{CreateOnly: true}); err != nil {
		t.Errorf("create-only Put of an empty object: %v", err)
	}
	if _, err := p.Put(ctx, "empty", strings.NewReader(""), 0, storage.PutOptions{CreateOnly: true}); !errors.Is(err, storage.ErrExist) {
		t.Errorf("second create-only Put of an empty object: %v, want ErrExist", err)
	}
	objs, err := listAll(ctx, b, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(objs); !slices.Equal(got, []string{"empty", "journal/000001-intent.json", "other"}) {
		t.Errorf("List = %q", got)
	}
	if _, err := p.Put(ctx, "", strings.NewReader(""), 0, storage.PutOptions{CreateOnly: true}); err == nil {
		t.Error("Put of the empty key succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Put(cctx, "cancelled", strings.NewReader("x"), 1, storage.PutOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context: %v", err)
	}
	if _, err := b.Stat(ctx, "cancelled"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("a cancelled Put left an object: %v", err)
	}
}

// Of several create-only writers of one key, exactly one succeeds and the object holds its
// data; the others get ErrExist.
func (s *suite) testPutCreateOnlyRace(t *testing.T) {
	b, _ := s.backend(t)
	p := putter(t, b)
	ctx := context.Background()
	const writers = 6
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			data := content(int64(40+i), 2000+i)
			_, errs[i] = p.Put(ctx, "lock", bytes.NewReader(data), int64(len(data)), storage.PutOptions{CreateOnly: true})
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("writers %d and %d both created the object", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, storage.ErrExist):
			t.Errorf("writer %d: %v, want ErrExist", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer created the object")
	}
	if got := mustRead(t, b, "lock"); !bytes.Equal(got, content(int64(40+winner), 2000+winner)) {
		t.Errorf("the object holds %d bytes, not the winner's data", len(got))
	}
	if objs, err := listAll(ctx, b, ""); err != nil || len(objs) != 1 {
		t.Errorf("List after the race = %q, %v; want the one object", keys(objs), err)
	}
}

// A plain put replaces the object, with a new version.
func (s *suite) testPutOverwrite(t *testing.T) {
	b, put := s.backend(t)
	p := putter(t, b)
	ctx := context.Background()
	MustPut(t, put, "f.parquet", content(1, 100))
	old, err := b.Stat(ctx, "f.parquet")
	if err != nil {
		t.Fatal(err)
	}
	data := content(2, 70<<10) // larger than one read buffer
	o, err := p.Put(ctx, "f.parquet", bytes.NewReader(data), int64(len(data)), storage.PutOptions{})
	if err != nil {
		t.Fatalf("Put over an existing object: %v", err)
	}
	checkWritten(t, b, "overwriting Put", o, "f.parquet", data)
	if old.Version().Matches(o) && (o.ETag != "" || o.Generation != 0) {
		t.Errorf("the rewritten object keeps the old version %+v", o)
	}
	if err := b.Delete(ctx, "f.parquet", old.Version()); !errors.Is(err, storage.ErrPreconditionFailed) {
		t.Errorf("Delete with the version before the Put: %v, want ErrPreconditionFailed", err)
	}
	// The same bytes again, through a reader that cannot seek.
	o2, err := p.Put(ctx, "f.parquet", io.MultiReader(bytes.NewReader(data)), int64(len(data)), storage.PutOptions{})
	if err != nil {
		t.Fatalf("second Put from a plain reader: %v", err)
	}
	checkWritten(t, b, "second Put", o2, "f.parquet", data)
	objs, err := listAll(ctx, b, "")
	if err != nil || len(objs) != 1 || objs[0].Size != int64(len(data)) {
		t.Errorf("List after two puts = %+v, %v", objs, err)
	}
	if err := b.Delete(ctx, "f.parquet", o2.Version()); err != nil {
		t.Errorf("Delete with the version Put returned: %v", err)
	}
}

// A put whose reader holds fewer or more bytes than announced, or fails, stores nothing.
func (s *suite) testPutWrongSize(t *testing.T) {
	b, _ := s.backend(t)
	p := putter(t, b)
	ctx := context.Background()
	data := content(3, 1000)
	cases := map[string]struct {
		r    io.Reader
		size int64
	}{
		"short":   {bytes.NewReader(data[:600]), 1000},
		"long":    {bytes.NewReader(data), 600},
		"failing": {io.MultiReader(bytes.NewReader(data[:500]), iotest.ErrReader(errors.New("disk on fire"))), 1000},
	}
	for name, c := range cases {
		for _, createOnly := range []bool{true, false} {
			key := fmt.Sprintf("%s-%v", name, createOnly)
			if _, err := p.Put(ctx, key, c.r, c.size, storage.PutOptions{CreateOnly: createOnly}); err == nil {
				t.Errorf("Put %s (create-only %v) succeeded", name, createOnly)
			}
			if o, err := b.Stat(ctx, key); !errors.Is(err, storage.ErrNotExist) {
				t.Errorf("after a failed Put %s (create-only %v): %+v, %v; want no object", name, createOnly, o, err)
			}
			c.r = bytes.NewReader(data[:0]) // consumed: the second try gets a fresh short reader
			if name == "long" {
				c.r = bytes.NewReader(data)
			}
		}
	}
}

func (s *suite) testPutHostileKeys(t *testing.T) {
	b, _ := s.backend(t)
	p := putter(t, b)
	ctx := context.Background()
	data := map[string][]byte{}
	for i, k := range HostileKeys {
		data[k] = content(int64(200+i), 5+i)
		o, err := p.Put(ctx, k, bytes.NewReader(data[k]), int64(len(data[k])), storage.PutOptions{CreateOnly: true})
		if err != nil {
			t.Errorf("Put(%q): %v", k, err)
			continue
		}
		checkWritten(t, b, "Put", o, k, data[k])
	}
	objs, err := listAll(ctx, b, "")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(HostileKeys)
	sort.Strings(want)
	if got := keys(objs); !slices.Equal(got, want) {
		t.Errorf("List = %q\nwant   %q", got, want)
	}
	for _, k := range HostileKeys {
		if _, err := p.Put(ctx, k, bytes.NewReader(nil), 0, storage.PutOptions{CreateOnly: true}); !errors.Is(err, storage.ErrExist) {
			t.Errorf("second create-only Put(%q): %v, want ErrExist", k, err)
		}
	}
}

func (s *suite) testCopy(t *testing.T) {
	b, put := s.backend(t)
	c := copier(t, b)
	ctx := context.Background()
	data := content(21, 5000)
	MustPut(t, put, "src dir/a.parquet", data)
	o, err := c.Copy(ctx, "src dir/a.parquet", "archive/ü/a.parquet", storage.Precondition{}, storage.PutOptions{})
	if err != nil {
		t.Fatalf("Copy: %v", err)
	}
	checkWritten(t, b, "Copy", o, "archive/ü/a.parquet", data)
	if got := mustRead(t, b, "src dir/a.parquet"); !bytes.Equal(got, data) {
		t.Error("Copy changed its source")
	}
	// Over an existing object, with the source's current version as the precondition.
	MustPut(t, put, "dst", []byte("old"))
	src, err := b.Stat(ctx, "src dir/a.parquet")
	if err != nil {
		t.Fatal(err)
	}
	o, err = c.Copy(ctx, "src dir/a.parquet", "dst", src.Version(), storage.PutOptions{})
	if err != nil {
		t.Fatalf("Copy with the current version over an existing object: %v", err)
	}
	checkWritten(t, b, "Copy over an object", o, "dst", data)
	// An empty object copies.
	MustPut(t, put, "empty", nil)
	if o, err = c.Copy(ctx, "empty", "empty-copy", storage.Precondition{}, storage.PutOptions{CreateOnly: true}); err != nil {
		t.Fatalf("Copy of an empty object: %v", err)
	}
	checkWritten(t, b, "Copy of an empty object", o, "empty-copy", nil)
	// A missing source.
	if _, err := c.Copy(ctx, "missing", "x", storage.Precondition{}, storage.PutOptions{}); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Copy of a missing source: %v, want ErrNotExist", err)
	}
	if _, err := b.Stat(ctx, "x"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("Copy of a missing source made %q: %v", "x", err)
	}
}

// A source that changed since it was verified is not copied, and no destination appears.
func (s *suite) testCopyPrecondition(t *testing.T) {
	b, put := s.backend(t)
	c := copier(t, b)
	ctx := context.Background()
	MustPut(t, put, "f.parquet", content(1, 100))
	old, err := b.Stat(ctx, "f.parquet")
	if err != nil {
		t.Fatal(err)
	}
	MustPut(t, put, "f.parquet", content(2, 150))
	for _, opts := range []storage.PutOptions{{}, {CreateOnly: true}} {
		_, err = c.Copy(ctx, "f.parquet", "staged/f.parquet", old.Version(), opts)
		if !errors.Is(err, storage.ErrPreconditionFailed) {
			t.Errorf("Copy with a stale version (%+v): %v, want ErrPreconditionFailed", opts, err)
		}
		if o, err := b.Stat(ctx, "staged/f.parquet"); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("a refused Copy left a destination: %+v, %v", o, err)
		}
	}
	if _, err := c.Copy(ctx, "gone", "staged/g", old.Version(), storage.PutOptions{}); !errors.Is(err, storage.ErrNotExist) && !errors.Is(err, storage.ErrPreconditionFailed) {
		t.Errorf("Copy of a missing source with a precondition: %v, want ErrNotExist or ErrPreconditionFailed", err)
	}
}

// A create-only copy onto an existing key fails with ErrExist and leaves it.
func (s *suite) testCopyCreateOnly(t *testing.T) {
	b, put := s.backend(t)
	c := copier(t, b)
	ctx := context.Background()
	MustPut(t, put, "src", content(5, 64))
	MustPut(t, put, "dst", []byte("keep me"))
	before, err := b.Stat(ctx, "dst")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Copy(ctx, "src", "dst", storage.Precondition{}, storage.PutOptions{CreateOnly: true})
	if !errors.Is(err, storage.ErrExist) {
		t.Fatalf("create-only Copy onto an existing key: %v, want ErrExist", err)
	}
	if got := mustRead(t, b, "dst"); string(got) != "keep me" {
		t.Errorf("destination changed to %q", got)
	}
	if after, err := b.Stat(ctx, "dst"); err != nil || after.ETag != before.ETag || after.Generation != before.Generation {
		t.Errorf("destination after a refused copy: %+v, %v; was %+v", after, err, before)
	}
	o, err := c.Copy(ctx, "src", "new", storage.Precondition{}, storage.PutOptions{CreateOnly: true})
	if err != nil {
		t.Fatalf("create-only Copy to a new key: %v", err)
	}
	checkWritten(t, b, "create-only Copy", o, "new", content(5, 64))
}

// storage.CopyObject between two roots of this store and between this store and memory.
func (s *suite) testCopyObject(t *testing.T) {
	base := s.root(t)
	b1, put1 := s.open(t, base+"/one")
	b2, _ := s.open(t, base+"/two")
	if _, ok := storage.AsPutter(b1); !ok {
		t.Skip("backend does not write (no storage.Putter)")
	}
	ctx := context.Background()
	data := content(31, 100<<10)
	MustPut(t, put1, "in/f.parquet", data)
	src, err := b1.Stat(ctx, "in/f.parquet")
	if err != nil {
		t.Fatal(err)
	}

	// The same backend: a server-side copy where there is one, no read through the client.
	counted, counter := storage.WithCounting(b1)
	o, err := storage.CopyObject(ctx, counted, "in/f.parquet", counted, "out/f.parquet", src.Version(), storage.PutOptions{CreateOnly: true})
	if err != nil {
		t.Fatalf("CopyObject within one backend: %v", err)
	}
	checkWritten(t, b1, "CopyObject within one backend", o, "out/f.parquet", data)
	if _, ok := storage.AsCopier(b1); ok {
		if c := counter.Counts(); c.Copies != 1 || c.ReadRanges != 0 || c.Puts != 0 {
			t.Errorf("CopyObject within a Copier backend made %s; want one copy", c)
		}
	}

	// Two roots: a server-side copy where the store can copy between them (CopierFrom),
	// both decorated as the command line decorates them; else streamed and verified.
	from, _ := storage.WithCounting(storage.WithLimit(b1, 1))
	to, toCounter := storage.WithCounting(b2)
	o, err = storage.CopyObject(ctx, from, "in/f.parquet", storage.WithLimit(storage.WithRetry(to, storage.RetryPolicy{}), 1), "staged/f.parquet", src.Version(), storage.PutOptions{CreateOnly: true})
	if err != nil {
		t.Fatalf("CopyObject to another root: %v", err)
	}
	checkWritten(t, b2, "CopyObject to another root", o, "staged/f.parquet", data)
	if _, ok := storage.AsCopierFrom(b2); ok {
		if c := toCounter.Counts(); c.Copies != 1 || c.Puts != 0 {
			t.Errorf("CopyObject between two roots of a CopierFrom store made %s; want one copy", c)
		}
	} else if o.MD5 == "" {
		t.Error("CopyObject returned no MD5")
	}
	if _, err := storage.CopyObject(ctx, b1, "in/f.parquet", b2, "staged/f.parquet", src.Version(), storage.PutOptions{CreateOnly: true}); !errors.Is(err, storage.ErrExist) {
		t.Errorf("second create-only CopyObject: %v, want ErrExist", err)
	}

	// To and from memory.
	m := mem.New()
	if _, err := storage.CopyObject(ctx, b1, "in/f.parquet", m, "f", storage.Precondition{}, storage.PutOptions{}); err != nil {
		t.Fatalf("CopyObject to memory: %v", err)
	}
	if got := mustRead(t, m, "f"); !bytes.Equal(got, data) {
		t.Error("the copy in memory differs")
	}
	o, err = storage.CopyObject(ctx, m, "f", b2, "from-mem/f", storage.Precondition{}, storage.PutOptions{})
	if err != nil {
		t.Fatalf("CopyObject from memory: %v", err)
	}
	checkWritten(t, b2, "CopyObject from memory", o, "from-mem/f", data)

	// A stale precondition copies nothing, on either path.
	MustPut(t, put1, "in/f.parquet", content(32, 10))
	for name, dst := range map[string]storage.Backend{"same backend": b1, "other root": b2, "memory": m} {
		_, err := storage.CopyObject(ctx, b1, "in/f.parquet", dst, "stale/f", src.Version(), storage.PutOptions{})
		if !errors.Is(err, storage.ErrPreconditionFailed) {
			t.Errorf("CopyObject (%s) with a stale version: %v, want ErrPreconditionFailed", name, err)
		}
		if _, err := dst.Stat(ctx, "stale/f"); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("a refused CopyObject (%s) left a destination: %v", name, err)
		}
	}
}
