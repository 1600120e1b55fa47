package cmd

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

const ucToken = "dapi00000000000000000000000000000001"

// databricksEnv isolates the test from the machine's Databricks and cloud settings and points
// it at a fake workspace.
func databricksEnv(t *testing.T) *uctest.Server {
	t.Helper()
	uctest.Isolate(t)
	srv := uctest.New(ucToken)
	t.Cleanup(srv.Close)
	t.Setenv("DATABRICKS_HOST", srv.URL)
	t.Setenv("DATABRICKS_TOKEN", ucToken)
	return srv
}

// wiredFactory returns a factory with the root command's persistent flags parsed from args.
func wiredFactory(t *testing.T, args ...string) (*Factory, func() string) {
	t.Helper()
	io, _, _, errOut := iostreams.Test()
	f := NewFactory(io)
	root := NewRootCmd(f)
	if err := root.PersistentFlags().Parse(args); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Databricks().Close() })
	return f, errOut.String
}

func TestDatabricksFlags(t *testing.T) {
	f, _ := wiredFactory(t, "--profile", "staging", "--warehouse-id", "wh1", "--http-path", "/sql/1.0/warehouses/wh2", "--storage-auth", "vended")
	d := f.Databricks()
	if d.Profile != "staging" || d.WarehouseID != "wh1" || d.HTTPPath != "/sql/1.0/warehouses/wh2" || d.StorageAuth != "vended" {
		t.Fatalf("options %+v", d)
	}
	if f.workspace() == nil {
		t.Fatal("no Databricks workspace installed")
	}
}

func TestResolveTableToLocalRoot(t *testing.T) {
	srv := databricksEnv(t)
	root := t.TempDir()
	p := filepath.Join(root, "_zerobus", "table_rejected_parquets", "f1.parquet")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "orders", StorageLocation: "file://" + filepath.ToSlash(root),
		Columns: uctest.ColumnsFromSchema(schemadiff.Schema{Fields: []schemadiff.Field{{Name: "id", Type: schemadiff.LongType}}})})
	f, _ := wiredFactory(t, "-vv")
	rt, err := f.openTarget(context.Background(), &TargetOptions{Table: "main.sales.orders"}, "READ")
	if err != nil {
		t.Fatal(err)
	}
	if rt.TableName() != "main.sales.orders" || rt.TableID == "" {
		t.Errorf("table %q (id %q)", rt.TableName(), rt.TableID)
	}
	var keys []string
	if err := rt.Root.List(context.Background(), "_zerobus/", func(o storage.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "_zerobus/table_rejected_parquets/f1.parquet" {
		t.Errorf("listed %v", keys)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "temporary-table-credentials") {
			t.Errorf("credentials vended for a local root")
		}
	}
}

func TestResolveTableErrors(t *testing.T) {
	srv := databricksEnv(t)
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "orders", StorageLocation: "s3://lake/orders"})
	srv.DenyVending("main.sales.orders")
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "v", TableType: "VIEW"})
	ctx := context.Background()

	f, _ := wiredFactory(t)
	_, err := f.openTarget(ctx, &TargetOptions{Table: "main.sales.missing"}, "READ")
	if !errors.Is(err, databricks.ErrNotFound) {
		t.Errorf("missing table: %v", err)
	}
	_, err = f.openTarget(ctx, &TargetOptions{Table: "main.sales.v"}, "READ")
	if !errors.Is(err, databricks.ErrUnsupported) || !strings.Contains(err.Error(), "view") {
		t.Errorf("view: %v", err)
	}
	// No AWS credentials in the environment: auto vends, and the refusal names the privilege.
	_, err = f.openTarget(ctx, &TargetOptions{Table: "main.sales.orders"}, "READ_WRITE")
	if !errors.Is(err, databricks.ErrPermissionDenied) || !strings.Contains(err.Error(), "EXTERNAL USE SCHEMA") ||
		!strings.Contains(err.Error(), "no s3 credentials were found") {
		t.Errorf("vending refused: %v", err)
	}
	reqs := srv.Requests()
	if last := reqs[len(reqs)-1]; last.Operation != "READ_WRITE" {
		t.Errorf("cleanup access vended as %q", last.Operation)
	}

	// With AWS keys in the environment, auto does not vend.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAFROMENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret-from-env")
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	f2, errOut := wiredFactory(t, "-v", "--s3-region", "us-east-1", "--s3-endpoint", closed.URL)
	_, err = f2.openTarget(ctx, &TargetOptions{Table: "main.sales.orders"}, "READ")
	if errors.Is(err, databricks.ErrPermissionDenied) {
		t.Errorf("vended although AWS credentials are configured: %v", err)
	}
	if !strings.Contains(errOut(), "AWS_ACCESS_KEY_ID") {
		t.Errorf("the -v log does not say why: %q", errOut())
	}

	f3, _ := wiredFactory(t, "--storage-auth", "keys")
	_, err = f3.openTarget(ctx, &TargetOptions{Table: "main.sales.orders"}, "READ")
	var fe *FlagError
	if !errors.As(err, &fe) {
		t.Errorf("bad --storage-auth: %v", err)
	}
}

func TestResolveTableNoHost(t *testing.T) {
	databricksEnv(t)
	t.Setenv("DATABRICKS_HOST", "")
	f, _ := wiredFactory(t)
	_, err := f.openTarget(context.Background(), &TargetOptions{Table: "main.sales.orders"}, "READ")
	if !errors.Is(err, databricks.ErrConfig) || !strings.Contains(err.Error(), "DATABRICKS_HOST") || strings.Contains(err.Error(), ucToken) {
		t.Errorf("err = %v", err)
	}
}

// akidRecorder forwards to the S3 emulator and records the access key id of each request's
// SigV4 Authorization header.
type akidRecorder struct {
	next  http.Handler
	mu    sync.Mutex
	akids map[string]int
}

var akidRE = regexp.MustCompile(`Credential=([^/]+)/`)

func (a *akidRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	if m := akidRE.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		a.akids[m[1]]++
	} else {
		a.akids["(unsigned)"]++
	}
	a.mu.Unlock()
	a.next.ServeHTTP(w, r)
}

func TestResolveTableVendedS3(t *testing.T) {
	srv := databricksEnv(t)
	s3srv := s3test.NewServer(t)
	if err := s3srv.Put("tables/orders/_zerobus/table_rejected_parquets/f1.parquet", []byte("PAR1-data-PAR1")); err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(s3srv.URL)
	rec := &akidRecorder{next: httputil.NewSingleHostReverseProxy(target), akids: map[string]int{}}
	proxy := httptest.NewServer(rec)
	defer proxy.Close()

	tbl := srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "orders", StorageLocation: s3srv.URLFor("tables/orders")})
	const vendedSecret = "vended-secret-access-key-0001"
	srv.SetCredentials("main.sales.orders", uctest.Credentials{
		AWSAccessKeyID: "AKIAVENDEDBYUC", AWSSecretAccessKey: vendedSecret, AWSSessionToken: "vended-session-token-0001",
	})
	f, errOut := wiredFactory(t, "-vv", "--s3-endpoint", proxy.URL, "--s3-region", s3test.Region)
	ctx := context.Background()
	rt, err := f.openTarget(ctx, &TargetOptions{Table: "main.sales.orders"}, "READ")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := rt.Root.List(ctx, "_zerobus/table_rejected_parquets/", func(o storage.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 {
		t.Fatalf("listed %v", keys)
	}
	data, err := storage.ReadAll(ctx, rt.Root, keys[0], 0, -1)
	if err != nil || string(data) != "PAR1-data-PAR1" {
		t.Fatalf("read %q, %v", data, err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.akids) != 1 || rec.akids["AKIAVENDEDBYUC"] == 0 {
		t.Errorf("requests signed with %v, want only the vended key", rec.akids)
	}
	if n := srv.VendCount(tbl.TableID); n != 1 {
		t.Errorf("vended %d times, want 1", n)
	}
	// inspect opens the target twice (the files, then the Delta log for the schema): the
	// credentials vended for the first serve the second.
	rec.mu.Unlock()
	if _, err := f.openTarget(ctx, &TargetOptions{Table: "main.sales.orders"}, "READ"); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	if n := srv.VendCount(tbl.TableID); n != 1 {
		t.Errorf("after a second open of the target: vended %d times, want 1", n)
	}
	if log := errOut(); strings.Contains(log, vendedSecret) || strings.Contains(log, ucToken) || !strings.Contains(log, "credential vending") {
		t.Errorf("-vv log leaks a secret or does not say vending was chosen:\n%s", log)
	}
}

// TestStorageAuthFlagChecked: --storage-auth is checked whatever the target, so a typo or a
// vended request that cannot apply (a storage URL has no table to vend for) is a usage error
// instead of being silently ignored.
func TestStorageAuthFlagChecked(t *testing.T) {
	databricksEnv(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"ls", dir, "--storage-auth", "keys"}, ExitUsage, "want auto, vended or default"},
		{[]string{"inspect", dir, "--storage-auth", "Vendd"}, ExitUsage, "want auto, vended or default"},
		{[]string{"inspect", dir, "--storage-auth", "vended"}, ExitUsage, "needs a table name"},
		{[]string{"preview", "--root", dir, "--storage-auth", "vended"}, ExitUsage, "needs a table name"},
		{[]string{"ls", dir, "--storage-auth", "vended"}, ExitUsage, "needs a table name"},
		{[]string{"ls", dir, "--storage-auth", "default"}, ExitOK, ""},
		{[]string{"ls", dir, "--storage-auth", "AUTO"}, ExitOK, ""},
		{[]string{"version", "--storage-auth", "vended"}, ExitOK, ""},
	} {
		code, _, errOut := run(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d saying %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}
