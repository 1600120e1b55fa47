package warehouse

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/thrift/lib/go/thrift"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse/tcli"
	"github.com/zbrecover/zbrecover/storage"
)

// Options configure a fake warehouse.
type Options struct {
	// Token is the bearer token the server accepts. Default "fake-token".
	Token string
	// WarehouseID names the warehouse in the HTTP path /sql/1.0/warehouses/<id>. Default "fake".
	WarehouseID string
	// Dir is the working directory (managed table locations, staged remote files). Empty means
	// a new temporary directory that Close removes.
	Dir string
	// StorageRoot is the URL under which managed tables get their locations; see EngineOptions.
	StorageRoot string
	// Storage opens s3://, gs:// and abfss:// sources for COPY INTO and path reads.
	Storage StorageOpener
	// Unknowns are the initial answers to behaviours of Databricks that are not known; change
	// them at run time with SetUnknowns. The zero value is the documented default of each.
	Unknowns Unknowns
	// UserName is the user statements run as (DESCRIBE HISTORY userName). Default
	// "fake-user@example.com".
	UserName string
	// Listener, when set, is the listener the server serves on instead of a new one on
	// 127.0.0.1:0; Close closes it.
	Listener net.Listener
	// Handler, when set, answers the requests that are not the warehouse's (any path other
	// than the warehouse HTTP path, the driver's feature flags and telemetry), before the
	// warehouse's token check: the rest of a workspace served on the same port.
	Handler http.Handler
	// Logf, when set, receives one line per statement and per injected fault.
	Logf func(format string, args ...any)
	// OnStatement, when set, is called with every statement's log entry once it has ended
	// (FINISHED, ERROR, CANCELED or REJECTED).
	OnStatement func(Statement)
}

// Server is a fake Databricks SQL warehouse: an HTTP server on 127.0.0.1 speaking the
// TCLIService Thrift protocol (binary, over HTTP POST) as the databricks-sql-go driver expects,
// backed by an Engine.
type Server struct {
	opts     Options
	engine   Engine
	duck     *DuckDB
	ln       net.Listener
	http     *http.Server
	proc     thrift.TProcessor
	ownedDir string

	mu        sync.Mutex
	sessions  map[string]*session
	ops       map[string]*operation
	stmts     []Statement
	requests  []Request
	faults    []*InjectedFault
	triggers  []*InstalledTrigger
	stopped   string // the refusal every statement gets while the warehouse is stopped
	closed    bool
	closeOnce sync.Once
}

// Statement is one entry of the statement log.
type Statement struct {
	QueryID    string // the operation's GUID, as the driver reports it
	SessionID  string
	SQL        string
	Start, End time.Time
	// State is FINISHED, ERROR, CANCELED, RUNNING, REJECTED (answered with an HTTP error), or
	// DROPPED (the connection was closed before the statement ran).
	State    string
	Error    string // the error text for ERROR
	Class    string // the error class for ERROR
	SQLState string
	Rows     int64  // rows returned, or modified for DML (num_affected_rows)
	Fault    string // the injected fault that applied, if any
	// Commits are the table versions the statement committed (FINISHED statements, and
	// statements answered with an error after they committed).
	Commits []CommitRef
}

// Request is one HTTP request the server received.
type Request struct {
	Time   time.Time
	Method string // the Thrift method (ExecuteStatement, …) or "GET <path>" for other requests
	Status int    // HTTP status answered; 0 when the connection was dropped
}

// TB is the part of testing.TB that New uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
	TempDir() string
}

// New starts a server for a test and closes it when the test ends.
func New(t TB, opts ...Options) *Server {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	s, err := Start(o)
	if err != nil {
		t.Fatalf("fakewarehouse: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Start starts a server on a random port of 127.0.0.1.
func Start(opts Options) (*Server, error) {
	if opts.Token == "" {
		opts.Token = "fake-token"
	}
	if opts.WarehouseID == "" {
		opts.WarehouseID = "fake"
	}
	s := &Server{opts: opts, sessions: map[string]*session{}, ops: map[string]*operation{}}
	if opts.Dir == "" {
		d, err := os.MkdirTemp("", "fakewarehouse-")
		if err != nil {
			return nil, err
		}
		s.opts.Dir, s.ownedDir = d, d
	}
	duck, err := NewDuckDB(EngineOptions{Dir: s.opts.Dir, StorageRoot: opts.StorageRoot, Storage: opts.Storage,
		Unknowns: opts.Unknowns, UserName: opts.UserName})
	if err != nil {
		s.cleanupDir()
		return nil, err
	}
	s.duck, s.engine = duck, duck
	s.proc = tcli.NewTCLIServiceProcessor(&service{s: s})
	ln := opts.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			duck.Close()
			s.cleanupDir()
			return nil, err
		}
	}
	s.ln = ln
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(ln) }()
	return s, nil
}

func (s *Server) cleanupDir() {
	if s.ownedDir != "" {
		_ = os.RemoveAll(s.ownedDir)
	}
}

// Close stops the server, cancels running statements and releases the engine.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		for _, op := range s.ops {
			op.cancelRun()
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = s.http.Shutdown(ctx)
		s.mu.Lock()
		ops := make([]*operation, 0, len(s.ops))
		for _, op := range s.ops {
			ops = append(ops, op)
		}
		s.mu.Unlock()
		for _, op := range ops {
			op.wait()
		}
		if e2 := s.engine.Close(); err == nil {
			err = e2
		}
		s.cleanupDir()
	})
	return err
}

// Host returns the listening address without port ("127.0.0.1").
func (s *Server) Host() string { return "127.0.0.1" }

// Port returns the listening port.
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// HTTPPath returns the warehouse's HTTP path (/sql/1.0/warehouses/<id>).
func (s *Server) HTTPPath() string { return "/sql/1.0/warehouses/" + s.opts.WarehouseID }

// Token returns the accepted bearer token.
func (s *Server) Token() string { return s.opts.Token }

// URL returns the server's base URL (http://127.0.0.1:<port>).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Dir returns the server's working directory.
func (s *Server) Dir() string { return s.opts.Dir }

// DSN returns a databricks-sql-go DSN for the server over plain HTTP, with telemetry off.
func (s *Server) DSN() string {
	u := url.URL{
		Scheme:   "http",
		User:     url.UserPassword("token", s.opts.Token),
		Host:     s.ln.Addr().String(),
		Path:     s.HTTPPath(),
		RawQuery: "enableTelemetry=false",
	}
	return u.String()
}

// Engine returns the DuckDB engine, to seed or inspect tables directly.
func (s *Server) Engine() *DuckDB { return s.duck }

// Statements returns a copy of the statement log.
func (s *Server) Statements() []Statement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Statement(nil), s.stmts...)
}

// Requests returns a copy of the request log.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// CountRequests returns how many requests of a Thrift method (or "GET <path>") were received.
func (s *Server) CountRequests(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.requests {
		if r.Method == method {
			n++
		}
	}
	return n
}

// OpenSessions returns the number of open, unexpired sessions.
func (s *Server) OpenSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ss := range s.sessions {
		if !ss.expired {
			n++
		}
	}
	return n
}

// ExpireSessions makes every open session invalid, as a warehouse does after its idle
// timeout: requests on them get HTTP 400 with "Invalid SessionHandle", which the driver
// turns into driver.ErrBadConn. It returns the number of sessions expired.
func (s *Server) ExpireSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ss := range s.sessions {
		if !ss.expired {
			ss.expired = true
			n++
		}
	}
	return n
}

// reCredentialOption matches the inline credentials COPY INTO accepts.
var reCredentialOption = regexp.MustCompile(`(?i)\b(AWS_ACCESS_KEY|AWS_SECRET_KEY|AWS_SESSION_TOKEN|AZURE_SAS_TOKEN|MASTER_KEY)(\s*=\s*)'[^']*'`)

// logf writes a log line with secrets (inline credentials, tokens in URLs) redacted.
func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		line := fmt.Sprintf(format, args...)
		line = reCredentialOption.ReplaceAllString(line, "${1}${2}'"+storage.Redacted+"'")
		s.opts.Logf("%s", storage.Redact(line))
	}
}

// reqState carries per-request decisions from the Thrift handlers back to ServeHTTP.
type reqState struct {
	method     string
	status     int // non-zero: answer with this HTTP status instead of the Thrift reply
	retryAfter string
	reason     string // X-Thriftserver-Error-Message
	drop       bool   // close the connection without answering
}

type reqStateKey struct{}

func stateFrom(ctx context.Context) *reqState {
	if st, ok := ctx.Value(reqStateKey{}).(*reqState); ok {
		return st
	}
	return &reqState{}
}

const featureFlagsPrefix = "/api/2.0/connector-service/feature-flags/"

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.Method + " " + r.URL.Path
	if s.opts.Handler != nil && r.URL.Path != s.HTTPPath() && r.URL.Path != "/telemetry-ext" &&
		!strings.HasPrefix(r.URL.Path, featureFlagsPrefix) {
		s.opts.Handler.ServeHTTP(w, r)
		return
	}
	// Requests are logged before the reply is written, so a client that has its answer
	// finds its request in the log.
	if r.Header.Get("Authorization") != "Bearer "+s.opts.Token {
		s.logRequest(method, http.StatusUnauthorized)
		w.Header().Set("X-Databricks-Reason-Phrase", "Invalid access token.")
		http.Error(w, "Invalid access token.", http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, featureFlagsPrefix):
		s.logRequest(method, http.StatusOK)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"flags":[],"ttl_seconds":900}`)
		return
	case r.Method == http.MethodPost && r.URL.Path == "/telemetry-ext":
		s.logRequest(method, http.StatusOK)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"errors":[],"numSuccess":0}`)
		return
	case r.URL.Path != s.HTTPPath():
		s.logRequest(method, http.StatusNotFound)
		http.NotFound(w, r)
		return
	case r.Method != http.MethodPost:
		s.logRequest(method, http.StatusMethodNotAllowed)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "read error", http.StatusBadRequest)
		return
	}
	st := &reqState{method: thriftMethod(body)}
	// Faults on methods other than ExecuteStatement apply to the request as a whole: an HTTP
	// status or a dropped request instead of processing it, a delay before it, a dropped
	// response after it.
	if st.method != "ExecuteStatement" {
		if f := s.matchFault(st.method, ""); f != nil {
			switch {
			case f.HTTPStatus != 0:
				s.logRequest(st.method, f.HTTPStatus)
				if f.RetryAfter != "" {
					w.Header().Set("Retry-After", f.RetryAfter)
				}
				http.Error(w, http.StatusText(f.HTTPStatus), f.HTTPStatus)
				return
			case f.DropRequest:
				s.logRequest(st.method, 0)
				dropConnection(w)
				return
			case f.DropResponse:
				st.drop = true
			case f.Delay > 0:
				select {
				case <-time.After(f.Delay):
				case <-r.Context().Done():
				}
			}
		}
	}
	var out bytes.Buffer
	trans := thrift.NewStreamTransport(bytes.NewReader(body), &out)
	pf := thrift.NewTBinaryProtocolFactoryConf(nil)
	ctx := context.WithValue(r.Context(), reqStateKey{}, st)
	_, _ = s.proc.Process(ctx, pf.GetProtocol(trans), pf.GetProtocol(trans))
	switch {
	case st.drop:
		s.logRequest(st.method, 0)
		dropConnection(w)
		return
	case st.status != 0:
		s.logRequest(st.method, st.status)
		if st.retryAfter != "" {
			w.Header().Set("Retry-After", st.retryAfter)
		}
		if st.reason != "" {
			w.Header().Set("X-Thriftserver-Error-Message", st.reason)
		}
		http.Error(w, http.StatusText(st.status), st.status)
		return
	}
	s.logRequest(st.method, http.StatusOK)
	w.Header().Set("Content-Type", "application/x-thrift")
	w.Header().Set("Content-Length", strconv.Itoa(out.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out.Bytes())
}

// dropConnection closes the client's connection without an HTTP reply.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
		}
	}
}

func (s *Server) logRequest(method string, status int) {
	s.mu.Lock()
	s.requests = append(s.requests, Request{Time: time.Now(), Method: method, Status: status})
	s.mu.Unlock()
}

// thriftMethod reads the method name of a strict TBinaryProtocol message.
func thriftMethod(b []byte) string {
	if len(b) < 8 || b[0] != 0x80 || b[1] != 0x01 {
		return "unknown"
	}
	n := int(binary.BigEndian.Uint32(b[4:8]))
	if n <= 0 || 8+n > len(b) {
		return "unknown"
	}
	return string(b[8 : 8+n])
}
