package gcs_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/gcs"
	"github.com/zbrecover/zbrecover/storage/gcs/gcstest"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

func open(t *testing.T, srv *gcstest.Server, url string, mod func(*storage.Config)) *gcs.Backend {
	t.Helper()
	loc, err := storage.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg := srv.Config()
	cfg.PageSize = 2
	cfg.MaxAttempts = 1
	if mod != nil {
		mod(&cfg)
	}
	b, err := gcs.New(context.Background(), loc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	srv := gcstest.NewServer(t)
	storagetest.Run(t, "gcs", func(t *testing.T, root string) (storage.Backend, storagetest.Put) {
		b := open(t, srv, srv.URLFor(root), nil)
		return b, func(key string, data []byte) error { return srv.Put(root+"/"+key, data) }
	})
}

// TestConditionalDeleteOfOlderGeneration checks that a stale generation is refused and
// reported as changed, not gone, and that the live object stays.
func TestConditionalDeleteOfOlderGeneration(t *testing.T) {
	srv := gcstest.NewServer(t)
	b := open(t, srv, srv.URLFor("p"), nil)
	ctx := context.Background()
	if err := srv.Put("p/k", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	v1, err := b.Stat(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Put("p/k", []byte("v2!")); err != nil {
		t.Fatal(err)
	}
	v2, err := b.Stat(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if v1.Generation == 0 || v2.Generation <= v1.Generation {
		t.Fatalf("generations %d then %d, want increasing", v1.Generation, v2.Generation)
	}
	if err := b.Delete(ctx, "k", storage.Precondition{Generation: v1.Generation}); !errors.Is(err, storage.ErrPreconditionFailed) {
		t.Fatalf("delete of generation %d: %v, want ErrPreconditionFailed", v1.Generation, err)
	}
	// An ETag-only precondition is checked against the object's metadata.
	if err := b.Delete(ctx, "k", storage.Precondition{ETag: v1.ETag}); !errors.Is(err, storage.ErrPreconditionFailed) {
		t.Fatalf("delete with a stale ETag: %v, want ErrPreconditionFailed", err)
	}
	if err := b.Delete(ctx, "k", storage.Precondition{ETag: v2.ETag}); err != nil {
		t.Fatalf("delete with the current ETag: %v", err)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTransportPageSizeAndCounts(t *testing.T) {
	srv := gcstest.NewServer(t)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		if err := srv.Put("p/"+k, make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	var n atomic.Int64
	rt := roundTripper(func(r *http.Request) (*http.Response, error) {
		n.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})
	b := open(t, srv, srv.URLFor("p"), func(c *storage.Config) { c.Transport = rt })
	ctx := context.Background()
	var objs []storage.ObjectInfo
	if err := b.List(ctx, "", func(o storage.ObjectInfo) error { objs = append(objs, o); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if _, err := storage.ReadAll(ctx, b, o.Key, o.Size-10, 10); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Delete(ctx, objs[0].Key, objs[0].Version()); err != nil {
		t.Fatal(err)
	}
	want := storagetest.Counts{ListPages: 3, Gets: 5, Deletes: 1}
	if got := srv.Counts(); got != want || n.Load() != want.Total() {
		t.Errorf("requests: %s (%d through the transport)\nwant      %s", got, n.Load(), want)
	}
}

func TestRetryableErrors(t *testing.T) {
	srv := gcstest.NewServer(t)
	if err := srv.Put("p/k", []byte("data")); err != nil {
		t.Fatal(err)
	}
	b := open(t, srv, srv.URLFor("p"), nil)
	ctx := context.Background()
	for _, status := range []int{503, 429, 500} {
		srv.FailNext(storagetest.KindHead, status, 1)
		if _, err := b.Stat(ctx, "k"); err == nil || !storage.IsRetryable(err) {
			t.Errorf("Stat answered %d: %v; want a retryable error", status, err)
		}
	}
	srv.FailNext(storagetest.KindGet, 403, 1)
	if _, err := b.ReadRange(ctx, "k", 0, 2); err == nil || storage.IsRetryable(err) {
		t.Errorf("ReadRange answered 403: %v; want a permanent error", err)
	}
	srv.FailNext(storagetest.KindListPage, 503, 1)
	if err := b.List(ctx, "", func(storage.ObjectInfo) error { return nil }); !storage.IsRetryable(err) {
		t.Errorf("List answered 503: %v; want a retryable error", err)
	}
}

func TestVendedToken(t *testing.T) {
	srv := gcstest.NewServer(t)
	if err := srv.Put("p/k", []byte("data")); err != nil {
		t.Fatal(err)
	}
	var auth atomic.Value
	var calls atomic.Int64
	rt := roundTripper(func(r *http.Request) (*http.Response, error) {
		auth.Store(r.Header.Get("Authorization"))
		// The emulator is reached at its own address; only the header matters here.
		return http.DefaultTransport.RoundTrip(r)
	})
	loc, _ := storage.Parse(srv.URLFor("p"))
	// Without GCSEndpoint the client would go to the cloud: point the transport at the
	// emulator instead, keeping the path.
	redirect := roundTripper(func(r *http.Request) (*http.Response, error) {
		r2 := r.Clone(r.Context())
		r2.URL.Scheme, r2.URL.Host = "http", strings.TrimPrefix(srv.URL, "http://")
		r2.Host = r2.URL.Host
		return rt.RoundTrip(r2)
	})
	b, err := gcs.New(context.Background(), loc, storage.Config{
		Transport:   redirect,
		MaxAttempts: 1,
		Credentials: func(context.Context) (storage.Credentials, error) {
			calls.Add(1)
			return storage.Credentials{GCSOAuthToken: "ya29.vended-token", Expires: time.Now().Add(time.Hour)}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := 0; i < 2; i++ {
		if _, err := b.Stat(context.Background(), "k"); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := auth.Load().(string); got != "Bearer ya29.vended-token" {
		t.Errorf("Authorization %q, want the vended bearer token", got)
	}
	if calls.Load() != 1 {
		t.Errorf("token asked for %d times for a token valid an hour, want 1", calls.Load())
	}
}
