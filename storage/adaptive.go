package storage

import (
	"container/list"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
)

// Adaptive is the state of a WithAdaptive backend: its current concurrency limit, which
// follows the store's answers. It is safe for concurrent use.
type Adaptive struct {
	mu       sync.Mutex
	limit    float64 // current limit; its integer part is the slots
	max, min int
	inflight int
	waiters  list.List // of chan struct{}, first come first served
	// sinceCut counts the requests completed since the last decrease: the limit is halved
	// at most once per window of that many requests (one round of requests in flight), so a
	// burst of throttled answers to requests sent together counts once.
	sinceCut  int
	lowest    int
	throttled int64
	onChange  func(from, to int, cause error)
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

// Throttled returns the number of requests the store answered with a throttle so far.
func (a *Adaptive) Throttled() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.throttled
}

// AdaptiveOptions configure WithAdaptive.
type AdaptiveOptions struct {
	// Max is the highest limit and the one it starts at (at least 1).
	Max int
	// Min is the lowest limit (at least 1, at most Max).
	Min int
	// OnChange, when set, is called (outside the lock) when the limit is lowered, with the
	// answer that lowered it, and when it is raised back to a power of two or to Max, with a
	// nil cause.
	OnChange func(from, to int, cause error)
}

// WithAdaptive returns b with its requests in flight limited by additive increase,
// multiplicative decrease (AIMD): the limit starts at opts.Max; a request the store answers
// with a throttle (HTTP 429 or 503, S3 SlowDown, GCS rateLimitExceeded, Azure ServerBusy)
// halves it, at most once per round of requests in flight, down to opts.Min; every other
// answer raises it by 1/limit, so a full round of answers without a throttle raises it by 1,
// up to opts.Max. Put it under WithRetry, so that every attempt is seen and a retried
// request waits for a slot. A ReadRange holds its slot until the reader is closed; listing
// holds one per page.
func WithAdaptive(b Backend, opts AdaptiveOptions) (Backend, *Adaptive) {
	opts.Max = max(opts.Max, 1)
	opts.Min = min(max(opts.Min, 1), opts.Max)
	a := &Adaptive{limit: float64(opts.Max), max: opts.Max, min: opts.Min, lowest: opts.Max, sinceCut: opts.Max, onChange: opts.OnChange}
	return &adaptive{inner: b, a: a}, a
}

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

func (a *Adaptive) acquire(ctx context.Context) error {
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

// release frees a slot and adjusts the limit by the request's outcome.
func (a *Adaptive) release(err error) {
	a.mu.Lock()
	a.inflight--
	from := int(a.limit)
	var cause error
	switch {
	case err != nil && IsThrottle(err):
		a.throttled++
		if a.sinceCut >= from {
			a.limit = max(float64(a.min), float64(from)/2)
			a.sinceCut = 0
			cause = err
		}
		a.sinceCut++
	case err == nil || !errors.Is(err, context.Canceled):
		a.sinceCut++
		a.limit = min(float64(a.max), a.limit+1/a.limit)
	}
	to := int(a.limit)
	a.lowest = min(a.lowest, to)
	a.wakeLocked()
	notify := a.onChange != nil && to != from && (to < from || to == a.max || to&(to-1) == 0)
	a.mu.Unlock()
	if notify {
		a.onChange(from, to, cause)
	}
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
	if err := d.a.acquire(ctx); err != nil {
		return nil, "", err
	}
	defer func() { d.a.release(err) }()
	return innerListPage(ctx, d.inner, prefix, token)
}

func (d *adaptive) AfterToken(key string) string { return innerAfterToken(d.inner, key) }

func (d *adaptive) Stat(ctx context.Context, key string) (oi ObjectInfo, err error) {
	if err := d.a.acquire(ctx); err != nil {
		return ObjectInfo{}, err
	}
	defer func() { d.a.release(err) }()
	return d.inner.Stat(ctx, key)
}

func (d *adaptive) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if err := d.a.acquire(ctx); err != nil {
		return nil, err
	}
	rc, err := d.inner.ReadRange(ctx, key, off, n)
	if err != nil {
		d.a.release(err)
		return nil, err
	}
	return &releaseOnClose{ReadCloser: rc, release: func() { d.a.release(nil) }}, nil
}

func (d *adaptive) Delete(ctx context.Context, key string, cond Precondition) (err error) {
	if err := d.a.acquire(ctx); err != nil {
		return err
	}
	defer func() { d.a.release(err) }()
	return d.inner.Delete(ctx, key, cond)
}

func (d *adaptive) DeleteBatch(ctx context.Context, reqs []DeleteRequest) (res []DeleteResult, err error) {
	bd, err := innerBatch(d.inner)
	if err != nil {
		return nil, err
	}
	if err := d.a.acquire(ctx); err != nil {
		return nil, err
	}
	defer func() { d.a.release(err) }()
	return bd.DeleteBatch(ctx, reqs)
}

func (d *adaptive) MaxBatchDelete() int { return maxBatch(d.inner) }

func (d *adaptive) Put(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) (oi ObjectInfo, err error) {
	p, err := innerPutter(d.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := d.a.acquire(ctx); err != nil {
		return ObjectInfo{}, err
	}
	defer func() { d.a.release(err) }()
	return p.Put(ctx, key, r, size, opts)
}

func (d *adaptive) Copy(ctx context.Context, srcKey, dstKey string, cond Precondition, opts PutOptions) (oi ObjectInfo, err error) {
	c, err := innerCopier(d.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	if err := d.a.acquire(ctx); err != nil {
		return ObjectInfo{}, err
	}
	defer func() { d.a.release(err) }()
	return c.Copy(ctx, srcKey, dstKey, cond, opts)
}
