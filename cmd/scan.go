package cmd

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/scan"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/tableref"
)

// ScanOptions are the inputs of `zbrecover scan`.
type ScanOptions struct {
	F     *Factory
	Scope scan.Scope
	// TablePattern is --table-pattern, a glob over table names.
	TablePattern string
	Prefix       string
	// MinAge is --min-age: files younger than this are left out.
	MinAge time.Duration
	// ExitCode is --exit-code: parked files found exit with ExitParked.
	ExitCode bool
	// Summary is --summary: a Markdown summary for a ticket, to a file or "-" (stdout).
	Summary string
}

// NewCmdScan returns `zbrecover scan`. runF replaces the run function in tests.
func NewCmdScan(f *Factory, runF func(context.Context, *ScanOptions) error) *cobra.Command {
	o := &ScanOptions{F: f}
	c := &cobra.Command{
		Use:   "scan [CATALOG[.SCHEMA]]",
		Short: "Find the tables that hold parked fallback files, across a catalog or the whole workspace",
		Long: `Scan finds the tables that hold records Zerobus parked: it lists the Unity Catalog tables of a
schema (CATALOG.SCHEMA), of a catalog, or of every catalog you can use, and lists the
fallback folder of each managed Delta table once (no footer is read): files, bytes, oldest
and newest file. Tables with parked files come first, each with the inspect command to run,
then unreadable tables with a doctor command. It changes nothing.

It needs the workspace and read access to the tables' storage (vended, or your own).
--exit-code makes it a monitor: the exit status says whether some table holds parked files.

` + exitHelp(exitLine{ExitOK, "ok (the scan ran, whatever it found)"},
			exitLine{ExitPartial, "with --exit-code: some table or listing could not be read"},
			exitLine{ExitParked, "with --exit-code: some table holds parked files (wins over 5)"}),
		Example: `  # Every schema of a catalog
  $ zbrecover scan main
  # One schema, the tables whose name matches
  $ zbrecover scan main.sales --table-pattern 'orders_*'
  # A monitor: exit 6 when files older than 15 minutes are parked
  $ zbrecover scan main --exit-code --min-age 15m
  # Every catalog, with a Markdown summary for the ticket
  $ zbrecover scan --summary scan.md`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				sc, err := scan.ParseScope(args[0])
				if err != nil {
					return FlagErrorf("CATALOG[.SCHEMA]: %v", err)
				}
				o.Scope = sc
			}
			if _, err := fallback.CheckPrefix(o.Prefix); err != nil {
				return FlagErrorf("--prefix: %v", err)
			}
			if err := checkGlob(o.TablePattern); err != nil {
				return FlagErrorf("--table-pattern %q: %v", o.TablePattern, err)
			}
			if err := checkSummaryFlag(f, o.Summary); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return scanRun(c.Context(), o)
		},
	}
	fl := c.Flags()
	fl.StringVar(&o.TablePattern, "table-pattern", "", "scan only the tables whose name matches `GLOB` (*, ?, [a-z]; any case)")
	fl.StringVar(&o.Prefix, "prefix", fallback.Prefix, "the fallback folder under each table root (a folder under _zerobus/)")
	fl.Var(textfmt.DurationFlag{D: &o.MinAge}, "min-age", "leave out files modified less than `DURATION` ago (a producer may be writing them): 15m, 1h, 1d")
	fl.BoolVar(&o.ExitCode, "exit-code", false, "exit 6 when some table holds parked files (5 when some could not be read): for a scheduled check")
	addSummaryFlag(c, &o.Summary)
	return c
}

// checkGlob checks a path.Match pattern.
func checkGlob(p string) error {
	_, err := path.Match(p, "")
	return err
}

// scanRun logs the run header, scans and writes the --summary.
func scanRun(ctx context.Context, o *ScanOptions) error {
	s := runHeader(ctx, o.F, true)
	s.Command = "scan"
	var rep *scan.Report
	return withSummary(ctx, o.F, o.Summary, s, func(code int) []string { return scanNext(rep, code) }, func() error {
		var err error
		rep, err = scanSteps(ctx, o, s)
		return err
	})
}

func scanSteps(ctx context.Context, o *ScanOptions, s *runSummary) (*scan.Report, error) {
	f := o.F
	s.Scope = scanScopeText(o)
	ws := f.workspace()
	if ws == nil {
		return nil, fmt.Errorf("scan: %w", ErrNeedsDatabricks)
	}
	client, err := ws.Client(ctx)
	if err != nil {
		return nil, err
	}
	r, err := f.resolver()
	if err != nil {
		return nil, err
	}
	open := f.scanOpener(r)

	bars := newBars(f)
	opts := scan.Options{Scope: o.Scope, TablePattern: o.TablePattern, Prefix: o.Prefix, MinAge: o.MinAge,
		Concurrency: f.Global.Concurrency, NextArgs: scanNextArgs(f, o), Progress: bars.growing("tables", "tables")}
	var jl *scan.JSONLines
	if f.Global.Output == "jsonl" {
		jl = scan.NewJSONLines(f.IO.Out)
		if err := jl.Header(opts, time.Now()); err != nil {
			return nil, err
		}
		opts.OnTable, opts.OnUnlisted = jl.Table, jl.Unlisted
	}
	rep, err := scan.Run(ctx, client, open, opts)
	bars.done(err == nil)
	if err != nil {
		return nil, err
	}
	t := rep.Totals
	f.Logger.Info("scanned", "scope", s.Scope, "tables", t.Scanned, "parked", t.Parked, "unreadable", t.Unreadable,
		"skipped", t.Skipped, "elapsed", (time.Duration(rep.ElapsedMS) * time.Millisecond).String())
	s.Tables = rep.CountsText()
	s.Files, s.Bytes = int(t.Files), t.Bytes
	var md strings.Builder
	if err := rep.WriteMarkdown(&md); err != nil {
		return nil, err
	}
	s.Details = md.String()

	switch {
	case jl != nil:
		err = jl.Totals(rep)
	case f.Global.JSON():
		err = rep.WriteJSON(f.IO.Out)
	default:
		err = rep.WriteText(f.IO.Out)
	}
	if err != nil {
		return nil, err
	}
	return rep, scanOutcome(o, rep)
}

// scanOutcome is the scan's exit: nil without --exit-code (the report says it all, with a
// notice for what could not be read); with it, ExitParked when some table holds parked
// files, else ExitPartial when something could not be read.
func scanOutcome(o *ScanOptions, rep *scan.Report) error {
	t := rep.Totals
	var unread []string
	if t.Unreadable > 0 {
		unread = append(unread, fmt.Sprintf("%s of %s could not be read", textfmt.Count(t.Unreadable), textfmt.Plural(t.Scanned, "table")))
	}
	if t.Unlisted > 0 {
		unread = append(unread, textfmt.Count(t.Unlisted)+" "+textfmt.Either(t.Unlisted, "catalog or schema", "catalogs or schemas")+" could not be listed")
	}
	what := strings.Join(unread, "; ")
	if what != "" {
		what += " (the report lists them with the reason)"
	}
	if !o.ExitCode {
		if what != "" {
			o.F.notice(what)
		}
		return nil
	}
	switch {
	case t.Parked > 0:
		msg := fmt.Sprintf("%s of %s %s parked fallback files (%s in all)", textfmt.Count(t.Parked), textfmt.Plural(t.Scanned, "table"),
			textfmt.Either(t.Parked, "holds", "hold"), textfmt.Plural(t.Files, "file"))
		if what != "" {
			msg += "; " + what
		}
		return WithCode(ExitParked, msg)
	case what != "":
		return WithCode(ExitPartial, what)
	}
	return nil
}

// scanScopeText is the scope in words, for the summary.
func scanScopeText(o *ScanOptions) string {
	r := scan.Report{Scope: o.Scope.String(), TablePattern: o.TablePattern}
	return r.ScopeText()
}

// scanOpener opens each listed table's storage with the credentials r chooses (as inspect
// does), every table's backend under one adaptive limit of --concurrency, under retry, and
// over one HTTP transport.
func (f *Factory) scanOpener(r *tableref.Resolver) scan.Opener {
	r.Open = f.opener(storage.Policy{Adaptive: storage.LoggedAdaptive(f.Global.Concurrency, f.Logger), Retry: f.retryPolicy(), Transport: storage.SharedTransport(f.Global.Concurrency), Quiet: true}).Open
	return func(ctx context.Context, e databricks.TableEntry) (*tableref.Ref, error) {
		return r.ResolveListed(ctx, e, tableref.Read)
	}
}

// scanNextArgs are the flags of this run that the next command needs to reach the same
// workspace and storage: the profile, --storage-auth, --prefix and the storage endpoints.
func scanNextArgs(f *Factory, o *ScanOptions) []string {
	var a []string
	add := func(name, v string) {
		if v != "" {
			a = append(a, "--"+name, v)
		}
	}
	d := f.Databricks()
	add("profile", d.Profile)
	if mode, err := databricks.ParseStorageAuth(d.StorageAuth); err == nil && mode != databricks.StorageAuthAuto {
		add("storage-auth", string(mode))
	}
	if o.Prefix != fallback.Prefix {
		add("prefix", o.Prefix)
	}
	g := f.Global
	add("s3-region", g.S3Region)
	add("s3-endpoint", g.S3Endpoint)
	add("gcs-endpoint", g.GCSEndpoint)
	add("azure-endpoint", g.AzureEndpoint)
	return a
}

// scanNext is what to do after a scan that exited with code.
func scanNext(rep *scan.Report, code int) []string {
	if rep == nil {
		if code == ExitInterrupted || code == ExitTerminated {
			return []string{"run the same scan again"}
		}
		return []string{"fix the error above and run the scan again (`zbrecover doctor` checks identity and access)"}
	}
	var next []string
	if rep.Totals.Parked > 0 {
		next = append(next, fmt.Sprintf("inspect %s (the command is in its row), then follow the runbook: doctor, inspect, fix the schema, reload, verify, cleanup",
			textfmt.Either(rep.Totals.Parked, "the table with parked files", "each of the "+textfmt.Plural(rep.Totals.Parked, "table")+" with parked files")))
	}
	if rep.Totals.Unreadable > 0 {
		next = append(next, fmt.Sprintf("run the doctor command of %s: it says what access is missing",
			textfmt.Either(rep.Totals.Unreadable, "the unreadable table", "each of the "+textfmt.Plural(rep.Totals.Unreadable, "unreadable table"))))
	}
	if rep.Totals.Unlisted > 0 {
		next = append(next, "get USE CATALOG / USE SCHEMA on the catalogs and schemas that could not be listed, then scan again")
	}
	if len(next) == 0 {
		next = append(next, "nothing is parked in "+rep.ScopeText()+": nothing to recover")
	}
	return next
}
