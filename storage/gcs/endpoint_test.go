package gcs_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/gcs"
	"github.com/zbrecover/zbrecover/storage/gcs/gcstest"
)

// TestEmulatorHostFromEnvironment: STORAGE_EMULATOR_HOST, as the Google Cloud client libraries
// read it (host:port or a URL), points zbrecover at an emulator as --gcs-endpoint does: no
// credentials are looked for or sent, vended ones included; the flag wins over the variable.
func TestEmulatorHostFromEnvironment(t *testing.T) {
	srv := gcstest.NewServer(t)
	if err := srv.Put("root/k", []byte("through the emulator host")); err != nil {
		t.Fatal(err)
	}
	// No application default credentials to fall back on.
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", filepath.Join(t.TempDir(), "none.json"))
	t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
	noCredentials := func(context.Context) (storage.Credentials, error) {
		return storage.Credentials{}, errors.New("credentials asked for")
	}
	bare := strings.TrimPrefix(srv.URL, "http://")
	for _, tc := range []struct {
		name, env string
		cfg       storage.Config
	}{
		{"host:port", bare, storage.Config{}},
		{"URL", srv.URL, storage.Config{}},
		{"with a transport", bare, storage.Config{Transport: http.DefaultTransport}},
		{"vended credentials are not sent to an emulator", bare, storage.Config{Credentials: noCredentials}},
		{"--gcs-endpoint wins", "127.0.0.1:1", storage.Config{GCSEndpoint: srv.URL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(gcs.EnvEmulatorHost, tc.env)
			loc, err := storage.Parse(srv.URLFor("root/"))
			if err != nil {
				t.Fatal(err)
			}
			tc.cfg.MaxAttempts = 1
			b, err := gcs.New(context.Background(), loc, tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := b.ReadRange(context.Background(), "k", 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if data, err := io.ReadAll(rc); err != nil || string(data) != "through the emulator host" {
				t.Errorf("read %q, %v", data, err)
			}
		})
	}
	t.Setenv(gcs.EnvEmulatorHost, "")
	if got := gcs.EmulatorHost(); got != "" {
		t.Errorf("EmulatorHost() with the variable empty = %q", got)
	}
}
