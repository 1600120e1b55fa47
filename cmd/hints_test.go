package cmd

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage/azure"
	"github.com/zbrecover/zbrecover/storage/azure/azuretest"
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

// Azure refusals say which credential to check or what to grant; a missing credential says how
// to give one.
func TestHintAzure(t *testing.T) {
	clear := func(t *testing.T) {
		for _, env := range []string{azure.EnvConnectionString, azure.EnvAccountKey, azure.EnvAccount, azure.EnvSASToken,
			"AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE",
			"IDENTITY_ENDPOINT", "MSI_ENDPOINT"} {
			t.Setenv(env, "")
		}
	}
	url := "abfss://c@" + azuretest.Account + ".dfs.core.windows.net/tables/orders"
	t.Run("bad key", func(t *testing.T) {
		clear(t)
		srv := azuretest.NewRefuser(t, "bad-key")
		t.Setenv(azure.EnvAccountKey, azuretest.AccountKey)
		code, out, errOut := run(t, "ls", "--azure-endpoint", srv.Endpoint, url)
		checkHint(t, code, out, errOut, ExitFailure, []string{"the account key was refused", "AuthenticationFailed", azure.EnvAccountKey}, azuretest.AccountKey)
	})
	t.Run("SAS lacks list", func(t *testing.T) {
		clear(t)
		srv := azuretest.NewRefuser(t, "permission-mismatch")
		const sig = "c2lnbmF0dXJlLW9mLWEtcmVhZC1vbmx5LXNhcw%3D%3D"
		t.Setenv(azure.EnvSASToken, "sv=2023-11-03&sr=c&sp=r&se=2099-01-01T00:00:00Z&sig="+sig)
		code, out, errOut := run(t, "ls", "--azure-endpoint", srv.Endpoint, url)
		checkHint(t, code, out, errOut, ExitFailure, []string{"does not allow list", "sp=r,", `needs "l"`}, sig, "c2lnbmF0dXJlLW9m")
	})
	t.Run("missing container", func(t *testing.T) {
		clear(t)
		srv := azuretest.NewRefuser(t, "container-not-found")
		t.Setenv(azure.EnvAccountKey, azuretest.AccountKey)
		code, out, errOut := run(t, "ls", "--azure-endpoint", srv.Endpoint, "abfss://no-such-container@"+azuretest.Account+".dfs.core.windows.net/t")
		checkHint(t, code, out, errOut, ExitFailure, []string{`container "no-such-container" does not exist`, "check the container and account in the URL"}, azuretest.AccountKey)
	})
	t.Run("no credential", func(t *testing.T) {
		clear(t)
		t.Setenv("PATH", "")
		t.Setenv("HOME", t.TempDir())
		// The default credential fails before any request is sent: the endpoint needs no server.
		code, out, errOut := run(t, "ls", "--azure-endpoint", "https://127.0.0.1:1/"+azuretest.Account+"/", url)
		checkHint(t, code, out, errOut, ExitFailure, []string{"no Azure credentials found", "az login", azure.EnvAccountKey, azure.EnvSASToken})
	})
}

// A profile that logs in as a user (OAuth U2M) without a cached token says how to log in.
func TestHintDatabricksLogin(t *testing.T) {
	srv := databricksEnv(t)
	t.Setenv("DATABRICKS_TOKEN", "")
	t.Setenv("DATABRICKS_HOST", "")
	t.Setenv("PATH", "") // no databricks CLI to ask for a token
	cfgFile := filepath.Join(t.TempDir(), "databrickscfg")
	if err := os.WriteFile(cfgFile, []byte("[u2m]\nhost = "+srv.URL+"\nauth_type = databricks-cli\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABRICKS_CONFIG_FILE", cfgFile)
	code, out, errOut := run(t, "inspect", "--profile", "u2m", "main.sales.orders")
	checkHint(t, code, out, errOut, ExitFailure, []string{"`databricks auth login --host " + srv.URL + " --profile u2m`"}, ucToken)
}

// An unreachable workspace is reported within seconds with what to check, not after the
// SDK's 30 s of retries.
func TestHintDatabricksUnreachable(t *testing.T) {
	databricksEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := "http://" + l.Addr().String()
	l.Close()
	t.Setenv("DATABRICKS_HOST", host)
	start := time.Now()
	code, out, errOut := run(t, "inspect", "main.sales.orders")
	checkHint(t, code, out, errOut, ExitFailure, []string{"cannot reach the workspace " + host, "was refused", "DATABRICKS_HOST", "the profile's host"}, ucToken)
	if d := time.Since(start); d > 10*time.Second { // a guard against the old 30 s, not a benchmark
		t.Errorf("took %s", d)
	}
}
