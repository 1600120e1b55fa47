//go:build demo && cgo

package watch

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestTwoWatchersOneTableEach: two watchers on the same catalog and journal, started at once,
// over eight tables with parked files and Zerobus committing. Each table is worked on by one at
// a time: the other finds it locked (skipped_locked) and moves on. Every run's batches were
// loaded by exactly one watcher, every file of the journal was loaded by one verified batch
// only, and every parked row is in its table once.
func TestTwoWatchersOneTableEach(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; two watchers")
	}
	const n, files = 8, 40
	writers := []int{0, 1, 2, 3, 4, 5, 6, 7}
	s := newSite(t, 5*time.Minute, n, writers, 50*time.Millisecond)
	for i, table := range s.tables {
		s.writeFiles(table, 1_000_000+i*files, files, 8) // ids far from the writers'
	}
	args := []string{"--interval", "1s", "--lease", "6s", "--cleanup-after", "2s"}
	a, b := s.startWatch(args...), s.startWatch(args...)
	done := func() bool {
		for _, table := range s.tables {
			if s.parked(table) > 0 {
				return false
			}
		}
		return true
	}
	a.waitFor(3*time.Minute, "every table loaded and cleaned up", done)
	s.stopWriters()
	for _, w := range []*watcher{a, b} {
		if code, _ := w.terminate(time.Minute); code != 0 {
			t.Errorf("exit %d after SIGTERM\nstderr: %.2000s", code, w.stderr)
		}
		w.checkLines()
	}

	// A run's batches are one watcher's.
	loadedBy := map[string]string{}
	skipped := 0
	for name, w := range map[string]*watcher{"a": a, "b": b} {
		for _, e := range w.all() {
			switch e.Event {
			case "batch_loaded":
				if other, ok := loadedBy[e.Run]; ok && other != name {
					t.Errorf("run %s of %s loaded by both watchers", e.Run, e.Table)
				}
				loadedBy[e.Run] = name
			case "skipped_locked":
				skipped++
				if !strings.Contains(e.Holder, "zbrecover") || !strings.Contains(e.Holder, "watch") {
					t.Errorf("skipped_locked names %q", e.Holder)
				}
			case "error", "quarantined", "needs_review", "blocked":
				t.Errorf("watcher %s: %s event %+v", name, e.Event, e)
			}
		}
	}
	runsOf := map[string]int{}
	for _, w := range loadedBy {
		runsOf[w]++
	}
	t.Logf("runs loaded: %v; %d tables skipped as locked", runsOf, skipped)
	if skipped == 0 {
		t.Error("the two watchers never met on a table (no skipped_locked event)")
	}
	// Every file of the journal in one verified batch; every row once.
	for i, table := range s.tables {
		keys := map[string]int{}
		for run, fs := range s.journalFiles(table) {
			if _, ok := loadedBy[run]; !ok {
				t.Errorf("%s: run %s in the journal was loaded by no watcher's event", table, run)
			}
			for _, f := range fs {
				if f.State == "verified" {
					keys[f.Key]++
				}
			}
		}
		if len(keys) != files {
			t.Errorf("%s: %d files loaded, want %d", table, len(keys), files)
		}
		for k, c := range keys {
			if c != 1 {
				t.Errorf("%s: %s loaded by %d verified batches", table, k, c)
			}
		}
		got := s.s.Count(fmt.Sprintf("SELECT count(*) FROM %s WHERE id > %d", table, 1_000_000+i*files))
		distinct := s.s.Count(fmt.Sprintf("SELECT count(DISTINCT id) FROM %s WHERE id > %d", table, 1_000_000+i*files))
		if got != files || distinct != files {
			t.Errorf("%s: %d parked rows in the table (%d distinct), want %d once each", table, got, distinct, files)
		}
	}
}

// TestKilledWatcherConverges kills the watcher with SIGKILL at 10 random moments while it
// recovers five tables of 120 files in 40 folders (40 batches each, every load held 150 ms by
// the warehouse) and cleans them up, Zerobus committing all along; a new watcher starts after each kill, on this host, and breaks the dead
// one's lease at once. Never is a parked row in a table twice. Then SIGTERM lands while a load
// statement is in flight (each held 2 s by the warehouse): the statement finishes, the watcher
// stops with exit 0 and a stopped event, and the journal holds no batch left open. A last
// watcher converges: every parked row once, every file deleted from a verified batch.
func TestKilledWatcherConverges(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; 10 kills of a watcher")
	}
	const n, files, folders, kills = 5, 120, 40, 10
	s := newSite(t, 8*time.Minute, n, nil, time.Second)
	for i, table := range s.tables {
		s.writeFiles(table, 1_000_000+i*1000, files, folders) // ids far from the writers'
		s.s.Apply(map[string]any{"zerobus": []map[string]any{{"table": table, "interval_ms": 20}}})
	}
	// Each load statement (not its VALIDATE check) takes 150 ms more: 200 batches outlast the
	// ten kills.
	s.s.Apply(map[string]any{"faults": []map[string]any{{"method": "ExecuteStatement", "match": "(?i)^COPY INTO .* FILEFORMAT = PARQUET FILES", "times": -1,
		"action": "delay", "delay_ms": 150}}})
	args := []string{"--interval", "1s", "--lease", "5s", "--cleanup-after", "1s"}
	once := func(table string) {
		t.Helper()
		rows, distinct, _ := s.rows(table)
		if rows != distinct {
			t.Fatalf("%s: %d rows, %d distinct ids: a row is in the table twice", table, rows, distinct)
		}
	}
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 32))
	t.Logf("kill moments drawn with seed %d", seed)
	var moments []string
	for k := 0; k < kills; k++ {
		w := s.startWatch(args...)
		delay := 300*time.Millisecond + time.Duration(rng.Int64N(int64(6*time.Second)))
		time.Sleep(delay)
		events := w.all()
		w.kill()
		last := "nothing yet"
		if len(events) > 0 {
			last = events[len(events)-1].Event
		}
		var loaded int64
		for i, table := range s.tables {
			loaded += s.s.Count(fmt.Sprintf("SELECT count(*) FROM %s WHERE id > %d", table, 1_000_000+i*1000))
		}
		moments = append(moments, fmt.Sprintf("%s (after %s, %d of %d parked rows loaded)", delay.Round(time.Millisecond), last, loaded, n*files))
		for _, e := range events {
			if e.Event == "skipped_locked" {
				t.Errorf("kill %d: a restarted watcher left a table locked by a dead one: %s", k+1, e.Reason)
			}
		}
		for _, table := range s.tables {
			once(table)
		}
	}
	t.Logf("killed at %s", strings.Join(moments, ", "))

	// SIGTERM while a statement runs: it finishes and is journaled.
	s.s.ClearFaults()
	s.s.Apply(map[string]any{"faults": []map[string]any{{"method": "ExecuteStatement", "match": "(?i)^COPY INTO .* FILEFORMAT = PARQUET FILES", "times": -1,
		"action": "delay", "delay_ms": 2000}}})
	left := func() int {
		total := 0
		for _, table := range s.tables {
			total += s.parked(table)
		}
		return total
	}
	if left() == 0 {
		t.Fatal("the ten kills left no work for SIGTERM to interrupt")
	}
	{
		w := s.startWatch(args...)
		w.waitFor(time.Minute, "a load statement in flight", func() bool { return w.has("table_found", "", 0) })
		time.Sleep(1200 * time.Millisecond) // into the first load's 2 s
		code, took := w.terminate(time.Minute)
		if code != 0 || !w.has("stopped", "", 0) {
			t.Errorf("SIGTERM: exit %d in %s, stopped event %v\nstderr: %.2000s", code, took, w.has("stopped", "", 0), w.stderr)
		}
		for _, table := range s.tables {
			for run, fs := range s.journalFiles(table) {
				for _, f := range fs {
					if f.State == "open" {
						t.Errorf("%s run %s: batch %d left open by a SIGTERM stop", table, run, f.Batch)
					}
				}
			}
		}
		t.Logf("stopped %s after SIGTERM", took.Round(time.Millisecond))
	}
	s.s.ClearFaults()

	// The last watcher converges.
	w := s.startWatch(args...)
	w.waitFor(3*time.Minute, "a cycle, and every folder empty", func() bool { return w.has("cycle_end", "", 0) && left() == 0 })
	if code, _ := w.terminate(time.Minute); code != 0 {
		t.Errorf("exit %d\nstderr: %.2000s", code, w.stderr)
	}
	for i, table := range s.tables {
		once(table)
		if got := s.s.Count(fmt.Sprintf("SELECT count(*) FROM %s WHERE id > %d", table, 1_000_000+i*1000)); got != files {
			t.Errorf("%s: %d of its %d parked rows in the table", table, got, files)
		}
		for run, fs := range s.journalFiles(table) {
			for _, f := range fs {
				if f.Deleted != "" && f.State != "verified" {
					t.Errorf("%s run %s: %s deleted from a batch %s", table, run, f.Key, f.State)
				}
			}
		}
	}
}
