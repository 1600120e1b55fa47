// Package storage is zbrecover's one view of object stores: S3, Google Cloud Storage, Azure
// Blob / Data Lake and the local file system all sit behind the small Backend interface.
//
// A Backend is rooted at a location (bucket + prefix, container + path, or directory). Keys are
// always relative to that root, use "/" as separator and never start with "/".
//
// How to add a backend:
//
//  1. Teach the URL grammar the new scheme. It lives in one place, storage.Parse
//     (location.go): add the scheme (and its aliases) to knownSchemes, map it to a
//     Location (Scheme, Bucket, Path, and any host or query the backend needs) in Parse,
//     give it a String form that redacts secrets, and add it to SupportedSchemes and to
//     location_test.go. No backend parses URLs itself.
//  2. Create a package under storage/ (storage/foo) with a type that implements Backend, and
//     the optional interfaces the store supports: BatchDeleter (one request deletes many
//     objects), Pager (one request per list page; List is then ListPages over it, and the
//     decorators act per page), Putter (Put, plain and create-only: CreateOnly must be one
//     atomic check-and-write on the store, failing with ErrExist), Copier (a copy inside
//     the store, with the source precondition and CreateOnly checked by the store) and
//     CopierFrom (the same copy from another backend of the store, found with Unwrap). A
//     type whose optional methods work only sometimes also implements Capable.
//  3. Translate the SDK's "not found" into ErrNotExist, its "precondition failed" into
//     ErrPreconditionFailed and a create-only write's "already exists" into ErrExist (wrap
//     them with %w, keep the SDK error for the message), mark throttling, 5xx answers and
//     dropped connections with Retryable, and pass SDK error texts through RedactError:
//     RequestError does all of it given the backend's classification of its SDK's errors.
//     CheckKey, ListedKey, QuoteETag, FillETag, ExactReader and Precondition.Matches hold
//     the other rules that object-store backends share.
//  4. Honour Config: Credentials (refreshed before they expire), Transport, PageSize,
//     MaxAttempts and the endpoint override that points the SDK at an emulator.
//  5. Export NewFactory() storage.Factory, built with NewFactory(scheme, New), and register
//     it in storage/all.
//  6. Run the conformance suite against it in the package's tests, with a local emulator, and
//     put the emulator's setup in a footest helper package that other packages' tests can use
//     (see s3/s3test, gcs/gcstest, azure/azuretest); a helper whose Server is a
//     storagetest.Emulator runs the suite with storagetest.RunOn. Where the emulator ignores a
//     condition the real store checks, the helper checks it in front of the emulator.
//
// Optional capabilities are asked for with CapabilitiesOf or the As helpers (AsBatchDeleter,
// AsPager, AsPutter, AsCopier), never with a type assertion: the decorators that add
// cross-cutting behaviour (WithLimit, WithRetry, WithCounting, WithLatency and DryRun) are
// one type each, carry every optional method and report the capabilities of the backend they
// wrap; a method that backend lacks fails with ErrNotSupported. CopyObject copies between any
// two backends, server-side when it can; SameContent compares the bytes of two objects.
// storage/mem is an in-memory backend for tests.
package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// ErrNotExist is returned (wrapped) by Stat, ReadRange and conditional deletes when the object
// does not exist. Test with errors.Is.
var ErrNotExist = errors.New("object does not exist")

// ErrPreconditionFailed is returned (wrapped) by Delete when the object exists but no longer
// matches the precondition (its ETag or generation changed), and by Copy and CopyObject when
// the source does not. The object is kept; a copy writes nothing.
var ErrPreconditionFailed = errors.New("object changed since it was listed (precondition failed)")

// ObjectInfo describes one object as listed or stat'ed.
type ObjectInfo struct {
	Key        string    // relative to the backend root, "/"-separated
	Size       int64     // bytes
	ModTime    time.Time // last modification, UTC
	ETag       string    // quoted entity tag where the store has one ("" for local)
	Generation int64     // GCS object generation; 0 elsewhere
	// MD5 is the hex MD5 of the content where the store reports one (GCS, Azure, the local
	// and mem backends' writes); "" otherwise. It is not a version: an ETag or a generation is.
	MD5     string
	Special string // local only: "symlink", "fifo", "device", "socket" for an entry that is listed but never read
}

// Version returns the identity that a conditional delete checks: the generation on GCS, the
// ETag elsewhere, or size and modification time for the local file system.
func (o ObjectInfo) Version() Precondition {
	return Precondition{ETag: o.ETag, Generation: o.Generation, Size: o.Size, ModTime: o.ModTime}
}

// Precondition restricts a Delete to an object that is still the one that was verified.
// Zero fields are not checked; the zero Precondition deletes unconditionally.
type Precondition struct {
	ETag       string
	Generation int64
	// Size and ModTime are checked only by backends without ETags (local).
	Size    int64
	ModTime time.Time
}

// Matches reports whether the object o satisfies p, as a backend that checks the
// precondition itself would decide: the ETag and the generation when both p and o carry one;
// the size when p names one; the modification time only when o has neither ETag nor
// generation (the local file system). The zero Precondition matches everything.
func (p Precondition) Matches(o ObjectInfo) bool {
	switch {
	case p.ETag != "" && o.ETag != "" && p.ETag != o.ETag,
		p.Generation != 0 && o.Generation != 0 && p.Generation != o.Generation,
		!p.IsZero() && p.Size != o.Size,
		!p.ModTime.IsZero() && o.ETag == "" && o.Generation == 0 && !p.ModTime.Equal(o.ModTime):
		return false
	}
	return true
}

// IsZero reports whether p checks nothing.
func (p Precondition) IsZero() bool {
	return p.ETag == "" && p.Generation == 0 && p.Size == 0 && p.ModTime.IsZero()
}

// Backend is an object store rooted at a location.
//
// All methods take a context first and return promptly with ctx.Err() (wrapped) once it is done.
type Backend interface {
	// Location returns the backend's root as a URL, with any secret redacted.
	Location() string

	// List calls fn once per object whose key starts with prefix ("" lists everything), in the
	// caller's goroutine, in lexical key order where the store guarantees it. Listing is
	// recursive (no delimiter); pagination is handled inside. List stops at fn's first error and
	// returns it. Listing a prefix with no objects is not an error.
	List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error

	// Stat returns the object's info, or an error wrapping ErrNotExist.
	Stat(ctx context.Context, key string) (ObjectInfo, error)

	// ReadRange returns a reader for the n bytes at absolute offset off. A range that runs past
	// the end of the object is clamped; an offset at or past the end yields an empty reader
	// (or io.EOF on read). n < 0 means "to the end". A missing object gives ErrNotExist.
	ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error)

	// Delete removes the object. Delete returns nil if the object is already absent and cond
	// is zero. With a non-zero cond, the object is removed only if it still matches: otherwise
	// the error wraps ErrPreconditionFailed (object kept) or ErrNotExist (already gone).
	Delete(ctx context.Context, key string, cond Precondition) error
}

// Pager is implemented by backends that list one page per request (the cloud backends).
// Decorators use it to limit, retry, count and delay each list request on its own, instead of
// a whole listing.
type Pager interface {
	// ListPage returns the objects of one list request for prefix, starting at token ("" for
	// the first page), and the token of the next page ("" after the last page). A page may be
	// empty while more pages follow.
	ListPage(ctx context.Context, prefix, token string) (page []ObjectInfo, next string, err error)
}

// AfterLister is implemented by Pagers whose listing can start after a given key (S3
// StartAfter), so that one prefix can be listed as several key ranges at once.
type AfterLister interface {
	Pager
	// AfterToken returns the page token that makes ListPage return the first page of the
	// keys under the prefix that sort after key (a key relative to the root, like the
	// listed ones). Later pages follow with the tokens ListPage returns.
	AfterToken(key string) string
}

// ListPages implements List over a Pager: it requests one page after the other and calls fn
// for each object, checking ctx between objects.
func ListPages(ctx context.Context, p Pager, prefix string, fn func(ObjectInfo) error) error {
	token := ""
	for {
		page, next, err := p.ListPage(ctx, prefix, token)
		if err != nil {
			return err
		}
		for _, o := range page {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := fn(o); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		if next == token {
			return fmt.Errorf("list %q: the store returned the same page token twice", prefix)
		}
		token = next
	}
}

// DeleteRequest is one object of a batch delete.
type DeleteRequest struct {
	Key  string
	Cond Precondition
}

// DeleteResult is the outcome for one key of a batch delete. Err is nil when the object was
// deleted, and wraps ErrNotExist or ErrPreconditionFailed as Delete would.
type DeleteResult struct {
	Key string
	Err error
}

// BatchDeleter is implemented by backends that delete many objects in one request
// (S3 DeleteObjects, Azure blob batch).
type BatchDeleter interface {
	// DeleteBatch deletes up to MaxBatchDelete() objects and reports one result per request,
	// in the same order. The returned error is for the whole call (the request failed);
	// per-key failures are in the results.
	DeleteBatch(ctx context.Context, reqs []DeleteRequest) ([]DeleteResult, error)
	// MaxBatchDelete is the most keys one DeleteBatch call accepts.
	MaxBatchDelete() int
}

// BatchResults begins a store's DeleteBatch of reqs in loc: more than max requests is an
// error, and so is a done ctx when there are requests. Otherwise it returns one result per
// request, in order, each with its Key, for the store to fill in.
func BatchResults(ctx context.Context, loc string, reqs []DeleteRequest, max int) ([]DeleteResult, error) {
	if len(reqs) > max {
		return nil, fmt.Errorf("delete batch in %s: %d keys, at most %d per request", loc, len(reqs), max)
	}
	res := make([]DeleteResult, len(reqs))
	if len(reqs) == 0 {
		return res, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("delete batch in %s: %w", loc, err)
	}
	for i, r := range reqs {
		res[i].Key = r.Key
	}
	return res, nil
}

// ReadAll reads a whole range into memory. It is a convenience for small reads (footers, logs).
func ReadAll(ctx context.Context, b Backend, key string, off, n int64) ([]byte, error) {
	rc, err := b.ReadRange(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// ErrExist is returned (wrapped) by a create-only Put when an object with that key already
// exists. The existing object is left unchanged.
var ErrExist = errors.New("object already exists")

// PutOptions controls a Put.
type PutOptions struct {
	// CreateOnly makes the write fail with ErrExist when the key exists (S3 If-None-Match: *,
	// GCS ifGenerationMatch=0, Azure If-None-Match: *, local O_EXCL). The check and the write
	// are one atomic step on the store: of two writers, exactly one succeeds.
	CreateOnly bool
}

// Putter is implemented by backends that write objects.
type Putter interface {
	// Put writes size bytes read from r as the object key and returns its info as stored
	// (ETag / generation of the new object). The object is durable when Put returns nil.
	Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (ObjectInfo, error)
}

// Copier is implemented by backends that copy an object inside the store without moving its
// bytes through the client (S3 CopyObject, GCS rewrite, Azure copy from URL, local file copy).
type Copier interface {
	// Copy copies srcKey to dstKey and returns the new object's info. With a non-zero cond,
	// the source must still match it (ErrPreconditionFailed otherwise); with opts.CreateOnly,
	// dstKey must not exist (ErrExist otherwise). A missing source gives ErrNotExist. A failed
	// condition writes nothing.
	Copy(ctx context.Context, srcKey, dstKey string, cond Precondition, opts PutOptions) (ObjectInfo, error)
}

// CopierFrom is implemented by backends that copy an object of another backend on the same
// store (another prefix of the bucket, another bucket or container the backend's
// credentials reach) without its bytes passing through the client: S3 CopyObject, GCS
// rewrite, Azure copy from URL.
type CopierFrom interface {
	// CopyFrom copies srcKey of src to dstKey and returns the new object's info, with the
	// conditions of Copier.Copy: a non-zero cond must match the source
	// (ErrPreconditionFailed), opts.CreateOnly needs dstKey to be absent (ErrExist), a
	// missing source gives ErrNotExist. It fails with an error wrapping ErrNotSupported
	// when the store cannot copy this object from src: src (seen through its decorators,
	// Unwrap) is another kind of backend or on another endpoint or account, the object is
	// too large for one copy request, or the store refused the backend's credentials the
	// read of src's object (then no such copy is tried again from src's bucket). The caller
	// then copies the bytes itself.
	CopyFrom(ctx context.Context, src Backend, srcKey, dstKey string, cond Precondition, opts PutOptions) (ObjectInfo, error)
}

// Unwrap returns the backend under b's decorators (WithLimit, WithAdaptive, WithRetry,
// WithCounting, WithLatency, DryRun): the store's own backend, for a CopierFrom that
// checks whether it can copy from b. A backend that is not a decorator is returned as it is.
func Unwrap(b Backend) Backend {
	for {
		u, ok := b.(interface{ Unwrap() Backend })
		if !ok {
			return b
		}
		b = u.Unwrap()
	}
}
