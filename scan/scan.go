// Package scan answers the first question of a recovery, "which tables hold parked records?",
// across Unity Catalog: it lists the tables of a schema, of a catalog or of every catalog the
// identity can see, and for each managed Delta table lists the fallback folder under its
// storage root, counting files, bytes, the oldest and newest object time and the date folders.
// It reads no footer (that is inspect's work): a table whose folder is empty or missing costs
// one list request, one with objects ⌈objects/page⌉.
//
// Tables are scanned in parallel (Options.Concurrency at once), each through the backend
// Opener returns: the caller chooses its credentials (vended READ credentials or the store's
// own, as inspect does) and its decorators, typically one storage.Adaptive shared by every
// table's backend (storage.WithAdaptiveLimit) under a retry, and one HTTP transport
// (storage.SharedTransport) so that connections pass from table to table. A table that
// cannot be opened or listed is reported with the reason, and the scan goes on; so does a
// catalog or schema whose listing fails inside a wider scope. Only the listing of the scope itself (the named schema,
// the named catalog's schemas, or the catalogs) stops the scan.
//
// scan never writes: not to storage, not to Unity Catalog.
package scan

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/tableref"
)

// Catalog is the part of Unity Catalog a scan reads; *databricks.Client implements it.
type Catalog interface {
	// Catalogs lists the catalogs the identity may use.
	Catalogs(ctx context.Context) ([]databricks.CatalogEntry, error)
	// Schemas lists the schemas of a catalog.
	Schemas(ctx context.Context, catalog string) ([]databricks.SchemaEntry, error)
	// EachTable calls fn for each table of a schema, page after page, and stops at fn's
	// first error.
	EachTable(ctx context.Context, catalog, schema string, fn func(databricks.TableEntry) error) error
}

// Opener opens the storage root of a listed table for reading.
type Opener func(ctx context.Context, t databricks.TableEntry) (*tableref.Ref, error)

// Scope is what a scan covers: one schema, one catalog, or (Catalog "") every catalog the
// identity can see.
type Scope struct {
	Catalog, Schema string
}

// ParseScope reads CATALOG[.SCHEMA] ("" is every catalog); parts may be backquoted as in a
// table name.
func ParseScope(arg string) (Scope, error) {
	if strings.TrimSpace(arg) == "" {
		return Scope{}, nil
	}
	parts, err := databricks.SplitName(arg)
	if err != nil {
		return Scope{}, fmt.Errorf("%q: %w", arg, err)
	}
	switch len(parts) {
	case 1:
		return Scope{Catalog: parts[0]}, nil
	case 2:
		return Scope{Catalog: parts[0], Schema: parts[1]}, nil
	}
	return Scope{}, fmt.Errorf("%q: want CATALOG or CATALOG.SCHEMA (give a table to inspect instead: zbrecover inspect %s)", arg, arg)
}

// String returns the scope as ParseScope reads it back: "" for every catalog.
func (s Scope) String() string {
	switch {
	case s.Catalog == "":
		return ""
	case s.Schema == "":
		return databricks.QuotePart(s.Catalog)
	}
	return databricks.QuotePart(s.Catalog) + "." + databricks.QuotePart(s.Schema)
}

// Options control Run.
type Options struct {
	Scope
	// TablePattern, when set, keeps only the tables whose name (the last part) matches this
	// glob (path.Match syntax: *, ?, [a-z]), compared in lower case.
	TablePattern string
	// Prefix is the fallback folder under each table root; "" means fallback.Prefix.
	Prefix string
	// MinAge leaves out files modified less than MinAge before the scan started (a producer
	// may be flushing them): they are counted as young, not as parked.
	MinAge time.Duration
	// Now returns the time the scan starts at; nil means time.Now.
	Now func() time.Time
	// Concurrency is the number of tables scanned at once (default DefaultConcurrency).
	Concurrency int
	// ListConcurrency is the number of Unity Catalog list calls made at once (default
	// DefaultListConcurrency).
	ListConcurrency int
	// NextArgs are flags added to the commands the report suggests for each table (a
	// profile, --storage-auth, --prefix, storage endpoints), each its own argument.
	NextArgs []string
	// OnTable, when set, is called with each table as its scan completes, and OnUnlisted with
	// each catalog or schema whose listing failed, in the order they happen and never
	// concurrently. An error stops the scan and is returned.
	OnTable    func(Table) error
	OnUnlisted func(Unlisted) error
	// Progress, when set, is called after each table with the tables scanned so far and the
	// tables to scan listed so far (a total that grows while Unity Catalog is listed), from
	// the same goroutine as OnTable.
	Progress func(scanned, listed int)
}

// DefaultConcurrency is the number of tables scanned at once when Options.Concurrency is 0.
const DefaultConcurrency = 64

// DefaultListConcurrency is the number of Unity Catalog list calls made at once when
// Options.ListConcurrency is 0.
const DefaultListConcurrency = 8

// Status is a scanned table's outcome.
type Status string

const (
	// Parked: the fallback folder holds fallback files (older than MinAge).
	Parked Status = "parked"
	// Clean: no fallback file (the folder is empty, missing, or holds only hidden, non-Parquet
	// or young objects).
	Clean Status = "clean"
	// Unreadable: the table's storage could not be opened or listed (Error says why).
	Unreadable Status = "unreadable"
)

// Table is one scanned table.
type Table struct {
	// Name is catalog.schema.table, as ParseTableName reads it back.
	Name    string `json:"name"`
	TableID string `json:"table_id,omitempty"`
	// Location is the table's storage root, secrets redacted.
	Location string `json:"location,omitempty"`
	Status   Status `json:"status"`
	// Files and Bytes count the fallback files: Parquet names, not hidden, older than MinAge.
	Files int64 `json:"files"`
	Bytes int64 `json:"bytes"`
	// Oldest and Newest are the first and last modification times of those files.
	Oldest *time.Time `json:"oldest,omitempty"`
	Newest *time.Time `json:"newest,omitempty"`
	// DateFolders is the number of folders right under the fallback folder that hold those
	// files (Zerobus writes them by day: YYYY-MM-DD/).
	DateFolders int `json:"date_folders"`
	// YoungFiles and YoungBytes are the fallback files left out by MinAge.
	YoungFiles int64 `json:"young_files,omitempty"`
	YoungBytes int64 `json:"young_bytes,omitempty"`
	// OtherObjects are hidden objects, non-Parquet names and special files, which COPY INTO
	// does not read.
	OtherObjects int64 `json:"other_objects,omitempty"`
	// Vended is true when the table's storage was read with credentials Unity Catalog vended.
	Vended bool `json:"vended_credentials,omitempty"`
	// Error says why an unreadable table could not be read, secrets redacted.
	Error string `json:"error,omitempty"`
	// Next is the command to run next: inspect for a table with parked files, doctor for an
	// unreadable one; "" for a clean table.
	Next string `json:"next,omitempty"`
}

// Unlisted is a catalog or schema whose listing failed inside a wider scope.
type Unlisted struct {
	Catalog string `json:"catalog"`
	Schema  string `json:"schema,omitempty"`
	Error   string `json:"error"`
}

// SkippedCatalog is a catalog a scan of every catalog leaves out, and why.
type SkippedCatalog struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Totals count a scan's tables and files.
type Totals struct {
	// Catalogs and Schemas are those whose contents were listed.
	Catalogs int `json:"catalogs"`
	Schemas  int `json:"schemas"`
	// Listed is every table Unity Catalog listed in the scope.
	Listed int `json:"listed"`
	// NotMatched are the tables TablePattern left out.
	NotMatched int `json:"not_matched,omitempty"`
	// Skipped are the tables that cannot hold fallback files (views, external tables, other
	// formats), by kind in SkippedKinds ("view", "external", "format parquet", …).
	Skipped      int            `json:"skipped"`
	SkippedKinds map[string]int `json:"skipped_kinds,omitempty"`
	// Scanned = Parked + Clean + Unreadable.
	Scanned    int `json:"scanned"`
	Parked     int `json:"parked"`
	Clean      int `json:"clean"`
	Unreadable int `json:"unreadable"`
	// Unlisted counts the catalogs and schemas whose listing failed.
	Unlisted int `json:"unlisted,omitempty"`
	// Files and Bytes add up the tables' fallback files; YoungFiles those left out by MinAge.
	Files      int64 `json:"files"`
	Bytes      int64 `json:"bytes"`
	YoungFiles int64 `json:"young_files,omitempty"`
}

// Report is what a scan found.
type Report struct {
	// Scope is the scope as ParseScope reads it ("" for every catalog).
	Scope        string `json:"scope"`
	TablePattern string `json:"table_pattern,omitempty"`
	Prefix       string `json:"prefix"`
	// MinAge is Options.MinAge as a Go duration ("15m0s"), "" when 0.
	MinAge    string    `json:"min_age,omitempty"`
	Started   time.Time `json:"started"`
	ElapsedMS int64     `json:"elapsed_ms"`
	// Tables are the scanned tables: those with parked files, then the unreadable ones, then
	// the clean ones, each by name.
	Tables          []Table          `json:"tables"`
	Unlisted        []Unlisted       `json:"unlisted,omitempty"`
	SkippedCatalogs []SkippedCatalog `json:"skipped_catalogs,omitempty"`
	Totals          Totals           `json:"totals"`
}

// With returns the report's tables of status st, in report order.
func (r *Report) With(st Status) []Table {
	var out []Table
	for _, t := range r.Tables {
		if t.Status == st {
			out = append(out, t)
		}
	}
	return out
}

// informationSchema holds only views, in every catalog.
const informationSchema = "information_schema"

// Run scans the tables of opts.Scope. It returns an error when the scope's own listing fails
// (nothing was scanned), when ctx ends, or when OnTable or OnUnlisted fails; every other
// failure is in the report.
func Run(ctx context.Context, cat Catalog, open Opener, opts Options) (*Report, error) {
	prefix := opts.Prefix
	if prefix == "" {
		prefix = fallback.Prefix
	}
	prefix, err := fallback.CheckPrefix(prefix)
	if err != nil {
		return nil, err
	}
	pattern := strings.ToLower(opts.TablePattern)
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, fmt.Errorf("table pattern %q: %w", opts.TablePattern, err)
	}
	if opts.MinAge < 0 {
		return nil, fmt.Errorf("min age %s: must not be negative", opts.MinAge)
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	conc := opts.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	listConc := opts.ListConcurrency
	if listConc <= 0 {
		listConc = DefaultListConcurrency
	}
	start := now()
	s := &scanner{cat: cat, open: open, opts: opts, prefix: prefix, pattern: pattern, cutoff: start.Add(-opts.MinAge),
		listConc: listConc, rep: &Report{Scope: opts.Scope.String(), TablePattern: opts.TablePattern, Prefix: prefix, Started: start.UTC(),
			Tables: []Table{}, Totals: Totals{SkippedKinds: map[string]int{}}}}
	if opts.MinAge > 0 {
		s.rep.MinAge = opts.MinAge.String()
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	entries := make(chan databricks.TableEntry, 4*conc)
	events := make(chan event, 4*conc)
	g.Go(func() error {
		defer close(entries)
		return s.enumerate(gctx, entries, events)
	})
	for range conc {
		g.Go(func() error {
			for e := range entries {
				t, err := s.scanTable(gctx, e)
				if err != nil {
					return err
				}
				select {
				case events <- event{table: &t}:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			return nil
		})
	}
	waited := make(chan error, 1)
	go func() {
		waited <- g.Wait()
		close(events)
	}()
	// The events are collected here, in the caller's goroutine: OnTable and OnUnlisted are
	// never called concurrently.
	var cbErr error
	for ev := range events {
		if cbErr != nil {
			continue
		}
		if cbErr = s.collect(ev); cbErr != nil {
			cancel()
		}
	}
	err = <-waited
	switch {
	case cbErr != nil:
		return nil, cbErr
	case err != nil:
		return nil, err
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	s.finish(now())
	return s.rep, nil
}

type event struct {
	table    *Table
	unlisted *Unlisted
}

type scanner struct {
	cat      Catalog
	open     Opener
	opts     Options
	prefix   string
	pattern  string
	cutoff   time.Time
	listConc int

	mu  sync.Mutex // guards rep's totals while the listing runs
	rep *Report
}

// enumerate lists the scope's tables into entries, counting the ones it leaves out, and
// sends the listings that failed inside the scope as events.
func (s *scanner) enumerate(ctx context.Context, entries chan<- databricks.TableEntry, events chan<- event) error {
	sc := s.opts.Scope
	if sc.Schema != "" {
		s.count(func(t *Totals) { t.Catalogs, t.Schemas = 1, 1 })
		return s.listTables(ctx, databricks.SchemaEntry{Catalog: sc.Catalog, Name: sc.Schema}, entries)
	}
	var catalogs []string
	if sc.Catalog != "" {
		catalogs = []string{sc.Catalog}
	} else {
		list, err := s.cat.Catalogs(ctx)
		if err != nil {
			return err
		}
		for _, c := range list {
			if why := skipCatalog(c); why != "" {
				s.rep.SkippedCatalogs = append(s.rep.SkippedCatalogs, SkippedCatalog{Name: c.Name, Reason: why})
				continue
			}
			catalogs = append(catalogs, c.Name)
		}
		slices.SortFunc(s.rep.SkippedCatalogs, func(a, b SkippedCatalog) int { return strings.Compare(a.Name, b.Name) })
	}
	problem := func(u Unlisted) error {
		select {
		case events <- event{unlisted: &u}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// One group lists the catalogs' schemas, the other the schemas' tables, each at most
	// listConc calls at once; schemas flow from the first to the second as they are listed.
	// (errgroup cancels a group's context once Wait returns, so neither derives from the other.)
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel()
	sg, sctx := errgroup.WithContext(lctx)
	sg.SetLimit(s.listConc)
	tg, tctx := errgroup.WithContext(lctx)
	tg.SetLimit(s.listConc)
	schemas := make(chan databricks.SchemaEntry)
	go func() {
		defer close(schemas)
		for _, c := range catalogs {
			sg.Go(func() error {
				list, err := s.cat.Schemas(sctx, c)
				if err != nil {
					if sc.Catalog != "" || sctx.Err() != nil {
						return err
					}
					return problem(Unlisted{Catalog: c, Error: redact.String(err.Error())})
				}
				s.count(func(t *Totals) { t.Catalogs++ })
				for _, se := range list {
					if strings.EqualFold(se.Name, informationSchema) {
						continue
					}
					select {
					case schemas <- se:
					case <-sctx.Done():
						return sctx.Err()
					}
				}
				return nil
			})
		}
		_ = sg.Wait() // its error is returned below
	}()
	for se := range schemas {
		tg.Go(func() error {
			err := s.listTables(tctx, se, entries)
			if err == nil {
				s.count(func(t *Totals) { t.Schemas++ })
				return nil
			}
			if tctx.Err() != nil {
				return err
			}
			return problem(Unlisted{Catalog: se.Catalog, Schema: se.Name, Error: redact.String(err.Error())})
		})
	}
	if err := sg.Wait(); err != nil {
		lcancel()
		_ = tg.Wait()
		return err
	}
	return tg.Wait()
}

// listTables sends the tables of a schema to entries as they are listed, leaving out (and
// counting) those TablePattern does not match and those that cannot hold fallback files.
func (s *scanner) listTables(ctx context.Context, se databricks.SchemaEntry, entries chan<- databricks.TableEntry) error {
	return s.cat.EachTable(ctx, se.Catalog, se.Name, func(e databricks.TableEntry) error {
		kind := skipKind(e)
		matched := s.pattern == "" || matchName(s.pattern, e.Name.Table)
		s.count(func(t *Totals) {
			t.Listed++
			switch {
			case !matched:
				t.NotMatched++
			case kind != "":
				t.Skipped++
				t.SkippedKinds[kind]++
			}
		})
		if !matched || kind != "" {
			return nil
		}
		select {
		case entries <- e:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

func matchName(pattern, name string) bool {
	ok, _ := path.Match(pattern, strings.ToLower(name))
	return ok
}

func (s *scanner) count(f func(*Totals)) {
	s.mu.Lock()
	f(&s.rep.Totals)
	s.mu.Unlock()
}

// skipCatalog says why a scan of every catalog leaves c out ("" to scan it): Zerobus writes
// only to Unity Catalog managed tables, which Delta Sharing, foreign, system and internal
// catalogs do not hold, nor the legacy Hive metastore.
func skipCatalog(c databricks.CatalogEntry) string {
	switch typ := strings.ToUpper(c.Type); {
	case strings.EqualFold(c.Name, "hive_metastore"):
		return "the legacy Hive metastore, not Unity Catalog"
	case typ != "" && typ != "MANAGED_CATALOG":
		return strings.ToLower(strings.TrimSuffix(typ, "_CATALOG")) + " catalog"
	}
	return ""
}

// skipKind names why a listed table cannot hold fallback files ("" when it can): Zerobus
// writes only to managed Delta tables. Empty values are not held against a table.
func skipKind(e databricks.TableEntry) string {
	typ := strings.ToUpper(strings.TrimSpace(e.TableType))
	if typ != "" && typ != "MANAGED" {
		return strings.ToLower(typ)
	}
	if f := strings.ToUpper(strings.TrimSpace(e.DataSourceFormat)); f != "" && f != "DELTA" {
		return "format " + strings.ToLower(f)
	}
	return ""
}

// scanTable opens a table's root and lists its fallback folder. Failures are the table's
// (Unreadable); only the end of ctx is returned as an error.
func (s *scanner) scanTable(ctx context.Context, e databricks.TableEntry) (Table, error) {
	t := Table{Name: e.Name.Quoted(), TableID: e.TableID, Location: redact.String(e.StorageLocation)}
	unreadable := func(err error) (Table, error) {
		if ctx.Err() != nil {
			return t, ctx.Err()
		}
		t.Status, t.Error = Unreadable, redact.String(err.Error())
		t.Next = s.command("doctor", t.Name)
		return t, nil
	}
	if e.StorageLocation == "" {
		return unreadable(errors.New("Unity Catalog reports no storage location for the table"))
	}
	tgt, err := s.open(ctx, e)
	if err != nil {
		return unreadable(err)
	}
	t.Vended, t.Location = tgt.Vended, tgt.Display()
	folders := map[string]bool{}
	var oldest, newest time.Time
	err = tgt.Root.List(ctx, s.prefix, func(o storage.ObjectInfo) error {
		rel := strings.TrimPrefix(o.Key, s.prefix)
		switch {
		case o.Special != "" || !isFallbackFile(rel):
			t.OtherObjects++
		case s.opts.MinAge > 0 && o.ModTime.After(s.cutoff):
			t.YoungFiles++
			t.YoungBytes += o.Size
		default:
			t.Files++
			t.Bytes += o.Size
			if oldest.IsZero() || o.ModTime.Before(oldest) {
				oldest = o.ModTime
			}
			if o.ModTime.After(newest) {
				newest = o.ModTime
			}
			if dir, _, ok := strings.Cut(rel, "/"); ok {
				folders[dir] = true
			}
		}
		return nil
	})
	if err != nil {
		t = Table{Name: t.Name, TableID: t.TableID, Location: t.Location, Vended: t.Vended}
		return unreadable(err)
	}
	t.DateFolders = len(folders)
	t.Status = Clean
	if t.Files > 0 {
		t.Status = Parked
		o, n := oldest.UTC(), newest.UTC()
		t.Oldest, t.Newest = &o, &n
		t.Next = s.command("inspect", t.Name)
	}
	return t, nil
}

// isFallbackFile reports whether rel (a key relative to the fallback folder) is a file COPY
// INTO would read: a .parquet name with no hidden element (inspect's rule).
func isFallbackFile(rel string) bool {
	for _, el := range strings.Split(rel, "/") {
		if fallback.Hidden(el) {
			return false
		}
	}
	return strings.HasSuffix(rel, ".parquet")
}

// command is `zbrecover <verb> --table NAME` with NextArgs, quoted for a POSIX shell.
func (s *scanner) command(verb, name string) string {
	args := append([]string{"zbrecover", verb, "--table", name}, s.opts.NextArgs...)
	return redact.String(textfmt.ShellJoin(args...))
}

// collect adds an event to the report and passes it on.
func (s *scanner) collect(ev event) error {
	s.mu.Lock()
	switch {
	case ev.table != nil:
		t := *ev.table
		s.rep.Tables = append(s.rep.Tables, t)
		tot := &s.rep.Totals
		tot.Scanned++
		switch t.Status {
		case Parked:
			tot.Parked++
		case Clean:
			tot.Clean++
		case Unreadable:
			tot.Unreadable++
		}
		tot.Files += t.Files
		tot.Bytes += t.Bytes
		tot.YoungFiles += t.YoungFiles
		if s.opts.Progress != nil {
			scanned, listed := tot.Scanned, tot.Listed-tot.NotMatched-tot.Skipped
			s.mu.Unlock()
			s.opts.Progress(scanned, listed)
			s.mu.Lock()
		}
	case ev.unlisted != nil:
		s.rep.Unlisted = append(s.rep.Unlisted, *ev.unlisted)
		s.rep.Totals.Unlisted++
	}
	s.mu.Unlock()
	switch {
	case ev.table != nil && s.opts.OnTable != nil:
		return s.opts.OnTable(*ev.table)
	case ev.unlisted != nil && s.opts.OnUnlisted != nil:
		return s.opts.OnUnlisted(*ev.unlisted)
	}
	return nil
}

// statusRank orders the report: parked, unreadable, clean.
func statusRank(st Status) int {
	switch st {
	case Parked:
		return 0
	case Unreadable:
		return 1
	}
	return 2
}

func (s *scanner) finish(end time.Time) {
	r := s.rep
	slices.SortFunc(r.Tables, func(a, b Table) int {
		if d := statusRank(a.Status) - statusRank(b.Status); d != 0 {
			return d
		}
		return strings.Compare(a.Name, b.Name)
	})
	slices.SortFunc(r.Unlisted, func(a, b Unlisted) int {
		return strings.Compare(a.Catalog+"."+a.Schema, b.Catalog+"."+b.Schema)
	})
	if len(r.Totals.SkippedKinds) == 0 {
		r.Totals.SkippedKinds = nil
	}
	r.ElapsedMS = end.Sub(r.Started).Milliseconds()
}
