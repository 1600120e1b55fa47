// Package gcs is the storage backend for Google Cloud Storage (gs:// URLs), over
// cloud.google.com/go/storage with JSON API reads.
package gcs

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	gstorage "cloud.google.com/go/storage"
	"golang.org/x/oauth2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

	"github.com/zbrecover/zbrecover/storage"
)

// DefaultPageSize is the most objects one list request returns.
const DefaultPageSize = 1000

// NewFactory returns the factory for the "gs" scheme.
func NewFactory() storage.Factory { return storage.NewFactory("gs", New) }

// DefaultMaxAttempts is how many times the SDK tries one request when storage.Config does not
// say (the S3 and Azure SDKs bound theirs too).
const DefaultMaxAttempts = 5

// noCredentialsHint says how to give the client credentials when Application Default
// Credentials find none.
const noCredentialsHint = "no Google credentials found: run `gcloud auth application-default login`, " +
	"or set GOOGLE_APPLICATION_CREDENTIALS to a service account key file (or name the table with --table " +
	"to use the credentials Unity Catalog vends for it)"

// Backend is a bucket and prefix on Google Cloud Storage.
type Backend struct {
	client   *gstorage.Client
	bucket   *gstorage.BucketHandle
	name     string
	root     string // "" or a prefix ending in "/"
	pageSize int
	loc      string
	vended   bool // the token comes from cfg.Credentials (Unity Catalog)
	// endpoint is cfg.GCSEndpoint or STORAGE_EMULATOR_HOST ("" for Google's).
	endpoint string
	// copies names GCS in CopyFrom's errors and holds the source buckets GCS refused a
	// CopyFrom from (403).
	copies storage.CopyScope
}

var (
	_ storage.Backend    = (*Backend)(nil)
	_ storage.Pager      = (*Backend)(nil)
	_ storage.Putter     = (*Backend)(nil)
	_ storage.Copier     = (*Backend)(nil)
	_ storage.CopierFrom = (*Backend)(nil)
)

// EnvEmulatorHost is the variable the Google Cloud Storage client libraries read to talk to an
// emulator instead of Google, without authentication.
const EnvEmulatorHost = "STORAGE_EMULATOR_HOST"

// EmulatorHost returns the endpoint STORAGE_EMULATOR_HOST names, as a URL: a bare host:port
// gets http://, as the client libraries give it; "" when the variable is unset or empty.
func EmulatorHost() string {
	h := strings.TrimSpace(os.Getenv(EnvEmulatorHost))
	if h == "" || strings.Contains(h, "://") {
		return h
	}
	return "http://" + h
}

// New opens a backend for loc.
//
// Credentials are Application Default Credentials, or an OAuth token from cfg.Credentials
// (GCSOAuthToken, vended by Unity Catalog) when set. cfg.GCSEndpoint (--gcs-endpoint), else
// STORAGE_EMULATOR_HOST as the Google Cloud SDKs read it (host:port, or a URL), points the
// client at an emulator, without authentication. Reads always go through the JSON API
// (storage.WithJSONReads), the same for the cloud and for emulators.
func New(ctx context.Context, loc storage.Location, cfg storage.Config) (*Backend, error) {
	if loc.Scheme != "gs" || loc.Bucket == "" {
		return nil, fmt.Errorf("gcs backend: %s is not a gs://bucket/prefix location", loc)
	}
	if cfg.GCSEndpoint == "" {
		cfg.GCSEndpoint = EmulatorHost()
	}
	opts := []option.ClientOption{gstorage.WithJSONReads()}
	var auth []option.ClientOption
	switch {
	case cfg.GCSEndpoint != "":
		opts = append(opts, option.WithEndpoint(strings.TrimSuffix(cfg.GCSEndpoint, "/")+"/storage/v1/"))
		auth = append(auth, option.WithoutAuthentication())
	case cfg.Credentials != nil:
		auth = append(auth, option.WithTokenSource(oauth2.ReuseTokenSourceWithExpiry(nil, &tokenSource{p: cfg.Credentials}, time.Minute)))
	}
	if cfg.UserAgent != "" {
		opts = append(opts, option.WithUserAgent(cfg.UserAgent))
	}
	if cfg.Transport != nil {
		// WithHTTPClient replaces the client's own authentication: wrap the transport in it.
		rt, err := htransport.NewTransport(ctx, cfg.Transport, append([]option.ClientOption{
			option.WithScopes(gstorage.ScopeReadWrite)}, auth...)...)
		if err != nil {
			return nil, fmt.Errorf("gcs transport: %w", storage.RedactError(err))
		}
		opts = append(opts, option.WithHTTPClient(&http.Client{Transport: rt}))
	} else {
		opts = append(opts, auth...)
	}
	client, err := gstorage.NewClient(ctx, opts...)
	if err != nil {
		if strings.Contains(err.Error(), "could not find default credentials") {
			return nil, fmt.Errorf("gcs client: %s: %w", noCredentialsHint, storage.RedactError(err))
		}
		return nil, fmt.Errorf("gcs client: %w", storage.RedactError(err))
	}
	// The SDK's default retries an idempotent request until its context ends (a refused
	// connection would hang the run): always bound the attempts, and log each retry.
	attempts := cfg.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	log := cfg.Logger
	client.SetRetry(gstorage.WithMaxAttempts(attempts),
		gstorage.WithErrorFuncWithContext(func(err error, rc *gstorage.RetryContext) bool {
			retry := gstorage.ShouldRetry(err)
			if retry && log != nil && (rc == nil || rc.Attempt < attempts) {
				attempt := 0
				if rc != nil {
					attempt = rc.Attempt
				}
				log.Warn("gcs: request failed, retrying", "location", loc.String(), "attempt", attempt, "max_attempts", attempts,
					"error", storage.Redact(err.Error()))
			}
			return retry
		}))
	b := &Backend{
		client:   client,
		bucket:   client.Bucket(loc.Bucket),
		name:     loc.Bucket,
		pageSize: DefaultPageSize,
		root:     loc.KeyPrefix(),
		loc:      loc.String(),
		vended:   cfg.Credentials != nil && cfg.GCSEndpoint == "",
		endpoint: cfg.GCSEndpoint,
		copies:   storage.CopyScope{Store: "GCS", Bucket: "bucket", Elsewhere: "on another endpoint"},
	}
	if cfg.PageSize > 0 {
		b.pageSize = min(cfg.PageSize, DefaultPageSize)
	}
	return b, nil
}

// tokenSource turns vended credentials into OAuth tokens.
type tokenSource struct {
	p  storage.CredentialProvider
	mu sync.Mutex
}

func (s *tokenSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.p(context.Background())
	if err != nil {
		return nil, fmt.Errorf("gcs credentials: %w", err)
	}
	if c.GCSOAuthToken == "" {
		return nil, errors.New("gcs credentials: the credential provider returned no OAuth token")
	}
	return &oauth2.Token{AccessToken: c.GCSOAuthToken, TokenType: "Bearer", Expiry: c.Expires}, nil
}

// Close releases the client's connections.
func (b *Backend) Close() error { return b.client.Close() }

// Location implements storage.Backend.
func (b *Backend) Location() string { return b.loc }

func (b *Backend) url(key string) string { return "gs://" + b.name + "/" + b.root + key }

func (b *Backend) object(key string) (*gstorage.ObjectHandle, error) {
	if err := storage.CheckKey(key, b.loc); err != nil {
		return nil, err
	}
	return b.bucket.Object(b.root + key), nil
}

func (b *Backend) info(key string, a *gstorage.ObjectAttrs) storage.ObjectInfo {
	o := storage.ObjectInfo{
		Key:        key,
		Size:       a.Size,
		ModTime:    a.Updated.UTC(),
		ETag:       storage.QuoteETag(a.Etag),
		Generation: a.Generation,
	}
	if len(a.MD5) == md5.Size {
		o.MD5 = hex.EncodeToString(a.MD5)
	}
	return o
}

// List implements storage.Backend.
func (b *Backend) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	return storage.ListPages(ctx, b, prefix, fn)
}

// ListPage implements storage.Pager with one objects.list request.
func (b *Backend) ListPage(ctx context.Context, prefix, token string) ([]storage.ObjectInfo, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", fmt.Errorf("list %s: %w", b.url(prefix), err)
	}
	q := &gstorage.Query{Prefix: b.root + prefix}
	if err := q.SetAttrSelection([]string{"Name", "Size", "Updated", "Etag", "Generation"}); err != nil {
		return nil, "", err
	}
	var attrs []*gstorage.ObjectAttrs
	next, err := iterator.NewPager(b.bucket.Objects(ctx, q), b.pageSize, token).NextPage(&attrs)
	if err != nil {
		return nil, "", b.fail("list", prefix, err, false)
	}
	page := make([]storage.ObjectInfo, 0, len(attrs))
	for _, a := range attrs {
		key, ok := storage.ListedKey(b.root, a.Name, a.Size)
		if !ok {
			continue
		}
		page = append(page, b.info(key, a))
	}
	return page, next, nil
}

// Stat implements storage.Backend.
func (b *Backend) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	o, err := b.object(key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	a, err := o.Attrs(ctx)
	if err != nil {
		return storage.ObjectInfo{}, b.fail("stat", key, err, false)
	}
	return b.info(key, a), nil
}

// ReadRange implements storage.Backend with one ranged media download. n == 0 reads nothing
// and sends no request.
func (b *Backend) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	o, err := b.object(key)
	if err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("read %s: negative offset %d", b.url(key), off)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", b.url(key), err)
	}
	if n == 0 {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	r, err := o.NewRangeReader(ctx, off, storage.RangeLength(off, n))
	if err != nil {
		// 416: the object exists and the range starts at or past its end (or it is empty).
		if code(err) == http.StatusRequestedRangeNotSatisfiable {
			return io.NopCloser(bytes.NewReader(nil)), nil
		}
		return nil, b.fail("read", key, err, false)
	}
	return r, nil
}

// Delete implements storage.Backend. A precondition deletes the object's listed generation
// only while it is still the live one (generation= plus ifGenerationMatch=): a 412 or a 404
// then means "changed or gone", which one more metadata request tells apart. A precondition
// without a generation is compared with the object's metadata, and the delete then carries
// the generation it saw.
func (b *Backend) Delete(ctx context.Context, key string, cond storage.Precondition) error {
	o, err := b.object(key)
	if err != nil {
		return err
	}
	if cond.IsZero() {
		if err := o.Delete(ctx); err != nil {
			err = b.fail("delete", key, err, false)
			if errors.Is(err, storage.ErrNotExist) {
				return nil
			}
			return err
		}
		return nil
	}
	gen := cond.Generation
	if gen == 0 {
		cur, err := b.Stat(ctx, key)
		if err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		if cond.ETag != "" && cur.ETag != cond.ETag || cond.Size != 0 && cur.Size != cond.Size {
			return fmt.Errorf("delete %s: ETag %s, size %d: %w", b.url(key), cur.ETag, cur.Size, storage.ErrPreconditionFailed)
		}
		gen = cur.Generation
	}
	err = o.Generation(gen).If(gstorage.Conditions{GenerationMatch: gen}).Delete(ctx)
	if err == nil {
		return nil
	}
	err = b.fail("delete", key, err, true)
	if errors.Is(err, storage.ErrNotExist) || errors.Is(err, storage.ErrPreconditionFailed) {
		// Changed or gone: say which.
		cur, serr := b.Stat(ctx, key)
		switch {
		case serr == nil:
			return fmt.Errorf("delete %s: generation %d is no longer live (now %d): %w",
				b.url(key), gen, cur.Generation, storage.ErrPreconditionFailed)
		case errors.Is(serr, storage.ErrNotExist):
			return fmt.Errorf("delete %s: %w", b.url(key), storage.ErrNotExist)
		default:
			return serr
		}
	}
	return err
}

func code(err error) int {
	return storage.HTTPStatus(err, func(ge *googleapi.Error) int { return ge.Code })
}

// fail translates an SDK error with storage.RequestError: not found, a failed generation
// match (412, only for a conditional request), and throttling, 5xx answers and dropped
// connections (transient). A missing bucket, missing or refused credentials (401) and a
// missing permission (403) are permanent, each with a note that says what to do.
func (b *Backend) fail(op, key string, err error, conditional bool) error {
	return storage.RequestError(op, b.url(key), err, func(err error) (storage.ErrorClass, string) {
		status := code(err)
		switch {
		case errors.Is(err, gstorage.ErrBucketNotExist):
			return storage.ClassPermanent, fmt.Sprintf("bucket %q does not exist: check the bucket name in the gs:// URL", b.name)
		case status == http.StatusUnauthorized && b.vended:
			return storage.ClassPermanent, "GCS refused the OAuth token Unity Catalog vended for the table (HTTP 401); " +
				"run again for a fresh one, or read with the environment's credentials (--storage-auth default)"
		case status == http.StatusUnauthorized:
			return storage.ClassPermanent, "the request carries no valid Google credentials (HTTP 401): run " +
				"`gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a service " +
				"account key file"
		case status == http.StatusForbidden:
			perm, role := gcsPermission(op)
			return storage.ClassPermanent, fmt.Sprintf("the principal in use lacks %s on bucket %q (HTTP 403): "+
				"grant it a role that includes it, such as %s, or use another identity", perm, b.name, role)
		case errors.Is(err, gstorage.ErrObjectNotExist) || status == http.StatusNotFound:
			return storage.ClassNotExist, ""
		case status == http.StatusPreconditionFailed && conditional:
			return storage.ClassPreconditionFailed, ""
		case storage.RetryableStatus(status) || storage.IsTransientNetwork(err):
			return storage.ClassTransient, ""
		}
		return storage.ClassPermanent, ""
	})
}

// gcsPermission names the IAM permission request op needs and a predefined role that grants
// it.
func gcsPermission(op string) (perm, role string) {
	switch op {
	case "list":
		return "storage.objects.list", "Storage Object Viewer (roles/storage.objectViewer)"
	case "stat", "read":
		return "storage.objects.get", "Storage Object Viewer (roles/storage.objectViewer)"
	case "delete":
		return "storage.objects.delete", "Storage Object User (roles/storage.objectUser)"
	case "put":
		return "storage.objects.create", "Storage Object Creator (roles/storage.objectCreator)"
	case "copy":
		return "storage.objects.get and storage.objects.create", "Storage Object User (roles/storage.objectUser)"
	}
	return "storage.objects.list and storage.objects.get", "Storage Object Viewer (roles/storage.objectViewer)"
}

// Put implements storage.Putter with one upload (a single request up to the writer's chunk
// size, a resumable upload beyond). CreateOnly sends ifGenerationMatch=0, which GCS answers
// with 412 when the object exists (storage.ErrExist). When the data fails or is not the size
// announced, the upload is cancelled before it is finalized, so no object appears.
func (b *Backend) Put(ctx context.Context, key string, r io.Reader, size int64, opts storage.PutOptions) (storage.ObjectInfo, error) {
	o, err := b.object(key)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	if size < 0 {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: negative size %d", b.url(key), size)
	}
	if err := ctx.Err(); err != nil {
		return storage.ObjectInfo{}, fmt.Errorf("put %s: %w", b.url(key), err)
	}
	if opts.CreateOnly {
		o = o.If(gstorage.Conditions{DoesNotExist: true})
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := o.NewWriter(wctx)
	w.ContentType = "application/octet-stream"
	if size < int64(w.ChunkSize) {
		w.ChunkSize = int(size) + 1 // one request, and no larger buffer than the object
	}
	if _, err := io.Copy(w, storage.ExactReader(r, size)); err != nil {
		cancel() // abort the upload: nothing is finalized
		_ = w.Close()
		return storage.ObjectInfo{}, fmt.Errorf("put %s: %w", b.url(key), storage.RedactError(err))
	}
	if err := w.Close(); err != nil {
		err = b.fail("put", key, err, true)
		if opts.CreateOnly && errors.Is(err, storage.ErrPreconditionFailed) {
			return storage.ObjectInfo{}, fmt.Errorf("put %s: %w", b.url(key), storage.ErrExist)
		}
		return storage.ObjectInfo{}, err
	}
	return b.info(key, w.Attrs()), nil
}

// Copy implements storage.Copier with objects.rewrite (server-side, repeated by the client
// library until done). A precondition pins the source to its generation (sourceGeneration
// plus ifSourceGenerationMatch, as Delete does; without a generation the source's metadata is
// compared first); CreateOnly sends ifGenerationMatch=0 for the destination. A failed
// condition is told apart with one metadata request of the source.
func (b *Backend) Copy(ctx context.Context, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	return b.copyFrom(ctx, b, srcKey, dstKey, cond, opts)
}

// CopyFrom implements storage.CopierFrom: a rewrite, as Copy makes it, from src's bucket and
// prefix when src (under its decorators) is a GCS backend on the same endpoint. The request
// carries this backend's credentials, which must be allowed to read src's object: when GCS
// refuses them (403), CopyFrom fails with storage.ErrNotSupported and sends no more copies
// from that bucket, so storage.CopyObject reads the object with src's own credentials.
func (b *Backend) CopyFrom(ctx context.Context, src storage.Backend, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	sb, err := storage.CopySource(&b.copies, src, srcKey, b, dstKey, func(b *Backend) (string, string, error) {
		return b.endpoint, b.name, nil
	})
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	return b.copyFrom(ctx, sb, srcKey, dstKey, cond, opts)
}

// copyFrom copies srcKey of sb (b itself, or another backend on b's endpoint) to dstKey of b,
// with b's client.
func (b *Backend) copyFrom(ctx context.Context, sb *Backend, srcKey, dstKey string, cond storage.Precondition, opts storage.PutOptions) (storage.ObjectInfo, error) {
	if err := storage.CheckKey(srcKey, sb.loc); err != nil {
		return storage.ObjectInfo{}, err
	}
	src := b.client.Bucket(sb.name).Object(sb.root + srcKey)
	dst, err := b.object(dstKey)
	if err != nil {
		return storage.ObjectInfo{}, err
	}
	gen := cond.Generation
	if !cond.IsZero() && gen == 0 {
		cur, err := sb.Stat(ctx, srcKey)
		if err != nil {
			return storage.ObjectInfo{}, fmt.Errorf("copy: %w", err)
		}
		if !cond.Matches(cur) {
			return storage.ObjectInfo{}, fmt.Errorf("copy %s: ETag %s, size %d: %w", sb.url(srcKey), cur.ETag, cur.Size, storage.ErrPreconditionFailed)
		}
		gen = cur.Generation
	}
	if gen != 0 {
		src = src.Generation(gen).If(gstorage.Conditions{GenerationMatch: gen})
	}
	if opts.CreateOnly {
		dst = dst.If(gstorage.Conditions{DoesNotExist: true})
	}
	c := dst.CopierFrom(src)
	c.ContentType = "application/octet-stream"
	a, err := c.Run(ctx)
	if err == nil {
		return b.info(dstKey, a), nil
	}
	where := sb.url(srcKey) + " to " + b.url(dstKey)
	if sb != b && code(err) == http.StatusForbidden {
		return storage.ObjectInfo{}, b.copies.Refused(sb.name, where, b.fail("copy", dstKey, err, false))
	}
	err = sb.fail("copy", srcKey, err, true)
	if !errors.Is(err, storage.ErrNotExist) && !errors.Is(err, storage.ErrPreconditionFailed) {
		return storage.ObjectInfo{}, err
	}
	// A missing or changed source, or an existing destination: say which.
	cur, serr := sb.Stat(ctx, srcKey)
	switch {
	case errors.Is(serr, storage.ErrNotExist):
		return storage.ObjectInfo{}, fmt.Errorf("copy %s: %w", where, storage.ErrNotExist)
	case serr != nil:
		return storage.ObjectInfo{}, serr
	case gen != 0 && cur.Generation != gen:
		return storage.ObjectInfo{}, fmt.Errorf("copy %s: generation %d is no longer live (now %d): %w", where, gen, cur.Generation, storage.ErrPreconditionFailed)
	case opts.CreateOnly && errors.Is(err, storage.ErrPreconditionFailed):
		return storage.ObjectInfo{}, fmt.Errorf("copy %s: %w", where, storage.ErrExist)
	}
	return storage.ObjectInfo{}, err
}
