package reload

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

// fakeWarehouse answers statements with a function; it is for the failure paths only (the
// end-to-end tests use the local warehouse).
type fakeWarehouse struct {
	answer func(stmt string) (*databricks.Result, error)
	sent   []string
}

func (w *fakeWarehouse) QueryAll(_ context.Context, stmt string, _ ...any) (*databricks.Result, error) {
	w.sent = append(w.sent, stmt)
	return w.answer(stmt)
}

func copyResult(n int64) *databricks.Result {
	return &databricks.Result{Columns: []string{"num_affected_rows", "num_inserted_rows", "num_skipped_corrupt_files"}, Rows: [][]any{{n, n, int64(0)}}}
}

func historyResult(commits ...Commit) *databricks.Result {
	res := &databricks.Result{Columns: []string{"version", "timestamp", "userName", "operation", "operationMetrics", "engineInfo"}}
	for _, c := range commits {
		m := `{`
		for k, v := range c.Metrics {
			if len(m) > 1 {
				m += ","
			}
			m += `"` + k + `":"` + v + `"`
		}
		m += `}`
		res.Rows = append(res.Rows, []any{c.Version, c.Time, c.User, c.Operation, m, c.EngineInfo})
	}
	return res
}

func smallPlan(t *testing.T, n int) *Plan {
	t.Helper()
	cur := sd.NewSchema().Col("id", sd.LongType, sd.NotNull)
	var files [][2]string
	for i := 0; i < n; i++ {
		files = append(files, [2]string{"sub/f" + string(rune('a'+i)) + ".parquet", "aaa"})
	}
	p, err := NewPlan(report(map[string]sd.Schema{"aaa": cur}, files), table(cur), orders, dir(t, "s3://lake/orders"), PlanOptions{BatchFiles: 1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func deps(t *testing.T, w Warehouse) (Deps, journal.Store) {
	t.Helper()
	j, err := journal.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return Deps{Warehouse: w, Journal: j, Target: journal.Target{TableID: "tid", Table: "main.sales.orders", Root: "s3://lake/orders"}, User: "me"}, j
}

var opts = Options{Root: "s3://lake/orders", Prefix: "_zerobus/table_rejected_parquets/", Backoff: time.Millisecond}

// TestZeroRowsForUnseenFilesIsUnknown: 0 rows for files no journal record shows loading (say,
// a folder the warehouse did not list) is unknown, never verified.
func TestZeroRowsForUnseenFilesIsUnknown(t *testing.T) {
	w := &fakeWarehouse{answer: func(stmt string) (*databricks.Result, error) {
		if strings.HasPrefix(stmt, "DESCRIBE HISTORY") {
			return historyResult(Commit{Version: 7, Operation: "WRITE", User: "zerobus", Metrics: map[string]string{"numOutputRows": "2"}}), nil
		}
		return copyResult(0), nil
	}}
	d, j := deps(t, w)
	rep, err := Run(context.Background(), d, orders, smallPlan(t, 2), opts)
	if !errors.Is(err, ErrUnknown) || rep.Unknown != 2 || rep.Verified != 0 {
		t.Fatalf("err %v, report %+v", err, rep)
	}
	st, err := journal.ReadState(context.Background(), j, "tid", rep.Run)
	if err != nil || len(st.VerifiedFiles()) != 0 || st.Status != journal.RunUnknown {
		t.Errorf("journal: %v, verified %d, status %s", err, len(st.VerifiedFiles()), st.Status)
	}
}

func TestMismatchStops(t *testing.T) {
	w := &fakeWarehouse{answer: func(stmt string) (*databricks.Result, error) {
		if strings.HasPrefix(stmt, "DESCRIBE HISTORY") {
			return historyResult(), nil
		}
		return copyResult(5), nil
	}}
	d, _ := deps(t, w)
	rep, err := Run(context.Background(), d, orders, smallPlan(t, 3), opts)
	if !errors.Is(err, ErrMismatch) || rep.Mismatch != 1 {
		t.Fatalf("err %v, report %+v", err, rep)
	}
	loads := 0
	for _, s := range w.sent {
		if strings.HasPrefix(s, "COPY INTO") && !strings.Contains(s, "VALIDATE") {
			loads++
		}
	}
	if loads != 1 {
		t.Errorf("%d load statements after a mismatch, want 1", loads)
	}
}

// TestSettleNeverTakesAnotherCommit: an unanswered batch is settled only by a COPY INTO
// after the version recorded in its intent, by this user, with its row count; Zerobus
// commits and commits by others never settle it, and two candidates are ambiguous.
func TestSettleNeverTakesAnotherCommit(t *testing.T) {
	for _, c := range []struct {
		name    string
		history []Commit
		want    journal.BatchStatus
	}{
		{"own commit", []Commit{{Version: 11, Operation: "COPY INTO", User: "me", Metrics: map[string]string{"numOutputRows": "2", "numFiles": "9"}},
			{Version: 10, Operation: "WRITE", User: "zerobus", Metrics: map[string]string{"numOutputRows": "2"}}}, journal.BatchVerified},
		{"only zerobus and older", []Commit{{Version: 11, Operation: "WRITE", User: "zerobus", Metrics: map[string]string{"numOutputRows": "2"}},
			{Version: 9, Operation: "COPY INTO", User: "me", Metrics: map[string]string{"numOutputRows": "2"}}}, journal.BatchUnknown},
		{"another user", []Commit{{Version: 11, Operation: "COPY INTO", User: "someone", Metrics: map[string]string{"numOutputRows": "2"}}}, journal.BatchUnknown},
		{"ambiguous", []Commit{{Version: 12, Operation: "COPY INTO", User: "me", Metrics: map[string]string{"numOutputRows": "2"}},
			{Version: 11, Operation: "COPY INTO", User: "me", Metrics: map[string]string{"numOutputRows": "2"}}}, journal.BatchUnknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			lost := true
			w := &fakeWarehouse{answer: func(stmt string) (*databricks.Result, error) {
				if strings.HasPrefix(stmt, "DESCRIBE HISTORY") && strings.HasSuffix(stmt, "LIMIT 1") {
					return historyResult(Commit{Version: 10}), nil
				}
				if strings.HasPrefix(stmt, "DESCRIBE HISTORY") {
					return historyResult(c.history...), nil
				}
				if strings.Contains(stmt, "VALIDATE") || strings.HasPrefix(stmt, "SHOW TBLPROPERTIES") {
					return copyResult(0), nil
				}
				if lost {
					lost = false
					return nil, &databricks.SQLError{Class: databricks.ClassConnection, Message: "connection reset"}
				}
				return copyResult(0), nil // the re-send: COPY INTO skips the loaded file
			}}
			d, j := deps(t, w)
			p := smallPlan(t, 1)
			if _, err := Run(context.Background(), d, orders, p, opts); err == nil {
				t.Fatal("a lost answer was not reported")
			}
			rep, _ := Run(context.Background(), d, orders, nil, opts)
			if rep == nil || len(rep.Batches) != 1 || rep.Batches[0].Status != c.want {
				t.Fatalf("report %+v", rep)
			}
			if _, err := journal.ReadState(context.Background(), j, "tid", rep.Run); err != nil {
				t.Errorf("journal does not replay: %v", err)
			}
		})
	}
}
