package storage

import (
	"fmt"
	"sync"
)

// CopyScope is what a store's CopierFrom knows about the copies it can make itself: the
// store's name and words for messages, and the buckets (containers) whose objects the store
// refused this backend's credentials a copy of (403), from which it sends no more copies.
// Only its exported fields are set, when the backend is made; it is safe for concurrent use.
type CopyScope struct {
	// Store names the store in messages: "S3", "GCS", "Azure".
	Store string
	// Bucket is what the store calls a bucket: "bucket", "container".
	Bucket string
	// Elsewhere says where a source out of the store's reach is: "on another endpoint".
	Elsewhere string

	refused sync.Map // bucket name → true
}

// CopySource returns src, seen through its decorators (Unwrap), as the store's own backend
// type B when dst's store can copy from it: src is a B and, unless it is dst itself, place
// gives both the same endpoint and src's bucket has not refused dst's credentials a copy
// before. place returns a backend's endpoint (compared as it is) and bucket; an error from
// place is returned as it is. Otherwise the error wraps ErrNotSupported and says why, so
// that CopyObject copies the bytes itself.
func CopySource[B interface {
	Backend
	comparable
}](s *CopyScope, src Backend, srcKey string, dst B, dstKey string, place func(B) (endpoint, bucket string, err error)) (B, error) {
	to := ObjectURL(dst, dstKey)
	sb, ok := Unwrap(src).(B)
	if !ok {
		return sb, fmt.Errorf("copy %s to %s: the source is not on %s: %w", ObjectURL(src, srcKey), to, s.Store, ErrNotSupported)
	}
	if sb == dst {
		return sb, nil
	}
	from := ObjectURL(sb, srcKey)
	se, bucket, err := place(sb)
	if err != nil {
		return sb, err
	}
	de, _, err := place(dst)
	if err != nil {
		return sb, err
	}
	switch {
	case se != de:
		return sb, fmt.Errorf("copy %s to %s: the source is %s: %w", from, to, s.Elsewhere, ErrNotSupported)
	case s.wasRefused(bucket):
		return sb, fmt.Errorf("copy %s to %s: %s refused a copy from %s %s with these credentials before: %w", from, to, s.Store, s.Bucket, bucket, ErrNotSupported)
	}
	return sb, nil
}

func (s *CopyScope) wasRefused(bucket string) bool {
	_, refused := s.refused.Load(bucket)
	return refused
}

// Refused records that the store refused a copy from bucket (403) with dst's credentials,
// and returns the copy's error: it wraps ErrNotSupported and cause (the refusal as the
// backend translated it); where names the copy ("<source URL> to <destination URL>").
func (s *CopyScope) Refused(bucket, where string, cause error) error {
	s.refused.Store(bucket, true)
	return fmt.Errorf("copy %s inside %s: %w (%w)", where, s.Store, ErrNotSupported, cause)
}
