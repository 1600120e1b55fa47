package inspect_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zbrecover/zbrecover/storage"
)

// memStore is an in-memory storage.Backend that counts requests like an object store would
// bill them: one per list page, one per ranged read, one per stat.
type memStore struct {
	mu       sync.Mutex
	objs     map[string]memObj
	pageSize int           // list page size; 0 means 1000
	latency  time.Duration // slept per request

	listPages, reads, stats atomic.Int64
	readsByKey              sync.Map // key → *atomic.Int64
}

type memObj struct {
	data    []byte
	modTime time.Time
}

var _ storage.Backend = (*memStore)(nil)

func newMemStore() *memStore { return &memStore{objs: map[string]memObj{}} }

func (m *memStore) put(key string, data []byte, mod time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objs[key] = memObj{data: data, modTime: mod.UTC()}
}

func (m *memStore) resetCounts() {
	m.listPages.Store(0)
	m.reads.Store(0)
	m.stats.Store(0)
	m.readsByKey.Range(func(k, _ any) bool { m.readsByKey.Delete(k); return true })
}

func (m *memStore) readsOf(key string) int64 {
	v, ok := m.readsByKey.Load(key)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

func (m *memStore) sleep(ctx context.Context) error {
	if m.latency <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(m.latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *memStore) Location() string { return "mem://table" }

func (m *memStore) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	m.mu.Lock()
	var keys []string
	for k := range m.objs {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	infos := make([]storage.ObjectInfo, len(keys))
	for i, k := range keys {
		o := m.objs[k]
		infos[i] = storage.ObjectInfo{Key: k, Size: int64(len(o.data)), ModTime: o.modTime, ETag: fmt.Sprintf("%q", fmt.Sprint(len(o.data)))}
	}
	m.mu.Unlock()
	page := m.pageSize
	if page <= 0 {
		page = 1000
	}
	for i := 0; i == 0 || i < len(infos); i += page {
		m.listPages.Add(1)
		if err := m.sleep(ctx); err != nil {
			return err
		}
		for _, o := range infos[i:min(i+page, len(infos))] {
			if err := fn(o); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *memStore) Stat(ctx context.Context, key string) (storage.ObjectInfo, error) {
	m.stats.Add(1)
	if err := m.sleep(ctx); err != nil {
		return storage.ObjectInfo{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objs[key]
	if !ok {
		return storage.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, storage.ErrNotExist)
	}
	return storage.ObjectInfo{Key: key, Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

func (m *memStore) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	m.reads.Add(1)
	c, _ := m.readsByKey.LoadOrStore(key, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	if err := m.sleep(ctx); err != nil {
		return nil, err
	}
	m.mu.Lock()
	o, ok := m.objs[key]
	m.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("read %s: %w", key, storage.ErrNotExist)
	}
	size := int64(len(o.data))
	if off >= size {
		return io.NopCloser(bytes.NewReader(nil)), nil
	}
	end := size
	if n >= 0 && off+n < size {
		end = off + n
	}
	return io.NopCloser(bytes.NewReader(o.data[off:end])), nil
}

func (m *memStore) Delete(ctx context.Context, key string, _ storage.Precondition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.objs, key)
	return nil
}
