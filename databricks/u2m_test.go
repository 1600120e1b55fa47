package databricks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeConfig writes a ~/.databrickscfg with content and returns its path.
func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "databrickscfg")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A user login (OAuth U2M) that has no cached token says to log in with the Databricks CLI,
// naming the profile when one is used, else the host.
func TestHintU2MLogin(t *testing.T) {
	for _, tc := range []struct {
		name      string
		authType  string
		profile   bool
		wantLogin string
	}{
		{"databricks-cli profile", "databricks-cli", true, "databricks auth login --host %s --profile u2m"},
		{"external-browser profile", "external-browser", true, "databricks auth login --host %s --profile u2m"},
		{"databricks-cli env", "databricks-cli", false, "databricks auth login --host %s"},
		{"no token", "", false, "databricks auth login --host %s"},
		{"no token profile", "", true, "databricks auth login --host %s --profile u2m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t)
			srv := newFake(t)
			opts := Options{RetryTimeout: time.Second}
			if tc.profile {
				content := "[u2m]\nhost = " + srv.URL + "\n"
				if tc.authType != "" {
					content += "auth_type = " + tc.authType + "\n"
				}
				opts.Profile, opts.ConfigFile = "u2m", writeConfig(t, content)
			} else {
				t.Setenv("DATABRICKS_HOST", srv.URL)
				t.Setenv("DATABRICKS_AUTH_TYPE", tc.authType)
				t.Setenv("DATABRICKS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
			}
			_, err := NewClient(context.Background(), opts)
			if err == nil {
				t.Fatal("NewClient succeeded without a login")
			}
			if !errors.Is(err, ErrConfig) && !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("err = %v, want ErrConfig or ErrUnauthenticated", err)
			}
			want := strings.ReplaceAll(tc.wantLogin, "%s", srv.URL)
			if !strings.Contains(err.Error(), "`"+want+"`") {
				t.Errorf("error does not suggest `%s`:\n%v", want, err)
			}
			if tc.profile && strings.Contains(tc.wantLogin, "--profile") && !strings.Contains(err.Error(), "--profile u2m") {
				t.Errorf("error does not name the profile: %v", err)
			}
		})
	}
}
