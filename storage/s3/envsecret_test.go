package s3_test

import (
	"context"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/s3"
)

// The secret key and session token of the environment are registered with the redactor when
// a backend is opened, so that an error body or log line echoing them is cleaned.
func TestEnvironmentSecretsRegistered(t *testing.T) {
	const secret, token = "env-secret-access-key-for-redaction", "env-session-token-for-redaction"
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAENVREDACT")
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_SESSION_TOKEN", token)
	loc, _ := storage.Parse("s3://bucket/root")
	if _, err := s3.New(context.Background(), loc, storage.Config{S3Region: "us-east-1", S3Endpoint: "http://127.0.0.1:1"}); err != nil {
		t.Fatal(err)
	}
	got := redact.String("body: " + secret + " / " + token)
	if strings.Contains(got, secret) || strings.Contains(got, token) {
		t.Errorf("not redacted: %s", got)
	}
}
