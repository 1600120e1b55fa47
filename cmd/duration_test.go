package cmd

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/internal/textfmt"
)

// TestDurationFlagsTakeDaysAndWeeks: every duration flag reads days and weeks (3d, 2w, 1d12h)
// besides Go's units, and a bad one is a usage error that says what is accepted.
func TestDurationFlagsTakeDaysAndWeeks(t *testing.T) {
	for in, want := range map[string]time.Duration{"3d": 72 * time.Hour, "2w": 336 * time.Hour, "1d12h": 36 * time.Hour, "90m": 90 * time.Minute} {
		io, _, _, _ := iostreams.Test()
		var cl *CleanupOptions
		c := NewCmdCleanup(NewFactory(io), func(_ context.Context, o *CleanupOptions) error { cl = o; return nil })
		c.SetArgs([]string{"main.sales.orders", "--min-age", in})
		if err := c.Execute(); err != nil || cl == nil || cl.MinAge != want {
			t.Errorf("cleanup --min-age %s: %+v, %v; want %v", in, cl, err, want)
		}
		var sc *ScanOptions
		c = NewCmdScan(NewFactory(io), func(_ context.Context, o *ScanOptions) error { sc = o; return nil })
		c.SetArgs([]string{"main", "--min-age", in})
		if err := c.Execute(); err != nil || sc == nil || sc.MinAge != want {
			t.Errorf("scan --min-age %s: %+v, %v; want %v", in, sc, err, want)
		}
	}
	for _, args := range [][]string{
		{"cleanup", "main.sales.orders", "--min-age", "3x"},
		{"cleanup", "main.sales.orders", "--min-age", "-1d"},
		{"scan", "main", "--min-age", "3 days"},
	} {
		code, _, errOut := run(t, args...)
		if code != ExitUsage || !strings.Contains(errOut, "--min-age") || !strings.Contains(errOut, "invalid duration") {
			t.Errorf("%q: exit %d, stderr %q; want %d naming --min-age and the duration", args, code, errOut, ExitUsage)
		}
	}
	for _, cmd := range []string{"cleanup", "scan"} {
		_, out, _ := run(t, cmd, "--help")
		if !strings.Contains(out, "3d") && !strings.Contains(out, "1d") {
			t.Errorf("%s --help does not say --min-age takes days:\n%s", cmd, out)
		}
	}
}

// TestEveryDurationFlagIsADurationFlag: each flag of type duration, of every command (watch,
// demo serve and the global ones included), reads days and weeks: it is a textfmt.DurationFlag,
// not pflag's, whose "3d" is an error.
func TestEveryDurationFlagIsADurationFlag(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	root := NewRootCmd(NewFactory(io))
	seen := 0
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(fl *pflag.Flag) {
				if fl.Value.Type() != "duration" {
					return
				}
				seen++
				if _, ok := fl.Value.(textfmt.DurationFlag); !ok {
					t.Errorf("%s --%s is a %T, not a textfmt.DurationFlag: it refuses 3d", c.CommandPath(), fl.Name, fl.Value)
				}
			})
		}
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(root)
	if seen < 7 {
		t.Errorf("%d duration flags found; watch alone has 5", seen)
	}
}
