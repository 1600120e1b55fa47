package reload

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/journal"
)

// TestStopFinishesTheBatchInFlight: a graceful stop asked while a batch's statement runs
// lets that statement finish and be journaled as verified; Execute returns ErrInterrupted
// before the next batch, which is never sent; the same reload run again continues the run and
// loads every file once.
func TestStopFinishesTheBatchInFlight(t *testing.T) {
	sc := newScene(t, 4, 1, 10)
	stop := make(chan struct{})
	var sentAfterStop int
	sc.m.fault = func(stmt string, _ int) faultKind {
		if !strings.HasPrefix(stmt, "COPY INTO") || strings.Contains(stmt, "VALIDATE") {
			return faultNone
		}
		select {
		case <-stop:
			sentAfterStop++
		default:
			if copyOf(stmt, "f-0001.parquet") {
				close(stop) // the stop comes while batch 2's statement runs
			}
		}
		return faultNone
	}
	o := testOpts
	o.BatchFiles = 1
	p, err := Prepare(context.Background(), sc.deps(t, true), sc.tgt, sc.report(), sc.table, o)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Execute(context.Background(), RunOptions{Stop: stop})
	p.Close()
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "before batch 3") {
		t.Fatalf("Execute after a stop: %v", err)
	}
	if sentAfterStop != 0 || rep.Verified != 2 || len(rep.Batches) != 2 {
		t.Fatalf("%d statements sent after the stop; report %+v", sentAfterStop, rep)
	}
	st := sc.state(t)
	if batchStatus(st, 2) != journal.BatchVerified || st.Batch(3).Attempts != 0 {
		t.Fatalf("batch 2 %s, batch 3 attempts %d", batchStatus(st, 2), st.Batch(3).Attempts)
	}
	if _, err := sc.reload(t, sc.deps(t, true), o); err != nil {
		t.Fatal(err)
	}
	for _, id := range sc.files {
		if n := sc.inTable(id); n != 1 {
			t.Errorf("%s loaded %d times", id, n)
		}
	}
}

// TestStopDuringPreflight: a graceful stop asked while the VALIDATE of the second of four
// batches runs lets that check finish and sends no other statement: no further check and no
// load. Execute returns ErrInterrupted; nothing is in the table, and the next run loads
// every file once.
func TestStopDuringPreflight(t *testing.T) {
	sc := newScene(t, 4, 1, 10)
	stop := make(chan struct{})
	var validated, sentAfterStop int
	sc.m.fault = func(stmt string, _ int) faultKind {
		if !strings.HasPrefix(stmt, "COPY INTO") {
			return faultNone
		}
		select {
		case <-stop:
			sentAfterStop++
		default:
			if strings.Contains(stmt, "VALIDATE") {
				if validated++; validated == 2 {
					close(stop)
				}
			}
		}
		return faultNone
	}
	o := testOpts
	o.BatchFiles = 1
	p, err := Prepare(context.Background(), sc.deps(t, true), sc.tgt, sc.report(), sc.table, o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Execute(context.Background(), RunOptions{Stop: stop})
	p.Close()
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "preflight") {
		t.Fatalf("Execute after a stop during the checks: %v", err)
	}
	if sentAfterStop != 0 || validated != 2 {
		t.Fatalf("%d checks, then %d statements sent after the stop", validated, sentAfterStop)
	}
	for _, id := range sc.files {
		if n := sc.inTable(id); n != 0 {
			t.Errorf("%s in the table %d times after a stop before any load", id, n)
		}
	}
	sc.m.fault = nil
	if _, err := sc.reload(t, sc.deps(t, true), o); err != nil {
		t.Fatal(err)
	}
	for _, id := range sc.files {
		if n := sc.inTable(id); n != 1 {
			t.Errorf("%s loaded %d times", id, n)
		}
	}
}
