// Command gendocs writes the generated documentation: the command reference docs/cli.md and
// the man pages in docs/man/, each page the command's help and its section of the runbook's
// reference (docs/runbook.md). `make docs` runs it; CI checks that it leaves no diff.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/zbrecover/zbrecover/cmd"
)

func main() {
	out := flag.String("out", "docs", "the documentation directory")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	f, err := os.Create(filepath.Join(out, "cli.md"))
	if err != nil {
		return err
	}
	if err := cmd.WriteReference(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	runbook, err := os.ReadFile(filepath.Join(out, "runbook.md"))
	if err != nil {
		return err
	}
	return cmd.WriteManPages(filepath.Join(out, "man"), cmd.ReferenceSections(runbook))
}
