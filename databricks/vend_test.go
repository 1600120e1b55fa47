package databricks

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks/uctest"
)

func vendClient(t *testing.T, srv *uctest.Server, log *slog.Logger) *Client {
	t.Helper()
	t.Setenv("DATABRICKS_HOST", srv.URL)
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	c, err := NewClient(context.Background(), Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTableCredentials(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	s3 := ordersTable(srv)
	srv.SetCredentials("main.sales.orders", uctest.Credentials{
		AWSAccessKeyID: "AKIAFAKEVENDED", AWSSecretAccessKey: "vended-secret-key-xyz", AWSSessionToken: "vended-session-token-xyz", TTL: time.Hour,
	})
	gs := srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "gcs", StorageLocation: "gs://bucket/t"})
	srv.SetCredentials("main.sales.gcs", uctest.Credentials{GCPOAuthToken: "ya29.vended-gcp-token"})
	az := srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "azure",
		StorageLocation: "abfss://c@acct.dfs.core.windows.net/t"})
	srv.SetCredentials("main.sales.azure", uctest.Credentials{AzureSASToken: "sv=2024&sig=vendedsasSIG"})
	aad := srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "aad",
		StorageLocation: "abfss://c@acct.dfs.core.windows.net/a"})
	srv.SetCredentials("main.sales.aad", uctest.Credentials{AzureAADToken: "eyJ-vended-aad-token"})
	denied := srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "locked", StorageLocation: "s3://lake/locked"})
	srv.DenyVending("main.sales.locked")
	// No credentials configured: the fake answers 400 INVALID_PARAMETER_VALUE.
	novend := srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "novend", StorageLocation: "s3://lake/novend"})

	c := vendClient(t, srv, nil)
	ctx := context.Background()

	v, err := c.TableCredentials(ctx, s3.TableID, OperationRead)
	if err != nil {
		t.Fatal(err)
	}
	if v.AWSAccessKeyID != "AKIAFAKEVENDED" || v.AWSSecretAccessKey != "vended-secret-key-xyz" ||
		v.AWSSessionToken != "vended-session-token-xyz" || v.GCSOAuthToken != "" || v.AzureSASToken != "" {
		t.Errorf("s3 credentials %+v", v.Credentials)
	}
	if v.URL != "s3://lake/tables/orders" {
		t.Errorf("url %q", v.URL)
	}
	if d := time.Until(v.Expires); d < 50*time.Minute || d > 61*time.Minute {
		t.Errorf("expires in %v, want about 1h", d)
	}
	reqs := srv.Requests()
	if last := reqs[len(reqs)-1]; last.Operation != "READ" || last.TableID != s3.TableID {
		t.Errorf("request %+v", last)
	}

	if _, err := c.TableCredentials(ctx, s3.TableID, OperationReadWrite); err != nil {
		t.Fatal(err)
	}
	reqs = srv.Requests()
	if last := reqs[len(reqs)-1]; last.Operation != "READ_WRITE" {
		t.Errorf("cleanup operation sent as %q", last.Operation)
	}

	v, err = c.TableCredentials(ctx, gs.TableID, OperationRead)
	if err != nil || v.GCSOAuthToken != "ya29.vended-gcp-token" || v.AWSAccessKeyID != "" {
		t.Errorf("gcs: %+v, %v", v.Credentials, err)
	}
	v, err = c.TableCredentials(ctx, az.TableID, OperationRead)
	if err != nil || v.AzureSASToken != "sv=2024&sig=vendedsasSIG" {
		t.Errorf("azure: %+v, %v", v.Credentials, err)
	}
	_, err = c.TableCredentials(ctx, aad.TableID, OperationRead)
	if !errors.Is(err, ErrUnsupported) || strings.Contains(err.Error(), "eyJ-vended-aad-token") {
		t.Errorf("aad: err = %v, want ErrUnsupported without the token", err)
	}
	_, err = c.TableCredentials(ctx, denied.TableID, OperationRead)
	if !errors.Is(err, ErrPermissionDenied) || !strings.Contains(err.Error(), "EXTERNAL USE SCHEMA") {
		t.Errorf("denied: err = %v", err)
	}
	// A request Unity Catalog refuses (400) is neither an unreachable workspace nor worth a
	// retry: the error says so and names what to change.
	_, err = c.TableCredentials(ctx, novend.TableID, OperationRead)
	if !errors.Is(err, ErrRejected) || errors.Is(err, ErrUnreachable) ||
		!strings.Contains(err.Error(), "INVALID_PARAMETER_VALUE") || !strings.Contains(err.Error(), "--storage-auth default") ||
		strings.Contains(err.Error(), "retry") || strings.Contains(err.Error(), "unreachable") {
		t.Errorf("refused vending: err = %v, want ErrRejected with the --storage-auth default way out", err)
	}
	_, err = c.TableCredentials(ctx, "00000000-0000-0000-0000-000000000000", OperationRead)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown table id: err = %v", err)
	}
	if _, err := c.TableCredentials(ctx, s3.TableID, "WRITE"); err == nil {
		t.Errorf("unknown operation accepted")
	}
}

func TestCredentialProviderRefresh(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	tbl := ordersTable(srv)
	srv.SetCredentials("main.sales.orders", uctest.Credentials{
		AWSAccessKeyID: "AKIAFAKEVENDED", AWSSecretAccessKey: "vended-secret-key-xyz", TTL: time.Hour,
	})
	c := vendClient(t, srv, nil)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	c.now = clock
	srv.SetNow(clock)

	get := c.CredentialProvider(tbl.TableID, OperationRead)
	ctx := context.Background()

	// Many concurrent first calls share one vending request.
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := get(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := srv.VendCount(tbl.TableID); n != 1 {
		t.Fatalf("vended %d times for concurrent first use, want 1", n)
	}
	first, _ := get(ctx)
	advance(50 * time.Minute) // 10 minutes left: still fresh
	if _, err := get(ctx); err != nil {
		t.Fatal(err)
	}
	if n := srv.VendCount(tbl.TableID); n != 1 {
		t.Fatalf("re-vended with 10 minutes left (%d calls)", n)
	}
	advance(6 * time.Minute) // 4 minutes left: inside the 5-minute margin
	second, err := get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.VendCount(tbl.TableID); n != 2 {
		t.Fatalf("vended %d times, want a refresh before expiry", n)
	}
	if !second.Expires.After(first.Expires) {
		t.Errorf("refreshed credentials expire %v, not after %v", second.Expires, first.Expires)
	}

	// Short-lived credentials refresh at half their lifetime.
	srv.SetCredentials("main.sales.orders", uctest.Credentials{AWSAccessKeyID: "AKIASHORT", AWSSecretAccessKey: "short-lived-secret", TTL: 4 * time.Minute})
	short := c.CredentialProvider(tbl.TableID, OperationRead)
	if _, err := short(ctx); err != nil {
		t.Fatal(err)
	}
	advance(time.Minute)
	_, _ = short(ctx)
	if n := srv.VendCount(tbl.TableID); n != 3 {
		t.Fatalf("short-lived: %d calls after 1 of 4 minutes, want 3", n)
	}
	advance(90 * time.Second)
	_, _ = short(ctx)
	if n := srv.VendCount(tbl.TableID); n != 4 {
		t.Fatalf("short-lived: %d calls after 2.5 of 4 minutes, want 4", n)
	}
}

func TestNoSecretInVerboseLog(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	tbl := ordersTable(srv)
	creds := uctest.Credentials{
		AWSAccessKeyID: "AKIAFAKEVENDED", AWSSecretAccessKey: "vended-secret-key-xyz", AWSSessionToken: "vended-session-token-xyz",
	}
	srv.SetCredentials("main.sales.orders", creds)
	sas := srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "azure", StorageLocation: "abfss://c@acct.dfs.core.windows.net/t"})
	srv.SetCredentials("main.sales.azure", uctest.Credentials{AzureSASToken: "sv=2024-01-01&sr=c&sig=SASsignatureVALUE"})

	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := vendClient(t, srv, log)
	ctx := context.Background()
	if _, err := c.Table(ctx, "main.sales.orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TableCredentials(ctx, tbl.TableID, OperationRead); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TableCredentials(ctx, sas.TableID, OperationRead); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Table(ctx, "main.sales.nope")
	// A wrong token, at verbose level too.
	t.Setenv("DATABRICKS_TOKEN", "dapi-wrong-token-zzzzzz")
	c2, err := NewClient(ctx, Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c2.Table(ctx, "main.sales.orders")
	log.Debug("operator-visible error", "err", err)

	out := buf.String()
	if !strings.Contains(out, "/api/2.1/unity-catalog/tables/main.sales.orders") ||
		!strings.Contains(out, "temporary-table-credentials") {
		t.Fatalf("verbose log lacks the request dumps; got:\n%s", out)
	}
	for _, secret := range []string{goodToken, "dapi-wrong-token-zzzzzz", creds.AWSSecretAccessKey, creds.AWSSessionToken, "SASsignatureVALUE"} {
		if strings.Contains(out, secret) {
			t.Errorf("secret %q appears in the verbose log", secret)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("log:\n%s", out)
	}
}

// TestRESTUserAgent: Unity Catalog calls name zbrecover and its version in the User-Agent, as
// the SQL sessions do.
func TestRESTUserAgent(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	tbl := ordersTable(srv)
	srv.SetCredentials("main.sales.orders", uctest.Credentials{AWSAccessKeyID: "AKIAUA", AWSSecretAccessKey: "ua-secret-key-000"})
	t.Setenv("DATABRICKS_HOST", srv.URL)
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	c, err := NewClient(context.Background(), Options{Version: "v2.3.4"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Table(context.Background(), "main.sales.orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TableCredentials(context.Background(), tbl.TableID, OperationRead); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		if !strings.Contains(r.UserAgent, "zbrecover/2.3.4") {
			t.Errorf("%s %s: user agent %q lacks zbrecover/2.3.4", r.Method, r.Path, r.UserAgent)
		}
	}
}
