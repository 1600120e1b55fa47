// Package e2etest holds what the end-to-end tests under e2e/ share: the zbrecover binaries,
// built once per test process; a running `zbrecover demo serve` and the release binary driven
// against it; its statement log and volumes; the recovery fixtures.
package e2etest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built is one binary, built at most once per test process.
type built struct {
	once sync.Once
	path string
	err  error
}

var (
	release, demo built
	binDir        string
	binDirOnce    sync.Once
	binDirErr     error
)

// Release returns the release binary (pure Go, CGO_ENABLED=0, no tags), built from the module
// the first time a test of the process asks for it.
func Release(t testing.TB) string {
	t.Helper()
	return release.get(t, "zbrecover", "", "0")
}

// Demo returns the demo build (cgo, -tags demo: the local workspace of `zbrecover demo serve`),
// built once per test process.
func Demo(t testing.TB) string {
	t.Helper()
	return demo.get(t, "zbrecover-demo", "demo", "1")
}

func (b *built) get(t testing.TB, name, tags, cgo string) string {
	t.Helper()
	b.once.Do(func() { b.path, b.err = build(name, tags, cgo) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func build(name, tags, cgo string) (string, error) {
	binDirOnce.Do(func() { binDir, binDirErr = os.MkdirTemp("", "zbrecover-e2e-bin") })
	if binDirErr != nil {
		return "", binDirErr
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(binDir, name)
	args := []string{"build", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", name, err, b)
	}
	return out, nil
}

// ModuleRoot is the directory of the module's go.mod, found from the working directory up.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Main runs the package's tests and then removes the binaries they built.
func Main(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}
