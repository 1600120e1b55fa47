package fakewarehouse

import (
	"regexp"
	"strconv"
	"sync"
	"time"
)

// Fault describes a failure the server injects into matching requests. Exactly one of Error,
// HTTPStatus, DropResponse and Delay should be set.
type Fault struct {
	// Method is the Thrift method the fault applies to ("OpenSession", "FetchResults", …).
	// Empty means ExecuteStatement.
	Method string
	// Match is a regular expression (case-insensitive) the statement text must match; it
	// applies to ExecuteStatement only. Empty matches every statement.
	Match string
	// Skip lets this many matching requests through before the fault fires: Skip = 2 fails
	// the third matching statement.
	Skip int
	// Times is how many times the fault fires: 0 means once, a negative number means always.
	Times int

	// Error fails the statement with this error (operation state ERROR_STATE, the Thrift
	// sqlState set); the statement does not run.
	Error *SQLError
	// HTTPStatus answers the request with this status (429, 503, …) instead of running it;
	// RetryAfter, when set, is sent as the Retry-After header (seconds).
	HTTPStatus int
	RetryAfter string
	// DropResponse runs the statement to completion (a COPY INTO commits) and then closes the
	// connection without replying: the lost acknowledgement a client sees as a transport error.
	DropResponse bool
	// Delay keeps the statement RUNNING for this long before it runs, so the driver polls
	// GetOperationStatus; CancelOperation during the delay cancels it without running it.
	Delay time.Duration
}

// InjectedFault is a fault registered with Inject.
type InjectedFault struct {
	f  Fault
	re *regexp.Regexp

	mu    sync.Mutex
	seen  int
	fired int
}

// Fired returns how many times the fault has fired.
func (f *InjectedFault) Fired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

func (f *InjectedFault) describe() string {
	switch {
	case f.f.Error != nil:
		return "error " + f.f.Error.Class
	case f.f.HTTPStatus != 0:
		return "http " + strconv.Itoa(f.f.HTTPStatus)
	case f.f.DropResponse:
		return "drop response"
	case f.f.Delay > 0:
		return "delay " + f.f.Delay.String()
	}
	return "none"
}

// Inject registers a fault; faults are checked in the order they were added. It panics if
// Match is not a valid regular expression, if the fault does not set exactly one action, or
// if a fault on a method other than ExecuteStatement is not HTTPStatus or DropResponse.
func (s *Server) Inject(f Fault) *InjectedFault {
	inj := &InjectedFault{f: f}
	if f.Method == "" {
		inj.f.Method = "ExecuteStatement"
	}
	actions := 0
	for _, set := range []bool{f.Error != nil, f.HTTPStatus != 0, f.DropResponse, f.Delay > 0} {
		if set {
			actions++
		}
	}
	if actions != 1 {
		panic("fakewarehouse: a Fault needs exactly one of Error, HTTPStatus, DropResponse and Delay")
	}
	if inj.f.Method != "ExecuteStatement" && f.HTTPStatus == 0 && !f.DropResponse {
		panic("fakewarehouse: a Fault on " + inj.f.Method + " can only be HTTPStatus or DropResponse")
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
	return inj
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
		fire := inj.seen > inj.f.Skip && (inj.f.Times < 0 || inj.fired < inj.f.Times)
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
