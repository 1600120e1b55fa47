package azure_test

import (
	"context"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/azure"
	"github.com/zbrecover/zbrecover/storage/azure/azuretest"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// TestServiceEndpointFromEnvironment: AZURE_STORAGE_SERVICE_ENDPOINT, the Azure CLI's variable
// for the Blob service endpoint, points zbrecover at it as --azure-endpoint does, and the flag
// wins over the variable. Without either, a URL whose host is not Azure's is refused.
func TestServiceEndpointFromEnvironment(t *testing.T) {
	srv := azuretest.NewServer(t)
	storagetest.MustPut(t, srv.Put, "p/k", []byte("data"))
	for _, env := range []string{azure.EnvConnectionString, azure.EnvAccount, azure.EnvSASToken, azure.EnvServiceEndpoint} {
		t.Setenv(env, "")
	}
	t.Setenv(azure.EnvAccountKey, azuretest.AccountKey)
	const dead = "http://127.0.0.1:1/devstoreaccount1/"
	private := "abfss://" + srv.Container + "@devstoreaccount1.blob.private.example/p"
	for _, tc := range []struct {
		name, env, flag, url string
	}{
		{"the variable", srv.Endpoint, "", srv.URLFor("p")},
		{"the variable, a host that is not Azure's", srv.Endpoint, "", private},
		{"the flag wins", dead, srv.Endpoint, srv.URLFor("p")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(azure.EnvServiceEndpoint, tc.env)
			b := open(t, srv, tc.url, func(cfg *storage.Config) { cfg.Credentials, cfg.AzureEndpoint = nil, tc.flag })
			if o, err := b.Stat(context.Background(), "k"); err != nil || o.Size != 4 {
				t.Errorf("Stat = %+v, %v", o, err)
			}
		})
	}
	t.Setenv(azure.EnvServiceEndpoint, "")
	loc, err := storage.Parse(private)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := azure.New(context.Background(), loc, storage.Config{}); err == nil || !strings.Contains(err.Error(), azure.EnvServiceEndpoint) {
		t.Errorf("a host that is not Azure's, no endpoint configured: %v, want a refusal naming %s", err, azure.EnvServiceEndpoint)
	}
}
