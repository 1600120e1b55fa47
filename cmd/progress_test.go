package cmd

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/iostreams"
)

// TestProgressOnlyOnCapableTerminals: a bar is drawn on a terminal, in its unit, and never on
// a dumb terminal, in JSON mode or with --no-progress.
func TestProgressOnlyOnCapableTerminals(t *testing.T) {
	for _, c := range []struct {
		name, term, output string
		noProgress, want   bool
	}{
		{"terminal", "xterm-256color", "text", false, true},
		{"dumb terminal", "dumb", "text", false, false},
		{"json", "xterm", "json", false, false},
		{"no progress", "xterm", "text", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("TERM", c.term)
			io, _, _, _ := iostreams.Test()
			errOut := &syncBuffer{}
			io.ErrOut = errOut
			io.SetStderrTTY(true)
			f := NewFactory(io)
			f.Global.Output, f.Global.NoProgress = c.output, c.noProgress
			bar := newProgress(f, "loaded", "batches")
			bar.update(inspect.Progress{Listed: 3, ListingDone: true, Done: 1})
			if c.want {
				errOut.waitFor(t, "1 / 3 batches")
			}
			bar.update(inspect.Progress{Listed: 3, ListingDone: true, Done: 3})
			bar.done(true)
			got := errOut.String()
			if drawn := len(got) > 0; drawn != c.want {
				t.Fatalf("drawn %v, want %v: %q", drawn, c.want, got)
			}
			if c.want && !strings.Contains(got, "/ 3 batches") {
				t.Errorf("bar without its unit: %q", got)
			}
		})
	}
}

// screen replays what a terminal shows for out: text, newlines, carriage returns, and the
// only cursor control the bars use, ESC[nA (up n lines) and ESC[J (erase to the end).
func screen(out string) []string {
	lines := []string{""}
	row, col := 0, 0
	put := func(r rune) {
		line := []rune(lines[row])
		for len(line) < col {
			line = append(line, ' ')
		}
		if col < len(line) {
			line[col] = r
		} else {
			line = append(line, r)
		}
		lines[row] = string(line)
		col++
	}
	rs := []rune(out)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; {
		case r == '\x1b' && i+1 < len(rs) && rs[i+1] == '[':
			j, n := i+2, 0
			for j < len(rs) && rs[j] >= '0' && rs[j] <= '9' {
				n = n*10 + int(rs[j]-'0')
				j++
			}
			if j < len(rs) {
				switch rs[j] {
				case 'A':
					row = max(row-max(n, 1), 0)
				case 'J':
					line := []rune(lines[row])
					lines = append(lines[:row], string(line[:min(col, len(line))]))
				}
			}
			i = j
		case r == '\n':
			row, col = row+1, 0
			if row == len(lines) {
				lines = append(lines, "")
			}
		case r == '\r':
			col = 0
		default:
			put(r)
		}
	}
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// TestStatusLinesStayAboveTheBar: the interrupt notice, a retry warning and a -v line written
// while bars are live are printed above them, and are still on the screen after the bars'
// last frame; the bars keep their last state below them.
func TestStatusLinesStayAboveTheBar(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	io, _, _, _ := iostreams.Test()
	errOut := &syncBuffer{}
	io.ErrOut = errOut
	io.SetStderrTTY(true)
	f := NewFactory(io)
	f.Global.Output, f.Global.Verbose = "text", 1
	bars := newBars(f)
	staged, loaded := bars.counter("staged", "files"), bars.counter("loaded", "batches")
	staged(3, 10)
	errOut.waitFor(t, "3 / 10 files")
	f.notice("interrupt received, stopping cleanly (send it again to exit at once)")
	f.Logger.Warn("storage request failed, retrying", "op", "copy", "attempt", 1)
	staged(10, 10)
	loaded(0, 4)
	errOut.waitFor(t, "0 / 4 batches")
	f.Logger.Info("storage throttled: concurrency lowered", "limit", 8, "was", 16)
	loaded(1, 4)
	errOut.waitFor(t, "1 / 4 batches")
	bars.done(false)
	f.notice("after the bars")

	got := screen(errOut.String())
	text := strings.Join(got, "\n")
	want := []string{"interrupt received, stopping cleanly", `level=warn msg="storage request failed, retrying" op=copy attempt=1`,
		`level=info msg="storage throttled: concurrency lowered" limit=8 was=16`, "staged", "10 / 10 files", "loaded", "1 / 4 batches", "after the bars"}
	last := -1
	for _, w := range want {
		i := strings.Index(text, w)
		if i < 0 || i < last {
			t.Fatalf("screen lacks %q (or out of order):\n%s\n\nraw: %q", w, text, errOut.String())
		}
		last = i
	}
	if n := strings.Count(text, "interrupt received"); n != 1 {
		t.Errorf("the notice is on screen %d times:\n%s", n, text)
	}
	if n := strings.Count(text, "batches"); n != 1 {
		t.Errorf("the bar is on screen %d times (frames not redrawn in place):\n%s", n, text)
	}
}

// TestStatusWithoutBarsIsPlain: with no live bars, status lines go straight to stderr, and
// a dumb terminal gets no escape byte at all.
func TestStatusWithoutBarsIsPlain(t *testing.T) {
	t.Setenv("TERM", "dumb")
	io, _, _, errOut := iostreams.Test()
	io.SetStderrTTY(true)
	f := NewFactory(io)
	f.Global.Output = "text"
	bars := newBars(f)
	bars.counter("deleted", "files")(1, 2)
	f.notice("interrupt received, stopping cleanly (send it again to exit at once)")
	bars.done(true)
	if got := errOut.String(); got != "interrupt received, stopping cleanly (send it again to exit at once)\n" {
		t.Errorf("stderr %q", got)
	}
}

// syncBuffer is a stderr the bars write to from their own goroutine while the test reads it;
// each write wakes a waiter.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed by the next write, then replaced
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits, write by write, until the bars have drawn a frame holding want (a deadline
// turns a frame that never comes into a failure).
func (s *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		if strings.Contains(s.b.String(), want) {
			s.mu.Unlock()
			return
		}
		if s.written == nil {
			s.written = make(chan struct{})
		}
		next := s.written
		s.mu.Unlock()
		select {
		case <-next:
		case <-deadline:
			t.Fatalf("no frame shows %q: %q", want, s.String())
		}
	}
}

// barLine returns the one line of the screen that starts with the bar's name, failing when
// there is not exactly one.
func barLine(t *testing.T, screen []string, name string) string {
	t.Helper()
	l, n := findBar(screen, name)
	if n != 1 {
		t.Fatalf("%d lines of bar %q on the screen:\n%s", n, name, strings.Join(screen, "\n"))
	}
	return l
}

// findBar returns the last line of the screen that starts with the bar's name, and how many
// do.
func findBar(screen []string, name string) (string, int) {
	line, n := "", 0
	for _, l := range screen {
		if strings.HasPrefix(l, name+" ") {
			line, n = l, n+1
		}
	}
	return line, n
}

// words is what a bar line says: its words, without the bar itself, whose width, like the
// columns', follows the other bars.
func words(l string) string {
	if i, j := strings.Index(l, "["), strings.LastIndex(l, "]"); i >= 0 && j > i {
		l = l[:i] + l[j+1:]
	}
	return strings.Join(strings.Fields(l), " ")
}

// bar is findBar's line.
func bar(screen []string, name string) string { l, _ := findBar(screen, name); return l }

// TestPhaseBarsEndWithTheirPhase: each phase has its own bar with its rate and time left
// while it runs; a bar ends when its phase reaches its total, showing its average rate and
// how long it took, and nothing on it moves while later phases run; at the end of the step
// every phase is one line, and a phase abandoned by a failure says it stopped.
func TestPhaseBarsEndWithTheirPhase(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	io, _, _, _ := iostreams.Test()
	errOut := &syncBuffer{}
	io.ErrOut = errOut
	io.SetStderrTTY(true)
	f := NewFactory(io)
	f.Global.Output = "text"
	bars := newBars(f)
	staged, validated, loaded := bars.counter("staged", "files"), bars.counter("validated", "statements"), bars.counter("loaded", "batches")
	keys := bars.counter("keys read", "files")
	keys(0, 0) // a phase with nothing to do draws no bar

	staged(0, 4)
	for i := 1; i <= 3; i++ {
		time.Sleep(20 * time.Millisecond)
		staged(i, 4)
	}
	staged(2, 4) // a count from a slower worker, out of order: the bar does not go back
	errOut.waitFor(t, "3 / 4 files")
	waitScreen(t, errOut, "the staging bar with its rate and ETA", func(s []string) bool {
		l := bar(s, "staged")
		return strings.Contains(l, "3 / 4 files") && strings.Contains(l, "/s") && strings.Contains(l, "ETA ")
	})
	time.Sleep(20 * time.Millisecond)
	staged(4, 4)
	validated(0, 2)
	time.Sleep(10 * time.Millisecond)
	validated(1, 2)
	validated(2, 2)
	loaded(0, 3)
	time.Sleep(30 * time.Millisecond)
	loaded(1, 3)
	s := waitScreen(t, errOut, "the loading bar under way, the others ended", func(s []string) bool {
		return strings.Contains(bar(s, "loaded"), "ETA ") && strings.Contains(bar(s, "staged"), " in ") &&
			strings.Contains(bar(s, "validated"), " in ")
	})
	// What an ended bar shows, its words (columns are aligned with the other bars).
	stagedEnded, validatedEnded := words(barLine(t, s, "staged")), words(barLine(t, s, "validated"))
	for _, l := range []string{stagedEnded, validatedEnded} {
		if strings.Contains(l, "ETA") || !strings.Contains(l, "/s") {
			t.Errorf("an ended phase shows its average rate and duration, no ETA: %q", l)
		}
	}
	// Later frames, while loading goes on: the ended bars do not change.
	time.Sleep(400 * time.Millisecond)
	loaded(2, 3)
	s = waitScreen(t, errOut, "2 of 3 batches", func(s []string) bool { return strings.Contains(bar(s, "loaded"), "2 / 3 batches") })
	if got := words(barLine(t, s, "staged")); got != stagedEnded {
		t.Errorf("the staging bar moved after its phase:\n%q\n%q", stagedEnded, got)
	}
	if got := words(barLine(t, s, "validated")); got != validatedEnded {
		t.Errorf("the VALIDATE bar moved after its phase:\n%q\n%q", validatedEnded, got)
	}
	bars.done(false)
	s = screen(errOut.String())
	t.Logf("the screen at the end:\n%s", strings.Join(s, "\n"))
	if l := barLine(t, s, "loaded"); !strings.Contains(l, "2 / 3 batches") || !strings.Contains(l, "stopped") {
		t.Errorf("the abandoned phase: %q", l)
	}
	if got := words(barLine(t, s, "staged")); got != stagedEnded {
		t.Errorf("the staging bar changed at the end: %q", got)
	}
	if strings.Contains(strings.Join(s, "\n"), "keys read") {
		t.Errorf("a phase with nothing to do drew a bar:\n%s", strings.Join(s, "\n"))
	}
}

// TestPhaseRunTwiceHasTwoBars: a phase that starts again after its bar ended (staging the
// open batches of a continued run, then the rest) gets a second bar; a total that grows
// (tables found while listing) ends the bar only with the step.
func TestPhaseRunTwiceHasTwoBars(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	io, _, _, _ := iostreams.Test()
	errOut := &syncBuffer{}
	io.ErrOut = errOut
	io.SetStderrTTY(true)
	f := NewFactory(io)
	f.Global.Output = "text"
	bars := newBars(f)
	staged, tables := bars.counter("staged", "files"), bars.growing("tables", "tables")
	staged(0, 2)
	staged(2, 2)
	staged(0, 5)
	staged(5, 5)
	tables(0, 3)
	tables(3, 3) // more may be listed: not the end
	errOut.waitFor(t, "3 / 3 tables")
	tables(3, 7)
	errOut.waitFor(t, "3 / 7 tables")
	// A follower's bar first seen ended: nothing was measured.
	removed := bars.counter("removed", "staged copies")
	removed(4, 4)
	errOut.waitFor(t, "4 / 4 staged copies")
	bars.done(true)
	sc := screen(errOut.String())
	if l := words(barLine(t, sc, "removed")); !strings.HasSuffix(l, "4 / 4 staged copies done") {
		t.Errorf("a bar seen only ended: %q", l)
	}
	text := strings.Join(sc, "\n")
	if _, n := findBar(sc, "staged"); !strings.Contains(text, "2 / 2 files") || !strings.Contains(text, "5 / 5 files") || n != 2 {
		t.Errorf("want two staging bars:\n%s", text)
	}
	if !strings.Contains(text, "3 / 3 tables") || strings.Contains(text, "/ 7 tables") {
		t.Errorf("the growing bar ends at its count with the step:\n%s", text)
	}
}

// waitScreen waits until the replayed screen satisfies cond.
func waitScreen(t *testing.T, s *syncBuffer, what string, cond func([]string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		sc := screen(s.String())
		if cond(sc) {
			return sc
		}
		if time.Now().After(deadline) {
			t.Fatalf("no frame shows %s:\n%s", what, strings.Join(sc, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStatusLineAfterEveryPhaseEnded: a line written once every bar's phase has ended, before
// the step ends, is printed above the bars all the same.
func TestStatusLineAfterEveryPhaseEnded(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	io, _, _, _ := iostreams.Test()
	errOut := &syncBuffer{}
	io.ErrOut = errOut
	io.SetStderrTTY(true)
	f := NewFactory(io)
	f.Global.Output = "text"
	bars := newBars(f)
	loaded := bars.counter("loaded", "batches")
	loaded(0, 2)
	loaded(2, 2)
	errOut.waitFor(t, "2 / 2 batches")
	f.notice("the MERGE moved the rows")
	bars.done(true)
	text := strings.Join(screen(errOut.String()), "\n")
	if i, j := strings.Index(text, "the MERGE moved the rows"), strings.Index(text, "loaded "); i < 0 || j < i {
		t.Errorf("the line is lost or below the bar:\n%s", text)
	}
}

// TestNoticeAfterTheEchoedCtrlC: the terminal echoes ^C under the bars when Ctrl-C is
// pressed; the next frame still clears the bars from their first column, so that the notice
// line starts with the notice, nothing of the old bar in front of it, and ^C is gone.
func TestNoticeAfterTheEchoedCtrlC(t *testing.T) {
	t.Setenv("TERM", "xterm-256color")
	io, _, _, _ := iostreams.Test()
	errOut := &syncBuffer{}
	io.ErrOut = errOut
	io.SetStderrTTY(true)
	f := NewFactory(io)
	f.Global.Output = "text"
	bars := newBars(f)
	staged := bars.counter("staged", "files")
	staged(0, 10)
	staged(3, 10)
	errOut.waitFor(t, "3 / 10 files")
	_, _ = errOut.Write([]byte("^C")) // the terminal's echo, where the cursor is
	f.notice("interrupt received, stopping cleanly (send it again to exit at once)")
	staged(4, 10)
	errOut.waitFor(t, "4 / 10 files")
	bars.done(false)
	sc := screen(errOut.String())
	if len(sc) != 2 || sc[0] != "interrupt received, stopping cleanly (send it again to exit at once)" || !strings.HasPrefix(sc[1], "staged ") {
		t.Errorf("the screen after Ctrl-C:\n%s\n\nraw: %q", strings.Join(sc, "\n"), errOut.String())
	}
}
