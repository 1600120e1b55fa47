package recovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/delta"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/place"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/sqlstmt"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/tableref"
)

// Env is what a recovery works with, opened by the caller: the table resolver, the journal,
// the warehouse and the way places are opened.
type Env struct {
	// Resolver opens a table's storage root (credentials and decorators are the caller's).
	Resolver *tableref.Resolver
	// Journal is the journal every run of the table is recorded in.
	Journal journal.Store
	// Warehouse runs the statements; Session opens a session of it for commit tags (nil:
	// statements carry no tag).
	Warehouse reload.Warehouse
	Session   func(ctx context.Context) (reload.Session, error)
	// Places opens --stage-to and --keys-to, and checks the journal's place against the table
	// once it is known.
	Places *Places
	// Concurrency bounds the footer reads in flight (inspect.Options.Concurrency).
	Concurrency int
	// Footers, when set, is told how far the footer reads are (inspect.Options.Progress);
	// FootersDone, when set, is called once they end, with whether they all ran.
	Footers     func(inspect.Progress)
	FootersDone func(ok bool)
	// Log receives what the gathering finds (the files inspected, a history not read).
	Log *slog.Logger
}

func (e Env) log() *slog.Logger { return reload.Deps{Log: e.Log}.Logger() }

// Schema says where the table's schema comes from: File, when set, is the schema of a file
// the operator gave (it has no history); otherwise Source, the source named From (the
// warehouse, Unity Catalog or the Delta log), read once the target is open.
type Schema struct {
	File   *schemadiff.Table
	Source tableref.Source
	From   string
}

// Dedupe is a load by key as asked: the key columns, and the order column that picks the
// record kept of one key ("" for any).
type Dedupe struct {
	Key       reload.Keys
	Order     string
	Ascending bool
}

// Request is the reload of one table as asked: the table, the source of its schema, and
// reload's options before the places are opened.
type Request struct {
	Target tableref.Spec
	// Journal is the journal's place as given (--journal; "" for the local state directory),
	// checked against the table once it is known (Places.CheckJournal).
	Journal string
	// Prefix is the fallback folder under the table root.
	Prefix string
	Schema Schema
	// Renames, BatchFiles, NoValidate and IgnoreForeignRuns as in reload.Options.
	Renames           map[string]string
	BatchFiles        int
	NoValidate        bool
	IgnoreForeignRuns string
	// StageTo and KeysTo are the places given for the staged copies and the keys file, as
	// written ("" for none).
	StageTo, KeysTo string
	// Key is reload --key (nil for none); Dedupe a load by key (nil for a plain load).
	Key    reload.Keys
	Dedupe *Dedupe
	// Header is this process's run record; BreakLock is asked about a lock another process
	// holds.
	Header    journal.Header
	BreakLock func(*journal.LockedError) bool
}

// Recovery is a table's reload ready to run: the table, its fallback files as inspected
// under its lock, its schema, and the prepared reload (nil when Prepare failed; see
// Prepare).
type Recovery struct {
	Target *tableref.Ref
	Report *inspect.Report
	Table  *schemadiff.Table
	// Stage is the staging place opened (nil without one).
	Stage *reload.Stage
	*reload.Prepared
}

// UsageError is a request that cannot be carried out as given (a key column the table does
// not have, a keys file without a place): nothing was done. Flag is set when the fix is a
// flag the operator adds.
type UsageError struct {
	Msg  string
	Flag bool
}

func (e *UsageError) Error() string { return e.Msg }

// Open resolves the table (with the access a command needs) and gives it its identity, the
// table id that keys the journal.
func Open(ctx context.Context, r *tableref.Resolver, spec tableref.Spec, access tableref.Access) (*tableref.Ref, error) {
	tgt, err := r.Resolve(ctx, spec, access)
	if err != nil {
		return nil, err
	}
	if err := tableref.Identify(ctx, tgt); err != nil {
		return nil, err
	}
	return tgt, nil
}

// Prepare gathers what a reload of one table needs and prepares it, the one path `zbrecover
// reload` and `zbrecover watch` take: it opens the table, gives it its identity, checks the
// journal's place against it and takes the table's lock (reload.LockTable) before anything
// is read; then, under the lock, it inspects the fallback folder (every footer), reads the
// table's schema and its history (the renames it proves), opens the staging and keys places
// and calls reload.Prepare, which takes the lock over.
//
// It returns a nil Recovery when it failed before the table was identified; from there on
// the Recovery holds the table (and, once read, the report and the schema), and its Prepared
// is nil when it failed before reload.Prepare or reload.Prepare failed. With an error wrapping reload.ErrBlocked both are returned, the lock held until
// Close. A *UsageError says the request cannot be carried out as given.
func Prepare(ctx context.Context, env Env, req Request) (*Recovery, error) {
	var locked *reload.Locked
	defer func() { _ = locked.Close() }()
	rec := &Recovery{}
	tgt, rep, err := inspectLocked(ctx, env, req, &locked, rec)
	if tgt == nil {
		return nil, err
	}
	if err != nil {
		return rec, err
	}
	table, err := readSchema(ctx, env, req.Schema, tgt)
	if err != nil {
		return rec, err
	}
	ro, err := options(ctx, env, req, tgt, table)
	if err != nil {
		return rec, err
	}
	ro.Locked = locked
	rec.Report, rec.Table, rec.Stage = rep, table, ro.Stage
	d := reload.Deps{Warehouse: env.Warehouse, Journal: env.Journal, Log: env.Log, Session: env.Session}
	rec.Prepared, err = reload.Prepare(ctx, d, tgt, rep, table, ro)
	return rec, err
}

// inspectLocked opens the table, identifies it (rec.Target), checks the journal's place and
// takes the table's lock into *locked, then inspects the fallback folder under it. A nil
// table: it failed before the table was identified.
func inspectLocked(ctx context.Context, env Env, req Request, locked **reload.Locked, rec *Recovery) (*tableref.Ref, *inspect.Report, error) {
	tgt, err := Open(ctx, env.Resolver, req.Target, tableref.Read)
	if err != nil {
		return nil, nil, err
	}
	rec.Target = tgt
	if err := env.Places.CheckJournal(ctx, req.Journal, tgt); err != nil {
		return tgt, nil, err
	}
	if *locked, err = reload.LockTable(ctx, env.Journal, tgt.TableID, req.Header.Command, req.BreakLock); err != nil {
		return tgt, nil, err
	}
	rep, err := inspect.StreamReport(ctx, tgt.Root, inspect.Options{Concurrency: env.Concurrency, Prefix: req.Prefix, Progress: env.Footers}, true, nil)
	if env.FootersDone != nil {
		env.FootersDone(err == nil)
	}
	if err != nil {
		return tgt, nil, fmt.Errorf("inspect %s: %w", tgt.Display(), err)
	}
	env.log().Info("inspected", "root", tgt.Display(), "files", rep.Totals.Files, "unreadable", rep.Totals.Unreadable,
		"groups", rep.Totals.Groups)
	return tgt, rep, nil
}

// readSchema reads the table's schema from its source, and its history (the schema over its
// versions, from the Delta log) when it is known.
func readSchema(ctx context.Context, env Env, s Schema, tgt *tableref.Ref) (*schemadiff.Table, error) {
	if s.File != nil {
		return s.File, nil
	}
	if s.Source == nil {
		return nil, errors.New("no source for the table's schema")
	}
	table, err := s.Source.Table(ctx, tgt)
	if err != nil {
		return nil, fmt.Errorf("read the table schema (--from %s): %w", s.From, err)
	}
	if table.Known() {
		if err := ReadHistory(ctx, env.log(), tgt, table); err != nil {
			return nil, err
		}
	}
	return table, nil
}

// ReadHistory reads the table's schema over its versions from its Delta log into t: it says
// which version each schema group was written against and which renames the table's history
// proves (inspect reports them, reload loads through them). A table whose log is not at the
// root (or not readable) goes without, logged; a schema file has no history. Only the end of
// ctx is an error.
func ReadHistory(ctx context.Context, log *slog.Logger, tgt *tableref.Ref, t *schemadiff.Table) error {
	if t.Source == schemadiff.SourceFile {
		return nil
	}
	h, err := delta.History(ctx, tgt.Root, 0)
	switch {
	case err == nil:
		t.History = h
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		log.Info("table history not read", "error", err.Error())
	}
	return nil
}

// options turns the request into reload's options: the load by key checked against the
// table's columns, the staging and keys places opened.
func options(ctx context.Context, env Env, req Request, tgt *tableref.Ref, table *schemadiff.Table) (reload.Options, error) {
	ro := reload.Options{Renames: req.Renames, BatchFiles: req.BatchFiles, NoValidate: req.NoValidate,
		IgnoreForeignRuns: strings.TrimSpace(req.IgnoreForeignRuns), Header: req.Header, BreakLock: req.BreakLock}
	if d := req.Dedupe; d != nil {
		if err := checkColumns(table.Schema, d.Key, d.Order, "--dedupe-key and --dedupe-order name"); err != nil {
			return reload.Options{}, err
		}
		ro.Dedupe = &reload.Dedupe{Key: d.Key, Order: d.Order, Ascending: d.Ascending}
	}
	var err error
	if (req.StageTo != "" || req.KeysTo != "") && env.Places == nil {
		return reload.Options{}, errors.New("no opener of places for --stage-to and --keys-to")
	}
	if req.StageTo != "" {
		if ro.Stage, err = env.Places.OpenStage(ctx, place.Staging, req.StageTo, tgt); err != nil {
			return reload.Options{}, err
		}
	}
	ro.Keys = req.Key
	if ro.Keys == nil && ro.Dedupe != nil {
		ro.Keys = ro.Dedupe.Key
	}
	if ro.Keys != nil {
		if err := checkColumns(table.Schema, ro.Keys, "", "--key names"); err != nil {
			return reload.Options{}, err
		}
	}
	if req.KeysTo != "" {
		var staging []storage.Location
		if ro.Stage != nil {
			if l, err := storage.Parse(ro.Stage.Location); err == nil {
				staging = append(staging, l)
			}
		}
		kp, err := env.Places.OpenStage(ctx, place.Keys, req.KeysTo, tgt, staging...)
		if err != nil {
			return reload.Options{}, err
		}
		ro.KeysPlace = &reload.KeysPlace{Dst: kp.Dst, Location: kp.Location}
	} else if ro.Keys != nil && ro.Stage == nil && req.Key != nil {
		return reload.Options{}, &UsageError{Msg: "--key: the keys file needs a place the warehouse may read: --stage-to or --keys-to", Flag: true}
	}
	if ro.Stage == nil && ro.KeysPlace == nil {
		ro.Keys = nil // a load by key without a place for a keys file: verify reads the files
	}
	return ro, nil
}

// checkColumns checks that the table has every key column (and the order column); flags
// says which flags name them ("--key names").
func checkColumns(s schemadiff.Schema, keys reload.Keys, order, flags string) error {
	names := append([]string(nil), keys...)
	if order != "" {
		names = append(names, order)
	}
	for _, k := range names {
		found := false
		for _, f := range s.Fields {
			found = found || strings.EqualFold(f.Name, k)
		}
		if !found {
			return &UsageError{Msg: fmt.Sprintf("the table has no column %s (%s table columns)", schemadiff.QuoteIdent(k), flags)}
		}
	}
	return nil
}

// CurrentUser asks the warehouse who statements run as (current_user()); "" when it cannot
// say. A run records it: without it, no untagged commit is taken from the table's history as
// a batch's.
func CurrentUser(ctx context.Context, wh reload.Warehouse) string {
	res, err := wh.QueryAll(ctx, sqlstmt.CurrentUser())
	if err != nil || len(res.Rows) == 0 || len(res.Rows[0]) == 0 {
		return ""
	}
	s, _ := res.Rows[0][0].(string)
	return s
}

// WarehouseDeps are reload's dependencies on the warehouse wh, with its sessions for commit
// tags, the journal store and the identity statements run as.
func WarehouseDeps(wh *databricks.Warehouse, store journal.Store, identity string, log *slog.Logger) reload.Deps {
	return reload.Deps{Warehouse: wh, Journal: store, Identity: identity, Log: log,
		Session: func(ctx context.Context) (reload.Session, error) {
			s, err := wh.Session(ctx)
			if err != nil {
				return nil, err
			}
			return s, nil
		}}
}
