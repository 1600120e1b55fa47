//go:build demo

package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/demo"
	"github.com/zbrecover/zbrecover/internal/iostreams"
)

func init() {
	extraCommands = append(extraCommands, func(f *Factory) *cobra.Command { return NewCmdDemo(f, nil) })
}

// DemoOptions are the inputs of `zbrecover demo`.
type DemoOptions struct {
	F *Factory
	// Dir is where the example is written; "" means a new temporary directory, removed at
	// the end unless Keep.
	Dir   string
	Files int
	Keep  bool
	// Inherited are the global flags given to demo (as --name=value), passed on to every
	// command it runs.
	Inherited []string
}

// NewCmdDemo returns `zbrecover demo`, compiled in only with the demo build tag. runF replaces
// the run function in tests.
func NewCmdDemo(f *Factory, runF func(context.Context, *DemoOptions) error) *cobra.Command {
	o := &DemoOptions{F: f}
	c := &cobra.Command{
		Use:   "demo",
		Short: "Run the recovery on a generated local example (no cloud account needed)",
		Long: `Demo writes a local example and runs the recovery commands on it, in-process, exactly as
they run from the command line, showing their real output.

The example is the storage root of the Delta table ` + demo.Table + `: a Delta log whose
newest version renamed a column and changed a type (the breaking change), and the fallback
Parquet files Zerobus Ingest parked under ` + inspect.FallbackPrefix + ` in two producer
schemas over three date folders, with one corrupt file and two hidden objects. The data is
generated from a fixed seed: every run writes the same files.

The demo runs schema, inspect, inspect --output json and preview, and explains their exit
codes: inspect reports the corrupt file (5) and, where it diffs against the table, the
blocking schema (3). Those are the findings the example is built to show, so the demo exits 0.
Reload, verify and cleanup need a SQL warehouse: this demo says what they would do and does not
run them; ` + "`zbrecover demo serve`" + ` starts a local workspace (SQL warehouse, Unity Catalog,
volumes) to run them against.

Without --dir the example goes to a new temporary directory that is removed at the end
(unless --keep). With --dir it is written to DIR/orders (which must not exist or be empty)
and kept.
` + exitCodesHelp,
		Example: `  zbrecover demo
  zbrecover demo --files 500 --keep
  zbrecover demo --dir ./example`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, _ []string) error {
			if f.Global.JSON() {
				return FlagErrorf("the demo prints text only; run the commands it shows with --output json")
			}
			if o.Files < demo.MinFiles || o.Files > demo.MaxFiles {
				return FlagErrorf("--files must be between %d and %d, not %d", demo.MinFiles, demo.MaxFiles, o.Files)
			}
			o.Inherited = nil
			c.InheritedFlags().VisitAll(func(fl *pflag.Flag) {
				switch {
				case !fl.Changed || fl.Name == "output":
				case fl.Value.Type() == "bool" && fl.Value.String() == "true":
					o.Inherited = append(o.Inherited, "--"+fl.Name)
				default:
					o.Inherited = append(o.Inherited, "--"+fl.Name+"="+fl.Value.String())
				}
			})
			if runF != nil {
				return runF(c.Context(), o)
			}
			return demoRun(c.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.Dir, "dir", "", "write the example to DIR/orders and keep it (default: a temporary directory)")
	fl.IntVar(&o.Files, "files", demo.DefaultFiles, "number of fallback Parquet files to generate")
	fl.BoolVar(&o.Keep, "keep", false, "keep the temporary directory at the end")
	c.AddCommand(newCmdDemoServe(f))
	return c
}

func demoRun(ctx context.Context, o *DemoOptions) (err error) {
	f := o.F
	out := f.IO.Out
	dir, keep := o.Dir, o.Keep || o.Dir != ""
	if dir == "" {
		if dir, err = os.MkdirTemp("", "zbrecover-demo-"); err != nil {
			return err
		}
	}
	if !keep {
		defer func() {
			if rmErr := os.RemoveAll(dir); rmErr != nil && err == nil {
				err = fmt.Errorf("remove the example: %w", rmErr)
			}
		}()
	}

	fmt.Fprintf(out, "zbrecover demo: the recovery of %s on a generated local example.\n", demo.Table)
	fmt.Fprintf(out, "No cloud account is used: the table root is a local directory.\n\n")
	fmt.Fprintf(f.IO.ErrOut, "Writing %d fallback files and a Delta log under %s …\n", o.Files, dir)
	ex, err := demo.Build(ctx, filepath.Join(dir, "orders"), demo.Options{Files: o.Files})
	if err != nil {
		return fmt.Errorf("build the example: %w", err)
	}
	root := ex.Root
	fmt.Fprintf(out, "Table root: %s\n", root)
	fmt.Fprintf(out, "Wrote %d fallback files (%d rows in the readable ones, %s) and a Delta log with %d versions in %.1fs.\n\n",
		ex.Files, ex.Rows, inspect.HumanBytes(ex.Bytes), ex.TableVersion+1, ex.Took.Seconds())
	if err := ex.WriteStory(out); err != nil {
		return err
	}

	d := &demoSession{o: o, ctx: ctx}

	d.note("The table as it is now, read from its Delta log (no warehouse needed):")
	if _, err := d.step(nil, []int{ExitOK}, "schema", root); err != nil {
		return err
	}

	d.note("What Zerobus parked: files, rows, schema groups and unreadable files:")
	inspectCode, err := d.step(nil, []int{ExitOK, ExitSchema, ExitPartial}, "inspect", root)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "[exit status %d: %s]\n", inspectCode, exitMeaning(inspectCode))

	d.note("The same report as JSON, for scripts (summarised here):")
	var inspectJSON bytes.Buffer
	if _, err := d.step(&inspectJSON, []int{ExitOK, ExitSchema, ExitPartial}, "inspect", root, "--output", "json"); err != nil {
		return err
	}
	sum, err := demo.Summarize(inspectJSON.Bytes())
	if err != nil {
		return err
	}
	if err := sum.WriteText(out); err != nil {
		return err
	}

	for _, g := range sum.Groups {
		d.note(fmt.Sprintf("The first rows of schema group %s (%d files):", g.SchemaID, g.Files))
		if _, err := d.step(nil, []int{ExitOK}, "preview", root, "--group", g.SchemaID, "-n", "3"); err != nil {
			return err
		}
	}

	writeDemoExitCodes(out, inspectCode, sum)
	writeDemoNextSteps(out, ex, sum)

	if keep {
		fmt.Fprintf(out, "\nThe example stays in %s: run the commands above on it yourself.\n", dir)
	} else {
		fmt.Fprintf(out, "\nThe example in %s is removed now (--keep keeps it).\n", dir)
	}
	return nil
}

// demoSession runs zbrecover commands in-process for the demo, through Run, as the command
// line does.
type demoSession struct {
	o   *DemoOptions
	ctx context.Context
}

func (d *demoSession) note(s string) {
	fmt.Fprintf(d.o.F.IO.Out, "\n# %s\n", s)
}

// step prints the command line, runs it and returns its exit code. Its standard output goes
// to capture when set (and is then not shown), to the demo's output otherwise; its errors
// and progress go to the demo's stderr. An exit code not in want ends the demo.
func (d *demoSession) step(capture *bytes.Buffer, want []int, args ...string) (int, error) {
	f := d.o.F
	args = append(args, d.o.Inherited...)
	fmt.Fprintf(f.IO.Out, "$ zbrecover %s\n", shellJoin(args))
	var out io.Writer = f.IO.Out
	if capture != nil {
		out = capture
	}
	code := Run(d.ctx, d.child(out), args)
	if d.ctx.Err() != nil {
		return code, d.ctx.Err()
	}
	for _, w := range want {
		if code == w {
			return code, nil
		}
	}
	return code, fmt.Errorf("`zbrecover %s` exited with %d (%s); the demo stops here", shellJoin(args), code, exitMeaning(code))
}

// child returns a factory for one command run: the demo's streams (stdout replaced by out)
// and backends, with fresh global options.
func (d *demoSession) child(out io.Writer) *Factory {
	f := d.o.F
	ios := &iostreams.IOStreams{In: f.IO.In, Out: out, ErrOut: f.IO.ErrOut}
	ios.SetStdoutTTY(out == f.IO.Out && f.IO.IsStdoutTTY())
	ios.SetStderrTTY(f.IO.IsStderrTTY())
	c := *f
	c.IO = ios
	g := &GlobalOptions{}
	c.Global = g
	c.Logger = slog.New(newRedactingHandler(ios.ErrOut, func() int { return g.Verbose }, nil))
	return &c
}

// exitMeaning is the one-line meaning of an exit code in the demo's words.
func exitMeaning(code int) string {
	switch code {
	case ExitOK:
		return "ok"
	case ExitFailure:
		return "error"
	case ExitUsage:
		return "usage error"
	case ExitSchema:
		return "the files' schema blocks the load into the table as it is now"
	case ExitVerify:
		return "verification failed"
	case ExitPartial:
		return "partial: some files are unreadable (the upload that was cut short), the rest are reported"
	case ExitInterrupted:
		return "interrupted"
	}
	return "unknown"
}

func writeDemoExitCodes(w io.Writer, inspectCode int, sum *demo.Summary) {
	fmt.Fprintf(w, "\n# Exit codes\n")
	fmt.Fprintf(w, "inspect exited with %d. Scripts read the findings from the exit code:\n", inspectCode)
	fmt.Fprintf(w, "  3  the files' schema blocks the load (it wins over 5: the more urgent news)\n")
	fmt.Fprintf(w, "  5  partial: some files are unreadable; the report covers the rest\n")
	fmt.Fprintf(w, "Both findings are what this example is built to show, so the demo itself exits 0.\n")
}

func writeDemoNextSteps(w io.Writer, ex *demo.Example, sum *demo.Summary) {
	readable := ex.Files - len(sum.Unreadable)
	fmt.Fprintf(w, "\n# Next steps (not run here: reload, verify and cleanup need a SQL warehouse, such as the\n")
	fmt.Fprintf(w, "# local one `zbrecover demo serve --table %s=ROOT` starts; nothing was loaded or deleted)\n", ex.Table)
	confirm, ddl := false, false
	for _, g := range sum.Groups {
		confirm = confirm || g.Confirm
		ddl = ddl || len(g.DDL) > 0
	}
	switch {
	case sum.Blocking() && confirm:
		fmt.Fprintf(w, "1. Settle the blocking changes: confirm the guessed rename, then load each group\n"+
			"   through its projection above")
	case sum.Blocking():
		fmt.Fprintf(w, "1. Settle the blocking changes: load each group through its projection above")
	default:
		fmt.Fprintf(w, "1. Nothing blocks the load: the groups load as they are or through their projection")
	}
	if ddl {
		fmt.Fprintf(w, ", or change the\n   table first (the ALTER TABLE statements above)")
	}
	fmt.Fprintf(w, ".\n")
	fmt.Fprintf(w, "2. zbrecover reload %s --rename … (--stage-to /Volumes/… where Unity Catalog refuses the path)\n", ex.Table)
	fmt.Fprintf(w, "   runs COPY INTO %s … VALIDATE ALL as a preflight, then\n", ex.Table)
	fmt.Fprintf(w, "   COPY INTO with mergeSchema = false in batches of at most 1000 files, journaling each\n")
	fmt.Fprintf(w, "   batch, and check the inserted rows against the %d rows the footers of the %d\n", sum.Totals.Rows, readable)
	fmt.Fprintf(w, "   readable files promise.\n")
	fmt.Fprintf(w, "3. zbrecover verify re-checks the counts against the table history (--key COL: by key).\n")
	fmt.Fprintf(w, "4. zbrecover cleanup --yes deletes exactly the files a verified reload loaded; the\n")
	fmt.Fprintf(w, "   unreadable file is not loaded and stays where it is for a person to look at.\n")
}

// shellJoin renders args as a shell command line, quoting the arguments that need it.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = shellQuote(a)
	}
	return strings.Join(out, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
