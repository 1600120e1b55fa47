package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/recovery"
	"github.com/zbrecover/zbrecover/scan"
	"github.com/zbrecover/zbrecover/tableref"
)

// Defaults of Config.
const (
	DefaultInterval    = 5 * time.Minute
	DefaultLease       = 2 * time.Minute
	DefaultMaxFailures = 5
	DefaultBackoff     = 30 * time.Second
	DefaultMaxBackoff  = time.Hour
)

// Config is what a watcher watches and how.
type Config struct {
	// Scope, TablePattern, Prefix and MinAge select the tables and files as scan does: a
	// table is recovered when its fallback folder (Prefix, fallback.Prefix when empty) holds
	// files older than MinAge.
	Scope        scan.Scope
	TablePattern string
	Prefix       string
	MinAge       time.Duration
	// Interval is the time from one cycle's start to the next's (DefaultInterval); Once runs
	// one cycle.
	Interval time.Duration
	Once     bool
	// StageTo is the place the files are staged to: each table's copies go to its own folder
	// under it, named by its table id (TablePlace).
	StageTo string
	// CleanupAfter, when positive, deletes the fallback files of batches verified at least
	// that long ago once cleanup proves them in the table again; 0 deletes nothing.
	// ArchiveTo, when set, copies each file to the table's folder under it first.
	CleanupAfter time.Duration
	ArchiveTo    string
	// Lease is the length of the lease a watcher holds a table's lock with while it works on
	// it (renewed every third of it; DefaultLease).
	Lease time.Duration
	// MaxFailures is how many cycles in a row a table may fail before it is quarantined
	// (DefaultMaxFailures); Backoff is the first wait before a failed table is tried again,
	// doubled after each failure up to MaxBackoff.
	MaxFailures int
	Backoff     time.Duration
	MaxBackoff  time.Duration
	// ScanConcurrency is the number of tables listed at once (scan.Options.Concurrency).
	ScanConcurrency int
}

func (c *Config) defaults() {
	if c.Prefix == "" {
		c.Prefix = fallback.Prefix
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
	}
	if c.MaxFailures <= 0 {
		c.MaxFailures = DefaultMaxFailures
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
}

// Deps are what a watcher works with, opened by the caller.
type Deps struct {
	// Catalog lists the scope's tables; Open opens a listed table's storage for the scan.
	Catalog scan.Catalog
	Open    scan.Opener
	// Recovery is what each table's reload works with (the resolver, the shared journal, the
	// warehouse, the place opener): the one path reload takes (recovery.Prepare).
	Recovery recovery.Env
	// Source is the source of the tables' schemas (the warehouse's).
	Source tableref.Source
	// Identity is current_user() on the warehouse ("" when unknown; asked again each cycle
	// until known).
	Identity string
	// Header is this process's run record (its Command names the watch).
	Header journal.Header
	// Cleanup is what each table's cleanup works with (its Resolver opens tables with
	// credentials that may delete, under its Storage policy; its Places check and open the
	// archive). Needed with CleanupAfter.
	Cleanup recovery.CleanupEnv
	// Events receives every event; Alert is run for the events a person must see (a table
	// blocked, a failure, a quarantine, a run that needs review); nil for none.
	Events func(Event)
	Alert  func(ctx context.Context, e Event) error
	// Metrics, when set, is kept up to date.
	Metrics *Metrics
	Log     *slog.Logger
	// Now is the clock (tests); Sleep waits between cycles (tests make it instant).
	Now func() time.Time
}

// Watcher recovers the parked records of the tables of its scope, cycle after cycle.
type Watcher struct {
	cfg    Config
	d      Deps
	cycle  int64
	tables map[string]*tableState // by table id
	// reviews counts the runs of this cycle reported for review.
	reviews int
}

// tableState is what a watcher remembers of a table from cycle to cycle.
type tableState struct {
	name string
	// blocked is the fingerprint of the groups that block its load ("" when none), blockedAlerted whether
	// the alert was sent for this blocking (once until the table is fixed).
	blocked        string
	blockedAlerted bool
	failures       int
	retryAt        time.Time
	quarantined    bool
	// reviewed are the runs whose needs-review alert was sent.
	reviewed map[string]bool
}

// New returns a watcher; nothing is read or written until Run or Cycle.
func New(cfg Config, d Deps) (*Watcher, error) {
	cfg.defaults()
	switch {
	case cfg.StageTo == "":
		return nil, errors.New("watch needs a staging place (--stage-to): Unity Catalog refuses path reads inside a managed table's storage")
	case cfg.ArchiveTo != "" && cfg.CleanupAfter <= 0:
		return nil, errors.New("an archive (--archive-to) goes with --cleanup-after")
	case d.Recovery.Places == nil:
		return nil, errors.New("watch: the recovery needs Places (the staging place, the keys files)")
	case cfg.CleanupAfter > 0 && (d.Cleanup.Resolver == nil || d.Cleanup.Storage == nil || d.Cleanup.Places == nil):
		return nil, errors.New("watch: cleanup needs Cleanup's Resolver, Storage and Places")
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Events == nil {
		d.Events = func(Event) {}
	}
	return &Watcher{cfg: cfg, d: d, tables: map[string]*tableState{}}, nil
}

// TablePlace is the folder of a table under a place (a staging or archive place): the place
// joined with the table's id, before the place's query (a SAS token stays at the end). A
// table's id is path-safe and stays the same when the table is renamed; a name may hold
// characters no path takes.
func TablePlace(place, tableID string) string {
	base, query, hasQuery := strings.Cut(place, "?")
	out := strings.TrimSuffix(base, "/") + "/" + tableID
	if hasQuery {
		out += "?" + query
	}
	return out
}

// Run runs cycles until stop is closed (or after one with Once), each Interval after the
// previous one started; a cycle whose scan failed is followed by the next after a backoff
// (Backoff, doubled each time, at most Interval). When stop closes, the statement in flight
// finishes, the run stops at a journaled point, the leases are released and Run returns nil.
// ctx's end cancels what is in flight (a second signal) and is returned.
func (w *Watcher) Run(ctx context.Context, stop <-chan struct{}) error {
	wait := time.Duration(0)
	scanFailures := 0
	for {
		start := w.d.Now()
		res := w.Cycle(ctx, stop)
		if err := ctx.Err(); err != nil {
			return err
		}
		if stopped(stop) {
			w.emit(Event{Event: Stopped})
			return nil
		}
		if w.cfg.Once {
			return res.Err
		}
		wait = w.cfg.Interval - w.d.Now().Sub(start)
		if res.ScanErr != nil {
			scanFailures++
			wait = min(backoff(w.cfg.Backoff, scanFailures), w.cfg.Interval)
		} else {
			scanFailures = 0
		}
		if wait < 0 {
			wait = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-stop:
			t.Stop()
			w.emit(Event{Event: Stopped})
			return nil
		case <-t.C:
		}
	}
}

// CycleResult is what a cycle did.
type CycleResult struct {
	Cycle int64
	// ScanErr is the scan's failure (nothing else was done); Err the first failure of a
	// table, or ScanErr.
	ScanErr, Err error
	Scan         *scan.Report
	Event        Event // the cycle_end event
}

// Cycle runs one cycle: the scan, then each table with parked files in name order: its
// lease, its reload (blocked groups wait, the others load), the run's verification and, with
// CleanupAfter, the cleanup of its runs verified long enough ago.
func (w *Watcher) Cycle(ctx context.Context, stop <-chan struct{}) CycleResult {
	w.cycle++
	w.reviews = 0
	start := w.d.Now()
	w.d.Metrics.cycleStarted(w.cycle, start)
	w.emit(Event{Event: CycleStart})
	if w.d.Identity == "" && w.d.Recovery.Warehouse != nil {
		w.d.Identity = recovery.CurrentUser(ctx, w.d.Recovery.Warehouse)
	}
	end := Event{Event: CycleEnd}
	res := CycleResult{Cycle: w.cycle}
	rep, err := scan.Run(ctx, w.d.Catalog, w.d.Open, scan.Options{Scope: w.cfg.Scope, TablePattern: w.cfg.TablePattern, Prefix: w.cfg.Prefix,
		MinAge: w.cfg.MinAge, Now: w.d.Now, Concurrency: w.cfg.ScanConcurrency})
	if err != nil {
		res.ScanErr, res.Err = err, err
		kind := classify(err, "scan")
		w.d.Metrics.failed(kind)
		w.emit(Event{Event: Error, ErrorKind: kind, Step: "scan", Error: err.Error()})
	} else {
		res.Scan = rep
		w.d.Metrics.scanned(rep, w.d.Now())
		end.Scanned, end.Parked = rep.Totals.Scanned, rep.Totals.Parked
		w.tablesOf(ctx, stop, rep, &res, &end)
	}
	blocked, quarantined := w.counts()
	w.d.Metrics.tableCounts(blocked, quarantined)
	end.BlockedTables, end.ReviewRuns = blocked, w.reviews
	d := w.d.Now().Sub(start)
	end.DurationMS = d.Milliseconds()
	if !w.cfg.Once && !stopped(stop) {
		end.NextCycleAfter = max(w.cfg.Interval-d, 0).Milliseconds()
	}
	w.d.Metrics.cycleEnded(d, w.d.Now(), res.ScanErr)
	w.emit(end)
	res.Event = end
	return res
}

// tablesOf works on the scan's tables: the parked ones in name order, the unreadable ones as
// failures of their own.
func (w *Watcher) tablesOf(ctx context.Context, stop <-chan struct{}, rep *scan.Report, res *CycleResult, end *Event) {
	tables := append(rep.With(scan.Parked), rep.With(scan.Unreadable)...)
	sort.SliceStable(tables, func(i, j int) bool { return tables[i].Name < tables[j].Name })
	for _, t := range tables {
		if stopped(stop) || ctx.Err() != nil {
			return
		}
		out := w.table(ctx, stop, t)
		end.RowsRecovered += out.rows
		end.FilesDeleted += out.deleted
		switch {
		case out.err != nil:
			end.FailedTables++
			if res.Err == nil {
				res.Err = out.err
			}
			if isOutage(out.err) {
				return // the workspace is unreachable: the next cycle tries every table again
			}
		case out.skipped:
			end.SkippedTables++
		case out.recovered:
			end.Recovered++
		}
	}
}

// counts returns the tables blocked and quarantined.
func (w *Watcher) counts() (blocked, quarantined int) {
	for _, st := range w.tables {
		if st.blocked != "" {
			blocked++
		}
		if st.quarantined {
			quarantined++
		}
	}
	return blocked, quarantined
}

// emit stamps e with the time and the cycle and sends it.
func (w *Watcher) emit(e Event) {
	e.Time = w.d.Now().UTC()
	e.Cycle = w.cycle
	w.d.Events(e)
}

// alert emits e, marked as alerted, after running the alert command for it; a failing alert
// command is logged.
func (w *Watcher) alert(ctx context.Context, e Event) {
	if w.d.Alert != nil {
		e.Alert = true
		e.Time, e.Cycle = w.d.Now().UTC(), w.cycle
		if err := w.d.Alert(context.WithoutCancel(ctx), e); err != nil {
			w.d.Log.Warn("the alert command failed", "event", string(e.Event), "table", e.Table, "error", err.Error())
		}
	}
	w.emit(e)
}

func stopped(stop <-chan struct{}) bool {
	if stop == nil {
		return false
	}
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// backoff is the wait after the nth failure in a row: base doubled n-1 times.
func backoff(base time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < 24*time.Hour; i++ {
		d *= 2
	}
	return d
}

// String names the scope for messages.
func (c Config) String() string {
	s := c.Scope.String()
	if s == "" {
		s = "every catalog"
	}
	if c.TablePattern != "" {
		s += fmt.Sprintf(" (tables matching %q)", c.TablePattern)
	}
	return s
}
