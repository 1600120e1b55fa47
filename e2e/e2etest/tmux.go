package e2etest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// Pane is a detached tmux session on a private socket running one shell script: a real
// terminal of a given size whose screen a test reads.
type Pane struct {
	t      *testing.T
	socket string
	Name   string
}

// NeedTmux skips the test when tmux is not installed (.ci/run installs it).
func NeedTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed")
	}
}

// StartPane runs script in a new tmux pane of width × height; the pane stays after the
// script ends, which prints EXIT:<status> last. raw, when set, receives every byte the
// pane's program wrote (tmux pipe-pane).
func StartPane(t *testing.T, name, script string, width, height int, raw string) *Pane {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, name+".sh")
	if raw != "" {
		script = "sleep 0.5\n" + script // pipe-pane is attached once the pane runs
	}
	if err := os.WriteFile(file, []byte(script+"\necho EXIT:$?\nsleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &Pane{t: t, socket: filepath.Join(dir, "tmux.sock"), Name: name}
	p.Tmux("-f", "/dev/null", "new-session", "-d", "-s", name, "-x", fmt.Sprint(width), "-y", fmt.Sprint(height), "sh "+file)
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.socket, "kill-server").Run() })
	if raw != "" {
		p.Tmux("pipe-pane", "-O", "-t", name, "cat > "+raw)
	}
	return p
}

// Tmux runs a tmux command on the pane's server.
func (p *Pane) Tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Capture is the pane's screen as text, one line per line written: a line the terminal
// wrapped is joined again (so a line wider than the pane shows as one).
func (p *Pane) Capture() string { return p.Tmux("capture-pane", "-p", "-J", "-t", p.Name) }

// Keys sends keys to the pane ("C-c" is Ctrl-C).
func (p *Pane) Keys(keys ...string) { p.Tmux(append([]string{"send-keys", "-t", p.Name}, keys...)...) }

// WaitFor polls the screen until cond holds, or fails after d; it returns the screen.
func (p *Pane) WaitFor(d time.Duration, what string, cond func(screen string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(d)
	for {
		s := p.Capture()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no %s on the screen of pane %s within %s:\n%s", what, p.Name, d, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ShellEnv is the workspace's settings, with the binary's home and state directory, as
// export lines for a pane's script.
func (s *Served) ShellEnv() string {
	env := map[string]string{"HOME": s.Home, "XDG_STATE_HOME": s.State, "PATH": os.Getenv("PATH")}
	for k, v := range s.Env {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "export %s='%s'\n", k, strings.ReplaceAll(env[k], "'", `'\''`))
	}
	return b.String()
}
