package history_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/history"
	"github.com/zbrecover/zbrecover/journal"
)

// writeRun journals a run of one verified batch of two files, the second deleted by cleanup.
func writeRun(t *testing.T, s journal.Store, table string) string {
	t.Helper()
	ctx := context.Background()
	w, err := journal.Start(ctx, s, journal.Target{TableID: table, Table: "main.sales." + table, Root: "s3://lake/" + table}, "", journal.Header{Command: "reload"})
	if err != nil {
		t.Fatal(err)
	}
	files := []journal.File{{Key: "_zerobus/table_rejected_parquets/a.parquet", Size: 10, Rows: 2}, {Key: "_zerobus/table_rejected_parquets/b.parquet", Size: 20, Rows: 3}}
	v := int64(7)
	for _, r := range []journal.Record{
		{Kind: journal.KindPlan, Plan: &journal.Plan{Batches: []journal.PlanBatch{{Batch: 1, Group: "g", Folder: "_zerobus/table_rejected_parquets/", Files: files, ExpectedRows: 5, SQL: "COPY INTO 1"}}}},
		{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: 1, Files: files, ExpectedRows: 5, SQL: "COPY INTO 1"}},
		{Kind: journal.KindResult, Result: &journal.Result{Batch: 1, Inserted: journal.Int64(5), QueryID: "q-1"}},
		{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: 1, Status: journal.BatchVerified, Version: &v}},
		{Kind: journal.KindEnd, End: &journal.End{State: journal.RunVerified}},
	} {
		if err := w.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	return w.Run()
}

func TestListAndReadRuns(t *testing.T) {
	ctx := context.Background()
	s, err := journal.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run := writeRun(t, s, "orders")
	writeRun(t, s, "returns")
	all, err := history.ListRuns(ctx, s, nil)
	if err != nil || len(all.Runs) != 2 || all.Journal != s.Location() {
		t.Fatalf("every table: %+v, %v", all, err)
	}
	one, err := history.ListRuns(ctx, s, []string{"orders"})
	if err != nil || len(one.Runs) != 1 || one.Runs[0].Run != run || one.Runs[0].Files != 2 || one.Runs[0].ExpectedRows != 5 {
		t.Fatalf("one table: %+v, %v", one, err)
	}
	r, err := history.ReadRun(ctx, s, nil, "", run)
	if err != nil || r.Table != "main.sales.orders" || len(r.Files) != 2 {
		t.Fatalf("run: %+v, %v", r, err)
	}
	if f := r.Files[1]; f.Key != "_zerobus/table_rejected_parquets/b.parquet" || f.Rows != 3 || f.Batch != 1 || f.State != "verified" ||
		f.Version == nil || *f.Version != 7 || f.QueryID != "q-1" || f.Inserted == nil || *f.Inserted != 5 {
		t.Errorf("file %+v", f)
	}
	_, err = history.ReadRun(ctx, s, []string{"returns"}, "main.sales.returns", run)
	var nr *history.NoRunError
	returns, _ := history.ListRuns(ctx, s, []string{"returns"})
	want := "the journal at " + s.Location() + " has no run " + run + " of main.sales.returns. Its runs of main.sales.returns, newest first: " +
		returns.Runs[0].Run + " (verified, started "
	if !errors.As(err, &nr) || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "`zbrecover history main.sales.returns` lists them with their files and rows") {
		t.Errorf("a run of another table:\ngot  %v\nwant %s…", err, want)
	}
	// A mistyped id (two neighbouring characters that differ swapped): the run probably meant.
	typo := swapNeighbours(run)
	if err := history.MissingRun(ctx, s, []string{"orders"}, "main.sales.orders", typo); !errors.As(err, &nr) ||
		!strings.Contains(err.Error(), "has no run "+typo+" of main.sales.orders; did you mean "+run+"?") {
		t.Errorf("a mistyped run: %v", err)
	}
	if err := history.MissingRun(ctx, s, nil, "", run); err != nil {
		t.Errorf("a run the journal holds: %v", err)
	}
	if err := history.MissingRun(ctx, s, []string{"nothing"}, "main.sales.nothing", "x"); err == nil ||
		!strings.Contains(err.Error(), "it holds no run of main.sales.nothing at all") {
		t.Errorf("no run at all: %v", err)
	}
}

// swapNeighbours swaps the last two neighbouring characters of id that differ (swapping two
// equal ones would give back the same id).
func swapNeighbours(id string) string {
	b := []byte(id)
	for i := len(b) - 2; i >= 0; i-- {
		if b[i] != b[i+1] {
			b[i], b[i+1] = b[i+1], b[i]
			return string(b)
		}
	}
	panic("an id of one repeated character: " + id)
}
