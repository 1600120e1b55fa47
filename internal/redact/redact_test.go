package redact

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	Register("super-secret-value-1")
	for in, gone := range map[string]string{
		"token super-secret-value-1 here":           "super-secret-value-1",
		`{"secret_access_key": "abc\"def", "x": 1}`: `abc\"def`,
		`{"sas_token":"sv=1&sig=zzz"}`:              "sig=zzz",
		"COPY INTO t FROM 's3://b/p' WITH (CREDENTIAL (AWS_SECRET_KEY = 'k3y/val', AWS_SESSION_TOKEN='tok'))": "k3y/val",
		"Authorization: Bearer dapiabcdef0123456789abcdef":                                                    "dapiabcdef0123456789",
		"https://acct.blob.core.windows.net/c?sv=1&sig=SIGSIG":                                                "SIGSIG",
		// databricks-sql-go DSN parameters, and an OAuth secret never registered with this process.
		"https://h:443/sql/1.0/warehouses/x?authType=OauthM2M&clientID=abc&clientSecret=s3cr3t-client-value": "s3cr3t-client-value",
		"http://127.0.0.1:9/sql/1.0/warehouses/x?accessToken=tok-in-the-query&maxRows=5":                     "tok-in-the-query",
		"client secret dose0123456789abcdef0123456789abcdef was rejected":                                    "dose0123456789abcdef",
	} {
		if out := String(in); strings.Contains(out, gone) || !strings.Contains(out, Redacted) {
			t.Errorf("String(%q) = %q", in, out)
		}
	}
	if out := String("COPY INTO t FROM 's3://b/p' WITH (CREDENTIAL (AWS_SECRET_KEY = 'k3y/val', AWS_SESSION_TOKEN='tok'))"); strings.Contains(out, "'tok'") {
		t.Errorf("session token kept: %q", out)
	}
	if got := String("SELECT 1"); got != "SELECT 1" {
		t.Errorf("plain text changed: %q", got)
	}
}

func TestHeaderAndBasicSecrets(t *testing.T) {
	for in, gone := range map[string]string{
		"X-Amz-Security-Token: FwoGZXIvYXdzEJr//////////wEaDKc":   "FwoGZXIvYXdzEJr",
		"authorization: Basic dXNlcjpwYXNzd29yZDEyMw==":           "dXNlcjpwYXNzd29yZDEyMw",
		"request failed: Authorization: Basic dXNlcjpwYXNzd29yZA": "dXNlcjpwYXNzd29yZA",
	} {
		if out := String(in); strings.Contains(out, gone) {
			t.Errorf("String(%q) = %q", in, out)
		}
	}
}

func TestErrorKeepsIdentity(t *testing.T) {
	Register("error-secret-123456")
	base := errors.New("base")
	err := Error(fmt.Errorf("call with error-secret-123456 failed: %w", base))
	if strings.Contains(err.Error(), "error-secret-123456") || !errors.Is(err, base) {
		t.Errorf("Error() = %q, Is(base) = %v", err, errors.Is(err, base))
	}
	plain := errors.New("nothing secret")
	if Error(plain) != plain {
		t.Errorf("an error without secrets was wrapped")
	}
	// A secret registered after the error was made is still removed when it is printed.
	late := Error(fmt.Errorf("token sig=abc late-secret-7890"))
	Register("late-secret-7890")
	if strings.Contains(late.Error(), "late-secret-7890") {
		t.Errorf("late secret printed: %q", late)
	}
}

// Header-shaped secrets echoed in error bodies and dumped requests are removed.
func TestHeaderShapedSecrets(t *testing.T) {
	cases := map[string]string{
		"X-Amz-Security-Token: IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQ": "IQoJb3JpZ2lu",
		"x-amz-security-token:FwoGZXIvYXdzEBYaDH7sessiontoken":                         "FwoGZXIvYXdz",
		"<Header>x-amz-security-token</Header> X-Amz-Security-Token=FQoGZXIvYXdzEX":    "FQoGZXIvYXdzEX",
		"Authorization: Basic dXNlcjpwYXNzd29yZA==":                                    "dXNlcjpwYXNzd29yZA",
		"proxy-authorization: basic YWRtaW46aHVudGVyMg==":                              "YWRtaW46aHVudGVyMg",
		`{"error":"denied","request":"Authorization: Basic Zm9vOmJhcmJhemJhcg=="}`:     "Zm9vOmJhcmJhemJhcg",
		"Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.payload.sig":                       "eyJhbGciOiJSUzI1NiJ9",
		"X-Goog-Iam-Authorization-Token: ya29.a0AfH6SMBx":                              "ya29.a0AfH6SMBx",
		"x-ms-copy-source-authorization: Bearer abcdefgh12345":                         "abcdefgh12345",
	}
	for in, secret := range cases {
		if got := String(in); strings.Contains(got, secret) {
			t.Errorf("String(%q) = %q: the secret is still there", in, got)
		}
	}
}
