package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/history"
	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/internal/textsafe"
	"github.com/zbrecover/zbrecover/tableref"
)

// HistoryOptions are the inputs of `zbrecover history`.
type HistoryOptions struct {
	F       *Factory
	Target  TargetOptions
	Run     string
	Journal string
	// Watch follows the run (or the table's newest) until it ends (history_watch.go).
	Watch bool
	// Summary is --summary: the whole recovery of the run (or the table's newest), Markdown
	// (the Recovery document under -o json), to a file or "-" (stdout).
	Summary string
}

// NewCmdHistory returns `zbrecover history`. runF replaces the run function in tests.
func NewCmdHistory(f *Factory, runF func(context.Context, *HistoryOptions) error) *cobra.Command {
	o := &HistoryOptions{F: f}
	c := &cobra.Command{
		Use:   "history [TARGET]",
		Short: "The journal: what ran, when, what it loaded, verified and deleted",
		Long: `History lists the runs the journal holds, newest first, with their state (planned, loading,
verified, unknown, failed, mismatch, cleaned, partially_cleaned), batches, files and rows: of
the table given, or of every table. --run ID lists every file of one run with its rows, its
batch, the batch's state, the table version that settled it, and its deletion. --watch follows
a run another terminal is running until it ends; --summary writes the whole recovery of a run
for an incident ticket. It reads the journal only.

TARGET (optional) is catalog.schema.table, or the table's storage root.

` + exitHelp(exitLine{ExitFailure, "error (--run names no run of the journal)"}),
		Example: `  # Every run in the journal
  $ zbrecover history
  # The runs of one table
  $ zbrecover history main.sales.orders
  # Every file of one run, as JSON
  $ zbrecover history main.sales.orders --run 20261201T101500Z-1a2b3c4d -o json
  # Follow a reload running in another terminal
  $ zbrecover history main.sales.orders --watch
  # The whole recovery of the newest run, for the incident ticket
  $ zbrecover history main.sales.orders --summary incident-1234.md`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 || o.Target.Table != "" || o.Target.Root != "" {
				if err := parseTarget(&o.Target, args); err != nil {
					return err
				}
			} else if o.Watch && o.Run == "" {
				return FlagErrorf("--watch follows one run: give the table (TARGET), or --run ID")
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return historyRun(c.Context(), o)
		},
	}
	addTargetFlags(c, &o.Target)
	c.Flags().StringVar(&o.Run, "run", "", "list the files of this run")
	c.Flags().StringVar(&o.Journal, "journal", "", "the journal's storage URL (default: the local state directory)")
	c.Flags().BoolVarP(&o.Watch, "watch", "w", false, "follow the run (or the table's newest) as it runs, until it ends")
	c.Flags().StringVar(&o.Summary, "summary", "", "write the whole recovery of the run (or the table's newest) for an incident ticket to this file (- for stdout): Markdown, or JSON under -o json")
	return c
}

func historyRun(ctx context.Context, o *HistoryOptions) error {
	f := o.F
	store, err := f.places().OpenJournal(ctx, o.Journal)
	if err != nil {
		return err
	}
	defer closeJournal(store)
	var tables []string // nil: every table of the journal
	name := ""          // the table's name, for a missing run
	if o.Target.Table != "" || o.Target.Root != "" {
		tgt, err := f.openTarget(ctx, &o.Target, tableref.Read)
		if err != nil {
			return err
		}
		if err := tableref.Identify(ctx, tgt); err != nil {
			return err
		}
		tables, name = []string{tgt.TableID}, tgt.TableName()
	}
	if o.Watch {
		return watchRun(ctx, f, store, tables, o.Run)
	}
	if o.Summary != "" {
		return recoverySummary(ctx, f, store, tables, name, o.Run, o.Summary)
	}
	if o.Run != "" {
		run, err := history.ReadRun(ctx, store, tables, name, o.Run)
		if err != nil {
			return err
		}
		return printRunFiles(f, run)
	}
	runs, err := history.ListRuns(ctx, store, tables)
	if err != nil {
		return err
	}
	return printRuns(f, runs)
}

// printRuns renders history's list of runs.
func printRuns(f *Factory, runs *history.Runs) error {
	if f.Global.JSON() {
		return printJSON(f, runs)
	}
	all := runs.Runs
	if len(all) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "No runs in the journal at %s.\n", runs.Journal)
		return nil
	}
	out := f.IO.Out
	for _, r := range all {
		if r.Problem != "" {
			fmt.Fprintf(out, "%s  %s  cannot be read: %s\n", r.Run, r.TableID, r.Problem)
			continue
		}
		if r.Wedged != "" {
			fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", textsafe.Escape(r.Wedged))
		}
		undone := ""
		if r.UndoneRows > 0 {
			undone = ", " + textfmt.Count(r.UndoneRows) + " undone"
		}
		fmt.Fprintf(out, "%s  %-17s  %s  %s, %s, %s expected, %s loaded%s  %s\n",
			r.Run, r.Status, r.Table, textfmt.Plural(r.Batches, "batch"), textfmt.Plural(r.Files, "file"), textfmt.Plural(r.ExpectedRows, "row"),
			textfmt.Count(r.InsertedRows), undone, textfmt.Time(r.Started))
	}
	fmt.Fprintf(f.IO.ErrOut, "%s in the journal at %s\n", textfmt.Plural(len(all), "run"), runs.Journal)
	return nil
}

func printRunFiles(f *Factory, run *history.Run) error {
	if f.Global.JSON() {
		return printJSON(f, run)
	}
	out := f.IO.Out
	fmt.Fprintf(out, "Run %s on %s (%s), root %s\n", run.Run, run.Table, run.Status, run.Root)
	// One file a line, its fields tab-separated (as piped output is), the version and the
	// deletion as fields of their own when there are some.
	for _, hf := range run.Files {
		extra := ""
		if hf.Version != nil {
			extra = fmt.Sprintf("\tversion %d", *hf.Version)
		}
		if hf.Deleted != "" {
			extra += "\t" + strings.TrimSpace(hf.Deleted+" "+hf.Reason)
		}
		fmt.Fprintf(out, "  %s\t%s\tbatch %d\t%s%s\n", textKey(hf.Key), textfmt.Plural(hf.Rows, "row"), hf.Batch, hf.State, extra)
	}
	return nil
}

// recoverySummary writes the whole recovery of run (the newest run of tables when run is
// empty) to path: Markdown, or the Recovery document under -o json.
func recoverySummary(ctx context.Context, f *Factory, store journalStore, tables []string, name, run, path string) error {
	if run == "" {
		if len(tables) == 0 {
			return FlagErrorf("--summary tells one recovery: give the table (TARGET), or --run ID")
		}
		runs, err := history.ListRuns(ctx, store, tables)
		if err != nil {
			return err
		}
		for _, r := range runs.Runs {
			if r.Problem == "" {
				run = r.Run
				break
			}
		}
		if run == "" {
			return fmt.Errorf("no run of the table in the journal at %s: nothing to summarize", store.Location())
		}
	}
	rec, err := history.ReadRecovery(ctx, store, tables, name, run)
	if err != nil {
		return err
	}
	var b strings.Builder
	if f.Global.JSON() {
		if err := jsonout.Encode(&b, rec); err != nil {
			return err
		}
	} else {
		recoveryMarkdown(&b, rec)
	}
	if err := writeSummary(f, path, b.String()); err != nil {
		return err
	}
	if path != "-" {
		fmt.Fprintf(f.IO.ErrOut, "The recovery of run %s is summarized in %s.\n", rec.Run, path)
	}
	return nil
}
