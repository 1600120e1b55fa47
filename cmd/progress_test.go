package cmd

import (
	"strings"
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
			io, _, _, errOut := iostreams.Test()
			io.SetStderrTTY(true)
			f := NewFactory(io)
			f.Global.Output, f.Global.NoProgress = c.output, c.noProgress
			bar := newProgress(f, "loaded", "batches")
			bar.update(inspect.Progress{Listed: 3, ListingDone: true, Done: 1})
			time.Sleep(250 * time.Millisecond)
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
