package databricks

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/zbrecover/zbrecover/internal/redact"
)

// thriftRecorder stands in for a warehouse that rejects every session with 401, recording
// what the driver sent.
type thriftRecorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (h *thriftRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.reqs = append(h.reqs, r.Clone(context.Background()))
	h.mu.Unlock()
	w.Header().Set("X-Databricks-Reason-Phrase", "Invalid access token.")
	w.WriteHeader(http.StatusUnauthorized)
}

func TestWarehouseSessionAuthAndTelemetry(t *testing.T) {
	cleanEnv(t)
	rec := &thriftRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	t.Setenv("DATABRICKS_HOST", srv.URL)
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	var logBuf bytes.Buffer
	c, err := NewClient(context.Background(), Options{WarehouseID: "wh42", Version: "1.2.3",
		Log: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Warehouse(context.Background())
	var se *SQLError
	if !errors.As(err, &se) || se.Class != ClassAuth {
		t.Fatalf("err = %v, want an authentication SQLError", err)
	}
	t.Log(err)
	if strings.Contains(err.Error(), goodToken) || strings.Contains(logBuf.String(), goodToken) {
		t.Fatalf("token leaked")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("the driver sent nothing")
	}
	for _, r := range rec.reqs {
		if r.URL.Path != "/sql/1.0/warehouses/wh42" {
			t.Errorf("request to %s: telemetry or a wrong path reached the server", r.URL.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+goodToken {
			t.Errorf("authorization %q, want the SDK's bearer token", got)
		}
		if ua := r.Header.Get("User-Agent"); !strings.Contains(ua, "zbrecover/1.2.3") {
			t.Errorf("user agent %q lacks zbrecover/1.2.3", ua)
		}
	}
}

func TestNoTelemetryTransport(t *testing.T) {
	var hits []string
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		hits = append(hits, r.URL.Path)
		return localResponse(r, "ok"), nil
	})
	tr := noTelemetry{base}
	for _, u := range []string{
		"https://h/api/2.0/connector-service/feature-flags/GOLANG/1.15.1",
		"https://h/telemetry-ext",
		"https://h/sql/1.0/warehouses/x",
	} {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader("{}"))
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", u, resp, err)
		}
	}
	if len(hits) != 1 || hits[0] != "/sql/1.0/warehouses/x" {
		t.Errorf("requests that left the process: %v", hits)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestWarehouseNeedsAnEndpoint(t *testing.T) {
	cleanEnv(t)
	t.Setenv("DATABRICKS_HOST", "https://example.cloud.databricks.com")
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	c, err := NewClient(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Warehouse(context.Background())
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "--warehouse-id") {
		t.Errorf("err = %v, want ErrConfig naming --warehouse-id", err)
	}
	t.Setenv("DATABRICKS_HTTP_PATH", "/sql/1.0/warehouses/fromenv")
	if p, err := c.HTTPPath(); err != nil || p != "/sql/1.0/warehouses/fromenv" {
		t.Errorf("HTTPPath = %q, %v", p, err)
	}
}

// TestOpenDSNSecrets: the secrets a DSN carries in its query (accessToken, clientSecret) stay
// out of the error and the log, and are registered for redaction everywhere else.
func TestOpenDSNSecrets(t *testing.T) {
	rec := &thriftRecorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	const token = "pat-from-the-dsn-query-0042"
	var logBuf bytes.Buffer
	_, err := OpenDSN(context.Background(), srv.URL+"/sql/1.0/warehouses/x?accessToken="+token+"&maxRows=10",
		Options{Log: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	var se *SQLError
	if !errors.As(err, &se) || se.Class != ClassAuth {
		t.Fatalf("err = %v, want an authentication SQLError", err)
	}
	if strings.Contains(err.Error(), token) || strings.Contains(logBuf.String(), token) {
		t.Errorf("DSN token leaked: %v\n%s", err, logBuf.String())
	}
	if got := redact.String("echoed " + token); strings.Contains(got, token) {
		t.Errorf("the DSN token is not registered as a secret: %q", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 || rec.reqs[0].Header.Get("Authorization") != "Bearer "+token {
		t.Errorf("the DSN token did not reach the warehouse")
	}
}
