// Package s3test runs an in-process S3 emulator for tests: gofakes3 (in memory) behind a
// front that counts requests by kind, adds latency, injects failures and fills the gaps of
// gofakes3 that matter to zbrecover: If-Match on GET, HEAD and DELETE (412
// PreconditionFailed), per-object ETags in DeleteObjects, and the conditions of a
// CopyObject (x-amz-copy-source-if-match on the source, If-None-Match: * on the destination),
// which gofakes3 1.2.0 ignores; If-None-Match: * on PutObject is checked here as well (S3
// supports conditional writes; gofakes3 checks that one too).
//
//	srv := s3test.NewServer(t)
//	srv.Put("root/_zerobus/table_rejected_parquets/f.parquet", data)
//	b, err := all.Registry().Open(ctx, srv.URLFor("root"), srv.Config())
//	... srv.Counts().Gets ...
package s3test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// The emulator's static credentials (gofakes3 does not check signatures).
const (
	AccessKeyID     = "AKIDZBRECOVERTEST"
	SecretAccessKey = "zbrecover-test-secret"
	Region          = "us-east-1"
	// DefaultBucket is created by NewServer.
	DefaultBucket = "zbrecover-test"
)

// Option configures NewServer.
type Option func(*options)

type options struct {
	latency      time.Duration
	bucketRegion string
	bucket       string
}

// WithLatency delays every request but puts by d.
func WithLatency(d time.Duration) Option { return func(o *options) { o.latency = d } }

// WithBucketRegion makes HeadBucket answer with an x-amz-bucket-region header, as S3 does.
func WithBucketRegion(region string) Option { return func(o *options) { o.bucketRegion = region } }

// WithBucket names the bucket NewServer creates (default DefaultBucket).
func WithBucket(name string) Option { return func(o *options) { o.bucket = name } }

// Server is a running emulator. Its embedded Front offers Counts, ResetCounts, SetLatency and
// FailNext.
type Server struct {
	*storagetest.Front
	// URL is the endpoint, for storage.Config.S3Endpoint.
	URL string
	// Bucket is the bucket created at start.
	Bucket string

	backend      gofakes3.Backend
	bucketRegion string
	// mu makes the precondition checks and the deletes they guard atomic with respect to
	// writes.
	mu sync.Mutex
}

var _ storagetest.Emulator = (*Server)(nil)

// NewServer starts an emulator with one bucket; it stops when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := options{bucket: DefaultBucket}
	for _, f := range opts {
		f(&o)
	}
	be := s3mem.New()
	s := &Server{Bucket: o.bucket, backend: be, bucketRegion: o.bucketRegion}
	faker := gofakes3.New(be, gofakes3.WithIntegrityCheck(true))
	s.Front = storagetest.NewFront(s.conditional(faker.Server()), classify, errorBody)
	s.Front.SetLatency(o.latency)
	ts := httptest.NewServer(s.Front)
	t.Cleanup(ts.Close)
	s.URL = ts.URL
	if err := s.CreateBucket(o.bucket); err != nil {
		t.Fatalf("s3test: create bucket: %v", err)
	}
	return s
}

// CreateBucket creates another bucket (names are 3 to 63 characters).
func (s *Server) CreateBucket(name string) error { return s.backend.CreateBucket(name) }

// Config returns what opens a backend on the emulator: its endpoint, region and static
// credentials given as a credential provider (as vended credentials are).
func (s *Server) Config() storage.Config {
	return storage.Config{
		S3Endpoint: s.URL,
		S3Region:   Region,
		Credentials: func(context.Context) (storage.Credentials, error) {
			return storage.Credentials{AWSAccessKeyID: AccessKeyID, AWSSecretAccessKey: SecretAccessKey}, nil
		},
	}
}

// URLFor returns the s3:// URL of a prefix in the server's bucket.
func (s *Server) URLFor(prefix string) string {
	return "s3://" + s.Bucket + "/" + strings.TrimLeft(prefix, "/")
}

// Put writes an object into the server's bucket directly (no HTTP request, no latency).
func (s *Server) Put(key string, data []byte) error { return s.PutObject(s.Bucket, key, data) }

// PutObject writes an object into a bucket directly.
func (s *Server) PutObject(bucket, key string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	meta := map[string]string{
		"Content-Type":  "application/octet-stream",
		"Last-Modified": time.Now().UTC().Format("Mon, 02 Jan 2006 15:04:05") + " GMT",
	}
	_, err := s.backend.PutObject(bucket, key, meta, bytes.NewReader(data), int64(len(data)), nil)
	return err
}

// Client returns an SDK client for the emulator, for tests that talk to S3 directly.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
		UsePathStyle: true,
		BaseEndpoint: aws.String(s.URL),
	})
}

// split returns the bucket and key of a path-style request.
func split(r *http.Request) (bucket, key string) {
	p := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}

func classify(r *http.Request) storagetest.Kind {
	_, key := split(r)
	q := r.URL.Query()
	switch r.Method {
	case http.MethodGet:
		if key == "" {
			if q.Has("location") || q.Has("versioning") || q.Has("uploads") {
				return storagetest.KindOther
			}
			return storagetest.KindListPage
		}
		return storagetest.KindGet
	case http.MethodHead:
		if key == "" {
			return storagetest.KindOther
		}
		return storagetest.KindHead
	case http.MethodDelete:
		if key != "" && !q.Has("uploadId") {
			return storagetest.KindDelete
		}
	case http.MethodPost:
		if key == "" && q.Has("delete") {
			return storagetest.KindBatchDelete
		}
	case http.MethodPut:
		if key != "" {
			return storagetest.KindPut
		}
	}
	return storagetest.KindOther
}

var statusCodes = map[int]string{
	http.StatusTooManyRequests:     "TooManyRequests",
	http.StatusInternalServerError: "InternalError",
	http.StatusServiceUnavailable:  "SlowDown",
	http.StatusForbidden:           "AccessDenied",
	http.StatusNotFound:            "NoSuchKey",
}

func errorBody(status int) (string, []byte) {
	code := statusCodes[status]
	if code == "" {
		code = http.StatusText(status)
	}
	return "application/xml", []byte(xml.Header + "<Error><Code>" + code + "</Code><Message>injected by s3test</Message></Error>")
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	var b bytes.Buffer
	b.WriteString(xml.Header + "<Error><Code>" + code + "</Code><Message>")
	_ = xml.EscapeText(&b, []byte(msg))
	b.WriteString("</Message></Error>")
	_, _ = w.Write(b.Bytes())
}

// etag returns the object's quoted ETag, or "" if it does not exist.
func (s *Server) etag(bucket, key string) (string, error) {
	obj, err := s.backend.HeadObject(bucket, key)
	if err != nil {
		if gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey) {
			return "", nil
		}
		return "", err
	}
	if obj.Contents != nil {
		obj.Contents.Close()
	}
	return gofakes3.FormatETag(obj.Hash), nil
}

// conditional adds what gofakes3 lacks in front of it: If-Match on object requests, the
// per-object ETag of DeleteObjects, and the bucket region header.
func (s *Server) conditional(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bucket, key := split(r)
		switch {
		case key == "" && r.Method == http.MethodHead && s.bucketRegion != "":
			w.Header().Set("X-Amz-Bucket-Region", s.bucketRegion)
			next.ServeHTTP(w, r)
		case key == "" && r.Method == http.MethodPost && r.URL.Query().Has("delete"):
			s.deleteObjects(w, r, bucket)
		case key != "" && r.Header.Get("If-Match") != "" &&
			(r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodDelete):
			s.mu.Lock()
			defer s.mu.Unlock()
			cur, err := s.etag(bucket, key)
			switch {
			case gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchBucket):
				writeError(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
			case err != nil:
				writeError(w, http.StatusInternalServerError, "InternalError", err.Error())
			case cur == "":
				writeError(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
			case !etagMatch(r.Header.Get("If-Match"), cur):
				writeError(w, http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
			default:
				next.ServeHTTP(w, r)
			}
		case key != "" && r.Method == http.MethodPut && !r.URL.Query().Has("uploadId"):
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.putConditions(w, r, bucket, key) {
				next.ServeHTTP(w, r)
			}
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// putConditions checks, for a PutObject or a CopyObject, the conditions gofakes3 1.2.0 does
// not check itself: If-None-Match: * on a copy's destination (it checks it on PutObject, and
// checking it here too keeps both in one place) and x-amz-copy-source-if-match on a copy's
// source, as S3 does (412 PreconditionFailed, or 404 for a missing source). It writes the
// error and returns false when a condition fails. The caller holds s.mu, so the check and the
// write are one step, as S3 makes them.
func (s *Server) putConditions(w http.ResponseWriter, r *http.Request, bucket, key string) bool {
	if src := r.Header.Get("X-Amz-Copy-Source"); src != "" {
		if want := r.Header.Get("X-Amz-Copy-Source-If-Match"); want != "" {
			dec, err := url.PathUnescape(strings.TrimPrefix(src, "/"))
			srcBucket, srcKey, ok := strings.Cut(dec, "/")
			if err != nil || !ok {
				writeError(w, http.StatusBadRequest, "InvalidArgument", "bad x-amz-copy-source")
				return false
			}
			cur, err := s.etag(srcBucket, srcKey)
			switch {
			case err != nil:
				writeError(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
				return false
			case cur == "":
				writeError(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
				return false
			case !etagMatch(want, cur):
				writeError(w, http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
				return false
			}
		}
	}
	if r.Header.Get("If-None-Match") == "*" {
		cur, err := s.etag(bucket, key)
		if err == nil && cur != "" {
			writeError(w, http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
			return false
		}
	}
	return true
}

func etagMatch(header, cur string) bool {
	for _, e := range strings.Split(header, ",") {
		e = strings.TrimSpace(e)
		if e == "*" || e == cur || `"`+strings.Trim(e, `"`)+`"` == cur {
			return true
		}
	}
	return false
}

type deleteRequest struct {
	Objects []struct {
		Key  string `xml:"Key"`
		ETag string `xml:"ETag"`
	} `xml:"Object"`
	Quiet bool `xml:"Quiet"`
}

type deleteResult struct {
	XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ DeleteResult"`
	Deleted []struct {
		Key string `xml:"Key"`
	} `xml:"Deleted"`
	Errors []deleteError `xml:"Error"`
}

type deleteError struct {
	Key     string `xml:"Key"`
	Code    string `xml:"Code"`
	Message string `xml:"Message"`
}

// deleteObjects serves DeleteObjects with per-object ETag preconditions, as S3 does for
// conditional deletes.
func (s *Server) deleteObjects(w http.ResponseWriter, r *http.Request, bucket string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "IncompleteBody", err.Error())
		return
	}
	var in deleteRequest
	if err := xml.Unmarshal(body, &in); err != nil {
		writeError(w, http.StatusBadRequest, "MalformedXML", err.Error())
		return
	}
	if len(in.Objects) > 1000 {
		writeError(w, http.StatusBadRequest, "MalformedXML", "more than 1000 objects")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out deleteResult
	for _, o := range in.Objects {
		fail := func(code, msg string) { out.Errors = append(out.Errors, deleteError{o.Key, code, msg}) }
		if o.ETag != "" {
			cur, err := s.etag(bucket, o.Key)
			switch {
			case gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchBucket):
				writeError(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
				return
			case err != nil:
				fail("InternalError", err.Error())
				continue
			case cur == "":
				fail("NoSuchKey", "The specified key does not exist.")
				continue
			case !etagMatch(o.ETag, cur):
				fail("PreconditionFailed", "At least one of the pre-conditions you specified did not hold")
				continue
			}
		}
		if _, err := s.backend.DeleteObject(bucket, o.Key); err != nil {
			if gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchBucket) {
				writeError(w, http.StatusNotFound, "NoSuchBucket", err.Error())
				return
			}
			fail("InternalError", err.Error())
			continue
		}
		if !in.Quiet {
			out.Deleted = append(out.Deleted, struct {
				Key string `xml:"Key"`
			}{o.Key})
		}
	}
	data, err := xml.Marshal(out)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	_, _ = w.Write(append([]byte(xml.Header), data...))
}

// ETagOf returns the quoted ETag S3 gives data (its MD5), to build expectations.
func ETagOf(data []byte) string {
	sum := md5.Sum(data)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}
