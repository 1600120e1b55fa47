package storagetest

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
)

// Emulator is what the emulator helpers (s3test, gcstest, azuretest) give a backend's tests.
type Emulator interface {
	// URLFor returns the storage URL of a prefix in the emulator's bucket or container.
	URLFor(prefix string) string
	// Put writes an object directly, key relative to the bucket or container.
	Put(key string, data []byte) error
}

// RunOn runs the conformance suite as Run does, on an emulator: each test gets the backend
// that open returns for the URL of a fresh root, and a Put that writes under that root.
func RunOn(t *testing.T, name string, srv Emulator, open func(t *testing.T, url string) storage.Backend) {
	t.Helper()
	Run(t, name, func(t *testing.T, root string) (storage.Backend, Put) {
		put := func(key string, data []byte) error { return srv.Put(root+"/"+key, data) }
		return open(t, srv.URLFor(root)), put
	})
}

// OpenURL parses url and opens it with newBackend (a backend package's New) and cfg. It
// fails the test if either step fails, and closes the backend when the test ends if it is an
// io.Closer.
func OpenURL[B storage.Backend](t testing.TB, newBackend func(context.Context, storage.Location, storage.Config) (B, error), url string, cfg storage.Config) B {
	t.Helper()
	loc, err := storage.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newBackend(context.Background(), loc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := any(b).(io.Closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	return b
}

// MustPut writes an object with put and fails the test if that fails.
func MustPut(t testing.TB, put Put, key string, data []byte) {
	t.Helper()
	if err := put(key, data); err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
}

// ListAndReadTails lists every object of b and reads the last n bytes of each (the requests
// inspect makes for footers), failing the test on any error. It returns the listed objects.
func ListAndReadTails(t testing.TB, b storage.Backend, n int64) []storage.ObjectInfo {
	t.Helper()
	ctx := context.Background()
	objs, err := listAll(ctx, b, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if _, err := storage.ReadAll(ctx, b, o.Key, o.Size-n, n); err != nil {
			t.Fatal(err)
		}
	}
	return objs
}

// TransportFunc is an http.RoundTripper made of a function, for tests that watch or redirect
// a backend's requests through storage.Config.Transport.
type TransportFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f TransportFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// CountingTransport returns a transport that adds one to n for each request and sends it
// with http.DefaultTransport.
func CountingTransport(n *atomic.Int64) http.RoundTripper {
	return TransportFunc(func(r *http.Request) (*http.Response, error) {
		n.Add(1)
		return http.DefaultTransport.RoundTrip(r)
	})
}
