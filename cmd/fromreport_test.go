package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPreviewFromReport: preview takes the groups and files of a saved inspect -o json
// report, and says so when a file changed since.
func TestPreviewFromReport(t *testing.T) {
	root := tableRoot(t, false)
	_, out, errOut := run(t, "inspect", "-o", "json", "--schema-file", writeTemp(t, "id BIGINT NOT NULL, customer STRING, amount DECIMAL(10,2)"), root)
	if out == "" {
		t.Fatalf("no report: %s", errOut)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(report, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	code, pout, perr := run(t, "preview", "--from-report", report, "-n", "2", root)
	if code != 0 || !strings.Contains(pout, "ann") || !strings.Contains(pout, "Schema ") {
		t.Fatalf("exit %d\n%s\n%s", code, pout, perr)
	}
	code, pout, perr = run(t, "preview", "--from-report", report, "--file", "2024/05/02/part-3.parquet", "--format", "csv", root)
	if code != 0 || !strings.Contains(pout, "bo") {
		t.Fatalf("--file: exit %d\n%s\n%s", code, pout, perr)
	}
	// part-1 rewritten since the report (other size): listed as changed, part-2 shown.
	p1 := filepath.Join(root, filepath.FromSlash(fallbackDirName+"2024/05/01/part-1.parquet"))
	data, _ := os.ReadFile(p1)
	if err := os.WriteFile(p1, append(data, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p1, time.Now(), time.Now())
	code, _, perr = run(t, "preview", "--from-report", report, "-n", "5", root)
	if code != ExitPartial || !strings.Contains(perr, "part-1.parquet: size") || !strings.Contains(perr, "changed since the report") {
		t.Errorf("after a change: exit %d, stderr %s", code, perr)
	}
	code, _, perr = run(t, "preview", "--from-report", report, t.TempDir())
	if code == 0 || !strings.Contains(perr, "is a report on") {
		t.Errorf("another root: exit %d, stderr %s", code, perr)
	}
}
