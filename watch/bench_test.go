package watch

// The cost of a cycle with nothing parked (figures and commands in docs/performance.md):
//
//	go test -run TestCycleRequestsPerTable ./watch
//	go test -run XXX -bench WatchCycle1000 -benchtime 3x ./watch
//
// Unity Catalog is the local fake (databricks/uctest) reached through the real SDK client;
// storage is the S3 emulator (storage/s3/s3test), one S3 backend per table as the command
// opens them, every table's backend under one shared adaptive limit of 64 and a retry (what
// cmd's scan opener builds), over one HTTP transport.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/recovery"
	"github.com/zbrecover/zbrecover/scan"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/tableref"
)

const ucToken = "dapi000000000000000000000000000000cafe"

// quietCatalog is tables managed tables in schemas schemas of catalog main, each on the S3
// emulator with an empty fallback folder, behind latency per request (Unity Catalog and S3),
// and a watcher over the catalog that stages nowhere it will go (nothing is parked).
type quietCatalog struct {
	s3 *s3test.Server
	uc *uctest.Server
	w  *Watcher
}

func newQuietCatalog(t testing.TB, tables, schemas, conc int, latency time.Duration) *quietCatalog {
	uctest.Isolate(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretAccessKey)
	q := &quietCatalog{s3: s3test.NewServer(t), uc: uctest.NewHandler(ucToken)}
	ucSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(latency)
		q.uc.ServeHTTP(w, r)
	}))
	t.Cleanup(ucSrv.Close)
	t.Setenv("DATABRICKS_HOST", ucSrv.URL)
	t.Setenv("DATABRICKS_TOKEN", ucToken)
	for i := range tables {
		schema := fmt.Sprintf("s%02d", i%schemas)
		root := fmt.Sprintf("tables/%s/t%04d", schema, i)
		// A table that was recovered: its Delta log is there, its fallback folder is not.
		if err := q.s3.Put(root+"/_delta_log/00000000000000000000.json", []byte("{}")); err != nil {
			t.Fatal(err)
		}
		q.uc.AddTable(uctest.Table{Catalog: "main", Schema: schema, Name: fmt.Sprintf("t%04d", i), StorageLocation: q.s3.URLFor(root)})
	}
	q.s3.SetLatency(latency)
	ws := tableref.NewWorkspace(databricks.Options{})
	client, err := ws.Client(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lim := storage.NewAdaptive(storage.AdaptiveOptions{Max: conc})
	transport := storage.SharedTransport(conc)
	r := &tableref.Resolver{
		Open: func(ctx context.Context, loc storage.Location, cfg storage.Config) (storage.Backend, error) {
			be, err := all.Registry().OpenLocation(ctx, loc, cfg)
			if err != nil {
				return nil, err
			}
			return storage.WithRetry(storage.WithAdaptiveLimit(be, lim), storage.DefaultRetryPolicy()), nil
		},
		Config: func() storage.Config {
			return storage.Config{S3Endpoint: q.s3.URL, S3Region: s3test.Region, Transport: transport}
		},
		Workspace:   ws,
		Env:         databricks.OSEnv(),
		StorageAuth: databricks.StorageAuthDefault,
	}
	store, err := journal.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	q.w, err = New(Config{Scope: scan.Scope{Catalog: "main"}, StageTo: "/Volumes/main/ops/staging/watch", ScanConcurrency: conc},
		Deps{Catalog: client, Open: func(ctx context.Context, e databricks.TableEntry) (*tableref.Ref, error) {
			return r.ResolveListed(ctx, e, tableref.Read)
		},
			Recovery: recovery.Env{Resolver: r, Journal: store, Places: &recovery.Places{Opener: storage.Opener{Registry: all.Registry()}, Workspace: ws}},
			Identity: "operator@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestCycleRequestsPerTable: a cycle over tables with nothing parked costs one list request
// per table on storage, nothing else (no journal, no warehouse: the watcher has no work), and
// Unity Catalog's pages of the listing.
func TestCycleRequestsPerTable(t *testing.T) {
	const tables, schemas = 200, 4
	q := newQuietCatalog(t, tables, schemas, 16, 0)
	for cycle := 1; cycle <= 2; cycle++ {
		q.s3.ResetCounts()
		before := len(q.uc.Requests())
		res := q.w.Cycle(context.Background(), nil)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if e := res.Event; e.Scanned != tables || e.Parked != 0 || e.FailedTables != 0 {
			t.Fatalf("cycle %d: %+v", cycle, e)
		}
		if c := q.s3.Counts(); c.ListPages != tables || c.Total() != tables {
			t.Errorf("cycle %d: storage requests %s, want %d list pages and nothing else", cycle, c, tables)
		}
		// The schemas' page, then two pages of 50 tables per schema.
		if n := len(q.uc.Requests()) - before; n != 1+schemas*(tables/schemas/50) {
			t.Errorf("cycle %d: %d Unity Catalog requests", cycle, n)
		}
	}
}

// BenchmarkWatchCycle1000: one cycle over 1,000 tables in 10 schemas with nothing parked, 20
// ms per request to Unity Catalog and to S3, 64 tables at once. The floor is the scan's
// critical path: the catalog's page of schemas, then a schema's two pages of tables one after
// the other (the schemas are listed side by side), then ⌈1000/64⌉ = 16 rounds of one list
// request: 19 requests of 20 ms.
func BenchmarkWatchCycle1000(b *testing.B) {
	const tables, schemas, conc = 1000, 10, 64
	const latency = 20 * time.Millisecond
	q := newQuietCatalog(b, tables, schemas, conc, latency)
	var el time.Duration
	var listPages, other int64
	var ucRequests int
	for b.Loop() {
		q.s3.ResetCounts()
		before := len(q.uc.Requests())
		began := time.Now()
		res := q.w.Cycle(context.Background(), nil)
		el += time.Since(began)
		if res.Err != nil || res.Event.Scanned != tables || res.Event.Parked != 0 {
			b.Fatalf("cycle: %v %+v", res.Err, res.Event)
		}
		c := q.s3.Counts()
		listPages += c.ListPages
		other += c.Total() - c.ListPages
		ucRequests += len(q.uc.Requests()) - before
	}
	const ucPages = 1 + 2 // the schemas' page, then one schema's two pages of 50 tables
	rounds := (tables + conc - 1) / conc
	floor := time.Duration(ucPages+rounds) * latency
	per := el / time.Duration(b.N)
	b.ReportMetric(float64(per.Milliseconds()), "ms/cycle")
	b.ReportMetric(float64(floor.Milliseconds()), "floor-ms")
	b.ReportMetric(float64(per)/float64(floor), "x-floor")
	b.ReportMetric(float64(listPages)/float64(b.N*tables), "list-req/table")
	b.ReportMetric(float64(other)/float64(b.N), "other-storage-req/cycle")
	b.ReportMetric(float64(ucRequests)/float64(b.N), "uc-req/cycle")
	if listPages != int64(b.N*tables) || other != 0 {
		b.Errorf("%d list requests and %d others for %d cycles of %d tables", listPages, other, b.N, tables)
	}
	if r := float64(per) / float64(floor); r > 1.5 {
		b.Errorf("a cycle took %s, %.2f× its floor of %s (at most 1.5×)", per, r, floor)
	}
}
