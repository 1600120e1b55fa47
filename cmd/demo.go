//go:build demo

package cmd

import (
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, NewCmdDemo) }

// NewCmdDemo returns `zbrecover demo`, compiled in only with the demo build tag.
func NewCmdDemo(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Run the recovery on a generated local example (no cloud account needed)",
		Args:  exactArgs(0),
		RunE: func(c *cobra.Command, _ []string) error {
			root := c.Root()
			root.SetArgs([]string{"--help"})
			return root.Help()
		},
	}
}
