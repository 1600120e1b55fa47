package doctor_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/doctor"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
	"github.com/zbrecover/zbrecover/storage/mock"
)

func keys(t *testing.T, b storage.Backend) []string {
	t.Helper()
	var out []string
	if err := b.List(context.Background(), "", func(o storage.ObjectInfo) error { out = append(out, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestProbeDeleteOnlyItsOwnObject: the probe writes one object and deletes exactly that one;
// the fallback files, the Delta log and an object already under the probe's name stay.
func TestProbeDeleteOnlyItsOwnObject(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	now := time.Now()
	existing := []string{
		"_delta_log/00000000000000000000.json",
		"_zerobus/table_rejected_parquets/a.parquet",
		"_zerobus/table_rejected_parquets/2026/01/b.parquet",
		"_zerobus/.zbrecover-doctor-probe-taken",
	}
	for _, k := range existing {
		b.Set(k, []byte("data of "+k), now)
	}
	slices.Sort(existing)

	// Every call goes through a recording wrapper: the only delete is of the probe's key.
	var deleted, written []string
	rec := &mock.Backend{
		LocationFn: b.Location,
		ListFn:     b.List,
		StatFn:     b.Stat,
		ReadRangeFn: func(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
			return b.ReadRange(ctx, key, off, n)
		},
		DeleteFn: func(ctx context.Context, key string, cond storage.Precondition) error {
			deleted = append(deleted, key)
			if cond.IsZero() {
				t.Errorf("delete of %s without a precondition", key)
			}
			return b.Delete(ctx, key, cond)
		},
		PutFn: func(ctx context.Context, key string, r io.Reader, size int64, opts storage.PutOptions) (storage.ObjectInfo, error) {
			written = append(written, key)
			if !opts.CreateOnly {
				t.Errorf("probe write of %s is not create-only", key)
			}
			return b.Put(ctx, key, r, size, opts)
		},
	}
	key, err := doctor.ProbeDelete(ctx, rec, "_zerobus/.zbrecover-doctor-probe-1")
	if err != nil {
		t.Fatal(err)
	}
	if key != "_zerobus/.zbrecover-doctor-probe-1" || !slices.Equal(written, []string{key}) || !slices.Equal(deleted, []string{key}) {
		t.Errorf("key %s, written %v, deleted %v", key, written, deleted)
	}
	if got := keys(t, b); !slices.Equal(got, existing) {
		t.Errorf("objects after the probe %v, want %v", got, existing)
	}

	// A name already taken: the create-only write fails and nothing is deleted.
	deleted, written = nil, nil
	_, err = doctor.ProbeDelete(ctx, rec, "_zerobus/.zbrecover-doctor-probe-taken")
	var pe *doctor.ProbeError
	if !errors.As(err, &pe) || pe.Stage != "write" || !errors.Is(err, storage.ErrExist) {
		t.Fatalf("probe on a taken name: %v, want a write error wrapping ErrExist", err)
	}
	if len(deleted) != 0 {
		t.Errorf("deleted %v after a failed write", deleted)
	}
	if got := keys(t, b); !slices.Equal(got, existing) {
		t.Errorf("objects after the refused probe %v, want %v", got, existing)
	}
}

// TestProbeDeleteRefused: a store that writes but refuses deletes is reported at the delete
// stage; one that cannot write at the write stage, with no delete tried.
func TestProbeDeleteRefused(t *testing.T) {
	ctx := context.Background()
	denied := errors.New("AccessDenied: s3:DeleteObject")
	b := &mock.Backend{
		PutFn: func(ctx context.Context, key string, r io.Reader, size int64, opts storage.PutOptions) (storage.ObjectInfo, error) {
			return storage.ObjectInfo{Key: key, Size: size, ETag: `"e1"`}, nil
		},
		DeleteFn: func(ctx context.Context, key string, cond storage.Precondition) error {
			if cond.ETag != `"e1"` {
				t.Errorf("delete precondition %+v, want the written ETag", cond)
			}
			return denied
		},
	}
	_, err := doctor.ProbeDelete(ctx, b, "_zerobus/.p")
	var pe *doctor.ProbeError
	if !errors.As(err, &pe) || pe.Stage != "delete" || !errors.Is(err, denied) {
		t.Fatalf("got %v", err)
	}
	noPut := &mock.Backend{DeleteFn: func(context.Context, string, storage.Precondition) error {
		t.Error("delete tried on a store that cannot write")
		return nil
	}}
	if _, err := doctor.ProbeDelete(ctx, noPut, "_zerobus/.p"); !errors.As(err, &pe) || pe.Stage != "write" {
		t.Fatalf("got %v", err)
	}
}
