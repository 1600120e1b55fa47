package e2etest

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ServedWorkspace is a running `zbrecover demo serve` process and the settings it printed.
type ServedWorkspace struct {
	t      *testing.T
	cmd    *exec.Cmd
	Env    map[string]string // DATABRICKS_HOST, DATABRICKS_TOKEN, DATABRICKS_WAREHOUSE_ID
	Stderr *bytes.Buffer
}

// StartDemoServe starts `demoBin demo serve args…` and reads the settings it prints; the
// process is killed when the test ends unless stop stopped it.
func StartDemoServe(ctx context.Context, t *testing.T, demoBin string, args ...string) *ServedWorkspace {
	t.Helper()
	srv := exec.CommandContext(ctx, demoBin, append([]string{"demo", "serve"}, args...)...)
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	w := &ServedWorkspace{t: t, cmd: srv, Env: map[string]string{}, Stderr: &bytes.Buffer{}}
	srv.Stderr = w.Stderr
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
	for len(w.Env) < 3 && sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok {
			w.Env[k] = v
		}
	}
	for _, k := range []string{"DATABRICKS_HOST", "DATABRICKS_TOKEN", "DATABRICKS_WAREHOUSE_ID"} {
		if w.Env[k] == "" {
			t.Fatalf("demo serve did not print %s (printed %v; stderr %s)", k, w.Env, w.Stderr.String())
		}
	}
	go func() { _, _ = bufio.NewReader(stdout).WriteTo(new(bytes.Buffer)) }()
	return w
}

// Stop sends SIGINT and checks that the workspace stops within 20 s, says so, and leaves
// nothing listening.
func (w *ServedWorkspace) Stop() {
	t := w.t
	t.Helper()
	u, _ := url.Parse(w.Env["DATABRICKS_HOST"])
	if err := w.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("demo serve after SIGINT: %v\n%s", err, w.Stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("demo serve did not stop within 20s of SIGINT\n%s", w.Stderr.String())
	}
	if c, err := net.DialTimeout("tcp", u.Host, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after demo serve stopped", u.Host)
	}
	if !strings.Contains(w.Stderr.String(), "local workspace stopped") {
		t.Errorf("stderr: %s", w.Stderr.String())
	}
}
