package databricks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks/uctest"
)

// listRequests counts the fake's GET requests to path.
func listRequests(srv *uctest.Server, path string) int {
	n := 0
	for _, r := range srv.Requests() {
		if r.Method == "GET" && strings.TrimSuffix(r.Path, "/") == path {
			n++
		}
	}
	return n
}

// TestListCatalogsSchemasTables: the catalogs, the schemas of a catalog and the tables of a
// schema are listed page after page, every entry once, with the catalog type and each
// table's type, format, id and storage location.
func TestListCatalogsSchemasTables(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	srv.SetPageSize(7)
	for i := range 23 {
		srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: fmt.Sprintf("t%02d", i), StorageLocation: fmt.Sprintf("s3://lake/t%02d", i)})
	}
	srv.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: "v", TableType: "VIEW"})
	for i := range 9 {
		srv.AddSchema("main", fmt.Sprintf("empty%d", i))
	}
	srv.AddCatalog("shared", "DELTASHARING_CATALOG")
	for i := range 8 {
		srv.AddCatalog(fmt.Sprintf("c%d", i), "")
	}
	t.Setenv("DATABRICKS_HOST", srv.URL)
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	c, err := NewClient(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	cats, err := c.Catalogs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, ce := range cats {
		types[ce.Name] = ce.Type
	}
	if len(cats) != 10 || types["main"] != "MANAGED_CATALOG" || types["shared"] != "DELTASHARING_CATALOG" || types["c7"] != "MANAGED_CATALOG" {
		t.Errorf("catalogs %v", cats)
	}
	if n := listRequests(srv, "/api/2.1/unity-catalog/catalogs"); n != 2 {
		t.Errorf("%d requests for 10 catalogs in pages of 7, want 2", n)
	}

	schemas, err := c.Schemas(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(schemas) != 10 || schemas[0].Catalog != "main" {
		t.Errorf("schemas %v", schemas)
	}
	if n := listRequests(srv, "/api/2.1/unity-catalog/schemas"); n != 2 {
		t.Errorf("%d requests for 10 schemas in pages of 7, want 2", n)
	}

	var got []TableEntry
	pagesSeen := 0
	err = c.EachTable(ctx, "main", "sales", func(e TableEntry) error {
		// The first page is delivered before the last one is requested.
		if len(got) == 0 {
			pagesSeen = listRequests(srv, "/api/2.1/unity-catalog/tables")
		}
		got = append(got, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 24 || pagesSeen != 1 {
		t.Errorf("%d tables, %d pages requested before the first was delivered", len(got), pagesSeen)
	}
	if n := listRequests(srv, "/api/2.1/unity-catalog/tables"); n != 4 {
		t.Errorf("%d requests for 24 tables in pages of 7, want 4", n)
	}
	first := got[0]
	if first.Name.String() != "main.sales.t00" || first.TableID == "" || first.TableType != "MANAGED" ||
		first.DataSourceFormat != "DELTA" || first.StorageLocation != "s3://lake/t00" || first.CheckRecoverable() != nil {
		t.Errorf("first table %+v", first)
	}
	view := got[len(got)-1]
	if view.Name.Table != "v" || !errors.Is(view.CheckRecoverable(), ErrUnsupported) {
		t.Errorf("view %+v: %v", view, view.CheckRecoverable())
	}

	// fn's error stops the listing and is returned as it is.
	stop := errors.New("stop")
	calls := 0
	if err := c.EachTable(ctx, "main", "sales", func(TableEntry) error { calls++; return stop }); err != stop || calls != 1 {
		t.Errorf("EachTable after fn failed: %v after %d calls", err, calls)
	}
	// Tables is every page at once.
	all, err := c.Tables(ctx, "main", "sales")
	if err != nil || len(all) != 24 {
		t.Errorf("Tables: %d, %v", len(all), err)
	}
}

// TestListErrors: a missing catalog or schema is not found, a denied one is permission denied,
// and the error names what was listed.
func TestListErrors(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	ordersTable(srv)
	srv.AddSchema("main", "hr")
	srv.DenyListing("main.hr")
	srv.AddCatalog("secret", "")
	srv.DenyListing("secret")
	t.Setenv("DATABRICKS_HOST", srv.URL)
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	c, err := NewClient(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	none := func(TableEntry) error { return nil }
	for _, tc := range []struct {
		name string
		err  error
		kind error
		want string
	}{
		{"schemas of a missing catalog", second(c.Schemas(ctx, "nope")), ErrNotFound, "list the schemas of nope"},
		{"schemas of a denied catalog", second(c.Schemas(ctx, "secret")), ErrPermissionDenied, "USE CATALOG"},
		{"tables of a missing schema", c.EachTable(ctx, "main", "nope", none), ErrNotFound, "list the tables of main.nope"},
		{"tables of a denied schema", c.EachTable(ctx, "main", "hr", none), ErrPermissionDenied, "USE SCHEMA"},
	} {
		if !errors.Is(tc.err, tc.kind) || tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want %v naming %q", tc.name, tc.err, tc.kind, tc.want)
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestIdleConnectionsKept: connections to the workspace opened for requests made at once are
// kept for the next ones (a scan vends credentials for dozens of tables at once), not closed
// beyond the SDK's GOMAXPROCS+1.
func TestIdleConnectionsKept(t *testing.T) {
	cleanEnv(t)
	uc := uctest.NewHandler(goodToken)
	ordersTable(uc)
	var conns atomic.Int64
	// Every request of a round waits for the round's others (or a second), so that the first
	// round holds 24 connections open at once and the second has as many idle ones to reuse.
	const n = 24
	var (
		mu      sync.Mutex
		arrived int
		full    = make(chan struct{})
	)
	barrier := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/tables") {
			uc.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		arrived++
		wait := full
		if arrived%n == 0 {
			close(full)
			full = make(chan struct{})
		}
		mu.Unlock()
		select {
		case <-wait:
		case <-time.After(time.Second):
		}
		uc.ServeHTTP(w, r)
	})
	srv := httptest.NewUnstartedServer(barrier)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	t.Setenv("DATABRICKS_HOST", srv.URL)
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	t.Setenv("DATABRICKS_RATE_LIMIT", "10000")
	c, err := NewClient(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	round := func() {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if _, err := c.Tables(context.Background(), "main", "sales"); err != nil {
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
	}
	round()
	first := conns.Load()
	if first < n {
		t.Fatalf("the first round of %d requests at once opened %d connections", n, first)
	}
	round()
	if again := conns.Load() - first; again > 2 {
		t.Errorf("the second round of 24 requests opened %d new connections (the first %d)", again, first)
	}
}
