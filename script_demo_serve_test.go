//go:build demo && cgo

package main

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

// buildBinary builds the zbrecover binary with the given tags and CGO_ENABLED setting.
func buildBinary(t *testing.T, name, tags, cgo string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	args := []string{"build", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, b)
	}
	return out
}

// TestDemoServeAsAWorkspace starts `zbrecover demo serve --table main.sales.orders=ROOT` as
// its own process, runs the release binary against it with only the settings it printed, and
// stops it with SIGINT: the warehouse and Unity Catalog give the schema the Delta log gives,
// and nothing is left listening.
func TestDemoServeAsAWorkspace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin := buildBinary(t, "zbrecover-demo", "demo", "1")
	release := buildBinary(t, "zbrecover", "", "0")

	root := filepath.Join(t.TempDir(), "orders")
	v0 := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer", sd.StringType).Col("amount", sd.DecimalType(12, 2)).
		Col("shipping", sd.StructType(sd.NewField("city", sd.StringType, func(f *sd.Field) { f.Nullable = true }), sd.NewField("zip", sd.StringType, func(f *sd.Field) { f.Nullable = true }))).
		Col("placed_at", sd.TimestampType)
	if _, err := deltatest.Write(root, deltatest.Table{Schema: v0, Later: []sd.Schema{v0.Col("channel", sd.StringType)}}); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "statements.jsonl")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	served := startDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root, "--listen", "127.0.0.1:0", "--log", logFile)
	env := served.env

	// Only the printed settings: no profile file, no other DATABRICKS_ variable.
	home := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, release, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("zbrecover %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String()
	}
	for _, format := range []string{"text", "ddl"} {
		fromDelta := run("schema", root, "--from", "delta", "-o", format)
		fromWarehouse := run("schema", "--table", "main.sales.orders", "--from", "warehouse", "-o", format)
		fromUC := run("schema", "--table", "main.sales.orders", "--from", "uc", "-o", format)
		if fromWarehouse != fromDelta || fromUC != fromDelta {
			t.Errorf("-o %s: schemas differ\ndelta:\n%s\nwarehouse:\n%s\nuc:\n%s", format, fromDelta, fromWarehouse, fromUC)
		}
		if format == "ddl" && !strings.Contains(fromDelta, "`shipping` STRUCT<`city`: STRING, `zip`: STRING>") {
			t.Errorf("unexpected DDL %s", fromDelta)
		}
	}
	// The statement log has the warehouse's DESCRIBE.
	logged, _ := os.ReadFile(logFile)
	if !strings.Contains(string(logged), `"statement":"DESCRIBE TABLE EXTENDED `+"`main`.`sales`.`orders`"+` AS JSON"`) ||
		!strings.Contains(string(logged), `"outcome":"FINISHED"`) {
		t.Errorf("statement log:\n%s", logged)
	}

	served.stop()
}

// servedWorkspace is a running `zbrecover demo serve` process and the settings it printed.
type servedWorkspace struct {
	t      *testing.T
	cmd    *exec.Cmd
	env    map[string]string // DATABRICKS_HOST, DATABRICKS_TOKEN, DATABRICKS_WAREHOUSE_ID
	stderr *bytes.Buffer
}

// startDemoServe starts `demoBin demo serve args…` and reads the settings it prints; the
// process is killed when the test ends unless stop stopped it.
func startDemoServe(ctx context.Context, t *testing.T, demoBin string, args ...string) *servedWorkspace {
	t.Helper()
	srv := exec.CommandContext(ctx, demoBin, append([]string{"demo", "serve"}, args...)...)
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w := &servedWorkspace{t: t, cmd: srv, env: map[string]string{}, stderr: &bytes.Buffer{}}
	srv.Stderr = w.stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if srv.ProcessState == nil {
			_ = srv.Process.Kill()
			_ = srv.Wait()
		}
	})
	sc := bufio.NewScanner(stdout)
	for len(w.env) < 3 && sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok {
			w.env[k] = v
		}
	}
	for _, k := range []string{"DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_WAREHOUSE_ID"} {
		if w.env[k] == "" {
			t.Fatalf("demo serve did not print %s (printed %v; stderr %s)", k, w.env, w.stderr.String())
		}
	}
	go func() { _, _ = bufio.NewReader(stdout).WriteTo(new(bytes.Buffer)) }()
	return w
}

// stop sends SIGINT and checks that the workspace stops within 20 s, says so, and leaves
// nothing listening.
func (w *servedWorkspace) stop() {
	t := w.t
	t.Helper()
	u, _ := url.Parse(w.env["DATABRICKS_HOST"])
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("demo serve after SIGINT: %v\n%s", err, w.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("demo serve did not stop within 20s of SIGINT\n%s", w.stderr.String())
	}
	if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after demo serve stopped", u.Host)
	}
	if !strings.Contains(w.stderr.String(), "local workspace stopped") {
		t.Errorf("stderr: %s", w.stderr.String())
	}
}
