package gcs_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/gcs"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An endpoint that refuses connections gives up after the configured attempts with the
// connection error, logging each retry, instead of retrying until the context ends.
func TestRefusedConnectionGivesUp(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	l.Close() // nothing listens there now: connections are refused

	var logs syncBuffer
	cfg := storage.Config{GCSEndpoint: endpoint, MaxAttempts: 3, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	loc, err := storage.Parse("gs://bucket/root")
	if err != nil {
		t.Fatal(err)
	}
	b, err := gcs.New(context.Background(), loc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Stat(context.Background(), "k")
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("Stat: %v, want a refused connection", err)
	}
	if n := strings.Count(logs.String(), "retrying"); n != 2 {
		t.Errorf("%d retry log lines for 3 attempts, want 2:\n%s", n, logs.String())
	}
}
