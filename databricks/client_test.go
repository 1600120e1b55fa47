package databricks

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/schemadiff"
)

const goodToken = "dapi0123456789abcdef0123456789abcdef"

// cleanEnv isolates a test from the machine's Databricks and cloud settings.
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "DATABRICKS_") || strings.HasPrefix(k, "ARM_") ||
			strings.HasPrefix(k, "AZURE_") || strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "GOOGLE_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PATH", "") // keep the SDK from running az or databricks CLIs for auth
}

func ordersTable(srv *uctest.Server) uctest.Table {
	s := schemadiff.Schema{Fields: []schemadiff.Field{
		{Name: "id", Type: schemadiff.LongType, Nullable: false},
		{Name: "customer", Type: schemadiff.StringType, Nullable: true},
		{Name: "amount", Type: schemadiff.DecimalType(18, 2), Nullable: true},
		{Name: "ts", Type: schemadiff.TimestampNTZType, Nullable: true},
	}}
	return srv.AddTable(uctest.Table{
		Catalog: "main", Schema: "sales", Name: "orders",
		StorageLocation: "s3://lake/tables/orders",
		Columns:         uctest.ColumnsFromSchema(s),
	})
}

func newFake(t *testing.T) *uctest.Server {
	t.Helper()
	srv := uctest.New(goodToken)
	t.Cleanup(srv.Close)
	return srv
}

func TestProfileFromConfigFile(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	ordersTable(srv)
	cfgFile := filepath.Join(t.TempDir(), "databrickscfg")
	content := "[DEFAULT]\nhost = http://127.0.0.1:9\ntoken = wrong-default-token\n\n" +
		"[staging]\nhost = " + srv.URL + "\ntoken = " + goodToken + "\nwarehouse_id = abc123\n"
	if err := os.WriteFile(cfgFile, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("flag", func(t *testing.T) {
		c, err := NewClient(ctx, Options{Profile: "staging", ConfigFile: cfgFile})
		if err != nil {
			t.Fatal(err)
		}
		if c.Host() != srv.URL || c.AuthType() != "pat" {
			t.Errorf("host %q auth %q, want %q pat", c.Host(), c.AuthType(), srv.URL)
		}
		ti, err := c.Table(ctx, "main.sales.orders")
		if err != nil {
			t.Fatal(err)
		}
		if ti.StorageLocation != "s3://lake/tables/orders" {
			t.Errorf("storage location %q", ti.StorageLocation)
		}
		if got, err := c.HTTPPath(); err != nil || got != "/sql/1.0/warehouses/abc123" {
			t.Errorf("http path from the profile's warehouse_id = %q, %v", got, err)
		}
	})
	t.Run("env", func(t *testing.T) {
		t.Setenv("DATABRICKS_CONFIG_FILE", cfgFile)
		t.Setenv("DATABRICKS_CONFIG_PROFILE", "staging")
		c, err := NewClient(ctx, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Table(ctx, "main.sales.orders"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("missing profile", func(t *testing.T) {
		_, err := NewClient(ctx, Options{Profile: "prod", ConfigFile: cfgFile})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "prod") {
			t.Fatalf("err = %v, want ErrConfig naming the profile", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "nope.cfg")
		_, err := NewClient(ctx, Options{Profile: "staging", ConfigFile: missing})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), missing) {
			t.Fatalf("err = %v, want ErrConfig naming the file", err)
		}
	})
	t.Run("default profile token is not printed", func(t *testing.T) {
		// The DEFAULT profile points at a closed port; its token must not leak into errors.
		_, err := NewClient(ctx, Options{ConfigFile: cfgFile, RetryTimeout: time.Second})
		if err != nil && strings.Contains(err.Error(), "wrong-default-token") {
			t.Fatalf("token leaked: %v", err)
		}
	})
}

// TestProfileMistakes: a profile the config file lacks lists its profiles with the one
// probably meant; a profile named while the config file is missing names the file, and the
// Databricks variables the environment sets (never their values) with how to use them.
func TestProfileMistakes(t *testing.T) {
	ctx := context.Background()
	cfgFile := filepath.Join(t.TempDir(), "databrickscfg")
	content := "[DEFAULT]\nhost = http://127.0.0.1:9\ntoken = t0\n\n[prod]\nhost = http://127.0.0.1:9\ntoken = t1\n\n[staging]\nhost = http://127.0.0.1:9\ntoken = t2\n"
	if err := os.WriteFile(cfgFile, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("typo", func(t *testing.T) {
		cleanEnv(t)
		_, err := NewClient(ctx, Options{Profile: "prdo", ConfigFile: cfgFile})
		want := "databricks configuration: --profile prdo: the config file " + cfgFile + ` has no profile "prdo"; did you mean "prod"? ` +
			"Its profiles: DEFAULT, prod, staging. Name one of them, or add this one with `databricks configure --profile prdo`"
		if !errors.Is(err, ErrConfig) || err.Error() != want {
			t.Fatalf("got  %v\nwant %s", err, want)
		}
	})
	t.Run("typo from the environment", func(t *testing.T) {
		cleanEnv(t)
		t.Setenv("DATABRICKS_CONFIG_FILE", cfgFile)
		t.Setenv("DATABRICKS_CONFIG_PROFILE", "stagign")
		_, err := NewClient(ctx, Options{})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `DATABRICKS_CONFIG_PROFILE=stagign: the config file`) ||
			!strings.Contains(err.Error(), `did you mean "staging"?`) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("no config file, settings in the environment", func(t *testing.T) {
		cleanEnv(t)
		missing := filepath.Join(t.TempDir(), "nope.cfg")
		t.Setenv("DATABRICKS_CONFIG_FILE", missing)
		t.Setenv("DATABRICKS_HOST", "http://127.0.0.1:9")
		t.Setenv("DATABRICKS_TOKEN", "dapi-secret-value")
		_, err := NewClient(ctx, Options{Profile: "prod"})
		want := "databricks configuration: --profile prod names a profile of the config file " + missing + ", which does not exist " +
			"(DATABRICKS_CONFIG_FILE names it). The environment sets DATABRICKS_HOST, DATABRICKS_TOKEN: to use those settings, " +
			"run without --profile; to use the profile, create it with `databricks configure --profile prod`"
		if !errors.Is(err, ErrConfig) || err.Error() != want {
			t.Fatalf("got  %v\nwant %s", err, want)
		}
	})
	t.Run("no config file, nothing in the environment", func(t *testing.T) {
		cleanEnv(t)
		_, err := NewClient(ctx, Options{Profile: "prod"})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "/.databrickscfg, which does not exist: create it with `databricks configure --profile prod`") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestMissingHost(t *testing.T) {
	cleanEnv(t)
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	_, err := NewClient(context.Background(), Options{})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("err = %v, want ErrConfig", err)
	}
	if !strings.Contains(err.Error(), "DATABRICKS_HOST") {
		t.Errorf("error does not name DATABRICKS_HOST: %v", err)
	}
	if strings.Contains(err.Error(), goodToken) {
		t.Errorf("token leaked: %v", err)
	}
}

func TestMissingCredentials(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	t.Setenv("DATABRICKS_HOST", srv.URL)
	_, err := NewClient(context.Background(), Options{RetryTimeout: time.Second})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("err = %v, want ErrConfig", err)
	}
	for _, want := range []string{"DATABRICKS_TOKEN", "DATABRICKS_CLIENT_ID", srv.URL} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s: %v", want, err)
		}
	}
}

func TestWrongToken(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			cleanEnv(t)
			srv := newFake(t)
			srv.SetInvalidTokenStatus(status)
			ordersTable(srv)
			const wrong = "dapifffffffffffffffffffffffffff0"
			t.Setenv("DATABRICKS_HOST", srv.URL)
			t.Setenv("DATABRICKS_TOKEN", wrong)
			c, err := NewClient(context.Background(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Table(context.Background(), "main.sales.orders")
			if !errors.Is(err, ErrUnauthenticated) {
				t.Fatalf("err = %v, want ErrUnauthenticated", err)
			}
			msg := err.Error()
			if strings.Contains(msg, wrong) {
				t.Fatalf("token leaked: %s", msg)
			}
			if !strings.Contains(msg, "DATABRICKS_TOKEN") || !strings.Contains(msg, "pat") {
				t.Errorf("error gives no hint: %s", msg)
			}
		})
	}
}

func TestTableErrors(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	ordersTable(srv)
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "hr", Name: "salaries", StorageLocation: "s3://lake/hr"})
	srv.Deny("main.hr.salaries")
	t.Setenv("DATABRICKS_HOST", srv.URL)
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	c, err := NewClient(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	_, err = c.Table(ctx, "main.sales.missing")
	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrPermissionDenied) {
		t.Errorf("missing table: err = %v, want ErrNotFound", err)
	}
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.ErrorCode != "TABLE_DOES_NOT_EXIST" {
		t.Errorf("missing table: %#v", ae)
	}
	if err != nil && !strings.Contains(err.Error(), "main.sales.missing") {
		t.Errorf("error does not name the table: %v", err)
	}

	_, err = c.Table(ctx, "main.hr.salaries")
	if !errors.Is(err, ErrPermissionDenied) {
		t.Errorf("denied table: err = %v, want ErrPermissionDenied", err)
	}
	if err != nil && !strings.Contains(err.Error(), "USE SCHEMA") {
		t.Errorf("denied table: no privilege hint: %v", err)
	}

	if _, err := c.Table(ctx, "sales.orders"); err == nil || !strings.Contains(err.Error(), "three parts") {
		t.Errorf("two-part name: err = %v", err)
	}

	// Backquoted names and case differences resolve to the same table.
	ti, err := c.Table(ctx, "`main`.`Sales`.orders")
	if err != nil {
		t.Fatal(err)
	}
	if ti.Name.String() != "main.sales.orders" || ti.TableID == "" || ti.TableType != "MANAGED" || ti.DataSourceFormat != "DELTA" {
		t.Errorf("table info %+v", ti)
	}
	if err := ti.CheckRecoverable(); err != nil {
		t.Errorf("CheckRecoverable: %v", err)
	}
	root, err := ti.Root()
	if err != nil || root.Scheme != "s3" || root.Bucket != "lake" || root.Path != "tables/orders" {
		t.Errorf("root %+v, %v", root, err)
	}
}

// TestTableNotFoundSuggests: a table Unity Catalog does not know gets the names the identity
// can see near it, from one list of its schema (of its catalog when the schema is not found,
// of the catalogs when the catalog is not found), the closest first.
func TestTableNotFoundSuggests(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	ordersTable(srv)
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "customers", StorageLocation: "s3://lake/customers"})
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "refunds", StorageLocation: "s3://lake/refunds"})
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	c, err := NewClient(context.Background(), Options{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct{ name, want string }{
		{"main.sales.ordres", "get table main.sales.ordres: not found (HTTP 404 TABLE_DOES_NOT_EXIST): Table 'main.sales.ordres' does not exist; " +
			"did you mean main.sales.orders? (tables of main.sales the identity can see: 3)"},
		{"main.sales.invoices", "; no table of main.sales has a name close to invoices; its tables: customers, orders, refunds"},
		{"main.salse.orders", "; the schema main.salse is not found either (Unity Catalog also answers not found when the identity lacks " +
			"USE CATALOG or USE SCHEMA); did you mean main.sales?"},
		{"mian.sales.orders", "; the catalog mian is not found either (Unity Catalog also answers not found when the identity lacks USE CATALOG); did you mean main?"},
	} {
		_, err := c.Table(ctx, tc.name)
		if !errors.Is(err, ErrNotFound) || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%s:\ngot  %v\nwant …%s", tc.name, err, tc.want)
		}
	}
}

func TestBadHost(t *testing.T) {
	cleanEnv(t)
	t.Run("not a workspace", func(t *testing.T) {
		web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><body>hello</body></html>"))
		}))
		defer web.Close()
		t.Setenv("DATABRICKS_HOST", web.URL)
		t.Setenv("DATABRICKS_TOKEN", goodToken)
		c, err := NewClient(context.Background(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Table(context.Background(), "main.sales.orders")
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "DATABRICKS_HOST") {
			t.Fatalf("err = %v, want ErrUnreachable with a host hint", err)
		}
	})
	t.Run("nothing listening", func(t *testing.T) {
		l := httptest.NewServer(http.NotFoundHandler())
		addr := l.URL
		l.Close()
		t.Setenv("DATABRICKS_HOST", addr)
		t.Setenv("DATABRICKS_TOKEN", goodToken)
		c, err := NewClient(context.Background(), Options{RetryTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Table(context.Background(), "main.sales.orders")
		if !errors.Is(err, ErrUnreachable) || strings.Contains(err.Error(), goodToken) {
			t.Fatalf("err = %v, want ErrUnreachable", err)
		}
	})
}

func TestOAuthM2M(t *testing.T) {
	cleanEnv(t)
	srv := uctest.New("") // no personal access token is valid
	defer srv.Close()
	ordersTable(srv)
	const secret = "m2m-client-secret-value-123"
	srv.EnableM2M("my-sp", secret)
	t.Setenv("DATABRICKS_HOST", srv.URL)
	t.Setenv("DATABRICKS_CLIENT_ID", "my-sp")
	t.Setenv("DATABRICKS_CLIENT_SECRET", secret)
	var logBuf bytes.Buffer
	c, err := NewClient(context.Background(), Options{Log: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	if c.AuthType() != "oauth-m2m" {
		t.Errorf("auth type %q", c.AuthType())
	}
	if _, err := c.Table(context.Background(), "main.sales.orders"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logBuf.String(), secret) {
		t.Errorf("client secret in the log")
	}

	t.Setenv("DATABRICKS_CLIENT_SECRET", "not-the-secret-000")
	_, err = NewClient(context.Background(), Options{RetryTimeout: time.Second})
	if !errors.Is(err, ErrUnauthenticated) || strings.Contains(err.Error(), "not-the-secret-000") {
		t.Errorf("wrong client secret: err = %v", err)
	}
}

func TestTableSchemaFromUC(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	want := schemadiff.Schema{Fields: []schemadiff.Field{
		{Name: "id", Type: schemadiff.LongType, PhysicalName: "col-5f1b", ID: 1},
		{Name: "amount", Type: schemadiff.DecimalType(38, 6), Nullable: true, PhysicalName: "col-77aa", ID: 2},
		{Name: "tags", Type: schemadiff.ArrayType(schemadiff.StringType, true), Nullable: true, PhysicalName: "col-0001", ID: 3},
		{Name: "attrs", Type: schemadiff.MapType(schemadiff.StringType, schemadiff.LongType, false), Nullable: true, PhysicalName: "col-0002", ID: 4},
		{Name: "addr", Type: schemadiff.StructType(
			schemadiff.Field{Name: "city", Type: schemadiff.StringType, Nullable: true},
			schemadiff.Field{Name: "zip code", Type: schemadiff.IntegerType},
		), Nullable: true, PhysicalName: "col-0003", ID: 5},
		{Name: "at", Type: schemadiff.TimestampType, Nullable: true, PhysicalName: "col-0004", ID: 6},
		{Name: "local_at", Type: schemadiff.TimestampNTZType, Nullable: true, PhysicalName: "col-0005", ID: 7},
		{Name: "payload", Type: schemadiff.VariantType, Nullable: true, PhysicalName: "col-0006", ID: 8},
	}}
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "events", StorageLocation: "gs://b/events",
		Columns: uctest.ColumnsFromSchema(want)})
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "odd", StorageLocation: "gs://b/odd",
		Columns: []uctest.Column{{Name: "i", TypeJSON: `{"name":"i","type":"interval day to second","nullable":true,"metadata":{}}`}}})
	t.Setenv("DATABRICKS_HOST", srv.URL)
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	c, err := NewClient(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ti, err := c.Table(context.Background(), "main.sales.events")
	if err != nil {
		t.Fatal(err)
	}
	if len(ti.Schema.Fields) != len(want.Fields) {
		t.Fatalf("got %d fields, want %d", len(ti.Schema.Fields), len(want.Fields))
	}
	for i, f := range ti.Schema.Fields {
		w := want.Fields[i]
		if f.Name != w.Name || f.Nullable != w.Nullable || !f.Type.Equal(w.Type) || f.PhysicalName != w.PhysicalName || f.ID != w.ID {
			t.Errorf("field %d = %s %s null=%v phys=%s id=%d, want %s %s null=%v phys=%s id=%d",
				i, f.Name, f.Type, f.Nullable, f.PhysicalName, f.ID, w.Name, w.Type, w.Nullable, w.PhysicalName, w.ID)
		}
	}
	_, err = c.Table(context.Background(), "main.sales.odd")
	if err == nil || !strings.Contains(err.Error(), "interval") {
		t.Errorf("unsupported type: err = %v", err)
	}
}
