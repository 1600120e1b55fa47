package s3_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/s3"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// awsEnv gives the process the emulator's static credentials and no shared config, as a
// user's environment would, so that only the variables a test sets configure the endpoint.
func awsEnv(t *testing.T) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretAccessKey)
	t.Setenv("AWS_REGION", s3test.Region)
	for _, v := range []string{"AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_SESSION_TOKEN"} {
		t.Setenv(v, "")
	}
}

// readThrough opens url with cfg (no endpoint flag unless cfg has one) and reads key.
func readThrough(t *testing.T, url string, cfg storage.Config, key string) (string, error) {
	t.Helper()
	loc, err := storage.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s3.New(context.Background(), loc, cfg)
	if err != nil {
		return "", err
	}
	rc, err := b.ReadRange(context.Background(), key, 0, -1)
	if err != nil {
		return "", err
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	return string(data), err
}

// TestEndpointFromEnvironment: the AWS SDK's and CLI's endpoint variables point zbrecover at
// an S3-compatible store as --s3-endpoint does (path-style addressing, which the emulator on
// 127.0.0.1 needs: a virtual-hosted request would go to bucket.127.0.0.1), and the flag wins.
func TestEndpointFromEnvironment(t *testing.T) {
	srv := s3test.NewServer(t)
	if err := srv.Put("root/k", []byte("through the env endpoint")); err != nil {
		t.Fatal(err)
	}
	// By name, not IP address: the SDK addresses an IP endpoint path-style by itself, a named
	// host virtual-hosted unless told otherwise.
	endpoint := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	const dead = "http://127.0.0.1:1"
	cases := []struct {
		name string
		env  map[string]string
		cfg  storage.Config
	}{
		{"AWS_ENDPOINT_URL_S3", map[string]string{"AWS_ENDPOINT_URL_S3": endpoint}, storage.Config{}},
		{"AWS_ENDPOINT_URL", map[string]string{"AWS_ENDPOINT_URL": endpoint}, storage.Config{}},
		{"the S3 variable wins over the global one", map[string]string{"AWS_ENDPOINT_URL_S3": endpoint, "AWS_ENDPOINT_URL": dead}, storage.Config{}},
		{"--s3-endpoint wins over both", map[string]string{"AWS_ENDPOINT_URL_S3": dead, "AWS_ENDPOINT_URL": dead}, storage.Config{S3Endpoint: endpoint}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			awsEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			tc.cfg.MaxAttempts = 1
			got, err := readThrough(t, srv.URLFor("root/"), tc.cfg, "k")
			if err != nil || got != "through the env endpoint" {
				t.Errorf("read = %q, %v", got, err)
			}
		})
	}
}

// TestConfiguredEndpointNamesItsSource: messages say which variable sent requests where they
// went, and AWS_IGNORE_CONFIGURED_ENDPOINT_URLS turns the variables off as in the AWS CLI.
func TestConfiguredEndpointNamesItsSource(t *testing.T) {
	load := func() (string, string) {
		cfg, err := config.LoadDefaultConfig(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return s3.ConfiguredEndpoint(cfg)
	}
	awsEnv(t)
	if e, from := load(); e != "" || from != "" {
		t.Errorf("no variable: %q from %q, want none", e, from)
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://global.example:9000")
	if e, from := load(); e != "http://global.example:9000" || from != "AWS_ENDPOINT_URL" {
		t.Errorf("AWS_ENDPOINT_URL: %q from %q", e, from)
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://s3.example:9000")
	if e, from := load(); e != "http://s3.example:9000" || from != "AWS_ENDPOINT_URL_S3" {
		t.Errorf("AWS_ENDPOINT_URL_S3: %q from %q", e, from)
	}
	t.Setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
	if e, from := load(); e != "" {
		t.Errorf("ignored: %q from %q, want none", e, from)
	}

	// A refusal from an endpoint a variable set names the variable.
	awsEnv(t)
	refuser := s3test.NewRefuser(t, "InvalidAccessKeyId")
	t.Setenv("AWS_ENDPOINT_URL_S3", refuser.URL)
	_, err := readThrough(t, "s3://zbrecover-test/root/", storage.Config{S3Region: s3test.Region, MaxAttempts: 1}, "k")
	if err == nil || !strings.Contains(err.Error(), refuser.URL+" (from AWS_ENDPOINT_URL_S3)") {
		t.Errorf("err = %v, want one naming the endpoint and AWS_ENDPOINT_URL_S3", err)
	}
}
