package cmd

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/internal/iostreams"
)

// maxHelpLines is the most lines a command's --help may show before its flags: a short
// description, the exit codes, the usage and the examples. The rest is in docs/runbook.md
// and the man pages.
const maxHelpLines = 40

// minExamples is the fewest examples a command's help shows.
const minExamples = 3

var exampleLine = regexp.MustCompile(`(?m)^  \$ zbrecover( |$)`)

// TestHelpIsShortWithExamples: every command's --help (the root's, and those of the demo build,
// included) shows at most 40 lines before its flags, at least 3 examples of what operators
// type, and its exit codes (0, 1, 2, 130/143 among them), with the pointer to
// docs/exit-codes.md. cobra's completion scripts and help are cobra's own.
func TestHelpIsShortWithExamples(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(io))
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			walk(sub)
		}
		if !c.Runnable() && c.HasParent() {
			return // a help topic (zbrecover help environment)
		}
		n++
		var b bytes.Buffer
		c.InitDefaultHelpFlag() // as Execute does
		c.SetOut(&b)
		c.HelpFunc()(c, []string{})
		lines := strings.Split(b.String(), "\n")
		before := -1
		for i, l := range lines {
			if l == "Flags:" {
				before = i
				break
			}
		}
		switch {
		case before < 0:
			t.Errorf("%s: no flags in its help:\n%s", c.CommandPath(), b.String())
		case before > maxHelpLines:
			t.Errorf("%s: %d lines before the flags, want at most %d:\n%s", c.CommandPath(), before, maxHelpLines, strings.Join(lines[:before], "\n"))
		}
		if got := len(exampleLine.FindAllString(c.Example, -1)); got < minExamples {
			t.Errorf("%s: %d examples, want at least %d:\n%s", c.CommandPath(), got, minExamples, c.Example)
		}
		exit := strings.Join(strings.Fields(c.Long[strings.Index(c.Long, "Exit status:")+1:]), " ")
		if !strings.Contains(c.Long, "Exit status: 0 ") {
			t.Errorf("%s: no exit status in its help", c.CommandPath())
			return
		}
		for _, code := range []string{" 1 ", " 2 usage,", " 130/143 interrupted (docs/exit-codes.md)."} {
			if !strings.Contains(exit, code) {
				t.Errorf("%s: exit status lacks %q: %s", c.CommandPath(), code, exit)
			}
		}
	}
	walk(root)
	if n < 12 {
		t.Errorf("only %d commands seen", n)
	}
}
