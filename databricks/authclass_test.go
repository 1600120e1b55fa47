package databricks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks/uctest"
)

// A client secret the workspace rejects is reported as rejected credentials, naming the
// client, not as missing ones; a missing secret is still a configuration error that says
// what to set.
func TestRejectedClientSecretIsNotMissing(t *testing.T) {
	cleanEnv(t)
	srv := uctest.New("")
	defer srv.Close()
	srv.EnableM2M("my-sp", "m2m-client-secret-value-123")
	t.Setenv("DATABRICKS_HOST", srv.URL)
	t.Setenv("DATABRICKS_CLIENT_ID", "my-sp")
	t.Setenv("DATABRICKS_CLIENT_SECRET", "not-the-secret-000")
	_, err := NewClient(context.Background(), Options{RetryTimeout: time.Second})
	if !errors.Is(err, ErrUnauthenticated) || errors.Is(err, ErrConfig) {
		t.Fatalf("err = %v, want ErrUnauthenticated", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "rejected") || !strings.Contains(msg, "my-sp") || strings.Contains(msg, "no credentials") ||
		strings.Contains(msg, "not-the-secret-000") {
		t.Errorf("error %q", msg)
	}
}
