//go:build cgo

package recovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// TestTerminalStageCleanupBarsAndSummaries: on a terminal, reload --stage-to draws a bar of
// the files staged and one of the batches loaded, and cleanup --archive-to one of the files
// archived and one of the files deleted; --summary writes a Markdown summary of each step
// (verify's to stdout with -), and --log-file holds each run header.
func TestTerminalStageCleanupBarsAndSummaries(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	r := managedRecovery(t)
	// Each load takes a few of the bars' frames, so that they are redrawn in place (a reload
	// quicker than one frame draws only its last).
	r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Times: -1, Delay: 300 * time.Millisecond})
	dir := t.TempDir()
	logPath := filepath.Join(dir, "ops.log")
	reloadSum := filepath.Join(dir, "reload.md")
	code, out, errOut := runZbrecoverTTY(t, "reload", r.table, "--rename", "customer_id=customer_key", "--batch-files", "10",
		"--stage-to", stageVolume, "--yes", "--summary", reloadSum, "--log-file", logPath)
	if code != 0 {
		t.Fatalf("reload: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"staged ", "30 / 30 files", "loaded ", "3 / 3 batches", "\x1b["} {
		if !strings.Contains(errOut, want) {
			t.Errorf("reload stderr lacks %q:\n%q", want, errOut)
		}
	}
	sum := readFile(t, reloadSum)
	for _, want := range []string{"### zbrecover reload: main.sales.orders", "| run | `", "| files | 30 |", "| rows expected | 60 |",
		"| rows inserted | 60 |", "| batches | 3 verified |", "| staged | 30 files copied, 0 verified copies reused |",
		"| exit status | 0 (ok) |", "| command | `zbrecover reload main.sales.orders --rename customer_id=customer_key",
		"**Next:**", "`zbrecover verify main.sales.orders --run "} {
		if !strings.Contains(sum, want) {
			t.Errorf("reload summary lacks %q:\n%s", want, sum)
		}
	}

	code, out, errOut = runZbrecover(t, "verify", r.table, "--summary", "-", "--log-file", logPath)
	if code != 0 || !strings.Contains(out, "| verification | ok: all 3 batches agree") || !strings.Contains(out, "### zbrecover verify: main.sales.orders") {
		t.Errorf("verify --summary -: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runZbrecover(t, "-o", "json", "verify", r.table, "--summary", "-"); code != 2 || !strings.Contains(errOut, "--summary -") {
		t.Errorf("--summary - under -o json: exit %d, %s", code, errOut)
	}

	cleanSum := filepath.Join(dir, "cleanup.md")
	code, out, errOut = runZbrecoverTTY(t, "cleanup", r.table, "--yes", "--archive-to", t.TempDir(), "--summary", cleanSum, "--log-file", logPath)
	if code != 0 {
		t.Fatalf("cleanup: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"archived ", "deleted ", "30 / 30 files"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("cleanup stderr lacks %q:\n%q", want, errOut)
		}
	}
	sum = readFile(t, cleanSum)
	for _, want := range []string{"### zbrecover cleanup: main.sales.orders", "| deleted | 30 files (", "archived to ", "| exit status | 0 (ok) |", "| run state | cleaned |"} {
		if !strings.Contains(sum, want) {
			t.Errorf("cleanup summary lacks %q:\n%s", want, sum)
		}
	}
	if strings.Contains(sum, "rows expected") {
		t.Errorf("cleanup summary with rows it does not know:\n%s", sum)
	}
	log := readFile(t, logPath)
	if n := strings.Count(log, `level=info msg="run header" `); n != 3 {
		t.Errorf("%d run headers in the log file, want 3:\n%s", n, log)
	}
	for _, want := range []string{"workspace=http", `command="zbrecover reload main.sales.orders`, `command="zbrecover cleanup main.sales.orders`,
		"warehouse identity", "exit status 0"} {
		if !strings.Contains(log, want) {
			t.Errorf("log file lacks %q:\n%s", want, log)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
