package storage

import (
	"context"
	"sync"
	"time"
)

// AIMD is a concurrency limit that adapts to the store: additive increase, multiplicative
// decrease, as TCP does with its window. Every request that completes without a sign of
// overload raises the limit by 1/limit (about one more request in flight per round of
// limit requests), up to Max; a sign of overload (Throttled: a 429, a 503 SlowDown, any
// retryable failure) halves it, at most once per Cooldown, down to Min. S3 throttles deletes
// per key ("reduce your request rate") and a fixed concurrency that is too high drains the
// SDK's retry budget within a second; the controller settles just below the rate the store
// accepts instead.
//
// An AIMD is safe for concurrent use. Acquire before a request, Release after it:
//
//	if err := a.Acquire(ctx); err != nil { … }
//	err := b.Delete(ctx, key, cond)
//	a.Release(IsRetryable(err))
//
// and feed the retries a WithRetry backend makes into Throttled (RetryPolicy.OnRetry =
// a.OnRetry(nil)), so that the limit drops while the decorator is still backing off.
type AIMD struct {
	mu        sync.Mutex
	limit     float64
	min, max  int
	inflight  int
	cooldown  time.Duration
	lastDrop  time.Time
	changed   chan struct{} // closed and replaced whenever a slot may have become free
	throttles int64
	drops     int64
	onChange  func(limit int, why string)
	now       func() time.Time
}

// AIMDOptions configure NewAIMD. Zero fields take the defaults.
type AIMDOptions struct {
	Start    int           // the first limit (default Max)
	Min      int           // the lowest limit (default 1)
	Max      int           // the highest limit (default 16)
	Cooldown time.Duration // the least time between two decreases (default 250 ms)
	// OnChange is told each time the whole-number limit changes, with the reason ("throttled",
	// "recovered"), for -v logs. It is called without the limiter's lock held.
	OnChange func(limit int, why string)
}

// NewAIMD returns a limiter.
func NewAIMD(o AIMDOptions) *AIMD {
	if o.Max < 1 {
		o.Max = 16
	}
	if o.Min < 1 {
		o.Min = 1
	}
	if o.Min > o.Max {
		o.Min = o.Max
	}
	if o.Start < o.Min || o.Start > o.Max {
		o.Start = o.Max
	}
	if o.Cooldown <= 0 {
		o.Cooldown = 250 * time.Millisecond
	}
	return &AIMD{limit: float64(o.Start), min: o.Min, max: o.Max, cooldown: o.Cooldown,
		changed: make(chan struct{}), onChange: o.OnChange, now: time.Now}
}

// Acquire waits for a slot under the current limit, or until ctx is done.
func (a *AIMD) Acquire(ctx context.Context) error {
	for {
		a.mu.Lock()
		if a.inflight < int(a.limit) {
			a.inflight++
			a.mu.Unlock()
			return nil
		}
		ch := a.changed
		a.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release frees the slot of a finished request. overloaded says whether the request failed
// in a way that means "slow down" (it then counts as Throttled); otherwise the limit grows.
func (a *AIMD) Release(overloaded bool) {
	a.mu.Lock()
	a.inflight--
	var note func()
	if overloaded {
		note = a.dropLocked()
	} else if a.limit < float64(a.max) {
		before := int(a.limit)
		a.limit = min(a.limit+1/a.limit, float64(a.max))
		if n := int(a.limit); n != before && a.onChange != nil {
			f := a.onChange
			note = func() { f(n, "recovered") }
		}
	}
	a.wakeLocked()
	a.mu.Unlock()
	if note != nil {
		note()
	}
}

// Throttled records a sign of overload from a request still under way (a retry about to
// be made): the limit halves unless it did within the cooldown.
func (a *AIMD) Throttled() {
	a.mu.Lock()
	note := a.dropLocked()
	a.mu.Unlock()
	if note != nil {
		note()
	}
}

func (a *AIMD) dropLocked() func() {
	a.throttles++
	t := a.now()
	if !a.lastDrop.IsZero() && t.Sub(a.lastDrop) < a.cooldown {
		return nil
	}
	a.lastDrop = t
	before := int(a.limit)
	a.limit = max(a.limit/2, float64(a.min))
	a.drops++
	if n := int(a.limit); n != before && a.onChange != nil {
		f := a.onChange
		return func() { f(n, "throttled") }
	}
	return nil
}

func (a *AIMD) wakeLocked() {
	close(a.changed)
	a.changed = make(chan struct{})
}

// OnRetry returns a RetryPolicy.OnRetry that tells the limiter about every retry caused by
// a retryable failure, then calls next (if not nil).
func (a *AIMD) OnRetry(next func(op string, attempt int, err error, wait time.Duration)) func(op string, attempt int, err error, wait time.Duration) {
	return func(op string, attempt int, err error, wait time.Duration) {
		if IsRetryable(err) {
			a.Throttled()
		}
		if next != nil {
			next(op, attempt, err, wait)
		}
	}
}

// AIMDStats is a snapshot of a limiter.
type AIMDStats struct {
	Limit     int   `json:"limit"`     // the current limit
	Max       int   `json:"max"`       // the highest it may reach
	InFlight  int   `json:"in_flight"` // requests holding a slot
	Throttles int64 `json:"throttles"` // signs of overload seen
	Decreases int64 `json:"decreases"` // times the limit was halved
}

// Stats returns the limiter's state.
func (a *AIMD) Stats() AIMDStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AIMDStats{Limit: int(a.limit), Max: a.max, InFlight: a.inflight, Throttles: a.throttles, Decreases: a.drops}
}

// Limit returns the current limit.
func (a *AIMD) Limit() int { return a.Stats().Limit }
