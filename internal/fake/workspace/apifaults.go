package workspace

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// APIFault is a failure the workspace injects into requests of its REST APIs (the Files API
// under /api/2.0/fs/, Unity Catalog, the SQL warehouses API, …; never the SQL warehouse's
// Thrift endpoint, whose faults are warehouse.Fault, nor the control endpoints under
// /api/2.0/fake/). Exactly one action (HTTPStatus, Delay, DropRequest, DropResponse) is set.
type APIFault struct {
	// Method is the HTTP method (GET, PUT, HEAD, DELETE, …); empty matches every method.
	Method string
	// Path is a regular expression the URL path must match; empty matches every path.
	Path string
	// Skip, Times, Percent and Seed count and pick matches as warehouse.Fault's do: the
	// fault fires after Skip matches, Times times (0 once, negative always), on Percent of
	// the matches chosen reproducibly from Seed (0 every match).
	Skip, Times int
	Percent     float64
	Seed        uint64

	// HTTPStatus answers with this status instead of serving the request (429 as
	// REQUEST_LIMIT_EXCEEDED, 503 as TEMPORARILY_UNAVAILABLE, other codes with their status
	// text); RetryAfter, when set, is sent as the Retry-After header (seconds).
	HTTPStatus int
	RetryAfter string
	// Delay serves the request after this long.
	Delay time.Duration
	// DropRequest closes the connection without a reply before the request is served: a PUT
	// writes nothing.
	DropRequest bool
	// DropResponse serves the request (a PUT writes its file, a DELETE deletes) and closes
	// the connection without a reply.
	DropResponse bool
}

// Validate reports whether the fault is well formed.
func (f APIFault) Validate() error {
	if f.Path != "" {
		if _, err := regexp.Compile(f.Path); err != nil {
			return fmt.Errorf("workspace: API fault path: %w", err)
		}
	}
	if f.Percent < 0 || f.Percent > 100 {
		return fmt.Errorf("workspace: API fault percent %v is not within 0–100", f.Percent)
	}
	n := 0
	for _, set := range []bool{f.HTTPStatus != 0, f.Delay > 0, f.DropRequest, f.DropResponse} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("workspace: an API fault needs exactly one of HTTPStatus, Delay, DropRequest and DropResponse")
	}
	if f.HTTPStatus != 0 && (f.HTTPStatus < 400 || f.HTTPStatus > 599) {
		return fmt.Errorf("workspace: API fault HTTP status %d is not an error status", f.HTTPStatus)
	}
	return nil
}

// Action names the fault's action: http, delay, drop_request or drop_response.
func (f APIFault) Action() string {
	switch {
	case f.HTTPStatus != 0:
		return "http"
	case f.Delay > 0:
		return "delay"
	case f.DropRequest:
		return "drop_request"
	case f.DropResponse:
		return "drop_response"
	}
	return "none"
}

// InjectedAPIFault is an API fault registered with InjectAPI.
type InjectedAPIFault struct {
	f  APIFault
	re *regexp.Regexp

	mu          sync.Mutex
	seen, fired int
}

// Fault returns the fault as registered (Times filled in).
func (f *InjectedAPIFault) Fault() APIFault { return f.f }

// Fired returns how many times the fault has fired.
func (f *InjectedAPIFault) Fired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fired
}

// Seen returns how many requests matched the fault, fired or not.
func (f *InjectedAPIFault) Seen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen
}

// Latency is the time the workspace adds to every request of an API before serving it.
type Latency struct {
	Files        time.Duration // the Files API (/api/2.0/fs/…)
	UnityCatalog time.Duration // Unity Catalog (/api/2.0/unity-catalog/…, /api/2.1/unity-catalog/…)
}

// InjectAPI registers an API fault; faults are checked in the order they were added.
func (w *Workspace) InjectAPI(f APIFault) (*InjectedAPIFault, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	inj := &InjectedAPIFault{f: f}
	if f.Path != "" {
		inj.re = regexp.MustCompile(f.Path)
	}
	if f.Times == 0 {
		inj.f.Times = 1
	}
	w.mu.Lock()
	w.apiFaults = append(w.apiFaults, inj)
	w.mu.Unlock()
	return inj, nil
}

// APIFaults returns the registered API faults, in the order they are checked.
func (w *Workspace) APIFaults() []*InjectedAPIFault {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*InjectedAPIFault(nil), w.apiFaults...)
}

// ClearAPIFaults removes every API fault.
func (w *Workspace) ClearAPIFaults() {
	w.mu.Lock()
	w.apiFaults = nil
	w.mu.Unlock()
}

// SetLatency sets the latency added to the APIs' requests (zero for none).
func (w *Workspace) SetLatency(l Latency) {
	w.mu.Lock()
	w.latency = l
	w.mu.Unlock()
}

// CurrentLatency returns the latency set with SetLatency.
func (w *Workspace) CurrentLatency() Latency {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.latency
}

// matchAPIFault returns the fault that fires for a request, if any, and counts it.
func (w *Workspace) matchAPIFault(r *http.Request) *APIFault {
	for _, inj := range w.APIFaults() {
		if inj.f.Method != "" && !strings.EqualFold(inj.f.Method, r.Method) {
			continue
		}
		if inj.re != nil && !inj.re.MatchString(r.URL.Path) {
			continue
		}
		inj.mu.Lock()
		inj.seen++
		fire := inj.seen > inj.f.Skip && (inj.f.Times < 0 || inj.fired < inj.f.Times) &&
			warehouse.Share(inj.f.Seed, uint64(inj.seen-inj.f.Skip-1), inj.f.Percent)
		if fire {
			inj.fired++
		}
		inj.mu.Unlock()
		if fire {
			f := inj.f
			return &f
		}
	}
	return nil
}

// apiFaults wraps the workspace's REST APIs with latency and API faults; the control
// endpoints are exempt.
func (w *Workspace) apiFaultsHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, controlPrefix) {
			next.ServeHTTP(rw, r)
			return
		}
		l := w.CurrentLatency()
		d := time.Duration(0)
		switch {
		case strings.HasPrefix(r.URL.Path, "/api/2.0/fs/"):
			d = l.Files
		case strings.HasPrefix(r.URL.Path, "/api/2.0/unity-catalog/"), strings.HasPrefix(r.URL.Path, "/api/2.1/unity-catalog/"):
			d = l.UnityCatalog
		}
		f := w.matchAPIFault(r)
		if f != nil && f.Delay > 0 {
			d += f.Delay
		}
		if d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		switch {
		case f == nil || f.Delay > 0:
			next.ServeHTTP(rw, r)
		case f.HTTPStatus != 0:
			if f.RetryAfter != "" {
				rw.Header().Set("Retry-After", f.RetryAfter)
			}
			switch f.HTTPStatus {
			case http.StatusTooManyRequests:
				writeError(rw, f.HTTPStatus, "REQUEST_LIMIT_EXCEEDED", "The request rate limit was exceeded. Please retry after a while.")
			case http.StatusServiceUnavailable:
				writeError(rw, f.HTTPStatus, "TEMPORARILY_UNAVAILABLE", "The service is temporarily unavailable. Please try again later.")
			default:
				writeError(rw, f.HTTPStatus, strings.ToUpper(strings.ReplaceAll(http.StatusText(f.HTTPStatus), " ", "_")), http.StatusText(f.HTTPStatus))
			}
		case f.DropRequest:
			dropConnection(rw)
		case f.DropResponse:
			next.ServeHTTP(httptest.NewRecorder(), r)
			dropConnection(rw)
		}
	})
}

// dropConnection closes the client's connection without an HTTP reply.
func dropConnection(rw http.ResponseWriter) {
	if hj, ok := rw.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
		}
	}
}
