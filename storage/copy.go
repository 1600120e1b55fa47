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
// When src and dst are the same backend value and it is a Copier, the store copies the
// object itself (no bytes through the client), unless that Copy fails with ErrNotSupported.
// Otherwise CopyObject stats the source, checks
// cond against it, streams it with one ReadRange into dst's Put with the stat'ed size, and
// verifies the copy: the bytes read and the size written must be the source's size, the MD5
// of the bytes read must match the MD5 that the source or the destination reports (where one
// does), and the source must still be the stat'ed version once the bytes are read. A failed
// verification removes the new object again (conditionally on its version) and fails.
//
// The returned info carries the MD5 of the bytes copied when the stream path was taken.
//
// With a non-zero cond the source must match it (ErrPreconditionFailed otherwise); with
// opts.CreateOnly the destination must not exist (ErrExist). A missing source gives
// ErrNotExist; a dst that cannot write gives ErrNotSupported.
func CopyObject(ctx context.Context, src Backend, srcKey string, dst Backend, dstKey string, cond Precondition, opts PutOptions) (ObjectInfo, error) {
	if sameBackend(src, dst) {
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
	info, err := src.Stat(ctx, srcKey)
	if err != nil {
		return ObjectInfo{}, fail("%w", err)
	}
	if !cond.Matches(info) {
		return ObjectInfo{}, fail("the source is not the expected version: %w", ErrPreconditionFailed)
	}
	rc, err := src.ReadRange(ctx, srcKey, 0, -1)
	if err != nil {
		return ObjectInfo{}, fail("%w", err)
	}
	defer rc.Close()
	h := &hashingReader{r: rc, h: md5.New()}
	out, err := p.Put(ctx, dstKey, h, info.Size, opts)
	if err != nil {
		return ObjectInfo{}, fail("%w", err)
	}
	sum := hex.EncodeToString(h.h.Sum(nil))
	var problem error
	switch {
	case h.n != info.Size:
		problem = fail("read %d bytes of a %d-byte source", h.n, info.Size)
	case out.Size != info.Size:
		problem = fail("the copy has %d bytes, the source %d", out.Size, info.Size)
	case info.MD5 != "" && info.MD5 != sum:
		problem = fail("the bytes read have MD5 %s, the source reports %s", sum, info.MD5)
	case out.MD5 != "" && out.MD5 != sum:
		problem = fail("the copy has MD5 %s, the bytes sent %s", out.MD5, sum)
	}
	if problem == nil {
		now, err := src.Stat(ctx, srcKey)
		switch {
		case errors.Is(err, ErrNotExist):
			problem = fail("the source went away during the copy: %w", ErrPreconditionFailed)
		case err != nil:
			problem = fail("%w", err)
		case !info.Version().Matches(now) || now.ETag != info.ETag || now.Generation != info.Generation:
			problem = fail("the source changed during the copy: %w", ErrPreconditionFailed)
		}
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
