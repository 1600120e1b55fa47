//go:build cgo

package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/recovery"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/tableref"
)

// The producers' schema: what Zerobus parked. The table "orders" has it; "wide" lost the
// column gift since, so its files block until the column is added back.
var (
	tableSchema = sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer_key", sd.StringType)
	fileSchema  = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer_key", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	wideFiles = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer_key", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "gift", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}}, nil)
)

// site is a local workspace with managed tables in main.sales, a journal and a watcher's
// dependencies, with its events and alerts recorded.
type site struct {
	t     *testing.T
	ws    *workspace.Workspace
	dir   string
	roots map[string]string // by table name
	store journal.Store
	deps  Deps
	clock *testClock

	mu     sync.Mutex
	events []Event
	alerts []Event
}

type testClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

func newSite(t *testing.T, store func(dir string) journal.Store) *site {
	t.Helper()
	dir := t.TempDir()
	ws, err := workspace.Start(workspace.Options{Dir: filepath.Join(dir, "ws")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	s := &site{t: t, ws: ws, dir: dir, roots: map[string]string{}, clock: &testClock{}}
	s.store = store(filepath.Join(dir, "journal"))
	tw := tableref.NewWorkspace(databricks.Options{Host: ws.URL(), WarehouseID: ws.WarehouseID(), ConfigFile: filepath.Join(dir, "none")})
	t.Setenv("DATABRICKS_TOKEN", ws.Token())
	t.Cleanup(func() { tw.Close() })
	ctx := context.Background()
	wh, err := tw.Warehouse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client, err := tw.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opener := storage.Opener{Registry: all.Registry(), Policy: storage.Policy{Retry: storage.DefaultRetryPolicy()}}
	r := &tableref.Resolver{Workspace: tw, StorageAuth: databricks.StorageAuthDefault, Open: opener.Open}
	places := &recovery.Places{Opener: opener, Workspace: tw, Concurrency: 4}
	s.deps = Deps{Catalog: client, Recovery: recovery.Env{Resolver: r, Journal: s.store, Warehouse: wh, Concurrency: 8, Places: places},
		Open: func(ctx context.Context, e databricks.TableEntry) (*tableref.Ref, error) {
			return r.ResolveListed(ctx, e, tableref.Read)
		},
		Source: &tableref.WarehouseSource{Workspace: tw}, Identity: "operator@example.com", Header: journal.Header{Command: "zbrecover watch (test)"},
		Cleanup: recovery.CleanupEnv{Resolver: r, Places: places, Storage: recovery.NewDeleteStorage(opener, 4, nil)},
		Events:  s.record(&s.events), Now: s.clock.now,
		Alert: func(_ context.Context, e Event) error {
			s.record(&s.alerts)(e)
			return nil
		}}
	return s
}

func (s *site) record(list *[]Event) func(Event) {
	return func(e Event) {
		s.mu.Lock()
		*list = append(*list, e)
		s.mu.Unlock()
	}
}

// table registers the managed table main.sales.<name> with files fallback files of one row
// each (ids from first), in sc's schema.
func (s *site) table(name string, schema sd.Schema, files, first int, sc *arrow.Schema) string {
	s.t.Helper()
	root := filepath.Join(s.dir, "tables", name)
	if _, err := deltatest.Write(root, deltatest.Table{Schema: schema}); err != nil {
		s.t.Fatal(err)
	}
	full := "main.sales." + name
	if err := s.ws.RegisterTable(context.Background(), full, root, true); err != nil {
		s.t.Fatal(err)
	}
	s.roots[full] = root
	s.park(full, files, first, sc)
	return full
}

// park writes n fallback files of one row each (ids first … first+n-1) under the table.
func (s *site) park(table string, n, first int, sc *arrow.Schema) {
	s.t.Helper()
	for i := first; i < first+n; i++ {
		row := fmt.Sprintf(`{"id":%d,"customer_key":"k%d"}`, i, i)
		if sc == wideFiles {
			row = fmt.Sprintf(`{"id":%d,"customer_key":"k%d","gift":true}`, i, i)
		}
		data, err := pqgen.Bytes(sc, "["+row+"]", pqgen.Options{})
		if err != nil {
			s.t.Fatal(err)
		}
		p := filepath.Join(s.roots[table], filepath.FromSlash(fallback.Prefix), "2026-01-02", fmt.Sprintf("f%05d.parquet", i))
		if err := pqgen.WriteFile(p, data); err != nil {
			s.t.Fatal(err)
		}
	}
}

func (s *site) sql(stmt string) *warehouse.Result {
	s.t.Helper()
	res, err := s.ws.Warehouse().Engine().Exec(context.Background(), stmt)
	if err != nil {
		s.t.Fatalf("%s: %v", stmt, err)
	}
	return res
}

// rows returns the table's rows per id.
func (s *site) rows(table string) map[int64]int {
	s.t.Helper()
	res := s.sql("SELECT id, count(*) FROM " + table + " GROUP BY id")
	out := map[int64]int{}
	for _, r := range res.Rows {
		out[r[0].(int64)] = int(r[1].(int64))
	}
	return out
}

func (s *site) fallbackLeft(table string) int {
	n := 0
	_ = filepath.WalkDir(filepath.Join(s.roots[table], filepath.FromSlash(fallback.Prefix)), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			n++
		}
		return nil
	})
	return n
}

// take returns the events and alerts recorded since the last take.
func (s *site) take() (events, alerts []Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	events, alerts = s.events, s.alerts
	s.events, s.alerts = nil, nil
	return events, alerts
}

func kinds(events []Event, table string) []Kind {
	var out []Kind
	for _, e := range events {
		if e.Table == table || table == "" {
			out = append(out, e.Event)
		}
	}
	return out
}

func count(events []Event, k Kind, table string) int {
	n := 0
	for _, e := range events {
		if e.Event == k && (table == "" || e.Table == table) {
			n++
		}
	}
	return n
}

func (s *site) watcher(cfg Config) *Watcher {
	s.t.Helper()
	if cfg.StageTo == "" {
		cfg.StageTo = "file://" + filepath.Join(s.dir, "staging")
	}
	cfg.Scope = Config{}.Scope
	cfg.Scope.Catalog, cfg.Scope.Schema = "main", "sales"
	w, err := New(cfg, s.deps)
	if err != nil {
		s.t.Fatal(err)
	}
	return w
}

func dirStore(t *testing.T) func(string) journal.Store {
	return func(dir string) journal.Store {
		d, err := journal.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
}

// remoteStore is a journal on storage (local here; any object store the same way).
func remoteStore(t *testing.T) func(string) journal.Store {
	return func(dir string) journal.Store {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := all.Registry().Open(context.Background(), "file://"+dir, storage.Config{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := journal.OpenRemote(b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// TestWatchRecoversBlocksAndCleansUp: the clean table is loaded and verified once; the table
// whose files block raises one alert, however many cycles it stays blocked, and is loaded
// once fixed; nothing is deleted before its batches were verified CleanupAfter ago, then
// exactly the loaded files are; every parked row is in its table once.
func TestWatchRecoversBlocksAndCleansUp(t *testing.T) {
	s := newSite(t, remoteStore(t))
	orders := s.table("orders", tableSchema, 5, 1, fileSchema)
	wide := s.table("wide", tableSchema, 3, 101, wideFiles)
	empty := s.table("empty", tableSchema, 0, 0, fileSchema)
	s.deps.Metrics = NewMetrics(time.Minute)
	const after = 3 * time.Second
	w := s.watcher(Config{CleanupAfter: after})
	ctx := context.Background()

	res := w.Cycle(ctx, nil)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	events, alerts := s.take()
	if got := kinds(events, orders); fmt.Sprint(got) != "[table_found batch_loaded verified]" {
		t.Errorf("orders: %v", got)
	}
	if got := kinds(events, wide); fmt.Sprint(got) != "[table_found blocked]" {
		t.Errorf("wide: %v", got)
	}
	if got := kinds(events, empty); len(got) != 0 {
		t.Errorf("a table without files: %v", got)
	}
	if len(alerts) != 1 || alerts[0].Event != Blocked || alerts[0].Table != wide || len(alerts[0].BlockedGroups) != 1 {
		t.Fatalf("alerts %+v", alerts)
	}
	if ddl := alerts[0].BlockedGroups[0].DDL; len(ddl) == 0 || !strings.Contains(ddl[0], "ADD COLUMNS") {
		t.Errorf("the blocked alert has no fix: %+v", alerts[0].BlockedGroups[0])
	}
	if res.Event.BlockedTables != 1 || res.Event.RowsRecovered != 5 || res.Event.Parked != 2 {
		t.Errorf("cycle end %+v", res.Event)
	}
	if n := testutil.ToFloat64(s.deps.Metrics.tablesBlocked); n != 1 {
		t.Errorf("tables_blocked %v", n)
	}

	// Still blocked, still unfixed: no second alert, no second load.
	for i := 0; i < 2; i++ {
		w.Cycle(ctx, nil)
	}
	events, alerts = s.take()
	if len(alerts) != 0 || count(events, Blocked, "") != 0 || count(events, BatchLoaded, "") != 0 {
		t.Fatalf("unchanged cycles: alerts %+v, events %v", alerts, kinds(events, ""))
	}
	if s.fallbackLeft(orders) != 5 {
		t.Fatal("files were deleted before CleanupAfter")
	}

	// The fix: the column comes back. The next cycle loads the files.
	s.sql("ALTER TABLE " + wide + " ADD COLUMNS (gift BOOLEAN)")
	w.Cycle(ctx, nil)
	fixed := time.Now()
	events, alerts = s.take()
	if got := kinds(events, wide); fmt.Sprint(got) != "[table_found unblocked batch_loaded verified]" {
		t.Errorf("wide after the fix: %v", got)
	}
	if len(alerts) != 0 {
		t.Errorf("alerts after the fix: %+v", alerts)
	}

	// CleanupAfter later, the files of batches verified that long ago go, and only those.
	time.Sleep(time.Until(fixed.Add(after)))
	s.park(orders, 2, 6, fileSchema) // parked since: loaded now, too young to delete
	w.Cycle(ctx, nil)
	events, _ = s.take()
	if n := count(events, Cleaned, ""); n != 2 {
		t.Errorf("cleaned events: %d (%v)", n, kinds(events, ""))
	}
	if s.fallbackLeft(orders) != 2 || s.fallbackLeft(wide) != 0 {
		t.Errorf("left: orders %d, wide %d", s.fallbackLeft(orders), s.fallbackLeft(wide))
	}
	for table, ids := range map[string][]int64{orders: {1, 2, 3, 4, 5, 6, 7}, wide: {101, 102, 103}} {
		rows := s.rows(table)
		for _, id := range ids {
			if rows[id] != 1 {
				t.Errorf("%s: id %d is in the table %d times", table, id, rows[id])
			}
		}
		if len(rows) != len(ids) {
			t.Errorf("%s holds %d ids, want %d", table, len(rows), len(ids))
		}
	}
	if n := testutil.ToFloat64(s.deps.Metrics.rowsRecovered.WithLabelValues(orders)); n != 7 {
		t.Errorf("rows_recovered_total{orders} = %v", n)
	}
}

// TestWatchSkipsALockedTable: a table whose lock another process holds (an operator's reload)
// is left for the cycle with an event, and recovered once the lock is released.
func TestWatchSkipsALockedTable(t *testing.T) {
	s := newSite(t, dirStore(t))
	orders := s.table("orders", tableSchema, 2, 1, fileSchema)
	ctx := context.Background()
	other, err := journal.OpenDir(filepath.Join(s.dir, "journal"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	r, err := recovery.Open(ctx, s.deps.Recovery.Resolver, tableref.Spec{Table: orders}, tableref.Read)
	if err != nil {
		t.Fatal(err)
	}
	held, err := other.Lock(ctx, r.TableID, journal.LockOptions{Owner: journal.Holder{Command: "zbrecover reload main.sales.orders"}})
	if err != nil {
		t.Fatal(err)
	}
	w := s.watcher(Config{})
	res := w.Cycle(ctx, nil)
	events, alerts := s.take()
	if got := kinds(events, orders); fmt.Sprint(got) != "[table_found skipped_locked]" || len(alerts) != 0 || res.Err != nil {
		t.Fatalf("locked: %v, alerts %v, %v", got, alerts, res.Err)
	}
	if e := events[2]; !strings.Contains(e.Holder, "zbrecover reload main.sales.orders") {
		t.Errorf("the event does not name the holder: %+v", e)
	}
	if len(s.rows(orders)) != 0 {
		t.Fatal("a locked table was loaded")
	}
	held.Close()
	w.Cycle(ctx, nil)
	events, _ = s.take()
	if got := kinds(events, orders); fmt.Sprint(got) != "[table_found batch_loaded verified]" {
		t.Errorf("released: %v", got)
	}
}

// TestWatchQuarantines: a table whose loads fail is backed off, alerted once, and quarantined
// after MaxFailures cycles in a row; a quarantined table is no longer tried.
func TestWatchQuarantines(t *testing.T) {
	s := newSite(t, dirStore(t))
	orders := s.table("orders", tableSchema, 1, 1, fileSchema)
	if _, err := s.ws.Warehouse().AddFault(warehouse.Fault{Match: "(?i)^COPY INTO .*orders", Times: -1,
		Error: &warehouse.SQLError{Class: "INSUFFICIENT_PERMISSIONS", SQLState: "42501", Message: "User does not have MODIFY on Table 'main.sales.orders'."}}); err != nil {
		t.Fatal(err)
	}
	w := s.watcher(Config{MaxFailures: 3, Backoff: time.Minute})
	ctx := context.Background()
	for i := 1; i <= 6; i++ {
		w.Cycle(ctx, nil)
		s.clock.add(10 * time.Minute) // past every backoff
	}
	events, alerts := s.take()
	if n := count(events, Error, orders); n != 3 {
		t.Errorf("%d error events, want 3 (then quarantined): %v", n, kinds(events, orders))
	}
	if n := count(events, Quarantined, orders); n != 1 {
		t.Errorf("%d quarantined events", n)
	}
	if len(alerts) != 2 || alerts[0].Event != Error || alerts[0].ErrorKind != KindWarehouse || alerts[1].Event != Quarantined {
		t.Fatalf("alerts: %+v", alerts)
	}
	for _, e := range events {
		if e.Event == Error && e.Failures == 1 && (e.RetryAt == nil || !strings.Contains(e.Error, "MODIFY")) {
			t.Errorf("first error %+v", e)
		}
	}
}

// TestWatchBackoff: a failed table is not tried again before its backoff has passed.
func TestWatchBackoff(t *testing.T) {
	s := newSite(t, dirStore(t))
	orders := s.table("orders", tableSchema, 1, 1, fileSchema)
	if _, err := s.ws.Warehouse().AddFault(warehouse.Fault{Match: "(?i)^COPY INTO", Times: 0,
		Error: &warehouse.SQLError{Class: "INSUFFICIENT_PERMISSIONS", SQLState: "42501", Message: "no MODIFY"}}); err != nil {
		t.Fatal(err)
	}
	w := s.watcher(Config{Backoff: time.Hour})
	ctx := context.Background()
	w.Cycle(ctx, nil) // fails
	w.Cycle(ctx, nil) // backing off: not tried
	events, _ := s.take()
	if got := kinds(events, orders); fmt.Sprint(got) != "[table_found error]" {
		t.Fatalf("during the backoff: %v", got)
	}
	s.clock.add(time.Hour + time.Second)
	w.Cycle(ctx, nil)
	events, _ = s.take()
	if got := kinds(events, orders); fmt.Sprint(got) != "[table_found batch_loaded verified]" {
		t.Errorf("after the backoff: %v", got)
	}
}
