//go:build cgo

package undo

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
	"github.com/zbrecover/zbrecover/tableref"
)

var fileSchema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)

// fixture is a table of the local warehouse that Zerobus writes to, with a journal run that
// loaded n batches of per rows each (ids batch*1000+k), each by a tagged COPY INTO, Zerobus
// committing between them.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	srv   *warehouse.Server
	wh    *databricks.Warehouse
	store *journal.Dir
	tgt   *tableref.Ref
	src   string // the folder the batches' files are in
	run   string
	per   int
	zb    *warehouse.ZerobusWriter
	// zerobus counts the rows Zerobus committed.
	zerobus int
}

const table = "main.default.orders"

func newFixture(t *testing.T, rowTracking bool, n, per int) *fixture {
	t.Helper()
	ctx := context.Background()
	srv := warehouse.New(t)
	wh, err := databricks.OpenDSN(ctx, srv.DSN(), databricks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Close() })
	root := filepath.Join(t.TempDir(), "orders")
	loc, err := storage.Parse("file://" + root)
	if err != nil {
		t.Fatal(err)
	}
	props := ""
	if rowTracking {
		props = " TBLPROPERTIES ('delta.enableRowTracking' = 'true')"
	}
	f := &fixture{t: t, ctx: ctx, srv: srv, wh: wh, src: t.TempDir(), per: per,
		tgt: &tableref.Ref{Name: databricks.TableName{Catalog: "main", Schema: "default", Table: "orders"}, HasName: true, TableID: "tid-orders", Loc: loc, Root: local.New(root)}}
	f.exec("CREATE TABLE " + table + " (id BIGINT NOT NULL, v STRING) LOCATION '" + loc.URL() + "'" + props)
	if f.zb, err = srv.Zerobus(table, warehouse.ZerobusOptions{Rows: 2, Row: func(k int64) []string {
		return []string{fmt.Sprint(900000 + k), "'zerobus'"}
	}}); err != nil {
		t.Fatal(err)
	}
	if f.store, err = journal.OpenDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.store.Close() })
	w, err := journal.Start(ctx, f.store, journal.Target{TableID: f.tgt.TableID, Table: table, Root: f.tgt.Display()}, "", journal.Header{Command: "zbrecover reload"})
	if err != nil {
		t.Fatal(err)
	}
	f.run = w.Run()
	var plan journal.Plan
	for b := 1; b <= n; b++ {
		var rows []string
		for k := 0; k < per; k++ {
			rows = append(rows, fmt.Sprintf(`{"id":%d,"v":"batch %d"}`, b*1000+k, b))
		}
		data, err := pqgen.Bytes(fileSchema, "["+strings.Join(rows, ",")+"]", pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("b%d.parquet", b)
		if err := pqgen.WriteFile(filepath.Join(f.src, name), data); err != nil {
			t.Fatal(err)
		}
		plan.Batches = append(plan.Batches, journal.PlanBatch{Batch: b, Group: "g", Folder: "_zerobus/table_rejected_parquets/",
			Files: []journal.File{{Key: "_zerobus/table_rejected_parquets/" + name, Size: int64(len(data)), Rows: int64(per)}}, ExpectedRows: int64(per), SQL: f.copySQL(name)})
	}
	f.append(w, journal.Record{Kind: journal.KindPlan, Plan: &plan})
	s, err := wh.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, pb := range plan.Batches {
		f.flush(3)
		base := f.latest()
		tag := reload.Tag(f.run, pb.Batch, 1, "d")
		f.append(w, journal.Record{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: pb.Batch, Files: pb.Files, ExpectedRows: pb.ExpectedRows, SQL: pb.SQL, BaseVersion: &base, Tag: tag}})
		if _, err := s.QueryAll(ctx, "SET spark.databricks.delta.commitInfo.userMetadata = '"+tag+"'"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.QueryAll(ctx, pb.SQL); err != nil {
			t.Fatal(err)
		}
		v := f.latest()
		f.append(w, journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: pb.Batch, Inserted: journal.Int64(int64(per))}},
			journal.Record{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: pb.Batch, Status: journal.BatchVerified, Version: &v, Evidence: journal.EvidenceTag}})
	}
	f.flush(3)
	f.append(w, journal.Record{Kind: journal.KindEnd, End: &journal.End{State: journal.RunVerified}})
	return f
}

func (f *fixture) copySQL(name string) string {
	return "COPY INTO " + table + " FROM 'file://" + f.src + "/' FILEFORMAT = PARQUET FILES = ('" + name + "') COPY_OPTIONS ('mergeSchema' = 'false')"
}

func (f *fixture) exec(stmt string) *databricks.Result {
	f.t.Helper()
	res, err := f.wh.QueryAll(f.ctx, stmt)
	if err != nil {
		f.t.Fatalf("%s: %v", stmt, err)
	}
	return res
}

func (f *fixture) count(where string) int64 {
	f.t.Helper()
	res := f.exec("SELECT count(*) FROM " + table + " WHERE " + where)
	n, _ := reload.AsInt(res.Rows[0][0])
	return n
}

func (f *fixture) latest() int64 {
	f.t.Helper()
	v, err := reload.NewHistory(f.wh, f.tgt.Name, 1, time.Millisecond).Latest(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return v
}

// history is the table's history, newest first.
func (f *fixture) history() []reload.Commit {
	f.t.Helper()
	cs, err := reload.ParseHistory(f.exec("DESCRIBE HISTORY " + table))
	if err != nil {
		f.t.Fatal(err)
	}
	return cs
}

func (f *fixture) flush(k int) {
	f.t.Helper()
	if _, err := f.zb.FlushN(f.ctx, k); err != nil {
		f.t.Fatal(err)
	}
	f.zerobus += 2 * k
}

func (f *fixture) append(w *journal.Writer, recs ...journal.Record) {
	f.t.Helper()
	for _, r := range recs {
		if err := w.Append(f.ctx, r); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) deps(tagged bool) Deps {
	d := Deps{Warehouse: f.wh, Journal: f.store, Identity: "fake-user@example.com"}
	if tagged {
		d.Session = func(ctx context.Context) (reload.Session, error) { return f.wh.Session(ctx) }
	}
	return d
}

// undo prepares and executes an undo with req, as one process.
func (f *fixture) undo(req Request) (*Plan, *Report, error) {
	f.t.Helper()
	req.Backoff = time.Millisecond
	p, err := Prepare(f.ctx, f.deps(true), f.tgt, req)
	if err != nil {
		return nil, nil, err
	}
	defer p.Close()
	rep, err := p.Execute(f.ctx, RunOptions{})
	return p.Plan, rep, err
}

func (f *fixture) state() *journal.State {
	f.t.Helper()
	st, err := journal.ReadState(f.ctx, f.store, f.tgt.TableID, f.run)
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

// batchRows counts the table's rows of batch b (ids b*1000…).
func (f *fixture) batchRows(b int) int64 {
	return f.count(fmt.Sprintf("id BETWEEN %d AND %d", b*1000, b*1000+999))
}

func (f *fixture) option(bp BatchPlan, ev journal.UndoEvidence) Option {
	for _, o := range bp.Options {
		if o.Evidence == ev {
			return o
		}
	}
	f.t.Fatalf("batch %d: no %s option in %+v", bp.Batch, ev, bp.Options)
	return Option{}
}

// TestUndoByRowIDsAfterOptimize: with row tracking, OPTIMIZE between the load and the undo
// leaves the row IDs exact (the batch's rows, and only they, are deleted, every Zerobus row
// kept) while the files evidence is refused with the OPTIMIZE that removed the files; the
// DELETE's commit is tagged and shows the batch's rows; an undone batch is undone once.
func TestUndoByRowIDsAfterOptimize(t *testing.T) {
	f := newFixture(t, true, 3, 7)
	f.exec("OPTIMIZE " + table)
	f.flush(2)
	plan, rep, err := f.undo(Request{Batches: []int{2}})
	if err != nil {
		t.Fatalf("undo: %v (%+v)", err, rep)
	}
	bp := plan.Batches[0]
	if !plan.RowTracking || bp.Evidence != journal.UndoByRowIDs || bp.Matched != 7 || !strings.Contains(bp.DeleteSQL, "_metadata.row_id BETWEEN") {
		t.Fatalf("plan %+v", bp)
	}
	if o := f.option(bp, journal.UndoByFiles); o.Usable || !strings.Contains(o.Why, "(OPTIMIZE) removed") {
		t.Errorf("files option after OPTIMIZE: %+v", o)
	}
	if rep.Undone != 1 || rep.DeletedRows != 7 || rep.Tagging != "tag" || rep.Batches[0].Version == nil {
		t.Fatalf("report %+v", rep)
	}
	if f.batchRows(2) != 0 || f.batchRows(1) != 7 || f.batchRows(3) != 7 || f.count("v = 'zerobus'") != int64(f.zerobus) {
		t.Errorf("rows: batch 1 %d, 2 %d, 3 %d, zerobus %d of %d", f.batchRows(1), f.batchRows(2), f.batchRows(3), f.count("v = 'zerobus'"), f.zerobus)
	}
	last := f.history()[0]
	if last.Operation != "DELETE" || last.Metrics["numDeletedRows"] != "7" || last.UserMetadata != reload.UndoTag(f.run, 2, 1) {
		t.Errorf("the DELETE's commit: %s %v %q", last.Operation, last.Metrics, last.UserMetadata)
	}
	st := f.state()
	if st.Batch(2).Status != journal.BatchUndone || st.Status != journal.RunPartiallyUndone || *st.Batch(2).Undo.Outcome.Version != *rep.Batches[0].Version {
		t.Errorf("journal: batch 2 %s, run %s", st.Batch(2).Status, st.Status)
	}
	if _, _, err := f.undo(Request{Batches: []int{2}}); err == nil || !strings.Contains(err.Error(), "undone already") {
		t.Errorf("a second undo of batch 2: %v", err)
	}
	// The rest of the run.
	if _, rep, err = f.undo(Request{}); err != nil || rep.Undone != 2 {
		t.Fatalf("undo of the rest: %+v, %v", rep, err)
	}
	if f.count("true") != int64(f.zerobus) {
		t.Errorf("%d rows left, want the %d Zerobus rows", f.count("true"), f.zerobus)
	}
	if st := f.state(); st.Status != journal.RunUndone {
		t.Errorf("run %s", st.Status)
	}
	if _, _, err := f.undo(Request{}); !errors.Is(err, ErrNothing) {
		t.Errorf("an undo with nothing left: %v", err)
	}
}

// TestUndoByFilesThenKeys: without row tracking, the load's files name its rows while no
// later commit removed them; after an OPTIMIZE only the run's keys file can, when no other row
// has those keys; a Zerobus row with one of them refuses the batch with the count; with none
// of the three, the batch is refused saying why and what would have made it possible.
func TestUndoByFilesThenKeys(t *testing.T) {
	f := newFixture(t, false, 3, 5)
	plan, rep, err := f.undo(Request{Batches: []int{1}})
	if err != nil || plan.Batches[0].Evidence != journal.UndoByFiles || rep.Undone != 1 {
		t.Fatalf("undo by files: %+v %+v, %v", plan, rep, err)
	}
	if o := f.option(plan.Batches[0], journal.UndoByRowIDs); o.Usable || !strings.Contains(o.Why, "row tracking is not enabled") {
		t.Errorf("row IDs option: %+v", o)
	}
	if f.batchRows(1) != 0 || f.batchRows(2) != 5 || f.count("v = 'zerobus'") != int64(f.zerobus) {
		t.Errorf("after undo by files: batch 1 %d, batch 2 %d", f.batchRows(1), f.batchRows(2))
	}
	f.exec("OPTIMIZE " + table)
	plan, rep, err = f.undo(Request{Batches: []int{2}})
	if !errors.Is(err, ErrRefused) || plan.Batches[0].Refused == "" || !strings.Contains(plan.Batches[0].Refused, "row tracking enabled on the table before the load") ||
		!strings.Contains(plan.Batches[0].Refused, "reload --key") {
		t.Fatalf("without evidence: %+v, %v", plan.Batches, err)
	}
	if f.batchRows(2) != 5 {
		t.Fatal("a refused undo deleted rows")
	}
	// A keys file of batches 2 and 3 (reload --key writes one beside the staged copies).
	keys := t.TempDir()
	var rows []string
	for _, b := range []int{2, 3} {
		for k := 0; k < 5; k++ {
			rows = append(rows, fmt.Sprintf(`{"g":"%d","k0":%d}`, b, b*1000+k))
		}
	}
	kschema := arrow.NewSchema([]arrow.Field{{Name: "g", Type: arrow.BinaryTypes.String}, {Name: "k0", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	data, err := pqgen.Bytes(kschema, "["+strings.Join(rows, ",")+"]", pqgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pqgen.WriteFile(filepath.Join(keys, "_zbrecover/keys/run.parquet"), data); err != nil {
		t.Fatal(err)
	}
	st := f.state()
	w, err := journal.Continue(f.ctx, f.store, st, journal.Header{Command: "zbrecover reload --key id"})
	if err != nil {
		t.Fatal(err)
	}
	f.append(w, journal.Record{Kind: journal.KindKeys, Keys: &journal.KeysFile{Location: "file://" + keys, Key: "_zbrecover/keys/run.parquet", Columns: []string{"id"}, Rows: 10, Batches: []int{2, 3}}},
		journal.Record{Kind: journal.KindEnd, End: &journal.End{State: st.Status}})
	// A record of batch 3 that Zerobus published too (at-least-once): its key is twice in the table.
	f.exec("INSERT INTO " + table + " VALUES (3002, 'zerobus')")
	plan, rep, err = f.undo(Request{})
	if err != nil || rep.Undone != 1 || rep.Refused != 1 {
		t.Fatalf("undo by keys: %+v, %v", rep, err)
	}
	for _, bp := range plan.Batches {
		switch bp.Batch {
		case 2:
			if bp.Evidence != journal.UndoByKeys || bp.Refused != "" {
				t.Errorf("batch 2: %+v", bp)
			}
		case 3:
			if !strings.Contains(bp.Refused, "1 other rows of the table have keys of its records") {
				t.Errorf("batch 3: %+v", bp)
			}
		}
	}
	if f.batchRows(2) != 0 || f.batchRows(3) != 6 {
		t.Errorf("after undo by keys: batch 2 %d, batch 3 %d", f.batchRows(2), f.batchRows(3))
	}
}

// TestUndoConverges: a DELETE whose answer is lost after it committed is settled from its
// tagged commit by the next run, never deleted twice; one cut before it reached the warehouse
// is counted and sent again; the journal says undoing in between.
func TestUndoConverges(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault warehouse.Fault
	}{
		{"answer lost", warehouse.Fault{Match: "^DELETE", DropResponse: true}},
		{"cut before", warehouse.Fault{Match: "^DELETE", DropRequest: true}},
		{"post-commit error", warehouse.Fault{Match: "^DELETE", CommitThenError: warehouse.PostCommitHookFailed()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, true, 2, 4)
			f.srv.Inject(c.fault)
			_, rep, err := f.undo(Request{Batches: []int{1}})
			if err == nil {
				t.Fatalf("a %s DELETE was not reported: %+v", c.name, rep)
			}
			if st := f.state(); st.Batch(1).Status != journal.BatchUndoing && st.Batch(1).Status != journal.BatchVerified {
				t.Fatalf("after the fault: batch 1 %s", st.Batch(1).Status)
			}
			f.flush(2)
			_, rep, err = f.undo(Request{})
			if err != nil {
				t.Fatalf("re-run: %v (%+v)", err, rep)
			}
			st := f.state()
			if st.Batch(1).Status != journal.BatchUndone || st.Batch(2).Status != journal.BatchUndone {
				t.Fatalf("after the re-run: %s, %s", st.Batch(1).Status, st.Batch(2).Status)
			}
			if f.count("true") != int64(f.zerobus) {
				t.Errorf("%d rows left, want the %d Zerobus rows", f.count("true"), f.zerobus)
			}
			deletes := 0
			for _, e := range f.history() {
				if e.Operation == "DELETE" && e.Metrics["numDeletedRows"] != "0" {
					deletes++
				}
			}
			if deletes != 2 {
				t.Errorf("%d DELETE commits that deleted rows, want 2 (one per batch)", deletes)
			}
		})
	}
}

// TestUndoMetadataRefusedInDelete: a warehouse that does not take _metadata in a DELETE's
// condition refuses the DELETE before it commits: the batch stays verified, nothing is
// deleted, and the error points at undo by keys.
func TestUndoMetadataRefusedInDelete(t *testing.T) {
	f := newFixture(t, true, 1, 3)
	f.srv.SetUnknowns(warehouse.Unknowns{RefuseMetadataInDelete: true})
	_, rep, err := f.undo(Request{})
	if err == nil || !strings.Contains(err.Error(), "UNRESOLVED_COLUMN") || !strings.Contains(err.Error(), "keys") || rep.Failed != 1 {
		t.Fatalf("undo: %+v, %v", rep, err)
	}
	if st := f.state(); st.Batch(1).Status != journal.BatchVerified || f.batchRows(1) != 3 {
		t.Errorf("batch 1 %s, %d rows", st.Batch(1).Status, f.batchRows(1))
	}
	f.srv.SetUnknowns(warehouse.Unknowns{})
	if _, rep, err := f.undo(Request{}); err != nil || rep.Undone != 1 || f.batchRows(1) != 0 {
		t.Errorf("undo once accepted: %+v, %v", rep, err)
	}
}

// TestUndoModifiedRows: rows an UPDATE changed since the load are counted; the DELETE needs
// the operator's separate confirmation for them.
func TestUndoModifiedRows(t *testing.T) {
	f := newFixture(t, true, 1, 4)
	f.exec("UPDATE " + table + " SET v = 'fixed by hand' WHERE id = 1001")
	plan, _, err := f.undo(Request{})
	if !errors.Is(err, ErrRefused) || plan.Batches[0].Modified != 1 || !strings.Contains(plan.Batches[0].Refused, "--include-modified") {
		t.Fatalf("without confirmation: %+v, %v", plan.Batches, err)
	}
	if _, rep, err := f.undo(Request{IncludeModified: true}); err != nil || rep.Undone != 1 || f.batchRows(1) != 0 {
		t.Errorf("confirmed: %+v, %v", rep, err)
	}
}

// TestUndoOfACleanedRun: a run whose files cleanup deleted is refused without an archive
// copy of each; with one, the plan says the rows will be reloaded from the archive.
func TestUndoOfACleanedRun(t *testing.T) {
	for _, archived := range []bool{false, true} {
		t.Run(fmt.Sprint("archived=", archived), func(t *testing.T) {
			f := newFixture(t, true, 1, 3)
			st := f.state()
			w, err := journal.Continue(f.ctx, f.store, st, journal.Header{Command: "zbrecover cleanup"})
			if err != nil {
				t.Fatal(err)
			}
			file := st.Batch(1).Files[0]
			res := journal.DeletedResult{Key: file.Key, Status: journal.Deleted}
			if archived {
				res.Archive = "s3://archive/orders/" + file.Key
			}
			f.append(w, journal.Record{Kind: journal.KindDeleteIntent, Deletion: &journal.Deletion{Files: []journal.File{file}}},
				journal.Record{Kind: journal.KindDeleted, Deletion: &journal.Deletion{Results: []journal.DeletedResult{res}}},
				journal.Record{Kind: journal.KindEnd, End: &journal.End{State: journal.RunCleaned}})
			p, err := Prepare(f.ctx, f.deps(true), f.tgt, Request{})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			bp := p.Plan.Batches[0]
			if !archived {
				if !strings.Contains(bp.Refused, "cleanup deleted 1 of its files and no archive holds") {
					t.Errorf("without an archive: %+v", bp)
				}
				return
			}
			if bp.Refused != "" || !bp.Archived || len(p.Plan.Archives) != 1 || p.Plan.Archives[0] != "s3://archive/orders" ||
				!strings.Contains(p.Plan.Redo, "reloaded from the archive at s3://archive/orders") {
				t.Errorf("with an archive: %+v, archives %v, redo %q", bp, p.Plan.Archives, p.Plan.Redo)
			}
		})
	}
}
