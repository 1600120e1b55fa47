package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/journal"
)

// scriptedRun is a run of three batches a writer journals step by step, as reload does,
// while history --watch follows it.
type scriptedRun struct {
	t     *testing.T
	dir   string
	store *journal.Dir
	w     *journal.Writer
	files [3][]journal.File
}

func newScriptedRun(t *testing.T) *scriptedRun {
	t.Helper()
	dir := t.TempDir()
	s, err := journal.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	w, err := journal.Start(ctx, s, journal.Target{TableID: "tid-orders", Table: "main.sales.orders", Root: "s3://lake/orders"}, "",
		journal.Header{Command: "zbrecover reload main.sales.orders --yes", User: "ops", Host: "h1", PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	r := &scriptedRun{t: t, dir: dir, store: s, w: w}
	var plan []journal.PlanBatch
	for b := range r.files {
		for i := 0; i < 4; i++ {
			r.files[b] = append(r.files[b], journal.File{Key: fmt.Sprintf("_zerobus/table_rejected_parquets/f-%d-%d.parquet", b, i), Size: 10, Rows: 5})
		}
		plan = append(plan, journal.PlanBatch{Batch: b + 1, Group: "g", Folder: "_zerobus/table_rejected_parquets/", Files: r.files[b], ExpectedRows: 20, SQL: "COPY INTO"})
	}
	r.append(journal.Record{Kind: journal.KindPlan, Plan: &journal.Plan{Batches: plan}})
	return r
}

func (r *scriptedRun) append(recs ...journal.Record) {
	for _, rec := range recs {
		if err := r.w.Append(context.Background(), rec); err != nil {
			r.t.Error(err)
		}
	}
}

// load journals batch b (1-based) answered with inserted rows and classified status.
func (r *scriptedRun) load(b int, inserted int64, status journal.BatchStatus) {
	v := int64(100 + b)
	r.append(journal.Record{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: b, Files: r.files[b-1], ExpectedRows: 20, SQL: "COPY INTO"}},
		journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: b, Inserted: journal.Int64(inserted)}},
		journal.Record{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: b, Status: status, Version: &v}})
}

func (r *scriptedRun) end(state journal.RunStatus, errText string) {
	r.append(journal.Record{Kind: journal.KindEnd, End: &journal.End{State: state, Err: errText}})
}

// play journals the batches with pause between steps, then the end, in the background; it
// returns when the writer is done.
func (r *scriptedRun) play(pause time.Duration, steps ...func()) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, s := range steps {
			time.Sleep(pause)
			s()
		}
	}()
	return &wg
}

func fastWatch(t *testing.T) {
	old := watchInterval
	watchInterval = 10 * time.Millisecond
	t.Cleanup(func() { watchInterval = old })
}

// TestHistoryWatchFollowsARun: history --watch --run follows a run another process writes,
// line by line as batches settle, until its end, and exits as the end means: 0 verified, 4
// mismatch, 130 interrupted; under -o json every change is one JSON line.
func TestHistoryWatchFollowsARun(t *testing.T) {
	fastWatch(t)
	for _, c := range []struct {
		name  string
		last  func(r *scriptedRun)
		code  int
		words []string
	}{
		{"verified", func(r *scriptedRun) { r.load(3, 20, journal.BatchVerified); r.end(journal.RunVerified, "") }, ExitOK,
			[]string{"reload ended: verified; 3 of 3 batches verified, 60 rows inserted of 60 expected"}},
		{"mismatch", func(r *scriptedRun) {
			r.load(3, 7, journal.BatchMismatch)
			r.end(journal.RunMismatch, "rows inserted differ")
		}, ExitVerify,
			[]string{"batch 3 mismatch: 4 files, 20 rows expected, 7 inserted", "run ", "ended mismatch: rows inserted differ"}},
		{"interrupted", func(r *scriptedRun) { r.end(journal.RunFailed, "interrupted before batch 3") }, ExitInterrupted,
			[]string{"reload ended: failed", "interrupted before batch 3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newScriptedRun(t)
			done := r.play(50*time.Millisecond, func() { r.load(1, 20, journal.BatchVerified) }, func() { r.load(2, 20, journal.BatchVerified) },
				func() { c.last(r) })
			code, out, errOut := run(t, "history", "--watch", "--run", r.w.Run(), "--journal", r.dir)
			done.Wait()
			text := out + errOut
			t.Logf("exit %d:\n%s", code, text)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, text)
			}
			for _, w := range append([]string{"Following run " + r.w.Run() + " of main.sales.orders", "The run: 3 batches, 12 files, 60 rows expected",
				"reload started by ops@h1 (pid 4242)", "batch 1 verified: 4 files, 20 rows expected, 20 inserted (table version 101)",
				"batch 2 verified"}, c.words...) {
				if !strings.Contains(text, w) {
					t.Errorf("the output lacks %q:\n%s", w, text)
				}
			}
			if strings.Contains(text, "\x1b") {
				t.Errorf("escape bytes off a terminal:\n%q", text)
			}
		})
	}

	t.Run("json", func(t *testing.T) {
		r := newScriptedRun(t)
		done := r.play(50*time.Millisecond, func() { r.load(1, 20, journal.BatchVerified) }, func() { r.load(2, 20, journal.BatchVerified) },
			func() { r.load(3, 20, journal.BatchVerified) }, func() { r.end(journal.RunVerified, "") })
		code, out, errOut := run(t, "-o", "json", "history", "-w", "--run", r.w.Run(), "--journal", r.dir)
		done.Wait()
		if code != 0 {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var last map[string]any
		batches := map[float64]bool{}
		for i, l := range lines {
			var doc struct {
				SchemaVersion int  `json:"schema_version"`
				Ended         bool `json:"ended"`
				Changes       []struct {
					Batch *struct {
						Batch  float64 `json:"batch"`
						Status string  `json:"status"`
					} `json:"batch"`
				} `json:"changes"`
			}
			if err := json.Unmarshal([]byte(l), &doc); err != nil || doc.SchemaVersion != 2 {
				t.Fatalf("line %d is not a versioned JSON object: %v\n%s", i+1, err, l)
			}
			if doc.Ended != (i == len(lines)-1) {
				t.Errorf("line %d ended=%v of %d lines", i+1, doc.Ended, len(lines))
			}
			for _, ch := range doc.Changes {
				if ch.Batch != nil && ch.Batch.Status == "verified" {
					batches[ch.Batch.Batch] = true
				}
			}
			_ = json.Unmarshal([]byte(l), &last)
		}
		if len(lines) < 3 || len(batches) != 3 || last["outcome"] != "ok" || last["status"] != "verified" {
			t.Errorf("%d lines, batches verified %v, last %v", len(lines), batches, last)
		}
	})
}

// TestHistoryWatchBars: on a terminal, the followed run's lines are printed above the bars,
// the loading bar counts the batches and ends with the run.
func TestHistoryWatchBars(t *testing.T) {
	fastWatch(t)
	t.Setenv("TERM", "xterm-256color")
	r := newScriptedRun(t)
	done := r.play(80*time.Millisecond, func() { r.load(1, 20, journal.BatchVerified) }, func() { r.load(2, 20, journal.BatchVerified) },
		func() { r.load(3, 20, journal.BatchVerified) }, func() { r.end(journal.RunVerified, "") })
	io, _, out, _ := iostreams.Test()
	errOut := &syncBuffer{}
	io.ErrOut = errOut
	io.SetStderrTTY(true)
	io.SetStdoutTTY(true)
	code := Run(context.Background(), NewFactory(io), []string{"history", "--watch", "--run", r.w.Run(), "--journal", r.dir})
	done.Wait()
	sc := screen(errOut.String())
	text := strings.Join(sc, "\n")
	t.Logf("the screen:\n%s", text)
	if code != 0 || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q:\n%s", code, out.String(), text)
	}
	l := barLine(t, sc, "loaded")
	if !strings.Contains(l, "3 / 3 batches") || !strings.Contains(l, "/s") || !strings.Contains(l, " in ") {
		t.Errorf("the loading bar at the end: %q", l)
	}
	// The end's line, written once every bar had ended, is printed too, above them.
	if i, j, k := strings.Index(text, "batch 3 verified"), strings.Index(text, "reload ended: verified"), strings.Index(text, "loaded "); i < 0 || j < i || k < j {
		t.Errorf("the lines are not above the bar:\n%s", text)
	}
}

// TestHistoryWatchWaitsAndStops: without --run, history --watch follows the table's newest
// run, waiting for one; Ctrl-C stops following (exit 130), not the run; --watch without a
// table or run is a usage error.
func TestHistoryWatchWaitsAndStops(t *testing.T) {
	fastWatch(t)
	if code, _, errOut := run(t, "history", "--watch"); code != ExitUsage || !strings.Contains(errOut, "--watch follows one run") {
		t.Errorf("--watch alone: exit %d, %s", code, errOut)
	}
	dir := t.TempDir()
	s, err := journal.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	io, _, _, _ := iostreams.Test()
	errOut, out := &syncBuffer{}, &syncBuffer{}
	io.ErrOut, io.Out = errOut, out
	f := NewFactory(io)
	if code := Run(ctx, f, []string{"history", "--watch", "--journal", dir, "--run", ""}); code != ExitUsage {
		t.Errorf("an empty --run and no table: exit %d", code)
	}

	// The table resolved (as history does from TARGET): its newest run, once there is one.
	stopped := make(chan error, 1)
	go func() { stopped <- watchRun(ctx, f, s, []string{"tid-orders"}, "") }()
	errOut.waitFor(t, "Waiting for a run of the table")
	w, err := journal.Start(context.Background(), s, journal.Target{TableID: "tid-orders", Table: "main.sales.orders", Root: "s3://lake/orders"}, "",
		journal.Header{Command: "zbrecover reload main.sales.orders"})
	if err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, "Following run "+w.Run())
	cancel()
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Errorf("stopped following: %v", err)
	}
}
