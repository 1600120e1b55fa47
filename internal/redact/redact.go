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
// Each pattern has a cheap literal test (need) that every match must pass, so that the
// regular expression runs only on text that may hold a match: journal records of thousands
// of file names are redacted in microseconds, not milliseconds.
var patterns = []struct {
	need func(lower string) bool
	re   *regexp.Regexp
	repl string
}{
	// "key": "value" pairs of JSON documents (SDK debug logs, error bodies).
	{anySub(`_key"`, `_token"`, `_id"`, `secret"`, `token"`, `password"`, `token_value"`), regexp.MustCompile(`(?i)("(?:secret_access_key|access_key_id|session_token|oauth_token|sas_token|aad_token|access_token|refresh_token|id_token|client_secret|token|password|token_value)"\s*:\s*)"(?:[^"\\]|\\.)*"`), `${1}"` + Redacted + `"`},
	// Inline temporary credentials in SQL text (COPY INTO … WITH (CREDENTIAL (…))).
	{anySub("aws_", "azure_sas"), regexp.MustCompile(`(?i)('?(?:AWS_ACCESS_KEY|AWS_SECRET_KEY|AWS_SESSION_TOKEN|AZURE_SAS_TOKEN)'?\s*=\s*)'(?:[^']|'')*'`), `${1}'` + Redacted + `'`},
	// Authorization-style headers in dumped requests and echoed error bodies.
	{anySub("authorization", "x-databricks-", "x-amz-security-token", "x-goog-iam"), regexp.MustCompile(`(?i)((?:authorization|proxy-authorization|x-databricks-azure-sp-management-token|x-databricks-gcp-sa-access-token|x-amz-security-token|x-goog-iam-authorization-token|x-ms-copy-source-authorization)\s*:\s*)(?:\S+\s)?\S+`), "${1}" + Redacted},
	// Secret parameters of URLs and databricks-sql-go DSNs (?accessToken=…, &clientSecret=…).
	{anySub("token=", "secret=", "password=", "pwd="), regexp.MustCompile(`(?i)\b((?:accessToken|access_token|clientSecret|client_secret|token|password|pwd)=)[^&\s"'#]+`), "${1}" + Redacted},
	// Databricks OAuth client secrets (dose…), registered or not.
	{anySub("dose"), regexp.MustCompile(`\bdose[0-9a-f]{16,}\b`), Redacted},
	// Other secret key=value pairs (SAS signatures and the like).
	{anyOf(SecretNames, "="), regexp.MustCompile(`(?i)\b(` + strings.Join(SecretNames, "|") + `)=([^&\s;"']+)`), "${1}=" + Redacted},
	// Bearer and Basic credentials.
	{anySub("bearer"), regexp.MustCompile(`(?i)\b(bearer\s+)([A-Za-z0-9\-._~+/]+=*)`), "${1}" + Redacted},
	{anySub("basic"), regexp.MustCompile(`(?i)\b(basic\s+)([A-Za-z0-9+/]{8,}=*)`), "${1}" + Redacted},
	// Databricks personal access tokens.
	{anySub("dapi"), regexp.MustCompile(`\b(dapi[0-9a-f]{16,})`), Redacted},
	// The password of user:password@ in URLs.
	{anySub("@"), regexp.MustCompile(`(?i)(://)([^/@\s:]*):([^/@\s]+)@`), "${1}${2}:" + Redacted + "@"},
}

// Holds reports whether s contains a secret registered with Register. Text stored verbatim
// (names the journal must give back exactly) is checked with it instead of redacted: a name
// that only looks like a secret (a folder "token=1") is kept, a registered secret is refused.
func Holds(s string) bool {
	secrets.mu.RLock()
	defer secrets.mu.RUnlock()
	for _, v := range secrets.list {
		if strings.Contains(s, v) {
			return true
		}
	}
	return false
}

// String returns s with every secret removed.
func String(s string) string {
	secrets.mu.RLock()
	for _, v := range secrets.list {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	secrets.mu.RUnlock()
	lower := strings.ToLower(s)
	for _, p := range patterns {
		if p.need(lower) {
			if out := p.re.ReplaceAllString(s, p.repl); out != s {
				s, lower = out, strings.ToLower(out)
			}
		}
	}
	return s
}

// anySub returns a test that the lower-cased text holds one of subs (lower case).
func anySub(subs ...string) func(string) bool {
	return func(lower string) bool {
		for _, sub := range subs {
			if strings.Contains(lower, sub) {
				return true
			}
		}
		return false
	}
}

// anyOf is anySub over each name followed by suffix.
func anyOf(names []string, suffix string) func(string) bool {
	subs := make([]string, len(names))
	for i, n := range names {
		subs[i] = strings.ToLower(n) + suffix
	}
	return anySub(subs...)
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
