package reload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/journal"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/sqlstmt"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
	"github.com/zbrecover/zbrecover/tableref"
)

// model is a Delta table behind a SQL warehouse, as far as reload, verify and cleanup can
// tell: COPY INTO loads each path once (by path, as Databricks tracks loaded files), every
// write is a commit in the history with its operation, identity, metrics and the session's
// commit tag; and it can be hostile in every way Databricks can be: lost answers before and
// after a commit, commit-then-fail, a statement re-executed, failed history reads, other
// writers with the same identity committing look-alike COPY INTOs, Zerobus committing between
// any two statements, a history identity that differs from current_user(), a refused tag.
//
// It is for the failure paths and the property tests of the classification; the end-to-end
// tests use the local warehouse.
type model struct {
	mu sync.Mutex
	t  testing.TB

	identity    string // current_user()
	historyUser string // the userName commits record ("" = identity)
	refuseTag   bool   // SET of the commit tag is refused
	ignoreTag   bool   // SET is taken, commits do not carry it

	commits []Commit
	loaded  map[string]bool // paths COPY INTO loaded
	// rows is what the table holds per file identity (the file's key under the fallback
	// folder, whatever path loaded it): the number of times its rows were loaded.
	rows map[string]int
	// fileRows are the rows of each file identity; bias adds rows a load inserts beyond
	// them (a file whose footer lies).
	fileRows map[string]int64
	bias     map[string]int64
	// sources map a source folder URL prefix to the files read through it.
	sources []string
	// stagedIDs map a staged copy's path (StagedPath) to the file it is a copy of.
	stagedIDs map[string]string
	// skipEmpty: an insert of no row commits nothing.
	skipEmpty bool

	// faults, by statement kind: each returns what to do with the statement.
	fault func(stmt string, n int) faultKind
	n     int // statements seen
	dead  bool
	log   []string

	// lookalike commits another writer's COPY INTO with the same identity and row count
	// after each of ours.
	lookalike bool
	// zerobus commits this many WRITE versions before each statement.
	zerobus int
	rnd     *rand.Rand

	// props are the table's properties (SHOW TBLPROPERTIES); enableDV sets
	// delta.enableDeletionVectors = true at the first COPY INTO that commits, as a workspace
	// whose setting for deletion vectors is on does.
	props    map[string]string
	enableDV bool
}

type faultKind int

const (
	faultNone         faultKind = iota
	faultDropBefore             // the request never reaches the warehouse
	faultDropAfter              // it runs (commits), the answer is lost
	faultCommitFail             // it commits, then answers DELTA_POST_COMMIT_HOOK_FAILED
	faultReexecute              // it runs twice (a driver retry); the second answer comes back
	faultError                  // refused before anything: a schema mismatch (42KDG)
	faultHistoryError           // DESCRIBE HISTORY fails
	faultConflict               // DELTA_CONCURRENT_APPEND, nothing committed
)

var errDead = errors.New("the process is gone")

// modelEpoch is the time of the model table's first commit, a day after its files were
// parked; later commits are made at the time they are made.
var modelEpoch = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)

func newModel(t testing.TB, files map[string]int64) *model {
	m := &model{t: t, identity: "me@example.com", loaded: map[string]bool{}, rows: map[string]int{}, fileRows: files,
		rnd: rand.New(rand.NewSource(1))}
	m.commits = append(m.commits, Commit{Version: 0, Operation: "CREATE TABLE", User: m.identity, Time: modelEpoch})
	return m
}

func (m *model) QueryAll(ctx context.Context, stmt string, _ ...any) (*databricks.Result, error) {
	return m.exec(ctx, &modelSession{m: m}, stmt)
}

// modelSession is one session: its commit tag.
type modelSession struct {
	m   *model
	tag string
}

func (s *modelSession) QueryAll(ctx context.Context, stmt string, _ ...any) (*databricks.Result, error) {
	return s.m.exec(ctx, s, stmt)
}
func (s *modelSession) Close() error { return nil }

func (m *model) session(context.Context) (Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return nil, errDead
	}
	return &modelSession{m: m}, nil
}

var (
	filesRe   = regexp.MustCompile(`FILES = \((.*?)\) COPY_OPTIONS`)
	limitRe   = regexp.MustCompile(`LIMIT (\d+)$`)
	literalRe = regexp.MustCompile(`'((?:[^'\\]|\\.)*)'`)
)

func (m *model) exec(ctx context.Context, s *modelSession, stmt string) (*databricks.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead || ctx.Err() != nil {
		return nil, errDead
	}
	m.n++
	m.log = append(m.log, stmt)
	for i := 0; i < m.zerobus; i++ {
		m.commit(Commit{Operation: "WRITE", User: "zerobus-sp", EngineInfo: "Zerobus", BlindAppend: true, Metrics: map[string]string{"numOutputRows": "2"}})
	}
	f := faultNone
	if m.fault != nil {
		f = m.fault(stmt, m.n)
	}
	switch {
	case strings.HasPrefix(stmt, "DESCRIBE HISTORY"):
		if f == faultHistoryError || f == faultDropBefore {
			return nil, &databricks.SQLError{Class: databricks.ClassConnection, Message: "history read failed"}
		}
		n, _ := strconv.Atoi(limitRe.FindStringSubmatch(stmt)[1])
		return m.history(n), nil
	case strings.HasPrefix(stmt, "SHOW TBLPROPERTIES"):
		res := &databricks.Result{Columns: []string{"key", "value"}}
		for k, v := range m.props {
			res.Rows = append(res.Rows, []any{k, v})
		}
		return res, nil
	case strings.HasPrefix(stmt, "SELECT current_user()"):
		return &databricks.Result{Columns: []string{"current_user()"}, Rows: [][]any{{m.identity}}}, nil
	case strings.HasPrefix(stmt, "SET "+tagKey):
		if m.refuseTag {
			return nil, &databricks.SQLError{Class: databricks.ClassOther, ErrorClass: "CONFIG_NOT_AVAILABLE", SQLState: "42K0I", Message: "Configuration is not available."}
		}
		if f == faultDropBefore {
			return nil, &databricks.SQLError{Class: databricks.ClassConnection, Message: "connection reset"}
		}
		lits := literalRe.FindAllStringSubmatch(stmt, -1)
		s.tag = unquoteString("'" + lits[len(lits)-1][1] + "'")
		if m.ignoreTag {
			s.tag = ""
		}
		return &databricks.Result{Columns: []string{"key", "value"}}, nil
	case strings.HasPrefix(stmt, "INSERT INTO") && strings.HasSuffix(stmt, " WHERE false"):
		// A claim on the table: a tagged commit of no row, unless the warehouse skips empty
		// commits.
		if f == faultDropBefore {
			return nil, &databricks.SQLError{Class: databricks.ClassConnection, Message: "connection reset before the request was sent"}
		}
		if !m.skipEmpty {
			m.commit(Commit{Operation: "WRITE", User: m.identity, UserMetadata: s.tag, BlindAppend: true, Metrics: map[string]string{"numOutputRows": "0"}})
		}
		return copyResult(0), nil
	case strings.HasPrefix(stmt, "COPY INTO"):
		if strings.Contains(stmt, "VALIDATE ALL") {
			return &databricks.Result{Columns: []string{"id"}}, nil
		}
		switch f {
		case faultDropBefore:
			return nil, &databricks.SQLError{Class: databricks.ClassConnection, Message: "connection reset before the request was sent"}
		case faultError:
			return nil, &databricks.SQLError{Class: databricks.ClassSchemaMismatch, SQLState: "42KDG", ErrorClass: "COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE"}
		case faultConflict:
			return nil, &databricks.SQLError{Class: databricks.ClassConcurrentCopy, SQLState: "2D521", ErrorClass: "DELTA_CONCURRENT_APPEND", Message: "Concurrent append"}
		}
		n := m.copyInto(stmt, s.tag)
		switch f {
		case faultDropAfter:
			return nil, &databricks.SQLError{Class: databricks.ClassConnection, Message: "connection reset after the commit"}
		case faultCommitFail:
			return nil, &databricks.SQLError{SQLState: "2DKD0", ErrorClass: "DELTA_POST_COMMIT_HOOK_FAILED",
				Message: fmt.Sprintf("Committing to the Delta table version %d succeeded but error while executing post-commit hook", len(m.commits)-1)}
		case faultReexecute:
			n = m.copyInto(stmt, s.tag)
		}
		return copyResult(n), nil
	}
	m.t.Fatalf("model: statement not understood: %s", stmt)
	return nil, nil
}

// copyInto loads the statement's files not loaded yet and commits when it loaded rows.
func (m *model) copyInto(stmt, tag string) int64 {
	folder := sqlFolder(stmt)
	var n int64
	for _, lit := range literalRe.FindAllStringSubmatch(filesRe.FindStringSubmatch(stmt)[1], -1) {
		p := folder + unquoteString("'"+lit[1]+"'")
		if m.loaded[p] && !sqlstmt.Forced(stmt) {
			continue
		}
		id, ok := m.identityOf(p)
		if !ok {
			continue // a missing file is skipped (ignoreMissingFiles)
		}
		m.loaded[p] = true
		m.rows[id]++
		n += m.fileRows[id] + m.bias[id]
	}
	if n > 0 {
		user := m.identity
		if m.historyUser != "" {
			user = m.historyUser
		}
		m.commit(Commit{Operation: "COPY INTO", User: user, UserMetadata: tag, Metrics: map[string]string{"numOutputRows": fmt.Sprint(n), "numFiles": "1"}})
		if m.enableDV {
			if m.props == nil {
				m.props = map[string]string{}
			}
			m.props["delta.enableDeletionVectors"] = "true"
		}
		if m.lookalike {
			m.commit(Commit{Operation: "COPY INTO", User: user, Metrics: map[string]string{"numOutputRows": fmt.Sprint(n), "numFiles": "1"}})
		}
	}
	return n
}

// identityOf is the file a path names: its key under one of the sources.
func (m *model) identityOf(p string) (string, bool) {
	for _, src := range m.sources {
		if rel, ok := strings.CutPrefix(p, src); ok {
			if _, known := m.fileRows[rel]; known {
				return rel, true
			}
			if id, ok := m.stagedIDs[rel]; ok {
				return id, true
			}
		}
	}
	return "", false
}

func sqlFolder(stmt string) string {
	src, ok := sqlSource(stmt)
	if !ok {
		panic("no folder in " + stmt)
	}
	return src
}

func (m *model) commit(c Commit) {
	c.Version = int64(len(m.commits))
	c.Time = time.Now().UTC()
	m.commits = append(m.commits, c)
}

// remove is a commit by the table's owner that removes every row (TRUNCATE).
func (m *model) truncate() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commit(Commit{Operation: "TRUNCATE", User: "owner@example.com", Metrics: map[string]string{"numRemovedFiles": "3"}})
	for id := range m.rows {
		m.rows[id] = 0
	}
}

// deleteFile removes the rows of one file from the table, as a DELETE by the table's owner
// (the identity that reloads) does: one commit, whatever else the table holds.
func (m *model) deleteFile(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commit(Commit{Operation: "DELETE", User: m.identity, Metrics: map[string]string{"numDeletedRows": fmt.Sprint(m.rows[id])}})
	m.rows[id] = 0
}

func (m *model) history(n int) *databricks.Result {
	res := &databricks.Result{Columns: []string{"version", "timestamp", "userName", "operation", "operationParameters", "operationMetrics", "userMetadata", "isBlindAppend", "engineInfo"}}
	for i := len(m.commits) - 1; i >= 0 && len(res.Rows) < n; i-- {
		c := m.commits[i]
		metrics, _ := json.Marshal(c.Metrics)
		var meta any
		if c.UserMetadata != "" {
			meta = c.UserMetadata
		}
		res.Rows = append(res.Rows, []any{c.Version, c.Time, c.User, c.Operation, "{}", string(metrics), meta, c.BlindAppend, c.EngineInfo})
	}
	return res
}

func copyResult(n int64) *databricks.Result {
	return &databricks.Result{Columns: []string{"num_affected_rows", "num_inserted_rows", "num_skipped_corrupt_files"}, Rows: [][]any{{n, n, int64(0)}}}
}

func (m *model) kill() {
	m.mu.Lock()
	m.dead = true
	m.mu.Unlock()
}

func (m *model) revive() {
	m.mu.Lock()
	m.dead = false
	m.fault = nil
	m.mu.Unlock()
}

// copies counts the COPY INTO statements (not VALIDATE) seen.
func (m *model) copies() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.log {
		if strings.HasPrefix(s, "COPY INTO") && !strings.Contains(s, "VALIDATE") {
			n++
		}
	}
	return n
}

// dyingStore is a journal store that stops writing (as a killed process does) once its
// owner is dead.
type dyingStore struct {
	journal.Store
	dead func() bool
}

func (d dyingStore) Append(ctx context.Context, r journal.Record) error {
	if d.dead() {
		return errDead
	}
	return d.Store.Append(ctx, r)
}

// scene is a table with fallback files on a mem root, a model warehouse, and a journal
// directory that outlives the processes reloading it.
type scene struct {
	t     *testing.T
	m     *model
	root  *mem.Backend
	tgt   *tableref.Ref
	dir   string
	files []string // keys under the fallback folder
	table *sd.Table
}

const fallbackPrefix = "_zerobus/table_rejected_parquets/"

// newScene writes n fallback files of rows rows each (one schema group), in folders of per
// files.
func newScene(t *testing.T, n, per int, rows int64) *scene {
	t.Helper()
	root := mem.New()
	files := map[string]int64{}
	sc := &scene{t: t, root: root, dir: t.TempDir(), table: table(sd.NewSchema().Col("id", sd.LongType, sd.NotNull))}
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("2026/01/%02d/f-%04d.parquet", 1+i/per, i)
		root.Set(fallbackPrefix+key, []byte(fmt.Sprintf("parquet bytes of %s", key)), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		files[key] = rows
		sc.files = append(sc.files, key)
	}
	sc.m = newModel(t, files)
	loc, _ := storage.Parse("s3://lake/orders")
	sc.tgt = &tableref.Ref{Name: orders, HasName: true, TableID: "tid-0001", Loc: loc, Root: root}
	sc.m.sources = append(sc.m.sources, strings.TrimSuffix(loc.Join(fallbackPrefix).URL(), "/")+"/")
	sc.m.stagedIDs = map[string]string{}
	for _, k := range sc.files {
		sc.m.stagedIDs[sc.stagedPath(k)] = k
	}
	return sc
}

// stagedPath is where file id is staged (StagedPath of its listed version).
func (sc *scene) stagedPath(id string) string {
	o, err := sc.root.Stat(context.Background(), fallbackPrefix+id)
	if err != nil {
		sc.t.Fatal(err)
	}
	return StagedPath(sc.tgt.TableID, journal.FileOf(o, 0))
}

// report is inspect's report of the scene's fallback files.
func (sc *scene) report() *inspect.Report {
	rep := &inspect.Report{Root: sc.root.Location(), Prefix: fallbackPrefix,
		Groups: []inspect.Group{{SchemaID: "g1", Schema: sc.table.Schema}}}
	for _, k := range sc.files {
		o, err := sc.root.Stat(context.Background(), fallbackPrefix+k)
		if err != nil {
			continue // deleted by cleanup
		}
		rep.Files = append(rep.Files, inspect.File{Key: k, SchemaID: "g1", Rows: sc.m.fileRows[k], Size: o.Size, ETag: o.ETag, Modified: o.ModTime})
	}
	return rep
}

// process is one zbrecover process: its own handle on the journal directory.
func (sc *scene) store(t *testing.T) journal.Store {
	j, err := journal.OpenDir(sc.dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return dyingStore{Store: j, dead: func() bool { sc.m.mu.Lock(); defer sc.m.mu.Unlock(); return sc.m.dead }}
}

func (sc *scene) deps(t *testing.T, tagged bool) Deps {
	d := Deps{Warehouse: sc.m, Journal: sc.store(t), Identity: sc.m.identity}
	if tagged {
		d.Session = sc.m.session
	}
	return d
}

var testOpts = Options{Backoff: time.Millisecond, HistoryRetries: 2}

// reload runs one reload process to its end; its error (if any) is returned.
func (sc *scene) reload(t *testing.T, d Deps, o Options) (*Report, error) {
	t.Helper()
	p, err := Prepare(context.Background(), d, sc.tgt, sc.report(), sc.table, o)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	return p.Execute(context.Background(), RunOptions{})
}

// state is the journal's view of the latest run.
func (sc *scene) state(t *testing.T) *journal.State {
	t.Helper()
	j, err := journal.OpenDir(sc.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	runs, err := journal.Runs(context.Background(), j, sc.tgt.TableID)
	if err != nil || len(runs) == 0 {
		t.Fatalf("runs: %v %v", runs, err)
	}
	st, err := journal.ReadState(context.Background(), j, sc.tgt.TableID, runs[0].Run)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// inTable reports whether file id's rows are in the table (loaded once).
func (sc *scene) inTable(id string) int {
	sc.m.mu.Lock()
	defer sc.m.mu.Unlock()
	return sc.m.rows[id]
}

func relOf(key string) string { return strings.TrimPrefix(key, fallbackPrefix) }

var _ = path.Base
