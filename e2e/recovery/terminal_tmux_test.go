//go:build demo && cgo

package recovery

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// TestTerminalInTmux runs the release binary on a real terminal (a tmux pane) against the
// local workspace: inspect of 5,000 files and reload show their bars while they run; the
// first Ctrl-C prints the interrupt notice above the bar, and it is still on the screen once
// reload has stopped; piped, the same commands write no ESC byte, and neither do they on a
// terminal under TERM=dumb.
func TestTerminalInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 files and a binary build")
	}
	e2etest.NeedTmux(t)
	r := newRecovery(t, 5000, 0)
	root, err := e2etest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "zbrecover")
	build := exec.Command("go", "build", "-buildvcs=auto", "-o", bin, ".")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// The binary names its commit when it was built from a git clone (Go does not read the
	// .git file of a linked worktree).
	if fi, err := os.Stat(filepath.Join(root, ".git")); err == nil && fi.IsDir() {
		if out, err := exec.Command(bin, "version").Output(); err != nil || !strings.Contains(string(out), "commit ") {
			t.Errorf("version of a binary built from git: %q, %v", out, err)
		}
	}

	var env strings.Builder
	for _, k := range []string{"DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_WAREHOUSE_ID", "XDG_STATE_HOME", "DATABRICKS_CONFIG_FILE", "HOME", "PATH"} {
		fmt.Fprintf(&env, "export %s='%s'\n", k, os.Getenv(k))
	}
	// One footer at a time, so that inspect runs long enough to be seen.
	inspectCmd := fmt.Sprintf("'%s' inspect %s --from delta --concurrency 1", bin, r.table)
	reloadCmd := fmt.Sprintf("'%s' reload %s --rename customer_id=customer_key --batch-files 250 --yes", bin, r.table)

	// inspect: the footer bar, complete, stays above the report. Reading 5,000 local footers
	// takes about as long as the bar's first frame, so whether a frame is caught mid-run is
	// only logged; reload below is held long enough to assert it.
	p := e2etest.StartPane(t, "inspect", env.String()+inspectCmd, 150, 40, "")
	sawBar := false
	final := p.WaitFor(2*time.Minute, "end of inspect", func(s string) bool {
		if !strings.Contains(s, "EXIT:") && strings.Contains(s, "footers ") && strings.Contains(s, "/ 5000 files") {
			sawBar = true
		}
		return strings.Contains(s, "EXIT:")
	})
	if lines := strings.Split(final, "\n"); !strings.HasPrefix(lines[0], "footers 5000 / 5000 files [") || !strings.Contains(final, "EXIT:3") {
		t.Errorf("inspect: want its complete bar above the report:\n%s", final)
	}
	t.Logf("inspect's bar seen on local files while it ran: %v", sawBar)

	// The same 5,000 files on an S3 emulator answering each request after 3 ms: the footer
	// bar is on the screen while inspect runs, counting up.
	s3 := s3test.NewServer(t, s3test.WithLatency(3*time.Millisecond))
	fallbackDir := filepath.Join(r.root, filepath.FromSlash(fallback.Prefix))
	if err := filepath.WalkDir(fallbackDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(r.root, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return s3.Put("orders/"+filepath.ToSlash(rel), data)
	}); err != nil {
		t.Fatal(err)
	}
	s3Cmd := fmt.Sprintf("export AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s\n'%s' inspect %s --s3-endpoint %s --s3-region %s --concurrency 4",
		s3test.AccessKeyID, s3test.SecretAccessKey, bin, s3.URLFor("orders"), s3.URL, s3test.Region)
	p = e2etest.StartPane(t, "inspect-s3", env.String()+s3Cmd, 150, 40, "")
	midRun := ""
	final = p.WaitFor(2*time.Minute, "end of inspect on S3", func(s string) bool {
		if midRun == "" && !strings.Contains(s, "EXIT:") && strings.Contains(s, "footers ") && strings.Contains(s, "/ 5000 files") &&
			!strings.Contains(s, "footers 5000 / 5000") {
			midRun = s
		}
		return strings.Contains(s, "EXIT:")
	})
	if midRun == "" || !strings.Contains(final, "EXIT:0") || !strings.Contains(final, "Files:   5,000 Parquet files") {
		t.Errorf("inspect on S3: want the bar on the screen while it runs, then the report\nduring:\n%s\nat the end:\n%s", midRun, final)
	}

	// reload: 21 statements (250 files at most, per folder), each held RUNNING for 400ms; Ctrl-C once the loading bar shows.
	r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Times: -1, Delay: 400 * time.Millisecond})
	// The script's shell survives the Ctrl-C (a trap, which its child does not inherit) to
	// print the exit status.
	p = e2etest.StartPane(t, "reload", env.String()+"trap 'true' INT\n"+reloadCmd, 150, 40, "")
	p.WaitFor(2*time.Minute, "reload's loading bar", func(s string) bool {
		return strings.Contains(s, "loaded ") && strings.Contains(s, " batches") && !strings.Contains(s, "EXIT:")
	})
	p.Keys("C-c")
	p.WaitFor(10*time.Second, "the interrupt notice while the bar is live", func(s string) bool {
		return strings.Contains(s, "interrupt received, stopping cleanly")
	})
	final = p.WaitFor(time.Minute, "end of reload", func(s string) bool { return strings.Contains(s, "EXIT:") })
	for _, want := range []string{"interrupt received, stopping cleanly (send it again to exit at once)", "loaded ", "/ 21 batches", "EXIT:130"} {
		if !strings.Contains(final, want) {
			t.Errorf("after Ctrl-C the screen lacks %q:\n%s", want, final)
		}
	}
	if n := strings.Count(final, "interrupt received"); n != 1 {
		t.Errorf("the notice is on the screen %d times:\n%s", n, final)
	}

	// Piped: no escape byte on either stream; reload finishes the interrupted run.
	r.ws.Warehouse().ClearFaults()
	for _, args := range [][]string{
		{"inspect", r.table, "--from", "delta"},
		{"reload", r.table, "--rename", "customer_id=customer_key", "--batch-files", "250", "--yes"},
	} {
		c := exec.Command(bin, args...)
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		err := c.Run()
		if bytes.ContainsRune(out.Bytes(), 0x1b) || bytes.ContainsRune(errb.Bytes(), 0x1b) {
			t.Errorf("piped %v: ESC bytes in the output:\n%q\n%q", args, out.String(), errb.String())
		}
		if args[0] == "reload" && err != nil {
			t.Errorf("piped reload: %v\n%s%s", err, out.String(), errb.String())
		}
	}

	// A terminal under TERM=dumb: no escape byte in what the program writes to it.
	raw := filepath.Join(t.TempDir(), "dumb.raw")
	p = e2etest.StartPane(t, "dumb", env.String()+"export TERM=dumb\n"+inspectCmd, 150, 40, raw)
	p.WaitFor(2*time.Minute, "end of inspect under TERM=dumb", func(s string) bool { return strings.Contains(s, "EXIT:") })
	time.Sleep(200 * time.Millisecond)
	data, err := os.ReadFile(raw)
	if err != nil || !bytes.Contains(data, []byte("EXIT:")) {
		t.Fatalf("raw output of the pane: %v %q", err, data)
	}
	if i := bytes.IndexByte(data, 0x1b); i >= 0 {
		t.Errorf("TERM=dumb: ESC byte at %d of the terminal output:\n%q", i, data[max(0, i-80):min(len(data), i+80)])
	}
}
