package cmd

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/internal/iostreams"
)

// TestEveryCommandHasExampleAndExitCodes: the help of every command a user can run shows at
// least one example and the exit codes it can return, 0, 1, 2, 130 and 143 among them.
func TestEveryCommandHasExampleAndExitCodes(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(io))
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			// help and cobra's completion scripts are cobra's own commands.
			if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			walk(sub)
		}
		if !c.Runnable() {
			return
		}
		n++
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s: no example", c.CommandPath())
		}
		i := strings.Index(c.Long, "Exit status:\n")
		if i < 0 {
			t.Errorf("%s: no exit status in its help", c.CommandPath())
			return
		}
		for _, code := range []string{"  0 ", "  1 ", "  2 ", "  130 ", "  143 "} {
			if !strings.Contains(c.Long[i:], "\n"+code) {
				t.Errorf("%s: exit status lacks %q:\n%s", c.CommandPath(), code, c.Long[i:])
			}
		}
	}
	walk(root)
	if n < 10 {
		t.Errorf("only %d runnable commands seen", n)
	}
}
