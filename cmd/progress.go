package cmd

import (
	"io"
	"os"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/storage"
)

// progressEnabled reports whether progress bars are drawn: only when stderr is a terminal
// that can move the cursor (not TERM=dumb), the output is text (under --output json or jsonl,
// stderr holds only JSON) and --no-progress is not set.
func progressEnabled(f *Factory) bool {
	return !f.Global.NoProgress && !f.Global.JSON() && f.Global.Output != "jsonl" && f.IO.IsStderrTTY() && os.Getenv("TERM") != "dumb"
}

// progress is one command step's progress bars on stderr, stacked in the order they are
// added. While it is live, status lines (f.status: the log, notices) are printed above the
// bars and stay on screen. When progress is not enabled it draws nothing and costs nothing.
type progress struct {
	f  *Factory
	on bool
	// p is started with the first bar: until then status lines go straight to stderr (a
	// container without bars would not draw the lines written just before it ends).
	p    *mpb.Progress
	mu   sync.Mutex
	bars map[string]*progressBar
}

// progressBar is one bar of a progress, counting its unit ("files", "batches").
type progressBar struct{ bar *mpb.Bar }

// newBars returns the progress of a step on stderr; it draws nothing when progress is not
// enabled.
func newBars(f *Factory) *progress {
	return &progress{f: f, on: progressEnabled(f), bars: map[string]*progressBar{}}
}

// bar returns the bar named name, adding it below the others on first use.
func (pg *progress) bar(name, unit string) *progressBar {
	pg.mu.Lock()
	defer pg.mu.Unlock()
	if b, ok := pg.bars[name]; ok {
		return b
	}
	b := &progressBar{}
	if pg.on && pg.p == nil {
		pg.p = mpb.New(mpb.WithOutput(pg.f.IO.ErrOut), mpb.WithWidth(40),
			// Refresh, and redraw in place, even when mpb does not recognise the writer
			// as a terminal: the caller already decided stderr is one.
			mpb.WithAutoRefresh(), mpb.ForceTTY())
		pg.f.status.attach(pg.p)
	}
	if pg.p != nil {
		b.bar = pg.p.AddBar(0,
			mpb.PrependDecorators(decor.Name(name+" "), decor.CountersNoUnit("%d / %d "+unit)),
			mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO)),
		)
	}
	pg.bars[name] = b
	return b
}

// counter is a (done, total) progress callback for the bar named name.
func (pg *progress) counter(name, unit string) func(done, total int) {
	return func(done, total int) { pg.bar(name, unit).set(done, total) }
}

// set shows done of total.
func (b *progressBar) set(done, total int) {
	if b == nil || b.bar == nil {
		return
	}
	// The total grows while listing runs; it is final once listing is done.
	b.bar.SetTotal(int64(total), false)
	b.bar.SetCurrent(int64(done))
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
	for _, b := range pg.bars {
		if ok {
			b.bar.SetTotal(-1, true)
		} else {
			b.bar.Abort(false)
		}
	}
	pg.mu.Unlock()
	pg.p.Wait()
	pg.f.status.detach()
}

// footerProgress is a single bar of footers read over files listed (inspect.Progress).
type footerProgress struct {
	pg  *progress
	bar *progressBar
}

func newFooterProgress(f *Factory, name string) *footerProgress {
	return newProgress(f, name, "files")
}

// newProgress is a progress of one bar counting unit ("files", "batches") under name.
func newProgress(f *Factory, name, unit string) *footerProgress {
	pg := newBars(f)
	return &footerProgress{pg: pg, bar: pg.bar(name, unit)}
}

// update is an inspect.Options.Progress callback.
func (fp *footerProgress) update(pr inspect.Progress) { fp.bar.set(pr.Done, pr.Listed) }

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

// newAdaptive returns an AIMD concurrency limit of at most --concurrency whose changes are
// logged as adaptive says; scan shares one over every table's storage.
func (f *Factory) newAdaptive() *storage.Adaptive {
	var (
		mu     sync.Mutex
		last   time.Time
		logged bool
	)
	maxLimit := max(f.Global.Concurrency, 1)
	return storage.NewAdaptive(storage.AdaptiveOptions{Max: maxLimit, Min: 1, OnChange: func(from, to int, cause error) {
		mu.Lock()
		now := time.Now()
		show := !logged || to == maxLimit || now.Sub(last) >= time.Second
		if show {
			last, logged = now, true
		}
		mu.Unlock()
		switch {
		case !show:
		case to < from:
			f.Logger.Info("storage throttled: concurrency lowered", "limit", to, "was", from, "error", cause.Error())
		default:
			f.Logger.Info("storage concurrency raised", "limit", to, "max", maxLimit)
		}
	}})
}
