package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// buildInfo is what the binary knows of its build: the release version and, when it was
// built from a git checkout, the commit, the commit's time and whether the tree had
// uncommitted changes (runtime/debug build settings vcs.*).
type buildInfo struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Time     string `json:"commit_time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// readBuildInfo reads the version (-ldflags -X, else the module version of `go install
// …@v1.2.3`, else "dev") and the vcs settings of the binary.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: Version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if b.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		b.Version = info.Main.Version
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the one-line form: "v1.2.3 (commit 0123456789ab, modified, 2026-01-02T03:04:05Z;
// go1.26, linux/amd64)".
func (b buildInfo) String() string {
	var parts []string
	if b.Commit != "" {
		c := "commit " + shortCommit(b.Commit)
		if b.Modified {
			c += ", modified"
		}
		if b.Time != "" {
			c += ", " + b.Time
		}
		parts = append(parts, c)
	}
	parts = append(parts, b.Go+", "+b.Platform)
	return b.Version + " (" + strings.Join(parts, "; ") + ")"
}

// short is the version and commit alone, for headers: "dev+0123456789ab-modified".
func (b buildInfo) short() string {
	s := b.Version
	if b.Commit != "" {
		s += "+" + shortCommit(b.Commit)
		if b.Modified {
			s += "-modified"
		}
	}
	return s
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// NewCmdVersion returns `zbrecover version`.
func NewCmdVersion(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, and the commit it was built from",
		Long: `Version prints the release version and, for a build from a git checkout, the commit, whether
the tree had uncommitted changes and the commit's time, then the Go version and platform.

` + exitHelp(),
		Example: `  $ zbrecover version
  $ zbrecover --version
  $ zbrecover version -o json`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			b := readBuildInfo()
			if f.Global.JSON() {
				return printJSON(f, b)
			}
			_, err := fmt.Fprintf(f.IO.Out, "zbrecover %s\n", b)
			return err
		},
	}
}
