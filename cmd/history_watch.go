package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/history"
	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/internal/textsafe"
)

// watchInterval is how often history --watch reads the journal again.
var watchInterval = time.Second

// watchRun follows a run through the journal until its latest process ends it (history
// --watch): the run o.Run, else the newest run of the table (waiting for one when the table
// has none yet). Each read takes only what was appended; what changed is printed as it
// happens (one JSON line per read that changed something under -o json), with the same
// bars as the command that writes the run. The exit status is what the run's end means;
// Ctrl-C stops following, not the run.
func watchRun(ctx context.Context, f *Factory, store journalStore, tables []string, run string) error {
	tableID, run, err := watchedRun(ctx, f, store, tables, run)
	if err != nil {
		return err
	}
	w := history.NewWatch(store, tableID, run)
	v := newRunView(f, store.Location())
	tick := time.NewTicker(watchInterval)
	defer tick.Stop()
	for {
		p, err := w.Next(ctx)
		if err != nil {
			v.stop(false)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		if p != nil {
			if err := v.show(p); err != nil {
				v.stop(false)
				return err
			}
			if p.Ended {
				v.stop(p.Outcome == history.OutcomeOK)
				return watchExit(p)
			}
		}
		select {
		case <-ctx.Done():
			v.stop(false)
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// watchedRun returns the table and the run to follow: run, found among tables (every table
// of the journal when nil); else the newest run of the one table, waiting for its first.
func watchedRun(ctx context.Context, f *Factory, store journalStore, tables []string, run string) (string, string, error) {
	if run != "" {
		id, err := history.FindRun(ctx, store, tables, run)
		return id, run, err
	}
	if len(tables) != 1 {
		return "", "", FlagErrorf("--watch follows one run: give the table (TARGET), or --run ID")
	}
	waiting := false
	for {
		newest, err := history.NewestRun(ctx, store, tables[0])
		if err == nil {
			return tables[0], newest, nil
		}
		if !errors.Is(err, history.ErrNoRunYet) {
			return "", "", err
		}
		if !waiting {
			f.notice(fmt.Sprintf("Waiting for a run of the table in the journal at %s (Ctrl-C to stop).", store.Location()))
			waiting = true
		}
		select {
		case <-ctx.Done():
			return "", "", ctx.Err()
		case <-time.After(watchInterval):
		}
	}
}

// watchExit is the error that makes history --watch exit with what the run's end means.
func watchExit(p *history.Progress) error {
	msg := fmt.Sprintf("run %s ended %s", p.Run, p.Status)
	if p.Error != "" {
		msg += ": " + p.Error
	}
	switch p.Outcome {
	case history.OutcomeOK:
		return nil
	case history.OutcomeMismatch:
		return WithCode(ExitVerify, msg)
	case history.OutcomeUnknown, history.OutcomePartial:
		return WithCode(ExitPartial, msg)
	case history.OutcomeInterrupted:
		return WithCode(ExitInterrupted, msg)
	}
	return WithCode(ExitFailure, msg)
}

// runView renders a followed run: lines of what changed (above the bars on a terminal) and
// a bar per phase the run is in, or JSON lines.
type runView struct {
	f       *Factory
	journal string
	json    bool
	out     io.Writer
	bars    *progress
	started bool
}

func newRunView(f *Factory, journal string) *runView {
	v := &runView{f: f, journal: journal, json: f.Global.JSON(), out: f.IO.Out, bars: newBars(f)}
	if v.bars.on && f.IO.IsStdoutTTY() {
		// One screen: the lines go above the bars, which stay below them.
		v.out = f.status
	}
	return v
}

// stop ends the bars: completed when the run ended well, stopped otherwise.
func (v *runView) stop(ok bool) { v.bars.done(ok) }

// show renders one read of the run.
func (v *runView) show(p *history.Progress) error {
	if v.json {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(struct {
			SchemaVersion int `json:"schema_version"`
			*history.Progress
		}{jsonout.SchemaVersion, p}); err != nil {
			return err
		}
		_, err := v.f.IO.Out.Write(b.Bytes())
		return err
	}
	var lines []string
	if !v.started {
		v.started = true
		lines = append(lines, fmt.Sprintf("Following run %s of %s (journal at %s); Ctrl-C stops following, not the run.",
			p.Run, textsafe.Escape(p.Table), textsafe.Escape(v.journal)),
			fmt.Sprintf("The run: %s, %s, %s expected; now %s.", textfmt.Plural(p.Batches.Total, "batch"), textfmt.Plural(p.Files.Total, "file"),
				textfmt.Plural(p.Rows.Expected, "row"), p.Status))
	}
	at := p.Time.Local().Format("15:04:05")
	for _, c := range p.Changes {
		if l := changeLine(p, c); l != "" {
			lines = append(lines, at+"  "+l)
		}
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(v.out, l); err != nil {
			return err
		}
	}
	v.count(p)
	return nil
}

// count moves the bars of the phases the run is in.
func (v *runView) count(p *history.Progress) {
	fc, bc := p.Files, p.Batches
	if fc.Staged > 0 {
		v.bars.count("staged", "files", fc.Staged, fc.Total, true)
	}
	if bc.Done+bc.Open+bc.Failed > 0 {
		v.bars.count("loaded", "batches", bc.Done, bc.Total, true)
	}
	if fc.Deleted+fc.Kept > 0 {
		v.bars.count("deleted", "files", fc.Deleted+fc.Kept, fc.ToDelete, true)
	}
	if fc.StagedRemoved > 0 {
		v.bars.count("removed", "staged copies", fc.StagedRemoved, fc.StagedCopies, true)
	}
}

// changeLine says what one change of a followed run is.
func changeLine(p *history.Progress, c history.Change) string {
	switch {
	case c.Process != nil:
		pr := c.Process
		who := strings.TrimPrefix(strings.TrimSuffix(pr.User+"@"+pr.Host, "@"), "@")
		s := orDefault(pr.Command, "a process") + " started"
		if who != "" {
			s += " by " + textsafe.Escape(who)
		}
		if pr.PID > 0 {
			s += fmt.Sprintf(" (pid %d)", pr.PID)
		}
		return s + " at " + pr.Started.Local().Format("15:04:05")
	case c.Batch != nil && c.Batch.Status == "open":
		// Sent, its answer awaited: the loading bar shows it; its new state follows.
		return ""
	case c.Batch != nil:
		b := c.Batch
		s := fmt.Sprintf("batch %d %s: %s, %s expected", b.Batch, batchWord(string(b.Status)), textfmt.Plural(b.Files, "file"), textfmt.Plural(b.Expected, "row"))
		if b.Inserted != nil {
			s += ", " + textfmt.Count(*b.Inserted) + " inserted"
		}
		if b.Version != nil {
			s += fmt.Sprintf(" (table version %d)", *b.Version)
		}
		if b.Reason != "" && b.Status != "verified" {
			s += ": " + textsafe.Escape(b.Reason)
		}
		return s
	case c.Files != nil:
		n := c.Files.Count
		switch c.Files.What {
		case history.FilesStaged:
			return fmt.Sprintf("staged %s (%s of %s)", textfmt.Plural(n, "file"), textfmt.Count(p.Files.Staged), textfmt.Count(p.Files.Total))
		case history.FilesDeleted:
			return fmt.Sprintf("deleted %s (%s of %s)", textfmt.Plural(n, "file"), textfmt.Count(p.Files.Deleted), textfmt.Count(p.Files.ToDelete))
		case history.FilesKept:
			return fmt.Sprintf("kept %s (changed since verified, or the delete failed: zbrecover history --run %s lists why)", textfmt.Plural(n, "file"), p.Run)
		case history.FilesStagedRemoved:
			return fmt.Sprintf("removed %s (%s of %s)", textfmt.Plural(n, "staged copy"), textfmt.Count(p.Files.StagedRemoved), textfmt.Count(p.Files.StagedCopies))
		}
	case c.End != nil:
		s := fmt.Sprintf("%s ended: %s; %s of %s verified, %s inserted of %s expected", orDefault(p.Process.Command, "the process"),
			c.End.Status, textfmt.Count(p.Batches.Verified), textfmt.Plural(p.Batches.Total, "batch"), textfmt.Plural(p.Rows.Inserted, "row"), textfmt.Count(p.Rows.Expected))
		if p.Files.Deleted+p.Files.Kept > 0 {
			s += fmt.Sprintf("; %s deleted, %s kept", textfmt.Plural(p.Files.Deleted, "file"), textfmt.Count(p.Files.Kept))
		}
		if c.End.Error != "" {
			s += " (" + textsafe.Escape(c.End.Error) + ")"
		}
		return s
	}
	return ""
}

// batchWord says a batch state as a follower reads it.
func batchWord(status string) string {
	if status == "loaded" {
		return "answered"
	}
	return status
}
