package storage

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
)

// DeleteAllOptions configure DeleteAll.
type DeleteAllOptions struct {
	// Concurrency is the most requests in flight (default 16). With a Limiter it is the cap
	// on top of the limiter's own.
	Concurrency int
	// Limiter, when set, adapts the number of requests in flight to throttling (each request
	// holds one of its slots and releases it with its outcome: for a batch, its error or
	// else the first throttled key's).
	Limiter *Adaptive
	// Done, when set, is called after each request that was sent, with the number of keys
	// it covered, whatever its outcome: for progress. Calls come from the requests'
	// goroutines, one at a time.
	Done func(keys int)
}

// DeleteAll deletes every request's key with its precondition and returns one result per
// request, in the same order. A backend that deletes in batches (AsBatchDeleter: S3
// DeleteObjects, Azure blob batch) gets chunks of MaxBatchDelete keys, one request each;
// any other gets one Delete per key. Requests run concurrently, at most Concurrency (and the
// Limiter's limit) at a time.
//
// DeleteAll never stops at the first failure: every key is tried and reported. A batch call
// that fails as a whole reports its error for each of its keys. Once ctx is done, keys not
// yet sent report ctx's error ("not sent"); a key whose request was in flight reports the
// error the request returned, and whether the store deleted it is then unknown.
func DeleteAll(ctx context.Context, b Backend, reqs []DeleteRequest, o DeleteAllOptions) []DeleteResult {
	out := make([]DeleteResult, len(reqs))
	for i := range reqs {
		out[i].Key = reqs[i].Key
	}
	if len(reqs) == 0 {
		return out
	}
	conc := o.Concurrency
	if conc < 1 {
		conc = 16
	}
	var g errgroup.Group
	g.SetLimit(conc)
	var doneMu sync.Mutex
	// run sends one request for out[lo:hi], unless ctx is done.
	run := func(lo, hi int, send func() error) {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				notSent(out[lo:hi], err)
				return nil
			}
			if o.Limiter != nil {
				if err := o.Limiter.Acquire(ctx); err != nil {
					notSent(out[lo:hi], err)
					return nil
				}
			}
			err := send()
			if o.Limiter != nil {
				o.Limiter.Release(err)
			}
			if o.Done != nil {
				doneMu.Lock()
				o.Done(hi - lo)
				doneMu.Unlock()
			}
			return nil
		})
	}
	if bd, ok := AsBatchDeleter(b); ok && bd.MaxBatchDelete() > 0 {
		size := bd.MaxBatchDelete()
		for lo := 0; lo < len(reqs); lo += size {
			lo, hi := lo, min(lo+size, len(reqs))
			run(lo, hi, func() error {
				res, err := bd.DeleteBatch(ctx, reqs[lo:hi])
				if err == nil && len(res) != hi-lo {
					err = fmt.Errorf("delete batch in %s: %d results for %d keys", b.Location(), len(res), hi-lo)
				}
				if err != nil {
					for i := lo; i < hi; i++ {
						out[i].Err = err
					}
					return err
				}
				var throttled error
				for j, r := range res {
					out[lo+j].Err = r.Err
					if throttled == nil && IsThrottle(r.Err) {
						throttled = r.Err
					}
				}
				return throttled
			})
		}
	} else {
		for i := range reqs {
			run(i, i+1, func() error {
				err := b.Delete(ctx, reqs[i].Key, reqs[i].Cond)
				out[i].Err = err
				return err
			})
		}
	}
	_ = g.Wait()
	return out
}

func notSent(rs []DeleteResult, err error) {
	for i := range rs {
		rs[i].Err = fmt.Errorf("delete %s: not sent: %w", rs[i].Key, err)
	}
}
