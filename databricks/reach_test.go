package databricks

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// closedPort returns the address of a port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// countingTransport counts the requests it is given and answers them with fail, or with base
// when fail is nil.
type countingTransport struct {
	n    atomic.Int64
	base http.RoundTripper
	fail func(*http.Request) error
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	if c.fail != nil {
		return nil, c.fail(r)
	}
	return c.base.RoundTrip(r)
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// An unreachable workspace is reported after one attempt (refused, unresolvable) or
// MaxNoAnswer attempts (silent), with the SDK's retry timeout left at its default of 30 s:
// the error says so and where to look, and the retries of a silent host are logged.
func TestHintUnreachableWorkspace(t *testing.T) {
	addr := closedPort(t)
	for _, tc := range []struct {
		name     string
		host     string
		fail     func(*http.Request) error
		attempts int64
		want     []string
	}{
		{"connection refused", "http://" + addr, nil, 1, []string{"the connection to " + addr + " was refused"}},
		{"name does not resolve", "https://adb-0000.0.azuredatabricks.invalid", func(r *http.Request) error {
			return &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: r.URL.Hostname(), IsNotFound: true}}
		}, 1, []string{"the host name adb-0000.0.azuredatabricks.invalid does not resolve (no such host)"}},
		{"no answer", "https://10.255.255.1", func(r *http.Request) error {
			return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 255, 255, 1), Port: 443}, Err: timeoutErr{}}
		}, MaxNoAnswer, []string{"10.255.255.1:443 did not answer within 10s, 2 attempts in a row"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t)
			t.Setenv("DATABRICKS_HOST", tc.host)
			t.Setenv("DATABRICKS_TOKEN", goodToken)
			rt := &countingTransport{base: http.DefaultTransport, fail: tc.fail}
			var logs lockedBuffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			c, err := NewClient(context.Background(), Options{Transport: rt, Log: log})
			if err != nil {
				t.Fatal(err)
			}
			// The deadline only guards against a hang; the attempt count is the assertion.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err = c.Table(ctx, "main.sales.orders")
			if !errors.Is(err, ErrUnreachable) {
				t.Fatalf("err = %v, want ErrUnreachable", err)
			}
			msg := err.Error()
			for _, w := range append(tc.want, "cannot reach the workspace "+tc.host, "DATABRICKS_HOST", "the profile's host") {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not say %q: %s", w, msg)
				}
			}
			if strings.Contains(msg+logs.String(), goodToken) {
				t.Errorf("token leaked: %s\n%s", msg, logs.String())
			}
			if n := rt.n.Load(); n != tc.attempts {
				t.Errorf("%d attempts, want %d", n, tc.attempts)
			}
			if retries := strings.Count(logs.String(), "did not answer, retrying"); retries != int(tc.attempts-1) {
				t.Errorf("%d retry lines logged, want %d:\n%s", retries, tc.attempts-1, logs.String())
			}
		})
	}
}

// The SQL driver retries a failed connection with growing waits; an unreachable workspace
// ends the warehouse's ping at the first attempt.
func TestHintUnreachableWarehouse(t *testing.T) {
	cleanEnv(t)
	addr := closedPort(t)
	t.Setenv("DATABRICKS_HOST", "http://"+addr)
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	rt := &countingTransport{base: http.DefaultTransport}
	c, err := NewClient(context.Background(), Options{Transport: rt, HTTPPath: "/sql/1.0/warehouses/abc123"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a guard against hanging only
	defer cancel()
	w, err := c.Warehouse(ctx)
	if err == nil {
		_ = w.Close()
		t.Fatal("Warehouse opened on a closed port")
	}
	var se *SQLError
	if !errors.As(err, &se) || se.Class != ClassConnection {
		t.Errorf("err = %v, want a *SQLError of class %s", err, ClassConnection)
	}
	for _, want := range []string{"cannot reach the workspace http://" + addr, "was refused", "DATABRICKS_HOST"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), goodToken) {
		t.Errorf("token leaked: %v", err)
	}
	if n := rt.n.Load(); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}
