package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/internal/textsafe"
	"github.com/zbrecover/zbrecover/recovery"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/tableref"
)

// ReloadOptions are the inputs of `zbrecover reload`.
type ReloadOptions struct {
	F          *Factory
	Target     TargetOptions
	Prefix     string
	From       string
	SchemaFile string
	Renames    []string
	BatchFiles int
	DryRun     bool
	Yes        bool
	NoValidate bool
	Journal    string
	StageTo    string
	// DedupeKey, DedupeOrder and DedupeAscending ask for a load by key (keys.go).
	DedupeKey       string
	DedupeOrder     string
	DedupeAscending bool
	// Summary is --summary: a Markdown summary of the run, to a file or "-" (stdout).
	Summary string
	// BreakLock is --break-lock: offer to break a lock another process left.
	BreakLock bool
	// Key is --key: record the keys of the loaded files (a keys file) for verify --key and
	// cleanup; KeysTo is where the keys file goes when it is not the staging location.
	Key    string
	KeysTo string
	// IgnoreForeignRuns is --ignore-foreign-runs: the operator's reason to load files that
	// runs of other journals may have loaded.
	IgnoreForeignRuns string

	// renameGuesses are the --rename values of the likely renames that blocked the plan, for
	// the summary's next step.
	renameGuesses []string
}

// NewCmdReload returns `zbrecover reload`. runF replaces the run function in tests.
func NewCmdReload(f *Factory, runF func(context.Context, *ReloadOptions) error) *cobra.Command {
	o := &ReloadOptions{F: f}
	c := &cobra.Command{
		Use:   "reload TARGET",
		Short: "Load the fallback files into the table with COPY INTO, then verify the row counts",
		Long: `Reload loads the readable fallback files into the table with COPY INTO over the SQL warehouse:
one statement per schema group and folder, at most 1000 files each, through the projection
inspect showed (casts; renames the table's history proves, or --rename OLD=NEW confirms).
VALIDATE checks every statement first; a group that still blocks stops it before anything
runs, with the fix: the tool never changes the table. Each batch is journaled before and
after its statement, and verified by its rows.

It needs a SQL warehouse, SELECT and MODIFY on the table, and read access to its storage.
For a managed table Unity Catalog refuses path reads: --stage-to copies the files to a volume
first. On a terminal it shows the plan and asks; without one it needs --yes.

Each file is loaded at most once, across crashes and Ctrl-C too: the same command run again
continues the run. Rows are deduplicated only with --dedupe-key (verify --key counts them).

TARGET is catalog.schema.table, or the table's storage root (s3://, gs://, abfss://, wasbs://,
file:// or a local directory).

` + exitHelp(exitLine{ExitSchema, "a group blocks the load (nothing loaded)"},
			exitLine{ExitVerify, "a batch inserted other rows than its files hold"},
			exitLine{ExitPartial, "partial (files left behind, or a batch unknown: run again)"}),
		Example: `  # The plan and every statement; nothing is sent
  $ zbrecover reload main.sales.orders --dry-run
  # Load, confirming the rename inspect guessed
  $ zbrecover reload main.sales.orders --rename customer_id=customer_key --yes
  # A managed table: stage the files to a volume, then load from there
  $ zbrecover reload main.sales.orders --stage-to /Volumes/main/sales/staging/orders --yes
  # Insert only the records whose key the table lacks
  $ zbrecover reload main.sales.orders --stage-to /Volumes/main/sales/staging/orders --dedupe-key order_id
  # For a script: JSON report, Markdown summary for the ticket
  $ zbrecover reload main.sales.orders --stage-to /Volumes/main/sales/staging/orders --yes -o json --summary reload.md`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := parseTarget(&o.Target, args); err != nil {
				return err
			}
			if o.Target.Table == "" {
				return FlagErrorf("reload needs the table's name: give catalog.schema.table, or --table with --root")
			}
			if !slices.Contains(schemaSourceNames, o.From) {
				return FlagErrorf("--from must be one of %s, not %q", strings.Join(schemaSourceNames, ", "), o.From)
			}
			if o.SchemaFile != "" && c.Flags().Changed("from") {
				return FlagErrorf("give --schema-file or --from, not both")
			}
			if _, err := fallback.CheckPrefix(o.Prefix); err != nil {
				return FlagErrorf("--prefix: %v", err)
			}
			if o.BatchFiles < 1 || o.BatchFiles > schemadiff.MaxCopyFiles {
				return FlagErrorf("--batch-files must be between 1 and %d, not %d", schemadiff.MaxCopyFiles, o.BatchFiles)
			}
			if _, err := parseRenames(o.Renames); err != nil {
				return err
			}
			if err := validateDedupeFlags(o); err != nil {
				return err
			}
			if _, err := parseKeyFlag("key", o.Key); err != nil {
				return err
			}
			if o.KeysTo != "" && o.Key == "" && o.DedupeKey == "" {
				return FlagErrorf("--keys-to goes with --key or --dedupe-key")
			}
			if err := checkSummaryFlag(f, o.Summary); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return reloadRun(c.Context(), o)
		},
	}
	addTargetFlags(c, &o.Target)
	fl := c.Flags()
	fl.StringVar(&o.Prefix, "prefix", fallback.Prefix, "the fallback folder under the table root (a folder under _zerobus/)")
	addBreakLockFlag(c, &o.BreakLock)
	fl.StringVar(&o.From, "from", "warehouse", "where to read the table schema: warehouse, uc or delta")
	fl.StringVar(&o.SchemaFile, "schema-file", "", "read the table schema from this file instead (as inspect)")
	fl.StringArrayVar(&o.Renames, "rename", nil, "confirm a rename: load file column OLD into table column NEW (OLD=NEW, names as written or in backquotes; repeatable)")
	fl.IntVar(&o.BatchFiles, "batch-files", schemadiff.MaxCopyFiles, "the most files one COPY INTO names")
	fl.BoolVar(&o.DryRun, "dry-run", false, "print the plan and every statement; run nothing")
	fl.BoolVarP(&o.Yes, "yes", "y", false, "load without asking")
	fl.BoolVar(&o.NoValidate, "no-validate", false, "skip the VALIDATE ALL preflight (a path-access probe still runs)")
	fl.StringVar(&o.Journal, "journal", "", "keep the journal at this storage URL (default: the local state directory)")
	fl.StringVar(&o.StageTo, "stage-to", "", "copy the files here first and load them from here: /Volumes/<catalog>/<schema>/<volume>/<dir> or an external location's URL")
	fl.StringVar(&o.DedupeKey, "dedupe-key", "", "load by key: insert only records whose key (COL[,COL]) the table lacks, one per key")
	fl.StringVar(&o.DedupeOrder, "dedupe-order", "", "with --dedupe-key: of the records of one key keep the one with the highest COL (a name as written or in backquotes)")
	fl.BoolVar(&o.DedupeAscending, "dedupe-ascending", false, "with --dedupe-order: keep the lowest instead")
	addSummaryFlag(c, &o.Summary)
	fl.StringVar(&o.Key, "key", "", "read the key columns (COL[,COL]) of the files loaded into a keys file the warehouse can read (beside the staged copies, or --keys-to), so verify --key and cleanup check them by key after the files are gone")
	fl.StringVar(&o.KeysTo, "keys-to", "", "with --key (or --dedupe-key): put the keys file here instead of the staging location (/Volumes/… or an external location)")
	fl.StringVar(&o.IgnoreForeignRuns, "ignore-foreign-runs", "", "load files that runs of other journals may have loaded (the table's history names them), for this REASON, which is journaled")
	return c
}

// parseRenames reads --rename OLD=NEW flags: each name as written (spaces inside it kept)
// or in backquotes (`customer id`=`customer key`, and a name holding = or a comma).
func parseRenames(list []string) (map[string]string, error) {
	out := map[string]string{}
	for _, r := range list {
		old, nw, ok := cutUnquoted(r, '=')
		if !ok || strings.TrimSpace(old) == "" || strings.TrimSpace(nw) == "" {
			return nil, FlagErrorf("--rename %q: want OLD=NEW (the file's column and the table's; a name holding = in backquotes)", r)
		}
		o, err := reload.ParseName(old)
		if err != nil {
			return nil, FlagErrorf("--rename %q: %v", r, err)
		}
		n, err := reload.ParseName(nw)
		if err != nil {
			return nil, FlagErrorf("--rename %q: %v", r, err)
		}
		out[o] = n
	}
	return out, nil
}

// cutUnquoted cuts s at the first sep outside backquotes.
func cutUnquoted(s string, sep byte) (before, after string, found bool) {
	in := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '`':
			in = !in // a doubled backquote inside a name toggles twice
		case s[i] == sep && !in:
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// reloadRun logs the run header, reloads and writes the --summary.
func reloadRun(ctx context.Context, o *ReloadOptions) error {
	s := runHeader(ctx, o.F, true)
	s.Command = "reload"
	return withSummary(ctx, o.F, o.Summary, s, func(code int) []string { return reloadNext(o, s, code) },
		func() error { return reloadSteps(ctx, o, s) })
}

func reloadSteps(ctx context.Context, o *ReloadOptions, s *runSummary) error {
	f := o.F
	s.Table = o.Target.Table
	wh, store, err := openReload(ctx, o, s)
	if err != nil {
		return err
	}
	defer closeJournal(store)
	env, err := f.recoveryEnv(wh, store)
	if err != nil {
		return err
	}
	bar := newFooterProgress(f, "footers")
	env.Footers, env.FootersDone = bar.update, bar.done
	req, err := reloadRequest(o)
	if err != nil {
		return err
	}
	rec, planErr := recovery.Prepare(ctx, env, req)
	if rec != nil {
		s.Table, s.Root = rec.Target.TableName(), rec.Target.Display()
		f.warnWedged(store, rec.Target.TableID, s)
	}
	if rec == nil || rec.Prepared == nil {
		return usageError(planErr)
	}
	prep, rep, tgt := rec.Prepared, rec.Report, rec.Target
	defer prep.Close()
	if err := showReloadPlan(f, o, s, prep, rep, planErr); err != nil || planErr != nil || o.DryRun {
		return err
	}
	if prep.Nothing() {
		return reloadNothing(f, s, prep, rep, tgt)
	}
	if err := confirmReload(ctx, f, o, s, prep, wh, tgt); err != nil {
		return err
	}
	runErr := executeReload(ctx, f, s, prep, rec.Stage)
	return reloadExit(ctx, runErr, rep, prep, tgt, o)
}

// reloadRequest turns the flags into the reload recovery.Prepare gathers and prepares: the
// schema's source (or the schema file, read here) as values.
func reloadRequest(o *ReloadOptions) (recovery.Request, error) {
	f := o.F
	renames, _ := parseRenames(o.Renames)
	key, _ := parseKeyFlag("key", o.Key)
	req := recovery.Request{Target: o.Target, Journal: o.Journal, Prefix: o.Prefix, Renames: renames, BatchFiles: o.BatchFiles, NoValidate: o.NoValidate,
		IgnoreForeignRuns: o.IgnoreForeignRuns, StageTo: o.StageTo, KeysTo: o.KeysTo, Key: key, Header: header(""),
		BreakLock: f.lockBreaker(o.BreakLock, o.Yes)}
	if dk, _ := parseKeyFlag("dedupe-key", o.DedupeKey); dk != nil {
		order, _ := parseOrderFlag(o.DedupeOrder)
		req.Dedupe = &recovery.Dedupe{Key: dk, Order: order, Ascending: o.DedupeAscending}
	}
	req.Schema.From = o.From
	if o.SchemaFile != "" {
		t, err := readSchemaFile(f, o.SchemaFile)
		if err != nil {
			return req, err
		}
		req.Schema.File = &t.Table
		return req, nil
	}
	src, err := schemaSource(f, o.From)
	req.Schema.Source = src
	return req, err
}

// recoveryEnv is what recovery.Prepare works with in this run: the resolver, the warehouse
// and its sessions, the journal and the run's places.
func (f *Factory) recoveryEnv(wh *databricks.Warehouse, store journalStore) (recovery.Env, error) {
	r, err := f.resolver()
	if err != nil {
		return recovery.Env{}, err
	}
	d := recovery.WarehouseDeps(wh, store, "", f.Logger)
	return recovery.Env{Resolver: r, Journal: store, Warehouse: d.Warehouse, Session: d.Session, Concurrency: f.Global.Concurrency, Log: f.Logger,
		Places: f.places()}, nil
}

// usageError maps recovery's usage errors to the exit code of a command-line mistake.
func usageError(err error) error {
	var ue *recovery.UsageError
	switch {
	case !errors.As(err, &ue):
		return err
	case ue.Flag:
		return FlagErrorf("%s", ue.Msg)
	}
	return WithCode(ExitUsage, ue.Msg)
}

// openReload opens the warehouse and the journal a reload needs.
func openReload(ctx context.Context, o *ReloadOptions, s *runSummary) (*databricks.Warehouse, journalStore, error) {
	ws := o.F.workspace()
	if ws == nil {
		return nil, nil, fmt.Errorf("table %s: %w", o.Target.Table, ErrNeedsDatabricks)
	}
	wh, err := ws.Warehouse(ctx)
	if err != nil {
		return nil, nil, err
	}
	store, err := o.F.openRunJournal(ctx, o.Journal, s)
	if err != nil {
		return nil, nil, err
	}
	return wh, store, nil
}

// confirmReload asks before loading (or requires --yes without a terminal), then notes the
// warehouse identity the run records.
func confirmReload(ctx context.Context, f *Factory, o *ReloadOptions, s *runSummary, prep *reload.Prepared, wh *databricks.Warehouse, tgt *tableref.Ref) error {
	if err := confirm(f, o.Yes, workQuestion(prep.Work()),
		fmt.Sprintf("reload writes to %s: pass --yes to load without a terminal to confirm on (or --dry-run to see the plan)", tgt.TableName())); err != nil {
		return err
	}
	s.Identity = recovery.CurrentUser(ctx, wh)
	f.Logger.Info("warehouse identity", "user", orUnknown(s.Identity))
	return nil
}

// executeReload runs the prepared reload with its progress bars and prints the report.
func executeReload(ctx context.Context, f *Factory, s *runSummary, prep *reload.Prepared, stage *reload.Stage) error {
	bars := newBars(f)
	ro := reload.RunOptions{Identity: s.Identity, Header: header(s.Identity)}
	if stage != nil {
		ro.StageProgress = bars.counter("staged", "files")
	}
	ro.Progress = reload.Progress{Validate: bars.counter("validated", "statements"), Keys: bars.counter("keys read", "files"),
		Load: bars.counter("loaded", "batches")}
	res, runErr := prep.Execute(ctx, ro)
	bars.done(runErr == nil)
	if res != nil {
		summarizeReload(s, res)
	}
	// A run that stopped before its first journal record (a refused preflight) has nothing to
	// report: the error says what happened.
	if res != nil && (res.Run != "" || runErr == nil) {
		if err := printReloadReport(f, res); err != nil {
			return err
		}
	}
	return runErr
}

// showReloadPlan prints the plan (with every statement on --dry-run or a blocked plan) and
// says what earlier runs hold back.
func showReloadPlan(f *Factory, o *ReloadOptions, s *runSummary, prep *reload.Prepared, rep *inspect.Report, planErr error) error {
	plan := prep.Plan
	if n := len(prep.SecondPath); n > 0 {
		fmt.Fprintf(f.IO.ErrOut, "Refused through %s: %s %s loaded, or may have been, by earlier runs through another path; "+
			"a copy under another path would be loaded again, so they are not staged or loaded (zbrecover history lists them)\n",
			textsafe.Quote(strings.TrimSuffix(prep.Source, "/")), textfmt.Plural(n, "file"), textfmt.Were(n))
	}
	work := prep.Work()
	s.Files, s.Rows = work.Files(), work.Rows()
	sk := splitSkipped(prep)
	summarizePlan(s, plan, sk, prep.Changed)
	if err := printPlan(f, plan, work, sk, prep.Changed, o.DryRun || planErr != nil); err != nil {
		return err
	}
	if planErr != nil {
		if errors.Is(planErr, reload.ErrBlocked) {
			s.RunStatus = "blocked: nothing was loaded"
			o.renameGuesses = plan.RenameGuesses()
			return WithCode(ExitSchema, planErr.Error())
		}
		return planErr
	}
	if o.DryRun {
		s.RunStatus = "dry run: nothing was executed"
		fmt.Fprintln(f.IO.ErrOut, "Dry run: nothing was executed.")
	}
	return nil
}

// reloadNothing reports a reload with nothing to load.
func reloadNothing(f *Factory, s *runSummary, prep *reload.Prepared, rep *inspect.Report, tgt *tableref.Ref) error {
	why := nothingReason(prep.Plan, rep)
	s.RunStatus = "nothing to load: " + why
	fmt.Fprintf(f.IO.ErrOut, "Nothing to load: %s\n", why)
	if f.Global.JSON() {
		if err := printJSON(f, prep.NothingReport()); err != nil {
			return err
		}
	}
	return partialIf(rep, prep.Changed, prep.Plan.Refused...)
}

// confirm asks question on a terminal (--yes skips it); without one it is the usage error
// noTTY.
func confirm(f *Factory, yes bool, question, noTTY string) error {
	if yes {
		return nil
	}
	if !f.IO.CanPrompt() {
		return FlagErrorf("%s", noTTY)
	}
	fmt.Fprintf(f.IO.ErrOut, "%s [y/N] ", question)
	line, _ := bufio.NewReader(f.IO.In).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return WithCode(ExitFailure, "not confirmed: nothing was done")
	}
	return nil
}

// skipped are the files a plan leaves to runs of the journal: those of the run this reload
// continues (which it finishes), and those earlier runs loaded or may have.
type skipped struct {
	run       string // the run continued, "" for none
	continued int
	earlier   int
}

func splitSkipped(prep *reload.Prepared) skipped {
	sk := skipped{earlier: len(prep.Plan.Skipped)}
	if prep.Continues == nil {
		return sk
	}
	sk.run = prep.Continues.Run
	own := map[string]bool{}
	for _, fs := range prep.Continues.Files() {
		own[strings.TrimPrefix(fs.Key, prep.Plan.Prefix)] = true
	}
	for _, f := range prep.Plan.Skipped {
		if own[f.Key] {
			sk.continued++
			sk.earlier--
		}
	}
	return sk
}

// lines says what sk holds back, one line each.
func (sk skipped) lines() []string {
	var out []string
	if sk.continued > 0 {
		out = append(out, fmt.Sprintf("%s %s to run %s, which this reload continues", textfmt.Plural(sk.continued, "file"), textfmt.Either(sk.continued, "belongs", "belong"), sk.run))
	}
	if n := sk.earlier; n > 0 {
		out = append(out, fmt.Sprintf("%s %s loaded by earlier runs and %s not planned again", textfmt.Plural(n, "file"), textfmt.Were(n), textfmt.Are(n)))
	}
	return out
}

// summarizePlan notes in s what the plan leaves out.
func summarizePlan(s *runSummary, plan *reload.Plan, sk skipped, changed []string) {
	s.Notes = append(s.Notes, sk.lines()...)
	if n := len(plan.Unreadable); n > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%s %s left behind", textfmt.Plural(n, "unreadable fallback file"), textfmt.Are(n)))
	}
	if n := len(changed); n > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%s changed since a run recorded %s and %s not loaded", textfmt.Plural(n, "file"), textfmt.Either(n, "it", "them"), textfmt.Were(n)))
	}
	for _, b := range plan.Blocked {
		var changes []string
		for _, c := range b.Changes {
			changes = append(changes, fmt.Sprint(c))
		}
		s.Notes = append(s.Notes, fmt.Sprintf("schema group %s (%s) blocks the load: %s", b.Group, textfmt.Plural(b.Files, "file"), strings.Join(changes, "; ")))
	}
}

// summarizeReload copies reload's report into s.
func summarizeReload(s *runSummary, r *reload.Report) {
	s.Run, s.Table, s.Root = r.Run, r.Table, r.Root
	s.Files, s.Rows, s.Inserted = r.Files, r.Rows, r.Inserted
	s.RunStatus = r.Status
	if r.Resumed {
		s.RunStatus += " (continued an earlier run)"
	}
	s.Batches = map[string]int{}
	for _, b := range r.Batches {
		s.Batches[string(b.Status)]++
	}
	if r.Staged+r.StagedReused > 0 {
		s.Staged = fmt.Sprintf("%s copied, %s reused", textfmt.Plural(r.Staged, "file"), textfmt.Plural(r.StagedReused, "verified copy"))
	}
	s.Verification = fmt.Sprintf("%s of %s verified (inserted rows = footer rows); %s unknown, %s failed, %s mismatch; %s sent",
		textfmt.Count(r.Verified), textfmt.Plural(len(r.Batches), "batch"), textfmt.Count(r.Unknown), textfmt.Count(r.Failed), textfmt.Count(r.Mismatch),
		textfmt.Plural(r.Statements, "load statement"))
	s.Notes = append(s.Notes, r.Warnings...)
	if guaranteeApplies(r) {
		s.Notes = append(s.Notes, r.Guarantee)
	}
}

// guaranteeApplies says whether the report states its guarantee: a load by key always (what
// its MERGE guarantees), a plain load only when the run put rows in the table. The at-least-
// once note is said once, where it applies: not for a run that loaded nothing, and never by
// verify, whose key check measures the duplicates it warns of.
func guaranteeApplies(r *reload.Report) bool {
	return r.Guarantee != "" && (r.Guarantee == reload.GuaranteeDedupe || r.Inserted > 0)
}

// reloadNext is what to do after a reload that exited with code.
func reloadNext(o *ReloadOptions, s *runSummary, code int) []string {
	table := orDefault(s.Table, o.Target.Table)
	again := "zbrecover reload " + textfmt.Shell(table)
	for _, r := range o.Renames {
		again += " --rename " + textfmt.Shell(r)
	}
	if o.StageTo != "" {
		again += " --stage-to " + textfmt.Shell(o.StageTo)
	}
	again += " --yes"
	run := ""
	if s.Run != "" {
		run = " --run " + s.Run
	}
	switch code {
	case ExitOK:
		if s.Run == "" {
			return []string{"nothing was loaded by this run; " + mdCmd("zbrecover history "+table) + " lists the earlier runs"}
		}
		return []string{"re-check the counts: " + mdCmd("zbrecover verify "+table+run),
			"see the plan of the deletion: " + mdCmd("zbrecover cleanup "+table+run) + ", then delete with " + mdCmd("zbrecover cleanup "+table+run+" --yes")}
	case ExitSchema:
		if len(o.renameGuesses) > 0 {
			confirmed := strings.TrimSuffix(again, " --yes")
			for _, r := range o.renameGuesses {
				confirmed += " --rename " + textfmt.Shell(r)
			}
			return []string{"if the columns were renamed as guessed, confirm it: " + mdCmd(confirmed+" --yes") +
				" (the plan printed the ALTER TABLE statements any other change needs)"}
		}
		return []string{"change the table (the plan printed the ALTER TABLE statements) or confirm renames with --rename OLD=NEW, then " + mdCmd(again)}
	case ExitVerify:
		return []string{"the table holds another number of rows than the files: " + mdCmd("zbrecover verify "+table+run) + " shows the batches; do not run cleanup"}
	case ExitPartial, ExitInterrupted, ExitTerminated, ExitFailure:
		return []string{"run the same reload again: it continues this run and loads no file twice: " + mdCmd(again),
			"the journal: " + mdCmd("zbrecover history "+table+run)}
	}
	return []string{"fix the command line (" + mdCmd("zbrecover reload --help") + ")"}
}

func nothingReason(p *reload.Plan, rep *inspect.Report) string {
	switch {
	case len(p.Skipped) > 0 && len(p.Refused) > 0:
		return fmt.Sprintf("%s %s loaded by earlier runs (zbrecover history lists them), and %s %s left behind (the plan says why)",
			textfmt.Plural(len(p.Skipped), "readable fallback file"), textfmt.Were(len(p.Skipped)), textfmt.Plural(len(p.Refused), "file"), textfmt.Are(len(p.Refused)))
	case len(p.Refused) > 0:
		return fmt.Sprintf("every readable fallback file is left behind (%s; the plan says why)", textfmt.Plural(len(p.Refused), "file"))
	case len(p.Skipped) > 0:
		return fmt.Sprintf("%s loaded by earlier runs (zbrecover history lists them)",
			textfmt.Either(len(p.Skipped), "the one readable fallback file was", "all "+textfmt.Plural(len(p.Skipped), "readable fallback file")+" were"))
	case rep.Totals.Files == 0:
		return "no fallback files under " + rep.Root + "/" + rep.Prefix
	}
	return "no readable fallback files"
}

// workQuestion asks about all the work a reload does, as terraform apply does: what it
// settles, stages, checks and loads, and where.
func workQuestion(w reload.Work) string {
	var steps []string
	if w.Settle > 0 {
		steps = append(steps, fmt.Sprintf("settle %s of run %s whose outcome is unknown, from the table's history (sending %s again if it did not commit)",
			textfmt.Plural(w.Settle, "batch"), w.Continues, textfmt.Either(w.Settle, "it", "each")))
	}
	if w.Stage > 0 {
		steps = append(steps, fmt.Sprintf("stage %s to %s", textfmt.Plural(w.Stage, "file"), w.StageTo))
	}
	if n := len(w.Batches); n > 0 && w.Validate {
		steps = append(steps, fmt.Sprintf("check %s with VALIDATE ALL", textfmt.Plural(n, "statement")))
	}
	load := fmt.Sprintf("load %s (%s) into %s in %s", textfmt.Plural(w.Files(), "file"), textfmt.Plural(w.Rows(), "row"), w.Table, textfmt.Plural(len(w.Batches), "statement"))
	if len(w.Batches) == 0 {
		load = "load nothing more into " + w.Table
	}
	steps = append(steps, load)
	q := strings.Join(steps, ", then ")
	return strings.ToUpper(q[:1]) + q[1:] + "?"
}

// workTotals is the plan's last line: the totals of what the reload does.
func workTotals(w reload.Work) string {
	line := fmt.Sprintf("Plan: %s, %s in %s into %s", textfmt.Plural(w.Files(), "file"), textfmt.Plural(w.Rows(), "row"), textfmt.Plural(len(w.Batches), "statement"), w.Table)
	var more []string
	if w.Continues != "" {
		cont := 0
		for _, b := range w.Batches {
			if b.Continued {
				cont++
			}
		}
		more = append(more, fmt.Sprintf("continuing run %s (%s of its own to send, %s to settle)", w.Continues, textfmt.Plural(cont, "batch"), textfmt.Plural(w.Settle, "batch")))
	}
	if w.Stage > 0 {
		more = append(more, fmt.Sprintf("%s staged to %s first", textfmt.Plural(w.Stage, "file"), w.StageTo))
	}
	if len(more) > 0 {
		line += "; " + strings.Join(more, "; ")
	}
	return line
}

func printPlan(f *Factory, p *reload.Plan, work reload.Work, sk skipped, changed []string, withSQL bool) error {
	if f.Global.JSON() && withSQL {
		return printJSON(f, planJSON(p, work))
	}
	out := f.IO.ErrOut
	if withSQL {
		out = f.IO.Out
	}
	// The lines about the plan under a heading, when there are some; the totals last.
	var body strings.Builder
	w := &body
	defer func() {
		if body.Len() > 0 {
			fmt.Fprintf(out, "Plan for %s:\n%s", p.Table, body.String())
		}
		fmt.Fprintln(out, workTotals(work))
	}()
	for _, l := range sk.lines() {
		fmt.Fprintf(w, "  %s\n", l)
	}
	printLeftBehind(w, p, withSQL)
	for _, c := range changed {
		fmt.Fprintf(w, "  changed since a run recorded it, not loaded: %s\n", textsafe.Escape(c))
	}
	if files, forced := p.Redo(); files > 0 {
		fmt.Fprintf(w, "  %s of undone batches %s loaded again (redo): %s\n", textfmt.Plural(files, "file"), textfmt.Are(files), redoHow(forced))
	}
	for _, b := range p.Blocked {
		fmt.Fprintf(w, "  schema group %s (%s) blocks the load:\n", b.Group, textfmt.Plural(b.Files, "file"))
		for _, c := range b.Changes {
			fmt.Fprintf(w, "    %s\n", c)
		}
		for _, d := range b.DDL {
			fmt.Fprintf(w, "    fix: %s;\n", d)
		}
		for _, n := range b.Notes {
			fmt.Fprintf(w, "    note: %s\n", n)
		}
	}
	if withSQL {
		printStatements(w, work)
	}
	return nil
}

// printLeftBehind lists the files the plan leaves behind: unreadable, and refused by reason
// (the first refusedShown of each reason, all of them with the statements).
func printLeftBehind(w io.Writer, p *reload.Plan, all bool) {
	if n := len(p.Unreadable); n > 0 {
		fmt.Fprintf(w, "  %s %s left behind:\n", textfmt.Plural(n, "unreadable file"), textfmt.Are(n))
		for _, u := range p.Unreadable {
			fmt.Fprintf(w, "    %s: %s\n", textKey(u.Key), textsafe.Escape(u.Error))
		}
	}
	for _, g := range groupRefused(p.Refused) {
		n := len(g.keys)
		fmt.Fprintf(w, "  %s %s left behind: %s\n", textfmt.Plural(n, "file"), textfmt.Are(n), textsafe.Escape(g.reason))
		for i, k := range g.keys {
			if i == refusedShown && !all {
				fmt.Fprintf(w, "    … and %s more (--dry-run lists them all)\n", textfmt.Count(n-i))
				break
			}
			fmt.Fprintf(w, "    %s\n", textKey(k))
		}
	}
}

// printStatements lists the batches a continued run settles first and every batch's
// statement, as --dry-run shows them.
func printStatements(w io.Writer, work reload.Work) {
	for _, b := range work.Settling {
		fmt.Fprintf(w, "\n-- batch %d, of run %s, to settle first from the table's history (its statement may have committed): group %s, folder %q, %s, %s\n",
			b.N, work.Continues, b.Group, b.Folder, textfmt.Plural(len(b.Files), "file"), textfmt.Plural(b.Rows, "row"))
		if b.SQL != "" {
			fmt.Fprintf(w, "-- sent again only if it did not commit:\n%s;\n", textsafe.Escape(b.SQL))
		}
	}
	for _, b := range work.Batches {
		of := ""
		if b.Continued {
			of = ", of run " + work.Continues
		}
		fmt.Fprintf(w, "\n-- batch %d%s: group %s, folder %q, %s, %s\n%s;\n", b.N, of, b.Group, b.Folder, textfmt.Plural(len(b.Files), "file"), textfmt.Plural(b.Rows, "row"), textsafe.Escape(b.SQL))
	}
	fmt.Fprintln(w)
}

// refusedShown is how many keys of one reason a plan shows without --dry-run.
const refusedShown = 10

type refusedGroup struct {
	reason string
	keys   []string
}

// groupRefused groups refused files by reason, in the order the reasons first appear.
func groupRefused(files []reload.SkippedFile) []refusedGroup {
	var out []refusedGroup
	at := map[string]int{}
	for _, f := range files {
		i, ok := at[f.Reason]
		if !ok {
			i = len(out)
			at[f.Reason] = i
			out = append(out, refusedGroup{reason: f.Reason})
		}
		out[i].keys = append(out[i].keys, f.Key)
	}
	return out
}

type planDoc struct {
	Table string `json:"table"`
	Files int    `json:"files"`
	Rows  int64  `json:"rows"`
	// Continues is the run this reload continues ("" for none); Settle its batches to
	// settle first; StageTo and Stage the staging location and the files copied there.
	Continues  string                `json:"continues,omitempty"`
	Settle     int                   `json:"settle_batches,omitempty"`
	Settling   []planBatchDoc        `json:"settling,omitempty"`
	StageTo    string                `json:"stage_to,omitempty"`
	Stage      int                   `json:"stage_files,omitempty"`
	Batches    []planBatchDoc        `json:"batches"`
	Skipped    []reload.SkippedFile  `json:"skipped"`
	Unreadable []string              `json:"unreadable"`
	Refused    []reload.SkippedFile  `json:"refused"`
	Blocked    []reload.BlockedGroup `json:"blocked"`
	// Redo counts the files of undone batches loaded again, Forced those of them read from
	// the fallback folder with COPY INTO's force (zbrecover undo).
	Redo   int `json:"redo_files,omitempty"`
	Forced int `json:"forced_files,omitempty"`
}

// redoHow says how the files of undone batches load again.
func redoHow(forced int) string {
	if forced > 0 {
		return "read from the fallback folder with COPY INTO's force on exactly those FILES, which the undo proved gone from the table"
	}
	return "through fresh staged paths, which no earlier load read (COPY INTO skips a path it loaded, even if the file changed)"
}

type planBatchDoc struct {
	Batch     int      `json:"batch"`
	Continued bool     `json:"continued,omitempty"`
	Group     string   `json:"group,omitempty"`
	Folder    string   `json:"folder"`
	Files     []string `json:"files"`
	Rows      int64    `json:"rows"`
	SQL       string   `json:"sql,omitempty"`
}

func planJSON(p *reload.Plan, work reload.Work) planDoc {
	d := planDoc{Table: p.Table.String(), Files: work.Files(), Rows: work.Rows(), Continues: work.Continues, Settle: work.Settle,
		StageTo: work.StageTo, Stage: work.Stage, Batches: []planBatchDoc{},
		Skipped: append([]reload.SkippedFile{}, p.Skipped...), Unreadable: []string{}, Refused: append([]reload.SkippedFile{}, p.Refused...),
		Blocked: append([]reload.BlockedGroup{}, p.Blocked...)}
	for _, b := range work.Settling {
		d.Settling = append(d.Settling, planBatchDoc{Batch: b.N, Continued: true, Group: b.Group, Folder: b.Folder, Files: b.Files, Rows: b.Rows, SQL: b.SQL})
	}
	for _, b := range work.Batches {
		d.Batches = append(d.Batches, planBatchDoc{Batch: b.N, Continued: b.Continued, Group: b.Group, Folder: b.Folder, Files: b.Files, Rows: b.Rows, SQL: b.SQL})
	}
	for _, u := range p.Unreadable {
		d.Unreadable = append(d.Unreadable, u.Key)
	}
	d.Redo, d.Forced = p.Redo()
	return d
}

func printReloadReport(f *Factory, r *reload.Report) error {
	if f.Global.JSON() {
		if r.Batches == nil {
			r.Batches = []reload.BatchReport{}
		}
		return printJSON(f, r)
	}
	w := f.IO.Out
	verb := "Run"
	if r.Resumed {
		verb = "Continued run"
	}
	fmt.Fprintf(w, "%s %s on %s\n", verb, r.Run, r.Table)
	for _, b := range r.Batches {
		ins := "-"
		if b.Inserted != nil {
			ins = textfmt.Count(*b.Inserted)
		}
		fmt.Fprintf(w, "  batch %d  %-9s  %s  %s expected, %s inserted  %s\n", b.Batch, b.Status, textfmt.Plural(b.Files, "file"), textfmt.Plural(b.Expected, "row"), ins, textsafe.Escape(b.Reason))
	}
	fmt.Fprintf(w, "%s sent; %s verified, %s unknown, %s failed, %s mismatch; run %s\n",
		textfmt.Plural(r.Statements, "load statement"), textfmt.Plural(r.Verified, "batch"), textfmt.Count(r.Unknown), textfmt.Count(r.Failed), textfmt.Count(r.Mismatch), r.Status)
	for _, warn := range r.Warnings {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", textsafe.Escape(warn))
	}
	printMergeReport(w, r.Merge)
	if guaranteeApplies(r) {
		fmt.Fprintf(w, "%s\n", r.Guarantee)
	}
	return nil
}

func partialIf(rep *inspect.Report, changed []string, refused ...reload.SkippedFile) error {
	var msgs []string
	if n := rep.Totals.Unreadable; n > 0 {
		msgs = append(msgs, fmt.Sprintf("%s %s left behind", textfmt.Plural(n, "unreadable fallback file"), textfmt.Were(n)))
	}
	if n := len(refused); n > 0 {
		msgs = append(msgs, fmt.Sprintf("%s %s left behind: %s", textfmt.Plural(n, "fallback file"), textfmt.Were(n), textsafe.Escape(refused[0].Reason)))
	}
	if len(changed) > 0 {
		n := len(changed)
		msgs = append(msgs, fmt.Sprintf("%s changed since a run recorded %s and %s not loaded", textfmt.Plural(n, "file"), textfmt.Either(n, "it", "them"), textfmt.Were(n)))
	}
	if len(msgs) > 0 {
		return WithCode(ExitPartial, strings.Join(msgs, "; "))
	}
	return nil
}

// reloadExit maps reload's outcome to the exit code, the most urgent first.
func reloadExit(ctx context.Context, err error, rep *inspect.Report, prep *reload.Prepared, tgt *tableref.Ref, o *ReloadOptions) error {
	switch {
	case err == nil:
		return partialIf(rep, prep.Changed, prep.Plan.Refused...)
	case errors.Is(err, reload.ErrMismatch):
		return WithCode(ExitVerify, err.Error())
	case errors.Is(err, reload.ErrInterrupted):
		return WithCode(ExitInterrupted, err.Error()+": reload stopped cleanly and journaled what it did; run the same command again "+
			"to continue the run (a statement that was in flight is settled from the table's history; no file is loaded twice)")
	case errors.Is(err, reload.ErrLocationOverlap):
		cmdline := "zbrecover reload " + textfmt.Shell(tgt.TableName())
		for _, r := range o.Renames {
			cmdline += " --rename " + textfmt.Shell(r)
		}
		to, where := databricks.StageToSuggestion(tgt.Name), "(the volume must exist; the workspace identity needs WRITE VOLUME on it)"
		if vols := o.F.places().SchemaVolumes(ctx, tgt.Name); len(vols) > 0 {
			to = textfmt.Shell(strings.Replace(to, "<volume>", vols[0], 1))
			where = fmt.Sprintf("(the volumes of %s.%s: %s; the workspace identity needs READ VOLUME and WRITE VOLUME on the one chosen)",
				tgt.Name.Catalog, tgt.Name.Schema, strings.Join(vols, ", "))
		}
		return fmt.Errorf("%w.\nNothing was loaded. Stage the files to a volume (or an external location) the warehouse may read, and load from there:\n"+
			"  %s --stage-to %s --yes\n%s", err, cmdline, to, where)
	case errors.Is(err, reload.ErrValidate):
		return WithCode(ExitSchema, err.Error()+": nothing was loaded")
	case errors.Is(err, reload.ErrUnknown):
		return WithCode(ExitPartial, err.Error())
	case errors.Is(err, reload.ErrStagedChanged), errors.Is(err, reload.ErrForeignRun):
		return WithCode(ExitFailure, err.Error())
	}
	return err
}
