package warehouse

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zbrecover/zbrecover/storage"
)

// StorageOpener opens a storage backend rooted at a URL (s3://, gs://, abfss://, …). The
// engine uses it to list and stage remote files before DuckDB reads them.
type StorageOpener func(ctx context.Context, url string) (storage.Backend, error)

// RegistryOpener adapts a storage registry and its configuration to a StorageOpener.
func RegistryOpener(reg *storage.Registry, cfg storage.Config) StorageOpener {
	return func(ctx context.Context, url string) (storage.Backend, error) {
		return reg.Open(ctx, url, cfg)
	}
}

// EngineOptions configure a DuckDB engine.
type EngineOptions struct {
	// Dir is the engine's working directory: staged remote files live under it, and so do the
	// default managed table locations when StorageRoot is empty. Required.
	Dir string
	// StorageRoot is the URL under which managed tables get their locations, as a metastore's
	// managed storage root (file://…, s3://bucket/prefix, …). Empty means file://<Dir>/warehouse.
	StorageRoot string
	// Storage opens remote locations (s3://, gs://, abfss://). Nil allows local paths only.
	Storage StorageOpener
	// Unknowns are the initial answers to unknown behaviours (path reads inside managed
	// storage are refused by default); see Unknowns and SetUnknowns.
	Unknowns Unknowns
	// UserName appears in DESCRIBE HISTORY and DESCRIBE … AS JSON. Default "fake-user@example.com".
	UserName string
}

// DuckDB is an Engine that keeps Delta-like tables in an in-memory DuckDB database and speaks
// the Databricks SQL dialect the project needs (see the package documentation). It is safe for
// concurrent use; statements run one at a time.
type DuckDB struct {
	opts EngineOptions

	mu       sync.Mutex
	db       *sql.DB
	conn     *sql.Conn
	catalogs map[string]*catalogMeta
	nextPhys int
	closed   bool

	staged map[string]stagedFile // remote object URL → local copy

	// commitSeq counts commits to every table; a statement's snapshot is its value when the
	// statement arrived (see withSnapshot).
	commitSeq atomic.Int64

	unkMu    sync.Mutex
	unknowns Unknowns

	volumes map[string]string // catalog.schema.volume → local folder

	// stmt is the statement Execute is running (nil between statements): the session's
	// commit metadata and the commits the statement makes. Guarded by mu.
	stmt *stmtContext

	lookalikeRows int64 // synthetic rows look-alike commits inserted (guarded by mu)

	// fileSchemas caches the schema of each Parquet file read (by local path, size and
	// modification time): a load reads every file's schema in its VALIDATE and again in its
	// COPY INTO, and a Parquet file's schema does not change while it stays the same file.
	schemaMu    sync.Mutex
	fileSchemas map[fileSchemaKey][]Field
}

type fileSchemaKey struct {
	local   string
	size    int64
	modNano int64
}

type catalogMeta struct {
	name    string
	id      string
	comment string
	created time.Time
	schemas map[string]*schemaMeta
}

type schemaMeta struct {
	name    string
	comment string
	created time.Time
	tables  map[string]*tableMeta
}

type tableMeta struct {
	id                    string
	catalog, schema, name string
	phys                  string // DuckDB table name
	cols                  []Field
	location              string
	managed               bool
	comment               string
	props                 map[string]string
	partitionCols         []string
	created               time.Time
	lastModified          time.Time
	history               []commit
	loaded                map[string]loadedFile // COPY INTO file state, keyed by source file URL

	// Delta log state: the last protocol and metaData actions written, and whether the
	// location already held a log the engine must not overwrite.
	lastProtocol, lastMetaData string
	foreignLog                 bool
	// baseVersion is the version of the first history entry (a registered table's log may
	// hold versions before the engine's first).
	baseVersion int64
	// files are the live data files of the engine's versions, in the order they were added.
	files []dataFile
	// snapCols and snapProps are the schema and properties of the latest version, shared by
	// the versions that did not change them.
	snapCols  []Field
	snapProps map[string]string
	// Row tracking (rowtracking.go): the next fresh row ID, the one the log's high-water
	// mark last recorded (its value is one less), and whether the protocol lists the
	// feature (once enabled, it stays).
	nextRowID, loggedNextRowID int64
	rowTrackingFeature         bool
}

func (t *tableMeta) fullName() string { return t.catalog + "." + t.schema + "." + t.name }

func (t *tableMeta) quoted() string { return quoteName(t.catalog, t.schema, t.name) }

// col returns the index of the named column (case-insensitive), or -1.
func (t *tableMeta) col(name string) int {
	for i, c := range t.cols {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// commit is one entry of a table's history (one Delta version).
type commit struct {
	Version       int64
	Timestamp     time.Time
	Operation     string
	Parameters    map[string]string
	Metrics       map[string]string
	ReadVersion   *int64
	IsBlindAppend bool
	UserMetadata  string
	UserName      string
	EngineInfo    string
	seq           int64    // the engine-wide commit sequence number
	logLines      []string // the version's Delta log actions, until written to a local log
	// adds and removes are the data files the version added and the paths it removed; cols
	// and props are the table's schema and properties at the version.
	adds    []dataFile
	removes []string
	cols    []Field
	props   map[string]string
}

// loadedFile records a file COPY INTO loaded into a table.
type loadedFile struct {
	Path    string
	Size    int64
	ModTime time.Time
	Version int64
	Rows    int64
	Seq     int64 // the commit's sequence number
}

// NewDuckDB opens an engine. The default catalog "main" with schema "default" exists from the
// start, as in a Unity Catalog workspace.
func NewDuckDB(opts EngineOptions) (*DuckDB, error) {
	if opts.Dir == "" {
		return nil, errors.New("fakewarehouse: EngineOptions.Dir is required")
	}
	if opts.UserName == "" {
		opts.UserName = "fake-user@example.com"
	}
	if opts.StorageRoot == "" {
		opts.StorageRoot = "file://" + filepath.ToSlash(filepath.Join(opts.Dir, "warehouse"))
	}
	opts.StorageRoot = strings.TrimRight(opts.StorageRoot, "/")
	db, err := openDuckDB()
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("fakewarehouse: open duckdb: %w", err)
	}
	for _, q := range []string{"SET TimeZone = 'UTC'", "SET threads = 2",
		// Spark sorts NULLs first in ascending order and last in descending order.
		"SET default_null_order = 'nulls_first_on_asc_last_on_desc'"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			conn.Close()
			db.Close()
			return nil, fmt.Errorf("fakewarehouse: configure duckdb (%s): %w", q, err)
		}
	}
	e := &DuckDB{opts: opts, db: db, conn: conn, catalogs: map[string]*catalogMeta{}, staged: map[string]stagedFile{},
		unknowns: opts.Unknowns, volumes: map[string]string{}}
	e.createCatalog("main", "")
	return e, nil
}

// Close releases the DuckDB database.
func (e *DuckDB) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	err := e.conn.Close()
	if err2 := e.db.Close(); err == nil {
		err = err2
	}
	return err
}

// Exec runs a statement in a fresh session on main.default, for seeding and inspecting tables
// in tests without going through the protocol.
func (e *DuckDB) Exec(ctx context.Context, stmt string) (*Result, error) {
	return e.Execute(ctx, &Session{Catalog: "main", Schema: "default"}, stmt, nil)
}

type snapshotKey struct{}

// withSnapshot records in ctx the commit sequence number at which a statement arrived: a COPY
// INTO that finds files loaded by a commit after it lost a race with a concurrent COPY INTO.
func withSnapshot(ctx context.Context, seq int64) context.Context {
	return context.WithValue(ctx, snapshotKey{}, seq)
}

func snapshotFrom(ctx context.Context) int64 {
	seq, _ := ctx.Value(snapshotKey{}).(int64)
	return seq
}

// snapshot returns the current commit sequence number.
func (e *DuckDB) snapshot() int64 { return e.commitSeq.Load() }

// Execute implements Engine.
func (e *DuckDB) Execute(ctx context.Context, sess *Session, stmt string, params []Param) (*Result, error) {
	if _, ok := ctx.Value(snapshotKey{}).(int64); !ok {
		ctx = withSnapshot(ctx, e.snapshot())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, errInternal(errors.New("engine closed"))
	}
	if sess.Catalog == "" {
		sess.Catalog = "main"
	}
	if sess.Schema == "" {
		sess.Schema = "default"
	}
	e.stmt = &stmtContext{userMetadata: sessionUserMetadata(sess)}
	res, err := e.execute(ctx, sess, stmt, params)
	commits := e.stmt.commits
	e.stmt = nil
	if err != nil {
		return nil, e.classify(err)
	}
	if res != nil {
		res.commits = commits
	}
	return res, nil
}

// stmtContext is what the engine knows of the statement it runs.
type stmtContext struct {
	userMetadata string      // the session's commit metadata, "" for none
	commits      []CommitRef // the versions the statement committed, in order
}

// CommitRef names one version of a table.
type CommitRef struct {
	Table   string // catalog.schema.table
	Version int64
}

func (e *DuckDB) execute(ctx context.Context, sess *Session, stmt string, params []Param) (*Result, error) {
	p, err := newParser(stmt)
	if err != nil {
		return nil, err
	}
	if err := checkSingleStatement(p); err != nil {
		return nil, err
	}
	if len(params) > 0 {
		if err := bindParams(p, params); err != nil {
			return nil, err
		}
	}
	if p.atEnd() {
		return nil, &SQLError{Class: "PARSE_EMPTY_STATEMENT", SQLState: "42617", Message: "Syntax error, unexpected empty statement."}
	}
	first := p.peek()
	switch {
	case first.isKw("SELECT"), first.isKw("WITH"), first.isKw("VALUES"), first.isKw("FROM"), first.isOp("("), first.isKw("TABLE"):
		return e.query(ctx, sess, p)
	case first.isKw("CREATE"):
		return e.create(ctx, sess, p)
	case first.isKw("DROP"):
		return e.drop(ctx, sess, p)
	case first.isKw("ALTER"):
		return e.alter(ctx, sess, p)
	case first.isKw("COPY"):
		return e.copyInto(ctx, sess, p)
	case first.isKw("DESCRIBE"), first.isKw("DESC"):
		return e.describe(ctx, sess, p)
	case first.isKw("INSERT"):
		return e.insert(ctx, sess, p)
	case first.isKw("MERGE"):
		return e.merge(ctx, sess, p)
	case first.isKw("DELETE"), first.isKw("UPDATE"):
		return e.deleteUpdate(ctx, sess, p)
	case first.isKw("TRUNCATE"):
		return e.truncate(ctx, sess, p)
	case first.isKw("RESTORE"):
		return e.restore(ctx, sess, p)
	case first.isKw("OPTIMIZE"):
		return e.optimize(ctx, sess, p)
	case first.isKw("USE"):
		return e.use(sess, p)
	case first.isKw("SET"):
		return e.set(sess, p)
	case first.isKw("RESET"):
		return e.reset(sess, p)
	case first.isKw("SHOW"):
		return e.show(sess, p)
	case first.isKw("LIST"), first.isKw("LS"):
		return e.list(ctx, p)
	}
	return nil, p.errorf("unsupported statement")
}

// bindParams replaces parameter markers (? and :name) with typed literals.
func bindParams(p *parser, params []Param) error {
	next := 0
	byName := map[string]Param{}
	for _, prm := range params {
		if prm.Name != "" {
			byName[strings.ToLower(prm.Name)] = prm
		}
	}
	out := p.toks[:0:0]
	for i := 0; i < len(p.toks); i++ {
		t := p.toks[i]
		var prm Param
		switch {
		case t.isOp("?"):
			if next >= len(params) {
				return &SQLError{Class: "UNBOUND_SQL_PARAMETER", SQLState: "42P02", Message: "Found the unbound parameter: ?."}
			}
			prm = params[next]
			next++
		case t.isOp(":") && i+1 < len(p.toks) && p.toks[i+1].kind == tkIdent && p.toks[i+1].pre == "":
			named, ok := byName[strings.ToLower(p.toks[i+1].val)]
			if !ok {
				out = append(out, t)
				continue
			}
			prm = named
			i++
		default:
			out = append(out, t)
			continue
		}
		lit, err := paramLiteral(prm)
		if err != nil {
			return err
		}
		out = append(out, token{kind: tkIdent, val: lit, raw: lit, pre: t.pre, pos: t.pos, literal: true})
	}
	p.toks = out
	return nil
}

func paramLiteral(prm Param) (string, error) {
	if prm.Value == nil || strings.EqualFold(prm.Type, "VOID") {
		return "NULL", nil
	}
	typ := prm.Type
	if typ == "" {
		typ = "STRING"
	}
	t, err := ParseType(typ)
	if err != nil {
		return "", err
	}
	if t.Kind == KindDecimal && !strings.Contains(typ, "(") {
		// The driver sends DECIMAL without precision: size it from the value, as the
		// warehouse does for a decimal literal.
		v := strings.TrimLeft(*prm.Value, "+-")
		whole, frac, _ := strings.Cut(v, ".")
		t.Scale = len(frac)
		t.Precision = max(len(strings.TrimLeft(whole, "0"))+t.Scale, t.Scale, 1)
		if t.Precision > 38 {
			return "", &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023", Message: "The decimal parameter " + *prm.Value + " exceeds 38 digits."}
		}
	}
	return "CAST(" + duckString(*prm.Value) + " AS " + t.Duck() + ")", nil
}

// Catalog management. Names are stored lower-case, as Unity Catalog does.

func (e *DuckDB) createCatalog(name, comment string) *catalogMeta {
	c := &catalogMeta{name: strings.ToLower(name), id: newUUID(), comment: comment, created: time.Now().UTC(), schemas: map[string]*schemaMeta{}}
	c.schemas["default"] = &schemaMeta{name: "default", created: c.created, tables: map[string]*tableMeta{}}
	e.catalogs[c.name] = c
	return c
}

// resolve qualifies a one- to three-part name with the session's catalog and schema.
func resolve(sess *Session, parts []string) (cat, sch, name string) {
	switch len(parts) {
	case 1:
		return strings.ToLower(sess.Catalog), strings.ToLower(sess.Schema), strings.ToLower(parts[0])
	case 2:
		return strings.ToLower(sess.Catalog), strings.ToLower(parts[0]), strings.ToLower(parts[1])
	}
	return strings.ToLower(parts[0]), strings.ToLower(parts[1]), strings.ToLower(parts[2])
}

func (e *DuckDB) schemaOf(cat, sch string) (*schemaMeta, error) {
	c, ok := e.catalogs[cat]
	if !ok {
		return nil, errCatalogNotFound(cat)
	}
	s, ok := c.schemas[sch]
	if !ok {
		return nil, errSchemaNotFound(quoteName(cat, sch))
	}
	return s, nil
}

// table looks a table up; a missing table, schema or catalog is TABLE_OR_VIEW_NOT_FOUND.
func (e *DuckDB) table(sess *Session, parts []string) (*tableMeta, error) {
	cat, sch, name := resolve(sess, parts)
	if c, ok := e.catalogs[cat]; ok {
		if s, ok := c.schemas[sch]; ok {
			if t, ok := s.tables[name]; ok {
				return t, nil
			}
		}
	}
	return nil, errTableNotFound(quoteName(cat, sch, name))
}

func (e *DuckDB) newPhys() string {
	e.nextPhys++
	return "fw_t" + strconv.Itoa(e.nextPhys)
}

func (e *DuckDB) byPhys(phys string) *tableMeta {
	for _, c := range e.catalogs {
		for _, s := range c.schemas {
			for _, t := range s.tables {
				if t.phys == phys {
					return t
				}
			}
		}
	}
	return nil
}

// allTables returns every table, in name order.
func (e *DuckDB) allTables() []*tableMeta {
	var out []*tableMeta
	for _, c := range e.catalogs {
		for _, s := range c.schemas {
			for _, t := range s.tables {
				out = append(out, t)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].fullName() < out[j].fullName() })
	return out
}

// hasDeltaLog reports whether a local location already holds a Delta log.
func hasDeltaLog(location string) bool {
	dir, ok := localPath(location)
	if !ok {
		return false
	}
	entries, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	return err == nil && len(entries) > 0
}

// Low-level DuckDB access.

func (e *DuckDB) duckExec(ctx context.Context, q string) (int64, error) {
	r, err := e.conn.ExecContext(ctx, q)
	if err != nil {
		return 0, duckErr{err: err, sql: q}
	}
	n, _ := r.RowsAffected()
	return n, nil
}

// duckQuery runs q and returns its rows with Spark types derived from DuckDB's.
func (e *DuckDB) duckQuery(ctx context.Context, q string) (*Result, error) {
	rows, err := e.conn.QueryContext(ctx, q)
	if err != nil {
		return nil, duckErr{err: err, sql: q}
	}
	defer rows.Close()
	cts, err := rows.ColumnTypes()
	if err != nil {
		return nil, duckErr{err: err, sql: q}
	}
	res := &Result{Columns: make([]Column, len(cts))}
	for i, ct := range cts {
		t, err := ParseDuckType(ct.DatabaseTypeName())
		if err != nil {
			return nil, err
		}
		// Aggregates over bigint return HUGEINT in DuckDB and bigint in Spark.
		if strings.HasPrefix(ct.DatabaseTypeName(), "HUGEINT") {
			t = Prim(KindLong)
		}
		name := ct.Name()
		if name == "count_star()" {
			name = "count(1)"
		}
		res.Columns[i] = Column{Name: name, Type: t}
	}
	for rows.Next() {
		vals := make([]any, len(cts))
		ptrs := make([]any, len(cts))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, duckErr{err: err, sql: q}
		}
		for i := range vals {
			vals[i] = normalize(vals[i], res.Columns[i].Type)
		}
		res.Rows = append(res.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, duckErr{err: err, sql: q}
	}
	return res, nil
}

// normalize converts a scanned DuckDB value into Result's value forms for Spark type t.
func normalize(v any, t *Type) any {
	v = normalizeDriverValue(v)
	if v == nil {
		return nil
	}
	switch t.Kind {
	case KindArray:
		elems, ok := v.([]any)
		if !ok {
			return v
		}
		out := make([]any, len(elems))
		for i, x := range elems {
			out[i] = normalize(x, t.Elem)
		}
		return out
	case KindMap:
		entries, ok := v.([]MapEntry)
		if !ok {
			return v
		}
		out := make([]MapEntry, len(entries))
		for i, x := range entries {
			out[i] = MapEntry{Key: normalize(x.Key, t.Key), Value: normalize(x.Value, t.Value)}
		}
		return out
	case KindStruct:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		out := make([]any, len(t.Fields))
		for i, f := range t.Fields {
			fv, ok := m[f.Name]
			if !ok {
				for k, x := range m {
					if strings.EqualFold(k, f.Name) {
						fv = x
						break
					}
				}
			}
			out[i] = normalize(fv, f.Type)
		}
		return out
	}
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		if t.Kind == KindDecimal || x > 1<<63-1 {
			return strconv.FormatUint(x, 10)
		}
		return int64(x)
	case *big.Int:
		if t.Kind == KindLong && x.IsInt64() {
			return x.Int64()
		}
		return x.String()
	case float32:
		return float64(x)
	case int64:
		if t.Kind == KindDecimal {
			return strconv.FormatInt(x, 10)
		}
	}
	return v
}

// duckErr is an error from DuckDB, translated by classify.
type duckErr struct {
	err error
	sql string
}

func (d duckErr) Error() string { return d.err.Error() }
func (d duckErr) Unwrap() error { return d.err }

var (
	reNotNull     = regexp.MustCompile(`NOT NULL constraint failed: ([^.\s]+)\.(\S+)`)
	reColumn      = regexp.MustCompile(`Referenced column "?([^"]+?)"? not found`)
	reColumn2     = regexp.MustCompile(`column "?([^"\s]+?)"? (?:does not exist|not found)`)
	reFunction    = regexp.MustCompile(`(?:Scalar|Table|Aggregate) Function with name "?([^"\s!]+)"? does not exist`)
	reConversion  = regexp.MustCompile(`Could not convert (?:string )?'([^']*)' to (\S+)`)
	rePhys        = regexp.MustCompile(`"?\bfw_t(\d+)\b"?`)
	reDuckPrefix  = regexp.MustCompile(`^(\w+) Error: `)
	reParserError = regexp.MustCompile(`syntax error at or near "([^"]*)"`)
)

// classify turns any error into an *SQLError with a Databricks error class.
func (e *DuckDB) classify(err error) error {
	var se *SQLError
	if errors.As(err, &se) {
		return se
	}
	var de duckErr
	if !errors.As(err, &de) {
		return errInternal(err)
	}
	msg := de.err.Error()
	// Show user table names, never the physical ones.
	msg = rePhys.ReplaceAllStringFunc(msg, func(m string) string {
		if t := e.byPhys(strings.Trim(m, `"`)); t != nil {
			return t.quoted()
		}
		return m
	})
	first := strings.SplitN(msg, "\n", 2)[0]
	switch {
	case reNotNull.MatchString(msg):
		col := reNotNull.FindStringSubmatch(msg)[2]
		return &SQLError{Class: "DELTA_NOT_NULL_CONSTRAINT_VIOLATED", SQLState: "23502",
			Message: fmt.Sprintf("NOT NULL constraint violated for column: %s.", col)}
	case reFunction.MatchString(msg):
		fn := reFunction.FindStringSubmatch(msg)[1]
		return &SQLError{Class: "UNRESOLVED_ROUTINE", SQLState: "42883",
			Message: fmt.Sprintf("Cannot resolve routine `%s` on search path [`system`.`builtin`, `system`.`session`].", fn)}
	case reColumn.MatchString(msg) || reColumn2.MatchString(msg):
		m := reColumn.FindStringSubmatch(msg)
		if m == nil {
			m = reColumn2.FindStringSubmatch(msg)
		}
		return &SQLError{Class: "UNRESOLVED_COLUMN.WITHOUT_SUGGESTION", SQLState: "42703",
			Message: fmt.Sprintf("A column, variable, or function parameter with name `%s` cannot be resolved.", m[1])}
	case reConversion.MatchString(msg):
		m := reConversion.FindStringSubmatch(msg)
		return &SQLError{Class: "CAST_INVALID_INPUT", SQLState: "22018",
			Message: fmt.Sprintf("The value '%s' of the type \"STRING\" cannot be cast to \"%s\" because it is malformed.", m[1], m[2])}
	case strings.HasPrefix(msg, "Parser Error"):
		near := ""
		if m := reParserError.FindStringSubmatch(msg); m != nil {
			near = m[1]
		}
		return &SQLError{Class: "PARSE_SYNTAX_ERROR", SQLState: "42601", Message: fmt.Sprintf("Syntax error at or near '%s'.", near)}
	case strings.HasPrefix(msg, "Out of Range Error"), strings.Contains(first, "out of range"):
		return &SQLError{Class: "NUMERIC_VALUE_OUT_OF_RANGE", SQLState: "22003", Message: reDuckPrefix.ReplaceAllString(first, "")}
	case strings.HasPrefix(msg, "Conversion Error"):
		return &SQLError{Class: "CAST_INVALID_INPUT", SQLState: "22018", Message: reDuckPrefix.ReplaceAllString(first, "")}
	case strings.HasPrefix(msg, "Binder Error"):
		return &SQLError{Class: "DATATYPE_MISMATCH", SQLState: "42K09", Message: reDuckPrefix.ReplaceAllString(first, "")}
	case strings.HasPrefix(msg, "Invalid Input Error"), strings.HasPrefix(msg, "IO Error"):
		return &SQLError{Class: "FAILED_READ_FILE", SQLState: "KD001", Message: reDuckPrefix.ReplaceAllString(first, "")}
	}
	return errInternal(errors.New(first))
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ensureLocalDir creates the directory of a file:// location so tools can write under it.
func ensureLocalDir(loc string) {
	if p, ok := localPath(loc); ok {
		_ = os.MkdirAll(p, 0o755)
	}
}
