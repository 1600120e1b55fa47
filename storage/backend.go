package storage

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
)

// The helpers below hold the rules that every object-store backend applies in the same way.
// Backends call them; callers of a Backend never need them.

// CheckKey returns an error unless key is a valid object key: non-empty and relative (no
// leading "/"). loc is the backend's location, for the message.
func CheckKey(key, loc string) error {
	if key == "" || strings.HasPrefix(key, "/") {
		return fmt.Errorf("invalid key %q: keys are non-empty and relative to %s", key, loc)
	}
	return nil
}

// ListedKey returns the key, relative to root, of an object that a list request returned
// under the name name with size bytes. root is the backend's name prefix ("" or ending in "/").
// It returns false for what is not an object of the backend: a name outside root, root itself,
// and a folder marker (a zero-size name ending in "/", which consoles and tools create and
// which never holds data).
func ListedKey(root, name string, size int64) (string, bool) {
	key, ok := strings.CutPrefix(name, root)
	if !ok || key == "" || size == 0 && strings.HasSuffix(key, "/") {
		return "", false
	}
	return key, true
}

// QuoteETag returns an entity tag in its quoted form, as HTTP headers carry it and
// ObjectInfo.ETag holds it: "abc" becomes `"abc"`; quoted and weak (W/"…") tags and ""
// are returned as they are.
func QuoteETag(e string) string {
	if e == "" || strings.HasPrefix(e, `"`) || strings.HasPrefix(e, `W/"`) {
		return e
	}
	return `"` + e + `"`
}

// FillETag prepares cond for a store that checks preconditions by ETag (If-Match). When cond
// checks something but names no ETag (size and modification time only, as a local listing
// gives), FillETag stats key on b, fails with an error wrapping ErrPreconditionFailed if
// cond.Size is set and differs from the current size, and returns cond with the current ETag.
// Otherwise it returns cond unchanged, without a request. where names the object in messages;
// a failed Stat is returned wrapped ("delete: …"), ErrNotExist included.
func FillETag(ctx context.Context, b Backend, key, where string, cond Precondition) (Precondition, error) {
	if cond.IsZero() || cond.ETag != "" {
		return cond, nil
	}
	cur, err := b.Stat(ctx, key)
	if err != nil {
		return cond, fmt.Errorf("delete: %w", err)
	}
	if cond.Size != 0 && cur.Size != cond.Size {
		return cond, fmt.Errorf("delete %s: size is %d, not %d: %w", where, cur.Size, cond.Size, ErrPreconditionFailed)
	}
	cond.ETag = cur.ETag
	return cond, nil
}

// RangeLength returns the length a backend requests for ReadRange(off, n): n, or -1 ("to the
// end") when n < 0 or off+n would pass the largest int64, so that the last byte of an
// absolute range (off+n-1) never overflows into a negative number.
func RangeLength(off, n int64) int64 {
	if n < 0 || n > math.MaxInt64-off {
		return -1
	}
	return n
}

// ExactReader returns a reader over r that yields exactly size bytes: it fails with an error
// wrapping io.ErrUnexpectedEOF when r ends early, and with an error when r holds more, so
// that a backend's Put fails (and stores nothing) instead of storing an object of another
// size than announced.
func ExactReader(r io.Reader, size int64) io.Reader {
	return &exactReader{r: r, left: size, size: size}
}

type exactReader struct {
	r          io.Reader
	left, size int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left <= 0 {
		var one [1]byte
		for {
			n, err := e.r.Read(one[:])
			if n > 0 {
				return 0, fmt.Errorf("the data is longer than the %d bytes announced", e.size)
			}
			if err == io.EOF {
				return 0, io.EOF
			}
			if err != nil {
				return 0, err
			}
		}
	}
	if len(p) == 0 {
		return 0, nil
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF {
		if e.left > 0 {
			return n, fmt.Errorf("the data ended after %d of the %d bytes announced: %w", e.size-e.left, e.size, io.ErrUnexpectedEOF)
		}
		err = nil
	}
	return n, err
}
