package databricks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/zbrecover/zbrecover/internal/redact"

	"github.com/databricks/databricks-sdk-go/apierr"
)

// Sentinel errors for the REST side (configuration, Unity Catalog, credential vending). Errors
// returned by this package wrap one of them where it applies; test with errors.Is.
var (
	// ErrConfig: a required setting (host, credentials, profile) is missing or invalid.
	ErrConfig = errors.New("databricks configuration")
	// ErrUnauthenticated: the workspace rejected the credentials (HTTP 401, or 403 "invalid access token").
	ErrUnauthenticated = errors.New("authentication failed")
	// ErrPermissionDenied: the identity lacks a privilege (HTTP 403).
	ErrPermissionDenied = errors.New("permission denied")
	// ErrNotFound: the catalog, schema or table does not exist (HTTP 404).
	ErrNotFound = errors.New("not found")
	// ErrUnreachable: the workspace host could not be reached, did not answer as a workspace,
	// or failed on its side (5xx, 429); retrying later may help.
	ErrUnreachable = errors.New("workspace unreachable")
	// ErrRejected: the workspace refused the request as it stands (HTTP 400, 409, …, such as
	// INVALID_PARAMETER_VALUE); retrying does not help, a setting or the table must change.
	ErrRejected = errors.New("request refused")
	// ErrUnsupported: Databricks answered with something zbrecover cannot use (a view, a
	// non-Delta table, a credential type without a storage mapping).
	ErrUnsupported = errors.New("not supported")
)

// APIError is a failed Databricks REST call, with the operator-facing explanation.
type APIError struct {
	Op         string // what zbrecover was doing: "get table main.sales.orders"
	Host       string // workspace host
	StatusCode int    // HTTP status, 0 when no response arrived
	ErrorCode  string // Databricks error_code, such as TABLE_DOES_NOT_EXIST
	Message    string // server message, redacted
	Hint       string // what the operator can do
	Kind       error  // one of the sentinel errors above
	Err        error  // the underlying error
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	b.WriteString(": ")
	b.WriteString(e.Kind.Error())
	if e.StatusCode != 0 || e.ErrorCode != "" {
		b.WriteString(" (")
		if e.StatusCode != 0 {
			fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
		}
		if e.ErrorCode != "" {
			if e.StatusCode != 0 {
				b.WriteString(" ")
			}
			b.WriteString(e.ErrorCode)
		}
		b.WriteString(")")
	}
	if m := strings.TrimRight(e.Message, ". \n"); m != "" {
		b.WriteString(": ")
		b.WriteString(m)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return redact.String(b.String())
}

// Is reports the sentinel kind, so errors.Is(err, ErrNotFound) works.
func (e *APIError) Is(target error) bool { return target == e.Kind }

func (e *APIError) Unwrap() error { return e.Err }

// apiHints are the per-operation advice classifyAPI attaches: for not found, for permission
// denied, and for a request the workspace refuses (HTTP 4xx other than 401, 403, 404, 429).
type apiHints struct{ notFound, denied, rejected string }

// classifyAPI turns an SDK error into an *APIError.
func classifyAPI(op, host, authType string, err error, h apiHints) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	e := &APIError{Op: op, Host: host, Err: redact.Error(err)}
	var ae *apierr.APIError
	if errors.As(err, &ae) {
		e.StatusCode, e.ErrorCode, e.Message = ae.StatusCode, ae.ErrorCode, redact.String(ae.Message)
		lowMsg := strings.ToLower(ae.Message)
		switch {
		case ae.StatusCode == 401 || ae.ErrorCode == "UNAUTHENTICATED" ||
			(ae.StatusCode == 403 && (strings.Contains(lowMsg, "invalid access token") || strings.Contains(lowMsg, "invalid token"))):
			e.Kind = ErrUnauthenticated
			e.Hint = fmt.Sprintf("%s rejected the credentials (auth type %s); check DATABRICKS_TOKEN or the profile's credentials, which may be expired or belong to another workspace", host, orUnknown(authType))
		case ae.ErrorCode == "ENDPOINT_NOT_FOUND" || ae.ErrorCode == "FEATURE_DISABLED":
			e.Kind = ErrUnreachable
			e.Hint = fmt.Sprintf("%s does not offer this Unity Catalog API; check that DATABRICKS_HOST (or the profile's host) is a workspace URL with Unity Catalog enabled", host)
		case ae.StatusCode == 403 || ae.ErrorCode == "PERMISSION_DENIED":
			e.Kind = ErrPermissionDenied
			e.Hint = h.denied
		case ae.StatusCode == 404 || strings.HasSuffix(ae.ErrorCode, "_DOES_NOT_EXIST") || ae.ErrorCode == "NOT_FOUND":
			e.Kind = ErrNotFound
			e.Hint = h.notFound
			if ae.ErrorCode == "" && ae.Message == "" || strings.Contains(lowMsg, "<html") {
				// A 404 without a Databricks error body: the host serves something else.
				e.Kind = ErrUnreachable
				e.Hint = fmt.Sprintf("%s does not look like a Databricks workspace; check DATABRICKS_HOST or the profile's host", host)
			}
		case ae.StatusCode >= 400 && ae.StatusCode < 500 && ae.StatusCode != 408 && ae.StatusCode != 429:
			e.Kind = ErrRejected
			e.Hint = h.rejected
			if e.Hint == "" {
				e.Hint = "the request is refused as it stands; retrying will not help"
			}
		default:
			e.Kind = ErrUnreachable
			e.Hint = fmt.Sprintf("the workspace %s answered with an error; retry later, or run with -v for the request log", host)
		}
		return e
	}
	var unreachable *UnreachableError
	if errors.As(err, &unreachable) {
		e.Kind = ErrUnreachable
		e.Message = redact.String(unreachable.Error())
		e.Hint = unreachableHint
		return e
	}
	var ue *url.Error
	var ne net.Error
	var dnsErr *net.DNSError
	if errors.As(err, &ue) || errors.As(err, &ne) || errors.As(err, &dnsErr) {
		e.Kind = ErrUnreachable
		e.Message = redact.String(err.Error())
		e.Hint = fmt.Sprintf("cannot reach the workspace %s; check DATABRICKS_HOST or the profile's host, and the network", host)
		return e
	}
	msg := err.Error()
	if strings.Contains(msg, "default auth") || strings.Contains(msg, "cannot configure default credentials") ||
		strings.Contains(msg, "failed during request visitor") {
		e.Kind = ErrConfig
		e.Message = redact.String(msg)
		e.Hint = credentialsHint
		if authType == u2mAuthType {
			e.Hint = fmt.Sprintf("the OAuth user login for %s is missing or expired: run `%s`, then run again", host, loginCommand(host, ""))
		}
		return e
	}
	if strings.Contains(msg, "invalid character") || strings.Contains(msg, "unexpected end of JSON") ||
		strings.Contains(msg, "cannot unmarshal") || strings.Contains(msg, "HTML response") {
		e.Kind = ErrUnreachable
		e.Message = redact.String(msg)
		e.Hint = fmt.Sprintf("%s does not answer like a Databricks workspace; check DATABRICKS_HOST or the profile's host", host)
		return e
	}
	e.Kind = ErrUnreachable
	e.Message = redact.String(msg)
	e.Hint = fmt.Sprintf("check that %s is the workspace URL (DATABRICKS_HOST or the profile's host), or run with -v for the request log", host)
	return e
}

const credentialsHint = "set DATABRICKS_TOKEN (personal access token), DATABRICKS_CLIENT_ID and " +
	"DATABRICKS_CLIENT_SECRET (OAuth service principal), ARM_CLIENT_ID, ARM_CLIENT_SECRET and ARM_TENANT_ID " +
	"(Azure service principal), or choose a ~/.databrickscfg profile that has them with --profile"

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
