package cmd

import (
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/zbrecover/zbrecover/inspect"
)

// footerProgress is a progress bar of footers read over files listed, on stderr. It is shown
// only when stderr is a terminal, the output is text and --no-progress is not set (under
// --output json, stderr holds only JSON); otherwise it does nothing.
type footerProgress struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

func newFooterProgress(f *Factory, name string) *footerProgress {
	if f.Global.NoProgress || f.Global.JSON() || !f.IO.IsStderrTTY() {
		return &footerProgress{}
	}
	p := mpb.New(mpb.WithOutput(f.IO.ErrOut), mpb.WithWidth(40),
		// Refresh even when mpb does not recognise the writer as a terminal: the caller
		// already decided stderr is one.
		mpb.WithAutoRefresh())
	bar := p.AddBar(0,
		mpb.PrependDecorators(decor.Name(name+" "), decor.CountersNoUnit("%d / %d files")),
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
