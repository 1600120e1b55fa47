package gcs_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/gcs"
	"github.com/zbrecover/zbrecover/storage/gcs/gcstest"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

func wantAll(t *testing.T, msg string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message does not say %q: %s", w, msg)
		}
	}
}

// Without Application Default Credentials the client cannot be made: the error says how to
// log in.
func TestHintNoCredentials(t *testing.T) {
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("CLOUDSDK_CONFIG", t.TempDir())
	loc, err := storage.Parse("gs://bucket/root")
	if err != nil {
		t.Fatal(err)
	}
	_, err = gcs.New(context.Background(), loc, storage.Config{})
	if err == nil {
		t.Skip("this machine has Google credentials")
	}
	wantAll(t, err.Error(), "no Google credentials found", "gcloud auth application-default login", "GOOGLE_APPLICATION_CREDENTIALS")
}

// A missing bucket (fake-gcs-server answers 404 as GCS does) is named, with what to check.
func TestHintMissingBucket(t *testing.T) {
	srv := gcstest.NewServer(t)
	b := storagetest.OpenURL(t, gcs.New, "gs://no-such-bucket/p", srv.Config())
	err := b.List(context.Background(), "", func(storage.ObjectInfo) error { return nil })
	if err == nil || errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("List in a missing bucket: %v", err)
	}
	wantAll(t, err.Error(), `bucket "no-such-bucket" does not exist`, "check the bucket name in the gs:// URL")
}

// 401 and 403 answers say what to do: log in, or grant the permission the request needed.
func TestHintRefused(t *testing.T) {
	for _, tc := range []struct {
		name, op string
		want     []string
	}{
		{"invalid-credentials", "list", []string{"HTTP 401", "gcloud auth application-default login", "GOOGLE_APPLICATION_CREDENTIALS"}},
		{"anonymous", "list", []string{"HTTP 401", "gcloud auth application-default login"}},
		{"forbidden", "list", []string{"HTTP 403", "lacks storage.objects.list", `bucket "zbrecover-test"`, "roles/storage.objectViewer", "reader@zbrecover-test.iam.gserviceaccount.com"}},
		{"forbidden", "stat", []string{"HTTP 403", "lacks storage.objects.get", "roles/storage.objectViewer"}},
		{"forbidden", "read", []string{"HTTP 403", "lacks storage.objects.get"}},
		{"forbidden", "delete", []string{"HTTP 403", "lacks storage.objects.delete", "roles/storage.objectUser"}},
	} {
		t.Run(tc.name+"/"+tc.op, func(t *testing.T) {
			srv := gcstest.NewRefuser(t, tc.name)
			b := storagetest.OpenURL(t, gcs.New, "gs://zbrecover-test/p", storage.Config{GCSEndpoint: srv.URL, MaxAttempts: 3})
			ctx := context.Background()
			var err error
			switch tc.op {
			case "list":
				err = b.List(ctx, "", func(storage.ObjectInfo) error { return nil })
			case "stat":
				_, err = b.Stat(ctx, "k")
			case "read":
				_, err = b.ReadRange(ctx, "k", 0, 10)
			case "delete":
				err = b.Delete(ctx, "k", storage.Precondition{})
			}
			if err == nil {
				t.Fatalf("%s succeeded", tc.op)
			}
			wantAll(t, err.Error(), tc.want...)
			if storage.IsRetryable(err) || errors.Is(err, storage.ErrNotExist) {
				t.Errorf("refusal: retryable %v, not-exist %v; want a permanent error", storage.IsRetryable(err), errors.Is(err, storage.ErrNotExist))
			}
			if n := srv.Requests.Load(); n != 1 {
				t.Errorf("%d requests, want 1 (a refusal is not retried)", n)
			}
		})
	}
}

// A vended token that GCS refuses is not blamed on the environment's credentials.
func TestHintRefusedVendedToken(t *testing.T) {
	const token = "ya29.vended-oauth-token-0000000000"
	srv := gcstest.NewRefuser(t, "invalid-credentials")
	// The vended token goes through a transport to the refusing server, as to GCS.
	cfg := storage.Config{
		Transport: storagetest.TransportFunc(func(r *http.Request) (*http.Response, error) {
			r.URL.Scheme, r.URL.Host = "http", strings.TrimPrefix(srv.URL, "http://")
			return http.DefaultTransport.RoundTrip(r)
		}),
		Credentials: func(context.Context) (storage.Credentials, error) {
			return storage.Credentials{GCSOAuthToken: token}, nil
		},
	}
	b := storagetest.OpenURL(t, gcs.New, "gs://zbrecover-test/p", cfg)
	err := b.List(context.Background(), "", func(storage.ObjectInfo) error { return nil })
	if err == nil {
		t.Fatal("List succeeded")
	}
	wantAll(t, err.Error(), "refused the OAuth token Unity Catalog vended", "--storage-auth default")
	if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "gcloud auth") {
		t.Errorf("message: %s", err)
	}
}
