// Package redact is zbrecover's one redactor. Every string that is printed, logged or written
// to the journal passes through String (or Error, for errors), which removes:
//
//   - every secret the process has learnt and registered with Register (configured tokens and
//     client secrets, vended storage credentials, keys from the environment);
//   - secrets recognised by their shape: secret query and key=value parameters (SAS
//     signatures, tokens, passwords), bearer tokens, Databricks personal access tokens
//     (dapi…) and OAuth client secrets (dose…), user:password@ in URLs, Authorization-style
//     headers, the secret fields of JSON documents and inline SQL credentials.
//
// Packages register secrets as they learn them; nobody keeps a redactor of their own.
package redact

import (
	"errors"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Redacted is what replaces a secret.
const Redacted = "REDACTED"

// minSecretLen keeps short, common strings (such as "x" in a test) from being treated as
// secrets that would blank out unrelated text.
const minSecretLen = 6

var secrets struct {
	mu   sync.RWMutex
	list []string // longest first, so that a secret containing another is replaced whole
}

// Register adds secrets that String removes wherever they appear, whatever the text around
// them. Values shorter than 6 bytes (after trimming spaces) are ignored.
func Register(vals ...string) {
	secrets.mu.Lock()
	defer secrets.mu.Unlock()
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if len(v) < minSecretLen {
			continue
		}
		dup := false
		for _, s := range secrets.list {
			if s == v {
				dup = true
				break
			}
		}
		if !dup {
			secrets.list = append(secrets.list, v)
		}
	}
	sort.Slice(secrets.list, func(i, j int) bool { return len(secrets.list[i]) > len(secrets.list[j]) })
}

// SecretNames are the query parameters and key=value names whose values are secrets, in URLs
// and in free text alike.
var SecretNames = []string{
	"sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
	"x-goog-signature", "x-goog-credential", "access_token", "token", "accountkey",
	"sharedaccesssignature", "password", "client_secret", "secret",
}

// patterns are applied in order after the registered secrets.
var patterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	// "key": "value" pairs of JSON documents (SDK debug logs, error bodies).
	{regexp.MustCompile(`(?i)("(?:secret_access_key|access_key_id|session_token|oauth_token|sas_token|aad_token|access_token|refresh_token|id_token|client_secret|token|password|token_value)"\s*:\s*)"(?:[^"\\]|\\.)*"`), `${1}"` + Redacted + `"`},
	// Inline temporary credentials in SQL text (COPY INTO … WITH (CREDENTIAL (…))).
	{regexp.MustCompile(`(?i)('?(?:AWS_ACCESS_KEY|AWS_SECRET_KEY|AWS_SESSION_TOKEN|AZURE_SAS_TOKEN)'?\s*=\s*)'(?:[^']|'')*'`), `${1}'` + Redacted + `'`},
	// Authorization-style headers in dumped requests and echoed error bodies.
	{regexp.MustCompile(`(?i)((?:authorization|proxy-authorization|x-databricks-azure-sp-management-token|x-databricks-gcp-sa-access-token|x-amz-security-token|x-goog-iam-authorization-token|x-ms-copy-source-authorization)\s*:\s*)(?:\S+\s)?\S+`), "${1}" + Redacted},
	// Secret parameters of URLs and databricks-sql-go DSNs (?accessToken=…, &clientSecret=…).
	{regexp.MustCompile(`(?i)\b((?:accessToken|access_token|clientSecret|client_secret|token|password|pwd)=)[^&\s"'#]+`), "${1}" + Redacted},
	// Databricks OAuth client secrets (dose…), registered or not.
	{regexp.MustCompile(`\bdose[0-9a-f]{16,}\b`), Redacted},
	// Other secret key=value pairs (SAS signatures and the like).
	{regexp.MustCompile(`(?i)\b(` + strings.Join(SecretNames, "|") + `)=([^&\s;"']+)`), "${1}=" + Redacted},
	// Bearer and Basic credentials.
	{regexp.MustCompile(`(?i)\b(bearer\s+)([A-Za-z0-9\-._~+/]+=*)`), "${1}" + Redacted},
	{regexp.MustCompile(`(?i)\b(basic\s+)([A-Za-z0-9+/]{8,}=*)`), "${1}" + Redacted},
	// Databricks personal access tokens.
	{regexp.MustCompile(`\b(dapi[0-9a-f]{16,})`), Redacted},
	// The password of user:password@ in URLs.
	{regexp.MustCompile(`(?i)(://)([^/@\s:]*):([^/@\s]+)@`), "${1}${2}:" + Redacted + "@"},
}

// String returns s with every secret removed.
func String(s string) string {
	secrets.mu.RLock()
	for _, v := range secrets.list {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	secrets.mu.RUnlock()
	for _, p := range patterns {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	return s
}

// Error returns err with its text redacted; errors.Is and errors.As still see the cause.
// It returns nil for nil, and err itself when its text holds no secret.
func Error(err error) error {
	if err == nil {
		return nil
	}
	var already *redactedError
	if errors.As(err, &already) && already == err {
		return err
	}
	msg := err.Error()
	if red := String(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

// redactedError keeps an error's identity while its text is redacted; Error redacts again at
// the time of printing, so a secret registered later is removed too.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return String(e.msg) }
func (e *redactedError) Unwrap() error { return e.err }
