package storage

import (
	"container/list"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"time"
)

// Adaptive is a concurrency limit that follows the store's answers: additive increase,
// multiplicative decrease (AIMD), as TCP does with its window. An answer without a throttle
// raises the limit by 1/limit, so a full round of such answers raises it by 1, up to Max; a
// throttle (IsThrottle: HTTP 429 or 503, S3 SlowDown, GCS rateLimitExceeded, Azure
// ServerBusy) halves it, at most once per round of requests in flight, down to Min. A
// round is counted in answers, not in time: after a decrease the next one waits until as
// many answers as the lowered limit have come back, so a burst of throttled answers to
// requests sent together counts once, whatever the store's latency. S3 throttles per prefix
// ("reduce your request rate"), and a fixed concurrency that is too high drains a retry
// budget within a second; the limit settles just below the rate the store accepts instead.
//
// Slots are handed out first come, first served. An Adaptive is safe for concurrent use.
// WithAdaptive puts one in front of a backend; a caller may also hold its slots itself:
//
//	if err := a.Acquire(ctx); err != nil { … }
//	err := b.Delete(ctx, key, cond)
//	a.Release(err)
//
// and then feed the retries a WithRetry backend makes under the slot into Throttled
// (RetryPolicy.OnRetry = a.OnRetry(nil)), so that the limit drops while the retry backs off.
type Adaptive struct {
	mu       sync.Mutex
	limit    float64 // current limit; its integer part is the slots
	max, min int
	inflight int
	waiters  list.List // of chan struct{}, first come first served
	// sinceCut counts the answers since the last decrease: the limit is halved at most once
	// per window of that many answers (one round of requests in flight).
	sinceCut  int
	lowest    int
	throttles int64
	decreases int64
	onChange  func(from, to int, cause error)
}

// AdaptiveOptions configure NewAdaptive and WithAdaptive. Zero fields take the defaults.
type AdaptiveOptions struct {
	// Max is the highest limit (default 16).
	Max int
	// Min is the lowest limit (default 1, at most Max).
	Min int
	// Start is the first limit (default Max; Max also when outside Min..Max).
	Start int
	// OnChange, when set, is called (outside the lock) when the limit is lowered, with the
	// answer that lowered it, and when it is raised to a power of two or to Max, with a nil
	// cause.
	OnChange func(from, to int, cause error)
}

// AdaptiveStats is a snapshot of an Adaptive.
type AdaptiveStats struct {
	Limit     int   `json:"limit"`     // the current limit
	Max       int   `json:"max"`       // the highest it may reach
	InFlight  int   `json:"in_flight"` // requests holding a slot
	Throttles int64 `json:"throttles"` // throttled answers seen
	Decreases int64 `json:"decreases"` // times the limit was halved
}

// errThrottled stands for the cause of a decrease when Throttled is given none.
var errThrottled = errors.New("throttled")

// NewAdaptive returns a limit with no request in flight.
func NewAdaptive(o AdaptiveOptions) *Adaptive {
	if o.Max < 1 {
		o.Max = 16
	}
	o.Min = min(max(o.Min, 1), o.Max)
	if o.Start < o.Min || o.Start > o.Max {
		o.Start = o.Max
	}
	return &Adaptive{limit: float64(o.Start), max: o.Max, min: o.Min, lowest: o.Start,
		sinceCut: o.Max, onChange: o.OnChange}
}

// WithAdaptive returns b with its requests in flight limited by a NewAdaptive(opts), and
// that limit. Put it under WithRetry, so that every attempt is seen and a retried request
// waits for a slot. A ReadRange holds its slot until the reader is closed; listing holds one
// per page.
func WithAdaptive(b Backend, opts AdaptiveOptions) (Backend, *Adaptive) {
	a := NewAdaptive(opts)
	return &adaptive{inner: b, a: a}, a
}

// WithAdaptiveLimit returns b with its requests in flight limited by a, which other
// backends may share: backends of one store (two prefixes of a bucket, or a store and the
// copies written to it, or the table roots of a scan) then have one limit between them, as
// the store sees one client. Put it under WithRetry, as WithAdaptive, so that every attempt
// is seen.
func WithAdaptiveLimit(b Backend, a *Adaptive) Backend { return &adaptive{inner: b, a: a} }

// IsThrottle reports whether err is a store's answer to slow down: HTTP 429 or 503, S3
// SlowDown (and the other throttling codes), GCS rateLimitExceeded, Azure ServerBusy. Only
// retryable errors qualify: a throttle is transient by nature.
func IsThrottle(err error) bool {
	if !IsRetryable(err) {
		return false
	}
	var sc interface{ HTTPStatusCode() int }
	if errors.As(err, &sc) {
		if c := sc.HTTPStatusCode(); c == 429 || c == 503 {
			return true
		}
	}
	msg := err.Error()
	for _, s := range throttleWords {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

var throttleWords = []string{
	"SlowDown", "Throttling", "RequestLimitExceeded", "TooManyRequests", "Too Many Requests",
	"rateLimitExceeded", "ServerBusy", "Service Unavailable", "StatusCode: 429", "StatusCode: 503",
	" 429 ", " 503 ", "429:", "503:",
}

// Acquire waits for a slot under the current limit, behind the callers already waiting, or
// until ctx is done (then it returns ctx's error and holds no slot).
func (a *Adaptive) Acquire(ctx context.Context) error {
	a.mu.Lock()
	if a.inflight < int(a.limit) && a.waiters.Len() == 0 {
		a.inflight++
		a.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	e := a.waiters.PushBack(ch)
	a.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		a.mu.Lock()
		select {
		case <-ch: // handed a slot just now: give it back
			a.inflight--
			a.wakeLocked()
		default:
			a.waiters.Remove(e)
		}
		a.mu.Unlock()
		return ctx.Err()
	}
}

// wakeLocked hands free slots to the first waiters.
func (a *Adaptive) wakeLocked() {
	for a.inflight < int(a.limit) && a.waiters.Len() > 0 {
		e := a.waiters.Front()
		a.waiters.Remove(e)
		a.inflight++
		close(e.Value.(chan struct{}))
	}
}

// Release frees the slot of a finished request and adjusts the limit by its outcome err: a
// throttle (IsThrottle) counts as one and may halve the limit; context.Canceled says
// nothing about the store and leaves the limit as it is; any other outcome, success or
// failure, raises it.
func (a *Adaptive) Release(err error) {
	a.mu.Lock()
	a.inflight--
	from := int(a.limit)
	var cause error
	switch {
	case err != nil && IsThrottle(err):
		cause = a.throttleLocked(err)
	case err == nil || !errors.Is(err, context.Canceled):
		a.sinceCut++
		a.limit = min(float64(a.max), a.limit+1/a.limit)
	}
	a.wakeLocked()
	note := a.noteLocked(from, cause)
	a.mu.Unlock()
	note()
}

// Throttled records a throttled answer to a request still holding its slot (a retry about
// to be made): it counts as one answer and may halve the limit, as in Release. cause is the
// answer, for OnChange (nil: a generic "throttled").
func (a *Adaptive) Throttled(cause error) {
	if cause == nil {
		cause = errThrottled
	}
	a.mu.Lock()
	from := int(a.limit)
	note := a.noteLocked(from, a.throttleLocked(cause))
	a.mu.Unlock()
	note()
}

// throttleLocked counts a throttled answer and halves the limit if a round of answers has
// come back since the last decrease; it returns err if the limit went down.
func (a *Adaptive) throttleLocked(err error) error {
	a.throttles++
	var cause error
	if from := int(a.limit); a.sinceCut >= from {
		a.sinceCut = 0
		if to := max(float64(a.min), float64(from)/2); to < a.limit {
			a.limit = to
			a.decreases++
			cause = err
		}
	}
	a.sinceCut++
	return cause
}

// noteLocked records the lowest limit and returns the OnChange call due for a change from
// from to the current limit (a no-op if none is).
func (a *Adaptive) noteLocked(from int, cause error) func() {
	to := int(a.limit)
	a.lowest = min(a.lowest, to)
	f := a.onChange
	if f == nil || to == from || to > from && to != a.max && to&(to-1) != 0 {
		return func() {}
	}
	return func() { f(from, to, cause) }
}

// OnRetry returns a RetryPolicy.OnRetry that tells the limit about every retry caused by a
// throttle (Throttled), then calls next (if not nil).
func (a *Adaptive) OnRetry(next func(op string, attempt int, err error, wait time.Duration)) func(op string, attempt int, err error, wait time.Duration) {
	return func(op string, attempt int, err error, wait time.Duration) {
		if IsThrottle(err) {
			a.Throttled(err)
		}
		if next != nil {
			next(op, attempt, err, wait)
		}
	}
}

// Stats returns the limit's state.
func (a *Adaptive) Stats() AdaptiveStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AdaptiveStats{Limit: int(a.limit), Max: a.max, InFlight: a.inflight, Throttles: a.throttles, Decreases: a.decreases}
}

// Limit returns the current concurrency limit.
func (a *Adaptive) Limit() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.limit)
}

// Lowest returns the lowest limit reached so far.
func (a *Adaptive) Lowest() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lowest
}

type adaptive struct {
	inner Backend
	a     *Adaptive
}

var _ decorator = (*adaptive)(nil)

func (d *adaptive) Location() string { return d.inner.Location() }

// Capabilities implements Capable: those of the wrapped backend.
func (d *adaptive) Capabilities() Capabilities { return CapabilitiesOf(d.inner) }

func (d *adaptive) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if CapabilitiesOf(d.inner).Has(CanListPages) {
		return ListPages(ctx, d, prefix, fn)
	}
	return d.inner.List(ctx, prefix, fn)
}

func (d *adaptive) ListPage(ctx context.Context, prefix, token string) (page []ObjectInfo, next string, err error) {
	if err := d.a.Acquire(ctx); err != nil {
		return nil, "", err
	}
	defer func() { d.a.Release(err) }()
	return innerListPage(ctx, d.inner, prefix, token)
}

func (d *adaptive) AfterToken(key string) string { return innerAfterToken(d.inner, key) }

func (d *adaptive) Stat(ctx context.Context, key string) (oi ObjectInfo, err error) {
	if err := d.a.Acquire(ctx); err != nil {
		return ObjectInfo{}, err
	}
	defer func() { d.a.Release(err) }()
	return d.inner.Stat(ctx, key)
}

func (d *adaptive) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := d.a.Acquire(ctx); err != nil {
		return nil, err
	}
	rc, err := d.inner.ReadRange(ctx, key, off, n)
	if err != nil {
		d.a.Release(err)
		return nil, err
	}
	return &releaseOnClose{ReadCloser: rc, release: func() { d.a.Release(nil) }}, nil
}

func (d *adaptive) Delete(ctx context.Context, key string, cond Precondition) (err error) {
	if err := d.a.Acquire(ctx); err != nil {
		return err
	}
	defer func() { d.a.Release(err) }()
	return d.inner.Delete(ctx, key, cond)
}

func (d *adaptive) DeleteBatch(ctx context.Context, reqs []DeleteRequest) (res []DeleteResult, err error) {
	bd, err := innerBatch(d.inner)
	if err != nil {
		return nil, err
	}
	if err := d.a.Acquire(ctx); err != nil {
		return nil, err
	}
	defer func() { d.a.Release(err) }()
	return bd.DeleteBatch(ctx, reqs)
}

func (d *adaptive) MaxBatchDelete() int { return maxBatch(d.inner) }

func (d *adaptive) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (oi ObjectInfo, err error) {
	p, err := innerPutter(d.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := d.a.Acquire(ctx); err != nil {
		return ObjectInfo{}, err
	}
	defer func() { d.a.Release(err) }()
	return p.Put(ctx, key, r, size, opts)
}

func (d *adaptive) Copy(ctx context.Context, srcKey, dstKey string, cond Precondition, opts PutOptions) (oi ObjectInfo, err error) {
	c, err := innerCopier(d.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := d.a.Acquire(ctx); err != nil {
		return ObjectInfo{}, err
	}
	defer func() { d.a.Release(err) }()
	return c.Copy(ctx, srcKey, dstKey, cond, opts)
}

func (d *adaptive) CopyFrom(ctx context.Context, src Backend, srcKey, dstKey string, cond Precondition, opts PutOptions) (oi ObjectInfo, err error) {
	c, err := innerCopierFrom(d.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := d.a.Acquire(ctx); err != nil {
		return ObjectInfo{}, err
	}
	defer func() { d.a.Release(err) }()
	return c.CopyFrom(ctx, src, srcKey, dstKey, cond, opts)
}

// Unwrap returns the wrapped backend.
func (d *adaptive) Unwrap() Backend { return d.inner }
