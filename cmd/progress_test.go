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
	want := []string{"interrupt received, stopping cleanly", "warn: storage request failed, retrying op=copy attempt=1",
		"info: storage throttled: concurrency lowered limit=8 was=16", "staged", "10 / 10 files", "loaded", "1 / 4 batches", "after the bars"}
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
