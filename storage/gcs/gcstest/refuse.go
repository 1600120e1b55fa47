package gcstest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Refusals are the answers of the GCS JSON API to a request it refuses, by name: the status
// and the body as GCS sends them. fake-gcs-server checks no credentials, so it cannot produce
// them.
var Refusals = map[string]struct {
	Status int
	Body   string
}{
	// A bearer token GCS does not accept (expired, revoked, or not a token).
	"invalid-credentials": {http.StatusUnauthorized, `{
  "error": {
    "code": 401,
    "message": "Invalid Credentials",
    "errors": [
      {
        "message": "Invalid Credentials",
        "domain": "global",
        "reason": "authError",
        "locationType": "header",
        "location": "Authorization"
      }
    ]
  }
}
`},
	// A request without credentials to a bucket that is not public.
	"anonymous": {http.StatusUnauthorized, `{
  "error": {
    "code": 401,
    "message": "Anonymous caller does not have storage.objects.list access to the Google Cloud Storage bucket. Permission 'storage.objects.list' denied on resource (or it may not exist).",
    "errors": [
      {
        "message": "Anonymous caller does not have storage.objects.list access to the Google Cloud Storage bucket. Permission 'storage.objects.list' denied on resource (or it may not exist).",
        "domain": "global",
        "reason": "required",
        "locationType": "header",
        "location": "Authorization"
      }
    ]
  }
}
`},
	// An authenticated principal without the permission.
	"forbidden": {http.StatusForbidden, `{
  "error": {
    "code": 403,
    "message": "reader@zbrecover-test.iam.gserviceaccount.com does not have storage.objects.list access to the Google Cloud Storage bucket. Permission 'storage.objects.list' denied on resource (or it may not exist).",
    "errors": [
      {
        "message": "reader@zbrecover-test.iam.gserviceaccount.com does not have storage.objects.list access to the Google Cloud Storage bucket. Permission 'storage.objects.list' denied on resource (or it may not exist).",
        "domain": "global",
        "reason": "forbidden"
      }
    ]
  }
}
`},
}

// Refuser is a server that answers every request with one of Refusals.
type Refuser struct {
	// URL is the endpoint, for storage.Config.GCSEndpoint.
	URL string
	// Requests counts the requests answered.
	Requests atomic.Int64
}

// NewRefuser starts a server that answers every request with Refusals[name]; it stops when
// the test ends.
func NewRefuser(t testing.TB, name string) *Refuser {
	t.Helper()
	e, ok := Refusals[name]
	if !ok {
		t.Fatalf("gcstest: no GCS answer named %s", name)
	}
	r := &Refuser{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.Requests.Add(1)
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		if e.Status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/"`)
		}
		w.WriteHeader(e.Status)
		if req.Method != http.MethodHead {
			_, _ = w.Write([]byte(e.Body))
		}
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}
