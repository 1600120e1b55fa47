package storage

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// noCapability is the error of an optional method called on a decorator whose wrapped
// backend lacks it.
func noCapability(inner Backend, method string) error {
	return fmt.Errorf("%s on %s: %w", method, inner.Location(), ErrNotSupported)
}

// innerListPage calls inner's ListPage, or fails with ErrNotSupported when inner lists
// without pages.
func innerListPage(ctx context.Context, inner Backend, prefix, token string) ([]ObjectInfo, string, error) {
	p, ok := AsPager(inner)
	if !ok {
		return nil, "", noCapability(inner, "ListPage")
	}
	return p.ListPage(ctx, prefix, token)
}

func innerBatch(inner Backend) (BatchDeleter, error) {
	return innerAs(inner, AsBatchDeleter, "DeleteBatch")
}

func innerPutter(inner Backend) (Putter, error) { return innerAs(inner, AsPutter, "Put") }

func innerCopier(inner Backend) (Copier, error) { return innerAs(inner, AsCopier, "Copy") }

func innerCopierFrom(inner Backend) (CopierFrom, error) {
	return innerAs(inner, AsCopierFrom, "CopyFrom")
}

// innerAs returns a decorator's inner backend as the capability as finds, or the error of a
// call of method that inner does not have.
func innerAs[C any](inner Backend, as func(Backend) (C, bool), method string) (C, error) {
	c, ok := as(inner)
	if !ok {
		var none C
		return none, noCapability(inner, method)
	}
	return c, nil
}

func maxBatch(inner Backend) int {
	if bd, ok := AsBatchDeleter(inner); ok {
		return bd.MaxBatchDelete()
	}
	return 0
}

// rewindable returns a function that sets r back to where it is now, for a write that is
// tried again, or nil when r cannot seek.
func rewindable(r io.Reader) func() error {
	s, ok := r.(io.Seeker)
	if !ok {
		return nil
	}
	pos, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil
	}
	return func() error {
		_, err := s.Seek(pos, io.SeekStart)
		return err
	}
}

// ObjectURL returns the URL of one object of b, for messages: b's (redacted) location joined
// with key, any redacted query kept at the end.
func ObjectURL(b Backend, key string) string {
	loc, query, hasQuery := strings.Cut(b.Location(), "?")
	u := strings.TrimSuffix(loc, "/") + "/" + key
	if hasQuery {
		u += "?" + query
	}
	return u
}

// sameBackend reports whether a and b are the same backend value (never panicking on
// backends of an uncomparable type).
func sameBackend(a, b Backend) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb || ta == nil || !ta.Comparable() {
		return false
	}
	return a == b
}

// decorator is what every decorator implements: Backend and every optional interface, with
// Capabilities saying which of them work (those of the wrapped backend). A decorator is one
// type whatever it wraps, so adding a capability adds one method to each decorator.
type decorator interface {
	Backend
	Capable
	BatchDeleter
	Pager
	Putter
	Copier
	CopierFrom
	AfterLister
	Unwrap() Backend
}

// innerAfterToken returns inner's AfterToken for key, or "" (the first page) when inner
// cannot start after a key: callers ask AsAfterLister first.
func innerAfterToken(inner Backend, key string) string {
	if a, ok := AsAfterLister(inner); ok {
		return a.AfterToken(key)
	}
	return ""
}
