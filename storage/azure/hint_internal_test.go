package azure

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
)

// refusal returns the SDK error of a 403 answer with code, as the service sends it.
func refusal(t *testing.T, code string) error {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "https://acct.blob.core.windows.net/c?restype=container&comp=list", nil)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.NewResponseError(&http.Response{
		StatusCode: http.StatusForbidden,
		Status:     "403 This request is not authorized to perform this operation using this permission.",
		Header:     http.Header{"X-Ms-Error-Code": {code}},
		Body: io.NopCloser(strings.NewReader(`<?xml version="1.0" encoding="utf-8"?><Error><Code>` + code +
			`</Code><Message>This request is not authorized to perform this operation using this permission.</Message></Error>`)),
		Request: req,
	})
}

// An identity without a data role (RBAC) is told which role to assign; Azurite cannot
// produce this, since it has no Microsoft Entra identities.
func TestHintRBAC(t *testing.T) {
	b := &Backend{container: "c", account: "acct", auth: "Azure default credential", kind: authToken, base: "abfss://c@acct.dfs.core.windows.net"}
	for _, tc := range []struct{ op, code, role string }{
		{"list", "AuthorizationPermissionMismatch", "Storage Blob Data Reader"},
		{"read", "AuthorizationFailure", "Storage Blob Data Reader"},
		{"delete", "AuthorizationPermissionMismatch", "Storage Blob Data Contributor"},
	} {
		msg := b.fail(tc.op, "k", refusal(t, tc.code), false).Error()
		for _, w := range []string{tc.code, "RBAC role " + tc.role, "Azure default credential"} {
			if !strings.Contains(msg, w) {
				t.Errorf("%s %s: message does not say %q: %s", tc.op, tc.code, w, msg)
			}
		}
	}
	msg := b.fail("list", "", refusal(t, "AuthenticationFailed"), false).Error()
	if !strings.Contains(msg, "az login") {
		t.Errorf("refused token: %s", msg)
	}
}
