// Package cmd is zbrecover's command line: thin cobra commands that parse and validate flags,
// build their dependencies through a Factory, call a domain package and render its report as
// text or JSON. Exit codes are mapped in one place (ExitCode).
package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/internal/suggest"
	"github.com/zbrecover/zbrecover/internal/textfmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/iostreams"
)

// Main runs the command line with the process's arguments and streams and returns the exit
// status. The first SIGINT cancels the running command; the second exits at once.
func Main() int {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(inspect.DefaultMemoryLimit)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	io := iostreams.System()
	f := NewFactory(io)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		f.notice(fmt.Sprintf("%s received, stopping cleanly (send it again to exit at once)", signalName(s)))
		cancel(&signalError{sig: s})
		<-sigs
		os.Exit(signalExitCode(s))
	}()
	// Libraries that write to the standard logger (net/http, the SQL driver's transport) are
	// heard only at -vv, and redacted like every other log line.
	log.SetFlags(0)
	log.SetOutput(slog.NewLogLogger(f.Logger.Handler(), slog.LevelDebug).Writer())
	return Run(ctx, f, os.Args[1:])
}

// Run executes the command line args against f and returns the exit status. Errors are
// printed once, here: as text, or as {"error":…, "code":…} on stderr under --output json.
func Run(ctx context.Context, f *Factory, args []string) int {
	root := NewRootCmd(f)
	defer func() { _ = f.Databricks().Close() }()
	if args == nil {
		args = []string{}
	}
	root.SetArgs(args)
	f.args = args
	err := execute(ctx, root)
	code := exitStatus(ctx, f, args, err)
	if err != nil {
		f.logFile.line(slog.LevelError, err.Error())
	}
	f.logFile.line(slog.LevelInfo, fmt.Sprintf("exit status %d", code))
	_ = f.logFile.close()
	if err == nil {
		return ExitOK
	}
	if strings.HasPrefix(err.Error(), "unknown command ") {
		err = &FlagError{Err: err}
	}
	if f.quietStop && (code == ExitInterrupted || code == ExitTerminated) {
		return code
	}
	printError(ctx, f, err, code, commandPath(root, args))
	return code
}

// printError writes the error command ended with, the one way the process ends: as JSON
// with -o json, with the stack of a contained panic, and with the usage hint after a
// command-line error.
func printError(ctx context.Context, f *Factory, err error, code int, command string) {
	msg := redact.String(err.Error())
	var designed *ExitError
	switch {
	case (code == ExitInterrupted || code == ExitTerminated) && !errors.As(err, &designed) && (errors.Is(err, context.Canceled) || ctx.Err() != nil):
		// "…: context canceled" (or any failure after the signal) says only that the work was
		// cut: say what stopped and what to do. The chain stays in the log (-v, --log-file). A
		// command's own interrupted message (an ExitError) is kept.
		f.Logger.Info("stopped by the signal", "during", msg)
		msg = stoppedMessage(code, command)
	case code == ExitInterrupted && !strings.HasPrefix(msg, "interrupted"):
		msg = "interrupted: " + msg
	case code == ExitTerminated && !strings.HasPrefix(msg, "terminated"):
		msg = "terminated: " + msg
	}
	// Flags are parsed before argument checks fail, PersistentPreRunE only after: an error
	// of the command line itself is JSON when -o json was given.
	if f.isJSONStderr() || f.Global.JSON() {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // commands and SQL in messages hold < and >
		_ = enc.Encode(struct {
			SchemaVersion int    `json:"schema_version"`
			Error         string `json:"error"`
			Code          int    `json:"code"`
		}{jsonout.SchemaVersion, msg, code})
		f.IO.ErrOut.Write(b.Bytes())
		return
	}
	var pe *panicError
	if errors.As(err, &pe) {
		fmt.Fprintln(f.IO.ErrOut, "Error: "+msg)
		fmt.Fprintln(f.IO.ErrOut, "Stack trace, for the report:")
		fmt.Fprint(f.IO.ErrOut, redact.String(string(pe.stack)))
		return
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Msg != "" {
			fmt.Fprintln(f.IO.ErrOut, msg)
		}
		return
	}
	fmt.Fprintln(f.IO.ErrOut, "Error: "+msg)
	if isFlagUsage(err) {
		fmt.Fprintln(f.IO.ErrOut, "Run with --help for usage.")
	}
}

// exitStatus is the process exit status for a command's outcome err under ctx. An unknown
// command is a usage error (cobra reports it before any flag is read; it is printed as JSON
// when the command line asked for JSON); a failure after cancellation is an interruption, by
// the signal that cancelled.
func exitStatus(ctx context.Context, f *Factory, args []string, err error) int {
	if err == nil {
		return ExitOK
	}
	if strings.HasPrefix(err.Error(), "unknown command ") {
		err = &FlagError{Err: err}
		if wantsJSON(args) {
			f.Global.Output = "json"
		}
	}
	code := ExitCode(err)
	if ctx.Err() != nil && code == ExitFailure {
		code = ExitInterrupted
	}
	var se *signalError
	if code == ExitInterrupted && errors.As(context.Cause(ctx), &se) {
		code = signalExitCode(se.sig)
	}
	return code
}

// commandPath is the command args run, without the program's name ("reload", "demo serve"),
// or "zbrecover" when args name none.
func commandPath(root *cobra.Command, args []string) string {
	c, _, err := root.Find(args)
	if err != nil || c == nil || c == root {
		return root.Name()
	}
	return strings.TrimPrefix(c.CommandPath(), root.Name()+" ")
}

// stoppedMessage is the one line printed when a signal cut a command short (code 130 or 143):
// what stopped, that it stopped cleanly, and what running it again does. reload and cleanup
// journal what they did, so a re-run continues; verify records only what it proved; the other
// commands change nothing.
func stoppedMessage(code int, command string) string {
	how := "interrupted"
	if code == ExitTerminated {
		how = "terminated"
	}
	var again string
	switch command {
	case "reload":
		again = "every statement sent and every copy staged is journaled: run the same command again to continue the run (it loads no file twice)"
	case "cleanup":
		again = "every delete done is journaled: run the same command again to finish (it re-checks every file)"
	case "verify":
		again = "what it proved so far is journaled: run it again for the whole check"
	case "demo":
		again = "nothing is left running; run the demo again to see it whole"
	case "doctor":
		again = "it wrote nothing but its delete probe's own object under _zerobus/ (.zbrecover-doctor-probe-…), which a cut delete check may leave: run it again for the whole report"
	default:
		again = "it changed nothing: run it again for the whole answer"
	}
	return fmt.Sprintf("%s: %s stopped before it finished; %s", how, command, again)
}

// wantsJSON reports whether args ask for JSON output (-o json, --output json, --output=json),
// for errors raised before flags are parsed.
func wantsJSON(args []string) bool {
	for i, a := range args {
		switch {
		case a == "--output=json" || a == "-ojson" || a == "-o=json":
			return true
		case (a == "-o" || a == "--output") && i+1 < len(args) && args[i+1] == "json":
			return true
		}
	}
	return false
}

// signalError is the cause of the root context's cancellation by a signal.
type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return signalName(e.sig) + " received" }

func signalName(s os.Signal) string {
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return "interrupt"
}

// signalExitCode is the shell's convention, 128 + the signal number: 130 for SIGINT, 143 for
// SIGTERM.
func signalExitCode(s os.Signal) int {
	if s == syscall.SIGTERM {
		return ExitTerminated
	}
	return ExitInterrupted
}

// panicError is a panic raised while a command ran, turned into an error so that its text goes
// through the same redaction and exit-code mapping as every other failure.
type panicError struct {
	val   any
	stack []byte
}

func (e *panicError) Error() string {
	return fmt.Sprintf("internal error (a bug in zbrecover or a library it uses; please report it): %v", e.val)
}

// execute runs the command tree, containing a panic of the command's goroutine: the runtime
// would print its value unredacted.
func execute(ctx context.Context, root *cobra.Command) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{val: r, stack: debug.Stack()}
		}
	}()
	return root.ExecuteContext(ctx)
}

// NewRootCmd builds a fresh command tree over f.
func NewRootCmd(f *Factory) *cobra.Command {
	g := f.Global
	root := &cobra.Command{
		Use:   "zbrecover",
		Short: "Recover Zerobus Ingest fallback Parquet files into their Delta table",
		Long: `zbrecover recovers the records Databricks Zerobus Ingest parked as Parquet files under
<table root>/_zerobus/table_rejected_parquets/ after a breaking schema change: scan finds the
tables, doctor checks access, inspect says what blocks the load, reload loads the files with
COPY INTO and checks each batch, verify re-checks, cleanup deletes what was proved loaded.
Every step is journaled: after a crash or Ctrl-C, run the same command again. The runbook
(docs/runbook.md) tells the recovery; zbrecover help environment lists the settings.

` + exitCodesHelp,
		Example: `  $ zbrecover scan main --exit-code
  $ zbrecover doctor main.sales.orders --stage-to /Volumes/main/sales/staging/orders
  $ zbrecover inspect main.sales.orders
  $ zbrecover reload main.sales.orders --stage-to /Volumes/main/sales/staging/orders --dry-run`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       readBuildInfo().String(),
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			f.setJSONStderr(g.JSON() || g.Output == "jsonl")
			switch {
			case g.Output == "jsonl" && c.Name() != "inspect" && c.Name() != "scan":
				return FlagErrorf("--output jsonl is for inspect and scan; use text or json")
			case g.Output != "text" && g.Output != "json" && g.Output != "jsonl":
				return FlagErrorf("--output must be text or json (or jsonl for inspect and scan), not %q", g.Output)
			}
			if g.Concurrency < 1 || g.Concurrency > 1024 {
				return FlagErrorf("--concurrency must be between 1 and 1024, not %d", g.Concurrency)
			}
			if g.LogFile != "" {
				if err := f.logFile.open(g.LogFile); err != nil {
					return err
				}
				f.Logger.Debug("start", "command", commandLine(f.args), "version", readBuildInfo().short())
			}
			return nil
		},
	}
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetIn(f.IO.In)
	root.SetVersionTemplate("zbrecover {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return &FlagError{Err: suggestFlag(c, err)} })

	pf := root.PersistentFlags()
	pf.StringVarP(&g.Output, "output", "o", "text", "output format: text or json (inspect and scan: also jsonl)")
	pf.IntVar(&g.Concurrency, "concurrency", 64, "requests in flight at once against storage")
	pf.CountVarP(&g.Verbose, "verbose", "v", "log what is done to stderr (-vv for more)")
	pf.BoolVar(&g.NoProgress, "no-progress", false, "never show progress bars")
	pf.StringVar(&g.LogFile, "log-file", "", "append every log line (as -vv, timestamped, secrets redacted) to this file")
	pf.StringVar(&g.S3Region, "s3-region", "", "S3 bucket region (default: discovered)")
	pf.StringVar(&g.S3Endpoint, "s3-endpoint", "", "S3-compatible endpoint URL, path-style (default $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL)")
	pf.StringVar(&g.GCSEndpoint, "gcs-endpoint", "", "Google Cloud Storage emulator URL, no auth (default $STORAGE_EMULATOR_HOST)")
	pf.StringVar(&g.AzureEndpoint, "azure-endpoint", "", "Azure Blob service URL replacing https://<account>.blob.<suffix>/ (default $AZURE_STORAGE_SERVICE_ENDPOINT)")
	wireDatabricks(f, root)

	root.AddCommand(
		NewCmdVersion(f),
		NewCmdLs(f, nil),
		NewCmdScan(f, nil),
		NewCmdInspect(f, nil),
		NewCmdPreview(f, nil),
		NewCmdSchema(f, nil),
		NewCmdReload(f, nil),
		NewCmdVerify(f, nil),
		NewCmdHistory(f, nil),
		NewCmdCleanup(f, nil),
		NewCmdUndo(f, nil),
		NewCmdDoctor(f, nil),
		NewCmdWatch(f, nil),
	)
	// A help topic: a command with no Run is shown by `zbrecover help environment`.
	root.AddCommand(NewCmdEnvironment())
	for _, add := range extraCommands {
		root.AddCommand(add(f))
	}
	registerCompletions(root)
	return root
}

// extraCommands are added by files compiled in only with build tags (the demo).
var extraCommands []func(*Factory) *cobra.Command

// printJSON writes a command's document on stdout (jsonout.Encode: schema_version first).
func printJSON(f *Factory, v any) error {
	var buf bytes.Buffer
	if err := jsonout.Encode(&buf, v); err != nil {
		return err
	}
	_, err := f.IO.Out.Write(buf.Bytes())
	return err
}

// suggestFlag adds "did you mean --x?" to an unknown-flag error when a flag of c has a name
// close to the one given.
func suggestFlag(c *cobra.Command, err error) error {
	const prefix = "unknown flag: --"
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return err
	}
	given := strings.TrimPrefix(msg, prefix)
	best, bestD := "", 3
	visit := func(fl *pflag.Flag) {
		if d := suggest.Distance(given, fl.Name); d < bestD {
			best, bestD = fl.Name, d
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	if best == "" {
		return err
	}
	return fmt.Errorf("%w (did you mean --%s?)", err, best)
}

// durationVar defines a duration flag with default def that reads textfmt's syntax (days and
// weeks too: 3d, 2w, 1d12h) and refuses negative values, as every duration flag does.
func durationVar(fl *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fl.Var(textfmt.DurationFlag{D: p}, name, usage)
}
