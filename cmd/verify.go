package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/internal/textsafe"
	"github.com/zbrecover/zbrecover/recovery"
	"github.com/zbrecover/zbrecover/reload"
)

// VerifyOptions are the inputs of `zbrecover verify`.
type VerifyOptions struct {
	F       *Factory
	Target  TargetOptions
	Run     string
	Journal string
	// Key, when set, reconciles the run's files with the table by key (keys.go).
	Key string
	// Summary is --summary: a Markdown summary of the check, to a file or "-" (stdout).
	Summary string
	// BreakLock is --break-lock; Yes breaks it without asking.
	BreakLock bool
	Yes       bool
}

// NewCmdVerify returns `zbrecover verify`. runF replaces the run function in tests.
func NewCmdVerify(f *Factory, runF func(context.Context, *VerifyOptions) error) *cobra.Command {
	o := &VerifyOptions{F: f}
	c := &cobra.Command{
		Use:   "verify TARGET",
		Short: "Re-check a past reload: footer rows vs inserted rows vs the table's history, per batch",
		Long: `Verify re-checks a reload run against the table, batch by batch: the journal's records, each
batch's own commit in the table's history, and every later commit that removed or rewrote
rows. With --key it also checks that every key of the run's files is in the table, and counts
the rows per key (the duplicates at-least-once delivery may leave). The check is journaled:
cleanup refuses a run whose latest verify failed. It loads and deletes nothing.

It needs the SQL warehouse and SELECT on the table; --key reads the run's keys files (reload
--key), or its fallback files while they exist. Without --run it checks the newest run.

TARGET is catalog.schema.table, or the table's storage root (s3://, gs://, abfss://, wasbs://,
file:// or a local directory).

` + exitHelp(exitLine{ExitVerify, "a batch does not agree or is not known, or keys are missing from the table"}),
		Example: `  # The newest run of the table
  $ zbrecover verify main.sales.orders
  # By key: keys missing from the table (must be 0), rows per key
  $ zbrecover verify main.sales.orders --key order_id
  # One run, with a Markdown summary for the incident ticket
  $ zbrecover verify main.sales.orders --run 20261201T101500Z-1a2b3c4d --summary verify.md`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := parseTarget(&o.Target, args); err != nil {
				return err
			}
			if o.Target.Table == "" {
				return FlagErrorf("verify needs the table's name: give catalog.schema.table, or --table with --root")
			}
			if _, err := parseKeyFlag("key", o.Key); err != nil {
				return err
			}
			if err := checkSummaryFlag(f, o.Summary); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return verifyRun(c.Context(), o)
		},
	}
	addTargetFlags(c, &o.Target)
	c.Flags().StringVar(&o.Run, "run", "", "the run to check (default: the table's newest)")
	c.Flags().StringVar(&o.Journal, "journal", "", "the journal's storage URL (default: the local state directory)")
	c.Flags().StringVar(&o.Key, "key", "", "also reconcile the run's files with the table by these key columns (COL[,COL])")
	addSummaryFlag(c, &o.Summary)
	addBreakLockFlag(c, &o.BreakLock)
	c.Flags().BoolVarP(&o.Yes, "yes", "y", false, "with --break-lock: break the lock without asking")
	return c
}

// verifyRun logs the run header, verifies and writes the --summary.
func verifyRun(ctx context.Context, o *VerifyOptions) error {
	s := runHeader(ctx, o.F, true)
	s.Command = "verify"
	return withSummary(ctx, o.F, o.Summary, s, func(code int) []string { return verifyNext(o, s, code) },
		func() error { return verifySteps(ctx, o, s) })
}

func verifySteps(ctx context.Context, o *VerifyOptions, s *runSummary) error {
	f := o.F
	s.Table = o.Target.Table
	r, err := f.resolver()
	if err != nil {
		return err
	}
	keys, _ := parseKeyFlag("key", o.Key)
	bars := newBars(f)
	v, err := recovery.Verify(ctx, recovery.VerifyEnv{Resolver: r, Places: f.places(), Workspace: f.workspace(), Log: f.Logger},
		recovery.VerifyRequest{Target: o.Target, Journal: o.Journal, Run: o.Run, Keys: keys, Header: header(""),
			BreakLock: f.lockBreaker(o.BreakLock, o.Yes), KeyProgress: bars.counter("key check", "statements")})
	bars.done(err == nil)
	defer v.Close()
	if v == nil {
		return err
	}
	s.Table, s.Root, s.Identity = v.Target.TableName(), v.Target.Display(), v.Identity
	if v.Journal != nil {
		s.Journal = v.Journal.Location()
		f.warnWedged(v.Journal, v.Target.TableID, s)
	}
	if errors.Is(err, reload.ErrNoRun) {
		return fmt.Errorf("nothing to verify: the journal at %s holds no run of %s. Reload the table first, or name with --journal "+
			"the journal its reload used (zbrecover history lists the runs a journal holds)", v.Journal.Location(), v.Target.TableName())
	}
	if err != nil {
		return err
	}
	rep := v.Report
	summarizeVerify(s, rep)
	if err := printVerify(f, rep); err != nil {
		return err
	}
	if !rep.OK {
		return WithCode(ExitVerify, verifyFailure(rep))
	}
	return nil
}

// printVerify renders verify's report.
func printVerify(f *Factory, rep *reload.VerifyReport) error {
	if f.Global.JSON() {
		return printJSON(f, rep)
	}
	out := f.IO.Out
	fmt.Fprintf(out, "Run %s on %s (%s)\n", rep.Run, rep.Table, rep.Status)
	for _, c := range rep.Checks {
		mark := "ok"
		switch {
		case !c.OK:
			mark = "FAIL"
		case c.Evidence == "":
			mark = "review"
		}
		ev := ""
		if c.Evidence != "" {
			ev = " by " + string(c.Evidence)
		}
		line := fmt.Sprintf("  batch %d  %-6s  expected %d, inserted %s, history %s%s", c.Batch, mark, c.Expected, optInt(c.Inserted), optInt(c.History), ev)
		if c.Note != "" {
			line += "  " + textsafe.Escape(c.Note)
		}
		fmt.Fprintln(out, line)
	}
	printKeyCheck(out, rep)
	for _, r := range rep.Removals {
		fmt.Fprintf(out, "  version %d: %s by %s removed or rewrote rows\n", r.Version, textsafe.Escape(r.Operation), textsafe.Escape(orUnknown(r.User)))
	}
	if rep.Settled > 0 {
		fmt.Fprintf(out, "  %s settled by key: every key of %s files is in the table (recorded as verified by key)\n",
			textfmt.Plural(rep.Settled, "unknown or open batch"), textfmt.Either(rep.Settled, "its", "their"))
	}
	fmt.Fprintf(out, "%s, %s failed, %s review; %s\n", textfmt.Plural(len(rep.Checks), "batch"), textfmt.Count(rep.Failed),
		textfmt.Count(rep.Review)+" "+textfmt.Either(rep.Review, "needs", "need"), rowsLine(rep.Expected, rep.Inserted, rep.HistoryRows))
	fmt.Fprintf(out, "Checked: %s.\n", strings.Join(rep.Checked, "; "))
	if n := notChecked(rep); n != "" {
		fmt.Fprintf(out, "%s\n", n)
	}
	return nil
}

// notChecked is what a verify without --key did not check (the rows per key, that is the
// duplicates at-least-once delivery may have left), and the command that checks it; "" after
// a key check, which measured them.
func notChecked(rep *reload.VerifyReport) string {
	if rep.Keys != nil {
		return ""
	}
	return "Not checked: rows per key (duplicates): zbrecover verify " + textfmt.Shell(rep.Table) + " --key COL counts them."
}

// summarizeVerify copies the check into s.
func summarizeVerify(s *runSummary, rep *reload.VerifyReport) {
	s.Run, s.RunStatus = rep.Run, rep.Status
	s.Rows, s.Inserted = rep.Expected, rep.Inserted
	s.Files, s.Batches = rep.Files, rep.BatchStates
	if rep.OK {
		s.Verification = fmt.Sprintf("ok: %s (footer rows = inserted rows = history)",
			textfmt.Either(len(rep.Checks), "the one batch agrees", "all "+textfmt.Plural(len(rep.Checks), "batch")+" agree"))
	} else {
		s.Verification = fmt.Sprintf("FAILED: %s of %s %s not agree or %s not known", textfmt.Count(rep.Failed), textfmt.Plural(len(rep.Checks), "batch"),
			textfmt.Either(rep.Failed, "does", "do"), textfmt.Are(rep.Failed))
	}
	for _, c := range rep.Checks {
		if !c.OK {
			s.Notes = append(s.Notes, fmt.Sprintf("batch %d: expected %d, inserted %s, history %s %s", c.Batch, c.Expected, optInt(c.Inserted), optInt(c.History), c.Note))
		}
	}
	if n := notChecked(rep); n != "" {
		s.Notes = append(s.Notes, n)
	}
}

// verifyNext is what to do after a verify that exited with code.
func verifyNext(o *VerifyOptions, s *runSummary, code int) []string {
	table := orDefault(s.Table, o.Target.Table)
	run := ""
	if s.Run != "" {
		run = " --run " + s.Run
	}
	switch code {
	case ExitOK:
		return []string{"see the plan of the deletion: " + mdCmd("zbrecover cleanup "+table+run) + ", then delete with " + mdCmd("zbrecover cleanup "+table+run+" --yes"),
			"the whole recovery so far, for the incident ticket: " + mdCmd("zbrecover history "+table+run+" --summary recovery.md")}
	case ExitVerify:
		return []string{"cleanup keeps the files of the batches that failed; an interrupted batch is settled by running the same reload again, " +
			"an unknown one by " + mdCmd("zbrecover verify "+table+run+" --key COL") + " when every key of its files is in the table",
			"the batches: " + mdCmd("zbrecover history "+table+run)}
	case ExitUsage:
		return []string{"fix the command line (" + mdCmd("zbrecover verify --help") + ")"}
	}
	return []string{"run verify again once the error is fixed: " + mdCmd("zbrecover verify "+table+run)}
}

// rowsLine is one accounting of a run's rows in words: expected, loaded, and of them those
// settled from the table's history (their answer lost), when any.
func rowsLine(expected, loaded, fromHistory int64) string {
	line := fmt.Sprintf("%s expected, %s loaded", textfmt.Plural(expected, "row"), textfmt.Count(loaded))
	if fromHistory > 0 {
		line += fmt.Sprintf(" (%s of them by batches settled from the table's history)", textfmt.Count(fromHistory))
	}
	return line
}

func optInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return textfmt.Count(*p)
}
