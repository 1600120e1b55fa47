// Package mock provides storage backends whose methods call func fields, so that a test can
// script one failure ("delete fails on the third file") in a line. A method whose field is nil
// fails with an error naming it. Backend has Put and Copy methods, but reports them as
// capabilities (storage.AsPutter, storage.AsCopier) only when PutFn or CopyFn is set.
//
//	b := &mock.Backend{StatFn: func(ctx context.Context, key string) (storage.ObjectInfo, error) {
//		return storage.ObjectInfo{}, storage.ErrNotExist
//	}}
package mock

import (
	"context"
	"fmt"
	"io"

	"github.com/zbrecover/zbrecover/storage"
)

// Backend is a storage.Backend over func fields.
type Backend struct {
	LocationFn  func() string
	ListFn      func(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error
	StatFn      func(ctx context.Context, key string) (storage.ObjectInfo, error)
	ReadRangeFn func(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)
	DeleteFn    func(ctx context.Context, key string, cond storage.Precondition) error
	PutFn       func(ctx context.Context, key string, r io.Reader, size int64, opts storage.PutOptions) (storage.ObjectInfo, error)
	CopyFn      func(ctx context.Context, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error)
}

var (
	_ storage.Backend = (*Backend)(nil)
	_ storage.Putter  = (*Backend)(nil)
	_ storage.Copier  = (*Backend)(nil)
	_ storage.Capable = (*Backend)(nil)
)

// Capabilities implements storage.Capable: put and copy when PutFn and CopyFn are set.
func (m *Backend) Capabilities() storage.Capabilities {
	var c storage.Capabilities
	if m.PutFn != nil {
		c |= storage.CanPut
	}
	if m.CopyFn != nil {
		c |= storage.CanCopy
	}
	return c
}

// Put implements storage.Putter.
func (m *Backend) Put(ctx context.Context, key string, r io.Reader, size int64, opts storage.PutOptions) (storage.ObjectInfo, error) {
	if m.PutFn == nil {
		return storage.ObjectInfo{}, notSet("PutFn")
	}
	return m.PutFn(ctx, key, r, size, opts)
}

// Copy implements storage.Copier.
func (m *Backend) Copy(ctx context.Context, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	if m.CopyFn == nil {
		return storage.ObjectInfo{}, notSet("CopyFn")
	}
	return m.CopyFn(ctx, srcKey, dstKey, cond, opts)
}

func notSet(name string) error { return fmt.Errorf("mock: %s is not set", name) }

// Location implements storage.Backend; without LocationFn it is "mock://".
func (m *Backend) Location() string {
	if m.LocationFn == nil {
		return "mock://"
	}
	return m.LocationFn()
}

// List implements storage.Backend.
func (m *Backend) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	if m.ListFn == nil {
		return notSet("ListFn")
	}
	return m.ListFn(ctx, prefix, fn)
}

// Stat implements storage.Backend.
func (m *Backend) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	if m.StatFn == nil {
		return storage.ObjectInfo{}, notSet("StatFn")
	}
	return m.StatFn(ctx, key)
}

// ReadRange implements storage.Backend.
func (m *Backend) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if m.ReadRangeFn == nil {
		return nil, notSet("ReadRangeFn")
	}
	return m.ReadRangeFn(ctx, key, off, n)
}

// Delete implements storage.Backend.
func (m *Backend) Delete(ctx context.Context, key string, cond storage.Precondition) error {
	if m.DeleteFn == nil {
		return notSet("DeleteFn")
	}
	return m.DeleteFn(ctx, key, cond)
}

// BatchBackend is a Backend that also implements storage.BatchDeleter.
type BatchBackend struct {
	Backend
	DeleteBatchFn func(ctx context.Context, reqs []storage.DeleteRequest) ([]storage.DeleteResult, error)
	// MaxBatch is MaxBatchDelete's answer (1000 when zero).
	MaxBatch int
}

var _ storage.BatchDeleter = (*BatchBackend)(nil)

// Capabilities implements storage.Capable: batch delete, and those of Backend.
func (m *BatchBackend) Capabilities() storage.Capabilities {
	return m.Backend.Capabilities() | storage.CanBatchDelete
}

// DeleteBatch implements storage.BatchDeleter.
func (m *BatchBackend) DeleteBatch(ctx context.Context, reqs []storage.DeleteRequest) ([]storage.DeleteResult, error) {
	if m.DeleteBatchFn == nil {
		return nil, notSet("DeleteBatchFn")
	}
	return m.DeleteBatchFn(ctx, reqs)
}

// MaxBatchDelete implements storage.BatchDeleter.
func (m *BatchBackend) MaxBatchDelete() int {
	if m.MaxBatch == 0 {
		return 1000
	}
	return m.MaxBatch
}

// PagedBackend is a Backend that also implements storage.Pager; its List goes through
// ListPageFn.
type PagedBackend struct {
	Backend
	ListPageFn func(ctx context.Context, prefix, token string) ([]storage.ObjectInfo, string, error)
}

var _ storage.Pager = (*PagedBackend)(nil)

// Capabilities implements storage.Capable: list pages, and those of Backend.
func (m *PagedBackend) Capabilities() storage.Capabilities {
	return m.Backend.Capabilities() | storage.CanListPages
}

// ListPage implements storage.Pager.
func (m *PagedBackend) ListPage(ctx context.Context, prefix, token string) ([]storage.ObjectInfo, string, error) {
	if m.ListPageFn == nil {
		return nil, "", notSet("ListPageFn")
	}
	return m.ListPageFn(ctx, prefix, token)
}

// List implements storage.Backend over ListPage.
func (m *PagedBackend) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	return storage.ListPages(ctx, m, prefix, fn)
}
