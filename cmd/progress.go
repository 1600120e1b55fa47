package cmd

import (
	"os"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/storage"
)

// footerProgress is a progress bar of footers read over files listed, on stderr. It is shown
// only when stderr is a terminal, the output is text and --no-progress is not set (under
// --output json, stderr holds only JSON); otherwise it does nothing.
type footerProgress struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

func newFooterProgress(f *Factory, name string) *footerProgress {
	return newProgress(f, name, "files")
}

// newProgress is a progress bar counting unit ("files", "batches") under name. A terminal
// that cannot move the cursor (TERM=dumb) gets none.
func newProgress(f *Factory, name, unit string) *footerProgress {
	if f.Global.NoProgress || f.Global.JSON() || f.Global.Output == "jsonl" || !f.IO.IsStderrTTY() || os.Getenv("TERM") == "dumb" {
		return &footerProgress{}
	}
	p := mpb.New(mpb.WithOutput(f.IO.ErrOut), mpb.WithWidth(40),
		// Refresh even when mpb does not recognise the writer as a terminal: the caller
		// already decided stderr is one.
		mpb.WithAutoRefresh())
	bar := p.AddBar(0,
		mpb.PrependDecorators(decor.Name(name+" "), decor.CountersNoUnit("%d / %d "+unit)),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO)),
	)
	return &footerProgress{p: p, bar: bar}
}

// update is an inspect.Options.Progress callback.
func (fp *footerProgress) update(pr inspect.Progress) {
	if fp.bar == nil {
		return
	}
	// The total grows while listing runs; it is final once listing is done.
	fp.bar.SetTotal(int64(pr.Listed), false)
	fp.bar.SetCurrent(int64(pr.Done))
}

// done completes (or, after a failure, abandons) the bar and waits for its last render.
func (fp *footerProgress) done(ok bool) {
	if fp.p == nil {
		return
	}
	if ok {
		fp.bar.SetTotal(-1, true)
	} else {
		fp.bar.Abort(false)
	}
	fp.p.Wait()
}

// adaptive puts b's requests under an AIMD concurrency limit of at most --concurrency
// (storage.WithAdaptive): throttled answers halve it, answers without one raise it back.
// Its changes are logged at -v: the first halving and the return to --concurrency always,
// other changes at most once a second.
func (f *Factory) adaptive(b storage.Backend) storage.Backend {
	var (
		mu     sync.Mutex
		last   time.Time
		logged bool
	)
	maxLimit := max(f.Global.Concurrency, 1)
	ab, _ := storage.WithAdaptive(b, storage.AdaptiveOptions{Max: maxLimit, Min: 1, OnChange: func(from, to int, cause error) {
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
	return ab
}
