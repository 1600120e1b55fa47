package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"
)

// Policy says how an Opener decorates the backends it opens: every decorator chain of a run
// is built from one of these (Opener.Open).
type Policy struct {
	// Adaptive is the AIMD limit the backend's requests go under: shared by every backend of
	// the policy (scan's one limit over all tables); nil for none.
	Adaptive *Adaptive
	// OwnAdaptive, when positive, gives each backend a limit of its own instead, of at most
	// this many requests (each place throttled on its own; LoggedAdaptive).
	OwnAdaptive int
	// Retry is the retry policy.
	Retry RetryPolicy
	// Limit caps the requests in flight (0: no cap beyond Adaptive).
	Limit int
	// Counters, when set, collects each backend's request counter.
	Counters *Counters
	// Transport, when set, carries every backend's HTTP requests (connections reused from
	// table to table).
	Transport http.RoundTripper
	// SDKAttempts, when positive, caps the SDK's own attempts per request (1: the retries
	// happen in Retry, where the limits hear of them and -v shows them).
	SDKAttempts int
	// Quiet opens without an "opened" line (scan opens a thousand tables' storage).
	Quiet bool
}

// Opener opens backends from Registry and decorates each as Policy says. It is a value: a
// run builds one, and a command that needs another policy takes a copy with WithPolicy.
type Opener struct {
	Registry *Registry
	Policy   Policy
	Log      *slog.Logger
}

// WithPolicy returns a copy of o that decorates as p says.
func (o Opener) WithPolicy(p Policy) Opener {
	o.Policy = p
	return o
}

// Open opens a backend for loc and decorates it as o.Policy says, innermost first: counted,
// under the adaptive limit, retried, capped. A local path must be a folder that exists. A
// volume is not decorated: its Files API client limits and retries its requests itself, and
// the decorators would add a second layer.
func (o Opener) Open(ctx context.Context, loc Location, cfg Config) (Backend, error) {
	if err := checkLocalDir(loc); err != nil {
		return nil, err
	}
	pol := o.Policy
	if cfg.Logger == nil {
		cfg.Logger = o.Log
	}
	if cfg.Transport == nil {
		cfg.Transport = pol.Transport
	}
	if pol.SDKAttempts > 0 && cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = pol.SDKAttempts
	}
	b, err := o.Registry.OpenLocation(ctx, loc, cfg)
	if err != nil {
		return nil, err
	}
	if !pol.Quiet && o.Log != nil {
		o.Log.Info("storage opened", "location", b.Location())
	}
	if loc.Scheme == SchemeVolume {
		return b, nil
	}
	if pol.Counters != nil {
		var c *Counter
		b, c = WithCounting(b)
		pol.Counters.add(c)
	}
	if pol.OwnAdaptive > 0 {
		pol.Adaptive = LoggedAdaptive(pol.OwnAdaptive, o.Log)
	}
	if pol.Adaptive != nil {
		b = WithAdaptiveLimit(b, pol.Adaptive)
	}
	b = WithRetry(b, pol.Retry)
	if pol.Limit > 0 {
		b = WithLimit(b, pol.Limit)
	}
	return b, nil
}

// checkLocalDir turns a mistyped local path into an error instead of an empty report: on an
// object store a prefix with no objects is just empty, but a local path that does not exist
// (or is a file) is a mistake.
func checkLocalDir(loc Location) error {
	if loc.Scheme != "file" {
		return nil
	}
	fi, err := os.Stat(loc.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("local path %s does not exist (a table's storage root is the directory that holds _delta_log/ and _zerobus/)", loc.Path)
	case err != nil:
		return fmt.Errorf("local path %s cannot be read: %w", loc.Path, err)
	case !fi.IsDir():
		return fmt.Errorf("local path %s is a file, not a directory", loc.Path)
	}
	return nil
}

// Counters collects the request counters of the backends a policy opened.
type Counters struct {
	mu   sync.Mutex
	list []*Counter
}

func (c *Counters) add(n *Counter) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, n)
}

// Counts sums the requests of every backend opened.
func (c *Counters) Counts() RequestCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	var total RequestCounts
	for _, n := range c.list {
		total = total.Add(n.Counts())
	}
	return total
}

// LoggedAdaptive returns an AIMD concurrency limit of at most maxLimit whose changes are
// logged to log (nil: not logged), at most one line a second but for the first and a return
// to the maximum.
func LoggedAdaptive(maxLimit int, log *slog.Logger) *Adaptive {
	var (
		mu     sync.Mutex
		last   time.Time
		logged bool
	)
	maxLimit = max(maxLimit, 1)
	return NewAdaptive(AdaptiveOptions{Max: maxLimit, Min: 1, OnChange: func(from, to int, cause error) {
		mu.Lock()
		now := time.Now()
		show := !logged || to == maxLimit || now.Sub(last) >= time.Second
		if show {
			last, logged = now, true
		}
		mu.Unlock()
		switch {
		case !show || log == nil:
		case to < from:
			log.Info("storage throttled: concurrency lowered", "limit", to, "was", from, "error", cause.Error())
		default:
			log.Info("storage concurrency raised", "limit", to, "max", maxLimit)
		}
	}})
}

// LoggedRetry is the default retry policy with one warning line per retry to log.
func LoggedRetry(log *slog.Logger) RetryPolicy {
	p := DefaultRetryPolicy()
	p.OnRetry = func(op string, attempt int, err error, wait time.Duration) {
		if log != nil {
			log.Warn("storage request failed, retrying", "op", op, "attempt", attempt, "max_attempts", p.MaxAttempts,
				"wait", wait.Round(time.Millisecond).String(), "error", err.Error())
		}
	}
	return p
}
