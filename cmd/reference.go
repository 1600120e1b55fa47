package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/zbrecover/zbrecover/internal/iostreams"
)

// releaseCommandTree returns the command tree of the release binary: commands compiled in only
// with build tags (the demo) are left out.
func releaseCommandTree() *cobra.Command {
	io, _, _, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(io))
	for _, c := range root.Commands() {
		if c.Name() == "demo" {
			root.RemoveCommand(c)
		}
	}
	root.DisableAutoGenTag = true
	return root
}

// WriteReference writes the command reference (docs/cli.md): every command's help, usage,
// examples and flags, generated from the command tree.
func WriteReference(w io.Writer) error {
	var b bytes.Buffer
	b.WriteString("# Command reference\n\nGenerated from the commands' help (`make docs`); do not edit.\n")
	writeCommandDoc(&b, releaseCommandTree())
	_, err := w.Write(b.Bytes())
	return err
}

// manDate is the date man pages carry: fixed, so that generating them twice gives the same
// bytes (make docs is checked for a clean diff).
var manDate = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// WriteManPages writes one man page per command (zbrecover.1, zbrecover-inspect.1, …) into
// dir, removing the pages of commands that no longer exist. A page's DESCRIPTION is the
// command's help followed by its section of the runbook's reference (details, by command path
// as ReferenceSections returns them): the help stays short, the man page holds the whole text.
func WriteManPages(dir string, details map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return err
		}
	}
	root := releaseCommandTree()
	var add func(c *cobra.Command)
	add = func(c *cobra.Command) {
		if d := strings.TrimSpace(details[c.CommandPath()]); d != "" {
			c.Long = strings.TrimSpace(c.Long) + "\n\n" + d
		}
		for _, sub := range c.Commands() {
			add(sub)
		}
	}
	add(root)
	return doc.GenManTree(root, &doc.GenManHeader{
		Title: "ZBRECOVER", Section: "1", Source: "zbrecover", Manual: "zbrecover manual", Date: &manDate,
	}, dir)
}

// referenceHeading starts the runbook's reference part; each command's section in it is a
// "### zbrecover …" heading (the command path, in backquotes or not).
const referenceHeading = "## Reference"

// ReferenceSections returns the sections of the runbook's reference part, by command path
// ("zbrecover", "zbrecover reload"): the text under each "### zbrecover …" heading, up to the
// next heading of its level or above.
func ReferenceSections(runbook []byte) map[string]string {
	out := map[string]string{}
	in, cmd := false, ""
	var body []string
	flush := func() {
		if cmd != "" {
			out[cmd] = strings.TrimSpace(strings.Join(body, "\n"))
		}
		cmd, body = "", nil
	}
	fence := false
	for _, line := range strings.Split(string(runbook), "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		switch {
		case fence || !strings.HasPrefix(line, "#"):
			if cmd != "" {
				body = append(body, line)
			}
		case strings.HasPrefix(line, "## "):
			flush()
			in = strings.HasPrefix(line, referenceHeading)
		case strings.HasPrefix(line, "### "):
			flush()
			if name := strings.Trim(strings.TrimPrefix(line, "### "), "` "); in && strings.HasPrefix(name, "zbrecover") {
				cmd = name
			}
		default:
			if cmd != "" {
				body = append(body, line)
			}
		}
	}
	flush()
	return out
}

func writeCommandDoc(b *bytes.Buffer, c *cobra.Command) {
	if c.Hidden || (c.Name() == "help") {
		return
	}
	if c.Runnable() || !c.HasParent() {
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
		if sub.Name() == "completion" && !c.HasParent() {
			fmt.Fprintf(b, "\n## %s\n\n%s\n", sub.CommandPath(), sub.Short)
			continue
		}
		writeCommandDoc(b, sub)
	}
}
