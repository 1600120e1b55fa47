// Package gcstest runs an in-process Google Cloud Storage emulator for tests:
// fake-gcs-server (in memory) behind a front that counts requests by kind, adds latency and
// injects failures.
//
//	srv := gcstest.NewServer(t)
//	srv.Put("root/f.parquet", data)
//	b, err := all.Registry().Open(ctx, srv.URLFor("root"), srv.Config())
//
// fake-gcs-server ignores ifGenerationMatch on reads and deletes but honours generation=,
// which is what the gcs backend's conditional delete relies on (a mismatch gives 404 there,
// 412 on GCS; the backend treats both as "changed or gone"). It honours ifGenerationMatch on
// uploads (ifGenerationMatch=0: create-only) but ignores the conditions of objects.rewrite;
// the front checks those as GCS does: ifGenerationMatch on the destination and
// ifSourceGenerationMatch on the source, 412 when one fails.
package gcstest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// DefaultBucket is created by NewServer.
const DefaultBucket = "zbrecover-test"

// Option configures NewServer.
type Option func(*options)

type options struct {
	latency time.Duration
	bucket  string
}

// WithLatency delays every request but uploads by d.
func WithLatency(d time.Duration) Option { return func(o *options) { o.latency = d } }

// WithBucket names the bucket NewServer creates (default DefaultBucket).
func WithBucket(name string) Option { return func(o *options) { o.bucket = name } }

// Server is a running emulator. Its embedded Front offers Counts, ResetCounts, SetLatency and
// FailNext.
type Server struct {
	*storagetest.Front
	// URL is the endpoint, for storage.Config.GCSEndpoint.
	URL string
	// Bucket is the bucket created at start.
	Bucket string

	fake *fakestorage.Server

	mu      sync.Mutex
	lastGen int64
	// writes makes the rewrite conditions checked here and the write they guard one step
	// with respect to uploads.
	writes sync.Mutex
}

var _ storagetest.Emulator = (*Server)(nil)

// NewServer starts an emulator with one bucket; it stops when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := options{bucket: DefaultBucket}
	for _, f := range opts {
		f(&o)
	}
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, Scheme: "http", Host: "127.0.0.1"})
	if err != nil {
		t.Fatalf("gcstest: %v", err)
	}
	s := &Server{Bucket: o.bucket, fake: fake}
	s.Front = storagetest.NewFront(s.conditional(fake.HTTPHandler()), classify, errorBody)
	s.Front.SetLatency(o.latency)
	ts := httptest.NewServer(s.Front)
	t.Cleanup(func() {
		ts.Close()
		fake.Stop()
	})
	s.URL = ts.URL
	s.CreateBucket(o.bucket)
	return s
}

// CreateBucket creates another bucket.
func (s *Server) CreateBucket(name string) {
	s.fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: name})
}

// Config returns what opens a backend on the emulator.
func (s *Server) Config() storage.Config { return storage.Config{GCSEndpoint: s.URL} }

// URLFor returns the gs:// URL of a prefix in the server's bucket.
func (s *Server) URLFor(prefix string) string {
	return "gs://" + s.Bucket + "/" + strings.TrimLeft(prefix, "/")
}

// Put writes an object into the server's bucket directly (no HTTP request, no latency). Each
// write gets a new, increasing generation.
func (s *Server) Put(key string, data []byte) error { return s.PutObject(s.Bucket, key, data) }

// PutObject writes an object into a bucket directly.
func (s *Server) PutObject(bucket, key string, data []byte) error {
	s.mu.Lock()
	gen := max(time.Now().UnixMicro(), s.lastGen+1)
	s.lastGen = gen
	s.mu.Unlock()
	now := time.Now().UTC()
	return s.fake.CreateObjectStreaming(fakestorage.Object{
		ObjectAttrs: fakestorage.ObjectAttrs{
			BucketName: bucket, Name: key, ContentType: "application/octet-stream",
			Generation: gen, Created: now, Updated: now,
		},
		Content: data,
	}.StreamingObject())
}

func classify(r *http.Request) storagetest.Kind {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/upload/"):
		return storagetest.KindPut
	case strings.HasPrefix(p, "/download/") || r.Method == http.MethodGet && r.URL.Query().Get("alt") == "media":
		return storagetest.KindGet
	case strings.HasPrefix(p, "/storage/v1/b/") && strings.Contains(p, "/o/"):
		switch r.Method {
		case http.MethodGet:
			return storagetest.KindHead
		case http.MethodDelete:
			return storagetest.KindDelete
		}
	case strings.HasPrefix(p, "/storage/v1/b/") && strings.HasSuffix(p, "/o") && r.Method == http.MethodGet:
		return storagetest.KindListPage
	case strings.HasPrefix(p, "/batch/"):
		return storagetest.KindBatchDelete
	}
	return storagetest.KindOther
}

func errorBody(status int) (string, []byte) {
	reason := map[int]string{429: "rateLimitExceeded", 503: "backendError", 500: "backendError", 403: "forbidden"}[status]
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"code": status, "message": "injected by gcstest",
		"errors": []map[string]any{{"reason": reason, "message": "injected by gcstest"}},
	}})
	return "application/json", body
}

// conditional checks the conditions of objects.rewrite that fake-gcs-server ignores, and
// serialises uploads and rewrites so that a check and its write are one step.
func (s *Server) conditional(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.EscapedPath()
		switch {
		case r.Method == http.MethodPost && strings.HasPrefix(p, "/storage/v1/b/") &&
			(strings.Contains(p, "/rewriteTo/b/") || strings.Contains(p, "/copyTo/b/")):
			s.writes.Lock()
			defer s.writes.Unlock()
			if s.rewriteConditions(w, r, p) {
				next.ServeHTTP(w, r)
			}
		case strings.HasPrefix(p, "/upload/"):
			s.writes.Lock()
			defer s.writes.Unlock()
			next.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// rewriteConditions answers 412 and returns false when a condition of the rewrite at the
// escaped path p does not hold.
func (s *Server) rewriteConditions(w http.ResponseWriter, r *http.Request, p string) bool {
	rest := strings.TrimPrefix(p, "/storage/v1/b/")
	sep := "/rewriteTo/b/"
	if !strings.Contains(rest, sep) {
		sep = "/copyTo/b/"
	}
	from, to, _ := strings.Cut(rest, sep)
	srcBucket, srcName, _ := strings.Cut(from, "/o/")
	dstBucket, dstName, _ := strings.Cut(to, "/o/")
	unescape := func(v string) string { u, _ := url.PathUnescape(v); return u }
	gen := func(bucket, name string) int64 {
		o, err := s.fake.GetObject(unescape(bucket), unescape(name))
		if err != nil {
			return 0 // absent
		}
		return o.Generation
	}
	q := r.URL.Query()
	failed := false
	if v := q.Get("ifGenerationMatch"); v != "" {
		want, _ := strconv.ParseInt(v, 10, 64)
		failed = gen(dstBucket, dstName) != want
	}
	if v := q.Get("ifSourceGenerationMatch"); v != "" && !failed {
		want, _ := strconv.ParseInt(v, 10, 64)
		if cur := gen(srcBucket, srcName); cur != 0 {
			failed = cur != want
		}
	}
	if failed {
		body, _ := json.Marshal(map[string]any{"error": map[string]any{
			"code": http.StatusPreconditionFailed, "message": "At least one of the pre-conditions you specified did not hold.",
			"errors": []map[string]any{{"reason": "conditionNotMet", "message": "Precondition Failed"}},
		}})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusPreconditionFailed)
		_, _ = w.Write(body)
		return false
	}
	return true
}
