package storage_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
	"github.com/zbrecover/zbrecover/storage/mock"
)

// streamOnly returns a backend over m that can write but has no server-side copy, so that
// CopyObject streams even when the source and the destination are this one value.
func streamOnly(m *mem.Backend) *mock.Backend {
	return &mock.Backend{LocationFn: m.Location, ListFn: m.List, StatFn: m.Stat, ReadRangeFn: m.ReadRange,
		DeleteFn: m.Delete, PutFn: m.Put}
}

// wrapping is a way the command line decorates a backend; conc is its --concurrency.
type wrapping struct {
	name string
	// pair returns the source and the destination, both decorated, over the objects of
	// src and dst.
	pair func(src, dst *mem.Backend, conc int) (storage.Backend, storage.Backend)
}

func noRetrySleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

var wrappings = []wrapping{
	{"limit over retry over adaptive, each side its own (reload, inspect)", func(src, dst *mem.Backend, conc int) (storage.Backend, storage.Backend) {
		wrap := func(b storage.Backend) storage.Backend {
			ab, _ := storage.WithAdaptive(b, storage.AdaptiveOptions{Max: conc})
			return storage.WithLimit(storage.WithRetry(ab, storage.RetryPolicy{Sleep: noRetrySleep}), conc)
		}
		return wrap(streamOnly(src)), wrap(streamOnly(dst))
	}},
	{"limit over retry over counting, each side its own (cleanup with an archive)", func(src, dst *mem.Backend, conc int) (storage.Backend, storage.Backend) {
		wrap := func(b storage.Backend) storage.Backend {
			counted, _ := storage.WithCounting(b)
			return storage.WithLimit(storage.WithRetry(counted, storage.RetryPolicy{Sleep: noRetrySleep}), conc)
		}
		return wrap(streamOnly(src)), wrap(streamOnly(dst))
	}},
	{"one limited backend as source and destination", func(src, _ *mem.Backend, conc int) (storage.Backend, storage.Backend) {
		ab, _ := storage.WithAdaptive(streamOnly(src), storage.AdaptiveOptions{Max: conc})
		b := storage.WithLimit(storage.WithRetry(ab, storage.RetryPolicy{Sleep: noRetrySleep}), conc)
		return b, b
	}},
	{"one adaptive limit shared by both sides", func(src, dst *mem.Backend, conc int) (storage.Backend, storage.Backend) {
		a := storage.NewAdaptive(storage.AdaptiveOptions{Max: conc})
		wrap := func(b storage.Backend) storage.Backend {
			return storage.WithRetry(storage.WithAdaptiveLimit(b, a), storage.RetryPolicy{Sleep: noRetrySleep})
		}
		return wrap(streamOnly(src)), wrap(streamOnly(dst))
	}},
	{"adaptive limit shared, each side under its own cap", func(src, dst *mem.Backend, conc int) (storage.Backend, storage.Backend) {
		a := storage.NewAdaptive(storage.AdaptiveOptions{Max: conc})
		wrap := func(b storage.Backend) storage.Backend {
			return storage.WithLimit(storage.WithRetry(storage.WithAdaptiveLimit(b, a), storage.RetryPolicy{Sleep: noRetrySleep}), conc)
		}
		return wrap(streamOnly(src)), wrap(streamOnly(dst))
	}},
	{"latency under the limits (a remote store)", func(src, dst *mem.Backend, conc int) (storage.Backend, storage.Backend) {
		wrap := func(b storage.Backend) storage.Backend {
			ab, _ := storage.WithAdaptive(storage.WithLatency(b, time.Millisecond), storage.AdaptiveOptions{Max: conc})
			return storage.WithLimit(storage.WithRetry(ab, storage.RetryPolicy{Sleep: noRetrySleep}), conc)
		}
		return wrap(streamOnly(src)), wrap(streamOnly(dst))
	}},
}

// TestCopyObjectNeverWaitsOnItself copies many more files than there are request slots, with
// twice as many copies in flight as slots, through every decoration the command line uses,
// at concurrency 1, 2, 16 and 64. A copy that held a slot while waiting for another would
// wait forever once every slot is held by such copies; the deadline turns that into a
// failure.
func TestCopyObjectNeverWaitsOnItself(t *testing.T) {
	const files = 300
	for _, w := range wrappings {
		for _, conc := range []int{1, 2, 16, 64} {
			t.Run(fmt.Sprintf("%s/concurrency %d", w.name, conc), func(t *testing.T) {
				t.Parallel()
				src, dst := mem.New(), mem.New()
				store := src
				if w.name == "one limited backend as source and destination" {
					dst = src
				}
				for i := 0; i < files; i++ {
					src.Set(fmt.Sprintf("in/f%04d.parquet", i), []byte(fmt.Sprintf("file %d", i)), t0())
				}
				s, d := w.pair(src, dst, conc)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				g, gctx := errgroup.WithContext(ctx)
				g.SetLimit(2 * conc)
				for i := 0; i < files; i++ {
					key := fmt.Sprintf("in/f%04d.parquet", i)
					g.Go(func() error {
						o, err := store.Stat(gctx, key)
						if err != nil {
							return err
						}
						_, err = storage.CopyObject(gctx, s, key, d, "out/"+key, o.Version(), storage.PutOptions{CreateOnly: true})
						return err
					})
				}
				err := g.Wait()
				if errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("the copies waited on each other until the deadline: %v", err)
				}
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < files; i++ {
					key := fmt.Sprintf("in/f%04d.parquet", i)
					got, err := storage.ReadAll(ctx, dst, "out/"+key, 0, -1)
					if err != nil || !bytes.Equal(got, []byte(fmt.Sprintf("file %d", i))) {
						t.Fatalf("copy of %s: %q, %v", key, got, err)
					}
				}
			})
		}
	}
}
