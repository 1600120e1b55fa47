package databricks

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/databricks/databricks-sql-go/driverctx"
	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/sqlstmt"

	"github.com/databricks/databricks-sdk-go/config"
	dbsql "github.com/databricks/databricks-sql-go"
)

// Warehouse is a session pool on one Databricks SQL warehouse, authenticated with the
// Client's identity. It is safe for concurrent use.
type Warehouse struct {
	db       *sql.DB
	endpoint string // host and HTTP path, for messages
}

// Warehouse opens a session pool on the SQL warehouse named by Options.WarehouseID,
// Options.HTTPPath, DATABRICKS_WAREHOUSE_ID or DATABRICKS_HTTP_PATH (or Options.DSN), and checks
// it with a ping. The driver's telemetry is off, its logs go to the -v log (redacted), and
// requests carry the user agent entry zbrecover/<version>.
func (c *Client) Warehouse(ctx context.Context) (*Warehouse, error) {
	if c.opts.DSN != "" {
		return OpenDSN(ctx, c.opts.DSN, c.opts)
	}
	path, err := c.HTTPPath()
	if err != nil {
		if choices := c.WarehouseChoices(ctx, ""); choices != "" {
			return nil, fmt.Errorf("%w; %s", err, choices)
		}
		return nil, err
	}
	u, err := url.Parse(c.cfg.CanonicalHostName())
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("%w: workspace host %q is not a URL", ErrConfig, redact.String(c.cfg.Host))
	}
	scheme := u.Scheme
	if scheme == "" {
		scheme = "https"
	}
	port := 443
	if scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		if port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("%w: workspace host %q: bad port", ErrConfig, redact.String(c.cfg.Host))
		}
	}
	base := c.transport
	opts := []dbsql.ConnOption{
		dbsql.WithServerHostname(scheme + "://" + u.Hostname()),
		dbsql.WithPort(port),
		dbsql.WithHTTPPath(path),
		dbsql.WithAuthenticator(sdkAuthenticator{c.cfg}),
		dbsql.WithTransport(noTelemetry{base}),
		dbsql.WithUserAgentEntry(userAgentEntry(c.opts.Version)),
		// Results here are small (COPY INTO counts, DESCRIBE documents, previews): keep them
		// inline rather than fetched from cloud storage links.
		dbsql.WithCloudFetch(false),
	}
	if c.opts.QueryTimeout > 0 {
		opts = append(opts, dbsql.WithTimeout(c.opts.QueryTimeout))
	}
	conn, err := dbsql.NewConnector(opts...)
	if err != nil {
		return nil, fmt.Errorf("sql warehouse %s%s: %w", c.cfg.Host, path, Classify(err))
	}
	// The driver retries a failed connection for up to four attempts with growing waits:
	// an unreachable workspace ends the ping at the first attempt instead.
	pctx, failed := failFast(ctx)
	w, err := open(pctx, sql.OpenDB(conn), c.cfg.Host+path)
	if err == nil {
		return w, nil
	}
	if ue := failed(); ue != nil {
		return nil, fmt.Errorf("connect to sql warehouse %s%s: %w", redact.String(c.cfg.Host), path,
			&SQLError{Class: ClassConnection, Message: redact.String(ue.Error()), Hint: unreachableHint, Err: ue})
	}
	// A warehouse id the workspace does not know fails as a connection error, the endpoint
	// answering 404: say so instead, with the warehouses the identity can see.
	if id, idErr := c.WarehouseID(); idErr == nil && ctx.Err() == nil && answeredNotFound(err) {
		if _, infoErr := c.WarehouseInfo(ctx); errors.Is(infoErr, ErrNotFound) {
			msg := fmt.Sprintf("SQL warehouse %s does not exist in %s, or the identity may not see it (--warehouse-id, DATABRICKS_WAREHOUSE_ID, --http-path or the profile's warehouse_id names it)",
				id, redact.String(c.cfg.Host))
			if choices := c.WarehouseChoices(ctx, id); choices != "" {
				msg += "; " + choices
			}
			return nil, &notFoundError{msg: msg}
		}
	}
	return nil, err
}

// OpenDSN opens a warehouse from a complete databricks-sql-go DSN
// (token:<pat>@host:port/sql/1.0/warehouses/<id>, or http://… for a local endpoint).
// enableTelemetry=false and userAgentEntry=zbrecover/<version> are added unless present.
func OpenDSN(ctx context.Context, dsn string, opts Options) (*Warehouse, error) {
	installLogging(opts.Log)
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: invalid warehouse DSN: %v", ErrConfig, redact.Error(err))
	}
	if pw, ok := u.User.Password(); ok {
		redact.Register(pw)
	}
	q := u.Query()
	redact.Register(q.Get("accessToken"), q.Get("clientSecret"))
	if q.Get("enableTelemetry") == "" {
		q.Set("enableTelemetry", "false")
	}
	if q.Get("userAgentEntry") == "" {
		q.Set("userAgentEntry", userAgentEntry(opts.Version))
	}
	u.RawQuery = q.Encode()
	db, err := sql.Open("databricks", u.String())
	if err != nil {
		return nil, fmt.Errorf("sql warehouse: %w", Classify(err))
	}
	return open(ctx, db, u.Redacted())
}

func open(ctx context.Context, db *sql.DB, endpoint string) (*Warehouse, error) {
	// Warehouse sessions expire after hours of idleness; a pool never keeps one that long.
	db.SetConnMaxIdleTime(30 * time.Minute)
	db.SetMaxIdleConns(4)
	w := &Warehouse{db: db, endpoint: redact.String(endpoint)}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		se := Classify(err)
		return nil, fmt.Errorf("connect to sql warehouse %s: %w", w.endpoint, se)
	}
	logger().Debug("sql warehouse session opened", "endpoint", w.endpoint)
	return w, nil
}

func userAgentEntry(version string) string { return "zbrecover/" + userAgentVersion(version) }

// Close ends every session.
func (w *Warehouse) Close() error { return w.db.Close() }

// Exec runs a statement that returns no result set (DDL) and returns the driver's count of
// modified rows. Statements that return a result (COPY INTO, MERGE, DESCRIBE) must go through
// Query or QueryAll: Exec discards their result columns. Errors are *SQLError.
func (w *Warehouse) Exec(ctx context.Context, stmt string, args ...any) (int64, error) {
	res, err := w.db.ExecContext(ctx, stmt, args...)
	if err != nil {
		return 0, w.fail(stmt, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, nil
	}
	return n, nil
}

// Query runs a statement that returns a result set. The caller closes the rows; errors
// from rows.Err can be passed to Classify. Errors are *SQLError.
func (w *Warehouse) Query(ctx context.Context, stmt string, args ...any) (*sql.Rows, error) {
	rows, err := w.db.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, w.fail(stmt, err)
	}
	return rows, nil
}

// Result is a fully read result set.
type Result struct {
	Columns []string
	// Rows hold the driver's values: int64, float64, bool, string, time.Time, []byte or nil.
	// DECIMAL and complex types arrive as strings.
	Rows [][]any
	// QueryID identifies the statement in the warehouse's query history, when the driver
	// reported it.
	QueryID string
}

// QueryAll runs a statement and reads its whole result set; for small results (COPY INTO's
// counters, DESCRIBE documents, history rows). Errors are *SQLError; an error while the
// result is read (after the statement ran) has Fetched set.
func (w *Warehouse) QueryAll(ctx context.Context, stmt string, args ...any) (*Result, error) {
	return w.queryAll(ctx, w.db, stmt, args...)
}

// queryer is a *sql.DB or a *sql.Conn.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Session is one warehouse session held for a sequence of statements that must share it:
// a SET and the statement it applies to. Unlike the pool, a session never runs a
// statement again on another connection when its connection breaks: the error comes back
// (database/sql retries on a bad connection only through the pool).
type Session struct {
	w *Warehouse
	c *sql.Conn
}

// Session takes one session out of the pool until Close.
func (w *Warehouse) Session(ctx context.Context) (*Session, error) {
	c, err := w.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("open a session on sql warehouse %s: %w", w.endpoint, Classify(err))
	}
	return &Session{w: w, c: c}, nil
}

// QueryAll runs a statement on the session, as Warehouse.QueryAll.
func (s *Session) QueryAll(ctx context.Context, stmt string, args ...any) (*Result, error) {
	return s.w.queryAll(ctx, s.c, stmt, args...)
}

// Close returns the session to the pool (or discards it when broken).
func (s *Session) Close() error { return s.c.Close() }

func (w *Warehouse) queryAll(ctx context.Context, q queryer, stmt string, args ...any) (*Result, error) {
	var (
		mu      sync.Mutex
		queryID string
	)
	ctx = driverctx.NewContextWithQueryIdCallback(ctx, func(id string) {
		mu.Lock()
		queryID = id
		mu.Unlock()
	})
	rows, err := q.QueryContext(ctx, stmt, args...)
	if err != nil {
		return nil, w.fail(stmt, err)
	}
	defer rows.Close()
	fetchFail := func(err error) error {
		se := w.fail(stmt, err)
		se.Fetched = true
		return se
	}
	cols, err := rows.Columns()
	if err != nil {
		return nil, fetchFail(err)
	}
	mu.Lock()
	res := &Result{Columns: cols, QueryID: queryID}
	mu.Unlock()
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fetchFail(err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = bytes.Clone(b)
			}
		}
		res.Rows = append(res.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, fetchFail(err)
	}
	return res, nil
}

func (w *Warehouse) fail(stmt string, err error) *SQLError {
	se := Classify(err)
	cp := *se
	cp.Statement = redact.String(stmt)
	logger().Debug("sql statement failed", "endpoint", w.endpoint, "class", cp.Class.String(),
		"sqlstate", cp.SQLState, "error_class", cp.ErrorClass, "query_id", cp.QueryID, "statement", truncate(cp.Statement, 300))
	return &cp
}

// sdkAuthenticator signs the driver's requests with the SDK's unified authentication, so
// that SQL runs as the same identity as the REST calls (PAT, OAuth, Azure service principal…).
type sdkAuthenticator struct{ cfg *config.Config }

func (a sdkAuthenticator) Authenticate(r *http.Request) error {
	if err := a.cfg.Authenticate(r); err != nil {
		return redact.Error(err)
	}
	return nil
}

// noTelemetry answers the driver's telemetry side channel in-process: the feature-flag query
// gets an empty flag list (telemetry stays off) and nothing is ever posted to /telemetry-ext.
// databricks-sql-go v1.15.1 has no connector option to turn telemetry off, only the DSN key.
type noTelemetry struct{ base http.RoundTripper }

const (
	featureFlagPath   = "/api/2.0/connector-service/feature-flags/"
	telemetryPushPath = "/telemetry-ext"
)

func (t noTelemetry) RoundTrip(r *http.Request) (*http.Response, error) {
	switch {
	case strings.HasPrefix(r.URL.Path, featureFlagPath):
		return localResponse(r, `{"flags":[],"ttl_seconds":86400}`), nil
	case r.URL.Path == telemetryPushPath:
		return localResponse(r, `{}`), nil
	}
	return t.base.RoundTrip(r)
}

func localResponse(r *http.Request, body string) *http.Response {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       r,
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// notFoundError is a resource the workspace does not know, said in a sentence of its own; it
// wraps ErrNotFound.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string        { return e.msg }
func (e *notFoundError) Is(target error) bool { return target == ErrNotFound }

// Querier runs a statement and reads its whole result: a Warehouse, or one of its Sessions.
type Querier interface {
	QueryAll(ctx context.Context, stmt string, args ...any) (*Result, error)
}

// ProbeTagging reports whether the warehouse takes a commit tag on a session: it sets (and
// clears) the tag on s, and returns the refusal when it does not. Doctor, reload and undo use it.
func ProbeTagging(ctx context.Context, s Querier, run string) error {
	if _, err := s.QueryAll(ctx, sqlstmt.SetTag("zbrecover:"+run+":probe")); err != nil {
		return err
	}
	_, err := s.QueryAll(ctx, sqlstmt.SetTag(""))
	return err
}

// answeredNotFound reports whether the driver's error is the endpoint's HTTP 404, by the
// words the driver and Thrift put around the status: a bare "404" would also match a port
// or an address that contains it.
func answeredNotFound(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "404 Not Found") || strings.Contains(msg, "HTTP Response code: 404")
}
