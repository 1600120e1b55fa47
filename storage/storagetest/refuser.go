package storagetest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Refuser is a server that answers every request with one refusal of a store: a status,
// headers and a body (none to HEAD requests, as stores answer them). The store packages'
// test helpers (s3test, gcstest, azuretest) hold the real answers of their service and
// start one with NewRefuser.
type Refuser struct {
	// URL is the server's base URL.
	URL string
	// Requests counts the requests answered.
	Requests atomic.Int64
}

// NewRefuser starts a server answering every request with status, header and body; it stops
// when the test ends.
func NewRefuser(t testing.TB, status int, header http.Header, body string) *Refuser {
	t.Helper()
	r := &Refuser{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Requests.Add(1)
		for k, vs := range header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(status)
		if req.Method != http.MethodHead {
			_, _ = w.Write([]byte(body))
		}
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}
