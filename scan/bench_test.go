package scan

// The 1,000-table benchmark (figures and commands in docs/performance.md):
//
//	go test -run XXX -bench Scan1000 -benchtime 3x ./scan
//
// Unity Catalog is the local fake (databricks/uctest) behind 20 ms per request, reached
// through the real SDK client; storage is the S3 emulator (storage/s3/s3test) with 20 ms per
// request, one S3 backend per table as the command opens them, every table's backend under
// one shared adaptive limit of 64 and a retry.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/databricks/uctest"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/tableref"
)

const benchLatency = 20 * time.Millisecond

// BenchmarkScan1000 scans 1,000 tables in 10 schemas of one catalog, 50 of them (5%) with 10
// parked files each. Sub-benchmarks: the store's own credentials (the environment's keys),
// and vended READ credentials per table (one more Unity Catalog request per table), at the
// client's default rate limit of Unity Catalog requests (200 a second) and at 5,000.
func BenchmarkScan1000(b *testing.B) {
	const (
		tables, schemas, parkedEvery, filesPerParked, conc = 1000, 10, 20, 10, 64
	)
	for _, mode := range []struct {
		name      string
		vended    bool
		rateLimit string
	}{{"default-credentials", false, ""}, {"vended", true, ""}, {"vended-rate-5000", true, "5000"}} {
		b.Run(mode.name, func(b *testing.B) {
			uctest.Isolate(b)
			if mode.rateLimit != "" {
				b.Setenv("DATABRICKS_RATE_LIMIT", mode.rateLimit)
			}
			if !mode.vended {
				b.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKeyID)
				b.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretAccessKey)
			}
			s3srv := s3test.NewServer(b)
			uc := uctest.NewHandler(ucToken)
			ucSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(benchLatency)
				uc.ServeHTTP(w, r)
			}))
			b.Cleanup(ucSrv.Close)
			b.Setenv("DATABRICKS_HOST", ucSrv.URL)
			b.Setenv("DATABRICKS_TOKEN", ucToken)
			for i := range tables {
				name := fmt.Sprintf("t%04d", i)
				schema := fmt.Sprintf("s%02d", i%schemas)
				root := "tables/" + schema + "/" + name
				if i%parkedEvery == 0 {
					for k := range filesPerParked {
						if err := s3srv.Put(fmt.Sprintf("%s/%s2026-02-0%d/part-%05d.parquet", root, fb, 1+k%3, k), []byte("PAR1")); err != nil {
							b.Fatal(err)
						}
					}
				}
				uc.AddTable(uctest.Table{Catalog: "main", Schema: schema, Name: name, StorageLocation: s3srv.URLFor(root)})
				uc.SetCredentials("main."+schema+"."+name, uctest.Credentials{AWSAccessKeyID: s3test.AccessKeyID, AWSSecretAccessKey: s3test.SecretAccessKey})
			}
			s3srv.SetLatency(benchLatency)
			ws := tableref.NewWorkspace(databricks.Options{})
			client, err := ws.Client(context.Background())
			if err != nil {
				b.Fatal(err)
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
					return storage.Config{S3Endpoint: s3srv.URL, S3Region: s3test.Region, Transport: transport}
				},
				Workspace:   ws,
				Env:         databricks.OSEnv(),
				StorageAuth: databricks.StorageAuthAuto,
			}
			open := func(ctx context.Context, e databricks.TableEntry) (*tableref.Ref, error) {
				return r.ResolveListed(ctx, e, tableref.Read)
			}
			var el time.Duration
			var ucRequests, vends int
			var listPages int64
			for b.Loop() {
				s3srv.ResetCounts()
				before := len(uc.Requests())
				began := time.Now()
				// A new workspace per run: no credentials vended by an earlier run.
				r.Workspace = tableref.NewWorkspace(databricks.Options{})
				rep, err := Run(context.Background(), client, open, Options{Scope: Scope{Catalog: "main"}, Concurrency: conc})
				el += time.Since(began)
				if err != nil {
					b.Fatal(err)
				}
				if rep.Totals.Scanned != tables || rep.Totals.Parked != tables/parkedEvery || rep.Totals.Unreadable != 0 {
					b.Fatalf("totals %+v: %v", rep.Totals, rep.With(Unreadable))
				}
				c := s3srv.Counts()
				if c.ListPages != tables || c.Total() != tables {
					b.Fatalf("storage requests %s, want %d list pages and nothing else", c, tables)
				}
				listPages += c.ListPages
				reqs := uc.Requests()[before:]
				ucRequests += len(reqs)
				for _, q := range reqs {
					if q.Operation != "" {
						vends++
					}
				}
			}
			// The floor: Unity Catalog's pages (the schemas' page and two pages of tables per
			// schema, 50 a page) one after the other, then ⌈tables/concurrency⌉ rounds of one
			// list request per table (two requests in turn per table with vending: the
			// credentials, then the list). With vending it is also bound by the client's rate
			// limit of Unity Catalog requests: a burst of rate, then rate a second.
			ucPages := 1 + schemas*2
			rounds := (tables + conc - 1) / conc
			listFloor := time.Duration(ucPages)*benchLatency + time.Duration(rounds)*benchLatency
			floor := listFloor
			if mode.vended {
				floor += time.Duration(rounds) * benchLatency
				rate := 200.0
				if mode.rateLimit != "" {
					rate = 5000
				}
				perScan := float64(ucRequests) / float64(b.N)
				if rf := time.Duration(max(0, perScan-rate) / rate * float64(time.Second)); rf > floor {
					floor = rf
				}
			}
			per := el / time.Duration(b.N)
			b.ReportMetric(float64(per.Milliseconds()), "ms/scan")
			b.ReportMetric(float64(listFloor.Milliseconds()), "list-floor-ms")
			b.ReportMetric(float64(floor.Milliseconds()), "floor-ms")
			b.ReportMetric(float64(per)/float64(floor), "x-floor")
			b.ReportMetric(float64(listPages)/float64(b.N*tables), "list-req/table")
			b.ReportMetric(float64(ucRequests-vends)/float64(b.N), "uc-list-req/scan")
			b.ReportMetric(float64(vends)/float64(b.N), "vend-req/scan")
		})
	}
}
