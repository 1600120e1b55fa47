package tableref

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

const listedToken = "dapi00000000000000000000000000000042"

// TestResolveListed: a listed table is opened from the listing alone (no table lookup), with
// vended READ credentials for a cloud root when the environment has none, the store's own
// access for a local root; a view is refused.
func TestResolveListed(t *testing.T) {
	uctest.Isolate(t)
	uc := uctest.New(listedToken)
	t.Cleanup(uc.Close)
	t.Setenv("DATABRICKS_HOST", uc.URL)
	t.Setenv("DATABRICKS_TOKEN", listedToken)
	s3srv := s3test.NewServer(t)
	if err := s3srv.Put("orders/_zerobus/table_rejected_parquets/a.parquet", []byte("PAR1")); err != nil {
		t.Fatal(err)
	}
	orders := uc.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "orders", StorageLocation: s3srv.URLFor("orders")})
	uc.SetCredentials("main.sales.orders", uctest.Credentials{AWSAccessKeyID: s3test.AccessKeyID, AWSSecretAccessKey: s3test.SecretAccessKey})
	denied := uc.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "hr", StorageLocation: s3srv.URLFor("hr")})
	uc.DenyVending("main.sales.hr")

	r := &Resolver{
		Open: func(ctx context.Context, loc storage.Location, cfg storage.Config) (storage.Backend, error) {
			return all.Registry().OpenLocation(ctx, loc, cfg)
		},
		Config:    func() storage.Config { return storage.Config{S3Endpoint: s3srv.URL, S3Region: s3test.Region} },
		Workspace: NewWorkspace(databricks.Options{}),
		Env:       databricks.OSEnv(),
	}
	ctx := context.Background()
	entry := func(tb uctest.Table) databricks.TableEntry {
		return databricks.TableEntry{Name: databricks.TableName{Catalog: tb.Catalog, Schema: tb.Schema, Table: tb.Name},
			TableID: tb.TableID, TableType: tb.TableType, DataSourceFormat: tb.DataSourceFormat, StorageLocation: tb.StorageLocation}
	}
	tgt, err := r.ResolveListed(ctx, entry(orders), Read)
	if err != nil {
		t.Fatal(err)
	}
	if !tgt.Vended || tgt.TableID != orders.TableID || tgt.TableName() != "main.sales.orders" || tgt.Info != nil {
		t.Errorf("target %+v", tgt)
	}
	n := 0
	if err := tgt.Root.List(ctx, "_zerobus/", func(storage.ObjectInfo) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("listed %d objects with the vended credentials: %v", n, err)
	}
	var vends, gets int
	for _, q := range uc.Requests() {
		switch {
		case q.Operation != "":
			vends++
			if q.Operation != "READ" {
				t.Errorf("vended %s, want READ", q.Operation)
			}
		case strings.HasPrefix(q.Path, "/api/2.1/unity-catalog/tables/"):
			gets++
		}
	}
	if vends != 1 || gets != 0 {
		t.Errorf("%d vending and %d table lookups, want 1 and 0", vends, gets)
	}

	if _, err := r.ResolveListed(ctx, entry(denied), Read); !errors.Is(err, databricks.ErrPermissionDenied) ||
		!strings.Contains(err.Error(), "main.sales.hr") {
		t.Errorf("vending denied: %v", err)
	}
	view := databricks.TableEntry{Name: databricks.TableName{Catalog: "main", Schema: "sales", Table: "v"}, TableType: "VIEW"}
	if _, err := r.ResolveListed(ctx, view, Read); !errors.Is(err, databricks.ErrUnsupported) {
		t.Errorf("a view: %v", err)
	}

	local := t.TempDir()
	tgt, err = r.ResolveListed(ctx, databricks.TableEntry{Name: databricks.TableName{Catalog: "main", Schema: "sales", Table: "l"},
		TableID: "id-l", TableType: "MANAGED", DataSourceFormat: "DELTA", StorageLocation: "file://" + local}, Read)
	if err != nil || tgt.Vended || tgt.Loc.Path != local {
		t.Errorf("local root: %+v, %v", tgt, err)
	}
}
