package cmd

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mock"
)

// Storage retries are bounded and each one is a warning line on stderr, whatever the backend.
func TestStorageRetriesAreLogged(t *testing.T) {
	io, _, _, errOut := iostreams.Test()
	f := NewFactory(io)
	var calls atomic.Int64
	be := &mock.Backend{StatFn: func(context.Context, string) (storage.ObjectInfo, error) {
		calls.Add(1)
		return storage.ObjectInfo{}, storage.Retryable(errors.New("connection refused"))
	}}
	p := f.retryPolicy()
	p.Sleep = func(context.Context, time.Duration) error { return nil }
	_, err := storage.WithRetry(be, p).Stat(context.Background(), "k")
	if err == nil || !strings.Contains(err.Error(), "gave up after 5 tries") || calls.Load() != 5 {
		t.Fatalf("err %v after %d calls", err, calls.Load())
	}
	if n := strings.Count(errOut.String(), "storage request failed, retrying"); n != 4 {
		t.Errorf("%d retry lines, want 4:\n%s", n, errOut.String())
	}
}
