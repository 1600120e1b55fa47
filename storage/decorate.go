package storage

import (
	"context"
	"errors"
	"strings"
)

// decorator is what every decorator implements. expose hides the optional methods that the
// decorated backend lacks, so that type assertions on the result stay truthful.
type decorator interface {
	Backend
	BatchDeleter
	Pager
}

type (
	plainBackend struct{ Backend }
	batchBackend struct {
		Backend
		BatchDeleter
	}
	pagedBackend struct {
		Backend
		Pager
	}
)

func expose(inner Backend, d decorator) Backend {
	_, batch := inner.(BatchDeleter)
	_, paged := inner.(Pager)
	switch {
	case batch && paged:
		return d
	case batch:
		return batchBackend{d, d}
	case paged:
		return pagedBackend{d, d}
	}
	return plainBackend{d}
}

var errNoCapability = errors.New("the decorated backend does not implement this method")

// innerListPage calls inner's ListPage; expose makes sure only Pagers are asked.
func innerListPage(ctx context.Context, inner Backend, prefix, token string) ([]ObjectInfo, string, error) {
	p, ok := inner.(Pager)
	if !ok {
		return nil, "", errNoCapability
	}
	return p.ListPage(ctx, prefix, token)
}

func innerBatch(inner Backend) (BatchDeleter, error) {
	bd, ok := inner.(BatchDeleter)
	if !ok {
		return nil, errNoCapability
	}
	return bd, nil
}

func maxBatch(inner Backend) int {
	if bd, ok := inner.(BatchDeleter); ok {
		return bd.MaxBatchDelete()
	}
	return 0
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
