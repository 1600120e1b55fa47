package history_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/zbrecover/zbrecover/history"
	"github.com/zbrecover/zbrecover/journal"
)

// changes renders a Progress's changes, one word group each.
func changes(p *history.Progress) []string {
	var out []string
	for _, c := range p.Changes {
		switch {
		case c.Process != nil:
			out = append(out, "process "+c.Process.Command)
		case c.Batch != nil:
			out = append(out, fmt.Sprintf("batch %d %s", c.Batch.Batch, c.Batch.Status))
		case c.Files != nil:
			out = append(out, fmt.Sprintf("%s %d", c.Files.What, c.Files.Count))
		case c.End != nil:
			out = append(out, fmt.Sprintf("end %s %s", c.End.Status, c.End.Outcome))
		}
	}
	return out
}

// TestWatchFollowsReloadThenCleanup: a watcher reading the journal while a staged reload
// and then a cleanup write it sees, read by read, the processes that start, the files
// staged, each batch's new state, the files deleted and the staged copies removed, with the
// run's counts, and each process's end with what it means; a read with nothing new returns
// nothing.
func TestWatchFollowsReloadThenCleanup(t *testing.T) {
	ctx := context.Background()
	s, err := journal.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w, err := journal.Start(ctx, s, journal.Target{TableID: "orders", Table: "main.sales.orders", Root: "s3://lake/orders"}, "",
		journal.Header{Command: "zbrecover reload main.sales.orders --stage-to /Volumes/main/sales/v/r", User: "ops", Host: "h1", PID: 41})
	if err != nil {
		t.Fatal(err)
	}
	const dir = "_zerobus/table_rejected_parquets/"
	var files [3][]journal.File
	var staged []journal.Staged
	for b := range files {
		for i := 0; i < 2; i++ {
			k := fmt.Sprintf("%sf-%d-%d.parquet", dir, b, i)
			files[b] = append(files[b], journal.File{Key: k, Size: 10, ETag: "e" + k, Rows: 5})
			staged = append(staged, journal.Staged{Source: k, Key: "c/" + k, Size: 10})
		}
	}
	var plan []journal.PlanBatch
	for b := range files {
		plan = append(plan, journal.PlanBatch{Batch: b + 1, Group: "g", Folder: dir, Files: files[b], ExpectedRows: 10, SQL: fmt.Sprintf("COPY INTO %d", b+1)})
	}
	load := func(b int) []journal.Record {
		v := int64(10 + b)
		return []journal.Record{
			{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: b, Files: files[b-1], ExpectedRows: 10, SQL: "COPY INTO"}},
			{Kind: journal.KindResult, Result: &journal.Result{Batch: b, Inserted: journal.Int64(10)}},
			{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: b, Status: journal.BatchVerified, Version: &v}},
		}
	}
	watch := history.NewWatch(s, "orders", w.Run())
	step := func(name string, recs []journal.Record, want []string, check func(p *history.Progress)) {
		t.Helper()
		for _, r := range recs {
			if err := w.Append(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		p, err := watch.Next(ctx)
		if err != nil || p == nil {
			t.Fatalf("%s: %v, %v", name, p, err)
		}
		if fmt.Sprint(changes(p)) != fmt.Sprint(want) {
			t.Errorf("%s: changes %v, want %v", name, changes(p), want)
		}
		if check != nil {
			check(p)
		}
		if again, err := watch.Next(ctx); again != nil || err != nil {
			t.Errorf("%s: a read with nothing new gave %+v, %v", name, again, err)
		}
	}
	step("the plan", []journal.Record{{Kind: journal.KindPlan, Plan: &journal.Plan{Batches: plan}}}, []string{"process reload"}, func(p *history.Progress) {
		if p.Batches.Total != 3 || p.Files.Total != 6 || p.Rows.Expected != 30 || p.Status != journal.RunPlanned || p.Ended ||
			p.Process.User != "ops" || p.Process.PID != 41 || p.Table != "main.sales.orders" {
			t.Errorf("the plan: %+v", p)
		}
	})
	step("staged", []journal.Record{{Kind: journal.KindStaging, Staging: &journal.Staging{Location: "/Volumes/main/sales/v/r", Files: staged}}},
		[]string{"staged 6"}, nil)
	step("batch 1", load(1), []string{"batch 1 verified"}, func(p *history.Progress) {
		if p.Batches.Done != 1 || p.Files.Loaded != 2 || p.Rows.Inserted != 10 || p.Status != journal.RunLoading {
			t.Errorf("after batch 1: %+v", p)
		}
		if c := p.Changes[0].Batch; c.Files != 2 || c.Inserted == nil || *c.Inserted != 10 || c.Version == nil || *c.Version != 11 {
			t.Errorf("batch 1's change: %+v", c)
		}
	})
	step("batch 2 sent", load(2)[:1], []string{"batch 2 open"}, nil)
	step("batches 2 and 3", append(load(2)[1:], load(3)...), []string{"batch 2 verified", "batch 3 verified"}, nil)
	step("end of reload", []journal.Record{{Kind: journal.KindEnd, End: &journal.End{State: journal.RunVerified}}},
		[]string{"end verified ok"}, func(p *history.Progress) {
			if !p.Ended || p.Outcome != history.OutcomeOK {
				t.Errorf("the end: %+v", p)
			}
		})

	st, err := journal.ReadState(ctx, s, "orders", w.Run())
	if err != nil {
		t.Fatal(err)
	}
	c, err := journal.Continue(ctx, s, st, journal.Header{Command: "zbrecover cleanup main.sales.orders --yes"})
	if err != nil {
		t.Fatal(err)
	}
	w = c
	all := append(append(append([]journal.File(nil), files[0]...), files[1]...), files[2]...)
	step("cleanup starts", []journal.Record{{Kind: journal.KindDeleteIntent, Deletion: &journal.Deletion{Files: all}}},
		[]string{"process cleanup"}, func(p *history.Progress) {
			if p.Ended || p.Files.ToDelete != 6 || p.Files.Deleted != 0 {
				t.Errorf("cleanup under way: %+v", p)
			}
		})
	var res []journal.DeletedResult
	for _, f := range all[:5] {
		res = append(res, journal.DeletedResult{Key: f.Key, Status: journal.Deleted})
	}
	res = append(res, journal.DeletedResult{Key: all[5].Key, Status: journal.DeleteSkip, Reason: "changed"})
	step("deleted", []journal.Record{{Kind: journal.KindDeleted, Deletion: &journal.Deletion{Results: res}}}, []string{"deleted 5", "kept 1"}, nil)
	step("copies removed", []journal.Record{
		{Kind: journal.KindStaging, Staging: &journal.Staging{Location: "/Volumes/main/sales/v/r", Files: staged, Removing: true}},
		{Kind: journal.KindStaging, Staging: &journal.Staging{Location: "/Volumes/main/sales/v/r", Files: staged[:4], Removed: true}},
	}, []string{"staged_removed 4"}, func(p *history.Progress) {
		if p.Files.StagedCopies != 6 || p.Files.StagedRemoved != 4 {
			t.Errorf("copies: %+v", p.Files)
		}
	})
	step("end of cleanup", []journal.Record{{Kind: journal.KindEnd, End: &journal.End{State: journal.RunPartiallyCleaned}}},
		[]string{"end partially_cleaned partial"}, nil)

	// A watcher that starts now sees the run as it stands: its processes, its batches, the
	// files staged, deleted and kept, and its end.
	late, err := history.NewWatch(s, "orders", w.Run()).Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"process reload", "process cleanup", "staged 6", "batch 1 verified", "batch 2 verified", "batch 3 verified",
		"deleted 5", "kept 1", "staged_removed 4", "end partially_cleaned partial"}
	if fmt.Sprint(changes(late)) != fmt.Sprint(want) {
		t.Errorf("a late watcher: %v\nwant %v", changes(late), want)
	}
}

// TestWatchOutcomes: what each end of a run means for whoever followed it.
func TestWatchOutcomes(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		outcome journal.BatchStatus // batch 1's
		end     journal.End
		want    history.Outcome
	}{
		{"verified", journal.BatchVerified, journal.End{State: journal.RunVerified}, history.OutcomeOK},
		{"mismatch", journal.BatchMismatch, journal.End{State: journal.RunMismatch, Err: "rows inserted differ"}, history.OutcomeMismatch},
		{"unknown", journal.BatchUnknown, journal.End{State: journal.RunUnknown, Err: "some batches could not be verified"}, history.OutcomeUnknown},
		{"interrupted", "", journal.End{State: journal.RunFailed, Err: "interrupted before batch 1"}, history.OutcomeInterrupted},
		{"interrupted statement", journal.BatchUnknown, journal.End{State: journal.RunUnknown, Err: "batch 1: interrupted"}, history.OutcomeInterrupted},
		{"interrupted cleanup", journal.BatchVerified, journal.End{State: journal.RunPartiallyCleaned, Err: "context canceled"}, history.OutcomeInterrupted},
		{"failed", "", journal.End{State: journal.RunFailed, Err: "VALIDATE refused a batch"}, history.OutcomeFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := journal.OpenDir(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			w, err := journal.Start(ctx, s, journal.Target{TableID: "t", Table: "main.s.t", Root: "s3://lake/t"}, "", journal.Header{Command: "zbrecover reload main.s.t"})
			if err != nil {
				t.Fatal(err)
			}
			f := []journal.File{{Key: "_zerobus/table_rejected_parquets/a.parquet", Size: 1, Rows: 2}}
			recs := []journal.Record{{Kind: journal.KindPlan, Plan: &journal.Plan{Batches: []journal.PlanBatch{{Batch: 1, Group: "g", Files: f, ExpectedRows: 2, SQL: "COPY INTO"}}}}}
			if c.outcome != "" {
				recs = append(recs, journal.Record{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: 1, Files: f, ExpectedRows: 2, SQL: "COPY INTO"}},
					journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: 1, Inserted: journal.Int64(2)}},
					journal.Record{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: 1, Status: c.outcome}})
			}
			recs = append(recs, journal.Record{Kind: journal.KindEnd, End: &c.end})
			for _, r := range recs {
				if err := w.Append(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			p, err := history.NewWatch(s, "t", w.Run()).Next(ctx)
			if err != nil || !p.Ended || p.Outcome != c.want {
				t.Errorf("%+v, %v: want %s", p, err, c.want)
			}
		})
	}
}

// TestNewestAndFindRun: the newest run of a table, none yet, and the table holding a run.
func TestNewestAndFindRun(t *testing.T) {
	ctx := context.Background()
	s, err := journal.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := history.NewestRun(ctx, s, "orders"); err == nil {
		t.Fatal("a table without runs has a newest run")
	}
	writeRun(t, s, "orders")
	run := writeRun(t, s, "orders")
	if got, err := history.NewestRun(ctx, s, "orders"); err != nil || got != run {
		t.Errorf("newest %q, %v; want %s", got, err, run)
	}
	writeRun(t, s, "returns")
	if id, err := history.FindRun(ctx, s, nil, run); err != nil || id != "orders" {
		t.Errorf("find: %q %v", id, err)
	}
	if _, err := history.FindRun(ctx, s, []string{"returns"}, run); err == nil {
		t.Error("found the run among another table's")
	}
}
