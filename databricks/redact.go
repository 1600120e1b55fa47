package databricks

import (
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/zbrecover/zbrecover/storage"
)

// secrets holds every secret this process has learnt (configured tokens and client secrets,
// vended storage credentials) so that Redact can remove them from any text, whatever its shape.
var secrets struct {
	mu   sync.RWMutex
	list []string // longest first, so that a secret containing another is replaced whole
}

// minSecretLen keeps short, common strings (such as "x" in a test) from being treated as secrets
// that would blank out unrelated text.
const minSecretLen = 6

func registerSecret(vals ...string) {
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

var (
	// jsonSecret matches "key": "value" pairs of the JSON documents the SDK logs at debug level
	// (its own redaction misses the storage credential fields).
	jsonSecret = regexp.MustCompile(`(?i)("(?:secret_access_key|access_key_id|session_token|oauth_token|sas_token|aad_token|access_token|refresh_token|id_token|client_secret|token|password|token_value)"\s*:\s*)"(?:[^"\\]|\\.)*"`)
	// sqlSecret matches inline temporary credentials in SQL text (COPY INTO … WITH (CREDENTIAL (…))).
	sqlSecret = regexp.MustCompile(`(?i)('?(?:AWS_ACCESS_KEY|AWS_SECRET_KEY|AWS_SESSION_TOKEN|AZURE_SAS_TOKEN)'?\s*=\s*)'(?:[^']|'')*'`)
	// paramSecret matches secret parameters of URLs and databricks-sql-go DSNs
	// (?accessToken=…, &clientSecret=…).
	paramSecret = regexp.MustCompile(`(?i)\b((?:accessToken|access_token|clientSecret|client_secret|token|password|pwd)=)[^&\s"'#]+`)
	// oauthSecret matches Databricks OAuth client secrets (dose…), registered or not.
	oauthSecret = regexp.MustCompile(`\bdose[0-9a-f]{16,}\b`)
	// headerSecret matches Authorization-style headers in dumped requests.
	headerSecret = regexp.MustCompile(`(?i)((?:authorization|x-databricks-azure-sp-management-token|x-databricks-gcp-sa-access-token)\s*:\s*)(?:\S+\s)?\S+`)
)

// Redact removes secrets from text: every token, client secret and vended credential this
// process has seen, the secret fields of JSON documents, inline SQL credentials, authorization
// headers, secret URL and DSN parameters, Databricks OAuth secrets (dose…), and whatever storage.Redact recognises (SAS signatures, bearer tokens, personal
// access tokens, passwords in URLs). Use it on every log line and error message that may carry
// Databricks or storage material.
func Redact(s string) string {
	secrets.mu.RLock()
	for _, v := range secrets.list {
		s = strings.ReplaceAll(s, v, storage.Redacted)
	}
	secrets.mu.RUnlock()
	s = jsonSecret.ReplaceAllString(s, `${1}"`+storage.Redacted+`"`)
	s = sqlSecret.ReplaceAllString(s, `${1}'`+storage.Redacted+`'`)
	s = headerSecret.ReplaceAllString(s, "${1}"+storage.Redacted)
	s = paramSecret.ReplaceAllString(s, "${1}"+storage.Redacted)
	s = oauthSecret.ReplaceAllString(s, storage.Redacted)
	return storage.Redact(s)
}

// redactedError keeps an error's identity (errors.Is / As still see the cause) while its text
// goes through Redact.
type redactedError struct{ err error }

func (e redactedError) Error() string { return Redact(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

func redactErr(err error) error {
	if err == nil {
		return nil
	}
	return redactedError{err}
}
