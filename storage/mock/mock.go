// Package mock provides storage backends whose methods call func fields, so that a test can
// script one failure ("delete fails on the third file") in a line. A method whose field is nil
// fails with an error naming it.
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
}

var _ storage.Backend = (*Backend)(nil)

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
