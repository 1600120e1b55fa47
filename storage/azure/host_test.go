package azure_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/azure"
)

type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return nil, http.ErrHandlerTimeout
}

// A URL whose host is not an Azure storage endpoint is refused before any request, so the SAS
// in the environment goes nowhere; with an explicit endpoint, any host is accepted.
func TestForeignHostRefused(t *testing.T) {
	const sas = "sv=2024-01-01&ss=b&sig=c2VjcmV0LXNhcy1zaWduYXR1cmU%3D"
	t.Setenv(azure.EnvSASToken, sas)
	t.Setenv(azure.EnvConnectionString, "")
	t.Setenv(azure.EnvAccountKey, "")
	for _, raw := range []string{
		"wasbs://c@acct.blob.example.org/x",
		"abfss://c@acct.dfs.attacker.example/x",
		"wasbs://c@acct.blob.core.windows.net.attacker.example/x",
	} {
		loc, err := storage.Parse(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		tr := &countingTransport{}
		_, err = azure.New(context.Background(), loc, storage.Config{Transport: tr, MaxAttempts: 1})
		if err == nil || !strings.Contains(err.Error(), "is not an Azure Blob endpoint") {
			t.Errorf("%s: %v, want a refusal", raw, err)
		}
		if tr.n.Load() != 0 {
			t.Errorf("%s: %d requests sent", raw, tr.n.Load())
		}
		if err != nil && strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("error holds the SAS: %v", err)
		}
	}
	for _, raw := range []string{
		"wasbs://c@acct.blob.core.windows.net/x",
		"abfss://c@acct.dfs.core.chinacloudapi.cn/x",
		"abfss://c@acct.dfs.core.usgovcloudapi.net/x",
	} {
		loc, _ := storage.Parse(raw)
		if _, err := azure.New(context.Background(), loc, storage.Config{Transport: &countingTransport{}}); err != nil {
			t.Errorf("%s: %v", raw, err)
		}
	}
	loc, _ := storage.Parse("wasbs://c@acct.blob.example.org/x")
	if _, err := azure.New(context.Background(), loc, storage.Config{AzureEndpoint: "http://127.0.0.1:1/acct/", Transport: &countingTransport{}}); err != nil {
		t.Errorf("explicit endpoint: %v", err)
	}
	// The environment's secrets are registered with the redactor once a backend is opened.
	if got := redact.String("token " + sas); strings.Contains(got, "c2VjcmV0") || strings.Contains(got, "2024-01-01&ss") {
		t.Errorf("SAS not redacted: %s", got)
	}
}

func TestConnectionStringKeyRegistered(t *testing.T) {
	const key = "QUNDT1VOVEtFWS1mb3ItdGVzdHMtb25seQ=="
	t.Setenv(azure.EnvConnectionString, "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="+key+";EndpointSuffix=core.windows.net")
	loc, _ := storage.Parse("wasbs://c@acct.blob.core.windows.net/x")
	if _, err := azure.New(context.Background(), loc, storage.Config{Transport: &countingTransport{}}); err != nil {
		t.Fatal(err)
	}
	if got := redact.String("the key is " + key); strings.Contains(got, key) {
		t.Errorf("AccountKey not redacted: %s", got)
	}
}
