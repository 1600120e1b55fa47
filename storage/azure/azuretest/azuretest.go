// Package azuretest runs the Azurite blob emulator for tests and puts a request-counting
// front (storagetest.Front) before it.
//
// Azurite is a Node.js program: scripts/azurite.sh installs azurite@3.37.0 into
// ${ZBRECOVER_CACHE:-$HOME/.cache/zbrecover}/azurite-3.37.0 and prints the path of its blob
// main.js. The helper uses $AZURITE_MAIN, else that default path. When neither exists the
// tests are skipped, except with CI=true, where they fail.
//
// One Azurite process serves a whole test binary: it starts with the first NewServer and is
// stopped by Main, which a package's TestMain calls:
//
//	func TestMain(m *testing.M) { azuretest.Main(m) }
//
//	func TestX(t *testing.T) {
//		srv := azuretest.NewServer(t) // a fresh container
//		srv.Put("root/f.parquet", data)
//		b, err := all.Registry().Open(ctx, srv.URLFor("root"), srv.Config())
//	}
package azuretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// Azurite's well-known development account.
const (
	Account    = "devstoreaccount1"
	AccountKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	// Version is the Azurite release the tests are written against.
	Version = "3.37.0"
)

// MainPath returns where Azurite's blob main.js is expected: $AZURITE_MAIN, else the cache
// folder scripts/azurite.sh installs into.
func MainPath() string {
	if p := os.Getenv("AZURITE_MAIN"); p != "" {
		return p
	}
	cache := os.Getenv("ZBRECOVER_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "zbrecover")
	}
	return filepath.Join(cache, "azurite-"+Version, "node_modules", "azurite", "dist", "src", "blob", "main.js")
}

// Azurite is a running emulator process.
type Azurite struct {
	// Endpoint is the blob service URL, http://127.0.0.1:<port>/devstoreaccount1/.
	Endpoint string

	cmd    *exec.Cmd
	output *bytes.Buffer
	done   chan struct{}
}

// ErrNotInstalled is returned by Start when node or Azurite is missing.
var ErrNotInstalled = errors.New("azurite is not installed: run scripts/azurite.sh and export AZURITE_MAIN")

// Start runs Azurite on a free port and waits until it answers. Call Stop when done.
func Start() (*Azurite, error) {
	main := MainPath()
	if _, err := os.Stat(main); err != nil {
		return nil, fmt.Errorf("%w (looked for %s)", ErrNotInstalled, main)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("%w: node not found", ErrNotInstalled)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		a, err := start(node, main)
		if err == nil {
			return a, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func start(node, main string) (*Azurite, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	a := &Azurite{
		Endpoint: fmt.Sprintf("http://127.0.0.1:%d/%s/", port, Account),
		output:   &bytes.Buffer{},
		done:     make(chan struct{}),
	}
	// node runs main.js directly (never through npx, whose child would outlive a kill).
	a.cmd = exec.Command(node, main, "--inMemoryPersistence", "--blobHost", "127.0.0.1",
		"--blobPort", fmt.Sprint(port), "--skipApiVersionCheck", "--loose", "--disableTelemetry", "--silent")
	a.cmd.Stdout, a.cmd.Stderr = a.output, a.output
	// The emulator dies with the test binary even if Stop is never called.
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := a.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start azurite: %w", err)
	}
	go func() {
		_ = a.cmd.Wait()
		close(a.done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-a.done:
			return nil, fmt.Errorf("azurite exited during start: %s", a.output.String())
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := http.Get(a.Endpoint)
		if err == nil {
			resp.Body.Close()
			return a, nil
		}
	}
	a.Stop()
	return nil, fmt.Errorf("azurite did not answer on %s within 60s: %s", a.Endpoint, a.output.String())
}

// Stop kills the process and waits for it.
func (a *Azurite) Stop() {
	if a == nil || a.cmd.Process == nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(5 * time.Second):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
}

var shared struct {
	once sync.Once
	a    *Azurite
	err  error
}

// Main runs the package's tests and then stops the shared Azurite, if one was started.
// Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if shared.a != nil {
		shared.a.Stop()
	}
	os.Exit(code)
}

// Shared returns the test binary's Azurite, starting it on first use. Without Azurite it
// skips the test, or fails it when CI=true.
func Shared(t testing.TB) *Azurite {
	t.Helper()
	shared.once.Do(func() { shared.a, shared.err = Start() })
	if shared.err != nil {
		if errors.Is(shared.err, ErrNotInstalled) && os.Getenv("CI") != "true" {
			t.Skipf("skipping Azure tests: %v", shared.err)
		}
		t.Fatalf("azuretest: %v", shared.err)
	}
	return shared.a
}

// Server is one container on the shared Azurite, reached through its own front. Its embedded
// Front offers Counts, ResetCounts, SetLatency and FailNext.
type Server struct {
	*storagetest.Front
	// Endpoint is the front's blob service URL, for storage.Config.AzureEndpoint.
	Endpoint string
	// Container is the container created for this server.
	Container string

	direct *azblob.Client // talks to Azurite itself: no counting, no latency
	cred   *azblob.SharedKeyCredential
}

var _ storagetest.Emulator = (*Server)(nil)

var containers atomic.Int64

// Option configures NewServer.
type Option func(*Server)

// WithLatency delays every request but uploads by d.
func WithLatency(d time.Duration) Option { return func(s *Server) { s.SetLatency(d) } }

// NewServer creates a fresh container on the shared Azurite and a front for it.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	a := Shared(t)
	cred, err := azblob.NewSharedKeyCredential(Account, AccountKey)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := azblob.NewClientWithSharedKeyCredential(a.Endpoint, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{
		Container: fmt.Sprintf("zbr-%d-%d", os.Getpid(), containers.Add(1)),
		direct:    direct,
		cred:      cred,
	}
	if _, err := direct.CreateContainer(context.Background(), s.Container, nil); err != nil {
		t.Fatalf("azuretest: create container: %v", err)
	}
	target, _ := url.Parse(a.Endpoint)
	target.Path = ""
	proxy := httputil.NewSingleHostReverseProxy(target)
	s.Front = storagetest.NewFront(proxy, classify, errorBody)
	ts := httptest.NewServer(s.Front)
	t.Cleanup(ts.Close)
	s.Endpoint = ts.URL + "/" + Account + "/"
	for _, o := range opts {
		o(s)
	}
	return s
}

// URLFor returns the wasbs:// URL of a prefix in the server's container. The account host is
// Azure's; Config's AzureEndpoint sends the requests to the emulator.
func (s *Server) URLFor(prefix string) string {
	return "wasbs://" + s.Container + "@" + Account + ".blob.core.windows.net/" + strings.TrimLeft(prefix, "/")
}

// SAS returns a service SAS for the server's container (read, list, write, delete), valid
// for d: the kind of token Unity Catalog vends. (Azurite refuses blob batches under an
// account SAS, with a 500.)
func (s *Server) SAS(d time.Duration) (string, error) {
	qp, err := sas.BlobSignatureValues{
		Protocol:      sas.ProtocolHTTPSandHTTP,
		StartTime:     time.Now().UTC().Add(-time.Minute),
		ExpiryTime:    time.Now().UTC().Add(d),
		ContainerName: s.Container,
		Permissions:   (&sas.ContainerPermissions{Read: true, List: true, Delete: true, Write: true}).String(),
	}.SignWithSharedKey(s.cred)
	if err != nil {
		return "", err
	}
	return qp.Encode(), nil
}

// Config returns what opens a backend on the emulator: the front's endpoint and a credential
// provider that vends container SAS tokens valid for an hour, as Unity Catalog vends them.
func (s *Server) Config() storage.Config {
	return storage.Config{
		AzureEndpoint: s.Endpoint,
		Credentials: func(context.Context) (storage.Credentials, error) {
			tok, err := s.SAS(time.Hour)
			return storage.Credentials{AzureSASToken: tok, Expires: time.Now().Add(time.Hour)}, err
		},
	}
}

// Put writes a blob into the server's container directly (not through the front).
func (s *Server) Put(key string, data []byte) error {
	_, err := s.direct.UploadBuffer(context.Background(), s.Container, key, data, nil)
	return err
}

// Client returns an azblob client on the emulator (direct, with the account key).
func (s *Server) Client() *azblob.Client { return s.direct }

// ConnectionString returns a connection string for the front.
func (s *Server) ConnectionString() string {
	return "DefaultEndpointsProtocol=http;AccountName=" + Account + ";AccountKey=" + AccountKey +
		";BlobEndpoint=" + strings.TrimSuffix(s.Endpoint, "/") + ";"
}

func classify(r *http.Request) storagetest.Kind {
	q := r.URL.Query()
	parts := strings.SplitN(strings.Trim(r.URL.Path, "/"), "/", 3) // account, container, blob
	isBlob := len(parts) == 3 && parts[2] != ""
	switch {
	case q.Get("comp") == "batch":
		return storagetest.KindBatchDelete
	case q.Get("comp") == "list" && q.Get("restype") == "container":
		return storagetest.KindListPage
	case !isBlob || q.Get("comp") != "" && q.Get("comp") != "block" && q.Get("comp") != "blocklist":
		return storagetest.KindOther
	}
	switch r.Method {
	case http.MethodGet:
		return storagetest.KindGet
	case http.MethodHead:
		return storagetest.KindHead
	case http.MethodDelete:
		return storagetest.KindDelete
	case http.MethodPut:
		return storagetest.KindPut
	}
	return storagetest.KindOther
}

func errorBody(status int) (string, []byte) {
	code := map[int]string{429: "ServerBusy", 500: "InternalError", 503: "ServerBusy", 403: "AuthorizationFailure"}[status]
	if code == "" {
		code = strings.ReplaceAll(http.StatusText(status), " ", "")
	}
	return "application/xml", []byte(`<?xml version="1.0" encoding="utf-8"?><Error><Code>` + code +
		`</Code><Message>injected by azuretest</Message></Error>`)
}
