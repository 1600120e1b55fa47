package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
	"github.com/zbrecover/zbrecover/storage/mem"
	"github.com/zbrecover/zbrecover/storage/s3"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// TestSameContent compares objects on local, mem and the S3 emulator, within one store and
// across stores: equal bytes, equal sizes with different bytes, different sizes. It checks
// which comparisons need reads: MD5s the stores report (mem) decide without one, and so do
// equal MD5s where one side is an S3 single-part ETag; everything else (local, and an S3
// ETag that differs, which may be an encrypted object's) is read and hashed.
func TestSameContent(t *testing.T) {
	ctx := context.Background()
	data := bytes.Repeat([]byte("parquet bytes "), 300)
	other := bytes.Clone(data)
	other[len(other)/2] ^= 0x20 // same size, one byte differs

	dir := t.TempDir()
	for name, b := range map[string][]byte{"a": data, "same": data, "other": other, "short": data[:10]} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := mem.New()
	for name, b := range map[string][]byte{"a": data, "same": data, "other": other, "short": data[:10]} {
		m.Set(name, b, t0())
	}
	srv := s3test.NewServer(t)
	for name, b := range map[string][]byte{"a": data, "same": data, "other": other, "short": data[:10]} {
		storagetest.MustPut(t, srv.Put, "p/"+name, b)
	}
	s3b := storagetest.OpenURL(t, s3.New, srv.URLFor("p"), srv.Config())
	stores := map[string]storage.Backend{"local": local.New(dir), "mem": m, "s3": s3b}

	for an, a := range stores {
		for bn, b := range stores {
			ca, ac := storage.WithCounting(a)
			cb, bc := storage.WithCounting(b)
			for _, tc := range []struct {
				key  string
				want bool
			}{{"same", true}, {"a", true}, {"other", false}, {"short", false}} {
				ac.Reset()
				bc.Reset()
				got, err := storage.SameContent(ctx, ca, "a", cb, tc.key)
				if err != nil || got != tc.want {
					t.Errorf("%s a vs %s %s: %v, %v; want %v", an, bn, tc.key, got, err, tc.want)
				}
				reads := ac.Counts().ReadRanges + bc.Counts().ReadRanges
				wantReads := int64(2)
				switch {
				case tc.key == "short":
					wantReads = 0 // the sizes differ
				case an == "mem" && bn == "mem":
					wantReads = 0 // reported MD5s decide, equal or not
				case tc.want && an != "local" && bn != "local":
					wantReads = 0 // equal MD5s, reported or single-part ETags
				}
				if reads != wantReads {
					t.Errorf("%s a vs %s %s: %d reads, want %d", an, bn, tc.key, reads, wantReads)
				}
			}
		}
	}

	if _, err := storage.SameContent(ctx, m, "a", s3b, "missing"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("a missing object: %v, want ErrNotExist", err)
	}
	// An object that yields other bytes than its Stat announced changed meanwhile.
	changing := source(m)
	changing.StatFn = func(ctx context.Context, key string) (storage.ObjectInfo, error) {
		o, err := m.Stat(ctx, key)
		o.MD5 = ""
		return o, err
	}
	changing.ReadRangeFn = func(context.Context, string, int64, int64) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data[:100])), nil
	}
	if _, err := storage.SameContent(ctx, changing, "a", m, "same"); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("an object that changed while it was read: %v", err)
	}
}
