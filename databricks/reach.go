package databricks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// DialTimeout bounds one attempt to connect to the workspace (and its TLS handshake). The
// SDK's own default is 30 s an attempt, retried for as long as the retry timeout allows.
const DialTimeout = 10 * time.Second

// MaxNoAnswer is how many attempts in a row may find the workspace silent (a connection or
// TLS handshake that times out) before it is reported unreachable without further retries.
const MaxNoAnswer = 2

// UnreachableError is a request that could not reach the workspace: the connection was
// refused, the host name does not resolve, or the host did not answer MaxNoAnswer times in a
// row. The SDK does not retry it (its text avoids the phrases the SDK retries on).
type UnreachableError struct {
	Host   string // the workspace URL
	Reason string // what happened, such as "the connection to 10.0.0.1:443 was refused"
	Err    error  // the network error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the workspace %s: %s", e.Host, e.Reason)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// reachTransport reports an unreachable workspace at once instead of letting the SDK retry
// it for its whole retry timeout: refused connections and names that do not resolve fail the
// first attempt, and silent hosts fail after MaxNoAnswer attempts, each logged at -v.
type reachTransport struct {
	base     http.RoundTripper
	host     string
	noAnswer atomic.Int32 // attempts in a row that timed out
}

func (t *reachTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil {
		t.noAnswer.Store(0)
		return resp, nil
	}
	if r.Context().Err() != nil {
		return nil, err
	}
	err = t.classify(r, err)
	var ue *UnreachableError
	if errors.As(err, &ue) {
		if cancel, ok := r.Context().Value(failFastKey{}).(context.CancelCauseFunc); ok {
			cancel(ue)
		}
	}
	return nil, err
}

// classify returns an *UnreachableError for a request that could not reach the workspace,
// else err.
func (t *reachTransport) classify(r *http.Request, err error) error {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return &UnreachableError{Host: t.host, Reason: fmt.Sprintf("the connection to %s was refused (nothing listens there)", dialAddr(err, r)), Err: err}
	case errors.As(err, &dnsErr) && !dnsErr.IsTimeout:
		return &UnreachableError{Host: t.host, Reason: fmt.Sprintf("the host name %s does not resolve (%s)", dnsErr.Name, dnsReason(dnsErr)), Err: err}
	case isNoAnswer(err):
		n := t.noAnswer.Add(1)
		if n >= MaxNoAnswer {
			t.noAnswer.Store(0)
			return &UnreachableError{Host: t.host, Reason: fmt.Sprintf("%s did not answer within %s, %d attempts in a row", dialAddr(err, r), DialTimeout, n), Err: err}
		}
		logger().Info("the workspace did not answer, retrying", "host", t.host, "attempt", n, "max_attempts", MaxNoAnswer, "error", err.Error())
	}
	return err
}

// unreachableHint is what an operator checks when the workspace cannot be reached.
const unreachableHint = "check DATABRICKS_HOST or the profile's host, and the network (proxy, VPN, firewall)"

type failFastKey struct{}

// failFast returns a context whose requests through reachTransport end it when the workspace
// is unreachable, for callers whose library retries every network error (the SQL driver).
// After a failure, failed releases the context and returns the *UnreachableError that ended
// it, if any. After a success the context is left alone: the driver may keep it for the
// session it opened, and it ends with its parent.
func failFast(ctx context.Context) (context.Context, func() *UnreachableError) {
	cctx, cancel := context.WithCancelCause(ctx)
	failed := func() *UnreachableError {
		var ue *UnreachableError
		if !errors.As(context.Cause(cctx), &ue) {
			ue = nil
		}
		cancel(nil)
		return ue
	}
	return context.WithValue(cctx, failFastKey{}, cancel), failed
}

// isNoAnswer reports a connection or TLS handshake that timed out.
func isNoAnswer(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" && op.Timeout() {
		return true
	}
	return strings.Contains(err.Error(), "TLS handshake timeout")
}

// dialAddr names the address a failed request tried.
func dialAddr(err error, r *http.Request) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		return op.Addr.String()
	}
	return r.URL.Host
}

func dnsReason(e *net.DNSError) string {
	if e.IsNotFound {
		return "no such host"
	}
	return strings.ReplaceAll(e.Err, "connection refused", "the DNS server refused the query")
}

// maxIdlePerHost is the most idle connections to the workspace kept for reuse.
const maxIdlePerHost = 64

// defaultTransport is the SDK's default transport with DialTimeout for connections and TLS
// handshakes, keeping as many idle connections to the workspace as Files API requests may be
// in flight, and at least maxIdlePerHost (the SDK keeps GOMAXPROCS+1): over HTTP/1.1 each
// request needs its own connection, a scan vends credentials for dozens of tables at once, and
// every connection beyond those kept would be closed after its request and dialled (and
// TLS-negotiated) again.
func defaultTransport() *http.Transport {
	idle := max(runtime.GOMAXPROCS(0)+1, DefaultFilesConcurrency*MaxFilesConcurrencyFactor, maxIdlePerHost)
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          idle,
		MaxIdleConnsPerHost:   idle,
		IdleConnTimeout:       180 * time.Second,
		TLSHandshakeTimeout:   DialTimeout,
		ExpectContinueTimeout: time.Second,
	}
}
