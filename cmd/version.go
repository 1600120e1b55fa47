package cmd

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// NewCmdVersion returns `zbrecover version`.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Long: `Version prints zbrecover's version, the Go version it was built with and the platform.
` + exitHelp(),
		Example: `  zbrecover version
  zbrecover version -o json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if f.Global.JSON() {
				return printJSON(f, map[string]string{"version": Version, "go": runtime.Version(),
					"platform": runtime.GOOS + "/" + runtime.GOARCH})
			}
			_, err := fmt.Fprintf(f.IO.Out, "zbrecover %s (%s, %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
