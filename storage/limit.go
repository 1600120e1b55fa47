package storage

import (
	"context"
	"io"
	"sync"
)

// WithLimit returns b with at most n requests in flight at once (n < 1 means 1). A ReadRange
// holds its slot until the reader is closed. Listing holds a slot per page request, not for
// the whole listing, so List callbacks may use the same backend; a backend that lists without
// pages (local) lists without a slot.
func WithLimit(b Backend, n int) Backend {
	if n < 1 {
		n = 1
	}
	return &limited{inner: b, sem: make(chan struct{}, n)}
}

type limited struct {
	inner Backend
	sem   chan struct{}
}

var _ decorator = (*limited)(nil)

func (l *limited) acquire(ctx context.Context) error {
	select {
	case l.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *limited) release() { <-l.sem }

func (l *limited) Location() string { return l.inner.Location() }

// Capabilities implements Capable: those of the wrapped backend.
func (l *limited) Capabilities() Capabilities { return CapabilitiesOf(l.inner) }

func (l *limited) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if CapabilitiesOf(l.inner).Has(CanListPages) {
		return ListPages(ctx, l, prefix, fn)
	}
	return l.inner.List(ctx, prefix, fn)
}

func (l *limited) ListPage(ctx context.Context, prefix, token string) ([]ObjectInfo, string, error) {
	if err := l.acquire(ctx); err != nil {
		return nil, "", err
	}
	defer l.release()
	return innerListPage(ctx, l.inner, prefix, token)
}

func (l *limited) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := l.acquire(ctx); err != nil {
		return ObjectInfo{}, err
	}
	defer l.release()
	return l.inner.Stat(ctx, key)
}

func (l *limited) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := l.acquire(ctx); err != nil {
		return nil, err
	}
	rc, err := l.inner.ReadRange(ctx, key, off, n)
	if err != nil {
		l.release()
		return nil, err
	}
	return &releaseOnClose{ReadCloser: rc, release: l.release}, nil
}

type releaseOnClose struct {
	io.ReadCloser
	once    sync.Once
	release func()
}

func (r *releaseOnClose) Close() error {
	err := r.ReadCloser.Close()
	r.once.Do(r.release)
	return err
}

func (l *limited) Delete(ctx context.Context, key string, cond Precondition) error {
	if err := l.acquire(ctx); err != nil {
		return err
	}
	defer l.release()
	return l.inner.Delete(ctx, key, cond)
}

func (l *limited) DeleteBatch(ctx context.Context, reqs []DeleteRequest) ([]DeleteResult, error) {
	bd, err := innerBatch(l.inner)
	if err != nil {
		return nil, err
	}
	if err := l.acquire(ctx); err != nil {
		return nil, err
	}
	defer l.release()
	return bd.DeleteBatch(ctx, reqs)
}

func (l *limited) MaxBatchDelete() int { return maxBatch(l.inner) }

func (l *limited) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (ObjectInfo, error) {
	p, err := innerPutter(l.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := l.acquire(ctx); err != nil {
		return ObjectInfo{}, err
	}
	defer l.release()
	return p.Put(ctx, key, r, size, opts)
}

func (l *limited) Copy(ctx context.Context, srcKey, dstKey string, cond Precondition, opts PutOptions) (ObjectInfo, error) {
	c, err := innerCopier(l.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := l.acquire(ctx); err != nil {
		return ObjectInfo{}, err
	}
	defer l.release()
	return c.Copy(ctx, srcKey, dstKey, cond, opts)
}

// AfterToken implements AfterLister through the wrapped backend.
func (l *limited) AfterToken(key string) string { return innerAfterToken(l.inner, key) }

func (l *limited) CopyFrom(ctx context.Context, src Backend, srcKey, dstKey string, cond Precondition, opts PutOptions) (ObjectInfo, error) {
	c, err := innerCopierFrom(l.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := l.acquire(ctx); err != nil {
		return ObjectInfo{}, err
	}
	defer l.release()
	return c.CopyFrom(ctx, src, srcKey, dstKey, cond, opts)
}

// Unwrap returns the wrapped backend.
func (l *limited) Unwrap() Backend { return l.inner }
