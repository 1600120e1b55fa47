package warehouse

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault describes a failure the server injects into matching requests. Exactly one action
// (Error, HTTPStatus, DropRequest, DropResponse, Delay, CommitThenError, CommitThenBadConn)
// is set; see Validate.
type Fault struct {
	// Method is the Thrift method the fault applies to (see ThriftMethods). Empty means
	// ExecuteStatement.
	Method string
	// Match is a regular expression (case-insensitive) the statement text must match; it
	// applies to ExecuteStatement only. Empty matches every statement.
	Match string
	// Skip lets this many matching requests through before the fault fires: Skip = 2 fails
	// the third matching statement.
	Skip int
	// Times is how many times the fault fires: 0 means once, a negative number means always.
	Times int
	// Percent, between 0 and 100, makes the fault fire on that share of the matching
	// requests after Skip, chosen by a pseudo-random sequence seeded with Seed: the same
	// Seed and the same sequence of requests fire on the same matches. 0 fires on every one.
	Percent float64
	Seed    uint64

	// Error fails the statement with this error (operation state ERROR_STATE, the Thrift
	// sqlState set); the statement does not run.
	Error *SQLError
	// HTTPStatus answers the request with this status (429, 503, …) instead of running it;
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	HTTPStatus int
	RetryAfter string
	// DropRequest closes the connection without a reply before the request is processed:
	// the statement never reaches the warehouse and nothing runs.
	DropRequest bool
	// DropResponse processes the request (a statement runs to completion, and a COPY INTO
	// commits) and then closes the connection without replying: the lost acknowledgement a
	// client sees as a transport error.
	DropResponse bool
	// Delay answers the statement PENDING and keeps it queued for this long before it runs
	// (RUNNING, then FINISHED), so the driver polls GetOperationStatus; CancelOperation
	// during the delay cancels it without running it. On other methods it delays the answer.
	Delay time.Duration
	// CommitThenError runs the statement to completion (it commits) and, when it succeeds,
	// answers with this error instead of its result. "{version}" and "{table}" in the
	// message stand for the last version the statement committed and its table ("?" when it
	// committed nothing); see PostCommitHookFailed.
	CommitThenError *SQLError
	// CommitThenBadConn runs the statement to completion and answers HTTP 400 "Invalid
	// SessionHandle", expiring the session: the driver returns driver.ErrBadConn and
	// database/sql runs the statement again on a new session.
	CommitThenBadConn bool
}

// ThriftMethods are the TCLIService methods a Fault can name.
var ThriftMethods = []string{"OpenSession", "CloseSession", "ExecuteStatement", "GetOperationStatus",
	"GetResultSetMetadata", "FetchResults", "CloseOperation", "CancelOperation"}

// PostCommitHookFailed is the error Delta raises when a commit succeeded and a post-commit
// hook failed (CODE: delta-io/delta DeltaErrors.postCommitHookFailedException), for
// Fault.CommitThenError.
func PostCommitHookFailed() *SQLError {
	return &SQLError{Class: "DELTA_POST_COMMIT_HOOK_FAILED", SQLState: "2DKD0", Message: "Committing to the Delta table version {version} " +
		"succeeded but error while executing post-commit hook Post commit checkpoint trigger: java.io.IOException: Connection reset by peer"}
}

// Validate reports whether the fault is well formed: a known method, a valid Match, Percent
// within 0–100, exactly one action, and on a method other than ExecuteStatement only
// HTTPStatus, DropRequest, DropResponse or Delay.
func (f Fault) Validate() error {
	method := f.Method
	if method == "" {
		method = "ExecuteStatement"
	}
	if !slices.Contains(ThriftMethods, method) {
		return fmt.Errorf("fakewarehouse: unknown Thrift method %q (one of %s)", f.Method, strings.Join(ThriftMethods, ", "))
	}
	if f.Match != "" {
		if _, err := regexp.Compile("(?is)" + f.Match); err != nil {
			return fmt.Errorf("fakewarehouse: fault match: %w", err)
		}
	}
	if f.Percent < 0 || f.Percent > 100 {
		return fmt.Errorf("fakewarehouse: fault percent %v is not within 0–100", f.Percent)
	}
	actions := 0
	for _, set := range []bool{f.Error != nil, f.HTTPStatus != 0, f.DropRequest, f.DropResponse, f.Delay > 0, f.CommitThenError != nil, f.CommitThenBadConn} {
		if set {
			actions++
		}
	}
	if actions != 1 {
		return errors.New("fakewarehouse: a Fault needs exactly one of Error, HTTPStatus, DropRequest, DropResponse, Delay, CommitThenError and CommitThenBadConn")
	}
	if f.HTTPStatus != 0 && (f.HTTPStatus < 400 || f.HTTPStatus > 599) {
		return fmt.Errorf("fakewarehouse: fault HTTP status %d is not an error status", f.HTTPStatus)
	}
	if method != "ExecuteStatement" && f.HTTPStatus == 0 && !f.DropRequest && !f.DropResponse && f.Delay == 0 {
		return errors.New("fakewarehouse: a Fault on " + method + " can only be HTTPStatus, DropRequest, DropResponse or Delay")
	}
	return nil
}

// InjectedFault is a fault registered with Inject.
type InjectedFault struct {
	f  Fault
	re *regexp.Regexp

	mu    sync.Mutex
	seen  int
	fired int
}

// Fault returns the fault as registered (Method and Times filled in).
func (f *InjectedFault) Fault() Fault { return f.f }

// Fired returns how many times the fault has fired.
func (f *InjectedFault) Fired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// Seen returns how many requests matched the fault, fired or not.
func (f *InjectedFault) Seen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen
}

// Action names the fault's action: error, http, drop_request, drop_response, delay,
// commit_then_error or commit_then_bad_conn.
func (f Fault) Action() string {
	switch {
	case f.Error != nil:
		return "error"
	case f.HTTPStatus != 0:
		return "http"
	case f.DropRequest:
		return "drop_request"
	case f.DropResponse:
		return "drop_response"
	case f.Delay > 0:
		return "delay"
	case f.CommitThenError != nil:
		return "commit_then_error"
	case f.CommitThenBadConn:
		return "commit_then_bad_conn"
	}
	return "none"
}

func (f *InjectedFault) describe() string {
	switch a := f.f.Action(); a {
	case "error":
		return "error " + f.f.Error.Class
	case "http":
		return "http " + strconv.Itoa(f.f.HTTPStatus)
	case "delay":
		return "delay " + f.f.Delay.String()
	case "commit_then_error":
		return "commit then error " + f.f.CommitThenError.Class
	default:
		return strings.ReplaceAll(a, "_", " ")
	}
}

// Inject registers a fault; faults are checked in the order they were added. It panics if
// the fault is not valid (see Fault.Validate); AddFault returns the error instead.
func (s *Server) Inject(f Fault) *InjectedFault {
	inj, err := s.AddFault(f)
	if err != nil {
		panic(err.Error())
	}
	return inj
}

// AddFault registers a fault as Inject does, or returns why it is not valid.
func (s *Server) AddFault(f Fault) (*InjectedFault, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	inj := &InjectedFault{f: f}
	if f.Method == "" {
		inj.f.Method = "ExecuteStatement"
	}
	if f.Match != "" {
		inj.re = regexp.MustCompile("(?is)" + f.Match)
	}
	if f.Times == 0 {
		inj.f.Times = 1
	}
	s.mu.Lock()
	s.faults = append(s.faults, inj)
	s.mu.Unlock()
	return inj, nil
}

// Faults returns the registered faults, in the order they are checked.
func (s *Server) Faults() []*InjectedFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*InjectedFault(nil), s.faults...)
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// matchFault returns the fault that fires for this request, if any, and counts it.
func (s *Server) matchFault(method, stmt string) *Fault {
	s.mu.Lock()
	faults := append([]*InjectedFault(nil), s.faults...)
	s.mu.Unlock()
	for _, inj := range faults {
		if inj.f.Method != method {
			continue
		}
		if inj.re != nil && !inj.re.MatchString(stmt) {
			continue
		}
		inj.mu.Lock()
		inj.seen++
		fire := inj.seen > inj.f.Skip && (inj.f.Times < 0 || inj.fired < inj.f.Times) &&
			Share(inj.f.Seed, uint64(inj.seen-inj.f.Skip-1), inj.f.Percent)
		if fire {
			inj.fired++
		}
		inj.mu.Unlock()
		if fire {
			s.logf("fakewarehouse: fault %s on %s", inj.describe(), method)
			f := inj.f
			return &f
		}
	}
	return nil
}

// Share decides whether the n-th eligible match (from 0) of a fault firing on percent of its
// matches fires: a pseudo-random choice from seed and n (splitmix64), the same on every run.
// A percent of 0 or 100 fires on every match.
func Share(seed, n uint64, percent float64) bool {
	if percent <= 0 || percent >= 100 {
		return true
	}
	z := seed + (n+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z%1_000_000) < percent*10_000
}

// SetStopped makes the warehouse behave as a stopped warehouse that cannot start: sessions
// still open, and every statement is refused with msg as an ERROR_STATUS of ExecuteStatement
// (no SQLSTATE, no operation). An empty msg serves statements again.
//
// Databricks documents that a connection or a query starts a stopped warehouse when the
// identity may use it; one that does not come up (no capacity, a failing start) was seen to
// accept OpenSession and then refuse each operation with an ERROR_STATUS inside HTTP 200, or to
// answer HTTP 503 until the driver's retries give up. The local warehouse gives the first
// form; the text of the refusal is not known, so clients must not match on it.
func (s *Server) SetStopped(msg string) {
	s.mu.Lock()
	s.stopped = msg
	s.mu.Unlock()
}

func (s *Server) stoppedMessage() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}
