package databricks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/databricks/databricks-sdk-go/apierr"
	"github.com/databricks/databricks-sdk-go/common"
	"github.com/databricks/databricks-sdk-go/config"
	"github.com/databricks/databricks-sdk-go/httpclient"
	"github.com/databricks/databricks-sdk-go/useragent"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/storage"
)

// DefaultFilesConcurrency is the first limit of Files API requests in flight (Options.
// FilesConcurrency): the workspace's answers move it from there, down to 1 when it throttles
// and up to MaxFilesConcurrencyFactor times the first limit while it does not.
const DefaultFilesConcurrency = 64

// MaxFilesConcurrencyFactor bounds how far the Files API limit grows above its first value.
const MaxFilesConcurrencyFactor = 4

// MaxRetryAfter is the longest wait a Retry-After header obtains; a longer one is waited as
// MaxRetryAfter.
const MaxRetryAfter = time.Minute

// DefaultFilesRetryPolicy is how Files API requests are tried again: 10 tries, waiting about
// 0.2 s, 0.4 s, … up to 10 s between them, or what the workspace's Retry-After says.
func DefaultFilesRetryPolicy() storage.RetryPolicy {
	return storage.RetryPolicy{MaxAttempts: 10, InitialDelay: 200 * time.Millisecond, MaxDelay: 10 * time.Second, Multiplier: 2}
}

// filesClient sends Files API requests (/api/2.0/fs/…) itself instead of through the SDK's
// client, which holds every request to a fixed rate and cannot send an upload again once its
// body has been read. Every request waits for a slot of one storage.Adaptive limit shared by
// the client's volumes (429 and 503 halve it, other answers raise it back), and is tried again
// on 429, 500, 502, 503, 504 and on transient network errors, after the wait the answer's
// Retry-After names (at most MaxRetryAfter), else an exponential backoff with jitter bounded
// by the policy's MaxDelay. An upload body is sent again from its start. Other answers, 4xx
// included, fail at once. Each retry is logged at info level (-v).
type filesClient struct {
	cfg     *config.Config
	http    *http.Client
	base    string // the workspace URL, without a trailing slash
	lim     *storage.Adaptive
	policy  storage.RetryPolicy
	timeout time.Duration // idle timeout of one attempt
	log     *slog.Logger

	// orgID is the X-Databricks-Org-Id header of a unified host, "" otherwise.
	orgID string
}

func newFilesClient(cfg *config.Config, transport http.RoundTripper, o Options) *filesClient {
	log := o.Log
	if log == nil {
		log = slog.New(discardHandler{})
	}
	conc := o.FilesConcurrency
	if conc < 1 {
		conc = DefaultFilesConcurrency
	}
	fc := &filesClient{
		cfg:     cfg,
		http:    &http.Client{Transport: transport},
		base:    strings.TrimSuffix(cfg.CanonicalHostName(), "/"),
		timeout: orDefault(o.HTTPTimeout, 60*time.Second),
		log:     log,
	}
	if cfg.HostType() == config.UnifiedHost && cfg.WorkspaceId != "" {
		fc.orgID = cfg.WorkspaceId
	}
	var (
		mu   sync.Mutex
		last time.Time
	)
	maxConc := conc * MaxFilesConcurrencyFactor
	fc.lim = storage.NewAdaptive(storage.AdaptiveOptions{Max: maxConc, Start: conc, Min: 1, OnChange: func(from, to int, cause error) {
		mu.Lock()
		show := to < from || time.Since(last) >= time.Second || to == maxConc
		if show {
			last = time.Now()
		}
		mu.Unlock()
		switch {
		case !show:
		case to < from:
			log.Info("files api throttled: concurrency lowered", "limit", to, "was", from, "error", redact.String(cause.Error()))
		default:
			log.Info("files api concurrency raised", "limit", to, "max", maxConc)
		}
	}})
	p := o.FilesRetry.WithDefaults(DefaultFilesRetryPolicy())
	if p.OnRetry == nil {
		p.OnRetry = func(op string, attempt int, err error, wait time.Duration) {
			log.Info("files api request failed, retrying", "op", op, "attempt", attempt, "max_attempts", p.MaxAttempts,
				"wait", wait.Round(time.Millisecond).String(), "error", redact.String(err.Error()), "concurrency", fc.lim.Limit())
		}
	}
	fc.policy = p
	return fc
}

// filesRequest is one Files API call.
type filesRequest struct {
	op     string // for messages and logs: "write", "read", "stat", "delete", "list"
	method string
	path   string // the volume path, /Volumes/…
	dir    bool   // a directory endpoint (/api/2.0/fs/directories)
	query  url.Values
	header http.Header
	// body, when set, is sent from its start on every try, size bytes.
	body io.ReadSeeker
	size int64
}

func (r filesRequest) url(base string) string {
	endpoint := "/api/2.0/fs/files"
	if r.dir {
		endpoint = "/api/2.0/fs/directories"
	}
	u := base + endpoint + httpclient.EncodeMultiSegmentPathParameter(r.path)
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	return u
}

// statusError is a Files API answer with an error status; it carries the SDK's
// *apierr.APIError and its status code (for storage.IsThrottle).
type statusError struct {
	code int
	err  *apierr.APIError
}

func (e *statusError) Error() string       { return e.err.Error() }
func (e *statusError) Unwrap() error       { return e.err }
func (e *statusError) HTTPStatusCode() int { return e.code }

// errIdle ends an attempt whose request or answer made no progress for the idle timeout.
var errIdle = errors.New("no progress within the request timeout")

// do sends r until it succeeds, fails for good or the tries are used up. A successful answer
// is returned with its body open (the caller closes it); any other answer's body is read and
// closed here. The error of a failed answer wraps a *statusError (so an *apierr.APIError); a
// request that never got an answer returns the network error, an *UnreachableError when the
// workspace could not be reached at all.
func (c *filesClient) do(ctx context.Context, r filesRequest) (*http.Response, error) {
	for attempt := 1; ; attempt++ {
		resp, wait, err := c.attempt(ctx, r)
		if err == nil {
			return resp, nil
		}
		if wait < 0 || ctx.Err() != nil {
			return nil, err
		}
		if attempt >= c.policy.MaxAttempts {
			return nil, fmt.Errorf("%w (gave up after %d tries)", err, attempt)
		}
		if wait == 0 {
			wait = c.policy.Backoff(attempt)
		}
		c.policy.OnRetry(r.op, attempt, err, wait)
		if serr := c.policy.Sleep(ctx, wait); serr != nil {
			return nil, fmt.Errorf("%w (retry stopped after %d tries: %v)", serr, attempt, err)
		}
	}
}

// attempt makes one try of r under a slot of the limit. It returns the answer, or how long
// to wait before the next try and the error: the wait is 0 for the policy's backoff, a
// Retry-After duration, or -1 when r is not to be tried again.
func (c *filesClient) attempt(ctx context.Context, r filesRequest) (*http.Response, time.Duration, error) {
	if err := c.lim.Acquire(ctx); err != nil {
		return nil, -1, err
	}
	actx, cancel := context.WithCancelCause(ctx)
	idle := time.AfterFunc(c.timeout, func() { cancel(errIdle) })
	finish := func(outcome error) {
		idle.Stop()
		cancel(nil)
		c.lim.Release(outcome)
	}
	req, err := http.NewRequestWithContext(actx, r.method, r.url(c.base), nil)
	if err != nil {
		finish(nil)
		return nil, -1, fmt.Errorf("%s %s: %w", r.op, r.path, err)
	}
	for k, vs := range r.header {
		req.Header[k] = vs
	}
	if r.body != nil {
		if _, err := r.body.Seek(0, io.SeekStart); err != nil {
			finish(nil)
			return nil, -1, fmt.Errorf("%s %s: rewind the data: %w", r.op, r.path, err)
		}
		if r.size > 0 {
			body := &progressReader{r: io.LimitReader(r.body, r.size), kick: func() { idle.Reset(c.timeout) }}
			req.Body = io.NopCloser(body)
			req.GetBody = func() (io.ReadCloser, error) {
				if _, err := r.body.Seek(0, io.SeekStart); err != nil {
					return nil, err
				}
				return io.NopCloser(&progressReader{r: io.LimitReader(r.body, r.size), kick: func() { idle.Reset(c.timeout) }}), nil
			}
		} else {
			req.Body = http.NoBody
		}
		req.ContentLength = r.size
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	if err := c.cfg.Authenticate(req); err != nil {
		finish(nil)
		return nil, -1, fmt.Errorf("%s %s: %w", r.op, r.path, redact.Error(err))
	}
	req.Header.Set("User-Agent", useragent.FromContext(ctx))
	if c.orgID != "" {
		req.Header.Set("X-Databricks-Org-Id", c.orgID)
	}
	start := time.Now()
	resp, err := c.http.Do(req)
	if err != nil {
		if cause := context.Cause(actx); errors.Is(cause, errIdle) && ctx.Err() == nil {
			err = fmt.Errorf("%s %s: %w", r.op, r.path, storage.Retryable(fmt.Errorf("%w (%s)", errIdle, c.timeout)))
			finish(err)
			return nil, 0, err
		}
		finish(ctx.Err())
		var ue *UnreachableError
		switch {
		case ctx.Err() != nil:
			return nil, -1, fmt.Errorf("%s %s: %w", r.op, r.path, ctx.Err())
		case errors.As(err, &ue):
			return nil, -1, ue
		case storage.IsTransientNetwork(err):
			return nil, 0, fmt.Errorf("%s %s: %w", r.op, r.path, storage.Retryable(redact.Error(err)))
		}
		return nil, -1, fmt.Errorf("%s %s: %w", r.op, r.path, redact.Error(err))
	}
	c.log.Debug("files api", "method", r.method, "path", r.path, "status", resp.StatusCode, "ms", time.Since(start).Milliseconds())
	if resp.StatusCode >= 400 {
		serr := c.answerError(ctx, resp)
		idle.Stop()
		cancel(nil)
		wait := time.Duration(-1)
		var out error = fmt.Errorf("%s %s: %w", r.op, r.path, serr)
		switch serr.code {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			wait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
			out = fmt.Errorf("%s %s: %w", r.op, r.path, storage.Retryable(serr))
		case http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway, http.StatusGatewayTimeout:
			wait = 0
			out = fmt.Errorf("%s %s: %w", r.op, r.path, storage.Retryable(serr))
		}
		c.lim.Release(out)
		return nil, wait, out
	}
	if want := req.URL.Path; resp.Request != nil && resp.Request.URL.Path != want {
		// A redirect elsewhere (a private-link workspace sends callers from outside its
		// network to a login page) is no answer of the Files API.
		resp.Body.Close()
		err := fmt.Errorf("%s %s: the workspace redirected the request to %s (a private-link workspace refuses requests from outside its network)",
			r.op, r.path, redact.String(resp.Request.URL.Redacted()))
		finish(nil)
		return nil, -1, err
	}
	resp.Body = &attemptBody{ReadCloser: resp.Body, kick: func() { idle.Reset(c.timeout) }, done: func() { finish(nil) }, cause: actx}
	return resp, 0, nil
}

// answerError reads a failed answer's body (at most 1 MiB) into the SDK's error.
func (c *filesClient) answerError(ctx context.Context, resp *http.Response) *statusError {
	defer resp.Body.Close()
	resp.Body = io.NopCloser(io.LimitReader(resp.Body, 1<<20))
	wrapped, err := common.NewResponseWrapper(resp, common.RequestBody{})
	var ae *apierr.APIError
	if err == nil {
		err = apierr.GetAPIError(ctx, wrapped)
	}
	if !errors.As(err, &ae) {
		ae = &apierr.APIError{StatusCode: resp.StatusCode, Message: http.StatusText(resp.StatusCode)}
	}
	ae.ResponseWrapper = nil
	return &statusError{code: resp.StatusCode, err: ae}
}

// retryAfter returns the wait a Retry-After header value asks for (seconds or an HTTP date),
// at most MaxRetryAfter; 0 when there is none or it cannot be read.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return time.Millisecond // now: still a wait, not the backoff
		}
		d = time.Duration(s * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
		if d <= 0 {
			return time.Millisecond
		}
	} else {
		return 0
	}
	// A little jitter, so that the requests one throttle turned away do not all come back at
	// the same instant.
	d += time.Duration(rand.Int64N(int64(d)/10 + 1))
	return min(d, MaxRetryAfter)
}

// progressReader calls kick on every read that returns data.
type progressReader struct {
	r    io.Reader
	kick func()
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.kick()
	}
	return n, err
}

// attemptBody is the body of a successful answer: reads keep the attempt's idle timeout from
// firing, Close ends the attempt (once).
type attemptBody struct {
	io.ReadCloser
	kick  func()
	done  func()
	once  sync.Once
	cause context.Context
}

func (b *attemptBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.kick()
	}
	if err != nil && err != io.EOF && errors.Is(context.Cause(b.cause), errIdle) {
		err = storage.Retryable(fmt.Errorf("%w: %w", errIdle, err))
	}
	return n, err
}

func (b *attemptBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// discard reads what is left of an answer's body and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
}
