package cmd

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/zbrecover/zbrecover/inspect"
)

// progressEnabled reports whether progress bars are drawn: only when stderr is a terminal
// that can move the cursor (not TERM=dumb), the output is text (under --output json or jsonl,
// stderr holds only JSON) and --no-progress is not set.
func progressEnabled(f *Factory) bool {
	return !f.Global.NoProgress && !f.Global.JSON() && f.Global.Output != "jsonl" && f.IO.IsStderrTTY() && os.Getenv("TERM") != "dumb"
}

// progress is one command step's progress bars on stderr, one bar per phase (staging,
// VALIDATE, loading, deleting…), stacked in the order the phases start. While it is live,
// status lines (f.status: the log, notices) are printed above the bars and stay on screen.
// When progress is not enabled it draws nothing and costs nothing.
type progress struct {
	f  *Factory
	on bool
	// p is started with the first bar: until then status lines go straight to stderr (a
	// container without bars would not draw the lines written just before it ends).
	p  *mpb.Progress
	mu sync.Mutex
	// bars holds each name's latest bar; all every bar, in the order they were added.
	bars map[string]*progressBar
	all  []*progressBar
}

// progressBar is the bar of one phase. It counts its unit ("files", "batches") towards the
// phase's total and shows the rate and the time left, both moving averages of the time per
// unit (mpb's EWMA decorators, fed with the time between counts), so that they follow the
// work as it is now rather than since the start. When the phase ends (its count reaches a
// final total) the bar stops: it keeps its count and shows the phase's average rate and how
// long it took, and nothing moves on it while later phases run.
type progressBar struct {
	mu    sync.Mutex // guards what set changes; never held by the decorators
	bar   *mpb.Bar   // nil when progress is not drawn
	start time.Time
	last  time.Time // of the latest count
	done  int
	total int
	begun bool // the first count is set: later ones are measured against it
	// ended is set once the phase reached its final total; sampled once a count was
	// measured (the averages have a value); took is the phase's duration, in nanoseconds,
	// once it ended. The decorators read them while set runs.
	ended   atomic.Bool
	stopped atomic.Bool // abandoned: the step failed before the phase ended
	sampled atomic.Bool
	took    atomic.Int64
	// from is the first count: the work measured is what came after it.
	from atomic.Int64
}

// newBars returns the progress of a step on stderr; it draws nothing when progress is not
// enabled.
func newBars(f *Factory) *progress {
	return &progress{f: f, on: progressEnabled(f), bars: map[string]*progressBar{}}
}

// bar returns the bar named name, adding it below the others on first use, or when the
// phase starts again (a count of 0) after its bar ended: a phase run twice (staging the open
// batches of a continued run, then the rest) shows two bars, each finished with its run.
func (pg *progress) bar(name, unit string, restart bool) *progressBar {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if b, ok := pg.bars[name]; ok && !(restart && b.ended.Load()) {
		return b
	}
	b := &progressBar{start: time.Now()}
	b.last = b.start
	if pg.on && pg.p == nil {
		// Lines are as wide as the terminal (mpb asks it); a writer that is no terminal
		// (tests) is taken as 100 columns. Bars are at most 40. Frames are redrawn in place
		// even when the writer is no terminal: the caller already decided stderr is one.
		out := pg.f.IO.ErrOut
		cw := cupwriter.New(lineStart{out}, true)
		if f, ok := out.(*os.File); ok {
			cw.SetTermFd(int(f.Fd()))
		}
		pg.p = mpb.New(mpb.WithConsoleWriter(cw), mpb.WithWidth(100), mpb.WithAutoRefresh())
		pg.f.status.attach(pg.p)
	}
	if pg.p != nil {
		b.bar = pg.p.AddBar(0, mpb.BarWidth(40),
			mpb.PrependDecorators(decor.Name(name, decor.WCSyncWidthR), decor.CountersNoUnit("%d / %d "+unit, decor.WCSyncSpace)),
			mpb.AppendDecorators(phaseRate{decor.EwmaSpeed(nil, "%.1f/s", ewmaAge, decor.WCSyncSpace), b},
				phaseTime{decor.EwmaETA(decor.ET_STYLE_GO, ewmaAge, decor.WC{C: decor.DextraSpace}), b}),
		)
	}
	pg.bars[name] = b
	pg.all = append(pg.all, b)
	return b
}

// ewmaAge is the age of the bars' moving averages: mpb's (and VividCortex's) default, the one
// that needs no warm-up samples, so that a phase of a few batches shows its rate from its
// first measured count on.
const ewmaAge = 30

// counter is a (done, total) progress callback for the phase named name whose totals are
// final: its bar ends when done reaches total.
func (pg *progress) counter(name, unit string) func(done, total int) {
	return func(done, total int) { pg.count(name, unit, done, total, true) }
}

// growing is a (done, total) progress callback for a phase whose total grows while it runs
// (tables found while catalogs are listed): its bar ends with the step (done).
func (pg *progress) growing(name, unit string) func(done, total int) {
	return func(done, total int) { pg.count(name, unit, done, total, false) }
}

// count shows done of total on the bar of phase name; final says total will not grow, so
// that the bar ends when done reaches it. A phase with nothing to do (a final total of 0)
// draws no bar.
func (pg *progress) count(name, unit string, done, total int, final bool) {
	if !pg.on {
		return
	}
	if final && total == 0 && pg.has(name) == nil {
		return
	}
	pg.bar(name, unit, done == 0).set(done, total, final)
}

// has returns the bar named name, if there is one.
func (pg *progress) has(name string) *progressBar {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	return pg.bars[name]
}

// set shows done of total. Counts that arrive out of order (from concurrent workers) never
// move the bar back; a bar that ended takes no more counts.
func (b *progressBar) set(done, total int, final bool) {
	if b == nil || b.bar == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ended.Load() {
		return
	}
	now := time.Now()
	if total != b.total {
		// The total grows while listing runs; it is final once listing is done.
		b.total = total
		b.bar.SetTotal(int64(total), false)
	}
	switch {
	case !b.begun:
		// The first count is where the bar starts (a follower joins a phase under way):
		// only the counts after it are measured.
		b.begun, b.done, b.last = true, max(done, 0), now
		b.from.Store(int64(b.done))
		b.bar.SetCurrent(int64(b.done))
	case done > b.done:
		b.bar.EwmaSetCurrent(int64(done), now.Sub(b.last))
		b.sampled.Store(true)
		b.done, b.last = done, now
	}
	if final && b.done >= total {
		// The bar shows that its phase ended (its decorators read ended); mpb completes
		// it only when the step ends (done): once every bar of a container is complete,
		// mpb draws no more frames, and the status lines written after that would not be
		// printed.
		b.took.Store(int64(now.Sub(b.start)))
		b.ended.Store(true)
	}
}

// done completes (or, after a failure, abandons) every bar, waits for their last render and
// hands stderr back to plain status lines.
func (pg *progress) done(ok bool) {
	pg.mu.Lock()
	started := pg.p != nil
	pg.mu.Unlock()
	if !started {
		return
	}
	pg.f.status.closing()
	pg.mu.Lock()
	now := time.Now()
	for _, b := range pg.all {
		b.mu.Lock()
		switch {
		case b.ended.Load():
			b.bar.SetTotal(-1, true)
		case ok:
			b.took.Store(int64(now.Sub(b.start)))
			b.ended.Store(true)
			b.bar.SetTotal(-1, true)
		default:
			b.stopped.Store(true)
			b.ended.Store(true)
			b.bar.Abort(false)
		}
		b.mu.Unlock()
	}
	pg.mu.Unlock()
	pg.p.Wait()
	pg.f.status.detach()
}

// phaseRate shows the phase's rate in units per second: mpb's EWMA speed while it runs, its
// average over the phase once it ended (over the part a follower saw), nothing before the
// first measured count (or when there was none) or once stopped.
type phaseRate struct {
	decor.Decorator
	b *progressBar
}

func (d phaseRate) Decor(s decor.Statistics) (string, int) {
	switch {
	case d.b.stopped.Load() || !d.b.sampled.Load():
		return d.Format("")
	case d.b.ended.Load():
		took := time.Duration(d.b.took.Load())
		if took <= 0 {
			return d.Format("")
		}
		return d.Format(fmt.Sprintf("%.1f/s", float64(s.Current-d.b.from.Load())/took.Seconds()))
	}
	return d.Decorator.Decor(s)
}

// Unwrap gives mpb the EWMA decorator, which it feeds with each count's duration.
func (d phaseRate) Unwrap() decor.Decorator { return d.Decorator }

// phaseTime shows "ETA 12s" (mpb's EWMA ETA) while the phase runs, "in 3.4s" once it ended
// ("done" when the bar saw no count before the end) and "stopped" when it was abandoned.
type phaseTime struct {
	decor.Decorator
	b *progressBar
}

func (d phaseTime) Decor(s decor.Statistics) (string, int) {
	switch {
	case d.b.stopped.Load():
		return d.Format("stopped")
	case d.b.ended.Load() && !d.b.sampled.Load():
		// Seen only ended (a follower that read the whole phase at once): how long it
		// took is not known.
		return d.Format("done")
	case d.b.ended.Load():
		return d.Format("in " + roundDuration(time.Duration(d.b.took.Load())))
	case !d.b.sampled.Load():
		return d.Format("")
	}
	eta, _ := d.Decorator.Decor(s)
	return d.Format("ETA " + strings.TrimSpace(eta))
}

// Unwrap gives mpb the EWMA decorator, which it feeds with each count's duration.
func (d phaseTime) Unwrap() decor.Decorator { return d.Decorator }

// roundDuration is d to the millisecond under a second, to a tenth of a second under a
// minute, to the second above.
func roundDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// lineStart is stderr under the bars. Each frame starts by moving the cursor up to the bars'
// first line and clearing from there (ESC[nA ESC[J); lineStart puts a carriage return
// before it, so that the clearing starts at the line's start. The terminal echoes "^C" where
// the cursor is when Ctrl-C is pressed, under the bars: without the carriage return, the
// next frame would clear the bars' first line from the third column on, and its first two
// letters would stay in front of the interrupt notice.
type lineStart struct{ w io.Writer }

func (l lineStart) Write(p []byte) (int, error) {
	if bytes.HasPrefix(p, []byte("\x1b[")) {
		if _, err := l.w.Write([]byte{'\r'}); err != nil {
			return 0, err
		}
	}
	return l.w.Write(p)
}

// footerProgress is a single bar of footers read over files listed (inspect.Progress).
type footerProgress struct {
	pg   *progress
	name string
	unit string
}

func newFooterProgress(f *Factory, name string) *footerProgress {
	return newProgress(f, name, "files")
}

// newProgress is a progress of one bar counting unit ("files", "batches") under name.
func newProgress(f *Factory, name, unit string) *footerProgress {
	return &footerProgress{pg: newBars(f), name: name, unit: unit}
}

// update is an inspect.Options.Progress callback: the total is final once listing is done.
func (fp *footerProgress) update(pr inspect.Progress) {
	fp.pg.count(fp.name, fp.unit, pr.Done, pr.Listed, pr.ListingDone)
}

// done completes (or, after a failure, abandons) the bar and waits for its last render.
func (fp *footerProgress) done(ok bool) { fp.pg.done(ok) }

// statusWriter is stderr for status lines (the log, notices). While progress bars are live,
// each write goes through the bars' container, which prints it above them on its next frame,
// so that no frame erases it; otherwise it goes straight to stderr. Writers are expected to
// write whole lines.
type statusWriter struct {
	mu   sync.Mutex
	out  io.Writer
	live *mpb.Progress
	// ending is set while the bars draw their last frame: lines written then are held and
	// printed after it, below the bars.
	ending bool
	held   []byte
}

func newStatusWriter(out io.Writer) *statusWriter { return &statusWriter{out: out} }

func (w *statusWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.live != nil && w.ending:
		w.held = append(w.held, b...)
		return len(b), nil
	case w.live != nil:
		if n, err := w.live.Write(b); err == nil {
			return n, nil
		}
	}
	return w.out.Write(b)
}

func (w *statusWriter) attach(p *mpb.Progress) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live, w.ending, w.held = p, false, nil
}

func (w *statusWriter) closing() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ending = true
}

func (w *statusWriter) detach() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live, w.ending = nil, false
	if len(w.held) > 0 {
		_, _ = w.out.Write(w.held)
		w.held = nil
	}
}
