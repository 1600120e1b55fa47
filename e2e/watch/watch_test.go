//go:build demo && cgo

package watch

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/e2e/e2etest"
)

// TestWatchTablesBreakAndGetFixed: fifty managed tables with Zerobus committing to each; eight
// break while one watcher runs (a column dropped: their records parked), are fixed, one breaks
// a second time. Every record the writers produced is in its table exactly once; each blocked
// table raised one alert per time it broke; nothing was deleted before its batch was verified
// --cleanup-after ago, and every deleted file's batch is verified. The second break dropped the
// column again, and with it values of rows loaded before: cleanup keeps those runs' files, each
// alerted once for review, and deletes every other file. The metrics endpoint, scraped all
// along, shows the parked counts falling to zero (to the files kept), /healthz answers ok;
// SIGTERM stops the watcher, exit 0.
func TestWatchTablesBreakAndGetFixed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; breaks and fixes tables while a watcher runs")
	}
	const n = 50
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	s := newSite(t, 6*time.Minute, n, all, 100*time.Millisecond)
	const cleanupAfter = 4 * time.Second
	metrics := freeAddr(t)
	alerts := filepath.Join(s.dir, "alerts.jsonl")
	w := s.startWatch("--interval", "2s", "--lease", "6s", "--cleanup-after", cleanupAfter.String(),
		"--metrics-addr", metrics, "--alert-command", "cat >> "+alerts)

	// The parked counts, scraped all along.
	seen := newSeries()
	scrapeCtx, stopScrape := context.WithCancel(s.ctx)
	var scraping sync.WaitGroup
	scraping.Add(1)
	go func() {
		defer scraping.Done()
		for scrapeCtx.Err() == nil {
			if m, err := scrape(scrapeCtx, metrics, "zbrecover_watch_parked_files"); err == nil {
				seen.add(m)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()

	// Eight tables break; each is seen blocked.
	broken := s.tables[:8]
	for _, table := range broken {
		s.schema(table, "break")
	}
	for _, table := range broken {
		w.waitFor(90*time.Second, table+" blocked", func() bool { return w.has("blocked", table, 0) })
	}
	// A few cycles later, still broken: no second alert (checked at the end). Four are fixed,
	// and their parked records load.
	time.Sleep(3 * time.Second)
	mark := len(w.all())
	for _, table := range broken[:4] {
		s.schema(table, "fix")
	}
	for _, table := range broken[:4] {
		w.waitFor(90*time.Second, table+" loaded after its fix", func() bool {
			return w.has("unblocked", table, mark) && w.has("batch_loaded", table, mark)
		})
	}
	// One breaks again, is seen blocked again, and every broken table is fixed.
	mark = len(w.all())
	s.schema(broken[0], "break")
	w.waitFor(90*time.Second, broken[0]+" blocked again", func() bool { return w.has("blocked", broken[0], mark) })
	for _, table := range append([]string{broken[0]}, broken[4:]...) {
		s.schema(table, "fix")
	}

	// The writers stop; the watcher loads the rest and, --cleanup-after later, deletes it: all
	// of it but the files of broken[0]'s runs loaded before its second break, whose column was
	// then dropped with their rows' values: cleanup keeps those, for review.
	time.Sleep(time.Second)
	produced := s.stopWriters()
	twice := broken[0]
	var logged time.Time
	w.waitFor(3*time.Minute, "every record in its table and every folder empty", func() bool {
		var behind []string
		for _, table := range s.tables {
			rows, _, _ := s.rows(table)
			left := s.parked(table)
			if rows < produced[table] || table != twice && left > 0 || table == twice && !cleanedButReviewed(w.all(), twice) {
				behind = append(behind, fmt.Sprintf("%s: %d of %d rows, %d files left", table, rows, produced[table], left))
			}
		}
		if len(behind) > 0 && time.Since(logged) > 10*time.Second {
			logged = time.Now()
			t.Logf("behind: %s", strings.Join(behind, "; "))
		}
		return len(behind) == 0
	})
	kept := s.parked(twice)
	w.waitFor(30*time.Second, "the parked counts at zero", func() bool {
		last := seen.last()
		for _, table := range broken {
			if v, ok := last[table]; !ok || table != twice && v != 0 || table == twice && v != float64(kept) {
				return false
			}
		}
		return true
	})
	health := httpGet(t, s.ctx, "http://"+metrics+"/healthz")
	stopScrape()
	scraping.Wait()
	code, took := w.terminate(time.Minute)
	if code != 0 || !w.has("stopped", "", 0) {
		t.Errorf("after SIGTERM: exit %d in %s, stopped event %v\nstderr: %.2000s", code, took, w.has("stopped", "", 0), w.stderr)
	}
	w.checkLines()
	events := w.all()

	// Every record once.
	for _, table := range s.tables {
		rows, distinct, maxID := s.rows(table)
		if rows != produced[table] || distinct != rows || maxID != rows {
			t.Errorf("%s: %d rows, %d distinct ids, largest %d; the writer produced %d", table, rows, distinct, maxID, produced[table])
		}
	}
	// The runs kept for review are broken[0]'s, each reported once: none of their files was
	// deleted, and they are the files left; every other run was cleaned.
	review := map[string]int{}
	for _, e := range events {
		switch {
		case e.Event == "needs_review" && e.Table == twice:
			review[e.Run]++
		case e.Event == "error" || e.Event == "quarantined" || e.Event == "needs_review":
			t.Errorf("%s event: %+v", e.Event, e)
		}
	}
	for _, table := range s.tables {
		for run, files := range s.journalFiles(table) {
			deleted := 0
			for _, f := range files {
				if f.Deleted != "" {
					deleted++
					if f.State != "verified" {
						t.Errorf("%s run %s: %s deleted (%s) from a batch %s", table, run, f.Key, f.Deleted, f.State)
					}
				}
			}
			switch _, reviewed := review[run]; {
			case reviewed && deleted > 0:
				t.Errorf("%s run %s: kept for review, yet %d of its files deleted", table, run, deleted)
			case reviewed:
				kept -= len(files)
			case deleted != len(files):
				t.Errorf("%s run %s: %d of its %d files deleted", table, run, deleted, len(files))
			}
		}
	}
	if len(review) == 0 || kept != 0 {
		t.Errorf("%s: runs kept for review %v; files left that are not theirs: %d", twice, review, kept)
	}
	// One alert per break the watcher saw, and one per run kept for review; nothing else.
	want := map[string]int{}
	for _, table := range broken {
		want[table+" blocked"] = 1
	}
	want[twice+" blocked"] = 2
	for run := range review {
		want[run+" needs_review"] = 1
	}
	got := map[string]int{}
	alerted := readAlerts(t, alerts)
	for _, a := range alerted {
		switch a.Event {
		case "blocked":
			got[a.Table+" blocked"]++
		case "needs_review":
			got[a.Run+" needs_review"]++
		default:
			t.Errorf("an alert of another kind: %+v", a)
		}
	}
	for _, e := range events {
		if e.Alert {
			got["events: "+e.Table+" "+e.Event]++
		}
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d alerts, want %d", k, got[k], n)
		}
	}
	for _, table := range broken {
		if n := got["events: "+table+" blocked"]; n != want[table+" blocked"] {
			t.Errorf("%s: %d blocked events marked alerted, want %d", table, n, want[table+" blocked"])
		}
	}
	if len(alerted) > 0 && alerted[0].Event == "blocked" && len(alerted[0].Blocked) == 0 {
		t.Errorf("a blocked alert without the fix: %+v", alerted[0])
	}
	// Nothing deleted before its batch was verified --cleanup-after ago, by the journal's times.
	if n := s.checkDeleteTimes(cleanupAfter); n == 0 {
		t.Error("nothing was deleted")
	}
	// The metrics: each broken table's parked count rose, then fell to zero (to the files
	// kept for review).
	for _, table := range broken {
		if seen.max(table) == 0 {
			t.Errorf("%s: the metrics never showed its parked files", table)
		}
	}
	if !strings.Contains(health, `"status":"ok"`) {
		t.Errorf("/healthz: %s", health)
	}
	t.Logf("%d events, %d alerts, %d scrapes; %s kept %d files of %d runs for review; stopped in %s", len(events), len(alerted), seen.scrapes(),
		twice, s.parked(twice), len(review), took.Round(time.Millisecond))
}

// cleanedButReviewed reports whether table had a run kept for review, and every other run
// whose batches the watcher loaded was cleaned.
func cleanedButReviewed(events []event, table string) bool {
	loaded, review, cleaned := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, e := range events {
		if e.Table != table {
			continue
		}
		switch {
		case e.Event == "batch_loaded":
			loaded[e.Run] = true
		case e.Event == "needs_review":
			review[e.Run] = true
		case e.Event == "cleaned" && e.Status == "cleaned":
			cleaned[e.Run] = true
		}
	}
	for run := range loaded {
		if !review[run] && !cleaned[run] {
			return false
		}
	}
	return len(review) > 0
}

// series are the samples of one metric by table, in scrape order.
type series struct {
	mu  sync.Mutex
	all []map[string]float64
}

func newSeries() *series { return &series{} }

func (s *series) add(m map[string]float64) {
	s.mu.Lock()
	s.all = append(s.all, m)
	s.mu.Unlock()
}

func (s *series) last() map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.all) == 0 {
		return map[string]float64{}
	}
	return s.all[len(s.all)-1]
}

func (s *series) max(table string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := 0.0
	for _, x := range s.all {
		m = max(m, x[table])
	}
	return m
}

func (s *series) scrapes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.all)
}

func readAlerts(t *testing.T, path string) []event {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []event
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e event
		e2etest.DecodeInto(t, line, &e)
		out = append(out, e)
	}
	return out
}

func httpGet(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, resp.Status, " ")
	buf := make([]byte, 4096)
	k, _ := resp.Body.Read(buf)
	b.Write(buf[:k])
	return b.String()
}
