package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWatchRefusesALocalJournal: watch without a shared journal (none given, a path, a
// file:// URL) is refused as a usage error naming --single-host, before anything is opened or
// written; with --single-host the journal is accepted (the run goes on to its next check).
func TestWatchRefusesALocalJournal(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("DATABRICKS_HOST", "")
	t.Setenv("DATABRICKS_TOKEN", "")
	t.Setenv("DATABRICKS_CONFIG_FILE", filepath.Join(t.TempDir(), "none.cfg"))
	local := t.TempDir()
	base := []string{"watch", "main", "--stage-to", "/Volumes/main/ops/staging/zbrecover"}
	for _, extra := range [][]string{nil, {"--journal", local}, {"--journal", "file://" + local}} {
		code, _, errOut := run(t, append(append([]string(nil), base...), extra...)...)
		if code != ExitUsage || !strings.Contains(errOut, "--single-host") || !strings.Contains(errOut, "shared journal") {
			t.Errorf("%v: exit %d, want %d naming --single-host; stderr %q", extra, code, ExitUsage, errOut)
		}
	}
	for _, dir := range []string{state, local} {
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("a refused watch wrote %d entries in %s", len(ents), dir)
		}
	}
	code, _, errOut := run(t, append(base, "--journal", local, "--single-host", "--once")...)
	if strings.Contains(errOut, "--single-host") || code == 0 {
		t.Errorf("--single-host: exit %d, stderr %q; want the journal accepted and the missing workspace refused", code, errOut)
	}
}
