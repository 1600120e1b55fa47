package cmd

import (
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage/gcs/gcstest"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// checkHint asserts what an operator sees when a command fails: the exit code, every phrase
// of want in stderr, and none of the secrets anywhere.
func checkHint(t *testing.T, code int, out, errOut string, wantCode int, want []string, secrets ...string) {
	t.Helper()
	t.Logf("exit %d, stderr: %s", code, errOut)
	if code != wantCode {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, wantCode, errOut)
	}
	for _, w := range want {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr does not say %q:\n%s", w, errOut)
		}
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(out+errOut, s) {
			t.Errorf("secret %q printed:\n%s%s", s, out, errOut)
		}
	}
}

// An S3 refusal of the credentials tells the operator which credential is wrong, not that a
// permission is missing.
func TestHintS3Credentials(t *testing.T) {
	for _, tc := range []struct {
		code string
		want []string
	}{
		{"InvalidAccessKeyId", []string{"the access key id is not valid", "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "--s3-endpoint"}},
		{"SignatureDoesNotMatch", []string{"the secret access key does not match", "AWS_SECRET_ACCESS_KEY"}},
		{"ExpiredToken", []string{"the session credentials have expired", "refresh them"}},
	} {
		t.Run(tc.code, func(t *testing.T) {
			srv := s3test.NewRefuser(t, tc.code)
			t.Setenv("AWS_PROFILE", "")
			t.Setenv("AWS_ACCESS_KEY_ID", s3test.RefusedKeyID)
			t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.RefusedSecret)
			t.Setenv("AWS_SESSION_TOKEN", s3test.RefusedSession)
			code, out, errOut := run(t, "ls", "--s3-endpoint", srv.URL, "--s3-region", "eu-west-1", "s3://zbrecover-test/tables/orders")
			checkHint(t, code, out, errOut, ExitFailure, tc.want, s3test.RefusedSecret, s3test.RefusedSession)
			if strings.Contains(errOut, "s3:ListBucket") {
				t.Errorf("refused credentials reported as a missing permission:\n%s", errOut)
			}
		})
	}
}

// GCS failures say what to do: log in, grant the permission the request needed, or fix the
// bucket name.
func TestHintGCS(t *testing.T) {
	t.Run("no credentials", func(t *testing.T) {
		t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
		t.Setenv("HOME", t.TempDir())
		t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
		code, out, errOut := run(t, "ls", "gs://zbrecover-test/tables/orders")
		checkHint(t, code, out, errOut, ExitFailure, []string{"no Google credentials found", "gcloud auth application-default login", "GOOGLE_APPLICATION_CREDENTIALS"})
	})
	t.Run("permission", func(t *testing.T) {
		srv := gcstest.NewRefuser(t, "forbidden")
		code, out, errOut := run(t, "ls", "--gcs-endpoint", srv.URL, "gs://zbrecover-test/tables/orders")
		checkHint(t, code, out, errOut, ExitFailure, []string{"lacks storage.objects.list", `bucket "zbrecover-test"`, "roles/storage.objectViewer"})
	})
	t.Run("not authenticated", func(t *testing.T) {
		srv := gcstest.NewRefuser(t, "invalid-credentials")
		code, out, errOut := run(t, "ls", "--gcs-endpoint", srv.URL, "gs://zbrecover-test/tables/orders")
		checkHint(t, code, out, errOut, ExitFailure, []string{"HTTP 401", "gcloud auth application-default login"})
	})
	t.Run("missing bucket", func(t *testing.T) {
		srv := gcstest.NewServer(t)
		code, out, errOut := run(t, "ls", "--gcs-endpoint", srv.URL, "gs://no-such-bucket/tables/orders")
		checkHint(t, code, out, errOut, ExitFailure, []string{`bucket "no-such-bucket" does not exist`, "check the bucket name in the gs:// URL"})
	})
}
