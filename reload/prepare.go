package reload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/tableref"
)

// Warehouse runs SQL: databricks.Warehouse, or a test double.
type Warehouse interface {
	QueryAll(ctx context.Context, stmt string, args ...any) (*databricks.Result, error)
}

// Session is one warehouse session held for the statements that must share it (the commit
// tag's SET and the load it applies to). A session never runs a statement again by itself
// on another connection.
type Session interface {
	Warehouse
	Close() error
}

// Deps are what a reload works with, and an undo (undo.Deps).
type Deps struct {
	Warehouse Warehouse
	// Session opens a session of the warehouse, on which a statement and its commit tag's
	// SET run; nil when it has none, and statements then carry no commit tag.
	Session func(ctx context.Context) (Session, error)
	Journal journal.Store
	// Identity is current_user() on the warehouse, "" when unknown: without a tag, a commit
	// is then never taken from the table's history as a batch's.
	Identity string
	// Log receives progress lines (retries, settling), at info and warn level.
	Log *slog.Logger
}

// Logger returns Log, or a logger that discards everything when Log is nil.
func (d Deps) Logger() *slog.Logger { return cmp.Or(d.Log, discardLog) }

var discardLog = slog.New(slog.DiscardHandler)

// Options configure Prepare and Execute.
type Options struct {
	// Renames are confirmed renames, file column → table column (--rename old=new).
	Renames map[string]string
	// BatchFiles is the most files one statement names (default and most 1000).
	BatchFiles int
	// Stage, when set, copies the files to a staging location and loads them from there.
	Stage *Stage
	// Dedupe, when set, loads by key through a staging table and one MERGE (dedupe.go).
	Dedupe *Dedupe
	// NoValidate skips the VALIDATE ALL preflight (a cheap probe of path access still runs).
	NoValidate bool
	// Header is this process's run record.
	Header journal.Header
	// BreakLock is asked, with the holder, about a lock another process holds (the
	// operator's --break-lock); true breaks it.
	BreakLock func(*journal.LockedError) bool
	// Locked, when it holds the table's lock (LockTable), is the lock Prepare takes over
	// instead of taking it.
	Locked *Locked
	// MaxAttempts bounds the tries of one batch on transaction conflicts (default 5).
	MaxAttempts int
	// Backoff is the first wait after a conflict or a failed history read, doubled each
	// time (default 1s).
	Backoff time.Duration
	// HistoryRetries is how often a failed history read is tried again (default 3).
	HistoryRetries int
	// NoTag never tags commits (the warehouse is then asked nothing about tags).
	NoTag bool
	// Keys, when set (reload --key, or the key of --dedupe-key), has Execute read the key
	// columns of the run's files into a keys file at KeysPlace (default: the staging
	// location) before it loads them, and record it: verify --key and cleanup then check the
	// run by key after the files are gone.
	Keys      Keys
	KeysPlace *KeysPlace
	// IgnoreForeignRuns, when set, is the operator's reason to load files that runs of other
	// journals may have loaded (--ignore-foreign-runs): they are planned, and the reason is
	// journaled. Without it such files are refused.
	IgnoreForeignRuns string
	// Now is the clock (tests).
	Now func() time.Time
}

// Progress are the callbacks Execute tells how far each of its phases is, any of them nil.
// Each is called with the phase's work done and its total when the phase starts (done 0),
// as it advances, and with done equal to total when it ends, so that a progress bar ends
// with its phase; a phase that stops on an error ends without that last call.
type Progress struct {
	// Validate counts the VALIDATE ALL statements checked (the path probe alone, one
	// statement, with NoValidate).
	Validate func(done, total int)
	// Keys counts the files whose key columns were read into the run's keys file.
	Keys func(done, total int)
	// Load counts the batches settled or sent.
	Load func(done, total int)
}

// tell calls fn, when set, with done and total.
func tell(fn func(done, total int), done, total int) {
	if fn != nil {
		fn(done, total)
	}
}

func (o *Options) defaults() {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 5
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.HistoryRetries <= 0 {
		o.HistoryRetries = 3
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Locked is a table's lock taken before the reload's inputs are read (LockTable): while the
// fallback folder is listed and the schema read, a cleanup or verify of the table is told
// that it is locked, and by whom, instead of acting on the run this reload is about to
// continue. Prepare (Options.Locked) takes it over.
type Locked struct {
	tableID string
	lock    journal.Lock
}

// LockTable takes the table's lock in the journal, as Prepare would (breakLock decides
// whether a stale lock is broken).
func LockTable(ctx context.Context, store journal.Store, tableID, command string, breakLock func(*journal.LockedError) bool) (*Locked, error) {
	l, err := store.Lock(ctx, tableID, journal.LockOptions{Owner: journal.Holder{Command: command}, Break: breakLock})
	if err != nil {
		return nil, err
	}
	return &Locked{tableID: tableID, lock: l}, nil
}

// Close releases the lock unless Prepare took it over; a nil Locked or a second Close does
// nothing.
func (l *Locked) Close() error {
	if l == nil || l.lock == nil {
		return nil
	}
	lk := l.lock
	l.lock = nil
	return lk.Close()
}

// Prepared is a reload ready to run: the table's lock held, the run it continues, the plan
// of new batches, the source the statements read. Close releases the lock; Execute runs it.
type Prepared struct {
	// Plan holds the new batches (those no run of the table has loaded or may have).
	Plan *Plan
	// Continues is the unfinished run on this root that Execute continues, nil for none.
	Continues *journal.State
	// Source is the folder URL (trailing "/") every statement reads: the fallback folder or
	// the staging location.
	Source string
	// SecondPath are files an earlier run loaded (or may have) through another path than
	// Source: loading them through Source would load them twice.
	SecondPath []SkippedFile
	// Changed are files the journal knows with another size or version than the listing
	// shows: never loaded again, never skipped silently.
	Changed []string
	// Foreign are the runs of other journals the table's history shows loading (or about to
	// load) the table since the oldest fallback file was parked; ForeignRefused counts the
	// files refused because of them (the plan's Refused says which and why).
	Foreign        []ForeignRun
	ForeignRefused int

	d             Deps
	o             Options
	tgt           *tableref.Ref
	table         *schemadiff.Table
	rep           *inspect.Report
	lock          journal.Lock
	facts         *journal.TableFacts
	sourceChanged bool
	closed        bool
	// historyBase is the table's newest version when the history was read for runs of other
	// journals: a claim is checked against the commits after it.
	historyBase *int64
}

// Close releases the table's lock (Execute's report is unaffected). A second Close does
// nothing.
func (p *Prepared) Close() error {
	if p == nil || p.closed || p.lock == nil {
		return nil
	}
	p.closed = true
	return p.lock.Close()
}

// Nothing reports whether there is nothing to do: no new batch and no run to continue.
func (p *Prepared) Nothing() bool {
	return len(p.Plan.Batches) == 0 && p.Continues == nil
}

// Prepare takes the table's lock, then, under it, reads what every run of the table did,
// finds the unfinished run on this root, decides the source and plans the new batches: the
// readable fallback files of rep that no run loaded or may have loaded, one schema group and
// folder per statement. With an error wrapping ErrBlocked it returns the plan too (its
// blocked groups and their suggested table changes); the lock is then still held until
// Close. Nothing is sent to the warehouse.
func Prepare(ctx context.Context, d Deps, tgt *tableref.Ref, rep *inspect.Report, table *schemadiff.Table, o Options) (*Prepared, error) {
	o.defaults()
	if !tgt.HasName {
		return nil, errors.New("reload needs the table's name")
	}
	prefix, err := fallback.CheckPrefix(rep.Prefix)
	if err != nil {
		return nil, fmt.Errorf("--prefix: %w", err)
	}
	var lock journal.Lock
	if o.Locked != nil && o.Locked.tableID == tgt.TableID && o.Locked.lock != nil {
		lock, o.Locked.lock = o.Locked.lock, nil // Prepared releases it from now on
	} else if lock, err = d.Journal.Lock(ctx, tgt.TableID, journal.LockOptions{Owner: journal.Holder{Command: o.Header.Command}, Break: o.BreakLock}); err != nil {
		return nil, err
	}
	p := &Prepared{d: d, o: o, tgt: tgt, table: table, rep: rep, lock: lock}
	fail := func(err error) (*Prepared, error) {
		_ = p.Close()
		return nil, err
	}
	// Of the files the journal knows, only those the folder still holds can be planned
	// again: the facts keep those (the report's files, and those of its groups when it kept
	// only theirs).
	inFolder := make(map[string]bool, len(rep.Files))
	for _, f := range rep.Files {
		inFolder[prefix+f.Key] = true
	}
	for i := 0; len(rep.Files) == 0 && i < len(rep.Groups); i++ {
		for _, f := range rep.GroupFiles(rep.Groups[i].SchemaID) {
			inFolder[prefix+f.Key] = true
		}
	}
	if p.facts, err = journal.FactsFor(ctx, d.Journal, tgt.TableID, func(key string) bool { return inFolder[key] }); err != nil {
		return fail(err)
	}
	st, err := journal.LatestUnfinished(ctx, d.Journal, tgt.TableID, tgt.Display())
	if err != nil {
		return fail(err)
	}
	if err := checkDedupe(st, o); err != nil {
		return fail(err)
	}
	if len(o.Keys) > 0 && o.KeysPlace == nil && o.Stage == nil {
		return fail(fmt.Errorf("--key: the keys file needs a place the warehouse may read: --stage-to (or --keys-to)"))
	}
	p.Continues = st
	p.Source = strings.TrimSuffix(tgt.Loc.Join(prefix).URL(), "/") + "/"
	if o.Stage != nil {
		p.Source = strings.TrimSuffix(o.Stage.Location, "/") + "/"
	}
	if st != nil {
		if prev := runSource(st, prefix); prev != "" && !sameSource(prev, p.Source) {
			if anyIntent(st) {
				return fail(fmt.Errorf("run %s loads from %s and has sent statements: %w; re-run with the same source (%s)",
					st.Run, prev, ErrSecondPath, sourceFlag(prev, tgt, prefix)))
			}
			if st.Merge != nil {
				return fail(fmt.Errorf("run %s loads by key from %s: re-run with the same source (%s)", st.Run, prev, sourceFlag(prev, tgt, prefix)))
			}
			// No statement of the run was sent: its batches may read the new source.
			p.sourceChanged = true
		}
	}
	skip, changed := p.skips(rep, prefix)
	p.Changed = changed
	refuse, err := p.foreignRuns(ctx, rep)
	if err != nil {
		return fail(err)
	}
	// Files of undone batches are not in facts.Loaded, so skips plans them again: the redo
	// (Redo: through fresh staged paths, or forced from the fallback folder).
	plan, planErr := NewPlan(rep, table, tgt.Name, tgt.Loc.Join(prefix), PlanOptions{
		BatchFiles: o.BatchFiles, Renames: o.Renames, Skip: skip, Refuse: refuse, Source: p.Source, Staged: o.Stage != nil, TableID: tgt.TableID,
		Redo: p.facts.Undone})
	if plan == nil {
		return fail(planErr)
	}
	p.Plan = plan
	return p, planErr
}

// skips returns the fallback keys (relative to the prefix) no plan may include: files any
// run of the table loaded or may have loaded, and every file of the run being continued
// (that run finishes them). It records in p.SecondPath the files loaded through another
// source than p's, and returns the files the journal knows with another version than the
// listing shows.
func (p *Prepared) skips(rep *inspect.Report, prefix string) (map[string]string, []string) {
	skip := map[string]string{}
	listed := map[string]inspect.File{}
	for _, f := range rep.Files {
		listed[prefix+f.Key] = f
	}
	var changed []string
	note := func(fs journal.FileState, why string) {
		rel := strings.TrimPrefix(fs.Key, prefix)
		skip[rel] = why
		if f, ok := listed[fs.Key]; ok && (f.Size != fs.Size || f.ETag != fs.ETag || f.Generation != fs.Generation) {
			changed = append(changed, fmt.Sprintf("%s: %d bytes (etag %s) now, %d bytes (etag %s) in run %s", fs.Key, f.Size, f.ETag, fs.Size, fs.ETag, fs.Run))
		}
	}
	cont := ""
	if p.Continues != nil {
		cont = p.Continues.Run
	}
	for _, fs := range p.facts.Loaded {
		why := fmt.Sprintf("run %s batch %d: %s", fs.Run, fs.Batch, fs.Status)
		if fs.Run == cont {
			why += " (this reload continues that run)"
		}
		note(fs, why)
		if _, ok := listed[fs.Key]; ok && fs.Run != cont {
			if src := p.facts.Sources[fs.Run]; src == "" || !sameSource(src, p.Source) {
				p.SecondPath = append(p.SecondPath, SkippedFile{Key: fs.Key, Reason: why})
			}
		}
	}
	if p.Continues != nil {
		for _, fs := range p.Continues.Files() {
			if _, ok := skip[strings.TrimPrefix(fs.Key, prefix)]; !ok {
				note(fs, fmt.Sprintf("run %s batch %d: %s (this reload continues that run)", p.Continues.Run, fs.Batch, fs.Status))
			}
		}
	}
	sort.Strings(changed)
	return skip, changed
}

// runSource is the folder URL a run's statements read: recorded since sources are, else
// read from its first statement (journals of earlier versions), whose folder is prefix and
// the batch's folder.
func runSource(st *journal.State, prefix string) string {
	if st.Source != "" {
		return st.Source
	}
	for _, b := range st.Batches {
		sql := b.SQL
		if b.Intent != nil {
			sql = b.Intent.SQL
		}
		if src, ok := sqlSource(sql); ok {
			return strings.TrimSuffix(src, strings.TrimPrefix(b.Folder, prefix))
		}
	}
	return ""
}

// sqlSource reads the folder literal a COPY INTO statement reads from.
func sqlSource(sql string) (string, bool) {
	i := strings.Index(sql, " FILEFORMAT = PARQUET")
	if i < 0 {
		return "", false
	}
	head := strings.TrimSuffix(sql[:i], ")")
	j := strings.LastIndex(head, "FROM '")
	if j < 0 {
		return "", false
	}
	lit := head[j+len("FROM "):]
	n := stringLiteralLen(lit)
	if n == 0 || n != len(lit) {
		return "", false
	}
	return unquoteString(lit), true
}

// unquoteString reads a literal schemadiff.QuoteString wrote.
func unquoteString(lit string) string {
	var b strings.Builder
	for i := 1; i < len(lit)-1; i++ {
		if lit[i] == '\\' && i+1 < len(lit)-1 {
			i++
		}
		b.WriteByte(lit[i])
	}
	return b.String()
}

// sameSource reports whether two source folders (as statements name them: a /Volumes path or
// a URL without its query) are one path for COPY INTO: the same place (storage.Location.Equal)
// spelt the same in SQL once parsed (Location.URL: a trailing or doubled "/", "./", dbfs:, s3a://
// and the case of a volume's names do not count). One place spelt two ways in SQL (abfss://
// and wasbs://, a bucket in capitals) is not the same source: whether COPY INTO's record of
// loaded files folds such spellings is not documented, so a file is never loaded through a
// second spelling. A folder that does not parse is compared as written, less a trailing "/".
func sameSource(a, b string) bool {
	la, errA := storage.Parse(a)
	lb, errB := storage.Parse(b)
	if errA != nil || errB != nil {
		return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
	}
	return la.Equal(lb) && la.URL() == lb.URL()
}

func anyIntent(st *journal.State) bool {
	for _, b := range st.Batches {
		if b.Attempts > 0 {
			return true
		}
	}
	return false
}

// sourceFlag says how to name a source on the command line.
func sourceFlag(src string, tgt *tableref.Ref, prefix string) string {
	if sameSource(src, strings.TrimSuffix(tgt.Loc.Join(prefix).URL(), "/")) {
		return "no --stage-to"
	}
	return "--stage-to " + strings.TrimSuffix(src, "/")
}

// stringLiteralLen returns the length of the QuoteString literal s starts with, 0 if none.
func stringLiteralLen(s string) int {
	if !strings.HasPrefix(s, "'") {
		return 0
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			return i + 1
		}
	}
	return 0
}
