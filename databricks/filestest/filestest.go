// Package filestest is an in-memory Databricks Files API for tests and benchmarks: the
// /api/2.0/fs/files and /api/2.0/fs/directories endpoints on Unity Catalog volume paths,
// with the status codes of Databricks and of the local workspace (internal/fake/workspace): 404
// for a missing file or directory, 409 for an upload without overwrite=true onto an
// existing file and for the delete of a directory that is not empty. Downloads honour a
// Range header (206), as the Files API does, unless the server is told to ignore it (as
// the local workspace does).
//
// On top of that it adds what the real service does under load: a latency per request,
// answers injected by a test (429 or 503 with or without Retry-After, 500, a dropped
// connection), and counts of the requests by kind and of the most in flight at once.
//
//	srv := filestest.NewServer(t, filestest.WithLatency(20*time.Millisecond))
//	t.Setenv("DATABRICKS_TOKEN", srv.Token)
//	c, _ := databricks.NewClient(ctx, databricks.Options{Host: srv.URL})
//	v, _ := c.Volume("/Volumes/main/sales/staging/run1")
package filestest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Token is the bearer token the server accepts.
const Token = "dapi-filestest-token"

const (
	filesPrefix = "/api/2.0/fs/files"
	dirsPrefix  = "/api/2.0/fs/directories"
)

// Kind is a kind of Files API request.
type Kind int

// The request kinds the server counts.
const (
	Upload   Kind = iota // PUT of a file
	Download             // GET of a file
	Metadata             // HEAD of a file
	Delete               // DELETE of a file
	List                 // GET of a directory (one page)
	Other                // directory HEAD, PUT and DELETE
	numKinds
)

var kindNames = [numKinds]string{"upload", "download", "metadata", "delete", "list", "other"}

func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// Counts holds the requests received, by kind, and the most that were in flight at once.
type Counts struct {
	Uploads, Downloads, Metadata, Deletes, Lists, Other int64
	// Faults counts the requests answered with an injected fault.
	Faults int64
	// MaxInFlight is the most requests the server was handling at once.
	MaxInFlight int64
}

// Total is the number of requests of every kind.
func (c Counts) Total() int64 {
	return c.Uploads + c.Downloads + c.Metadata + c.Deletes + c.Lists + c.Other
}

func (c Counts) String() string {
	return fmt.Sprintf("uploads=%d downloads=%d metadata=%d deletes=%d lists=%d other=%d faults=%d max-in-flight=%d",
		c.Uploads, c.Downloads, c.Metadata, c.Deletes, c.Lists, c.Other, c.Faults, c.MaxInFlight)
}

// Fault is an injected answer: Status with an error body (and Retry-After when set); with
// Drop, a connection closed before any answer; with CutAfter (downloads only), the answer
// the request deserves, cut off after CutAfter bytes of its body.
type Fault struct {
	Status     int
	RetryAfter string
	Drop       bool
	CutAfter   int
}

// FaultFunc decides the answer to a request before the server handles it: nil lets the
// request through. seq numbers the requests from 1, in the order they arrive.
type FaultFunc func(r *http.Request, kind Kind, seq int64) *Fault

// Option configures NewServer.
type Option func(*Server)

// WithLatency delays every request by d before it is handled.
func WithLatency(d time.Duration) Option { return func(s *Server) { s.latency.Store(int64(d)) } }

// WithoutRange makes downloads ignore the Range header (200 with the whole file), as the
// local workspace does.
func WithoutRange() Option { return func(s *Server) { s.ignoreRange = true } }

// WithPageSize lists directories n entries per page (default 1000).
func WithPageSize(n int) Option { return func(s *Server) { s.pageSize = n } }

// Server is a running Files API. Its methods are safe for concurrent use.
type Server struct {
	// URL is the workspace host, http://127.0.0.1:PORT.
	URL string
	// Token is the bearer token the server accepts (Token).
	Token string

	srv         *httptest.Server
	latency     atomic.Int64
	ignoreRange bool
	pageSize    int

	mu    sync.Mutex
	files map[string]file     // by volume path
	dirs  map[string]struct{} // directories created explicitly
	fault FaultFunc

	seq      atomic.Int64
	counts   [numKinds]atomic.Int64
	faults   atomic.Int64
	inFlight atomic.Int64
	maxIn    atomic.Int64
}

type file struct {
	data    []byte
	modTime time.Time
}

// NewServer starts a server; it stops when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{Token: Token, files: map[string]file{}, dirs: map[string]struct{}{}, pageSize: 1000}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	return s
}

// SetLatency changes the delay of every later request (0 turns it off).
func (s *Server) SetLatency(d time.Duration) { s.latency.Store(int64(d)) }

// SetFaults installs f (nil removes it).
func (s *Server) SetFaults(f FaultFunc) {
	s.mu.Lock()
	s.fault = f
	s.mu.Unlock()
}

// Counts returns the requests counted so far.
func (s *Server) Counts() Counts {
	return Counts{
		Uploads: s.counts[Upload].Load(), Downloads: s.counts[Download].Load(), Metadata: s.counts[Metadata].Load(),
		Deletes: s.counts[Delete].Load(), Lists: s.counts[List].Load(), Other: s.counts[Other].Load(),
		Faults: s.faults.Load(), MaxInFlight: s.maxIn.Load(),
	}
}

// ResetCounts sets the counts back to zero.
func (s *Server) ResetCounts() {
	for i := range s.counts {
		s.counts[i].Store(0)
	}
	s.faults.Store(0)
	s.maxIn.Store(0)
}

// Put stores a file directly (no request).
func (s *Server) Put(volumePath string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path.Clean(volumePath)] = file{data: append([]byte(nil), data...), modTime: time.Now().UTC()}
}

// File returns a file's content, and whether it exists.
func (s *Server) File(volumePath string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.files[path.Clean(volumePath)]
	return f.data, ok
}

// Paths returns the paths of the files under prefix, sorted.
func (s *Server) Paths(prefix string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for p := range s.files {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

func kindOf(r *http.Request) Kind {
	dir := strings.HasPrefix(r.URL.Path, dirsPrefix+"/")
	switch {
	case dir && r.Method == http.MethodGet:
		return List
	case dir:
		return Other
	case r.Method == http.MethodPut:
		return Upload
	case r.Method == http.MethodGet:
		return Download
	case r.Method == http.MethodHead:
		return Metadata
	case r.Method == http.MethodDelete:
		return Delete
	}
	return Other
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxIn.Load()
		if n <= m || s.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	kind := kindOf(r)
	s.counts[kind].Add(1)
	seq := s.seq.Add(1)
	if d := time.Duration(s.latency.Load()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		writeError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Invalid access token.")
		return
	}
	s.mu.Lock()
	fault := s.fault
	s.mu.Unlock()
	if fault != nil {
		if f := fault(r, kind, seq); f != nil && f.CutAfter > 0 {
			s.faults.Add(1)
			s.serve(&cutWriter{ResponseWriter: w, left: f.CutAfter}, r)
			panic(http.ErrAbortHandler)
		} else if f != nil {
			s.faults.Add(1)
			_, _ = io.Copy(io.Discard, r.Body)
			if f.Drop {
				if hj, ok := w.(http.Hijacker); ok {
					if c, _, err := hj.Hijack(); err == nil {
						c.Close()
						return
					}
				}
				panic(http.ErrAbortHandler)
			}
			if f.RetryAfter != "" {
				w.Header().Set("Retry-After", f.RetryAfter)
			}
			code := map[int]string{429: "TOO_MANY_REQUESTS", 503: "TEMPORARILY_UNAVAILABLE", 500: "INTERNAL_ERROR"}[f.Status]
			if code == "" {
				code = "INJECTED"
			}
			writeError(w, f.Status, code, "injected by filestest")
			return
		}
	}
	s.serve(w, r)
}

// cutWriter writes the first left bytes of a body, then drops the rest.
type cutWriter struct {
	http.ResponseWriter
	left int
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, io.ErrShortWrite
	}
	n := min(len(p), c.left)
	n, err := c.ResponseWriter.Write(p[:n])
	c.left -= n
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return n, err
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error_code": code, "message": msg})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var vpath string
	dir := false
	switch {
	case strings.HasPrefix(r.URL.Path, filesPrefix+"/"):
		vpath = strings.TrimPrefix(r.URL.Path, filesPrefix)
	case strings.HasPrefix(r.URL.Path, dirsPrefix+"/"):
		vpath, dir = strings.TrimPrefix(r.URL.Path, dirsPrefix), true
	default:
		writeError(w, http.StatusNotFound, "ENDPOINT_NOT_FOUND", fmt.Sprintf("No API found for '%s %s'", r.Method, r.URL.Path))
		return
	}
	vpath = path.Clean(vpath)
	if !strings.HasPrefix(vpath, "/Volumes/") || strings.Count(vpath, "/") < 4 && !dir {
		writeError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", fmt.Sprintf("Invalid path %s", vpath))
		return
	}
	if dir {
		s.serveDirectory(w, r, vpath)
		return
	}
	switch r.Method {
	case http.MethodPut:
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return // the client went away mid-upload: nothing is stored
		}
		overwrite := r.URL.Query().Get("overwrite") == "true"
		s.mu.Lock()
		_, exists := s.files[vpath]
		_, isDir := s.dirs[vpath]
		if exists && !overwrite || isDir || s.hasChildrenLocked(vpath) {
			s.mu.Unlock()
			writeError(w, http.StatusConflict, "ALREADY_EXISTS", "The file being created already exists.")
			return
		}
		s.files[vpath] = file{data: data, modTime: time.Now().UTC()}
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case http.MethodGet, http.MethodHead:
		s.mu.Lock()
		f, ok := s.files[vpath]
		s.mu.Unlock()
		if !ok {
			if r.Method == http.MethodHead {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			writeError(w, http.StatusNotFound, "NOT_FOUND", "The file being accessed is not found.")
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Last-Modified", f.modTime.Format(http.TimeFormat))
		if r.Method == http.MethodHead {
			w.Header().Set("Content-Length", strconv.Itoa(len(f.data)))
			w.WriteHeader(http.StatusOK)
			return
		}
		if since := r.Header.Get("If-Unmodified-Since"); since != "" {
			if t, err := http.ParseTime(since); err == nil && f.modTime.Truncate(time.Second).After(t) {
				writeError(w, http.StatusPreconditionFailed, "PRECONDITION_FAILED", "The file was modified.")
				return
			}
		}
		body := f.data
		if rng := r.Header.Get("Range"); rng != "" && !s.ignoreRange {
			lo, hi, ok := parseRange(rng, int64(len(f.data)))
			if !ok {
				w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(f.data)))
				writeError(w, http.StatusRequestedRangeNotSatisfiable, "INVALID_PARAMETER_VALUE", "The range is not satisfiable.")
				return
			}
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", lo, hi, len(f.data)))
			w.Header().Set("Content-Length", strconv.FormatInt(hi-lo+1, 10))
			w.WriteHeader(http.StatusPartialContent)
			_, _ = w.Write(f.data[lo : hi+1])
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	case http.MethodDelete:
		s.mu.Lock()
		_, ok := s.files[vpath]
		delete(s.files, vpath)
		s.mu.Unlock()
		if !ok {
			writeError(w, http.StatusNotFound, "NOT_FOUND", "The file being accessed is not found.")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, http.StatusMethodNotAllowed, "BAD_REQUEST", "Unsupported method "+r.Method)
	}
}

// parseRange parses "bytes=lo-" or "bytes=lo-hi" against size and returns the inclusive
// span; false when the range starts at or past the end.
func parseRange(h string, size int64) (int64, int64, bool) {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok {
		return 0, 0, false
	}
	a, b, _ := strings.Cut(spec, "-")
	lo, err := strconv.ParseInt(a, 10, 64)
	if err != nil || lo < 0 || lo >= size {
		return 0, 0, false
	}
	hi := size - 1
	if b != "" {
		if v, err := strconv.ParseInt(b, 10, 64); err == nil && v < hi {
			hi = v
		}
	}
	return lo, hi, hi >= lo
}

// hasChildrenLocked reports whether a file lies under the directory dir.
func (s *Server) hasChildrenLocked(dir string) bool {
	for p := range s.files {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	for p := range s.dirs {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

func (s *Server) serveDirectory(w http.ResponseWriter, r *http.Request, vpath string) {
	s.mu.Lock()
	_, explicit := s.dirs[vpath]
	// A volume itself (/Volumes/c/s/v) always exists here.
	exists := explicit || s.hasChildrenLocked(vpath) || strings.Count(vpath, "/") <= 4
	_, isFile := s.files[vpath]
	switch r.Method {
	case http.MethodHead:
		s.mu.Unlock()
		if !exists {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusOK)
	case http.MethodPut:
		if isFile {
			s.mu.Unlock()
			writeError(w, http.StatusConflict, "ALREADY_EXISTS", "A file exists at the path of the directory being created.")
			return
		}
		s.dirs[vpath] = struct{}{}
		s.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case http.MethodDelete:
		children := s.hasChildrenLocked(vpath)
		if exists && !children {
			delete(s.dirs, vpath)
		}
		s.mu.Unlock()
		switch {
		case !exists:
			writeError(w, http.StatusNotFound, "NOT_FOUND", "The directory being accessed is not found.")
		case children:
			writeError(w, http.StatusConflict, "DIRECTORY_NOT_EMPTY", "The directory being deleted is not empty.")
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	case http.MethodGet:
		if !exists {
			s.mu.Unlock()
			writeError(w, http.StatusNotFound, "NOT_FOUND", "The directory being accessed is not found.")
			return
		}
		type entry struct {
			Path         string `json:"path"`
			Name         string `json:"name"`
			IsDirectory  bool   `json:"is_directory"`
			FileSize     int64  `json:"file_size,omitempty"`
			LastModified int64  `json:"last_modified,omitempty"`
		}
		byName := map[string]entry{}
		add := func(p string, f *file) {
			rest, ok := strings.CutPrefix(p, vpath+"/")
			if !ok || rest == "" {
				return
			}
			name, _, sub := strings.Cut(rest, "/")
			if sub {
				byName[name] = entry{Path: vpath + "/" + name + "/", Name: name, IsDirectory: true}
			} else if f != nil {
				byName[name] = entry{Path: vpath + "/" + name, Name: name, FileSize: int64(len(f.data)), LastModified: f.modTime.UnixMilli()}
			} else {
				byName[name] = entry{Path: vpath + "/" + name + "/", Name: name, IsDirectory: true}
			}
		}
		for p, f := range s.files {
			add(p, &f)
		}
		for p := range s.dirs {
			add(p, nil)
		}
		s.mu.Unlock()
		names := make([]string, 0, len(byName))
		for n := range byName {
			names = append(names, n)
		}
		sort.Strings(names)
		token := r.URL.Query().Get("page_token")
		start := sort.SearchStrings(names, token)
		if token != "" && start < len(names) && names[start] == token {
			start++
		}
		end := min(start+s.pageSize, len(names))
		out := struct {
			Contents      []entry `json:"contents"`
			NextPageToken string  `json:"next_page_token,omitempty"`
		}{Contents: []entry{}}
		for _, n := range names[start:end] {
			out.Contents = append(out.Contents, byName[n])
		}
		if end < len(names) {
			out.NextPageToken = names[end-1]
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	default:
		s.mu.Unlock()
		writeError(w, http.StatusMethodNotAllowed, "BAD_REQUEST", "Unsupported method "+r.Method)
	}
}
