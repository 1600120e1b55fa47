package azure_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/azure"
	"github.com/zbrecover/zbrecover/storage/azure/azuretest"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// clearAzureEnv removes every Azure credential of the environment, and the CLIs from PATH.
func clearAzureEnv(t *testing.T) {
	t.Helper()
	for _, env := range []string{azure.EnvConnectionString, azure.EnvAccountKey, azure.EnvAccount, azure.EnvSASToken,
		"AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH",
		"AZURE_FEDERATED_TOKEN_FILE", "AZURE_USERNAME", "AZURE_PASSWORD", "IDENTITY_ENDPOINT", "IDENTITY_HEADER",
		"MSI_ENDPOINT", "MSI_SECRET", "IMDS_ENDPOINT"} {
		t.Setenv(env, "")
	}
}

// containerSAS signs a SAS for srv's container with perms, valid from start to expiry.
func containerSAS(t *testing.T, srv *azuretest.Server, perms sas.ContainerPermissions, start, expiry time.Time) string {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(azuretest.Account, azuretest.AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.BlobSignatureValues{Protocol: sas.ProtocolHTTPSandHTTP, StartTime: start, ExpiryTime: expiry,
		ContainerName: srv.Container, Permissions: perms.String()}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	return qp.Encode()
}

func checkMessage(t *testing.T, err error, want []string, secrets ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	t.Log(msg)
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message does not say %q: %s", w, msg)
		}
	}
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			t.Errorf("secret in message: %s", msg)
		}
	}
	if storage.IsRetryable(err) || errors.Is(err, storage.ErrNotExist) {
		t.Errorf("retryable %v, not-exist %v; want a permanent error: %s", storage.IsRetryable(err), errors.Is(err, storage.ErrNotExist), msg)
	}
}

func list(b storage.Backend) error {
	return b.List(context.Background(), "", func(storage.ObjectInfo) error { return nil })
}

// Refusals by Azurite: a wrong account key, a SAS without the list permission, an expired SAS
// and a missing container each say what to check.
func TestHintAzurite(t *testing.T) {
	srv := azuretest.NewServer(t)
	now := time.Now().UTC()
	cfg := storage.Config{AzureEndpoint: srv.Endpoint, MaxAttempts: 1}
	t.Run("wrong key", func(t *testing.T) {
		clearAzureEnv(t)
		wrong := "AAAA" + azuretest.AccountKey[4:]
		t.Setenv(azure.EnvAccountKey, wrong)
		b := storagetest.OpenURL(t, azure.New, srv.URLFor("p"), cfg)
		checkMessage(t, list(b), []string{"the account key was refused", azure.EnvAccountKey, `account "devstoreaccount1"`}, wrong)
	})
	t.Run("SAS without list", func(t *testing.T) {
		clearAzureEnv(t)
		tok := containerSAS(t, srv, sas.ContainerPermissions{Read: true}, now.Add(-time.Hour), now.Add(time.Hour))
		t.Setenv(azure.EnvSASToken, tok)
		b := storagetest.OpenURL(t, azure.New, srv.URLFor("p"), cfg)
		checkMessage(t, list(b), []string{"AuthorizationPermissionMismatch", "does not allow list", "sp=r,", `list needs "l"`,
			azure.EnvSASToken}, tok[strings.Index(tok, "sig=")+4:])
	})
	t.Run("expired SAS", func(t *testing.T) {
		clearAzureEnv(t)
		tok := containerSAS(t, srv, sas.ContainerPermissions{Read: true, List: true}, now.Add(-2*time.Hour), now.Add(-time.Hour))
		t.Setenv(azure.EnvSASToken, tok)
		b := storagetest.OpenURL(t, azure.New, srv.URLFor("p"), cfg)
		checkMessage(t, list(b), []string{"the SAS token (" + azure.EnvSASToken + ") expired at " + now.Add(-time.Hour).Format("2006-01-02T15"),
			"issue a new one"}, tok[strings.Index(tok, "sig=")+4:])
		_, err := b.Stat(context.Background(), "k") // HEAD: the code comes in a header
		checkMessage(t, err, []string{"expired at"})
	})
	t.Run("missing container", func(t *testing.T) {
		clearAzureEnv(t)
		t.Setenv(azure.EnvAccountKey, azuretest.AccountKey)
		b := storagetest.OpenURL(t, azure.New, "abfss://no-such-container@"+azuretest.Account+".dfs.core.windows.net/p", cfg)
		checkMessage(t, list(b), []string{`container "no-such-container" does not exist in account "devstoreaccount1"`,
			"check the container and account in the URL"}, azuretest.AccountKey)
	})
}

// AuthenticationFailed, which Azure (not Azurite) answers to a wrong key or SAS signature,
// says which secret to check, without it.
func TestHintAuthenticationFailed(t *testing.T) {
	t.Run("key", func(t *testing.T) {
		clearAzureEnv(t)
		srv := azuretest.NewRefuser(t, "bad-key")
		t.Setenv(azure.EnvAccountKey, azuretest.AccountKey)
		b := storagetest.OpenURL(t, azure.New, "abfss://c@"+azuretest.Account+".dfs.core.windows.net/p",
			storage.Config{AzureEndpoint: srv.Endpoint, MaxAttempts: 3})
		checkMessage(t, list(b), []string{"the account key was refused", "AuthenticationFailed", azure.EnvAccountKey}, azuretest.AccountKey)
		if n := srv.Requests.Load(); n != 1 {
			t.Errorf("%d requests, want 1 (a refusal is not retried)", n)
		}
	})
	t.Run("SAS signature", func(t *testing.T) {
		clearAzureEnv(t)
		srv := azuretest.NewRefuser(t, "bad-sas-signature")
		const sig = "c2lnbmF0dXJlLXRoYXQtZG9lcy1ub3QtbWF0Y2g%3D"
		exp := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
		t.Setenv(azure.EnvSASToken, "sv=2023-11-03&sr=c&sp=rl&se="+exp+"&sig="+sig)
		b := storagetest.OpenURL(t, azure.New, "abfss://c@"+azuretest.Account+".dfs.core.windows.net/p",
			storage.Config{AzureEndpoint: srv.Endpoint, MaxAttempts: 1})
		checkMessage(t, list(b), []string{"the SAS token's signature was refused", "AuthenticationFailed", azure.EnvSASToken}, sig, "c2lnbmF0dXJlLXRoYXQ")
	})
}

// Without any credential, the default credential finds no identity: the error says how to
// give one, before any request reaches the service.
func TestHintNoCredential(t *testing.T) {
	clearAzureEnv(t)
	t.Setenv("PATH", "")
	t.Setenv("HOME", t.TempDir())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	b := storagetest.OpenURL(t, azure.New, "abfss://c@"+azuretest.Account+".dfs.core.windows.net/p",
		storage.Config{AzureEndpoint: "https://" + addr + "/" + azuretest.Account + "/", MaxAttempts: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a guard against hanging only
	defer cancel()
	err = b.List(ctx, "", func(storage.ObjectInfo) error { return nil })
	checkMessage(t, err, []string{"no Azure credentials found", "az login", azure.EnvAccountKey, azure.EnvSASToken})
}
