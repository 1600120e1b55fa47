package azure

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
)

// authKind is the kind of credential a backend uses, which decides what a refusal means.
type authKind int

const (
	authToken  authKind = iota // Microsoft Entra ID token (DefaultAzureCredential): RBAC roles apply
	authKey                    // shared key (account key or connection string)
	authSAS                    // a SAS token of the operator's
	authVended                 // a SAS token vended by Unity Catalog
)

// noCredentialHint says how to give the backend credentials when none was found.
const noCredentialHint = "no Azure credentials found: run `az login` (with a role such as Storage Blob Data " +
	"Reader on the account), or set " + EnvAccountKey + " (with " + EnvAccount + "), " + EnvSASToken + " or " +
	EnvConnectionString + ", or add a SAS token to the URL (or name the table with --table to use the " +
	"credentials Unity Catalog vends for it)"

// setSAS records the parameters of the SAS token in use.
func (b *Backend) setSAS(token string) {
	q, err := url.ParseQuery(strings.TrimPrefix(token, "?"))
	if err != nil {
		return
	}
	b.sas.Store(&q)
}

// connStringSAS returns the SharedAccessSignature of a connection string, "" when it has none.
func connStringSAS(cs string) string {
	for _, part := range strings.Split(cs, ";") {
		k, v, _ := strings.Cut(part, "=")
		if strings.EqualFold(strings.TrimSpace(k), "SharedAccessSignature") {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// sasPermission returns the SAS permission letters request op needs (sp=), and what they are.
func sasPermission(op string) (letters, what string) {
	switch op {
	case "list":
		return "l", "list"
	case "stat", "read":
		return "r", "read"
	case "delete", "delete batch":
		return "d", "delete"
	case "put":
		return "cw", "create and write"
	case "copy":
		return "rcw", "read, create and write"
	}
	return "rl", "read and list"
}

// rbacRole names the Azure RBAC data role that allows request op.
func rbacRole(op string) string {
	switch op {
	case "list", "stat", "read":
		return "Storage Blob Data Reader (or Contributor)"
	}
	return "Storage Blob Data Contributor"
}

// refusedNote explains a 403 to request op (AuthenticationFailed, AuthorizationFailure,
// AuthorizationPermissionMismatch) by the kind of credential in use: an expired SAS first, then
// a key or signature that does not match, then a missing permission or role.
func (b *Backend) refusedNote(op string, err error) string {
	code := errorCode(err)
	if code == "" {
		code = "HTTP 403"
	}
	letters, what := sasPermission(op)
	var sas url.Values
	if p := b.sas.Load(); p != nil {
		sas = *p
	}
	if b.kind == authSAS || b.kind == authVended {
		if se := sas.Get("se"); se != "" {
			if exp, perr := time.Parse(time.RFC3339, se); perr == nil && time.Now().After(exp) {
				if b.kind == authVended {
					return fmt.Sprintf("the SAS token Unity Catalog vended for the table expired at %s (%s); run again for a fresh one",
						exp.UTC().Format(time.RFC3339), code)
				}
				return fmt.Sprintf("the SAS token (%s) expired at %s (%s): issue a new one", b.auth, exp.UTC().Format(time.RFC3339), code)
			}
		}
	}
	switch b.kind {
	case authVended:
		return fmt.Sprintf("Azure refused the SAS token Unity Catalog vended for the table (%s); run again for a fresh one, "+
			"or read with the environment's credentials (--storage-auth default)", code)
	case authSAS:
		if code == string(bloberror.AuthorizationPermissionMismatch) || code == string(bloberror.AuthorizationResourceTypeMismatch) {
			return fmt.Sprintf("the SAS token (%s) does not allow %s here (%s): it grants sp=%s, and %s needs %q; "+
				"issue one with the permissions r, l and d on the container", b.auth, what, code, orNone(sas.Get("sp")), op, letters)
		}
		if code == string(bloberror.AuthenticationFailed) {
			return fmt.Sprintf("the SAS token's signature was refused (%s, %s): check that it was issued for account %q "+
				"and container %q and was copied whole, or issue a new one", code, b.auth, b.account, b.container)
		}
		return fmt.Sprintf("the SAS token (%s) was refused (%s): check that it was issued for account %q and container %q, "+
			"that it grants sp=rld (it grants sp=%s), and the account's network rules", b.auth, code, b.account, b.container, orNone(sas.Get("sp")))
	case authKey:
		if code == string(bloberror.AuthorizationPermissionMismatch) {
			break
		}
		return fmt.Sprintf("the account key was refused (%s, %s): check that it is a current key of account %q "+
			"(keys change when rotated), and the account's network rules", code, b.auth, b.account)
	}
	if code == string(bloberror.AuthenticationFailed) {
		return fmt.Sprintf("the Microsoft Entra token was refused (%s, %s): run `az login` again, or check the "+
			"identity's AZURE_* settings", code, b.auth)
	}
	return fmt.Sprintf("the identity in use (%s) may not %s here (%s): assign it the RBAC role %s on the account "+
		"or container (a role takes a few minutes to apply; Owner or Contributor alone gives no data access)",
		b.auth, what, code, rbacRole(op))
}

// errorCode returns the Azure error code of a failed request ("" without one).
func errorCode(err error) string {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return ""
}

// isNoCredential reports a request that failed before it was sent because the default
// credential found no identity.
func isNoCredential(err error) bool {
	var afe *azidentity.AuthenticationFailedError
	if errors.As(err, &afe) {
		return false // an identity exists but its token request was refused
	}
	var re *azcore.ResponseError
	return !errors.As(err, &re) && strings.Contains(err.Error(), "DefaultAzureCredential")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
