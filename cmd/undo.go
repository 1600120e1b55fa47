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
	"github.com/zbrecover/zbrecover/sqlstmt"
	"github.com/zbrecover/zbrecover/tableref"
	"github.com/zbrecover/zbrecover/undo"
)

// UndoOptions are the inputs of `zbrecover undo`.
type UndoOptions struct {
	F               *Factory
	Target          TargetOptions
	Run             string
	Batches         []int
	Evidence        string
	IncludeModified bool
	Yes             bool
	DryRun          bool
	Journal         string
	// Summary is --summary: a Markdown summary of the undo, to a file or "-" (stdout).
	Summary   string
	BreakLock bool
}

// NewCmdUndo returns `zbrecover undo`. runF replaces the run function in tests.
func NewCmdUndo(f *Factory, runF func(context.Context, *UndoOptions) error) *cobra.Command {
	o := &UndoOptions{F: f}
	c := &cobra.Command{
		Use:   "undo TABLE",
		Short: "Take back exactly the rows a reload's batches loaded (prints the plan unless --yes)",
		Long: `Undo deletes from the table exactly the rows a reload run's batches loaded, and nothing
else, while Zerobus keeps writing to it; the batches' files then load again with the next
reload. It never enables row tracking and never RESTOREs.

Each batch is named by the strongest evidence that applies (row IDs, the data files its load
added, or the run's keys); a batch no evidence names is refused, with why. Before each DELETE
it counts what the condition matches; after it, the history must show exactly that many rows
deleted. Every step is journaled: after a crash or Ctrl-C, run it again.

Without --run it takes the newest run with a verified batch. Without --yes it prints the plan
and asks (without a terminal, that is a usage error); --dry-run prints every statement and
sends none.

` + exitHelp(exitLine{ExitVerify, "no batch could be undone (each says why), or a DELETE deleted another number of rows than its batch loaded"},
			exitLine{ExitPartial, "partial: some batches refused, or a DELETE's outcome not settled yet (run undo again)"}),
		Example: `  # See what undo would take back from the newest run, then confirm
  $ zbrecover undo main.sales.orders
  # Two batches of one run, every statement printed, none sent
  $ zbrecover undo main.sales.orders --run 20261201T101500Z-1a2b3c4d --batch 2 --batch 3 --dry-run
  # Only by keys, without asking, as JSON
  $ zbrecover undo main.sales.orders --evidence keys --yes -o json`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := parseTarget(&o.Target, args); err != nil {
				return err
			}
			if o.Target.Table == "" {
				return FlagErrorf("undo needs the table's name: give catalog.schema.table, or --table with --root")
			}
			if o.Yes && o.DryRun {
				return FlagErrorf("give --yes or --dry-run, not both")
			}
			if _, err := undo.ParseEvidence(o.Evidence); err != nil {
				return FlagErrorf("--evidence: %v", err)
			}
			for _, n := range o.Batches {
				if n < 1 {
					return FlagErrorf("--batch %d: batches are numbered from 1", n)
				}
			}
			if err := checkSummaryFlag(f, o.Summary); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return undoRun(c.Context(), o)
		},
	}
	addTargetFlags(c, &o.Target)
	fl := c.Flags()
	fl.StringVar(&o.Run, "run", "", "the run to undo (default: the newest run of the table with a verified batch)")
	fl.IntSliceVar(&o.Batches, "batch", nil, "undo only this batch of the run (repeatable; default: every verified batch)")
	fl.StringVar(&o.Evidence, "evidence", "", "use only this evidence: row-ids, files or keys (default: the strongest available per batch)")
	fl.BoolVar(&o.IncludeModified, "include-modified", false, "also delete batch rows an UPDATE or MERGE changed since the load (counted in the plan)")
	fl.BoolVarP(&o.Yes, "yes", "y", false, "delete without asking")
	fl.BoolVar(&o.DryRun, "dry-run", false, "print every statement that would be sent; send no DELETE")
	fl.StringVar(&o.Journal, "journal", "", "the journal's storage URL (default: the local state directory)")
	addSummaryFlag(c, &o.Summary)
	addBreakLockFlag(c, &o.BreakLock)
	return c
}

// undoPlanDoc is the plan under -o json.
type undoPlanDoc struct {
	*undo.Plan
	DryRun bool `json:"dry_run,omitempty"`
}

// undoNothingDoc is undo's document under -o json when the journal holds nothing to undo.
type undoNothingDoc struct {
	TableID string `json:"table_id"`
	Table   string `json:"table"`
	Nothing string `json:"nothing_to_undo"`
}

// undoRun logs the run header, undoes and writes the --summary.
func undoRun(ctx context.Context, o *UndoOptions) error {
	s := runHeader(ctx, o.F, true)
	s.Command = "undo"
	return withSummary(ctx, o.F, o.Summary, s, func(code int) []string { return undoNext(o, s, code) },
		func() error { return undoSteps(ctx, o, s) })
}

func undoSteps(ctx context.Context, o *UndoOptions, s *runSummary) error {
	f := o.F
	s.Table = o.Target.Table
	prep, store, err := prepareUndo(ctx, o, s)
	if err != nil || prep == nil {
		return err
	}
	defer closeJournal(store)
	defer prep.Close()
	s.Run, s.RunStatus = prep.Plan.Run, string(prep.Plan.Status)
	// Under -o json the plan is the document when no report follows (a dry run, or nothing
	// that can be undone).
	if err := printUndoPlan(f, prep.Plan, o.DryRun, o.DryRun || prep.Plan.Undo == 0); err != nil {
		return err
	}
	if prep.Plan.Undo == 0 {
		return WithCode(ExitVerify, fmt.Sprintf("no batch of run %s can be undone (each says why); nothing was deleted", prep.Plan.Run))
	}
	if o.DryRun {
		return undoDryRun(f, s, prep.Plan)
	}
	if err := confirm(f, o.Yes, fmt.Sprintf("Delete these %s?", textfmt.Plural(prep.Plan.Rows, "row")),
		"undo deletes rows from the table: pass --yes to delete them (or --dry-run); nothing was deleted"); err != nil {
		return err
	}
	bars := newBars(f)
	rep, runErr := prep.Execute(ctx, undo.RunOptions{Identity: s.Identity, Header: header(s.Identity), Progress: bars.counter("undone", "batches")})
	bars.done(runErr == nil)
	if rep == nil {
		return runErr
	}
	summarizeUndo(s, rep)
	if err := printUndoReport(f, rep); err != nil {
		return err
	}
	return undoExit(runErr, rep)
}

// prepareUndo resolves the table, opens the journal and the warehouse and prepares the undo
// under the table's lock. A nil Prepared with a nil error: nothing to undo (said).
func prepareUndo(ctx context.Context, o *UndoOptions, s *runSummary) (*undo.Prepared, journalStore, error) {
	f := o.F
	ws := f.workspace()
	if ws == nil {
		return nil, nil, fmt.Errorf("table %s: %w", o.Target.Table, ErrNeedsDatabricks)
	}
	r, err := f.resolver()
	if err != nil {
		return nil, nil, err
	}
	tgt, err := recovery.Open(ctx, r, o.Target, tableref.Read)
	if err != nil {
		return nil, nil, err
	}
	s.Table, s.Root = tgt.TableName(), tgt.Display()
	store, err := f.openTableJournal(ctx, o.Journal, tgt, s)
	if err != nil {
		return nil, nil, err
	}
	wh, err := ws.Warehouse(ctx)
	if err != nil {
		closeJournal(store)
		return nil, nil, err
	}
	s.Identity = recovery.CurrentUser(ctx, wh)
	ev, _ := undo.ParseEvidence(o.Evidence)
	rd := recovery.WarehouseDeps(wh, store, s.Identity, f.Logger)
	prep, err := undo.Prepare(ctx, undo.Deps{Warehouse: wh, Session: rd.Session, Journal: store, Identity: s.Identity, Log: f.Logger}, tgt,
		undo.Request{Run: o.Run, Batches: o.Batches, Evidence: ev, IncludeModified: o.IncludeModified, Header: header(s.Identity),
			BreakLock: f.lockBreaker(o.BreakLock, o.Yes)})
	f.warnWedged(store, tgt.TableID, s)
	if err == nil {
		return prep, store, nil
	}
	closeJournal(store)
	switch {
	case errors.Is(err, undo.ErrNothing):
		s.RunStatus = "nothing to undo"
		fmt.Fprintf(f.IO.ErrOut, "Nothing to undo: %v (zbrecover history lists the runs).\n", err)
		if f.Global.JSON() {
			return nil, nil, printJSON(f, undoNothingDoc{TableID: tgt.TableID, Table: tgt.TableName(), Nothing: err.Error()})
		}
		return nil, nil, nil
	case errors.Is(err, undo.ErrRefused):
		return nil, nil, WithCode(ExitVerify, err.Error())
	}
	return nil, nil, err
}

// printUndoPlan renders the plan: per batch the evidence weighed and chosen, the counts, and
// the redo.
func printUndoPlan(f *Factory, p *undo.Plan, dryRun, final bool) error {
	if f.Global.JSON() {
		if final {
			return printJSON(f, undoPlanDoc{Plan: p, DryRun: dryRun})
		}
		return nil // the report follows
	}
	out := f.IO.ErrOut
	rt := "off"
	if p.RowTracking {
		rt = "on"
	}
	fmt.Fprintf(out, "Undo of run %s on %s (%s), row tracking %s:\n", p.Run, textsafe.Escape(p.Table), p.Status, rt)
	for _, b := range p.Batches {
		what := "undo by " + string(b.Evidence)
		if b.Refused != "" {
			what = "REFUSED"
		} else if b.Resume {
			what += " (finishing an undo left unfinished)"
		}
		fmt.Fprintf(out, "  batch %d: %s, %s loaded from %s\n", b.Batch, what, textfmt.Plural(b.Rows, "row"), textfmt.Plural(b.Files, "file"))
		for _, op := range b.Options {
			mark := "-"
			if op.Usable {
				mark = "+"
			}
			fmt.Fprintf(out, "    %s %s: %s\n", mark, op.Evidence, textsafe.Escape(op.Why))
		}
		if b.Refused != "" {
			fmt.Fprintf(out, "    refused: %s\n", textsafe.Escape(b.Refused))
			continue
		}
		mod := ""
		if b.Modified > 0 {
			mod = fmt.Sprintf(", %s of them changed since the load (deleted: --include-modified)", textfmt.Count(b.Modified))
		}
		fmt.Fprintf(out, "    its condition matches %s now%s\n", textfmt.Plural(b.Matched, "row"), mod)
		if b.Archived {
			fmt.Fprintf(out, "    its files were cleaned up; an archive holds them\n")
		}
	}
	fmt.Fprintf(out, "%s of %s to undo, %s to delete; %s refused.\n", textfmt.Count(p.Undo), textfmt.Plural(len(p.Batches), "batch"), textfmt.Plural(p.Rows, "row"), textfmt.Count(p.Refused))
	if p.Undo > 0 { // how the undone batches load again: nothing to say when none is undone
		fmt.Fprintf(out, "Redo: %s.\n", textsafe.Escape(p.Redo))
	}
	return nil
}

// undoDryRun prints every statement the undo would send: per batch, its count, its commit
// tag's SET and its DELETE.
func undoDryRun(f *Factory, s *runSummary, p *undo.Plan) error {
	out := f.IO.Out
	if f.Global.JSON() {
		out = f.IO.ErrOut
	}
	for _, b := range p.Batches {
		if b.Refused != "" {
			continue
		}
		fmt.Fprintf(out, "-- batch %d (%s)\n%s\n%s\n%s\n", b.Batch, b.Evidence, textsafe.Escape(b.CountSQL),
			textsafe.Escape(sqlstmt.SetTag(reload.UndoTag(p.Run, b.Batch, 1))), textsafe.Escape(b.DeleteSQL))
	}
	s.Deleted = fmt.Sprintf("nothing (dry run: %s would be deleted)", textfmt.Plural(p.Rows, "row"))
	fmt.Fprintf(f.IO.ErrOut, "Dry run: %s would be deleted; nothing was deleted.\n", textfmt.Plural(p.Rows, "row"))
	return nil
}

// printUndoReport renders what the undo did.
func printUndoReport(f *Factory, r *undo.Report) error {
	if f.Global.JSON() {
		return printJSON(f, r)
	}
	out := f.IO.Out
	fmt.Fprintf(out, "Run %s on %s: %s\n", r.Run, textsafe.Escape(r.Table), r.Status)
	for _, b := range r.Batches {
		v := ""
		if b.Version != nil {
			v = fmt.Sprintf(" at version %d", *b.Version)
		}
		fmt.Fprintf(out, "  batch %d  %-9s  by %s, %s, deleted %s%s  %s\n", b.Batch, b.Status, orDefault(string(b.Evidence), "-"), textfmt.Plural(b.Rows, "row"), optInt(b.Deleted), v, textsafe.Escape(b.Reason))
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", textsafe.Escape(w))
	}
	fmt.Fprintf(out, "%s undone, %s refused, %s failed, %s mismatched, %s unsettled; %s deleted (%s, commit tags: %s)\n",
		textfmt.Count(r.Undone), textfmt.Count(r.Refused), textfmt.Count(r.Failed), textfmt.Count(r.Mismatch), textfmt.Count(r.Unsettled),
		textfmt.Plural(r.DeletedRows, "row"), textfmt.Plural(r.Statements, "DELETE statement"), r.Tagging)
	fmt.Fprintf(out, "Redo: %s.\n%s\n", textsafe.Escape(r.Redo), r.Guarantee)
	return nil
}

// undoExit maps the undo's outcome to the exit code: 4 for a mismatch or nothing undone, 5
// for batches refused or unsettled, the run's error otherwise.
func undoExit(runErr error, r *undo.Report) error {
	switch {
	case errors.Is(runErr, undo.ErrMismatch) || errors.Is(runErr, undo.ErrRefused):
		return WithCode(ExitVerify, runErr.Error())
	case errors.Is(runErr, undo.ErrInterrupted):
		return fmt.Errorf("%w: %v; run undo again to settle the DELETE in flight", context.Canceled, runErr)
	case errors.Is(runErr, undo.ErrUnsettled):
		return WithCode(ExitPartial, runErr.Error()+"; run undo again: it settles the DELETE from the table's history")
	case runErr != nil:
		return runErr
	case r.Refused > 0:
		return WithCode(ExitPartial, fmt.Sprintf("%s undone, %s refused (each says why)", textfmt.Count(r.Undone), textfmt.Count(r.Refused)))
	}
	return nil
}

// summarizeUndo copies the undo's report into s.
func summarizeUndo(s *runSummary, r *undo.Report) {
	s.Run, s.RunStatus = r.Run, string(r.Status)
	s.Deleted = fmt.Sprintf("%s (%s of %s undone)", textfmt.Plural(r.DeletedRows, "row"), textfmt.Count(r.Undone), textfmt.Plural(len(r.Batches), "batch"))
	for _, b := range r.Batches {
		if b.Status != undo.StatusUndone {
			s.Notes = append(s.Notes, fmt.Sprintf("batch %d: %s: %s", b.Batch, b.Status, b.Reason))
		}
	}
	s.Notes = append(s.Notes, "redo: "+r.Redo, r.Guarantee)
}

// undoNext is what to do after an undo that exited with code.
func undoNext(o *UndoOptions, s *runSummary, code int) []string {
	table := orDefault(s.Table, o.Target.Table)
	run := ""
	if s.Run != "" {
		run = " --run " + s.Run
	}
	switch {
	case code == ExitOK && (o.DryRun || !o.Yes) && !strings.HasPrefix(s.RunStatus, "undone"):
		return []string{"undo the plan: " + mdCmd("zbrecover undo "+table+run+" --yes")}
	case code == ExitOK:
		return []string{"load the undone batches' files again with the right fix: " + mdCmd("zbrecover reload "+table+" --stage-to VOLUME"),
			"each batch's undo: " + mdCmd("zbrecover history "+table+run)}
	case code == ExitUsage:
		return []string{"fix the command line (" + mdCmd("zbrecover undo --help") + ")"}
	}
	return []string{"run undo again: it settles a DELETE in flight and never deletes a batch twice: " + mdCmd("zbrecover undo "+table+run+" --yes"),
		"each batch's undo: " + mdCmd("zbrecover history "+table+run)}
}
