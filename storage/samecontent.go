package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
)

// SameContent reports whether aKey of a and bKey of b hold the same bytes, for a check such
// as "the archive holds this very file". Equal sizes never suffice:
//
//   - Different sizes: false, after the two Stats.
//   - Both stores report an MD5 of the content (ObjectInfo.MD5: GCS, Azure, local and mem
//     writes): the MD5s decide, without reading.
//   - An S3 ETag without "-" (an object written in one request) counts as its MD5 when it is
//     32 hex digits: two equal such MD5s mean the same bytes. A difference involving one is not
//     trusted (an object encrypted with SSE-KMS or SSE-C has an ETag that is not its MD5), and
//     the objects are read.
//   - Otherwise both objects are read whole, one after the other, each through a SHA-256
//     hash (streaming: memory does not grow with the size), and the hashes decide.
//
// The two reads never overlap, so SameContent holds at most one request slot of a limit at a
// time, even when a and b share one. An object whose read yields another number of bytes than
// its Stat said (it changed meanwhile) gives an error, as do a failed Stat (ErrNotExist for a
// missing object) and a failed read.
func SameContent(ctx context.Context, a Backend, aKey string, b Backend, bKey string) (bool, error) {
	ai, err := a.Stat(ctx, aKey)
	if err != nil {
		return false, fmt.Errorf("compare %s: %w", ObjectURL(a, aKey), err)
	}
	bi, err := b.Stat(ctx, bKey)
	if err != nil {
		return false, fmt.Errorf("compare %s: %w", ObjectURL(b, bKey), err)
	}
	if ai.Size != bi.Size {
		return false, nil
	}
	am, aReported := contentMD5(ai)
	bm, bReported := contentMD5(bi)
	switch {
	case am != "" && am == bm:
		return true, nil
	case aReported && bReported:
		return false, nil
	}
	ah, err := hashObject(ctx, a, aKey, ai.Size)
	if err != nil {
		return false, err
	}
	bh, err := hashObject(ctx, b, bKey, bi.Size)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ah, bh), nil
}

// contentMD5 returns the hex MD5 of o's content, and whether the store reported it as one
// (ObjectInfo.MD5) rather than as an S3 single-part ETag; "" when o has neither.
func contentMD5(o ObjectInfo) (string, bool) {
	if o.MD5 != "" {
		return strings.ToLower(o.MD5), true
	}
	e := strings.Trim(o.ETag, `"`)
	if len(e) != 32 || strings.HasPrefix(o.ETag, "W/") {
		return "", false
	}
	for i := 0; i < len(e); i++ {
		if c := e[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "", false
		}
	}
	return strings.ToLower(e), false
}

// hashObject reads key of b whole and returns its SHA-256; the object must hold size bytes.
func hashObject(ctx context.Context, b Backend, key string, size int64) ([]byte, error) {
	url := ObjectURL(b, key)
	rc, err := b.ReadRange(ctx, key, 0, -1)
	if err != nil {
		return nil, fmt.Errorf("compare %s: %w", url, err)
	}
	h := sha256.New()
	n, err := io.Copy(h, &ctxReader{ctx: ctx, r: rc})
	if cerr := rc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("compare %s: %w", url, err)
	}
	if n != size {
		return nil, fmt.Errorf("compare %s: read %d bytes of an object of %d: it changed while it was compared", url, n, size)
	}
	return h.Sum(nil), nil
}
