package azuretest

import (
	"net/http"
	"testing"

	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// Refusals are the answers of Azure Blob Storage to a request it refuses, by name: the status,
// the error code (sent in x-ms-error-code as well) and the body as Azure sends them. Azurite
// answers a wrong key or SAS signature with AuthorizationFailure, not the AuthenticationFailed
// of Azure, which is why these exist.
var Refusals = map[string]struct {
	Status int
	Code   string
	Body   string
}{
	// A shared-key signature made with a key that is not the account's.
	"bad-key": {http.StatusForbidden, "AuthenticationFailed", `<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthenticationFailed</Code><Message>Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.
RequestId:2c3b8f6e-701e-0037-6f3a-1c5b4e000000
Time:2024-01-01T00:00:00.0000000Z</Message><AuthenticationErrorDetail>The MAC signature found in the HTTP request 'c2lnbmF0dXJlLW9mLXRoZS13cm9uZy1rZXk=' is not the same as any computed signature. Server used following string to sign: 'GET


'.</AuthenticationErrorDetail></Error>`},
	// A SAS token whose signature does not match (altered, or signed with another key).
	"bad-sas-signature": {http.StatusForbidden, "AuthenticationFailed", `<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthenticationFailed</Code><Message>Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.
RequestId:2c3b8f6e-701e-0037-6f3a-1c5b4e000001
Time:2024-01-01T00:00:00.0000000Z</Message><AuthenticationErrorDetail>Signature did not match. String to sign used was rl


/blob/devstoreaccount1/container

</AuthenticationErrorDetail></Error>`},
	// An identity (RBAC) or SAS without the permission the request needs.
	"permission-mismatch": {http.StatusForbidden, "AuthorizationPermissionMismatch", `<?xml version="1.0" encoding="utf-8"?><Error><Code>AuthorizationPermissionMismatch</Code><Message>This request is not authorized to perform this operation using this permission.
RequestId:2c3b8f6e-701e-0037-6f3a-1c5b4e000002
Time:2024-01-01T00:00:00.0000000Z</Message></Error>`},
	// A container that does not exist in the account.
	"container-not-found": {http.StatusNotFound, "ContainerNotFound", `<?xml version="1.0" encoding="utf-8"?><Error><Code>ContainerNotFound</Code><Message>The specified container does not exist.
RequestId:2c3b8f6e-701e-0037-6f3a-1c5b4e000003
Time:2024-01-01T00:00:00.0000000Z</Message></Error>`},
}

// Refuser is a server that answers every request with one of Refusals.
type Refuser struct {
	*storagetest.Refuser
	// Endpoint is the blob service URL, for storage.Config.AzureEndpoint.
	Endpoint string
}

// NewRefuser starts a server that answers every request with Refusals[name] (HEAD requests
// get the status and x-ms-error-code without a body, as from Azure); it stops when the test
// ends.
func NewRefuser(t testing.TB, name string) *Refuser {
	t.Helper()
	e, ok := Refusals[name]
	if !ok {
		t.Fatalf("azuretest: no Azure answer named %s", name)
	}
	r := storagetest.NewRefuser(t, e.Status, http.Header{
		"Content-Type":    {"application/xml"},
		"X-Ms-Error-Code": {e.Code},
		"X-Ms-Request-Id": {"2c3b8f6e-701e-0037-6f3a-1c5b4e000000"},
	}, e.Body)
	return &Refuser{Refuser: r, Endpoint: r.URL + "/" + Account + "/"}
}
