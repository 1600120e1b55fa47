//go:build demo

package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/zbrecover/zbrecover/internal/demo"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/internal/textfmt"
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
	// StopBefore, "reload", stops the demo before its first reload and keeps the example
	// and the local workspace for the operator to recover by hand (until Ctrl-C).
	StopBefore string
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
		Long: `Demo runs the whole recovery on a generated local example, with the real commands and their
real output, and no cloud account: a managed Delta table with column mapping and 3000
fallback files in two producer schemas (one corrupt), in a local Databricks workspace on
127.0.0.1 (what zbrecover demo serve starts). It makes the breaking change, then runs scan,
schema, inspect, preview, the fix, doctor, reload (refused, then staged to a volume),
verify --key, cleanup and history. Nothing is left running; the example is removed at the
end unless --dir or --keep.

` + exitHelp(exitLine{ExitFailure, "a step did not answer as expected (the demo says which)"}),
		Example: `  # The whole recovery, in about a minute
  $ zbrecover demo
  # A smaller example, kept in ./demo-example
  $ zbrecover demo --files 300 --dir ./demo-example
  # Then practise by hand on the kept table
  $ zbrecover demo serve --table main.sales.orders=./demo-example/orders`,
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
	fl.StringVar(&o.StopBefore, "stop-before", "", "stop before this step (reload) and keep the example and the local workspace running, to recover it by hand")
	c.AddCommand(newCmdDemoServe(f))
	return c
}

func demoRun(ctx context.Context, o *DemoOptions) (err error) {
	f := o.F
	out := f.IO.Out
	if o.StopBefore != "" && o.StopBefore != "reload" {
		return FlagErrorf("--stop-before %q: the demo stops before reload only (--stop-before reload)", o.StopBefore)
	}
	dir, keep := o.Dir, o.Keep || o.Dir != "" || o.StopBefore != ""
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

	fmt.Fprintf(out, "zbrecover demo: the whole recovery of %s on a generated local example.\n", demo.Table)
	fmt.Fprintf(out, "No cloud account is used: the table root is a local directory and the Databricks workspace\n")
	fmt.Fprintf(out, "(SQL warehouse, Unity Catalog, volumes) is a local one on 127.0.0.1, as `zbrecover demo serve`\n")
	fmt.Fprintf(out, "starts it.\n\n")
	fmt.Fprintf(f.IO.ErrOut, "Writing %s and a Delta log under %s …\n", textfmt.Plural(o.Files, "fallback file"), dir)
	ex, err := demo.Build(ctx, filepath.Join(dir, "orders"), demo.Options{Files: o.Files})
	if err != nil {
		return fmt.Errorf("build the example: %w", err)
	}
	root := ex.Root
	fmt.Fprintf(out, "Table root: %s\n", root)
	fmt.Fprintf(out, "Wrote %s (%s in the readable ones, %s) and a Delta log with %s in %.1fs.\n\n",
		textfmt.Plural(ex.Files, "fallback file"), textfmt.Plural(ex.Rows, "row"), textfmt.Bytes(ex.Bytes), textfmt.Plural(ex.TableVersion+1, "version"), ex.Took.Seconds())
	if err := ex.WriteStory(out); err != nil {
		return err
	}

	// The local workspace, with the example as the managed table.
	wsOpts := workspace.Options{}
	if p := os.Getenv("ZBRECOVER_DEMO_STATEMENT_LOG"); p != "" {
		lf, err := os.Create(p)
		if err != nil {
			return err
		}
		defer lf.Close()
		wsOpts.StatementLog = lf
	}
	ws, err := workspace.Start(wsOpts)
	if err != nil {
		return fmt.Errorf("start the local workspace: %w", err)
	}
	defer ws.Close()
	if err := ws.RegisterTable(ctx, demo.Table, root, true); err != nil {
		return fmt.Errorf("register %s: %w", demo.Table, err)
	}
	state := filepath.Join(dir, "state")
	restore, err := demoEnv(append(ws.Env(),
		"XDG_STATE_HOME="+state,
		// Only the local workspace: no profile of the machine's ~/.databrickscfg.
		"DATABRICKS_CONFIG_FILE="+filepath.Join(dir, "databrickscfg-none"),
		"DATABRICKS_CONFIG_PROFILE=",
		// The local Files API answers as fast as the disk: the client's request limit (200 a
		// second, for a real workspace) would be most of the demo's time.
		"DATABRICKS_RATE_LIMIT=5000",
	))
	if err != nil {
		return err
	}
	defer restore()
	fmt.Fprintf(out, "\nThe local workspace serves at %s (SQL warehouse %q, Unity Catalog, volumes);\n", ws.URL(), ws.WarehouseID())
	fmt.Fprintf(out, "the commands below reach it through DATABRICKS_HOST, DATABRICKS_TOKEN and DATABRICKS_WAREHOUSE_ID.\n")
	fmt.Fprintf(out, "%s is registered in it as a MANAGED table at the table root: Unity Catalog refuses\n", demo.Table)
	fmt.Fprintf(out, "path reads inside managed storage (LOCATION_OVERLAP), as it may in a real workspace.\n")

	d := &demoSession{o: o, ctx: ctx, dir: dir, keep: keep}
	exec := func(stmt string) error {
		fmt.Fprintf(out, "sql> %s;\n", demoSQLShort(stmt))
		if _, err := ws.Warehouse().Engine().Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", demoSQLShort(stmt), err)
		}
		return nil
	}

	d.note("The breaking change, made by the table's owner on the SQL warehouse while Zerobus was sending:")
	for _, stmt := range demo.BreakingChange {
		if err := exec(stmt); err != nil {
			return err
		}
	}
	insert, published, publishedFrom, err := ex.AlreadyPublished(3)
	if err != nil {
		return err
	}
	d.note(fmt.Sprintf("Delivery is at least once: Zerobus had also published the %s of %s of the parked files:",
		textfmt.Plural(published, "record"), textfmt.Count(len(publishedFrom))))
	if err := exec(insert); err != nil {
		return err
	}

	d.note("Rows are missing downstream. Which tables hold parked records? One listing of each table's\n" +
		"# fallback folder, no file read (--exit-code: 6 when some table holds parked files, for a monitor):")
	scanCode, err := d.step(nil, []int{ExitParked}, "scan", "main", "--exit-code")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "[exit status %d: %s]\n", scanCode, exitMeaning(scanCode))

	d.note("The table as it is now, from Unity Catalog and its Delta log:")
	if _, err := d.step(nil, []int{ExitOK}, "schema", demo.Table); err != nil {
		return err
	}

	d.note("What Zerobus parked, diffed against the table (each group names the table version it matches):")
	inspectCode, err := d.step(nil, []int{ExitSchema, ExitPartial}, "inspect", demo.Table)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "[exit status %d: %s]\n", inspectCode, exitMeaning(inspectCode))

	var inspectJSON bytes.Buffer
	if _, err := d.quiet(&inspectJSON, []int{ExitSchema, ExitPartial}, "inspect", demo.Table, "--output", "json"); err != nil {
		return err
	}
	sum, err := demo.Summarize(inspectJSON.Bytes())
	if err != nil {
		return err
	}
	if len(sum.Groups) > 0 {
		g := sum.Groups[0]
		d.note(fmt.Sprintf("The first rows of schema group %s (%s):", g.SchemaID, textfmt.Plural(g.Files, "file")))
		if _, err := d.step(nil, []int{ExitOK}, "preview", demo.Table, "--group", g.SchemaID, "-n", "3"); err != nil {
			return err
		}
	}

	d.note("The fix, as inspect suggests it: re-add the dropped column, so that the parked records keep\n" +
		"# their status (new records fit the table again too); the rename and the wider decimal are\n" +
		"# handled by the load (--rename, and a lossless CAST):")
	fixes := sum.DDL()
	if len(fixes) == 0 {
		return fmt.Errorf("inspect suggested no ALTER TABLE for the dropped column; the demo stops here")
	}
	for _, stmt := range fixes {
		if err := exec(stmt); err != nil {
			return err
		}
	}

	stage := "/Volumes/main/sales/staging/orders-recovery"
	d.note("Before loading, doctor checks what each step will need (identity, warehouse, privileges,\n" +
		"# credentials, read and delete access, and whether the warehouse may read the fallback folder):")
	if _, err := d.step(nil, []int{ExitOK, ExitFailure}, "doctor", demo.Table); err != nil {
		return err
	}
	d.note("With a volume to stage to, nothing stands in the way:")
	if _, err := d.step(nil, []int{ExitOK}, "doctor", demo.Table, "--stage-to", stage); err != nil {
		return err
	}

	if o.StopBefore == "reload" {
		return demoPractice(ctx, out, ws.Env(), dir, state, stage)
	}
	reload := []string{"reload", demo.Table, "--rename", "customer_id=customer_key", "--yes"}
	d.note("Reload straight from the fallback folder: the warehouse refuses to read the managed path:")
	code, err := d.step(nil, []int{ExitFailure}, reload...)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "[exit status %d: %s; nothing was loaded]\n", code, exitMeaning(code))

	d.note("Reload staged to a Unity Catalog volume: copies checked, then COPY INTO from the copies:")
	if _, err := d.step(nil, []int{ExitOK, ExitPartial}, append(reload, "--stage-to", stage)...); err != nil {
		return err
	}

	d.note("Verify again, by key: every key of the files must be in the table; keys twice are reported:")
	if _, err := d.step(nil, []int{ExitOK}, "verify", demo.Table, "--key", "order_id"); err != nil {
		return err
	}
	res, err := ws.Warehouse().Engine().Exec(ctx, "SELECT count(*), count(DISTINCT order_id) FROM "+demo.Table)
	if err != nil {
		return fmt.Errorf("count the table's rows: %w", err)
	}
	if len(res.Rows) == 1 && len(res.Rows[0]) == 2 {
		fmt.Fprintf(out, "sql> SELECT count(*), count(DISTINCT order_id) FROM %s;\n%v rows, %v distinct order_id\n", demo.Table, res.Rows[0][0], res.Rows[0][1])
	}
	writeDemoDuplicates(out, published, publishedFrom)

	d.note("Cleanup: first the plan (nothing is deleted), then the deletion of exactly the verified files:")
	var plan bytes.Buffer
	if _, err := d.step(&plan, []int{ExitOK}, "cleanup", demo.Table, "--dry-run"); err != nil {
		return err
	}
	writeHead(out, plan.String(), 4)
	if _, err := d.step(nil, []int{ExitOK}, "cleanup", demo.Table, "--yes"); err != nil {
		return err
	}

	d.note("The journal: the run, its batches and every file's fate:")
	if _, err := d.step(nil, []int{ExitOK}, "history", demo.Table); err != nil {
		return err
	}

	d.note("The whole recovery, from the journal, for the incident ticket:")
	summary := filepath.Join(dir, "incident-summary.md")
	if _, err := d.step(nil, []int{ExitOK}, "history", demo.Table, "--summary", summary); err != nil {
		return err
	}
	if md, err := os.ReadFile(summary); err == nil {
		out.Write(md)
	}

	writeDemoEnd(out, ex, sum, state)
	if keep {
		fmt.Fprintf(out, "\nThe example stays in %s (the table root in orders/, the journal in state/).\n", dir)
		fmt.Fprintf(out, "The local workspace stops now; `zbrecover demo serve --table %s=%s`\n", demo.Table, root)
		fmt.Fprintf(out, "serves the table again (its rows start empty there).\n")
	} else {
		fmt.Fprintf(out, "\nThe example in %s (table root, journal) is removed now (--keep keeps it),\n", dir)
		fmt.Fprintf(out, "and the local workspace stops: nothing is left running.\n")
	}
	return nil
}

// writeHead writes the first n lines of text and a count of the others.
func writeHead(w io.Writer, text string, n int) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	for i, l := range lines {
		if i == n {
			fmt.Fprintf(w, "… (%s more %s like these)\n", textfmt.Count(len(lines)-n), textfmt.Noun(len(lines)-n, "line"))
			return
		}
		fmt.Fprint(w, l)
	}
}

// demoEnv sets the environment variables kv (NAME=value; an empty value unsets) for the
// commands the demo runs in-process, and returns a function that restores them.
func demoEnv(kv []string) (func(), error) {
	type saved struct {
		name, value string
		set         bool
	}
	var old []saved
	restore := func() {
		for i := len(old) - 1; i >= 0; i-- {
			if old[i].set {
				os.Setenv(old[i].name, old[i].value)
			} else {
				os.Unsetenv(old[i].name)
			}
		}
	}
	for _, e := range kv {
		k, v, _ := strings.Cut(e, "=")
		prev, set := os.LookupEnv(k)
		old = append(old, saved{k, prev, set})
		var err error
		if v == "" {
			err = os.Unsetenv(k)
		} else {
			err = os.Setenv(k, v)
		}
		if err != nil {
			restore()
			return nil, err
		}
	}
	return restore, nil
}

// demoSQLShort shortens a long statement (the INSERT of published records) for display.
func demoSQLShort(stmt string) string {
	if len(stmt) <= 160 {
		return stmt
	}
	if i := strings.Index(stmt, " VALUES "); i > 0 {
		end := strings.Index(stmt[i:], "), (")
		if end > 0 {
			return stmt[:i+end+1] + ", … (" + textfmt.Plural(strings.Count(stmt, "), ("), "more row") + ")"
		}
	}
	return stmt[:157] + "…"
}

func writeDemoDuplicates(w io.Writer, published int, from []string) {
	fmt.Fprintf(w, "\n# The duplicates\n")
	fmt.Fprintf(w, "The keys found twice are the %s of %s that Zerobus both published and\n", textfmt.Plural(published, "record"), textfmt.Plural(len(from), "file"))
	fmt.Fprintf(w, "parked. COPY INTO skips files it loaded, not rows, so a plain reload keeps such records\n")
	fmt.Fprintf(w, "twice, and verify --key reports them. To load without them, reload with a key instead:\n")
	fmt.Fprintf(w, "  zbrecover reload %s --rename customer_id=customer_key --stage-to … --dedupe-key order_id\n", demo.Table)
	fmt.Fprintf(w, "which loads the batches into a staging table and inserts them with one MERGE … WHEN NOT\n")
	fmt.Fprintf(w, "MATCHED on order_id, so keys already in the table are not inserted again. zbrecover never\n")
	fmt.Fprintf(w, "deletes rows: removing duplicates already in a table is a change to review and make by hand.\n")
}

func writeDemoEnd(w io.Writer, ex *demo.Example, sum *demo.Summary, state string) {
	readable := ex.Files - len(sum.Unreadable)
	fmt.Fprintf(w, "\n# Done\n")
	fmt.Fprintf(w, "%s loaded once each (%s), verified against the footers and the\n",
		textfmt.Either(readable, "The one readable file was", textfmt.Plural(readable, "readable file")+" were"), textfmt.Plural(sum.Totals.Rows, "row"))
	fmt.Fprintf(w, "table history, and deleted with their staged copies. The corrupt file was never loaded\n")
	fmt.Fprintf(w, "and is still in the fallback folder, for a person to look at. Exit codes: 0 ok, 1 error,\n")
	fmt.Fprintf(w, "2 usage, 3 schema blocks the load, 4 verification failed, 5 partial (unreadable files).\n")
	fmt.Fprintf(w, "The journal of the run is in %s.\n", filepath.Join(state, "zbrecover"))
}

// demoSession runs zbrecover commands in-process for the demo, through Run, as the command
// line does.
type demoSession struct {
	o   *DemoOptions
	ctx context.Context
	// dir holds the example; keep says whether it stays there after the demo.
	dir  string
	keep bool
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
	fmt.Fprintf(f.IO.Out, "$ zbrecover %s\n", textfmt.ShellJoin(args...))
	var out io.Writer = f.IO.Out
	if capture != nil {
		out = capture
	}
	code := Run(d.ctx, d.child(out), args)
	if d.ctx.Err() != nil {
		return code, d.stopped(args, code)
	}
	for _, w := range want {
		if code == w {
			return code, nil
		}
	}
	return code, fmt.Errorf("`zbrecover %s` exited with %d (%s); the demo stops here", textfmt.ShellJoin(args...), code, exitMeaning(code))
}

// quiet runs a command as step does, without printing its command line, its standard
// output going to capture.
func (d *demoSession) quiet(capture *bytes.Buffer, want []int, args ...string) (int, error) {
	args = append(args, d.o.Inherited...)
	c := d.child(capture)
	c.IO.ErrOut = io.Discard
	code := Run(d.ctx, c, args)
	if d.ctx.Err() != nil {
		return code, d.stopped(args, code)
	}
	if slices.Contains(want, code) {
		return code, nil
	}
	return code, fmt.Errorf("`zbrecover %s` exited with %d (%s); the demo stops here", textfmt.ShellJoin(args...), code, exitMeaning(code))
}

// stopped is the demo's one line when a signal cut a step short (the step prints none of its
// own): which step, and what is left of the example. Its code is the step's (130 or 143).
func (d *demoSession) stopped(args []string, code int) error {
	if code != ExitTerminated {
		code = ExitInterrupted
	}
	how := map[int]string{ExitInterrupted: "interrupted", ExitTerminated: "terminated"}[code]
	left := "the example is removed and nothing is left running"
	if d.keep {
		left = "the example stays in " + d.dir + " and nothing is left running"
	}
	return WithCode(code, fmt.Sprintf("%s: the demo stopped during `zbrecover %s`; %s. Run the demo again to see it whole.", how, textfmt.ShellJoin(args...), left))
}

// child returns a factory for one command run: the demo's streams (stdout replaced by out)
// and backends, with fresh global options; a step cut short by a signal prints no error of
// its own (stopped says it once).
func (d *demoSession) child(out io.Writer) *Factory {
	f := d.o.F
	ios := &iostreams.IOStreams{In: f.IO.In, Out: out, ErrOut: f.IO.ErrOut}
	ios.SetStdoutTTY(out == f.IO.Out && f.IO.IsStdoutTTY())
	ios.SetStderrTTY(f.IO.IsStderrTTY())
	// A factory of its own (fresh global options, status lines above its own bars, its own
	// workspace connection), over the demo's storage backends.
	c := NewFactory(ios)
	c.Registry = f.Registry
	c.NoDatabricks = f.NoDatabricks
	c.quietStop = true
	return c
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
	case ExitParked:
		return "parked fallback files found"
	case ExitInterrupted:
		return "interrupted"
	}
	return "unknown"
}

// demoPractice leaves the example unrecovered and the local workspace serving, for the
// operator to recover by hand as the runbook says ("Try it by hand"), until Ctrl-C.
func demoPractice(ctx context.Context, out io.Writer, env []string, dir, state, stage string) error {
	fmt.Fprintf(out, "\n# Stopped before the reload: the recovery is yours to finish, by hand, in another terminal.\n")
	fmt.Fprintf(out, "# Paste these settings there (the journal goes to %s):\n", filepath.Join(state, "zbrecover"))
	for _, kv := range append(env, "XDG_STATE_HOME="+state) {
		if k, v, ok := strings.Cut(kv, "="); ok && (strings.HasPrefix(k, "DATABRICKS_") || k == "XDG_STATE_HOME") {
			fmt.Fprintf(out, "export %s=%s\n", k, textfmt.Shell(v))
		}
	}
	fmt.Fprintf(out, "# then, for example:\n")
	for _, c := range []string{
		"zbrecover reload " + demo.Table + " --rename customer_id=customer_key --stage-to " + stage + " --dry-run",
		"zbrecover reload " + demo.Table + " --rename customer_id=customer_key --stage-to " + stage,
		"zbrecover verify " + demo.Table + " --key order_id",
		"zbrecover cleanup " + demo.Table,
		"zbrecover history " + demo.Table + " --summary recovery.md",
	} {
		fmt.Fprintf(out, "  %s\n", c)
	}
	fmt.Fprintf(out, "\nThe example stays in %s. The local workspace serves until Ctrl-C here.\n", dir)
	<-ctx.Done()
	fmt.Fprintf(out, "The local workspace stops: nothing is left running; the example stays in %s.\n", dir)
	return nil
}
