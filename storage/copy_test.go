package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
	"github.com/zbrecover/zbrecover/storage/mock"
)

// source returns a mock backend that reads like src, with its Stat and ReadRange replaceable.
func source(src *mem.Backend) *mock.Backend {
	return &mock.Backend{StatFn: src.Stat, ReadRangeFn: src.ReadRange, DeleteFn: src.Delete, LocationFn: src.Location}
}

func TestCopyObjectVerifies(t *testing.T) {
	ctx := context.Background()
	data := []byte("the fallback file's bytes")
	setup := func() (*mem.Backend, *mock.Backend, *mem.Backend) {
		m := mem.New()
		m.Set("f", data, t0())
		return m, source(m), mem.New()
	}
	t.Run("source changes during the copy", func(t *testing.T) {
		m, src, dst := setup()
		stats := 0
		src.StatFn = func(ctx context.Context, key string) (storage.ObjectInfo, error) {
			stats++
			if stats == 2 {
				m.Set("f", []byte("rewritten"), t0())
			}
			return m.Stat(ctx, key)
		}
		_, err := storage.CopyObject(ctx, src, "f", dst, "g", storage.Precondition{}, storage.PutOptions{})
		if !errors.Is(err, storage.ErrPreconditionFailed) || !strings.Contains(err.Error(), "changed during the copy") {
			t.Errorf("CopyObject = %v, want ErrPreconditionFailed", err)
		}
		if _, err := dst.Stat(ctx, "g"); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("the copy of a changed source was kept: %v", err)
		}
	})
	t.Run("short read", func(t *testing.T) {
		_, src, dst := setup()
		src.ReadRangeFn = func(context.Context, string, int64, int64) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data[:5])), nil
		}
		if _, err := storage.CopyObject(ctx, src, "f", dst, "g", storage.Precondition{}, storage.PutOptions{}); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("CopyObject of a short read = %v, want io.ErrUnexpectedEOF", err)
		}
		if _, err := dst.Stat(ctx, "g"); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("a short copy was kept: %v", err)
		}
	})
	t.Run("corrupted read", func(t *testing.T) {
		_, src, dst := setup()
		src.ReadRangeFn = func(context.Context, string, int64, int64) (io.ReadCloser, error) {
			bad := bytes.Clone(data)
			bad[3] ^= 1
			return io.NopCloser(bytes.NewReader(bad)), nil
		}
		_, err := storage.CopyObject(ctx, src, "f", dst, "g", storage.Precondition{}, storage.PutOptions{})
		if err == nil || !strings.Contains(err.Error(), "MD5") {
			t.Errorf("CopyObject of bytes that do not match the source's MD5 = %v", err)
		}
		if _, err := dst.Stat(ctx, "g"); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("a corrupted copy was kept: %v", err)
		}
	})
	t.Run("destination reports another size", func(t *testing.T) {
		_, src, _ := setup()
		var deleted []string
		dst := &mock.Backend{
			PutFn: func(_ context.Context, key string, r io.Reader, size int64, _ storage.PutOptions) (storage.ObjectInfo, error) {
				io.Copy(io.Discard, r)
				return storage.ObjectInfo{Key: key, Size: size - 1, ETag: `"e"`}, nil
			},
			DeleteFn: func(_ context.Context, key string, cond storage.Precondition) error {
				if cond.ETag != `"e"` {
					t.Errorf("the bad copy is removed with precondition %+v", cond)
				}
				deleted = append(deleted, key)
				return nil
			},
		}
		if _, err := storage.CopyObject(ctx, src, "f", dst, "g", storage.Precondition{}, storage.PutOptions{}); err == nil {
			t.Error("CopyObject accepted a copy of the wrong size")
		}
		if strings.Join(deleted, ",") != "g" {
			t.Errorf("deleted %q, want the bad copy", deleted)
		}
	})
	t.Run("read-only destination", func(t *testing.T) {
		_, src, _ := setup()
		if _, err := storage.CopyObject(ctx, src, "f", &mock.Backend{}, "g", storage.Precondition{}, storage.PutOptions{}); !errors.Is(err, storage.ErrNotSupported) {
			t.Errorf("CopyObject to a backend without Put = %v, want ErrNotSupported", err)
		}
	})
	t.Run("the store cannot copy it", func(t *testing.T) {
		m, _, _ := setup()
		b := &mock.Backend{StatFn: m.Stat, ReadRangeFn: m.ReadRange, PutFn: m.Put,
			CopyFn: func(context.Context, string, string, storage.Precondition, storage.PutOptions) (storage.ObjectInfo, error) {
				return storage.ObjectInfo{}, storage.ErrNotSupported
			}}
		o, err := storage.CopyObject(ctx, b, "f", b, "g", storage.Precondition{}, storage.PutOptions{})
		if err != nil || o.Size != int64(len(data)) {
			t.Fatalf("CopyObject after Copy said not supported = %+v, %v; want a streamed copy", o, err)
		}
		if got, _ := storage.ReadAll(ctx, m, "g", 0, -1); !bytes.Equal(got, data) {
			t.Errorf("streamed copy reads %q", got)
		}
	})
}

func t0() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }

// TestCopyObjectListedVersion: with the version a listing gives, a streamed copy reads the
// source once and stats it once; a source rewritten since the listing (to another size, or to
// the same size) is not copied.
func TestCopyObjectListedVersion(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		rewrite []byte // written over the source after it was listed
	}{{"unchanged", nil}, {"rewritten, other size", []byte("short")}, {"rewritten, same size", []byte("the fallback file's BYTES")}} {
		t.Run(tc.name, func(t *testing.T) {
			m := mem.New()
			m.Set("f", []byte("the fallback file's bytes"), t0())
			listed, _ := m.Stat(ctx, "f")
			if tc.rewrite != nil {
				m.Set("f", tc.rewrite, t0())
			}
			src, counter := storage.WithCounting(source(m))
			dst := mem.New()
			o, err := storage.CopyObject(ctx, src, "f", dst, "g", listed.Version(), storage.PutOptions{})
			if tc.rewrite != nil {
				if !errors.Is(err, storage.ErrPreconditionFailed) {
					t.Errorf("CopyObject of a rewritten source = %+v, %v; want ErrPreconditionFailed", o, err)
				}
				if _, err := dst.Stat(ctx, "g"); !errors.Is(err, storage.ErrNotExist) {
					t.Errorf("a copy of a rewritten source was written: %v", err)
				}
				return
			}
			if err != nil || o.Size != listed.Size || o.MD5 != listed.MD5 {
				t.Fatalf("CopyObject = %+v, %v", o, err)
			}
			if c := counter.Counts(); c.ReadRanges != 1 || c.Stats != 1 || c.Total() != 2 {
				t.Errorf("the source saw %s; want one read and one stat", c)
			}
		})
	}
}
