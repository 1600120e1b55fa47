package storage

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// RequestCounts is a snapshot of a Counter.
type RequestCounts struct {
	// ListPages counts list requests: one per page of a Pager backend, one per List call of
	// a backend that lists without pages.
	ListPages     int64
	ReadRanges    int64
	Stats         int64
	Deletes       int64
	DeleteBatches int64
	// BatchKeys counts the keys sent in DeleteBatch calls.
	BatchKeys int64
	Puts      int64
	Copies    int64
}

// Total is the number of requests: list pages, reads, stats, deletes, batch deletes, puts
// and copies.
func (c RequestCounts) Total() int64 {
	return c.ListPages + c.ReadRanges + c.Stats + c.Deletes + c.DeleteBatches + c.Puts + c.Copies
}

// Add returns the sum of c and d, field by field.
func (c RequestCounts) Add(d RequestCounts) RequestCounts {
	return RequestCounts{ListPages: c.ListPages + d.ListPages, ReadRanges: c.ReadRanges + d.ReadRanges, Stats: c.Stats + d.Stats,
		Deletes: c.Deletes + d.Deletes, DeleteBatches: c.DeleteBatches + d.DeleteBatches, BatchKeys: c.BatchKeys + d.BatchKeys,
		Puts: c.Puts + d.Puts, Copies: c.Copies + d.Copies}
}

func (c RequestCounts) String() string {
	return fmt.Sprintf("list-pages=%d reads=%d stats=%d deletes=%d delete-batches=%d (%d keys) puts=%d copies=%d",
		c.ListPages, c.ReadRanges, c.Stats, c.Deletes, c.DeleteBatches, c.BatchKeys, c.Puts, c.Copies)
}

// Counter counts the requests made through a WithCounting backend. It is safe for concurrent
// use.
type Counter struct {
	listPages, readRanges, stats, deletes, deleteBatches, batchKeys, puts, copies atomic.Int64

	mu         sync.Mutex
	readsByKey map[string]int64
}

// Counts returns the counts so far.
func (c *Counter) Counts() RequestCounts {
	return RequestCounts{
		ListPages: c.listPages.Load(), ReadRanges: c.readRanges.Load(), Stats: c.stats.Load(),
		Deletes: c.deletes.Load(), DeleteBatches: c.deleteBatches.Load(), BatchKeys: c.batchKeys.Load(),
		Puts: c.puts.Load(), Copies: c.copies.Load(),
	}
}

// ReadsOf returns the number of ReadRange requests made for key.
func (c *Counter) ReadsOf(key string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readsByKey[key]
}

// Reset sets the counts back to zero.
func (c *Counter) Reset() {
	for _, v := range []*atomic.Int64{&c.listPages, &c.readRanges, &c.stats, &c.deletes, &c.deleteBatches, &c.batchKeys, &c.puts, &c.copies} {
		v.Store(0)
	}
	c.mu.Lock()
	c.readsByKey = nil
	c.mu.Unlock()
}

// WithCounting returns b with every request counted, per operation, in the returned Counter.
// Failed requests count too.
func WithCounting(b Backend) (Backend, *Counter) {
	c := &Counter{}
	return &hooked{inner: b, before: c.count}, c
}

func (c *Counter) count(_ context.Context, op op, key string, keys int) error {
	switch op {
	case opListPage:
		c.listPages.Add(1)
	case opReadRange:
		c.readRanges.Add(1)
		c.mu.Lock()
		if c.readsByKey == nil {
			c.readsByKey = map[string]int64{}
		}
		c.readsByKey[key]++
		c.mu.Unlock()
	case opStat:
		c.stats.Add(1)
	case opDelete:
		c.deletes.Add(1)
	case opDeleteBatch:
		c.deleteBatches.Add(1)
		c.batchKeys.Add(int64(keys))
	case opPut:
		c.puts.Add(1)
	case opCopy:
		c.copies.Add(1)
	}
	return nil
}

// WithLatency returns b with every request (each list page, read, stat, delete, batch
// delete, put and copy) delayed by d, for benchmarks that model a remote store over a fast
// local one.
func WithLatency(b Backend, d time.Duration) Backend {
	return &hooked{inner: b, before: func(ctx context.Context, _ op, _ string, _ int) error {
		if d <= 0 {
			return ctx.Err()
		}
		return sleep(ctx, d)
	}}
}

type op int

const (
	opListPage op = iota
	opReadRange
	opStat
	opDelete
	opDeleteBatch
	opPut
	opCopy
)

// hooked calls before ahead of every request; an error from it fails the request.
type hooked struct {
	inner  Backend
	before func(ctx context.Context, op op, key string, keys int) error
}

var _ decorator = (*hooked)(nil)

func (h *hooked) Location() string { return h.inner.Location() }

// Capabilities implements Capable: those of the wrapped backend.
func (h *hooked) Capabilities() Capabilities { return CapabilitiesOf(h.inner) }

func (h *hooked) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if CapabilitiesOf(h.inner).Has(CanListPages) {
		return ListPages(ctx, h, prefix, fn)
	}
	if err := h.before(ctx, opListPage, prefix, 0); err != nil {
		return err
	}
	return h.inner.List(ctx, prefix, fn)
}

func (h *hooked) ListPage(ctx context.Context, prefix, token string) ([]ObjectInfo, string, error) {
	if err := h.before(ctx, opListPage, prefix, 0); err != nil {
		return nil, "", err
	}
	return innerListPage(ctx, h.inner, prefix, token)
}

func (h *hooked) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := h.before(ctx, opStat, key, 0); err != nil {
		return ObjectInfo{}, err
	}
	return h.inner.Stat(ctx, key)
}

func (h *hooked) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := h.before(ctx, opReadRange, key, 0); err != nil {
		return nil, err
	}
	return h.inner.ReadRange(ctx, key, off, n)
}

func (h *hooked) Delete(ctx context.Context, key string, cond Precondition) error {
	if err := h.before(ctx, opDelete, key, 0); err != nil {
		return err
	}
	return h.inner.Delete(ctx, key, cond)
}

func (h *hooked) DeleteBatch(ctx context.Context, reqs []DeleteRequest) ([]DeleteResult, error) {
	bd, err := innerBatch(h.inner)
	if err != nil {
		return nil, err
	}
	if err := h.before(ctx, opDeleteBatch, "", len(reqs)); err != nil {
		return nil, err
	}
	return bd.DeleteBatch(ctx, reqs)
}

func (h *hooked) MaxBatchDelete() int { return maxBatch(h.inner) }

func (h *hooked) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (ObjectInfo, error) {
	p, err := innerPutter(h.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := h.before(ctx, opPut, key, 0); err != nil {
		return ObjectInfo{}, err
	}
	return p.Put(ctx, key, r, size, opts)
}

func (h *hooked) Copy(ctx context.Context, srcKey, dstKey string, cond Precondition, opts PutOptions) (ObjectInfo, error) {
	c, err := innerCopier(h.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := h.before(ctx, opCopy, dstKey, 0); err != nil {
		return ObjectInfo{}, err
	}
	return c.Copy(ctx, srcKey, dstKey, cond, opts)
}

// AfterToken implements AfterLister through the wrapped backend.
func (h *hooked) AfterToken(key string) string { return innerAfterToken(h.inner, key) }

func (h *hooked) CopyFrom(ctx context.Context, src Backend, srcKey, dstKey string, cond Precondition, opts PutOptions) (ObjectInfo, error) {
	c, err := innerCopierFrom(h.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := h.before(ctx, opCopy, dstKey, 0); err != nil {
		return ObjectInfo{}, err
	}
	return c.CopyFrom(ctx, src, srcKey, dstKey, cond, opts)
}

// Unwrap returns the wrapped backend.
func (h *hooked) Unwrap() Backend { return h.inner }
