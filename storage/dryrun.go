package storage

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// DryRun returns b with reads passed through and deletes turned into no-ops that succeed and
// call log with a line such as "would delete s3://bucket/p/f.parquet (size 123, ETag "abc")".
// A nil log discards the lines.
func DryRun(b Backend, log func(line string)) Backend {
	if log == nil {
		log = func(string) {}
	}
	return expose(b, &dryRun{inner: b, log: log})
}

type dryRun struct {
	inner Backend
	log   func(string)
}

var _ Backend = (*dryRun)(nil)

func (d *dryRun) Location() string { return d.inner.Location() }

func (d *dryRun) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	return d.inner.List(ctx, prefix, fn)
}

func (d *dryRun) ListPage(ctx context.Context, prefix, token string) ([]ObjectInfo, string, error) {
	return innerListPage(ctx, d.inner, prefix, token)
}

func (d *dryRun) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	return d.inner.Stat(ctx, key)
}

func (d *dryRun) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	return d.inner.ReadRange(ctx, key, off, n)
}

func (d *dryRun) line(key string, cond Precondition) string {
	s := "would delete " + ObjectURL(d.inner, key)
	var attrs []string
	if !cond.IsZero() {
		attrs = append(attrs, fmt.Sprintf("size %d", cond.Size))
	}
	if cond.ETag != "" {
		attrs = append(attrs, "ETag "+cond.ETag)
	}
	if cond.Generation != 0 {
		attrs = append(attrs, fmt.Sprintf("generation %d", cond.Generation))
	}
	if len(attrs) > 0 {
		s += " (" + strings.Join(attrs, ", ") + ")"
	}
	return s
}

func (d *dryRun) Delete(ctx context.Context, key string, cond Precondition) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.log(d.line(key, cond))
	return nil
}

func (d *dryRun) DeleteBatch(ctx context.Context, reqs []DeleteRequest) ([]DeleteResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if max := maxBatch(d.inner); len(reqs) > max {
		return nil, fmt.Errorf("delete batch in %s: %d keys, at most %d per request", d.inner.Location(), len(reqs), max)
	}
	out := make([]DeleteResult, len(reqs))
	for i, r := range reqs {
		d.log(d.line(r.Key, r.Cond))
		out[i].Key = r.Key
	}
	return out, nil
}

func (d *dryRun) MaxBatchDelete() int { return maxBatch(d.inner) }
