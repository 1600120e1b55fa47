package storage

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// DryRun returns b with reads passed through and every write turned into a no-op that
// succeeds and calls log with a line such as
// "would delete s3://bucket/p/f.parquet (size 123, ETag "abc")", "would write … (size 10,
// create-only)" or "would copy … to …". Nothing is written, copied or deleted, and no
// precondition is checked: a dry-run Put or Copy returns the info the object would have
// (key and size, no ETag). A nil log discards the lines. The capabilities are b's.
func DryRun(b Backend, log func(line string)) Backend {
	if log == nil {
		log = func(string) {}
	}
	return &dryRun{inner: b, log: log}
}

type dryRun struct {
	inner Backend
	log   func(string)
}

var _ decorator = (*dryRun)(nil)

func (d *dryRun) Location() string { return d.inner.Location() }

// Capabilities implements Capable: those of the wrapped backend.
func (d *dryRun) Capabilities() Capabilities { return CapabilitiesOf(d.inner) }

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

func (d *dryRun) line(verb, key string, cond Precondition) string {
	s := verb + ObjectURL(d.inner, key)
	return s + condAttrs(cond)
}

// condAttrs renders what a precondition checks, as " (size 10, ETag "e")", or "".
func condAttrs(cond Precondition) string {
	s := ""
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
	d.log(d.line("would delete ", key, cond))
	return nil
}

func (d *dryRun) DeleteBatch(ctx context.Context, reqs []DeleteRequest) ([]DeleteResult, error) {
	if _, err := innerBatch(d.inner); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if max := maxBatch(d.inner); len(reqs) > max {
		return nil, fmt.Errorf("delete batch in %s: %d keys, at most %d per request", d.inner.Location(), len(reqs), max)
	}
	out := make([]DeleteResult, len(reqs))
	for i, r := range reqs {
		d.log(d.line("would delete ", r.Key, r.Cond))
		out[i].Key = r.Key
	}
	return out, nil
}

func (d *dryRun) MaxBatchDelete() int { return maxBatch(d.inner) }

func (d *dryRun) Put(ctx context.Context, key string, _ io.Reader, size int64, opts PutOptions) (ObjectInfo, error) {
	if _, err := innerPutter(d.inner); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	s := fmt.Sprintf("would write %s (size %d", ObjectURL(d.inner, key), size)
	if opts.CreateOnly {
		s += ", create-only"
	}
	d.log(s + ")")
	return ObjectInfo{Key: key, Size: size, ModTime: time.Now().UTC()}, nil
}

func (d *dryRun) Copy(ctx context.Context, srcKey, dstKey string, cond Precondition, opts PutOptions) (ObjectInfo, error) {
	if _, err := innerCopier(d.inner); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	s := "would copy " + ObjectURL(d.inner, srcKey) + condAttrs(cond) + " to " + ObjectURL(d.inner, dstKey)
	if opts.CreateOnly {
		s += " (create-only)"
	}
	d.log(s)
	return ObjectInfo{Key: dstKey, Size: cond.Size, ModTime: time.Now().UTC()}, nil
}

// AfterToken implements AfterLister through the wrapped backend.
func (d *dryRun) AfterToken(key string) string { return innerAfterToken(d.inner, key) }

func (d *dryRun) CopyFrom(ctx context.Context, src Backend, srcKey, dstKey string, cond Precondition, opts PutOptions) (ObjectInfo, error) {
	if _, err := innerCopierFrom(d.inner); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	s := "would copy " + ObjectURL(src, srcKey) + condAttrs(cond) + " to " + ObjectURL(d.inner, dstKey)
	if opts.CreateOnly {
		s += " (create-only)"
	}
	d.log(s)
	return ObjectInfo{Key: dstKey, Size: cond.Size, ModTime: time.Now().UTC()}, nil
}

// Unwrap returns the wrapped backend.
func (d *dryRun) Unwrap() Backend { return d.inner }
