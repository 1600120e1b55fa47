package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/user"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/cleanup"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/internal/textsafe"
	"github.com/zbrecover/zbrecover/recovery"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/tableref"
)

// CleanupOptions are the inputs of `zbrecover cleanup`.
type CleanupOptions struct {
	F         *Factory
	Target    TargetOptions
	Run       string
	Yes       bool
	DryRun    bool
	ArchiveTo string
	MinAge    time.Duration
	Journal   string
	Prefix    string
	// Summary is --summary: a Markdown summary of the run, to a file or "-" (stdout).
	Summary string
	// BreakLock is --break-lock.
	BreakLock bool
}

// NewCmdCleanup returns `zbrecover cleanup`. runF replaces the run function in tests.
func NewCmdCleanup(f *Factory, runF func(context.Context, *CleanupOptions) error) *cobra.Command {
	o := &CleanupOptions{F: f}
	c := &cobra.Command{
		Use:   "cleanup TARGET",
		Short: "Delete exactly the fallback files a verified reload loaded (prints the plan unless --yes)",
		Long: `Cleanup deletes the fallback files whose rows are provably in the table, and nothing else:
the files of verified batches that a fresh check of the table (its history, or the keys)
proves, each only if it is still the version that was verified; their staged copies go with
them. Everything else is kept, listed with the reason. Every delete is journaled: after a
crash or Ctrl-C, run it again.

Without --yes it prints the plan and deletes nothing (without a terminal, that is a usage
error); --dry-run lists every delete. It needs the SQL warehouse for the check, and delete
access to the table's storage with the store's own credentials (vended ones are read-only).
--archive-to copies each file elsewhere first.

TARGET is catalog.schema.table, or the table's storage root (s3://, gs://, abfss://, wasbs://,
file:// or a local directory).

` + exitHelp(exitLine{ExitVerify, "the run is not cleanable, or a batch no longer checks (its files kept)"},
			exitLine{ExitPartial, "partial (some files kept or failed: run again)"}),
		Example: `  # The plan: what would be deleted, what is kept, and why
  $ zbrecover cleanup main.sales.orders
  # Every delete it would send
  $ zbrecover cleanup main.sales.orders --dry-run
  # Delete
  $ zbrecover cleanup main.sales.orders --yes
  # One run, each file copied to an archive first
  $ zbrecover cleanup main.sales.orders --run 20261201T101500Z-1a2b3c4d --archive-to s3://archive/orders/ --yes`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := parseTarget(&o.Target, args); err != nil {
				return err
			}
			if o.MinAge < 0 {
				return FlagErrorf("--min-age must not be negative")
			}
			if o.Yes && o.DryRun {
				return FlagErrorf("give --yes or --dry-run, not both")
			}
			if _, err := fallback.CheckPrefix(o.Prefix); err != nil {
				return FlagErrorf("--prefix: %v", err)
			}
			if err := checkSummaryFlag(f, o.Summary); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return cleanupRun(c.Context(), o)
		},
	}
	addTargetFlags(c, &o.Target)
	fl := c.Flags()
	fl.StringVar(&o.Run, "run", "", "the run to clean up (default: the newest verified or partially cleaned run on this root)")
	fl.BoolVarP(&o.Yes, "yes", "y", false, "delete (without it, cleanup only prints the plan)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "print every delete that would be sent; delete nothing")
	fl.StringVar(&o.ArchiveTo, "archive-to", "", "copy each file to this storage URL (same key) and check it before deleting the original")
	fl.Var(textfmt.DurationFlag{D: &o.MinAge}, "min-age", "only files whose batch was verified at least this long ago: 72h, 3d, 2w, 1d12h")
	fl.StringVar(&o.Journal, "journal", "", "the journal's storage URL (default: the local state directory)")
	fl.StringVar(&o.Prefix, "prefix", fallback.Prefix, "the fallback folder under the table root (a folder under _zerobus/): cleanup deletes nothing outside it")
	addSummaryFlag(c, &o.Summary)
	addBreakLockFlag(c, &o.BreakLock)
	return c
}

// cleanupPlanDoc is the plan under -o json.
type cleanupPlanDoc struct {
	*cleanup.Plan
	Deleting bool     `json:"deleting"`
	DryRun   bool     `json:"dry_run,omitempty"`
	Keys     []string `json:"keys"`
}

// cleanupNothingDoc is cleanup's document under -o json when the journal holds no run to
// clean up.
type cleanupNothingDoc struct {
	TableID string `json:"table_id"`
	Table   string `json:"table,omitempty"`
	Root    string `json:"root"`
	Journal string `json:"journal"`
	Nothing string `json:"nothing_to_clean_up"`
}

// cleanupRun logs the run header, cleans up and writes the --summary.
func cleanupRun(ctx context.Context, o *CleanupOptions) error {
	s := runHeader(ctx, o.F, o.Target.Table != "")
	s.Command = "cleanup"
	return withSummary(ctx, o.F, o.Summary, s, func(code int) []string { return cleanupNext(o, s, code) },
		func() error { return cleanupSteps(ctx, o, s) })
}

func cleanupSteps(ctx context.Context, o *CleanupOptions, s *runSummary) error {
	f := o.F
	s.Table, s.Root = o.Target.Table, o.Target.Root
	env, err := f.cleanupEnv()
	if err != nil {
		return err
	}
	run, err := recovery.OpenCleanup(ctx, env, recovery.CleanupRequest{Target: o.Target, Journal: o.Journal, Run: o.Run, MinAge: o.MinAge,
		Prefix: o.Prefix, ArchiveTo: o.ArchiveTo, Header: header(""), BreakLock: f.lockBreaker(o.BreakLock, o.Yes)})
	defer run.Close()
	if err := cleanupOpened(f, s, run, err); err != nil || run.Prepared == nil {
		return err
	}
	plan := run.Plan
	s.Files, s.Bytes = plan.Files, plan.Bytes
	s.Deleted = fmt.Sprintf("nothing (the plan: %s, %s, to delete; %s deleted earlier)", textfmt.Plural(plan.Files, "file"), textfmt.Bytes(plan.Bytes), textfmt.Count(plan.Removed))
	if done, err := cleanupPlanned(ctx, o, run.Prepared); done || err != nil {
		return err
	}
	copts := run.Options()
	if o.ArchiveTo != "" {
		if copts.Archive, err = run.OpenArchive(ctx); err != nil {
			return err
		}
	}
	if o.DryRun {
		return cleanupDryRun(ctx, f, s, run.Prepared, copts)
	}
	return executeCleanup(ctx, f, s, run, copts)
}

// cleanupEnv is what recovery.OpenCleanup works with in this run: the resolver, the run's
// places, cleanup's storage policy (every request counted, retried under one adaptive limit)
// and the workspace whose warehouse re-checks the table.
func (f *Factory) cleanupEnv() (recovery.CleanupEnv, error) {
	r, err := f.resolver()
	if err != nil {
		return recovery.CleanupEnv{}, err
	}
	return recovery.CleanupEnv{Resolver: r, Places: f.places(), Storage: recovery.NewDeleteStorage(f.opener(f.defaultPolicy()), f.Global.Concurrency, f.Logger),
		Workspace: f.workspace(), Log: f.Logger}, nil
}

// cleanupOpened records in the summary what recovery.OpenCleanup opened (the table, the
// journal, the run, the identity of the re-check) and says how it failed: nothing to clean
// up (said, nil), a run that is not cleanable (exit 4), or the error as it is.
func cleanupOpened(f *Factory, s *runSummary, run *recovery.Cleanup, err error) error {
	if run == nil {
		return err
	}
	s.Table, s.Root = run.Target.TableName(), run.Target.Display()
	s.Identity = run.Identity
	if run.Journal != nil {
		s.Journal = run.Journal.Location()
		f.warnWedged(run.Journal, run.Target.TableID, s)
	}
	if run.Prepared != nil {
		s.Run, s.RunStatus = run.State.Run, string(run.State.Status)
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cleanup.ErrNothing):
		return cleanupNothing(f, s, run.Target, run.Journal)
	case errors.Is(err, cleanup.ErrNotCleanable) || errors.Is(err, cleanup.ErrOutside):
		return WithCode(ExitVerify, err.Error())
	}
	return err
}

// cleanupPlanned prints the plan and says whether cleanup stops there: without --yes or
// --dry-run (asking for --yes), or with nothing to delete (the re-check journaled).
func cleanupPlanned(ctx context.Context, o *CleanupOptions, prep *cleanup.Prepared) (bool, error) {
	f, plan := o.F, prep.Plan
	deleting := o.Yes || o.DryRun
	if err := printCleanupPlan(f, plan, !deleting); err != nil {
		return true, err
	}
	if !deleting {
		if !f.IO.CanPrompt() {
			return true, FlagErrorf("cleanup deletes files: pass --yes to delete them (or --dry-run); nothing was deleted")
		}
		fmt.Fprintln(f.IO.ErrOut, "Nothing was deleted: run again with --yes to delete these files.")
		return true, nil
	}
	if len(plan.Delete) > 0 || plan.Staged > 0 {
		return false, nil
	}
	fmt.Fprintln(f.IO.ErrOut, "Nothing to delete.")
	if !o.DryRun {
		if err := prep.Record(ctx); err != nil {
			return true, err
		}
	}
	if f.Global.JSON() {
		if err := printJSON(f, cleanupPlanDoc{Plan: plan, Keys: []string{}, DryRun: o.DryRun}); err != nil {
			return true, err
		}
	}
	if o.DryRun {
		return true, nil
	}
	return true, keptExit(plan, nil)
}

// executeCleanup deletes the plan's files (archiving each first) and the staged copies, with
// progress, and reports what it did.
func executeCleanup(ctx context.Context, f *Factory, s *runSummary, run *recovery.Cleanup, copts cleanup.Options) error {
	bars := newBars(f)
	if copts.Archive != nil {
		// The archive bar first: each file is copied before it is deleted.
		copts.ArchiveProgress = bars.counter("archived", "files")
	}
	copts.Progress = bars.counter("deleted", "files")
	copts.StagedProgress = bars.counter("removed", "staged copies")
	rep, runErr := run.Execute(ctx, copts)
	bars.done(runErr == nil)
	if rep == nil {
		if errors.Is(runErr, cleanup.ErrArchiveLocation) {
			return FlagErrorf("--archive-to: %v; nothing was deleted", runErr)
		}
		return runErr
	}
	summarizeCleanup(s, rep)
	for _, sc := range rep.StagedCopies {
		fmt.Fprintf(f.IO.ErrOut, "Deleted %s at %s.\n", textfmt.Plural(sc.Deleted, "staged copy"), textsafe.Quote(sc.Location))
	}
	f.Logger.Info("storage requests", "counts", run.Storage.Counters.Counts().String(), "throttles", rep.Limiter.Throttles, "decreases", rep.Limiter.Decreases, "concurrency", rep.Limiter.Limit)
	if err := printCleanupReport(f, rep); err != nil {
		return err
	}
	return cleanupExit(ctx, runErr, rep, run.Target)
}

// cleanupNothing reports that the journal holds nothing to clean up for the table.
func cleanupNothing(f *Factory, s *runSummary, tgt *tableref.Ref, store journalStore) error {
	s.RunStatus = "nothing to clean up: no verified run of the table on this root in the journal"
	fmt.Fprintf(f.IO.ErrOut, "Nothing to clean up: no verified run of %s on %s in the journal (%s); zbrecover history lists the runs.\n",
		tgt.TableID, tgt.Display(), store.Location())
	if f.Global.JSON() {
		return printJSON(f, cleanupNothingDoc{TableID: tgt.TableID, Table: tgt.TableName(), Root: tgt.Display(),
			Journal: store.Location(), Nothing: "no verified run of the table on this root in the journal"})
	}
	return nil
}

// cleanupDryRun prints every delete the plan would send, and sends none.
func cleanupDryRun(ctx context.Context, f *Factory, s *runSummary, prep *cleanup.Prepared, copts cleanup.Options) error {
	var mu sync.Mutex
	// The deletes that would be sent: on stdout in text; under -o json, on stderr (as
	// notices), stdout holding the plan's document.
	dryOut := f.IO.Out
	if f.Global.JSON() {
		dryOut = f.IO.ErrOut
	}
	if copts.Archive != nil {
		fmt.Fprintf(dryOut, "would archive every file to %s first\n", copts.Archive.Location())
	}
	// The deletes run concurrently: their lines are printed once all are known, sorted, so
	// that a dry run reads the same each time.
	var lines []string
	rep, err := prep.DryRun(ctx, copts, func(line string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, textsafe.Escape(line))
	})
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(dryOut, l)
	}
	if err != nil {
		return err
	}
	would := textfmt.Plural(rep.Deleted, "file")
	if n := prep.Plan.Staged; n > 0 {
		would += " and " + textfmt.Plural(n, "staged copy")
	}
	s.Deleted = fmt.Sprintf("nothing (dry run: %s would be deleted)", would)
	fmt.Fprintf(f.IO.ErrOut, "Dry run: %s would be deleted; nothing was deleted.\n", would)
	if f.Global.JSON() {
		d := cleanupPlanDoc{Plan: prep.Plan, Keys: []string{}, DryRun: true}
		for _, t := range prep.Plan.Delete {
			d.Keys = append(d.Keys, t.Key)
		}
		return printJSON(f, d)
	}
	return nil
}

// summarizeCleanup copies cleanup's report into s.
func summarizeCleanup(s *runSummary, r *cleanup.Report) {
	if r == nil {
		return
	}
	s.RunStatus = string(r.After)
	d := fmt.Sprintf("%s (%s); %s already gone, %s skipped (changed), %s failed", textfmt.Plural(r.Deleted, "file"), textfmt.Bytes(r.DeletedBytes),
		textfmt.Count(r.Gone), textfmt.Count(r.Skipped), textfmt.Count(r.Failed))
	if r.NotDone > 0 {
		d += fmt.Sprintf(", %s not done", textfmt.Count(r.NotDone))
	}
	if r.Archive != "" {
		d += "; archived to " + r.Archive + " first"
	}
	s.Deleted = d
	for _, p := range r.Problems {
		s.Notes = append(s.Notes, fmt.Sprintf("%s %s: %s", p.Status, p.Key, p.Reason))
	}
}

// cleanupNext is what to do after a cleanup that exited with code.
func cleanupNext(o *CleanupOptions, s *runSummary, code int) []string {
	tgt := orDefault(s.Table, orDefault(o.Target.Table, o.Target.Root))
	run := ""
	if s.Run != "" {
		run = " --run " + s.Run
	}
	again := "zbrecover cleanup " + tgt + run
	if o.ArchiveTo != "" {
		again += " --archive-to " + o.ArchiveTo
	}
	switch {
	case code == ExitOK && !o.Yes:
		return []string{"delete the files of the plan: " + mdCmd(again+" --yes")}
	case code == ExitOK:
		return []string{"nothing more to do for this run; " + mdCmd("zbrecover history "+tgt+run) + " lists each file's deletion",
			"the whole recovery, for the incident ticket: " + mdCmd("zbrecover history "+tgt+run+" --summary recovery.md")}
	case code == ExitVerify:
		return []string{"batches of the run do not check against the table (or the run is not settled): " + mdCmd("zbrecover verify "+tgt+run) +
			" shows why; their files are kept (the cleanup's output lists them), and a verify that passes for them lets cleanup delete them"}
	case code == ExitUsage:
		return []string{"fix the command line (" + mdCmd("zbrecover cleanup --help") + ")"}
	}
	return []string{"run cleanup again: it continues the run and never deletes a file twice: " + mdCmd(again+" --yes"),
		"each file's fate: " + mdCmd("zbrecover history "+tgt+run)}
}

func printCleanupPlan(f *Factory, p *cleanup.Plan, toOut bool) error {
	if f.Global.JSON() {
		if !toOut {
			return nil // the report follows
		}
		d := cleanupPlanDoc{Plan: p, Keys: []string{}}
		for _, t := range p.Delete {
			d.Keys = append(d.Keys, t.Key)
		}
		return printJSON(f, d)
	}
	out := f.IO.ErrOut
	if toOut {
		out = f.IO.Out
	}
	table := orDefault(p.Table, p.TableID)
	// The heading ends in a colon only above the lines that follow it; the totals last.
	var body strings.Builder
	w := &body
	defer func() {
		head := fmt.Sprintf("Cleanup plan for %s on %s, run %s (%s)", table, p.Root, p.Run, p.Status)
		if body.Len() > 0 {
			head += ":\n" + body.String()
		} else {
			head += "\n"
		}
		fmt.Fprint(out, head)
		fmt.Fprintln(out, cleanupTotals(p))
	}()
	// Each file to delete only at -v (the dry run names each one as it would delete it): a
	// plan of 6,000 files would scroll past what matters, the files kept and the totals.
	if f.Global.Verbose > 0 {
		for _, t := range p.Delete {
			if t.Changed == "" {
				fmt.Fprintf(w, "  delete %s (%s, batch %d)\n", textKey(t.Key), textfmt.Bytes(t.Size), t.Batch)
			}
		}
	}
	var kept []reload.SkippedFile
	for _, t := range p.Delete {
		if t.Changed != "" {
			kept = append(kept, reload.SkippedFile{Key: t.Key, Reason: t.Changed})
		}
	}
	for _, k := range append(append([]cleanup.Left{}, p.Kept...), p.Untracked...) {
		kept = append(kept, reload.SkippedFile{Key: k.Key, Reason: k.Reason})
	}
	printGrouped(w, "keep", kept, f.Global.Verbose > 0)
	return nil
}

// printGrouped writes files grouped by reason, each group under "verb N files: reason",
// naming at most refusedShown of a group unless all is set.
func printGrouped(w io.Writer, verb string, files []reload.SkippedFile, all bool) {
	for _, g := range groupRefused(files) {
		fmt.Fprintf(w, "  %s %s: %s\n", verb, textfmt.Plural(len(g.keys), "file"), textsafe.Escape(g.reason))
		for i, k := range g.keys {
			if i == refusedShown && !all {
				fmt.Fprintf(w, "    … and %s more (-v lists them all)\n", textfmt.Count(len(g.keys)-i))
				break
			}
			fmt.Fprintf(w, "    %s\n", textKey(k))
		}
	}
}

// cleanupTotals is the plan's last line: what will be deleted and kept.
func cleanupTotals(p *cleanup.Plan) string {
	line := fmt.Sprintf("Plan: delete %s (%s)", textfmt.Plural(p.Files-p.Changed, "file"), textfmt.Bytes(p.Bytes))
	if p.Staged > 0 {
		line += " and " + textfmt.Plural(p.Staged, "staged copy")
	}
	kept := p.Changed + len(p.Kept)
	line += fmt.Sprintf("; keep %s", textfmt.Plural(kept, "file"))
	if p.Removed > 0 {
		line += fmt.Sprintf("; %s deleted earlier", textfmt.Count(p.Removed))
	}
	if n := len(p.Untracked); n > 0 {
		line += fmt.Sprintf("; %s not of this run left alone", textfmt.Plural(n, "object"))
	}
	return line
}

func printCleanupReport(f *Factory, r *cleanup.Report) error {
	if f.Global.JSON() {
		return printJSON(f, r)
	}
	w := f.IO.Out
	fmt.Fprintf(w, "Run %s: %s deleted (%s), %s already gone, %s skipped, %s failed", r.Run, textfmt.Count(r.Deleted), textfmt.Bytes(r.DeletedBytes),
		textfmt.Count(r.Gone), textfmt.Count(r.Skipped), textfmt.Count(r.Failed))
	if r.NotDone > 0 {
		fmt.Fprintf(w, ", %s not done", textfmt.Count(r.NotDone))
	}
	fmt.Fprintf(w, "; run %s\n", r.After)
	if r.Archive != "" {
		fmt.Fprintf(w, "  archived to %s before deleting\n", r.Archive)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  %s %s: %s\n", p.Status, textKey(p.Key), textsafe.Escape(p.Reason))
	}
	var kept []reload.SkippedFile
	for _, k := range append(append([]cleanup.Left{}, r.Kept...), r.Untracked...) {
		kept = append(kept, reload.SkippedFile{Key: k.Key, Reason: k.Reason})
	}
	printGrouped(w, "kept", kept, f.Global.Verbose > 0)
	return nil
}

// keptExit is the outcome of the files the re-check kept, with the deletes' outcome partial
// (nil when there is none): exit 4 when a verified batch does not check against the table
// now (its rows may have left it), 5 when batches need review, else partial.
func keptExit(p *cleanup.Plan, partial *ExitError) error {
	var msg []string
	code := 0
	if partial != nil {
		msg, code = append(msg, partial.Msg), partial.Code
	}
	if n := len(p.VerifyFailed); n > 0 {
		msg = append(msg, fmt.Sprintf("the run's latest verification failed for %s of run %s: nothing of %s is deleted (their files and staged copies "+
			"are kept, the reasons listed above) until zbrecover verify passes for %s",
			batchList(p.VerifyFailed), p.Run, textfmt.Either(n, "it", "them"), textfmt.Either(n, "it", "them")))
		code = MostUrgent(code, ExitVerify)
	}
	if n := len(p.CheckFailed); n > 0 {
		msg = append(msg, fmt.Sprintf("%s of run %s %s not check against the table now (their rows may have left it): "+
			"their files and staged copies are kept; zbrecover verify shows why", batchList(p.CheckFailed), p.Run, textfmt.Either(n, "does", "do")))
		code = MostUrgent(code, ExitVerify)
	}
	if n := len(p.ReviewBatches); n > 0 {
		msg = append(msg, fmt.Sprintf("%s of run %s %s review: the table's history shows their commits without proving them theirs, "+
			"so their files are kept until zbrecover verify %s --key COL (the table's key columns) proves their rows in the table; "+
			"then run cleanup again", batchList(p.ReviewBatches), p.Run, textfmt.Either(n, "needs", "need"), orDefault(p.Table, p.TableID)))
		code = MostUrgent(code, ExitPartial)
	}
	if code == 0 {
		return nil
	}
	return WithCode(code, strings.Join(msg, "\n"))
}

// batchList names batches: "batch 2", "batches 1, 3".
func batchList(bs []int) string {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = fmt.Sprint(b)
	}
	return textfmt.Noun(len(bs), "batch") + " " + strings.Join(s, ", ")
}

func cleanupExit(ctx context.Context, err error, r *cleanup.Report, tgt *tableref.Ref) error {
	var msg []string
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return WithCode(ExitInterrupted, "interrupted: what was deleted is journaled; run cleanup again to finish")
		}
		if !errors.Is(err, cleanup.ErrStagedLeft) {
			return err
		}
		// Partial: the copies left are kept and journaled; a re-run deletes them.
		msg = append(msg, strings.ReplaceAll(err.Error(), cleanup.ErrStagedLeft.Error()+": ", "")+"; run cleanup again to delete them")
	}
	if !r.Partial() && len(msg) == 0 {
		return keptExit(r.Plan, nil)
	}
	if n := r.Skipped; n > 0 {
		msg = append(msg, fmt.Sprintf("%s changed since %s verified and %s kept", textfmt.Plural(n, "file"), textfmt.Either(n, "it was", "they were"), textfmt.Were(n)))
	}
	if n := r.Failed; n > 0 {
		msg = append(msg, fmt.Sprintf("%s could not be deleted", textfmt.Plural(n, "file")))
	}
	if n := r.NotDone; n > 0 {
		msg = append(msg, fmt.Sprintf("%s %s not done", textfmt.Plural(n, "file"), textfmt.Were(n)))
	}
	s := strings.Join(msg, "; ")
	if r.Partial() {
		s += " (listed above)"
	}
	if len(r.AccessDenied()) > 0 && tgt.Loc.Scheme == "file" {
		who := "the user running zbrecover"
		if u, err := user.Current(); err == nil {
			who += " (" + u.Username + ")"
		}
		s += fmt.Sprintf("\nThe file system refused the delete to %s. Deleting a local file needs that user's write and search permission on "+
			"its folder (in a folder with the sticky bit, also ownership of the file), a file and folder that are not immutable or append-only (lsattr shows them; "+
			"chattr -i or -a, as root, clears them), and a file system not mounted read-only; then run cleanup again.", who)
	} else if len(r.AccessDenied()) > 0 {
		who := "the store's own credentials (the default chain of " + tgt.Loc.Scheme + ")"
		if tgt.Vended {
			who = "credentials Unity Catalog vended for " + tgt.TableName() + ", which are read-only on a managed table"
		}
		s += fmt.Sprintf("\nThe store refused the delete with %s. Deleting needs an identity that may delete objects in the table's storage "+
			"(the storage owner's: s3:DeleteObject, storage.objects.delete, or Storage Blob Data Contributor); "+
			"run cleanup with --storage-auth default and such credentials in the environment.", who)
	}
	return keptExit(r.Plan, &ExitError{Code: ExitPartial, Msg: s})
}
