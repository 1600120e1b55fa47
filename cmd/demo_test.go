//go:build demo

package cmd

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/internal/iostreams"
)

// TestDemoEndToEnd runs the whole recovery of the demo on a small example: the local
// workspace serves, the managed path is refused, the staged reload verifies, verify --key
// reports the records also published, cleanup deletes the verified files and history shows
// the run cleaned; at the end the example is removed and nothing listens.
func TestDemoEndToEnd(t *testing.T) {
	code, out, errOut := run(t, "demo", "--files", "24", "--no-progress")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	root := regexp.MustCompile(`(?m)^Table root: (.+)$`).FindStringSubmatch(out)
	host := regexp.MustCompile(`local workspace serves at http://(127\.0\.0\.1:\d+) `).FindStringSubmatch(out)
	published := regexp.MustCompile(`Zerobus had also published the (\d+) records of 3 of the parked files`).FindStringSubmatch(out)
	if root == nil || host == nil || published == nil {
		t.Fatalf("no table root, workspace or published records in:\n%s", out)
	}
	const table = "main.sales.orders"
	// The real commands ran, each after its command line, with their real output.
	for _, want := range []string{
		"sql> ALTER TABLE main.sales.orders RENAME COLUMN customer_id TO customer_key;",
		"sql> ALTER TABLE main.sales.orders DROP COLUMN status;",
		"sql> ALTER TABLE main.sales.orders ALTER COLUMN amount TYPE DECIMAL(18,4);",
		"$ zbrecover scan main --exit-code --no-progress\n",
		"Tables with parked files: 1\n",
		"  zbrecover inspect --table main.sales.orders\n",
		"[exit status 6: parked fallback files found]",
		"$ zbrecover schema " + table + " --no-progress\n",
		"customer_key  string", // the table after the breaking change
		"$ zbrecover inspect " + table + " --no-progress\n",
		"Files:   24 Parquet files",
		"Schema groups: 2",
		"the table renamed customer_id to customer_key in version 2 (RENAME COLUMN",
		"status: blocks: column status (string) is in the file but not in the table",
		"[exit status 3: ",
		"sql> ALTER TABLE `main`.`sales`.`orders` ADD COLUMNS (`status` STRING);",
		"$ zbrecover reload " + table + " --rename customer_id=customer_key --yes --no-progress\n[exit status 1: error; nothing was loaded]",
		"$ zbrecover reload " + table + " --rename customer_id=customer_key --yes --stage-to /Volumes/main/sales/staging/orders-recovery --no-progress\n",
		"batches verified, 0 unknown, 0 failed, 0 mismatch; run verified",
		"$ zbrecover verify " + table + " --key order_id --no-progress\n",
		published[1] + " keys duplicated in the table",
		"$ zbrecover cleanup " + table + " --dry-run --no-progress\n",
		"$ zbrecover cleanup " + table + " --yes --no-progress\n",
		"deleted (", "run cleaned",
		"$ zbrecover history " + table + " --no-progress\n",
		"--dedupe-key order_id",
		"$ zbrecover history " + table + " --summary ", // the whole recovery, for the ticket
		"### Recovery of main.sales.orders (run ",
		"| proof | ",
		"order_id: ", " keys, 0 missing from the table, ",
		"**Commands run:**",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	// The at-least-once note is said once, by the reload that loaded the rows; not by verify
	// --key, which measured the duplicates, nor by its summary.
	note := "Rows are not deduplicated: Zerobus delivery is at-least-once"
	if i, v := strings.Index(out, note), strings.Index(out, "$ zbrecover verify "); strings.Count(out, note) != 1 || i < 0 || v < i {
		t.Errorf("the at-least-once note appears %d times (at %d; verify at %d), want once, in reload's report", strings.Count(out, note), i, v)
	}
	// Reload's deletion-vector warning comes only with a change of the property.
	if strings.Contains(errOut, "does not set delta.enableDeletionVectors") {
		t.Errorf("a deletion-vector warning without a change:\n%s", errOut)
	}
	// The table holds every readable row once, plus the published records a second time.
	rows := regexp.MustCompile(`(?m)^(\d+) rows, (\d+) distinct order_id$`).FindStringSubmatch(out)
	loaded := regexp.MustCompile(`(?m)^(\d+) readable files were loaded once each \((\d+) rows\)`).FindStringSubmatch(out)
	if rows == nil || loaded == nil {
		t.Fatalf("no table count or summary in:\n%s", out)
	}
	if n, d, want, pub := atoi(t, rows[1]), atoi(t, rows[2]), atoi(t, loaded[2]), atoi(t, published[1]); n != want+pub || d != want {
		t.Errorf("table: %d rows, %d distinct; want %d rows (%d loaded + %d published), %d distinct", n, d, want+pub, want, pub, want)
	}
	if !strings.Contains(errOut, "LOCATION_OVERLAP") || !strings.Contains(errOut, "--stage-to /Volumes/main/sales/") {
		t.Errorf("the refused managed path is not explained on stderr:\n%s", errOut)
	}
	if !regexp.MustCompile(`The journal of the run is in \S+/state/zbrecover\.`).MatchString(out) {
		t.Errorf("the journal's place is not printed:\n%s", out)
	}
	// The temporary example is gone, and the workspace no longer listens.
	if _, err := os.Stat(root[1]); !os.IsNotExist(err) {
		t.Errorf("example not removed: %v", err)
	}
	if c, err := net.DialTimeout("tcp", host[1], time.Second); err == nil {
		c.Close()
		t.Errorf("%s still listens after the demo", host[1])
	}
	// The environment the demo set for its commands is restored.
	if h := os.Getenv("DATABRICKS_HOST"); strings.Contains(h, host[1]) {
		t.Errorf("DATABRICKS_HOST left set to %s", h)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDemoDirIsKept(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := run(t, "demo", "--files", "5", "--dir", dir, "--no-progress")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	root := filepath.Join(dir, "orders")
	for _, p := range []string{"_delta_log/00000000000000000002.json", "_zerobus/table_rejected_parquets"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Error(err)
		}
	}
	if !strings.Contains(out, "The example stays in "+dir) {
		t.Errorf("stdout does not say where the example is:\n%s", out)
	}
	// The example is written once: a second run into the same place fails and says why.
	code, _, errOut = run(t, "demo", "--files", "5", "--dir", dir)
	if code != ExitFailure || !strings.Contains(errOut, "not empty") {
		t.Errorf("second run: exit %d, stderr %q", code, errOut)
	}
}

func TestDemoKeep(t *testing.T) {
	code, out, _ := run(t, "demo", "--files", "4", "--keep", "--no-progress")
	m := regexp.MustCompile(`The example stays in (\S+) \(`).FindStringSubmatch(out)
	if code != ExitOK || m == nil {
		t.Fatalf("exit %d\n%s", code, out)
	}
	t.Cleanup(func() { os.RemoveAll(m[1]) })
	if _, err := os.Stat(filepath.Join(m[1], "orders", "_delta_log")); err != nil {
		t.Error(err)
	}
}

func TestDemoFlags(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--files", "2"},
		{"demo", "--files", "10000000"},
		{"demo", "extra"},
		{"demo", "--output", "json"},
	} {
		code, _, errOut := run(t, args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d; stderr %q", args, code, ExitUsage, errOut)
		}
	}

	var got *DemoOptions
	io, _, _, _ := iostreams.Test()
	f := NewFactory(io)
	root := NewRootCmd(f)
	for _, c := range root.Commands() {
		if c.Name() == "demo" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(NewCmdDemo(f, func(_ context.Context, o *DemoOptions) error { got = o; return nil }))
	root.SetArgs([]string{"-v", "--concurrency", "8", "demo", "--files", "100", "--dir", "x"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Files != 100 || got.Dir != "x" || got.Keep {
		t.Errorf("options %+v", got)
	}
	if strings.Join(got.Inherited, " ") != "--concurrency=8 --verbose=1" {
		t.Errorf("inherited flags %q", got.Inherited)
	}
}

// cancelOn is stdout that cancels the run (as the first SIGINT does) once it has printed want.
type cancelOn struct {
	strings.Builder
	want   string
	cancel context.CancelCauseFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	n, err := c.Builder.Write(p)
	if strings.Contains(c.String(), c.want) {
		c.cancel(&signalError{sig: os.Interrupt})
	}
	return n, err
}

// TestDemoInterrupted: Ctrl-C during a step of the demo prints one line, which says the demo
// was interrupted during that step and what is left, with no Go error chain; exit 130.
func TestDemoInterrupted(t *testing.T) {
	uctest.Isolate(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	io, _, _, errOut := iostreams.Test()
	out := &cancelOn{want: "$ zbrecover inspect main.sales.orders", cancel: cancel}
	io.Out = out
	code := Run(ctx, NewFactory(io), []string{"demo", "--files", "8", "--no-progress"})
	if code != ExitInterrupted {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut)
	}
	want := "interrupted: the demo stopped during `zbrecover inspect main.sales.orders --no-progress`; the example is removed and nothing is left running. Run the demo again to see it whole.\n"
	if got := errOut.String(); strings.Count(got, "interrupted") != 1 || !strings.HasSuffix(got, want) || strings.Contains(got, "context canceled") {
		t.Errorf("stderr:\n%s\nwant one interrupted line, ending with:\n%s", got, want)
	}
}

// TestDemoStopBeforeReload: --stop-before reload leaves the example unrecovered and the local
// workspace serving with the settings to paste; a reload by hand against it, with those
// settings, loads the files; Ctrl-C then stops the workspace and keeps the example.
func TestDemoStopBeforeReload(t *testing.T) {
	uctest.Isolate(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	io, _, _, errOut := iostreams.Test()
	out := &signalOn{want: "The local workspace serves until Ctrl-C here.", ready: make(chan struct{})}
	io.Out = out
	ready := out.ready
	dir := t.TempDir()
	done := make(chan int)
	go func() {
		done <- Run(ctx, NewFactory(io), []string{"demo", "--files", "8", "--no-progress", "--dir", dir, "--stop-before", "reload"})
	}()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("the demo ended (exit %d) before stopping for the operator\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut)
	}
	text := out.String()
	if strings.Contains(text, "$ zbrecover reload") {
		t.Errorf("the demo reloaded before stopping:\n%s", text)
	}
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^export (\w+)=(.*)$`).FindAllStringSubmatch(text, -1) {
		env[m[1]] = strings.Trim(m[2], "'")
	}
	if env["DATABRICKS_HOST"] == "" || env["DATABRICKS_TOKEN"] == "" || env["XDG_STATE_HOME"] == "" {
		t.Fatalf("the settings to paste are missing:\n%s", text)
	}
	// The operator's reload, with the printed settings, in another process's environment.
	for k, v := range env {
		t.Setenv(k, v)
	}
	rio, _, rout, rerr := iostreams.Test()
	if code := Run(context.Background(), NewFactory(rio), []string{"reload", "main.sales.orders", "--rename", "customer_id=customer_key",
		"--stage-to", "/Volumes/main/sales/staging/orders-recovery", "--yes", "--no-progress"}); code != ExitOK && code != ExitPartial {
		t.Fatalf("reload by hand: exit %d\n%s%s", code, rout, rerr)
	}
	cancel(nil)
	if code := <-done; code != ExitOK && code != ExitInterrupted {
		t.Errorf("after Ctrl-C: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "orders", "_delta_log")); err != nil {
		t.Errorf("the example was not kept: %v", err)
	}
}

// signalOn is a writer safe for concurrent use that closes ready once what it holds has want.
type signalOn struct {
	mu    sync.Mutex
	b     strings.Builder
	want  string
	ready chan struct{}
	once  sync.Once
}

func (s *signalOn) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if strings.Contains(s.b.String(), s.want) {
		s.once.Do(func() { close(s.ready) })
	}
	return n, err
}

func (s *signalOn) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
