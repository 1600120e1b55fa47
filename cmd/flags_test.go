package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/internal/iostreams"
)

// TestFlagErrors: bad flags of reload, verify, cleanup and history are usage errors (exit 2)
// that name the flag, before anything is opened (no workspace, no storage, no journal is
// reached: the environment has none).
func TestFlagErrors(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	t.Setenv("DATABRICKS_CONFIG_FILE", "/nonexistent")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"reload"}, "name the target"},
		{[]string{"reload", "s3://b/root"}, "table's name"},
		{[]string{"reload", "main.sales.orders", "--from", "yaml"}, "--from"},
		{[]string{"reload", "main.sales.orders", "--batch-files", "0"}, "--batch-files"},
		{[]string{"reload", "main.sales.orders", "--batch-files", "1001"}, "--batch-files"},
		{[]string{"reload", "main.sales.orders", "--rename", "nothing"}, "--rename"},
		{[]string{"reload", "main.sales.orders", "--rename", "=x"}, "--rename"},
		{[]string{"reload", "main.sales.orders", "--prefix", "/"}, "--prefix"},
		{[]string{"reload", "main.sales.orders", "--prefix", "_zerobus/../x/"}, "--prefix"},
		{[]string{"reload", "main.sales.orders", "--prefix", "_delta_log/"}, "--prefix"},
		{[]string{"reload", "main.sales.orders", "--prefix", ""}, "--prefix"},
		{[]string{"reload", "main.sales.orders", "--dedupe-order", "seq"}, "--dedupe-key"},
		{[]string{"reload", "main.sales.orders", "--dedupe-key", "a,,b"}, "--dedupe-key"},
		{[]string{"reload", "main.sales.orders", "--key", "`open"}, "--key"},
		{[]string{"reload", "main.sales.orders", "--keys-to", "/Volumes/c/s/v/k"}, "--keys-to"},
		{[]string{"reload", "main.sales.orders", "--schema-file", "x.json", "--from", "uc"}, "--schema-file"},
		{[]string{"reload", "a", "b"}, "accepts at most 1"},
		{[]string{"verify"}, "name the target"},
		{[]string{"verify", "main.sales.orders", "--key", "a,a"}, "--key"},
		{[]string{"verify", "a", "b"}, "accepts at most 1"},
		{[]string{"cleanup", "main.sales.orders", "--yes", "--dry-run"}, "--yes or --dry-run"},
		{[]string{"cleanup", "main.sales.orders", "--min-age", "-1h"}, "--min-age"},
		{[]string{"cleanup", "main.sales.orders", "--prefix", "/"}, "--prefix"},
		{[]string{"cleanup", "main.sales.orders", "--prefix", "data/"}, "--prefix"},
		{[]string{"cleanup", "a", "b"}, "accepts at most 1"},
		{[]string{"history", "a", "b"}, "accepts at most 1"},
		{[]string{"history", "--bogus"}, "--bogus"},
		{[]string{"inspect", "s3://b/r", "--key", "id"}, "--key needs a table name"},
		{[]string{"inspect", "main.sales.orders", "--stage-to", "/Volumes/c/s/v/d"}, "--stage-to and --rename go with --key"},
	} {
		io, _, out, errOut := iostreams.Test()
		code := Run(context.Background(), NewFactory(io), c.args)
		if code != ExitUsage || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, want %d naming %q\nstdout: %s\nstderr: %s", c.args, code, ExitUsage, c.want, out, errOut)
		}
	}
}
