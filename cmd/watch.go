package cmd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/place"
	"github.com/zbrecover/zbrecover/recovery"
	"github.com/zbrecover/zbrecover/scan"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/watch"
)

// WatchOptions are the inputs of `zbrecover watch`.
type WatchOptions struct {
	F            *Factory
	Config       watch.Config
	Journal      string
	SingleHost   bool
	MetricsAddr  string
	AlertCommand string
}

// NewCmdWatch returns `zbrecover watch`. runF replaces the run function in tests.
func NewCmdWatch(f *Factory, runF func(context.Context, *WatchOptions) error) *cobra.Command {
	o := &WatchOptions{F: f}
	c := &cobra.Command{
		Use:   "watch [CATALOG[.SCHEMA]] --stage-to PLACE --journal URL",
		Short: "Recover parked records continuously: scan, reload, verify and (after a delay) clean up, with alerts and metrics",
		Long: `Watch recovers parked records by itself wherever it is safe, and wakes a person where it is not.
Every --interval it scans the scope (as scan does) for tables with fallback files older than
--min-age, and for each: inspects them, reloads the schema groups that load as the table is
(staged under --stage-to, in a folder per table; tagged, journaled and verified, the path
reload takes), and verifies the run. A group whose schema blocks the load raises an alert
once and waits for the fix: watch never changes a table. With --cleanup-after, files of
batches verified that long ago, which cleanup proves in the table again, are deleted (or
archived with --archive-to); without it nothing is deleted.

One watcher works on a table at a time: it holds the table's lock in the journal as a lease
and renews it; another watcher, or an operator's reload, finds the table locked, and the
watcher leaves it for the cycle. The journal must be shared (--journal URL on object
storage); a local journal needs --single-host. Each event is one JSON line on stdout;
--metrics-addr serves Prometheus metrics and /healthz; --alert-command is run with the
event's JSON on stdin for blocked tables, failures, quarantines and runs that need review.

SIGTERM (or Ctrl-C) lets the statement in flight finish, stops at a journaled point and
exits 0; a second one exits at once. After kill -9, the next start converges: it continues
the unfinished run and loads no file twice. A table that fails --max-failures cycles in a
row is quarantined (alerted) until watch restarts.

` + exitHelp(exitLine{ExitOK, "ok (with --once: nothing blocked, failed or needs review)"},
			exitLine{ExitSchema, "with --once: some table is blocked by its schema"},
			exitLine{ExitVerify, "with --once: a run needs review"},
			exitLine{ExitPartial, "with --once: some table failed"}),
		Example: `  # A catalog, every 5 minutes; delete what was proved loaded a week ago
  $ zbrecover watch main --stage-to /Volumes/main/ops/staging/zbrecover --journal s3://ops/zbrecover-journal --cleanup-after 168h
  # One schema, some tables, with metrics and a Slack alert
  $ zbrecover watch main.sales --table-pattern 'orders_*' --stage-to /Volumes/main/sales/staging/watch \
      --journal s3://ops/zbrecover-journal --metrics-addr :9464 --alert-command 'slack-notify --channel ops'
  # One cycle, from cron or a scheduled job
  $ zbrecover watch main --stage-to /Volumes/main/ops/staging/zbrecover --journal s3://ops/zbrecover-journal --once`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := parseWatchFlags(o, args); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return watchCmdRun(c.Context(), o)
		},
	}
	cfg := &o.Config
	fl := c.Flags()
	fl.StringVar(&cfg.TablePattern, "table-pattern", "", "watch only the tables whose name matches `GLOB` (*, ?, [a-z]; any case)")
	fl.StringVar(&cfg.Prefix, "prefix", fallback.Prefix, "the fallback folder under each table root (a folder under _zerobus/)")
	durationVar(fl, &cfg.MinAge, "min-age", 10*time.Minute, "recover only files older than `DURATION` (a producer may be writing them)")
	fl.StringVar(&cfg.StageTo, "stage-to", "", "stage the files here, in a folder per table (its table id): /Volumes/<catalog>/<schema>/<volume>/<dir> or an external location's URL")
	fl.StringVar(&o.Journal, "journal", "", "the shared journal's storage URL (a local journal needs --single-host)")
	fl.BoolVar(&o.SingleHost, "single-host", false, "accept a local journal: every watcher, reload and cleanup of these tables runs on this host")
	durationVar(fl, &cfg.Interval, "interval", watch.DefaultInterval, "start a cycle every `DURATION`")
	fl.BoolVar(&cfg.Once, "once", false, "run one cycle and exit (a scheduled job)")
	durationVar(fl, &cfg.CleanupAfter, "cleanup-after", 0, "delete the files of batches verified at least `DURATION` ago, once cleanup proves them again (default: delete nothing)")
	fl.StringVar(&cfg.ArchiveTo, "archive-to", "", "with --cleanup-after: copy each file here first, in a folder per table (its table id)")
	durationVar(fl, &cfg.Lease, "lease", watch.DefaultLease, "hold each table's lock as a lease of `DURATION`, renewed every third of it")
	fl.IntVar(&cfg.MaxFailures, "max-failures", watch.DefaultMaxFailures, "quarantine a table that fails this many cycles in a row")
	durationVar(fl, &cfg.Backoff, "backoff", watch.DefaultBackoff, "wait this long before trying a failed table again, doubled after each failure (at most an hour)")
	fl.StringVar(&o.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics (/metrics) and /healthz on `ADDR` (host:port, :9464)")
	fl.StringVar(&o.AlertCommand, "alert-command", "", "run `CMD` (with sh -c) for each alert, the event's JSON on stdin")
	return c
}

// parseWatchFlags reads the scope and checks the flags.
func parseWatchFlags(o *WatchOptions, args []string) error {
	cfg := &o.Config
	if len(args) == 1 {
		sc, err := scan.ParseScope(args[0])
		if err != nil {
			return FlagErrorf("CATALOG[.SCHEMA]: %v", err)
		}
		cfg.Scope = sc
	}
	switch {
	case cfg.StageTo == "":
		return FlagErrorf("watch needs --stage-to: the tables Zerobus writes are managed tables, whose storage the warehouse may not read by path")
	case cfg.ArchiveTo != "" && cfg.CleanupAfter <= 0:
		return FlagErrorf("--archive-to goes with --cleanup-after")
	case cfg.MinAge < 0 || cfg.CleanupAfter < 0:
		return FlagErrorf("--min-age and --cleanup-after must not be negative")
	case cfg.Interval < time.Second || cfg.Lease < time.Second:
		return FlagErrorf("--interval and --lease must be at least 1s")
	case cfg.MaxFailures < 1:
		return FlagErrorf("--max-failures must be at least 1")
	}
	if _, err := fallback.CheckPrefix(cfg.Prefix); err != nil {
		return FlagErrorf("--prefix: %v", err)
	}
	if err := checkGlob(cfg.TablePattern); err != nil {
		return FlagErrorf("--table-pattern %q: %v", cfg.TablePattern, err)
	}
	for role, raw := range map[place.Role]string{place.Staging: cfg.StageTo, place.Archive: cfg.ArchiveTo} {
		if raw != "" {
			if _, err := recovery.ParsePlace(role, raw); err != nil {
				return err
			}
		}
	}
	return checkWatchJournal(o)
}

// checkWatchJournal refuses a local journal without --single-host: watchers of two hosts
// would each lock their own, and both work on a table.
func checkWatchJournal(o *WatchOptions) error {
	local := o.Journal == ""
	if !local {
		loc, err := storage.Parse(o.Journal)
		if err != nil {
			return FlagErrorf("--journal: %v", err)
		}
		local = loc.Scheme == "file"
	}
	if local && !o.SingleHost {
		return FlagErrorf("watch needs a shared journal (--journal s3://…, gs://…, abfss://…): a local journal locks tables on this host " +
			"only, so a watcher or reload elsewhere would work on the same table; pass --single-host if every one runs here")
	}
	return nil
}

// watchCmdRun opens the workspace, the warehouse and the journal, serves the metrics, and runs
// the watcher until a signal (one cycle with --once).
func watchCmdRun(ctx context.Context, o *WatchOptions) error {
	f := o.F
	deps, closeAll, err := watchDeps(ctx, o)
	if err != nil {
		return err
	}
	defer closeAll()
	if o.MetricsAddr != "" {
		deps.Metrics = watch.NewMetrics(o.Config.Interval)
		stopServing, err := serveMetrics(o.MetricsAddr, deps.Metrics.Handler())
		if err != nil {
			return err
		}
		defer stopServing()
	}
	w, err := watch.New(o.Config, deps)
	if err != nil {
		return FlagErrorf("%v", err)
	}
	f.Logger.Info("watching", "scope", o.Config.String(), "interval", o.Config.Interval.String(), "journal", deps.Recovery.Journal.Location())
	// The first signal closes stop: the statement in flight finishes and the watcher stops
	// at a journaled point (the work's context is not cancelled by it). The second exits.
	stop := make(chan struct{})
	go func() {
		<-ctx.Done()
		close(stop)
	}()
	if !o.Config.Once {
		return w.Run(context.WithoutCancel(ctx), stop)
	}
	res := w.Cycle(context.WithoutCancel(ctx), stop)
	return onceExit(res)
}

// onceExit is the exit status of one cycle, the most urgent first.
func onceExit(res watch.CycleResult) error {
	e := res.Event
	var codes []int
	switch {
	case res.ScanErr != nil:
		return res.ScanErr
	case e.ReviewRuns > 0:
		codes = append(codes, ExitVerify)
	}
	if e.BlockedTables > 0 {
		codes = append(codes, ExitSchema)
	}
	if e.FailedTables > 0 {
		codes = append(codes, ExitPartial)
	}
	if len(codes) == 0 {
		return nil
	}
	return WithCode(MostUrgent(codes...), fmt.Sprintf("cycle %d: %s blocked by their schema, %d failed, %s review (the events above say which and why)",
		res.Cycle, textfmt.Plural(e.BlockedTables, "table"), e.FailedTables, textfmt.Plural(e.ReviewRuns, "run")+" "+textfmt.Either(e.ReviewRuns, "needs", "need")))
}

// serveMetrics serves h on addr until the returned function is called.
func serveMetrics(addr string, h http.Handler) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, FlagErrorf("--metrics-addr %s: %v", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// watchDeps opens what the watcher works with: the catalog, the scan's opener, the warehouse
// and the journal (recovery.Env, as reload's), and cleanup's delete storage and archive.
func watchDeps(ctx context.Context, o *WatchOptions) (watch.Deps, func(), error) {
	f := o.F
	ws := f.workspace()
	if ws == nil {
		return watch.Deps{}, nil, fmt.Errorf("watch: %w", ErrNeedsDatabricks)
	}
	client, err := ws.Client(ctx)
	if err != nil {
		return watch.Deps{}, nil, err
	}
	wh, err := ws.Warehouse(ctx)
	if err != nil {
		return watch.Deps{}, nil, err
	}
	store, err := f.openRunJournal(ctx, o.Journal, &runSummary{})
	if err != nil {
		return watch.Deps{}, nil, err
	}
	env, err := f.recoveryEnv(wh, store)
	if err != nil {
		closeJournal(store)
		return watch.Deps{}, nil, err
	}
	src, err := schemaSource(f, "warehouse")
	if err != nil {
		closeJournal(store)
		return watch.Deps{}, nil, err
	}
	ce, err := f.cleanupEnv()
	if err != nil {
		closeJournal(store)
		return watch.Deps{}, nil, err
	}
	sr, _ := f.resolver()
	identity := recovery.CurrentUser(ctx, wh)
	d := watch.Deps{Catalog: client, Open: f.scanOpener(sr), Recovery: env, Identity: identity, Header: header(identity),
		Source: src, Cleanup: ce, Events: watch.JSONLines(f.IO.Out), Log: f.Logger}
	if o.AlertCommand != "" {
		d.Alert = watch.CommandAlert(o.AlertCommand)
	}
	return d, func() { closeJournal(store) }, nil
}
