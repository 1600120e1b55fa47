// Package mem is an in-memory storage backend for the tests of other packages: objects with
// ETags, preconditions, create-only writes, copies (also between Sub backends), listing in
// key order, optional list pages and batch deletes, all with the semantics the conformance
// suite checks on the real stores.
//
//	b := mem.New()
//	b.Set("_zerobus/table_rejected_parquets/f.parquet", data, modTime)
//	counted, counter := storage.WithCounting(b)
//
// A backend is safe for concurrent use. Sub returns a backend rooted under a prefix of the same
// objects, as a second URL in the same bucket would be.
package mem

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/storage"
)

// MaxBatchDelete is the most keys one DeleteBatch takes.
const MaxBatchDelete = 1000

// Backend is a set of objects in memory, seen under a root prefix.
type Backend struct {
	st       *store
	root     string // "" or ending in "/"
	pageSize int
}

type store struct {
	mu   sync.Mutex
	objs map[string]object // by full name (root + key)
	seq  int64
}

type object struct {
	data    []byte
	etag    string
	md5     string
	modTime time.Time
}

var (
	_ storage.Backend      = (*Backend)(nil)
	_ storage.Capable      = (*Backend)(nil)
	_ storage.BatchDeleter = (*Backend)(nil)
	_ storage.Pager        = (*Backend)(nil)
	_ storage.Putter       = (*Backend)(nil)
	_ storage.Copier       = (*Backend)(nil)
	_ storage.CopierFrom   = (*Backend)(nil)
	_ storage.AfterLister  = (*Backend)(nil)
)

// Option configures New.
type Option func(*Backend)

// WithPageSize makes the backend a storage.Pager that lists n objects per page (n > 0), as
// the cloud backends do; without it, List hands out every object in one go and the backend
// has no list pages.
func WithPageSize(n int) Option { return func(b *Backend) { b.pageSize = n } }

// New returns an empty backend.
func New(opts ...Option) *Backend {
	b := &Backend{st: &store{objs: map[string]object{}}}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Sub returns a backend on the same objects rooted at prefix under b's root, with b's page
// size.
func (b *Backend) Sub(prefix string) *Backend {
	root := b.root + strings.Trim(prefix, "/")
	if root != "" && !strings.HasSuffix(root, "/") {
		root += "/"
	}
	return &Backend{st: b.st, root: root, pageSize: b.pageSize}
}

// Paged returns a backend on the same objects and root that lists n objects per page (a
// storage.Pager), or, with n <= 0, in one go.
func (b *Backend) Paged(n int) *Backend {
	return &Backend{st: b.st, root: b.root, pageSize: n}
}

// Set writes an object directly, replacing any object with that key, with the given
// modification time: test setup. It panics on an invalid key.
func (b *Backend) Set(key string, data []byte, modTime time.Time) {
	if err := storage.CheckKey(key, b.Location()); err != nil {
		panic(err)
	}
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	b.st.write(b.root+key, bytes.Clone(data), modTime)
}

// write stores data under name; the caller holds the lock.
func (s *store) write(name string, data []byte, modTime time.Time) object {
	s.seq++
	sum := md5.Sum(data)
	o := object{
		data:    data,
		md5:     hex.EncodeToString(sum[:]),
		modTime: modTime.UTC(),
	}
	// Every write gets its own ETag, even of the same bytes, so that a precondition taken
	// before a rewrite never matches after it.
	o.etag = `"` + o.md5[:16] + "-" + strconv.FormatInt(s.seq, 10) + `"`
	s.objs[name] = o
	return o
}

// Capabilities implements storage.Capable: batch delete, put and copy, and list pages (which
// can start after a key) when the backend was made WithPageSize.
func (b *Backend) Capabilities() storage.Capabilities {
	c := storage.CanBatchDelete | storage.CanPut | storage.CanCopy | storage.CanCopyFrom
	if b.pageSize > 0 {
		c |= storage.CanListPages | storage.CanListAfter
	}
	return c
}

// AfterToken implements storage.AfterLister: page tokens are the last key listed, so the
// token to start after key is key.
func (b *Backend) AfterToken(key string) string { return key }

// Location implements storage.Backend: mem://<root>.
func (b *Backend) Location() string { return "mem://" + strings.TrimSuffix(b.root, "/") }

func (b *Backend) url(key string) string { return "mem://" + b.root + key }

func (b *Backend) info(key string, o object) storage.ObjectInfo {
	return storage.ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.modTime, ETag: o.etag, MD5: o.md5}
}

func (b *Backend) check(ctx context.Context, op, key string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", op, b.url(key), err)
	}
	return storage.CheckKey(key, b.Location())
}

// List implements storage.Backend, in key order.
func (b *Backend) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	if b.pageSize > 0 {
		return storage.ListPages(ctx, b, prefix, fn)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("list %s: %w", b.url(prefix), err)
	}
	for _, o := range b.snapshot(prefix, "", -1) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("list %s: %w", b.url(prefix), err)
		}
		if err := fn(o); err != nil {
			return err
		}
	}
	return nil
}

// snapshot returns, in key order, the objects under prefix whose key sorts after the key
// after ("" for all), at most n of them (n < 0: all).
func (b *Backend) snapshot(prefix, after string, n int) []storage.ObjectInfo {
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	var keys []string
	for name := range b.st.objs {
		key, ok := strings.CutPrefix(name, b.root)
		if ok && strings.HasPrefix(key, prefix) && key > after {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	if n >= 0 && len(keys) > n {
		keys = keys[:n]
	}
	out := make([]storage.ObjectInfo, len(keys))
	for i, k := range keys {
		out[i] = b.info(k, b.st.objs[b.root+k])
	}
	return out
}

// ListPage implements storage.Pager; the token is the last key of the page before. Without
// WithPageSize it fails with storage.ErrNotSupported.
func (b *Backend) ListPage(ctx context.Context, prefix, token string) ([]storage.ObjectInfo, string, error) {
	if b.pageSize <= 0 {
		return nil, "", fmt.Errorf("list %s: list pages: %w", b.Location(), storage.ErrNotSupported)
	}
	if err := ctx.Err(); err != nil {
		return nil, "", fmt.Errorf("list %s: %w", b.url(prefix), err)
	}
	page := b.snapshot(prefix, token, b.pageSize+1)
	next := ""
	if len(page) > b.pageSize {
		page = page[:b.pageSize]
		next = page[len(page)-1].Key
	}
	return page, next, nil
}

// Stat implements storage.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	if err := b.check(ctx, "stat", key); err != nil {
		return storage.ObjectInfo{}, err
	}
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	o, ok := b.st.objs[b.root+key]
	if !ok {
		return storage.ObjectInfo{}, fmt.Errorf("stat %s: %w", b.url(key), storage.ErrNotExist)
	}
	return b.info(key, o), nil
}

// ReadRange implements storage.Backend. The reader sees the object as it was when ReadRange
// was called.
func (b *Backend) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := b.check(ctx, "read", key); err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("read %s: negative offset %d", b.url(key), off)
	}
	b.st.mu.Lock()
	o, ok := b.st.objs[b.root+key]
	b.st.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("read %s: %w", b.url(key), storage.ErrNotExist)
	}
	size := int64(len(o.data))
	lo := min(off, size)
	hi := size
	if n >= 0 && n < size-lo {
		hi = lo + n
	}
	return io.NopCloser(bytes.NewReader(o.data[lo:hi])), nil
}

// Delete implements storage.Backend; the precondition is checked with
// storage.Precondition.Matches against the object's ETag and size.
func (b *Backend) Delete(ctx context.Context, key string, cond storage.Precondition) error {
	if err := b.check(ctx, "delete", key); err != nil {
		return err
	}
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	return b.deleteLocked(key, cond)
}

func (b *Backend) deleteLocked(key string, cond storage.Precondition) error {
	o, ok := b.st.objs[b.root+key]
	switch {
	case !ok && cond.IsZero():
		return nil
	case !ok:
		return fmt.Errorf("delete %s: %w", b.url(key), storage.ErrNotExist)
	case !cond.Matches(b.info(key, o)):
		return fmt.Errorf("delete %s: ETag %s, size %d: %w", b.url(key), o.etag, len(o.data), storage.ErrPreconditionFailed)
	}
	delete(b.st.objs, b.root+key)
	return nil
}

// MaxBatchDelete implements storage.BatchDeleter.
func (b *Backend) MaxBatchDelete() int { return MaxBatchDelete }

// DeleteBatch implements storage.BatchDeleter.
func (b *Backend) DeleteBatch(ctx context.Context, reqs []storage.DeleteRequest) ([]storage.DeleteResult, error) {
	if len(reqs) > MaxBatchDelete {
		return nil, fmt.Errorf("delete batch in %s: %d keys, at most %d per request", b.Location(), len(reqs), MaxBatchDelete)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("delete batch in %s: %w", b.Location(), err)
	}
	res := make([]storage.DeleteResult, len(reqs))
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	for i, r := range reqs {
		res[i].Key = r.Key
		if res[i].Err = storage.CheckKey(r.Key, b.Location()); res[i].Err == nil {
			res[i].Err = b.deleteLocked(r.Key, r.Cond)
		}
	}
	return res, nil
}

// Put implements storage.Putter. The data is read in full before the object appears.
func (b *Backend) Put(ctx context.Context, key string, r io.Reader, size int64, opts storage.PutOptions) (storage.ObjectInfo, error) {
	if err := b.check(ctx, "put", key); err != nil {
		return storage.ObjectInfo{}, err
	}
	if size < 0 {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: negative size %d", b.url(key), size)
	}
	data, err := io.ReadAll(storage.ExactReader(r, size))
	if err != nil {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: %w", b.url(key), err)
	}
	if err := ctx.Err(); err != nil {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: %w", b.url(key), err)
	}
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	if _, ok := b.st.objs[b.root+key]; ok && opts.CreateOnly {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: %w", b.url(key), storage.ErrExist)
	}
	return b.info(key, b.st.write(b.root+key, data, time.Now())), nil
}

// Copy implements storage.Copier.
func (b *Backend) Copy(ctx context.Context, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	return b.copyFrom(ctx, b, srcKey, dstKey, cond, opts)
}

// CopyFrom implements storage.CopierFrom: src must be (under its decorators) a backend on
// the same objects, as Sub returns; any other gives storage.ErrNotSupported.
func (b *Backend) CopyFrom(ctx context.Context, src storage.Backend, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	sb, ok := storage.Unwrap(src).(*Backend)
	if !ok || sb.st != b.st {
		return storage.ObjectInfo{}, fmt.Errorf("copy %s to %s: not the same store: %w", storage.ObjectURL(src, srcKey), b.url(dstKey), storage.ErrNotSupported)
	}
	return b.copyFrom(ctx, sb, srcKey, dstKey, cond, opts)
}

func (b *Backend) copyFrom(ctx context.Context, sb *Backend, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	if err := sb.check(ctx, "copy", srcKey); err != nil {
		return storage.ObjectInfo{}, err
	}
	if err := storage.CheckKey(dstKey, b.Location()); err != nil {
		return storage.ObjectInfo{}, err
	}
	where := sb.url(srcKey) + " to " + b.url(dstKey)
	b.st.mu.Lock()
	defer b.st.mu.Unlock()
	src, ok := b.st.objs[sb.root+srcKey]
	switch {
	case !ok:
		return storage.ObjectInfo{}, fmt.Errorf("copy %s: %w", where, storage.ErrNotExist)
	case !cond.Matches(sb.info(srcKey, src)):
		return storage.ObjectInfo{}, fmt.Errorf("copy %s: the source has ETag %s: %w", where, src.etag, storage.ErrPreconditionFailed)
	}
	if _, ok := b.st.objs[b.root+dstKey]; ok && opts.CreateOnly {
		return storage.ObjectInfo{}, fmt.Errorf("copy %s: %w", where, storage.ErrExist)
	}
	return b.info(dstKey, b.st.write(b.root+dstKey, src.data, time.Now())), nil
}
