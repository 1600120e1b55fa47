package uctest

import (
	"os"
	"strings"
	"testing"
)

// Isolate hides the machine's Databricks and cloud settings (DATABRICKS_*, AWS_*, AZURE_*,
// GOOGLE_*, ARM_*) and its home directory from the test, so that only what the test sets is
// seen; t.Setenv restores them when the test ends.
func Isolate(t testing.TB) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		for _, p := range []string{"DATABRICKS_", "AWS_", "AZURE_", "GOOGLE_", "ARM_"} {
			if strings.HasPrefix(k, p) {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
		}
	}
	t.Setenv("HOME", t.TempDir())
}
