package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"
)

// RetryPolicy says how WithRetry repeats failed requests: exponential backoff with jitter.
// The zero value of a field takes its value from DefaultRetryPolicy.
type RetryPolicy struct {
	// MaxAttempts is the number of tries per request, the first included.
	MaxAttempts int
	// InitialDelay is the wait before the second try; each later wait is Multiplier times
	// longer, up to MaxDelay. Every wait is drawn uniformly from [delay/2, delay].
	InitialDelay time.Duration
	MaxDelay     time.Duration
	Multiplier   float64
	// Sleep waits for d or until ctx is done (tests replace it); nil uses a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// OnRetry, when set, is told about each failed try that will be repeated (for logs).
	OnRetry func(op string, attempt int, err error, wait time.Duration)
}

// DefaultRetryPolicy is 5 tries, waiting about 0.2 s, 0.4 s, 0.8 s and 1.6 s between them
// (at most 10 s).
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 5, InitialDelay: 200 * time.Millisecond, MaxDelay: 10 * time.Second, Multiplier: 2}
}

// WithDefaults returns p with each zero field (or out of range: fewer than 1 attempt, a
// multiplier below 1) taken from d, and a timer for a nil Sleep.
func (p RetryPolicy) WithDefaults(d RetryPolicy) RetryPolicy {
	if p.MaxAttempts < 1 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.InitialDelay <= 0 {
		p.InitialDelay = d.InitialDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = d.MaxDelay
	}
	if p.Multiplier < 1 {
		p.Multiplier = d.Multiplier
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return p
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Backoff returns the wait after the given failed try (1 for the first), with jitter.
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	p = p.WithDefaults(DefaultRetryPolicy())
	d := float64(p.InitialDelay)
	for i := 1; i < attempt && d < float64(p.MaxDelay); i++ {
		d *= p.Multiplier
	}
	d = min(d, float64(p.MaxDelay))
	return time.Duration(d/2 + rand.Float64()*d/2)
}

// pause waits before the try after the failed try number attempt: it tells OnRetry about
// err, then sleeps for the backoff. It returns ctx's error when ctx ends during the wait.
func (p RetryPolicy) pause(ctx context.Context, op string, attempt int, err error) error {
	wait := p.Backoff(attempt)
	if p.OnRetry != nil {
		p.OnRetry(op, attempt, err, wait)
	}
	return p.Sleep(ctx, wait)
}

// WithRetry returns b with requests that fail with a retryable error (IsRetryable: throttling,
// 5xx answers, dropped connections, as the backend marks them) tried again under policy.
// ErrNotExist, ErrPreconditionFailed and context errors are never retried. Lists are retried
// page by page; a ReadRange whose stream breaks resumes where it stopped; a batch delete
// repeats only the keys that failed with a retryable error.
//
// A Put is tried again only when its reader can seek back (an io.Seeker, such as
// *bytes.Reader or *os.File); a Copy always. A retried conditional Delete whose first try
// succeeded but whose answer was lost reports ErrNotExist: the object is gone either way. In
// the same way, a retried create-only Put or Copy can report ErrExist for the object its own
// lost try wrote; the error then says that an earlier try was made.
func WithRetry(b Backend, policy RetryPolicy) Backend {
	return &retrying{inner: b, p: policy.WithDefaults(DefaultRetryPolicy())}
}

type retrying struct {
	inner Backend
	p     RetryPolicy
}

var _ decorator = (*retrying)(nil)

// do runs fn until it succeeds, fails for good, or the tries are used up.
func (r *retrying) do(ctx context.Context, op string, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || !IsRetryable(err) {
			return err
		}
		if attempt >= r.p.MaxAttempts {
			return fmt.Errorf("%w (gave up after %d tries)", err, attempt)
		}
		if serr := r.p.pause(ctx, op, attempt, err); serr != nil {
			return fmt.Errorf("%w (retry stopped after %d tries: %v)", serr, attempt, err)
		}
	}
}

func (r *retrying) Location() string { return r.inner.Location() }

// Capabilities implements Capable: those of the wrapped backend.
func (r *retrying) Capabilities() Capabilities { return CapabilitiesOf(r.inner) }

func (r *retrying) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if CapabilitiesOf(r.inner).Has(CanListPages) {
		return ListPages(ctx, r, prefix, fn)
	}
	// Without pages, a listing can be repeated only while nothing was handed to fn.
	called := false
	return r.do(ctx, "list", func() error {
		err := r.inner.List(ctx, prefix, func(o ObjectInfo) error {
			called = true
			return fn(o)
		})
		if called && err != nil && IsRetryable(err) {
			return fmt.Errorf("%w (not retried: the listing had started)", unretryable{err})
		}
		return err
	})
}

// unretryable hides the retryable mark of an error while keeping its text and sentinels.
type unretryable struct{ err error }

func (u unretryable) Error() string { return u.err.Error() }
func (u unretryable) Unwrap() error { return u.err }

func (r *retrying) ListPage(ctx context.Context, prefix, token string) (page []ObjectInfo, next string, err error) {
	err = r.do(ctx, "list", func() error {
		page, next, err = innerListPage(ctx, r.inner, prefix, token)
		return err
	})
	return page, next, err
}

func (r *retrying) Stat(ctx context.Context, key string) (o ObjectInfo, err error) {
	err = r.do(ctx, "stat", func() error {
		o, err = r.inner.Stat(ctx, key)
		return err
	})
	return o, err
}

func (r *retrying) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	var rc io.ReadCloser
	err := r.do(ctx, "read", func() (err error) {
		rc, err = r.inner.ReadRange(ctx, key, off, n)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &resumingReader{r: r, ctx: ctx, key: key, off: off, n: n, rc: rc}, nil
}

// resumingReader reopens the range after a transient read error, from the first byte not yet
// delivered.
type resumingReader struct {
	r       *retrying
	ctx     context.Context
	key     string
	off, n  int64 // what remains to be read; n < 0 means to the end
	rc      io.ReadCloser
	resumes int
}

func (rr *resumingReader) Read(p []byte) (int, error) {
	for {
		k, err := rr.rc.Read(p)
		rr.off += int64(k)
		if rr.n >= 0 {
			rr.n -= int64(k)
		}
		switch {
		case err == nil || err == io.EOF:
			return k, err
		case k > 0:
			// Deliver the bytes; the error shows again on the next Read.
			return k, nil
		}
		if !(IsRetryable(err) || IsTransientNetwork(err)) || rr.resumes+1 >= rr.r.p.MaxAttempts || rr.n == 0 {
			return 0, err
		}
		rr.resumes++
		if serr := rr.r.p.pause(rr.ctx, "read", rr.resumes, err); serr != nil {
			return 0, serr
		}
		rr.rc.Close()
		rc, oerr := rr.r.inner.ReadRange(rr.ctx, rr.key, rr.off, rr.n)
		if oerr != nil {
			rr.rc = io.NopCloser(errReader{oerr})
			return 0, oerr
		}
		rr.rc = rc
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func (rr *resumingReader) Close() error { return rr.rc.Close() }

func (r *retrying) Delete(ctx context.Context, key string, cond Precondition) error {
	return r.do(ctx, "delete", func() error { return r.inner.Delete(ctx, key, cond) })
}

func (r *retrying) DeleteBatch(ctx context.Context, reqs []DeleteRequest) ([]DeleteResult, error) {
	bd, err := innerBatch(r.inner)
	if err != nil {
		return nil, err
	}
	out := make([]DeleteResult, len(reqs))
	pending := make([]int, len(reqs)) // indexes into reqs still to delete
	for i := range reqs {
		pending[i] = i
		out[i].Key = reqs[i].Key
	}
	for attempt := 1; ; attempt++ {
		batch := make([]DeleteRequest, len(pending))
		for j, i := range pending {
			batch[j] = reqs[i]
		}
		res, err := bd.DeleteBatch(ctx, batch)
		if err == nil && len(res) != len(batch) {
			err = fmt.Errorf("delete batch in %s: %d results for %d keys", r.inner.Location(), len(res), len(batch))
		}
		var again []int
		if err != nil {
			if !IsRetryable(err) {
				return nil, err
			}
			again = pending
		} else {
			for j, i := range pending {
				out[i].Err = res[j].Err
				if IsRetryable(res[j].Err) {
					again = append(again, i)
				}
			}
		}
		if len(again) == 0 {
			return out, nil
		}
		if attempt >= r.p.MaxAttempts {
			if err != nil {
				return nil, fmt.Errorf("%w (gave up after %d tries)", err, attempt)
			}
			return out, nil
		}
		first := err // the error OnRetry hears about: the call's, else the first key's
		if first == nil {
			first = out[again[0]].Err
		}
		if serr := r.p.pause(ctx, "delete batch", attempt, first); serr != nil {
			if err != nil {
				return nil, fmt.Errorf("%w (retry stopped after %d tries: %v)", serr, attempt, err)
			}
			return out, nil
		}
		pending = again
	}
}

func (r *retrying) MaxBatchDelete() int { return maxBatch(r.inner) }

func (r *retrying) Put(ctx context.Context, key string, rd io.Reader, size int64, opts PutOptions) (o ObjectInfo, err error) {
	p, err := innerPutter(r.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	rewind := rewindable(rd)
	tries := 0
	err = r.do(ctx, "put", func() error {
		if tries > 0 {
			if rerr := rewind(); rerr != nil {
				return fmt.Errorf("put %s: rewind the data for another try: %w", ObjectURL(r.inner, key), rerr)
			}
		}
		tries++
		o, err = p.Put(ctx, key, rd, size, opts)
		if err != nil && rewind == nil && IsRetryable(err) {
			return fmt.Errorf("%w (not retried: the data cannot be read again)", unretryable{err})
		}
		return err
	})
	return o, afterRetries(err, tries, opts)
}

func (r *retrying) Copy(ctx context.Context, srcKey, dstKey string, cond Precondition, opts PutOptions) (o ObjectInfo, err error) {
	c, err := innerCopier(r.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	tries := 0
	err = r.do(ctx, "copy", func() error {
		tries++
		o, err = c.Copy(ctx, srcKey, dstKey, cond, opts)
		return err
	})
	return o, afterRetries(err, tries, opts)
}

// afterRetries notes on an ErrExist that follows a failed try that the failed try may have
// written the object itself.
func afterRetries(err error, tries int, opts PutOptions) error {
	if tries > 1 && opts.CreateOnly && errors.Is(err, ErrExist) {
		return fmt.Errorf("%w (after %d tries: an earlier try whose answer was lost may have written it)", err, tries)
	}
	return err
}

// AfterToken implements AfterLister through the wrapped backend.
func (r *retrying) AfterToken(key string) string { return innerAfterToken(r.inner, key) }

func (r *retrying) CopyFrom(ctx context.Context, src Backend, srcKey, dstKey string, cond Precondition, opts PutOptions) (o ObjectInfo, err error) {
	c, err := innerCopierFrom(r.inner)
	if err != nil {
		return ObjectInfo{}, err
	}
	tries := 0
	err = r.do(ctx, "copy", func() error {
		tries++
		o, err = c.CopyFrom(ctx, src, srcKey, dstKey, cond, opts)
		return err
	})
	return o, afterRetries(err, tries, opts)
}

// Unwrap returns the wrapped backend.
func (r *retrying) Unwrap() Backend { return r.inner }
