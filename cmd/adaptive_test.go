package cmd

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// throttled answers the first n reads with SlowDown.
type throttled struct {
	storage.Backend
	n int
}

func (t *throttled) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if t.n > 0 {
		t.n--
		return nil, storage.Retryable(errors.New("read: api error SlowDown: Please reduce your request rate"))
	}
	return t.Backend.ReadRange(ctx, key, off, n)
}

// TestAdaptiveLimitAtVerbose: the storage the commands open backs off on SlowDown and
// recovers, and -v shows the limit as it moves.
func TestAdaptiveLimitAtVerbose(t *testing.T) {
	ios, _, _, errOut := iostreams.Test()
	f := NewFactory(ios)
	f.Global.Concurrency = 8
	f.Global.Verbose = 1
	m := mem.New()
	m.Set("k", []byte("x"), time.Time{})
	f.Registry = func() *storage.Registry {
		return storage.NewRegistry(storage.NewFactory("s3", func(context.Context, storage.Location, storage.Config) (storage.Backend, error) {
			return &throttled{Backend: m, n: 1}, nil
		}))
	}
	ctx := context.Background()
	b, err := f.OpenStorage(ctx, "s3://bucket/root")
	if err != nil {
		t.Fatal(err)
	}
	// The first read is throttled, and retried.
	for i := 0; i < 100; i++ {
		if _, err := storage.ReadAll(ctx, b, "k", 0, -1); err != nil {
			t.Fatal(err)
		}
	}
	log := errOut.String()
	for _, want := range []string{
		`level=info msg="storage throttled: concurrency lowered" limit=4 was=8 error="read: api error SlowDown: Please reduce your request rate"`,
		`level=info msg="storage concurrency raised" limit=8 max=8`,
	} {
		if !strings.Contains(log, want) {
			t.Errorf("-v output lacks %q:\n%s", want, log)
		}
	}
}
