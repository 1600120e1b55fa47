package s3test

import (
	"net/http"
	"testing"

	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// The credentials a test signs with against a Refuser; none of them may appear in a message.
const (
	RefusedKeyID   = "AKIAHINTTESTKEY00001"
	RefusedSecret  = "hint/test+secret/aaaaaaaaaaaaaaaaaaaaaaaaaaa"
	RefusedSession = "FwoGZXIvYXdzEHintTestSessionToken0000000000000000"
)

// Refusals are the answers S3 gives to a request it refuses, by error code: the status and
// the body as S3 sends them (S3 echoes the key id, the string it signed and the session token
// in these bodies, which is why they hold RefusedKeyID and RefusedSession).
var Refusals = map[string]struct {
	Status int
	Body   string
}{
	"InvalidAccessKeyId": {http.StatusForbidden, `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>InvalidAccessKeyId</Code><Message>The AWS Access Key Id you provided does not exist in our records.</Message><AWSAccessKeyId>` + RefusedKeyID + `</AWSAccessKeyId><RequestId>4442587FB7D0A2F9</RequestId><HostId>hostid</HostId></Error>`},
	"SignatureDoesNotMatch": {http.StatusForbidden, `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided. Check your key and signing method.</Message><AWSAccessKeyId>` + RefusedKeyID + `</AWSAccessKeyId><StringToSign>AWS4-HMAC-SHA256
20240101T000000Z</StringToSign><SignatureProvided>0123456789abcdef</SignatureProvided><CanonicalRequest>GET
/zbrecover-test/
list-type=2
host:127.0.0.1
x-amz-security-token:` + RefusedSession + `
</CanonicalRequest><RequestId>4442587FB7D0A2F9</RequestId><HostId>hostid</HostId></Error>`},
	"ExpiredToken": {http.StatusBadRequest, `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>ExpiredToken</Code><Message>The provided token has expired.</Message><Token-0>` + RefusedSession + `</Token-0><RequestId>4442587FB7D0A2F9</RequestId><HostId>hostid</HostId></Error>`},
	"AccessDenied": {http.StatusForbidden, `<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>4442587FB7D0A2F9</RequestId><HostId>hostid</HostId></Error>`},
}

// Refuser is a server that answers every request as S3 does for one refusal: gofakes3 checks
// no credentials, so it cannot produce these answers. Its URL is the endpoint, for
// storage.Config.S3Endpoint.
type Refuser = storagetest.Refuser

// NewRefuser starts a server that answers every request with Refusals[code] (HEAD requests
// get the status without a body, as from S3); it stops when the test ends.
func NewRefuser(t testing.TB, code string) *Refuser {
	t.Helper()
	e, ok := Refusals[code]
	if !ok {
		t.Fatalf("s3test: no S3 answer for %s", code)
	}
	return storagetest.NewRefuser(t, e.Status, http.Header{
		"Content-Type":     {"application/xml"},
		"X-Amz-Request-Id": {"4442587FB7D0A2F9"},
	}, e.Body)
}
