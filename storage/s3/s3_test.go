package s3_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/s3"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// open opens url on the emulator in pages of 2, with mod applied to the configuration.
func open(t *testing.T, srv *s3test.Server, url string, mod func(*storage.Config)) *s3.Backend {
	t.Helper()
	cfg := srv.Config()
	cfg.PageSize = 2
	if mod != nil {
		mod(&cfg)
	}
	return storagetest.OpenURL(t, s3.New, url, cfg)
}

func TestConformance(t *testing.T) {
	srv := s3test.NewServer(t)
	storagetest.RunOn(t, "s3", srv, func(t *testing.T, url string) storage.Backend { return open(t, srv, url, nil) })
}

// TestBucketRoot checks a backend rooted at the bucket itself (no prefix).
func TestBucketRoot(t *testing.T) {
	srv := s3test.NewServer(t)
	ctx := context.Background()
	if err := srv.CreateBucket("other-bucket"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a/x", "b"} {
		if err := srv.PutObject("other-bucket", k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	b := open(t, srv, "s3://other-bucket", nil)
	var got []string
	if err := b.List(ctx, "", func(o storage.ObjectInfo) error { got = append(got, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "a/x,b" {
		t.Errorf("List = %q, want [a/x b]", got)
	}
	if o, err := b.Stat(ctx, "a/x"); err != nil || o.ETag != s3test.ETagOf([]byte("a/x")) {
		t.Errorf("Stat = %+v, %v; want ETag %s", o, err, s3test.ETagOf([]byte("a/x")))
	}
}

func TestMissingBucketIsNotErrNotExist(t *testing.T) {
	srv := s3test.NewServer(t)
	b := open(t, srv, "s3://no-such-bucket/p", nil)
	ctx := context.Background()
	errs := map[string]error{
		"List":                 b.List(ctx, "", func(storage.ObjectInfo) error { return nil }),
		"conditional Delete":   b.Delete(ctx, "k", storage.Precondition{ETag: `"abc"`}),
		"unconditional Delete": b.Delete(ctx, "k", storage.Precondition{}),
	}
	_, errs["ReadRange"] = b.ReadRange(ctx, "k", 0, 10)
	for op, err := range errs {
		if err == nil || errors.Is(err, storage.ErrNotExist) {
			t.Errorf("%s in a missing bucket: %v; want an error that is not ErrNotExist", op, err)
		} else if !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist`) {
			t.Errorf("%s: error %q does not name the missing bucket", op, err)
		}
	}
}

func TestRegionDiscovery(t *testing.T) {
	srv := s3test.NewServer(t, s3test.WithBucketRegion("eu-west-3"))
	b := open(t, srv, srv.URLFor("p"), func(c *storage.Config) { c.S3Region = "" })
	if b.Region() != "eu-west-3" {
		t.Errorf("Region() = %q, want the bucket's eu-west-3", b.Region())
	}
	if c := srv.Counts(); c.Other != 1 {
		t.Errorf("discovery made %d bucket requests, want 1 (%s)", c.Other, c)
	}
	// The bucket's region is asked once: another root in the bucket costs no request.
	srv.ResetCounts()
	b = open(t, srv, srv.URLFor("q"), func(c *storage.Config) { c.S3Region = "" })
	if b.Region() != "eu-west-3" || srv.Counts().Other != 0 {
		t.Errorf("second root in the bucket: Region() = %q after %d bucket requests, want eu-west-3 after none", b.Region(), srv.Counts().Other)
	}
	// An explicit region wins and costs no request.
	srv.ResetCounts()
	b = open(t, srv, srv.URLFor("p"), func(c *storage.Config) { c.S3Region = "ap-south-1" })
	if b.Region() != "ap-south-1" || srv.Counts().Other != 0 {
		t.Errorf("Region() = %q after %d requests, want ap-south-1 after none", b.Region(), srv.Counts().Other)
	}
	// A store that names no region falls back to us-east-1.
	plain := s3test.NewServer(t)
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	b = open(t, plain, plain.URLFor("p"), func(c *storage.Config) { c.S3Region = "" })
	if b.Region() != s3.DefaultRegion {
		t.Errorf("Region() = %q without discovery, want %s", b.Region(), s3.DefaultRegion)
	}
}

// TestVendedCredentialsRefresh checks that expiring credentials are asked for again before
// they expire, and that requests carry them.
func TestVendedCredentialsRefresh(t *testing.T) {
	srv := s3test.NewServer(t)
	storagetest.MustPut(t, srv.Put, "p/k", []byte("data"))
	var calls atomic.Int64
	var lastAuth atomic.Value
	rt := storagetest.TransportFunc(func(r *http.Request) (*http.Response, error) {
		lastAuth.Store(r.Header.Get("Authorization"))
		return http.DefaultTransport.RoundTrip(r)
	})
	b := open(t, srv, srv.URLFor("p"), func(c *storage.Config) {
		c.Transport = rt
		c.Credentials = func(context.Context) (storage.Credentials, error) {
			n := calls.Add(1)
			return storage.Credentials{
				AWSAccessKeyID:     "AKIDVENDED" + string(rune('0'+n)),
				AWSSecretAccessKey: "secret",
				AWSSessionToken:    "session",
				// Inside the refresh window: every request asks again.
				Expires: time.Now().Add(30 * time.Second),
			}, nil
		}
	})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := b.Stat(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() < 2 {
		t.Errorf("credential provider called %d times for 2 requests with credentials about to expire", calls.Load())
	}
	if auth, _ := lastAuth.Load().(string); !strings.Contains(auth, "AKIDVENDED") {
		t.Errorf("request signed with %q, want the vended key", auth)
	}

	// Long-lived credentials are cached.
	calls.Store(0)
	b = open(t, srv, srv.URLFor("p"), func(c *storage.Config) {
		c.Credentials = func(context.Context) (storage.Credentials, error) {
			calls.Add(1)
			return storage.Credentials{AWSAccessKeyID: "AKID", AWSSecretAccessKey: "s", Expires: time.Now().Add(time.Hour)}, nil
		}
	})
	for i := 0; i < 3; i++ {
		if _, err := b.Stat(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("credential provider called %d times for credentials valid an hour, want 1", calls.Load())
	}

	// A provider error surfaces.
	b = open(t, srv, srv.URLFor("p"), func(c *storage.Config) {
		c.Credentials = func(context.Context) (storage.Credentials, error) {
			return storage.Credentials{}, errors.New("vending refused")
		}
	})
	if _, err := b.Stat(ctx, "k"); err == nil || !strings.Contains(err.Error(), "vending refused") {
		t.Errorf("Stat with failing credentials: %v", err)
	}
}

func TestTransportAndPageSize(t *testing.T) {
	srv := s3test.NewServer(t)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		storagetest.MustPut(t, srv.Put, "p/"+k, []byte(k))
	}
	var n atomic.Int64
	b := open(t, srv, srv.URLFor("p"), func(c *storage.Config) { c.Transport = storagetest.CountingTransport(&n) })
	count := 0
	if err := b.List(context.Background(), "", func(storage.ObjectInfo) error { count++; return nil }); err != nil {
		t.Fatal(err)
	}
	if count != 5 {
		t.Errorf("listed %d objects, want 5", count)
	}
	if c := srv.Counts(); c.ListPages != 3 || n.Load() != 3 {
		t.Errorf("5 objects in pages of 2: %d list pages served, %d requests through the transport; want 3 and 3", c.ListPages, n.Load())
	}
}

// TestRetryableErrors checks which failures the backend marks for WithRetry.
func TestRetryableErrors(t *testing.T) {
	srv := s3test.NewServer(t)
	storagetest.MustPut(t, srv.Put, "p/k", []byte("data"))
	b := open(t, srv, srv.URLFor("p"), func(c *storage.Config) { c.MaxAttempts = 1 })
	ctx := context.Background()
	for _, status := range []int{503, 500, 429} {
		srv.FailNext(storagetest.KindHead, status, 1)
		_, err := b.Stat(ctx, "k")
		if err == nil || !storage.IsRetryable(err) {
			t.Errorf("Stat answered %d: %v; want a retryable error", status, err)
		}
	}
	srv.FailNext(storagetest.KindGet, 403, 1)
	if _, err := b.ReadRange(ctx, "k", 0, 1); err == nil || storage.IsRetryable(err) || errors.Is(err, storage.ErrNotExist) ||
		!strings.Contains(err.Error(), "access denied") {
		t.Errorf("ReadRange answered 403: %v; want a permanent access-denied error", err)
	}
	if _, err := b.Stat(ctx, "missing"); storage.IsRetryable(err) {
		t.Errorf("Stat of a missing key is retryable: %v", err)
	}
	srv.FailNext(storagetest.KindBatchDelete, 503, 1)
	if _, err := b.DeleteBatch(ctx, []storage.DeleteRequest{{Key: "k"}}); !storage.IsRetryable(err) {
		t.Errorf("DeleteBatch answered 503: %v; want a retryable error", err)
	}
	// With the SDK's own retries on, a single 503 is absorbed.
	b = open(t, srv, srv.URLFor("p"), func(c *storage.Config) { c.MaxAttempts = 3 })
	srv.FailNext(storagetest.KindHead, 503, 1)
	if _, err := b.Stat(ctx, "k"); err != nil {
		t.Errorf("Stat after one 503 with SDK retries: %v", err)
	}
}

// TestRequestsPerOperation pins the request counts inspect and cleanup rely on.
func TestRequestsPerOperation(t *testing.T) {
	srv := s3test.NewServer(t)
	for _, k := range []string{"a", "b", "c"} {
		storagetest.MustPut(t, srv.Put, "p/"+k, make([]byte, 100))
	}
	b := open(t, srv, srv.URLFor("p"), func(c *storage.Config) { c.PageSize = 0 })
	ctx := context.Background()
	srv.ResetCounts()
	objs := storagetest.ListAndReadTails(t, b, 10)
	reqs := make([]storage.DeleteRequest, len(objs))
	for i, o := range objs {
		reqs[i] = storage.DeleteRequest{Key: o.Key, Cond: o.Version()}
	}
	res, err := b.DeleteBatch(ctx, reqs)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Errorf("delete %s: %v", r.Key, r.Err)
		}
	}
	want := storagetest.Counts{ListPages: 1, Gets: 3, BatchDeletes: 1}
	if got := srv.Counts(); got != want {
		t.Errorf("requests: %s\nwant      %s", got, want)
	}
}

func TestOpenRejectsOtherSchemes(t *testing.T) {
	loc, err := storage.Parse("gs://bucket/p")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.New(context.Background(), loc, storage.Config{}); err == nil {
		t.Error("s3.New accepted a gs:// location")
	}
}

// TestWriteHeaders checks what S3 itself relies on, as the SDK sends it: If-None-Match: * on
// a create-only put and copy, and the source's ETag as x-amz-copy-source-if-match.
func TestWriteHeaders(t *testing.T) {
	srv := s3test.NewServer(t)
	var mu sync.Mutex
	seen := map[string]http.Header{}
	rt := storagetest.TransportFunc(func(r *http.Request) (*http.Response, error) {
		if r.Method == http.MethodPut {
			mu.Lock()
			seen[r.URL.Path] = r.Header.Clone()
			mu.Unlock()
		}
		return http.DefaultTransport.RoundTrip(r)
	})
	b := open(t, srv, srv.URLFor("p"), func(c *storage.Config) { c.Transport = rt })
	ctx := context.Background()
	if _, err := b.Put(ctx, "a", strings.NewReader("data"), 4, storage.PutOptions{CreateOnly: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Copy(ctx, "a", "b", storage.Precondition{}, storage.PutOptions{CreateOnly: true}); err != nil {
		t.Fatal(err)
	}
	put, cp := seen["/"+srv.Bucket+"/p/a"], seen["/"+srv.Bucket+"/p/b"]
	if put.Get("If-None-Match") != "*" {
		t.Errorf("create-only PutObject sent If-None-Match %q", put.Get("If-None-Match"))
	}
	if cp.Get("If-None-Match") != "*" || cp.Get("X-Amz-Copy-Source-If-Match") != s3test.ETagOf([]byte("data")) ||
		cp.Get("X-Amz-Copy-Source") != srv.Bucket+"/p/a" {
		t.Errorf("CopyObject sent If-None-Match %q, x-amz-copy-source %q, x-amz-copy-source-if-match %q",
			cp.Get("If-None-Match"), cp.Get("X-Amz-Copy-Source"), cp.Get("X-Amz-Copy-Source-If-Match"))
	}
}

// A refused create-only put says so once, names the object and keeps the SDK error.
func TestCreateOnlyError(t *testing.T) {
	srv := s3test.NewServer(t)
	b := open(t, srv, srv.URLFor("p"), nil)
	storagetest.MustPut(t, srv.Put, "p/k", []byte("x"))
	_, err := b.Put(context.Background(), "k", strings.NewReader("y"), 1, storage.PutOptions{CreateOnly: true})
	if !errors.Is(err, storage.ErrExist) || errors.Is(err, storage.ErrPreconditionFailed) {
		t.Fatalf("create-only Put over an object: %v, want ErrExist only", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "s3://"+srv.Bucket+"/p/k") || !strings.Contains(msg, "PreconditionFailed") || strings.Contains(msg, "<nil>") {
		t.Errorf("error %q", msg)
	}
}

// TestRegionDiscoveryOnce: roots in one bucket opened at the same time ask its region once.
func TestRegionDiscoveryOnce(t *testing.T) {
	srv := s3test.NewServer(t, s3test.WithBucketRegion("eu-north-1"))
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := srv.Config()
			cfg.S3Region = ""
			loc, err := storage.Parse(srv.URLFor(fmt.Sprintf("t%d", i)))
			if err != nil {
				t.Error(err)
				return
			}
			b, err := s3.New(context.Background(), loc, cfg)
			if err != nil {
				t.Error(err)
				return
			}
			if b.Region() != "eu-north-1" {
				t.Errorf("Region() = %q", b.Region())
			}
		}()
	}
	wg.Wait()
	if c := srv.Counts(); c.Other != 1 {
		t.Errorf("16 roots opened at once made %d bucket requests, want 1", c.Other)
	}
}

// TestSharedTransport: backends opened one after the other over one storage.SharedTransport
// reuse its connection: ten roots listed in turn open one connection to the store.
func TestSharedTransport(t *testing.T) {
	srv := s3test.NewServer(t)
	var conns atomic.Int64
	front := httptest.NewUnstartedServer(srv.Front)
	front.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	front.Start()
	t.Cleanup(front.Close)
	tr := storage.SharedTransport(8)
	for i := range 10 {
		cfg := srv.Config()
		cfg.S3Endpoint, cfg.Transport = front.URL, tr
		loc, err := storage.Parse(srv.URLFor(fmt.Sprintf("t%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		b, err := s3.New(context.Background(), loc, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.List(context.Background(), "", func(storage.ObjectInfo) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("10 backends listed in turn opened %d connections, want 1", n)
	}
}
