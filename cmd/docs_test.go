package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestCLIReference keeps docs/cli.md equal to the commands' own help: change a command's help
// text, then run `make docs`.
func TestCLIReference(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReference(&b); err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("../docs/cli.md")
	if err != nil {
		t.Fatalf("%v (run make docs)", err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Fatalf("docs/cli.md is out of date: run make docs")
	}
}

// TestManPages: one page per command of the release binary, the same bytes on every run,
// each carrying its command's section of the runbook's reference after the short help.
func TestManPages(t *testing.T) {
	runbook, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	details := ReferenceSections(runbook)
	a, b := t.TempDir(), t.TempDir()
	if err := WriteManPages(a, details); err != nil {
		t.Fatal(err)
	}
	if err := WriteManPages(b, details); err != nil {
		t.Fatal(err)
	}
	// Every command of the release binary has its section, and its page holds it.
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.Hidden && sub.Name() != "help" && sub.Name() != "completion" && sub.Runnable() {
				walk(sub)
			}
		}
		if details[c.CommandPath()] == "" {
			t.Errorf("docs/runbook.md has no reference section \"### %s\"", c.CommandPath())
			return
		}
		page, err := os.ReadFile(filepath.Join(a, strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"))
		if err != nil {
			t.Fatal(err)
		}
		first := strings.Fields(details[c.CommandPath()])
		if !bytes.Contains(page, []byte(first[len(first)-1])) {
			t.Errorf("%s: the man page lacks its reference section", c.CommandPath())
		}
	}
	walk(releaseCommandTree())
	if d := details["zbrecover reload"]; !strings.Contains(d, "MERGE INTO <table> USING") || strings.Contains(d, "### zbrecover verify") {
		t.Errorf("the reload section, cut wrong:\n%s", d)
	}
	for _, name := range []string{"zbrecover.1", "zbrecover-inspect.1", "zbrecover-reload.1", "zbrecover-cleanup.1", "zbrecover-doctor.1"} {
		pa, err := os.ReadFile(a + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		pb, _ := os.ReadFile(b + "/" + name)
		if !bytes.Equal(pa, pb) || !bytes.Contains(pa, []byte(".TH \"ZBRECOVER\"")) {
			t.Errorf("%s: not the same twice, or no header:\n%.300s", name, pa)
		}
	}
	if _, err := os.Stat(a + "/zbrecover-demo.1"); err == nil {
		t.Error("a man page for demo, which the release binary does not have")
	}
}
