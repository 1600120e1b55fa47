//go:build demo && cgo

package served

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/internal/textfmt"
)

// writeFallback makes a managed table's root with n fallback files of 2 rows in the old
// schema (customer_id), over three date folders.
func writeFallback(t *testing.T, root string, n int) {
	t.Helper()
	if _, err := deltatest.Write(root, deltatest.Table{Schema: e2etest.TableSchema}); err != nil {
		t.Fatal(err)
	}
	fallback := filepath.Join(root, filepath.FromSlash(fallback.Prefix))
	for i, id := 0, int64(0); i < n; i++ {
		var rows []string
		for k := 0; k < 2; k++ {
			id++
			rows = append(rows, fmt.Sprintf(`{"id":%d,"customer_id":"c%d","amount":"%d.25"}`, id, id, id%100))
		}
		data, err := pqgen.Bytes(e2etest.OldFiles, "["+strings.Join(rows, ",")+"]", pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := pqgen.WriteFile(filepath.Join(fallback, fmt.Sprintf("2026/01/%02d/old-%05d.parquet", 1+i%3, i)), data); err != nil {
			t.Fatal(err)
		}
	}
}

// barOf returns the screen's lines that start with a bar's name followed by its count.
func barOf(screen, name string) []string {
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(name) + ` +\d+ / \d+ `)
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		if re.MatchString(l) {
			out = append(out, strings.TrimRight(l, " "))
		}
	}
	return out
}

// rateAndETA: a bar line under way shows its rate and the time left.
var rateAndETA = regexp.MustCompile(`\d+\.\d/s ETA \d`)

// rateAndTook: a bar line whose phase ended shows its average rate and how long it took.
var rateAndTook = regexp.MustCompile(`\d+\.\d/s in \d[\d.]*(ms|s|m)`)

// phases are reload's bars on a staged load, in the order they appear.
var phases = []string{"staged", "validated", "loaded"}

// TestTerminalPhasesAndWatch drives the release binary in real terminals (tmux panes) of 60
// and 120 columns against `demo serve`, on managed tables staged to a volume, with the
// Files API and each statement slowed so that every phase lasts a while:
//
//   - reload draws one bar per phase (staging, VALIDATE, loading), each with its rate and
//     time left while it runs, and each ending with its phase (rate and duration, no ETA);
//     no bar line is wider than the terminal;
//   - in a second pane, `history TABLE --watch` follows the run: its batches as they settle,
//     with its own bars, to the end, exiting as the run's end means;
//   - at 60 columns one Ctrl-C stops the reload: the interrupt notice is on the screen once,
//     above the bars, and stays after the last frame; the follower exits 130.
//
// Assertions are on the screens captured, not on timing: a phase is slow enough (hundreds of
// milliseconds per statement, 600 files staged through a slowed Files API) for the screen,
// read every 20 ms, to show it under way.
func TestTerminalPhasesAndWatch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and drives two terminals")
	}
	e2etest.NeedTmux(t)
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)
	const nFiles = 600
	roots := map[string]string{"main.sales.orders": filepath.Join(t.TempDir(), "orders"), "main.sales.returns": filepath.Join(t.TempDir(), "returns")}
	args := []string{}
	for table, root := range roots {
		writeFallback(t, root, nFiles)
		args = append(args, "--table", table+"="+root)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	served := e2etest.StartDemoServe(ctx, t, demoBin, args...)
	s := e2etest.NewServed(ctx, t, release, served.Env)
	s.Apply(map[string]any{
		"latency": map[string]any{"files_ms": 15},
		"faults": []map[string]any{
			{"match": `(?i)^COPY INTO .* VALIDATE ALL FILES`, "times": -1, "action": "delay", "delay_ms": 200},
			{"match": `^COPY INTO .* FILEFORMAT = PARQUET FILES`, "times": -1, "action": "delay", "delay_ms": 300},
		},
	})

	for _, c := range []struct {
		width     int
		table     string
		interrupt bool
	}{
		{120, "main.sales.orders", false},
		{60, "main.sales.returns", true},
	} {
		t.Run(fmt.Sprintf("%d columns", c.width), func(t *testing.T) {
			reloadCmd := fmt.Sprintf("'%s' reload %s --rename customer_id=customer_key --stage-to /Volumes/main/sales/staging/w%d --batch-files 50 --yes",
				release, c.table, c.width)
			// The shells survive Ctrl-C (a trap, which their child does not inherit) to print
			// the exit status.
			reload := e2etest.StartPane(t, fmt.Sprintf("reload%d", c.width), s.ShellEnv()+"trap 'true' INT\n"+reloadCmd, c.width, 40, "")
			var watch *e2etest.Pane
			underWay := map[string]string{} // phase → a line showing it under way
			watchUnderWay := ""
			interrupted := false
			deadline := time.Now().Add(4 * time.Minute)
			var final, watchFinal string
			for final == "" || watchFinal == "" {
				if time.Now().After(deadline) {
					t.Fatalf("the panes did not end:\n%s\n\n%s", reload.Capture(), func() string {
						if watch == nil {
							return "(no follower)"
						}
						return watch.Capture()
					}())
				}
				if final == "" {
					sc := reload.Capture()
					for _, ph := range phases {
						for _, l := range barOf(sc, ph) {
							if rateAndETA.MatchString(l) && underWay[ph] == "" {
								underWay[ph] = l
							}
						}
					}
					if watch == nil && len(barOf(sc, "staged")) > 0 {
						// The run has started (staging comes after its first record): follow
						// it from a second terminal.
						watch = e2etest.StartPane(t, fmt.Sprintf("watch%d", c.width), s.ShellEnv()+
							fmt.Sprintf("'%s' history %s --watch", release, c.table), c.width, 40, "")
					}
					if c.interrupt && !interrupted && underWay["loaded"] != "" {
						reload.Keys("C-c")
						interrupted = true
					}
					if strings.Contains(sc, "EXIT:") {
						final = sc
					}
				}
				if watch != nil && watchFinal == "" {
					sc := watch.Capture()
					for _, l := range barOf(sc, "loaded") {
						if rateAndETA.MatchString(l) && watchUnderWay == "" {
							watchUnderWay = l
						}
					}
					if strings.Contains(sc, "EXIT:") {
						watchFinal = sc
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("reload at %d columns, at the end:\n%s", c.width, final)
			t.Logf("history --watch at %d columns, at the end:\n%s", c.width, watchFinal)

			// Every phase was seen under way with its rate and ETA.
			for _, ph := range phases {
				if underWay[ph] == "" {
					t.Errorf("no screen showed the %s bar under way with its rate and ETA", ph)
				}
			}
			// One bar per phase at the end, none wider than the terminal, the ended ones with
			// their rate and duration.
			for _, ph := range phases {
				lines := barOf(final, ph)
				if len(lines) != 1 {
					t.Errorf("%d %s bars on the screen, want 1:\n%s", len(lines), ph, final)
					continue
				}
				l := lines[0]
				if len([]rune(l)) > c.width || !strings.Contains(l, "]") {
					t.Errorf("the %s bar does not fit %d columns: %q", ph, c.width, l)
				}
				stopped := c.interrupt && ph == "loaded"
				switch {
				case stopped && !strings.HasSuffix(l, "stopped"):
					t.Errorf("the interrupted phase: %q", l)
				case !stopped && (!rateAndTook.MatchString(l) || strings.Contains(l, "ETA")):
					t.Errorf("the %s bar did not end with its phase (rate and duration, no ETA): %q", ph, l)
				}
			}
			if !c.interrupt {
				if !strings.Contains(final, "EXIT:0") || len(barOf(final, "staged")) == 1 && !strings.Contains(barOf(final, "staged")[0], fmt.Sprintf("%d / %d files", nFiles, nFiles)) {
					t.Errorf("the staged reload did not finish:\n%s", final)
				}
				for _, w := range []string{"Following run ", "reload started by", "batch 1 verified", "batch 12 verified",
					"reload ended: verified; 12 of 12 batches verified, " + textfmt.Plural(2*nFiles, "row") + " inserted of " + textfmt.Count(2*nFiles) + " expected", "EXIT:0"} {
					if !strings.Contains(watchFinal, w) {
						t.Errorf("the follower's screen lacks %q:\n%s", w, watchFinal)
					}
				}
				if l := barOf(watchFinal, "loaded"); len(l) != 1 || !strings.Contains(l[0], "12 / 12 batches") || !rateAndTook.MatchString(l[0]) {
					t.Errorf("the follower's loading bar at the end: %q", l)
				}
				if watchUnderWay == "" {
					t.Errorf("the follower's loading bar was never seen with its rate and ETA")
				}
				return
			}
			// Interrupted: the notice once, above the bars, and exit 130; the follower says the
			// run was interrupted and exits 130 too.
			const notice = "interrupt received, stopping cleanly (send it again to exit at once)"
			var at, barAt = -1, -1
			for i, l := range strings.Split(final, "\n") {
				if strings.Contains(l, notice) {
					if at >= 0 || strings.TrimRight(l, " ") != notice {
						t.Errorf("the notice line %q (or a second one) on the screen:\n%s", l, final)
					}
					at = i
				}
				if strings.HasPrefix(l, "staged ") && barAt < 0 {
					barAt = i
				}
			}
			if at < 0 || barAt < at {
				t.Errorf("the notice is not on the screen, above the bars:\n%s", final)
			}
			if !strings.Contains(final, "EXIT:130") {
				t.Errorf("reload after one Ctrl-C:\n%s", final)
			}
			if !strings.Contains(watchFinal, "EXIT:130") || !strings.Contains(watchFinal, "interrupted") {
				t.Errorf("the follower of the interrupted run:\n%s", watchFinal)
			}
		})
	}
	served.Stop()
}
