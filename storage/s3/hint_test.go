package s3_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/s3"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// openRefuser opens a backend on srv with the refused credentials in the environment, or
// vended (given as cfg.Credentials, as Unity Catalog's are).
func openRefuser(t *testing.T, srv *s3test.Refuser, vended bool) *s3.Backend {
	t.Helper()
	cfg := storage.Config{S3Endpoint: srv.URL, S3Region: "eu-west-1"}
	if vended {
		cfg.Credentials = func(context.Context) (storage.Credentials, error) {
			return storage.Credentials{AWSAccessKeyID: s3test.RefusedKeyID, AWSSecretAccessKey: s3test.RefusedSecret,
				AWSSessionToken: s3test.RefusedSession}, nil
		}
	} else {
		t.Setenv("AWS_PROFILE", "")
		t.Setenv("AWS_ACCESS_KEY_ID", s3test.RefusedKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.RefusedSecret)
		t.Setenv("AWS_SESSION_TOKEN", s3test.RefusedSession)
	}
	return storagetest.OpenURL(t, s3.New, "s3://zbrecover-test/p", cfg)
}

// TestAuthErrorHints checks that each refusal of the credentials says what is wrong with them
// (the key id, the secret, the session) and what to check, is not mistaken for a missing
// permission, is not retried and carries no secret.
func TestAuthErrorHints(t *testing.T) {
	for _, tc := range []struct {
		code      string
		vended    bool
		want      []string
		notWanted []string
	}{
		{"InvalidAccessKeyId", false, []string{"access key id is not valid", "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "--s3-endpoint", "--s3-region"}, []string{"access denied", "s3:ListBucket"}},
		{"SignatureDoesNotMatch", false, []string{"secret access key does not match", "AWS_SECRET_ACCESS_KEY"}, []string{"access denied", "s3:ListBucket"}},
		{"ExpiredToken", false, []string{"session credentials have expired", "refresh them", "aws sso login"}, []string{"access denied", "s3:ListBucket"}},
		{"AccessDenied", false, []string{"access denied", "list (s3:ListBucket)"}, []string{"not valid", "expired"}},
		{"ExpiredToken", true, []string{"refused the temporary credentials Unity Catalog vended", "run again", "--storage-auth default"}, []string{"AWS_SESSION_TOKEN", "aws sso login", "access denied"}},
		{"InvalidAccessKeyId", true, []string{"refused the temporary credentials Unity Catalog vended", "--s3-region"}, []string{"AWS_ACCESS_KEY_ID", "access denied"}},
	} {
		name := tc.code
		if tc.vended {
			name += "/vended"
		}
		t.Run(name, func(t *testing.T) {
			srv := s3test.NewRefuser(t, tc.code)
			b := openRefuser(t, srv, tc.vended)
			err := b.List(context.Background(), "", func(storage.ObjectInfo) error { return nil })
			if err == nil {
				t.Fatal("List succeeded")
			}
			msg := err.Error()
			for _, w := range append(tc.want, tc.code) {
				if !strings.Contains(msg, w) {
					t.Errorf("message does not say %q: %s", w, msg)
				}
			}
			for _, w := range tc.notWanted {
				if strings.Contains(msg, w) {
					t.Errorf("message says %q: %s", w, msg)
				}
			}
			for _, secret := range []string{s3test.RefusedSecret, s3test.RefusedSession} {
				if strings.Contains(msg, secret) {
					t.Errorf("secret in message: %s", msg)
				}
			}
			if storage.IsRetryable(err) || errors.Is(err, storage.ErrNotExist) {
				t.Errorf("refused credentials: retryable %v, not-exist %v; want a permanent error", storage.IsRetryable(err), errors.Is(err, storage.ErrNotExist))
			}
			if got := srv.Requests.Load(); got != 1 {
				t.Errorf("%d requests for one refused list, want 1 (the SDK must not retry it)", got)
			}
		})
	}
}

// A HEAD answer carries no error code: a refused Stat names both possible causes and the
// permission a read needs.
func TestAuthErrorHintHead(t *testing.T) {
	srv := s3test.NewRefuser(t, "InvalidAccessKeyId")
	_, err := openRefuser(t, srv, false).Stat(context.Background(), "k")
	if err == nil {
		t.Fatal("Stat succeeded")
	}
	msg := err.Error()
	for _, w := range []string{"HTTP 403 without an error code", "s3:GetObject", "access key itself is not valid", srv.URL} {
		if !strings.Contains(msg, w) {
			t.Errorf("message does not say %q: %s", w, msg)
		}
	}
}
