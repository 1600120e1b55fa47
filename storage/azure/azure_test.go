package azure_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/azure"
	"github.com/zbrecover/zbrecover/storage/azure/azuretest"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

func TestMain(m *testing.M) { azuretest.Main(m) }

// open opens url on the emulator in pages of 2, without the SDK's retries, with mod applied to
// the configuration.
func open(t *testing.T, srv *azuretest.Server, url string, mod func(*storage.Config)) *azure.Backend {
	t.Helper()
	cfg := srv.Config()
	cfg.PageSize = 2
	cfg.MaxAttempts = 1
	if mod != nil {
		mod(&cfg)
	}
	return storagetest.OpenURL(t, azure.New, url, cfg)
}

func TestConformance(t *testing.T) {
	srv := azuretest.NewServer(t)
	storagetest.RunOn(t, "azure", srv, func(t *testing.T, url string) storage.Backend { return open(t, srv, url, nil) })
}

// TestCredentialSources opens the same container with each way of authenticating that does
// not need a cloud identity.
func TestCredentialSources(t *testing.T) {
	srv := azuretest.NewServer(t)
	storagetest.MustPut(t, srv.Put, "p/k", []byte("data"))
	sasTok, err := srv.SAS(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{azure.EnvConnectionString, azure.EnvAccountKey, azure.EnvAccount, azure.EnvSASToken} {
		t.Setenv(env, "")
	}
	cases := []struct {
		name string
		env  map[string]string
		url  string
	}{
		{"connection string", map[string]string{azure.EnvConnectionString: srv.ConnectionString()}, srv.URLFor("p")},
		{"account key", map[string]string{azure.EnvAccountKey: azuretest.AccountKey}, srv.URLFor("p")},
		{"account key and account", map[string]string{azure.EnvAccountKey: azuretest.AccountKey, azure.EnvAccount: azuretest.Account},
			"abfss://" + srv.Container + "@other.dfs.core.windows.net/p"},
		{"SAS variable", map[string]string{azure.EnvSASToken: sasTok}, srv.URLFor("p")},
		{"SAS in the URL", nil, srv.URLFor("p") + "?" + sasTok},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			b := open(t, srv, c.url, func(cfg *storage.Config) { cfg.Credentials = nil })
			o, err := b.Stat(context.Background(), "k")
			if err != nil || o.Size != 4 {
				t.Fatalf("Stat = %+v, %v", o, err)
			}
			if strings.Contains(b.Location(), "sig=") && !strings.Contains(b.Location(), "sig="+storage.Redacted) {
				t.Errorf("Location() %q shows the SAS signature", b.Location())
			}
		})
	}
	// A bad key is refused with an error that says how the backend authenticated.
	t.Setenv(azure.EnvAccountKey, "bm90IHRoZSBrZXk=")
	b := open(t, srv, srv.URLFor("p"), func(cfg *storage.Config) { cfg.Credentials = nil })
	_, err = b.ReadRange(context.Background(), "k", 0, 1)
	if err == nil || errors.Is(err, storage.ErrNotExist) || !strings.Contains(err.Error(), azure.EnvAccountKey) {
		t.Errorf("read with a wrong key: %v", err)
	}
}

// TestVendedSASRefresh checks that a SAS about to expire is replaced before requests use it,
// and that the token never shows in errors or the location.
func TestVendedSASRefresh(t *testing.T) {
	srv := azuretest.NewServer(t)
	storagetest.MustPut(t, srv.Put, "p/k", []byte("data"))
	var calls atomic.Int64
	b := open(t, srv, srv.URLFor("p"), func(cfg *storage.Config) {
		cfg.Credentials = func(context.Context) (storage.Credentials, error) {
			calls.Add(1)
			tok, err := srv.SAS(time.Hour)
			// Claims to expire within the refresh window: every request fetches a new one.
			return storage.Credentials{AzureSASToken: tok, Expires: time.Now().Add(time.Minute)}, err
		}
	})
	ctx := context.Background()
	before := calls.Load()
	for i := 0; i < 3; i++ {
		if _, err := b.Stat(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if got := calls.Load() - before; got != 3 {
		t.Errorf("credential provider called %d times for 3 requests with a SAS about to expire, want 3", got)
	}
	_, err := b.Stat(ctx, "missing")
	if !errors.Is(err, storage.ErrNotExist) {
		t.Fatalf("Stat(missing) = %v", err)
	}
	if strings.Contains(err.Error(), "sig=") && !strings.Contains(err.Error(), "sig="+storage.Redacted) {
		t.Errorf("error shows the SAS signature: %v", err)
	}
}

func TestTransportPageSizeAndCounts(t *testing.T) {
	srv := azuretest.NewServer(t)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		storagetest.MustPut(t, srv.Put, "p/"+k, make([]byte, 100))
	}
	var n atomic.Int64
	b := open(t, srv, srv.URLFor("p"), func(c *storage.Config) { c.Transport = storagetest.CountingTransport(&n) })
	objs := storagetest.ListAndReadTails(t, b, 10)
	reqs := []storage.DeleteRequest{{Key: objs[0].Key, Cond: objs[0].Version()}, {Key: objs[1].Key}}
	if _, err := b.DeleteBatch(context.Background(), reqs); err != nil {
		t.Fatal(err)
	}
	want := storagetest.Counts{ListPages: 3, Gets: 5, BatchDeletes: 1}
	if got := srv.Counts(); got != want || n.Load() != want.Total() {
		t.Errorf("requests: %s (%d through the transport)\nwant      %s", got, n.Load(), want)
	}
}

func TestRetryableErrors(t *testing.T) {
	srv := azuretest.NewServer(t)
	storagetest.MustPut(t, srv.Put, "p/k", []byte("data"))
	b := open(t, srv, srv.URLFor("p"), nil)
	ctx := context.Background()
	for _, status := range []int{503, 500, 429} {
		srv.FailNext(storagetest.KindGet, status, 1)
		if _, err := b.ReadRange(ctx, "k", 0, 2); err == nil || !storage.IsRetryable(err) {
			t.Errorf("ReadRange answered %d: %v; want a retryable error", status, err)
		}
	}
	srv.FailNext(storagetest.KindGet, 403, 1)
	if _, err := b.ReadRange(ctx, "k", 0, 2); err == nil || storage.IsRetryable(err) {
		t.Errorf("ReadRange answered 403: %v; want a permanent error", err)
	}
	srv.FailNext(storagetest.KindBatchDelete, 503, 1)
	if _, err := b.DeleteBatch(ctx, []storage.DeleteRequest{{Key: "k"}}); !storage.IsRetryable(err) {
		t.Errorf("DeleteBatch answered 503: %v; want a retryable error", err)
	}
}

func TestMissingContainer(t *testing.T) {
	srv := azuretest.NewServer(t)
	url := strings.Replace(srv.URLFor("p"), srv.Container+"@", "no-such-container@", 1)
	// The vended SAS is scoped to the server's container: use the account key.
	t.Setenv(azure.EnvConnectionString, "")
	t.Setenv(azure.EnvAccountKey, azuretest.AccountKey)
	b := open(t, srv, url, func(c *storage.Config) { c.Credentials = nil })
	err := b.List(context.Background(), "", func(storage.ObjectInfo) error { return nil })
	if err == nil || errors.Is(err, storage.ErrNotExist) || !strings.Contains(err.Error(), `container "no-such-container" does not exist`) {
		t.Errorf("List of a missing container: %v", err)
	}
}

// TestBatchRefusedFallsBack checks that a refused batch request (403, as for a SAS scoped to
// a directory) is replaced by one delete per blob.
func TestBatchRefusedFallsBack(t *testing.T) {
	srv := azuretest.NewServer(t)
	for _, k := range []string{"a", "b"} {
		storagetest.MustPut(t, srv.Put, "p/"+k, []byte(k))
	}
	b := open(t, srv, srv.URLFor("p"), nil)
	ctx := context.Background()
	a, err := b.Stat(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	srv.FailNext(storagetest.KindBatchDelete, http.StatusForbidden, 1)
	res, err := b.DeleteBatch(ctx, []storage.DeleteRequest{{Key: "a", Cond: a.Version()}, {Key: "b"}, {Key: "c", Cond: a.Version()}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Err != nil || res[1].Err != nil || !errors.Is(res[2].Err, storage.ErrNotExist) {
		t.Errorf("results %+v; want a and b deleted, c not found", res)
	}
	if c := srv.Counts(); c.BatchDeletes != 1 || c.Deletes != 3 {
		t.Errorf("requests %s; want the refused batch, then 3 single deletes", c)
	}
}

// The errors of writes made with a SAS in the URL do not show its signature.
func TestWriteErrorsHideTheSAS(t *testing.T) {
	srv := azuretest.NewServer(t)
	storagetest.MustPut(t, srv.Put, "p/k", []byte("data"))
	tok, err := srv.SAS(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	q, err := url.ParseQuery(tok)
	if err != nil || q.Get("sig") == "" {
		t.Fatalf("SAS %v, %v", q, err)
	}
	b := open(t, srv, srv.URLFor("p")+"?"+tok, func(c *storage.Config) { c.Credentials = nil })
	ctx := context.Background()
	_, perr := b.Put(ctx, "k", strings.NewReader("new"), 3, storage.PutOptions{CreateOnly: true})
	_, cerr := b.Copy(ctx, "missing", "k2", storage.Precondition{}, storage.PutOptions{})
	_, xerr := b.Copy(ctx, "k", "k", storage.Precondition{ETag: `"0x0"`}, storage.PutOptions{})
	for name, err := range map[string]error{"create-only put": perr, "copy of a missing blob": cerr, "copy with a stale ETag": xerr} {
		if err == nil {
			t.Errorf("%s succeeded", name)
			continue
		}
		for _, secret := range []string{q.Get("sig"), url.QueryEscape(q.Get("sig"))} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("%s: error shows the SAS signature: %v", name, err)
			}
		}
	}
	if !errors.Is(perr, storage.ErrExist) || !errors.Is(cerr, storage.ErrNotExist) || !errors.Is(xerr, storage.ErrPreconditionFailed) {
		t.Errorf("errors %v; %v; %v", perr, cerr, xerr)
	}
}
