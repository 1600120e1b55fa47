package gcstest

import (
	"net/http"
	"testing"

	"github.com/zbrecover/zbrecover/storage/storagetest"
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

// Refuser is a server that answers every request with one of Refusals. Its URL is the
// endpoint, for storage.Config.GCSEndpoint.
type Refuser = storagetest.Refuser

// NewRefuser starts a server that answers every request with Refusals[name]; it stops when
// the test ends.
func NewRefuser(t testing.TB, name string) *Refuser {
	t.Helper()
	e, ok := Refusals[name]
	if !ok {
		t.Fatalf("gcstest: no GCS answer named %s", name)
	}
	h := http.Header{"Content-Type": {"application/json; charset=UTF-8"}}
	if e.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/"`)
	}
	return storagetest.NewRefuser(t, e.Status, h, e.Body)
}
