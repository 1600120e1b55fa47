package cmd

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/zbrecover/zbrecover/internal/iostreams"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/cli.md from the command tree")

// TestCLIReference keeps docs/cli.md equal to the commands' own help: change a command's help
// text, then run `go test ./cmd -run TestCLIReference -update-docs`.
func TestCLIReference(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(io))
	// Commands compiled in only with build tags (the demo) are not part of the release binary.
	for _, c := range root.Commands() {
		if c.Name() == "demo" {
			root.RemoveCommand(c)
		}
	}
	var b bytes.Buffer
	b.WriteString("# Command reference\n\nGenerated from the commands' help (`go test ./cmd -run TestCLIReference -update-docs`); do not edit.\n")
	writeCommandDoc(&b, root)
	const path = "../docs/cli.md"
	if *updateDocs {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd -run TestCLIReference -update-docs)", err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Fatalf("docs/cli.md is out of date: run go test ./cmd -run TestCLIReference -update-docs")
	}
}

func writeCommandDoc(b *bytes.Buffer, c *cobra.Command) {
	if c.Hidden || (c.Name() == "help") {
		return
	}
	if c.Runnable() || c.HasParent() == false {
		fmt.Fprintf(b, "\n## %s\n\n", c.CommandPath())
		long := c.Long
		if long == "" {
			long = c.Short
		}
		b.WriteString(strings.TrimSpace(long) + "\n")
		if c.Runnable() {
			fmt.Fprintf(b, "\n```\n%s\n```\n", c.UseLine())
		}
		if c.Example != "" {
			fmt.Fprintf(b, "\nExamples:\n\n```\n%s\n```\n", strings.TrimRight(c.Example, "\n"))
		}
		if fl := c.NonInheritedFlags().FlagUsages(); fl != "" {
			fmt.Fprintf(b, "\nFlags:\n\n```\n%s```\n", fl)
		}
		if !c.HasParent() {
			fmt.Fprintf(b, "\nGlobal flags (every command):\n\n```\n%s```\n", c.PersistentFlags().FlagUsages())
		}
	}
	for _, sub := range c.Commands() {
		if sub.Name() == "completion" && c.HasParent() == false {
			fmt.Fprintf(b, "\n## %s\n\n%s\n", sub.CommandPath(), sub.Short)
			continue
		}
		writeCommandDoc(b, sub)
	}
}
