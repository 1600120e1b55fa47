package inspect_test

import (
	"context"
	"time"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// store is the backend the tests inspect: objects in memory (storage/mem) rooted at
// mem://table, seen through storage.WithCounting, which counts requests as an object store
// bills them: one per list page, one per ranged read, one per stat.
type store struct {
	storage.Backend // the counted view
	mem             *mem.Backend
	counter         *storage.Counter
	pageSize        int // objects per list page; 0 lists in one request
}

func newStore() *store {
	s := &store{mem: mem.New().Sub("table")}
	s.Backend, s.counter = storage.WithCounting(s.mem)
	return s
}

// setPageSize makes the store list n objects per page; the counts start again.
func (s *store) setPageSize(n int) {
	s.pageSize = n
	s.mem = s.mem.Paged(n)
	s.Backend, s.counter = storage.WithCounting(s.mem)
}

func (s *store) put(key string, data []byte, mod time.Time) { s.mem.Set(key, data, mod) }

func (s *store) resetCounts() { s.counter.Reset() }

func (s *store) counts() storage.RequestCounts { return s.counter.Counts() }

func (s *store) readsOf(key string) int64 { return s.counter.ReadsOf(key) }

// objects returns the number of objects under prefix, without counting a request.
func (s *store) objects(prefix string) int {
	n := 0
	_ = s.mem.List(context.Background(), prefix, func(storage.ObjectInfo) error { n++; return nil })
	return n
}
