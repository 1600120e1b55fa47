//go:build demo

package cmd

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/internal/iostreams"
)

func TestDemoEndToEnd(t *testing.T) {
	code, out, errOut := run(t, "demo", "--files", "24", "--no-progress")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	root := regexp.MustCompile(`(?m)^Table root: (.+)$`).FindStringSubmatch(out)
	if root == nil {
		t.Fatalf("no table root in:\n%s", out)
	}
	// The real commands ran, each after its command line.
	for _, want := range []string{
		"$ zbrecover schema " + root[1] + " --no-progress\n",
		"$ zbrecover inspect " + root[1] + " --no-progress\n",
		"$ zbrecover inspect " + root[1] + " --output json --no-progress\n",
		"customer_key  string", // schema's output: the table after the breaking change
		"Schema groups: 2",     // inspect's output
		"Files:   24 Parquet files",
		"Other:   2 objects not read",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	// Both groups are previewed by id.
	groups := regexp.MustCompile(`(?m)^group ([0-9a-f]+): (\d+) files`).FindAllStringSubmatch(out, -1)
	if len(groups) != 2 {
		t.Fatalf("groups in the summary: %v\n%s", groups, out)
	}
	for _, g := range groups {
		if !strings.Contains(out, "$ zbrecover preview "+root[1]+" --group "+g[1]+" -n 3 --no-progress\n") {
			t.Errorf("group %s not previewed", g[1])
		}
		if !strings.Contains(out, "\nSchema "+g[1]+"\norder_id") {
			t.Errorf("no preview table for group %s", g[1])
		}
	}
	// The corrupt file, the blocking change and the exit codes are explained.
	unreadable := regexp.MustCompile(`(?m)^  (\S+\.parquet) \([^)]*\): not a Parquet file`).FindStringSubmatch(out)
	if unreadable == nil || !strings.Contains(out, "unreadable: "+unreadable[1]) {
		t.Errorf("corrupt file not reported by inspect and the summary:\n%s", out)
	}
	for _, want := range []string{
		"customer_key [blocks] column customer_id (string) is only in the file",
		"amount [needs-cast]",
		"`customer_id` AS `customer_key`",
		"3  the files' schema blocks the load",
		"5  partial: some files are unreadable",
		"so the demo itself exits 0",
		"reload, verify and cleanup need a SQL warehouse",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if !regexp.MustCompile(`\[exit status [35]: `).MatchString(out) {
		t.Errorf("inspect's exit status is not shown")
	}
	if !strings.Contains(errOut, "fallback files are unreadable") {
		t.Errorf("inspect's stderr is not shown: %s", errOut)
	}
	// The temporary example is gone.
	if _, err := os.Stat(root[1]); !os.IsNotExist(err) {
		t.Errorf("example not removed: %v", err)
	}
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
	m := regexp.MustCompile(`The example stays in (\S+):`).FindStringSubmatch(out)
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

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/a/orders": "/tmp/a/orders",
		"--group=abc":   "--group=abc",
		"/tmp/a b":      "'/tmp/a b'",
		"it's":          `'it'\''s'`,
		"":              "''",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
