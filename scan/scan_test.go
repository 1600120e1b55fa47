package scan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
	"github.com/zbrecover/zbrecover/storage/mock"
	"github.com/zbrecover/zbrecover/tableref"
)

// fakeCatalog is a Unity Catalog of catalogs → schemas → tables, listed in pages of
// pageSize, with listings that fail by name ("catalog" or "catalog.schema").
type fakeCatalog struct {
	catalogs []databricks.CatalogEntry
	tables   map[string][]databricks.TableEntry // by catalog.schema
	schemas  map[string][]string                // by catalog, the schemas with or without tables
	fail     map[string]error
	pageSize int
	latency  time.Duration

	mu    sync.Mutex
	calls []string
}

func newCatalog() *fakeCatalog {
	return &fakeCatalog{tables: map[string][]databricks.TableEntry{}, schemas: map[string][]string{}, fail: map[string]error{}}
}

// add registers a managed Delta table with a mem:// root.
func (c *fakeCatalog) add(cat, schema, name string, mods ...func(*databricks.TableEntry)) {
	e := databricks.TableEntry{Name: databricks.TableName{Catalog: cat, Schema: schema, Table: name}, TableID: "id-" + name,
		TableType: "MANAGED", DataSourceFormat: "DELTA", StorageLocation: "s3://lake/" + cat + "/" + schema + "/" + name}
	for _, m := range mods {
		m(&e)
	}
	key := cat + "." + schema
	if _, ok := c.tables[key]; !ok {
		c.schemas[cat] = append(c.schemas[cat], schema)
	}
	c.tables[key] = append(c.tables[key], e)
	if !slices.ContainsFunc(c.catalogs, func(ce databricks.CatalogEntry) bool { return ce.Name == cat }) {
		c.catalogs = append(c.catalogs, databricks.CatalogEntry{Name: cat, Type: "MANAGED_CATALOG"})
	}
}

func (c *fakeCatalog) call(what string) error {
	c.mu.Lock()
	c.calls = append(c.calls, what)
	c.mu.Unlock()
	if c.latency > 0 {
		time.Sleep(c.latency)
	}
	return c.fail[what]
}

func (c *fakeCatalog) Catalogs(ctx context.Context) ([]databricks.CatalogEntry, error) {
	if err := c.call("catalogs"); err != nil {
		return nil, err
	}
	return c.catalogs, nil
}

func (c *fakeCatalog) Schemas(ctx context.Context, cat string) ([]databricks.SchemaEntry, error) {
	if err := c.call(cat); err != nil {
		return nil, err
	}
	var out []databricks.SchemaEntry
	for _, s := range c.schemas[cat] {
		out = append(out, databricks.SchemaEntry{Catalog: cat, Name: s})
	}
	return out, nil
}

func (c *fakeCatalog) EachTable(ctx context.Context, cat, schema string, fn func(databricks.TableEntry) error) error {
	list := c.tables[cat+"."+schema]
	size := c.pageSize
	if size <= 0 {
		size = 50
	}
	for start := 0; start == 0 || start < len(list); start += size {
		if err := c.call(cat + "." + schema); err != nil {
			return err
		}
		for _, e := range list[start:min(start+size, len(list))] {
			if err := fn(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// roots maps a table's storage location to its backend; a location that is not there fails
// to open.
type roots map[string]storage.Backend

func (r roots) open(ctx context.Context, e databricks.TableEntry) (*tableref.Ref, error) {
	b, ok := r[e.StorageLocation]
	if !ok {
		return nil, fmt.Errorf("table %s: vend READ storage credentials: PERMISSION_DENIED: User does not have EXTERNAL USE SCHEMA", e.Name)
	}
	loc, _ := storage.Parse(e.StorageLocation)
	return &tableref.Ref{Name: e.Name, HasName: true, TableID: e.TableID, Loc: loc, Root: b, Vended: true}, nil
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const fb = "_zerobus/table_rejected_parquets/"

// TestRunCatalog: a catalog's schemas are listed, information_schema left out, every managed
// Delta table's fallback folder counted (files, bytes, oldest, newest, date folders; hidden,
// non-Parquet and young objects apart), other tables skipped by kind, a table that cannot be
// opened or listed reported with its reason, a schema that cannot be listed reported, and
// each table given its next command.
func TestRunCatalog(t *testing.T) {
	cat := newCatalog()
	rs := roots{}
	newRoot := func(name string) *mem.Backend {
		b := mem.New()
		rs["s3://lake/main/sales/"+name] = b
		return b
	}
	cat.add("main", "sales", "orders")
	orders := newRoot("orders")
	orders.Set(fb+"2026-02-27/part-0.parquet", make([]byte, 100), t0.Add(-72*time.Hour))
	orders.Set(fb+"2026-02-28/part-1.parquet", make([]byte, 200), t0.Add(-48*time.Hour))
	orders.Set(fb+"2026-02-28/part-2.parquet", make([]byte, 300), t0.Add(-47*time.Hour))
	orders.Set(fb+"top.parquet", make([]byte, 5), t0.Add(-24*time.Hour))
	orders.Set(fb+"2026-03-01/part-3.parquet", make([]byte, 400), t0.Add(-time.Minute)) // young
	orders.Set(fb+"2026-02-28/_SUCCESS", nil, t0.Add(-48*time.Hour))
	orders.Set(fb+"2026-02-28/.part-1.parquet.crc", make([]byte, 8), t0.Add(-48*time.Hour))
	orders.Set(fb+"_tmp/part-9.parquet", make([]byte, 9), t0.Add(-48*time.Hour))
	orders.Set(fb+"notes.txt", make([]byte, 3), t0.Add(-48*time.Hour))
	orders.Set("part-00000.parquet", make([]byte, 1000), t0) // table data, outside the folder

	cat.add("main", "sales", "clean")
	newRoot("clean").Set("_delta_log/00000000000000000000.json", []byte("{}"), t0)
	cat.add("main", "sales", "young_only")
	newRoot("young_only").Set(fb+"2026-03-01/p.parquet", []byte("x"), t0.Add(-time.Second))
	cat.add("main", "sales", "v", func(e *databricks.TableEntry) { e.TableType = "VIEW" })
	cat.add("main", "sales", "ext", func(e *databricks.TableEntry) { e.TableType = "EXTERNAL" })
	cat.add("main", "sales", "pq", func(e *databricks.TableEntry) { e.DataSourceFormat = "PARQUET" })
	cat.add("main", "sales", "denied") // no root: opening fails
	cat.add("main", "sales", "nolocation", func(e *databricks.TableEntry) { e.StorageLocation = "" })
	cat.add("main", "sales", "broken")
	rs["s3://lake/main/sales/broken"] = &mock.Backend{
		LocationFn: func() string { return "s3://lake/main/sales/broken" },
		ListFn: func(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
			_ = fn(storage.ObjectInfo{Key: prefix + "a.parquet", Size: 7, ModTime: t0.Add(-time.Hour)})
			return errors.New("list s3://lake/main/sales/broken: api error AccessDenied: Access Denied")
		},
	}
	cat.add("main", "information_schema", "tables", func(e *databricks.TableEntry) { e.TableType = "VIEW" })
	cat.add("main", "hr", "salaries")
	cat.fail["main.hr"] = errors.New("list the tables of main.hr: permission denied: User does not have USE SCHEMA on Schema 'main.hr'")

	var seen []string
	rep, err := Run(context.Background(), cat, rs.open, Options{
		Scope: Scope{Catalog: "main"}, MinAge: 15 * time.Minute, Now: func() time.Time { return t0 },
		NextArgs: []string{"-p", "prod profile"},
		OnTable:  func(tb Table) error { seen = append(seen, tb.Name); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, tb := range rep.Tables {
		order = append(order, string(tb.Status)+":"+tb.Name)
	}
	want := []string{"parked:main.sales.orders", "unreadable:main.sales.broken", "unreadable:main.sales.denied", "unreadable:main.sales.nolocation",
		"clean:main.sales.clean", "clean:main.sales.young_only"}
	if !slices.Equal(order, want) {
		t.Errorf("tables %q, want %q", order, want)
	}
	if len(seen) != 6 {
		t.Errorf("OnTable saw %q", seen)
	}
	o := rep.Tables[0]
	if o.Files != 4 || o.Bytes != 605 || o.DateFolders != 2 || o.YoungFiles != 1 || o.YoungBytes != 400 || o.OtherObjects != 4 ||
		!o.Oldest.Equal(t0.Add(-72*time.Hour)) || !o.Newest.Equal(t0.Add(-24*time.Hour)) || !o.Vended || o.TableID != "id-orders" {
		t.Errorf("orders %+v", o)
	}
	if o.Next != "zbrecover inspect --table main.sales.orders -p 'prod profile'" {
		t.Errorf("next %q", o.Next)
	}
	broken := rep.Tables[1]
	if broken.Files != 0 || broken.Bytes != 0 || !strings.Contains(broken.Error, "AccessDenied") || broken.Next != "zbrecover doctor --table main.sales.broken -p 'prod profile'" {
		t.Errorf("broken %+v", broken)
	}
	if d := rep.Tables[2]; !strings.Contains(d.Error, "EXTERNAL USE SCHEMA") {
		t.Errorf("denied %+v", d)
	}
	if n := rep.Tables[3]; !strings.Contains(n.Error, "no storage location") {
		t.Errorf("nolocation %+v", n)
	}
	if y := rep.Tables[5]; y.Status != Clean || y.YoungFiles != 1 || y.Next != "" {
		t.Errorf("young_only %+v", y)
	}
	tot := rep.Totals
	if tot.Catalogs != 1 || tot.Schemas != 1 || tot.Listed != 9 || tot.Skipped != 3 || tot.Scanned != 6 || tot.Parked != 1 || tot.Clean != 2 ||
		tot.Unreadable != 3 || tot.Files != 4 || tot.Bytes != 605 || tot.YoungFiles != 2 || tot.Unlisted != 1 ||
		tot.SkippedKinds["view"] != 1 || tot.SkippedKinds["external"] != 1 || tot.SkippedKinds["format parquet"] != 1 {
		t.Errorf("totals %+v", tot)
	}
	if len(rep.Unlisted) != 1 || rep.Unlisted[0].Schema != "hr" || !strings.Contains(rep.Unlisted[0].Error, "USE SCHEMA") {
		t.Errorf("unlisted %+v", rep.Unlisted)
	}
	if slices.Contains(cat.calls, "main.information_schema") {
		t.Errorf("information_schema was listed: %q", cat.calls)
	}
	if rep.Scope != "main" || rep.MinAge != "15m0s" || rep.Prefix != fb || !rep.Started.Equal(t0) {
		t.Errorf("report %+v", rep)
	}
}

// TestRunScopeErrors: the listing of the scope itself stops the scan; so do a bad pattern,
// prefix or age, OnTable's error and the end of ctx.
func TestRunScopeErrors(t *testing.T) {
	cat := newCatalog()
	rs := roots{}
	for i := range 30 {
		name := fmt.Sprintf("t%02d", i)
		cat.add("main", "sales", name)
		rs["s3://lake/main/sales/"+name] = mem.New()
	}
	denied := errors.New("list the tables of main.sales: permission denied")
	cat.fail["main.sales"] = denied
	ctx := context.Background()
	if _, err := Run(ctx, cat, rs.open, Options{Scope: Scope{Catalog: "main", Schema: "sales"}}); !errors.Is(err, denied) {
		t.Errorf("the named schema's listing failed: %v", err)
	}
	delete(cat.fail, "main.sales")
	cat.fail["main"] = errors.New("list the schemas of main: not found")
	if _, err := Run(ctx, cat, rs.open, Options{Scope: Scope{Catalog: "main"}}); err == nil || !strings.Contains(err.Error(), "schemas of main") {
		t.Errorf("the named catalog's listing failed: %v", err)
	}
	delete(cat.fail, "main")
	cat.fail["catalogs"] = errors.New("list the catalogs: unauthenticated")
	if _, err := Run(ctx, cat, rs.open, Options{}); err == nil || !strings.Contains(err.Error(), "catalogs") {
		t.Errorf("the catalogs' listing failed: %v", err)
	}
	delete(cat.fail, "catalogs")
	for _, o := range []Options{{TablePattern: "[a"}, {Prefix: "../x"}, {MinAge: -time.Second}} {
		if _, err := Run(ctx, cat, rs.open, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	stop := errors.New("stop")
	calls := 0
	if _, err := Run(ctx, cat, rs.open, Options{Concurrency: 2, OnTable: func(Table) error { calls++; return stop }}); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("OnTable failed: %v after %d calls", err, calls)
	}
	cctx, cancel := context.WithCancel(ctx)
	if _, err := Run(cctx, cat, rs.open, Options{OnTable: func(Table) error { cancel(); return nil }}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestRunEveryCatalog: without a catalog, every catalog is listed except Delta Sharing,
// foreign, system and internal catalogs and the Hive metastore; a catalog whose schemas
// cannot be listed is reported and the others are scanned.
func TestRunEveryCatalog(t *testing.T) {
	cat := newCatalog()
	rs := roots{}
	for _, c := range []string{"main", "dev", "locked", "hive_metastore"} {
		cat.add(c, "s", "t")
		rs["s3://lake/"+c+"/s/t"] = mem.New()
	}
	cat.catalogs = append(cat.catalogs, databricks.CatalogEntry{Name: "shared", Type: "DELTASHARING_CATALOG"},
		databricks.CatalogEntry{Name: "system", Type: "SYSTEM_CATALOG"}, databricks.CatalogEntry{Name: "untyped"})
	cat.schemas["untyped"] = nil
	cat.fail["locked"] = errors.New("list the schemas of locked: permission denied")
	rep, err := Run(context.Background(), cat, rs.open, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range rep.Tables {
		names = append(names, tb.Name)
	}
	if !slices.Equal(names, []string{"dev.s.t", "main.s.t"}) {
		t.Errorf("scanned %q", names)
	}
	var skipped []string
	for _, c := range rep.SkippedCatalogs {
		skipped = append(skipped, c.Name+": "+c.Reason)
	}
	if !slices.Equal(skipped, []string{"hive_metastore: the legacy Hive metastore, not Unity Catalog", "shared: deltasharing catalog", "system: system catalog"}) {
		t.Errorf("skipped %q", skipped)
	}
	if len(rep.Unlisted) != 1 || rep.Unlisted[0].Catalog != "locked" || rep.Totals.Catalogs != 3 {
		t.Errorf("unlisted %+v, totals %+v", rep.Unlisted, rep.Totals)
	}
}

// TestRunPattern: --table-pattern matches the table's name in lower case; the others are
// counted, not scanned.
func TestRunPattern(t *testing.T) {
	cat := newCatalog()
	rs := roots{}
	for _, n := range []string{"orders_eu", "Orders_US", "customers"} {
		cat.add("main", "sales", n)
		rs["s3://lake/main/sales/"+n] = mem.New()
	}
	rep, err := Run(context.Background(), cat, rs.open, Options{Scope: Scope{Catalog: "main", Schema: "sales"}, TablePattern: "ORDERS_*"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Scanned != 2 || rep.Totals.NotMatched != 1 || rep.Totals.Listed != 3 || rep.TablePattern != "ORDERS_*" {
		t.Errorf("totals %+v", rep.Totals)
	}
}

// TestRunStreamsTables: a table is handed to OnTable as soon as its scan completes, while
// others are still being listed: the slow table's listing waits until a faster table was
// seen.
func TestRunStreamsTables(t *testing.T) {
	cat := newCatalog()
	rs := roots{}
	seenFast := make(chan struct{})
	cat.add("main", "s", "slow")
	rs["s3://lake/main/s/slow"] = &mock.Backend{
		LocationFn: func() string { return "s3://lake/main/s/slow" },
		ListFn: func(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
			select {
			case <-seenFast:
				return nil
			case <-time.After(10 * time.Second):
				return errors.New("the fast table was not delivered while the slow one was listed")
			}
		},
	}
	cat.add("main", "s", "fast")
	rs["s3://lake/main/s/fast"] = mem.New()
	var order []string
	_, err := Run(context.Background(), cat, rs.open, Options{Scope: Scope{Catalog: "main", Schema: "s"}, Concurrency: 2,
		OnTable: func(tb Table) error {
			order = append(order, tb.Name+" "+string(tb.Status))
			if tb.Name == "main.s.fast" {
				close(seenFast)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(order, []string{"main.s.fast clean", "main.s.slow clean"}) {
		t.Errorf("delivered %q", order)
	}
}

// TestRequestsPerTable: an empty or missing fallback folder costs one list request, a folder
// of n objects ⌈n/page⌉; no object is read or stat'ed.
func TestRequestsPerTable(t *testing.T) {
	cat := newCatalog()
	rs := roots{}
	var counters []*storage.Counter
	add := func(name string, objects int) *storage.Counter {
		m := mem.New(mem.WithPageSize(1000))
		for i := range objects {
			m.Set(fmt.Sprintf("%s%05d.parquet", fb, i), []byte("x"), t0)
		}
		m.Set("_delta_log/00000000000000000000.json", []byte("{}"), t0)
		b, c := storage.WithCounting(m)
		cat.add("main", "s", name)
		rs["s3://lake/main/s/"+name] = b
		counters = append(counters, c)
		return c
	}
	for i := range 20 {
		add(fmt.Sprintf("empty%02d", i), 0)
	}
	big := add("big", 2500)
	rep, err := Run(context.Background(), cat, rs.open, Options{Scope: Scope{Catalog: "main", Schema: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range counters[:20] {
		if got := c.Counts(); got.ListPages != 1 || got.Total() != 1 {
			t.Errorf("empty table %d: %s, want 1 list request", i, got)
		}
	}
	if got := big.Counts(); got.ListPages != 3 || got.Total() != 3 {
		t.Errorf("2,500 objects: %s, want 3 list requests", got)
	}
	if rep.Totals.Files != 2500 || rep.Totals.Parked != 1 {
		t.Errorf("totals %+v", rep.Totals)
	}
}

func TestParseScope(t *testing.T) {
	for in, want := range map[string]Scope{
		"":                 {},
		"main":             {Catalog: "main"},
		"main.sales":       {Catalog: "main", Schema: "sales"},
		"`my-cat`.`a``b`":  {Catalog: "my-cat", Schema: "a`b"},
		" main.ventes_été": {Catalog: "main", Schema: "ventes_été"},
	} {
		got, err := ParseScope(in)
		if err != nil || got != want {
			t.Errorf("ParseScope(%q) = %+v, %v", in, got, err)
		}
		if back, _ := ParseScope(got.String()); back != got {
			t.Errorf("%+v reads back as %+v", got, back)
		}
	}
	for _, bad := range []string{"main.sales.orders", "a b", "main."} {
		if _, err := ParseScope(bad); err == nil {
			t.Errorf("ParseScope(%q) accepted", bad)
		}
	}
}
