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

// open opens url on the emulator in pages of 2, without the SDK's retries, with mod applied to
// the configuration. The backend is closed when the test ends.
func open(t *testing.T, srv *gcstest.Server, url string, mod func(*storage.Config)) *gcs.Backend {
	t.Helper()
	cfg := srv.Config()
	cfg.PageSize = 2
	cfg.MaxAttempts = 1
	if mod != nil {
		mod(&cfg)
	}
	return storagetest.OpenURL(t, gcs.New, url, cfg)
}

func TestConformance(t *testing.T) {
	srv := gcstest.NewServer(t)
	storagetest.RunOn(t, "gcs", srv, func(t *testing.T, url string) storage.Backend { return open(t, srv, url, nil) })
}

// TestConditionalDeleteOfOlderGeneration checks that a stale generation is refused and
// reported as changed, not gone, and that the live object stays.
func TestConditionalDeleteOfOlderGeneration(t *testing.T) {
	srv := gcstest.NewServer(t)
	b := open(t, srv, srv.URLFor("p"), nil)
	ctx := context.Background()
	storagetest.MustPut(t, srv.Put, "p/k", []byte("v1"))
	v1, err := b.Stat(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	storagetest.MustPut(t, srv.Put, "p/k", []byte("v2!"))
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

func TestTransportPageSizeAndCounts(t *testing.T) {
	srv := gcstest.NewServer(t)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		storagetest.MustPut(t, srv.Put, "p/"+k, make([]byte, 100))
	}
	var n atomic.Int64
	b := open(t, srv, srv.URLFor("p"), func(c *storage.Config) { c.Transport = storagetest.CountingTransport(&n) })
	objs := storagetest.ListAndReadTails(t, b, 10)
	if err := b.Delete(context.Background(), objs[0].Key, objs[0].Version()); err != nil {
		t.Fatal(err)
	}
	want := storagetest.Counts{ListPages: 3, Gets: 5, Deletes: 1}
	if got := srv.Counts(); got != want || n.Load() != want.Total() {
		t.Errorf("requests: %s (%d through the transport)\nwant      %s", got, n.Load(), want)
	}
}

func TestRetryableErrors(t *testing.T) {
	srv := gcstest.NewServer(t)
	storagetest.MustPut(t, srv.Put, "p/k", []byte("data"))
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
	storagetest.MustPut(t, srv.Put, "p/k", []byte("data"))
	var auth atomic.Value
	var calls atomic.Int64
	rt := storagetest.TransportFunc(func(r *http.Request) (*http.Response, error) {
		auth.Store(r.Header.Get("Authorization"))
		// The emulator is reached at its own address; only the header matters here.
		return http.DefaultTransport.RoundTrip(r)
	})
	// Without GCSEndpoint the client would go to the cloud: point the transport at the
	// emulator instead, keeping the path.
	redirect := storagetest.TransportFunc(func(r *http.Request) (*http.Response, error) {
		r2 := r.Clone(r.Context())
		r2.URL.Scheme, r2.URL.Host = "http", strings.TrimPrefix(srv.URL, "http://")
		r2.Host = r2.URL.Host
		return rt.RoundTrip(r2)
	})
	b := storagetest.OpenURL(t, gcs.New, srv.URLFor("p"), storage.Config{
		Transport:   redirect,
		MaxAttempts: 1,
		Credentials: func(context.Context) (storage.Credentials, error) {
			calls.Add(1)
			return storage.Credentials{GCSOAuthToken: "ya29.vended-token", Expires: time.Now().Add(time.Hour)}, nil
		},
	})
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
