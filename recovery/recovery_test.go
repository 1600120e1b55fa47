//go:build cgo

package recovery

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/reload"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/tableref"
)

const tableName = "main.sales.orders"

// table is a managed table of a local workspace with fallback files: n files of one row each,
// in the producers' schema (id, customer_key).
type table struct {
	ws   *workspace.Workspace
	root string
	env  Env
}

func newTable(t *testing.T, n int) *table {
	t.Helper()
	root := filepath.Join(t.TempDir(), "orders")
	schema := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer_key", sd.StringType)
	if _, err := deltatest.Write(root, deltatest.Table{Schema: schema, Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	files := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer_key", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	for i := 1; i <= n; i++ {
		data, err := pqgen.Bytes(files, fmt.Sprintf(`[{"id":%d,"customer_key":"k%d"}]`, i, i), pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := pqgen.WriteFile(filepath.Join(root, filepath.FromSlash(fallback.Prefix), fmt.Sprintf("2026-01-02/f%03d.parquet", i)), data); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Start(workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	ctx := context.Background()
	if err := ws.RegisterTable(ctx, tableName, root, true); err != nil {
		t.Fatal(err)
	}
	u := ws.Warehouse().Unknowns()
	u.PathAccess = warehouse.OverlapAllowed
	ws.Warehouse().SetUnknowns(u)
	tw := tableref.NewWorkspace(databricks.Options{Host: ws.URL(), WarehouseID: ws.WarehouseID(), ConfigFile: filepath.Join(t.TempDir(), "none")})
	t.Setenv("DATABRICKS_TOKEN", ws.Token())
	t.Cleanup(func() { tw.Close() })
	wh, err := tw.Warehouse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	store, err := journal.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	r := &tableref.Resolver{Workspace: tw, StorageAuth: databricks.StorageAuthDefault,
		Open: func(ctx context.Context, loc storage.Location, cfg storage.Config) (storage.Backend, error) {
			return all.Registry().OpenLocation(ctx, loc, cfg)
		}}
	return &table{ws: ws, root: root, env: Env{Resolver: r, Journal: store, Warehouse: wh, Concurrency: 4}}
}

func (tb *table) request() Request {
	src := &tableref.WarehouseSource{Workspace: tb.env.Resolver.Workspace}
	return Request{Target: tableref.Spec{Table: tableName}, Prefix: fallback.Prefix, Header: journal.Header{Command: "test"},
		Schema: Schema{From: "warehouse", Source: src}}
}

// TestPrepareGathersUnderTheLock: the table is identified and locked before its files are
// inspected, the plan loads every file once, and the lock is held until Close.
func TestPrepareGathersUnderTheLock(t *testing.T) {
	tb := newTable(t, 5)
	ctx := context.Background()
	var lockedWhileInspecting atomic.Bool
	env := tb.env
	identified, err := Open(ctx, tb.env.Resolver, tableref.Spec{Table: tableName}, tableref.Read)
	if err != nil {
		t.Fatal(err)
	}
	env.Footers = func(inspect.Progress) {
		if identified == nil {
			return
		}
		l, err := tb.env.Journal.Lock(ctx, identified.TableID, journal.LockOptions{})
		if err == nil {
			l.Close()
		}
		lockedWhileInspecting.Store(errors.Is(err, journal.ErrLocked))
	}
	rec, err := Prepare(ctx, env, tb.request())
	if err != nil {
		t.Fatal(err)
	}
	if identified.TableID == "" || rec.Target.TableID != identified.TableID {
		t.Fatalf("identified %+v, recovery's table %+v", identified, rec.Target)
	}
	if !lockedWhileInspecting.Load() {
		t.Error("the table's lock was not held while its files were inspected")
	}
	if got := rec.Plan.Files(); got != 5 || rec.Plan.Rows() != 5 || rec.Report.Totals.Files != 5 {
		t.Errorf("plan of %d files, %d rows; report of %d files", got, rec.Plan.Rows(), rec.Report.Totals.Files)
	}
	if _, err := tb.env.Journal.Lock(ctx, rec.Target.TableID, journal.LockOptions{}); !errors.Is(err, journal.ErrLocked) {
		t.Errorf("the prepared reload does not hold the lock: %v", err)
	}
	rep, err := rec.Execute(ctx, reload.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verified != len(rep.Batches) || rep.Inserted != 5 {
		t.Errorf("report %+v", rep)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := tb.env.Journal.Lock(ctx, rec.Target.TableID, journal.LockOptions{})
	if err != nil {
		t.Fatalf("the lock was not released by Close: %v", err)
	}
	l.Close()

	// A second gathering finds everything loaded.
	again, err := Prepare(ctx, tb.env, tb.request())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !again.Nothing() || len(again.Plan.Skipped) != 5 {
		t.Errorf("second prepare: nothing %v, skipped %d", again.Nothing(), len(again.Plan.Skipped))
	}
}

// TestPrepareLockedReadsNothing: a table another process holds is refused before any footer
// is read, and no Recovery is returned.
func TestPrepareLockedReadsNothing(t *testing.T) {
	tb := newTable(t, 2)
	ctx := context.Background()
	r, err := Open(ctx, tb.env.Resolver, tableref.Spec{Table: tableName}, tableref.Read)
	if err != nil {
		t.Fatal(err)
	}
	held, err := tb.env.Journal.Lock(ctx, r.TableID, journal.LockOptions{Owner: journal.Holder{Command: "another reload"}})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	env := tb.env
	var read atomic.Int64
	env.Footers = func(inspect.Progress) { read.Add(1) }
	rec, err := Prepare(ctx, env, tb.request())
	var le *journal.LockedError
	if !errors.As(err, &le) || rec == nil || rec.Prepared != nil || rec.Target.TableID != r.TableID {
		t.Fatalf("Prepare on a locked table: %v, %v", rec, err)
	}
	if read.Load() != 0 {
		t.Errorf("footers were read on a locked table (%d progress calls)", read.Load())
	}
}

// TestPrepareRefusesAKeyTheTableLacks: a load by key, or a key check, on a column the table
// does not have is a usage error naming the flag that named it, and nothing is recorded.
func TestPrepareRefusesAKeyTheTableLacks(t *testing.T) {
	tb := newTable(t, 1)
	ctx := context.Background()
	req := tb.request()
	req.Dedupe = &Dedupe{Key: reload.Keys{"order_id"}}
	rec, err := Prepare(ctx, tb.env, req)
	var ue *UsageError
	if !errors.As(err, &ue) || rec == nil || rec.Prepared != nil || ue.Msg != "the table has no column `order_id` (--dedupe-key and --dedupe-order name table columns)" {
		t.Fatalf("got %v, %v", rec, err)
	}
	req = tb.request()
	req.Key = reload.Keys{"id", "order_id"}
	rec, err = Prepare(ctx, tb.env, req)
	if !errors.As(err, &ue) || rec == nil || rec.Prepared != nil || ue.Msg != "the table has no column `order_id` (--key names table columns)" {
		t.Fatalf("--key: got %v, %v", rec, err)
	}
	tables, err := tb.env.Journal.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range tables {
		if runs, _ := tb.env.Journal.RunIDs(ctx, id); len(runs) > 0 {
			t.Errorf("a run was recorded: %v", runs)
		}
	}
}
