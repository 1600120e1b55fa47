package scan

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/tableref"
)

const ucToken = "dapi000000000000000000000000000000cafe"

// TestS3RequestsPerTable scans 50 tables on the S3 emulator through Unity Catalog, as the
// command does: each table's storage read with the READ credentials Unity Catalog vends for
// it. An empty fallback folder costs exactly one list request; the folder of 2,500 files
// three (pages of 1,000); no object is read or stat'ed; the bucket's region is asked once;
// each table costs one vending request and no table lookup.
func TestS3RequestsPerTable(t *testing.T) {
	uctest.Isolate(t)
	s3srv := s3test.NewServer(t, s3test.WithBucketRegion("eu-west-1"))
	uc := uctest.New(ucToken)
	t.Cleanup(uc.Close)
	t.Setenv("DATABRICKS_HOST", uc.URL)
	t.Setenv("DATABRICKS_TOKEN", ucToken)
	const tables = 50
	parked := map[int]int{3: 1, 11: 7, 20: 2500, 33: 1, 47: 12}
	wantPages := int64(0)
	for i := range tables {
		name := fmt.Sprintf("t%02d", i)
		root := "tables/" + name
		if err := s3srv.Put(root+"/_delta_log/00000000000000000000.json", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		n := parked[i]
		for k := range n {
			if err := s3srv.Put(fmt.Sprintf("%s/%s2026-02-%02d/part-%05d.parquet", root, fb, 1+k%3, k), []byte("PAR1")); err != nil {
				t.Fatal(err)
			}
		}
		wantPages += max(1, int64((n+999)/1000))
		uc.AddTable(uctest.Table{Catalog: "main", Schema: "sales", Name: name, StorageLocation: s3srv.URLFor(root)})
		uc.SetCredentials("main.sales."+name, uctest.Credentials{AWSAccessKeyID: s3test.AccessKeyID, AWSSecretAccessKey: s3test.SecretAccessKey})
	}
	ws := tableref.NewWorkspace(databricks.Options{})
	client, err := ws.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := &tableref.Resolver{
		Open: func(ctx context.Context, loc storage.Location, cfg storage.Config) (storage.Backend, error) {
			return all.Registry().OpenLocation(ctx, loc, cfg)
		},
		Config:    func() storage.Config { return storage.Config{S3Endpoint: s3srv.URL} },
		Workspace: ws,
		Env:       databricks.OSEnv(),
	}
	open := func(ctx context.Context, e databricks.TableEntry) (*tableref.Ref, error) {
		return r.ResolveListed(ctx, e, tableref.Read)
	}
	s3srv.ResetCounts()
	rep, err := Run(context.Background(), client, open, Options{Scope: Scope{Catalog: "main"}, Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Scanned != tables || rep.Totals.Parked != len(parked) || rep.Totals.Unreadable != 0 || rep.Totals.Files != 2521 {
		t.Fatalf("totals %+v (%+v)", rep.Totals, rep.With(Unreadable))
	}
	for _, tb := range rep.With(Parked) {
		if !tb.Vended {
			t.Errorf("%s read without vended credentials", tb.Name)
		}
	}
	c := s3srv.Counts()
	if c.ListPages != wantPages || c.Gets != 0 || c.Heads != 0 || c.Other != 1 {
		t.Errorf("emulator: %s; want %d list pages (one per empty table, ⌈n/1000⌉ otherwise), no read, one region request", c, wantPages)
	}
	if wantPages != int64(tables-len(parked))+7 {
		t.Fatalf("the fixture's arithmetic: %d pages", wantPages)
	}
	vends, lookups, lists := 0, 0, 0
	for _, q := range uc.Requests() {
		switch {
		case q.Operation == "READ":
			vends++
		case q.Operation != "":
			t.Errorf("vended %s", q.Operation)
		case strings.HasPrefix(q.Path, "/api/2.1/unity-catalog/tables/"):
			lookups++
		case strings.HasPrefix(q.Path, "/api/2.1/unity-catalog/"):
			lists++
		}
	}
	if vends != tables || lookups != 0 || lists != 2 {
		t.Errorf("Unity Catalog: %d vending requests (want %d), %d table lookups (want 0), %d list requests (want 2: schemas, one page of tables)",
			vends, tables, lookups, lists)
	}

	// With the region given, an empty table costs its one list request and nothing else.
	s3srv.ResetCounts()
	r.Config = func() storage.Config { return storage.Config{S3Endpoint: s3srv.URL, S3Region: "eu-west-1"} }
	rep, err = Run(context.Background(), client, open, Options{Scope: Scope{Catalog: "main", Schema: "sales"}, TablePattern: "t0[0-2]"})
	if err != nil {
		t.Fatal(err)
	}
	if c := s3srv.Counts(); rep.Totals.Scanned != 3 || c.ListPages != 3 || c.Total() != 3 {
		t.Errorf("3 empty tables: %s, %d scanned", c, rep.Totals.Scanned)
	}
}
