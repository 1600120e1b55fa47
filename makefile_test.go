package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMakeDemoSaysWhatItCompiles: on an empty build cache, `make demo` names what it builds
// within 5 seconds, before the minutes of compiling, and lists the packages as they compile.
func TestMakeDemoSaysWhatItCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a build on an empty cache")
	}
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("no make")
	}
	c := exec.Command(mk, "demo", "DEMOBIN="+filepath.Join(t.TempDir(), "zbrecover-demo"))
	// An empty build cache, as on a fresh machine; no telemetry child, which would keep the
	// output pipe open after the build is stopped.
	// make itself runs as an operator's would: not a sub-make of `make test`, whose MAKELEVEL
	// would make it print "Entering directory" first.
	c.Env = append(topLevelMakeEnv(), "GOCACHE="+t.TempDir(), "GOTELEMETRY=off")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stdout, c.Stderr = pw, pw
	start := time.Now()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // the build would take minutes: stop it
		_ = c.Wait()
		pr.Close()
	}()
	type line struct {
		text string
		at   time.Duration
	}
	lines := make(chan line, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- line{sc.Text(), time.Since(start)}
		}
	}()
	var first string
	var firstAt time.Duration
	packages := 0
	deadline := time.After(3 * time.Minute)
read:
	for packages < 3 {
		select {
		case l, ok := <-lines:
			if !ok {
				break read
			}
			if first == "" {
				first, firstAt = l.text, l.at
				continue
			}
			if !strings.Contains(l.text, " ") { // go build -v: one import path a line
				packages++
			}
		case <-deadline:
			break read
		}
	}
	if first == "" {
		t.Fatal("make demo printed nothing")
	}
	if firstAt > 5*time.Second || !strings.Contains(first, "make demo: building") || !strings.Contains(first, "DuckDB") ||
		!strings.Contains(first, "several minutes") {
		t.Errorf("first line after %v: %q; want, within 5 s, what is built and that the first build takes minutes", firstAt, first)
	}
	if packages < 3 {
		t.Errorf("go build -v listed %d packages as they compiled", packages)
	}
}

// topLevelMakeEnv is the environment without what a parent make passes to its sub-makes.
func topLevelMakeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES":
			continue
		}
		env = append(env, kv)
	}
	return env
}
