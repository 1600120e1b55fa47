package storage

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
)

// CopyObject copies srcKey of src to dstKey of dst and returns the new object's info.
//
// The store copies the object itself (no bytes through the client) when dst is a CopierFrom
// that can copy from src (another backend of the same bucket, container or account, as
// CopyFrom decides), or when src and dst are the same backend value and it is a Copier;
// unless that copy fails with ErrNotSupported.
//
// Otherwise CopyObject reads the source whole with one ReadRange into a Spool (memory for
// small objects, else a temporary file), stats it after the read, and only then writes the
// bytes to dst with one Put of the source's size, from a reader that can seek, so that a
// retried Put sends them again. The version copied is cond's when cond names a size and a
// version (ETag, generation or modification time, as a listing gives): the bytes read must be
// that many and the Stat after the read must still match cond. Otherwise a Stat before the
// read gives the version (checked against cond), and the Stat after it must show the same.
// Either way the MD5 of the bytes read must be the one the source reports, where it reports
// one. With a listed version a copy costs the source 2 requests, else 3. The copy is
// verified: the size written must be the source's and the MD5 the destination reports (where
// it reports one) that of the bytes read; a copy that fails this check is removed again
// (conditionally on its version).
//
// Each of these requests is finished before the next one starts: the reader is closed
// before the Stat after the read and the Put. A copy therefore never holds a request slot of
// a limit (WithLimit, WithAdaptive) while it waits for another, whether src and dst have
// limits of their own or share one, so that any number of copies can run at once under any
// limit without waiting on each other forever.
//
// The returned info carries the MD5 of the bytes copied when the stream path was taken.
//
// With a non-zero cond the source must match it (ErrPreconditionFailed otherwise); with
// opts.CreateOnly the destination must not exist (ErrExist). A missing source gives
// ErrNotExist; a dst that cannot write gives ErrNotSupported.
func CopyObject(ctx context.Context, src Backend, srcKey string, dst Backend, dstKey string, cond Precondition, opts PutOptions) (ObjectInfo, error) {
	if c, ok := AsCopierFrom(dst); ok {
		o, err := c.CopyFrom(ctx, src, srcKey, dstKey, cond, opts)
		if !errors.Is(err, ErrNotSupported) {
			return o, err
		}
	} else if sameBackend(src, dst) {
		if c, ok := AsCopier(dst); ok {
			o, err := c.Copy(ctx, srcKey, dstKey, cond, opts)
			if !errors.Is(err, ErrNotSupported) {
				return o, err
			}
			// The store cannot copy this object itself (too large for one request): stream it.
		}
	}
	p, ok := AsPutter(dst)
	if !ok {
		return ObjectInfo{}, fmt.Errorf("copy to %s: %w", ObjectURL(dst, dstKey), noCapability(dst, "Put"))
	}
	from, to := ObjectURL(src, srcKey), ObjectURL(dst, dstKey)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("copy %s to %s: "+format, append([]any{from, to}, args...)...)
	}
	// The version to copy: cond's when it names a size and a version (a listing's), else the
	// one a Stat finds.
	info := ObjectInfo{Key: srcKey, Size: cond.Size, ETag: cond.ETag, Generation: cond.Generation, ModTime: cond.ModTime}
	known := cond.Size > 0 && (cond.ETag != "" || cond.Generation != 0 || !cond.ModTime.IsZero())
	if !known {
		var err error
		if info, err = src.Stat(ctx, srcKey); err != nil {
			return ObjectInfo{}, fail("%w", err)
		}
		if !cond.Matches(info) {
			return ObjectInfo{}, fail("the source is not the expected version: %w", ErrPreconditionFailed)
		}
	}
	data, sum, err := readWhole(ctx, src, srcKey, info.Size)
	if err != nil {
		if known && !errors.Is(err, ErrNotExist) {
			// Another size than the listing's: the object was rewritten since.
			if now, serr := src.Stat(ctx, srcKey); serr == nil && (!cond.Matches(now) || now.Size != cond.Size) {
				return ObjectInfo{}, fail("the source is not the expected version: %w", ErrPreconditionFailed)
			}
		}
		return ObjectInfo{}, fail("%w", err)
	}
	defer data.Close()
	now, err := src.Stat(ctx, srcKey)
	switch {
	case errors.Is(err, ErrNotExist):
		return ObjectInfo{}, fail("the source went away during the copy: %w", ErrPreconditionFailed)
	case err != nil:
		return ObjectInfo{}, fail("%w", err)
	case known && (!cond.Matches(now) || now.Size != cond.Size):
		return ObjectInfo{}, fail("the source is not the expected version: %w", ErrPreconditionFailed)
	case !known && (!info.Version().Matches(now) || now.ETag != info.ETag || now.Generation != info.Generation):
		return ObjectInfo{}, fail("the source changed during the copy: %w", ErrPreconditionFailed)
	}
	if known {
		info = now
	}
	if info.MD5 != "" && info.MD5 != sum {
		return ObjectInfo{}, fail("the bytes read have MD5 %s, the source reports %s", sum, info.MD5)
	}
	out, err := p.Put(ctx, dstKey, data, info.Size, opts)
	if err != nil {
		return ObjectInfo{}, fail("%w", err)
	}
	var problem error
	switch {
	case out.Size != info.Size:
		problem = fail("the copy has %d bytes, the source %d", out.Size, info.Size)
	case out.MD5 != "" && out.MD5 != sum:
		problem = fail("the copy has MD5 %s, the bytes sent %s", out.MD5, sum)
	}
	if problem != nil {
		if derr := dst.Delete(ctx, dstKey, out.Version()); derr != nil && !errors.Is(derr, ErrNotExist) {
			return ObjectInfo{}, fmt.Errorf("%w (and removing the copy failed: %v)", problem, derr)
		}
		return ObjectInfo{}, problem
	}
	if out.MD5 == "" {
		out.MD5 = sum
	}
	return out, nil
}

// readWhole reads the size bytes of key into a Spool with one ReadRange, closing the reader
// (and so freeing its request slot) before it returns, and returns them with their hex MD5.
func readWhole(ctx context.Context, b Backend, key string, size int64) (*Spooled, string, error) {
	rc, err := b.ReadRange(ctx, key, 0, -1)
	if err != nil {
		return nil, "", err
	}
	h := &hashingReader{r: rc, h: md5.New()}
	data, err := Spool(ctx, h, size)
	if cerr := rc.Close(); err == nil && cerr != nil {
		data.Close()
		err = cerr
	}
	if err != nil {
		return nil, "", err
	}
	return data, hex.EncodeToString(h.h.Sum(nil)), nil
}

type hashingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (r *hashingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.n += int64(n)
	r.h.Write(p[:n])
	return n, err
}
