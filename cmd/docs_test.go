package cmd

import (
	"bytes"
	"os"
	"testing"
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

// TestManPages: one page per command of the release binary, the same bytes on every run.
func TestManPages(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if err := WriteManPages(a); err != nil {
		t.Fatal(err)
	}
	if err := WriteManPages(b); err != nil {
		t.Fatal(err)
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
