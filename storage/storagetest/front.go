package storagetest

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is the kind of a request to an emulated store.
type Kind int

// The request kinds an emulator front counts.
const (
	KindListPage    Kind = iota // one list request (one page)
	KindGet                     // object read (ranged or whole)
	KindHead                    // object metadata read
	KindDelete                  // single-object delete
	KindBatchDelete             // multi-object delete (S3 DeleteObjects, Azure blob batch)
	KindPut                     // object write (test setup)
	KindOther                   // anything else (bucket calls, region discovery)
	numKinds
)

var kindNames = [numKinds]string{"list-page", "get", "head", "delete", "batch-delete", "put", "other"}

func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return fmt.Sprintf("Kind(%d)", int(k))
	}
	return kindNames[k]
}

// Counts is a snapshot of an emulator's request counts by kind.
type Counts struct {
	ListPages    int64
	Gets         int64
	Heads        int64
	Deletes      int64
	BatchDeletes int64
	Puts         int64
	Other        int64
}

// Total is the number of requests other than Puts (which tests make to set up).
func (c Counts) Total() int64 {
	return c.ListPages + c.Gets + c.Heads + c.Deletes + c.BatchDeletes + c.Other
}

func (c Counts) String() string {
	return fmt.Sprintf("list-pages=%d gets=%d heads=%d deletes=%d batch-deletes=%d puts=%d other=%d",
		c.ListPages, c.Gets, c.Heads, c.Deletes, c.BatchDeletes, c.Puts, c.Other)
}

// Front is an http.Handler placed in front of an emulator. It counts requests by kind, delays
// every request but puts by a configurable latency, and answers injected failures.
// It is safe for concurrent use.
type Front struct {
	next     http.Handler
	classify func(*http.Request) Kind
	failBody func(status int) (contentType string, body []byte)

	counts  [numKinds]atomic.Int64
	latency atomic.Int64

	mu     sync.Mutex
	faults map[Kind][]int
}

// NewFront returns a front for next. classify names each request's kind; failBody renders
// the store's error document for an injected failure status.
func NewFront(next http.Handler, classify func(*http.Request) Kind, failBody func(status int) (string, []byte)) *Front {
	return &Front{next: next, classify: classify, failBody: failBody, faults: map[Kind][]int{}}
}

// ServeHTTP implements http.Handler.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k := f.classify(r)
	f.counts[k].Add(1)
	if d := time.Duration(f.latency.Load()); d > 0 && k != KindPut {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if status := f.takeFault(k); status != 0 {
		ct, body := f.failBody(status)
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	f.next.ServeHTTP(w, r)
}

func (f *Front) takeFault(k Kind) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.faults[k]
	if len(q) == 0 {
		return 0
	}
	f.faults[k] = q[1:]
	return q[0]
}

// SetLatency delays every later request except puts by d (0 turns the delay off).
func (f *Front) SetLatency(d time.Duration) { f.latency.Store(int64(d)) }

// FailNext makes the next n requests of kind k fail with the HTTP status (429, 503, ...) and
// the store's error document for it.
func (f *Front) FailNext(k Kind, status, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := 0; i < n; i++ {
		f.faults[k] = append(f.faults[k], status)
	}
}

// Counts returns the requests counted so far.
func (f *Front) Counts() Counts {
	g := func(k Kind) int64 { return f.counts[k].Load() }
	return Counts{ListPages: g(KindListPage), Gets: g(KindGet), Heads: g(KindHead), Deletes: g(KindDelete),
		BatchDeletes: g(KindBatchDelete), Puts: g(KindPut), Other: g(KindOther)}
}

// ResetCounts sets every count back to zero.
func (f *Front) ResetCounts() {
	for i := range f.counts {
		f.counts[i].Store(0)
	}
}
