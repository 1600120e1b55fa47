package cmd

import (
	"context"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// With --table T --root URL, credentials are vended for T only when URL is inside T's storage
// location: a root in another bucket or folder is refused before anything is vended or sent.
func TestVendedCredentialsStayInTheTableLocation(t *testing.T) {
	srv := databricksEnv(t)
	s3srv := s3test.NewServer(t)
	tbl := srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "orders", StorageLocation: s3srv.URLFor("tables/orders")})
	srv.SetCredentials("main.sales.orders", uctest.Credentials{
		AWSAccessKeyID: "AKIAVENDEDBYUC", AWSSecretAccessKey: "vended-secret-access-key-0001", AWSSessionToken: "vended-session-token-0001",
	})
	f, _ := wiredFactory(t, "--s3-endpoint", s3srv.URL, "--s3-region", s3test.Region, "--storage-auth", "vended")
	ctx := context.Background()
	for _, root := range []string{
		"s3://attacker-bucket/tables/orders",
		s3srv.URLFor("tables/customers"),
		s3srv.URLFor("tables/orders/../customers"),
	} {
		_, err := f.openTarget(ctx, &TargetOptions{Table: "main.sales.orders", Root: root}, "READ")
		if err == nil || !strings.Contains(err.Error(), "is not inside the table's storage location") {
			t.Errorf("--root %s: %v, want a refusal", root, err)
		}
	}
	if n := srv.VendCount(tbl.TableID); n != 0 {
		t.Errorf("vended %d times for roots outside the table", n)
	}
	if _, err := f.openTarget(ctx, &TargetOptions{Table: "main.sales.orders", Root: s3srv.URLFor("tables/orders/_zerobus")}, "READ"); err != nil {
		t.Errorf("a root inside the table: %v", err)
	}
	if n := srv.VendCount(tbl.TableID); n != 1 {
		t.Errorf("vended %d times for a root inside the table, want 1", n)
	}
}
