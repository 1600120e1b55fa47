package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/journal"
)

// Outcome is what a run's end means for whoever followed it (zbrecover history --watch
// exits with it): "" while the run's latest process has not ended it.
type Outcome string

// The outcomes of a run's end, each with the exit status it means.
const (
	// OutcomeOK: the run ended verified or cleaned (exit 0).
	OutcomeOK Outcome = "ok"
	// OutcomeMismatch: a batch loaded another number of rows than its files hold (exit 4).
	OutcomeMismatch Outcome = "mismatch"
	// OutcomeInterrupted: the process was interrupted (exit 130); a re-run continues the run.
	OutcomeInterrupted Outcome = "interrupted"
	// OutcomeUnknown: some batch's outcome could not be settled (exit 5, as reload's).
	OutcomeUnknown Outcome = "unknown"
	// OutcomePartial: cleanup deleted some of the verified files, not all (exit 5).
	OutcomePartial Outcome = "partial"
	// OutcomeFailed: the run stopped on an error, or a batch failed (exit 1).
	OutcomeFailed Outcome = "failed"
)

// Progress is a run as the journal shows it after a read: one line of zbrecover history
// --watch. Counts are of the whole run; Changes are what the records read since the
// previous Progress added.
type Progress struct {
	Time    time.Time         `json:"time"`
	Run     string            `json:"run"`
	Table   string            `json:"table"`
	TableID string            `json:"table_id"`
	Status  journal.RunStatus `json:"status"`
	// Process is the latest process that worked on the run: its command (reload, cleanup,
	// verify…), user, host and pid, and when it started.
	Process ProcessInfo `json:"process"`
	// Ended is set once the latest process wrote its end record; Error is that record's
	// error, Outcome what the end means.
	Ended   bool        `json:"ended"`
	Error   string      `json:"error,omitempty"`
	Outcome Outcome     `json:"outcome,omitempty"`
	Batches BatchCounts `json:"batches"`
	Files   FileCounts  `json:"files"`
	Rows    RowCounts   `json:"rows"`
	Changes []Change    `json:"changes"`
	Records int         `json:"records"` // the records read so far
}

// ProcessInfo is one process's run record, as a follower shows it.
type ProcessInfo struct {
	Command string    `json:"command"` // reload, cleanup, verify, … ("" when not known)
	User    string    `json:"user,omitempty"`
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Started time.Time `json:"started"`
}

// BatchCounts counts a run's batches by state. Done is the batches whose statement was
// answered or settled (verified, unknown, mismatch, or loaded and not yet classified).
type BatchCounts struct {
	Total    int `json:"total"`
	Done     int `json:"done"`
	Verified int `json:"verified"`
	Open     int `json:"open"`
	Unknown  int `json:"unknown"`
	Mismatch int `json:"mismatch"`
	Failed   int `json:"failed"`
}

// FileCounts counts a run's files. Staged is the files with a staged copy recorded;
// Loaded those of verified batches; ToDelete the files cleanup may delete (of verified
// batches); Deleted those deleted or found gone, Kept those cleanup skipped (changed) or
// failed to delete; StagedCopies the staged copies of verified files and StagedRemoved
// those cleanup deleted.
type FileCounts struct {
	Total         int `json:"total"`
	Staged        int `json:"staged"`
	Loaded        int `json:"loaded"`
	ToDelete      int `json:"to_delete"`
	Deleted       int `json:"deleted"`
	Kept          int `json:"kept"`
	StagedCopies  int `json:"staged_copies"`
	StagedRemoved int `json:"staged_removed"`
}

// RowCounts are the rows the run's files hold (from their footers) and the rows it put in
// the table.
type RowCounts struct {
	Expected int64 `json:"expected"`
	Inserted int64 `json:"inserted"`
}

// Change is one thing the records read since the previous Progress did: a process started
// on the run (Process), a batch changed state (Batch), files were staged, deleted or kept,
// or staged copies removed (Files with What and Count), or the run ended (End).
type Change struct {
	Process *ProcessInfo `json:"process,omitempty"`
	Batch   *BatchChange `json:"batch,omitempty"`
	Files   *FileChange  `json:"files,omitempty"`
	End     *EndChange   `json:"end,omitempty"`
}

// BatchChange is a batch in its new state.
type BatchChange struct {
	Batch    int                 `json:"batch"`
	Status   journal.BatchStatus `json:"status"`
	Files    int                 `json:"files"`
	Expected int64               `json:"expected_rows"`
	Inserted *int64              `json:"inserted_rows,omitempty"`
	Version  *int64              `json:"history_version,omitempty"`
	Reason   string              `json:"reason,omitempty"`
}

// The What of a FileChange.
const (
	FilesStaged        = "staged"
	FilesDeleted       = "deleted"
	FilesKept          = "kept"
	FilesStagedRemoved = "staged_removed"
)

// FileChange is how many files were staged, deleted, kept or had their staged copy removed
// since the previous Progress.
type FileChange struct {
	What  string `json:"what"`
	Count int    `json:"count"`
}

// EndChange is the end of the run's latest process.
type EndChange struct {
	Status  journal.RunStatus `json:"status"`
	Error   string            `json:"error,omitempty"`
	Outcome Outcome           `json:"outcome"`
}

// Watch follows one run through the journal as processes append to it: each Next reads
// only what was appended since the previous one (journal.Tail).
type Watch struct {
	tail *journal.Tail
	prev *Progress
	// batches are the states of the batches last reported.
	batches map[int]journal.BatchStatus
	procs   int
}

// NewWatch returns a Watch of the run; nothing is read until Next.
func NewWatch(store journal.Store, tableID, run string) *Watch {
	return &Watch{tail: journal.NewTail(store, tableID, run), batches: map[int]journal.BatchStatus{}}
}

// Next reads the records appended since the previous call and returns the run's progress
// with what they changed; nil when nothing was appended. The first call returns the run as
// it stands, its batches and files as changes.
func (w *Watch) Next(ctx context.Context) (*Progress, error) {
	st, changed, err := w.tail.Read(ctx)
	if err != nil {
		return nil, err
	}
	if !changed {
		return nil, nil
	}
	p := progressOf(st)
	p.Changes = w.changes(st, p)
	w.prev = p
	return p, nil
}

// progressOf counts what st shows.
func progressOf(st *journal.State) *Progress {
	p := &Progress{Time: time.Now().UTC(), Run: st.Run, Table: st.Table, TableID: st.TableID, Status: st.Status,
		Records: st.LastSeq, Changes: []Change{}}
	if n := len(st.Processes); n > 0 {
		p.Process = processInfo(st.Processes[n-1])
	}
	if st.End != nil {
		p.Ended, p.Error, p.Outcome = true, st.End.Err, outcomeOf(st)
	}
	b := &p.Batches
	for _, bs := range st.Batches {
		b.Total++
		switch bs.Status {
		case journal.BatchVerified:
			b.Verified++
			b.Done++
		case journal.BatchLoaded:
			b.Done++
		case journal.BatchUnknown:
			b.Unknown++
			b.Done++
		case journal.BatchMismatch:
			b.Mismatch++
			b.Done++
		case journal.BatchOpen:
			b.Open++
		case journal.BatchFailed:
			b.Failed++
		}
	}
	f := &p.Files
	for _, fs := range st.Files() {
		f.Total++
		if fs.Staged != "" {
			f.Staged++
		}
		if fs.Status != journal.BatchVerified {
			continue
		}
		f.Loaded++
		f.ToDelete++
		switch fs.Delete {
		case journal.Deleted, journal.DeleteGone:
			f.Deleted++
		case journal.DeleteSkip, journal.DeleteFailed:
			f.Kept++
		}
		if fs.Staged != "" {
			f.StagedCopies++
			if fs.StagedRemoved {
				f.StagedRemoved++
			}
		}
	}
	rows := st.Rows()
	p.Rows = RowCounts{Expected: rows.Expected, Inserted: rows.Loaded}
	return p
}

// changes are what st shows that the previous Progress did not.
func (w *Watch) changes(st *journal.State, p *Progress) []Change {
	var out []Change
	for _, pr := range st.Processes[min(w.procs, len(st.Processes)):] {
		pi := processInfo(pr)
		out = append(out, Change{Process: &pi})
	}
	w.procs = len(st.Processes)
	var prev Progress
	if w.prev != nil {
		prev = *w.prev
	}
	if n := p.Files.Staged - prev.Files.Staged; n > 0 {
		out = append(out, Change{Files: &FileChange{What: FilesStaged, Count: n}})
	}
	for _, bs := range st.Batches {
		if w.batches[bs.Batch] == bs.Status {
			continue
		}
		w.batches[bs.Batch] = bs.Status
		if bs.Status == journal.BatchPlanned && w.prev == nil {
			continue // the plan is the run's counts
		}
		c := &BatchChange{Batch: bs.Batch, Status: bs.Status, Files: len(bs.Files), Expected: bs.ExpectedRows}
		if bs.Result != nil {
			c.Inserted = bs.Result.Inserted
		}
		if bs.Outcome != nil {
			c.Version, c.Reason = bs.Outcome.Version, bs.Outcome.Reason
		}
		out = append(out, Change{Batch: c})
	}
	for _, fc := range []FileChange{
		{FilesDeleted, p.Files.Deleted - prev.Files.Deleted},
		{FilesKept, p.Files.Kept - prev.Files.Kept},
		{FilesStagedRemoved, p.Files.StagedRemoved - prev.Files.StagedRemoved},
	} {
		if fc.Count > 0 {
			out = append(out, Change{Files: &fc})
		}
	}
	if p.Ended && (w.prev == nil || !w.prev.Ended || w.prev.Records != p.Records) {
		out = append(out, Change{End: &EndChange{Status: p.Status, Error: p.Error, Outcome: p.Outcome}})
	}
	if out == nil {
		out = []Change{}
	}
	return out
}

func processInfo(pr journal.Process) ProcessInfo {
	return ProcessInfo{Command: commandName(pr.Command), User: pr.User, Host: pr.Host, PID: pr.PID, Started: pr.Time.UTC()}
}

// commandName is the zbrecover command a command line ran ("" when none is recognised).
func commandName(line string) string {
	for _, w := range strings.Fields(line) {
		switch w {
		case "reload", "cleanup", "verify", "undo", "watch", "demo":
			return w
		}
	}
	return ""
}

// outcomeOf is what the end of st's latest process means: a mismatch first, then an
// interruption (a cleanup stopped before its first delete leaves the run verified, but did
// not do its work), then the run's state.
func outcomeOf(st *journal.State) Outcome {
	if st.Status == journal.RunMismatch {
		return OutcomeMismatch
	}
	// The commands end an interrupted run with an error that says so ("batch 3:
	// interrupted", cleanup's "context canceled").
	if e := st.End.Err; strings.Contains(e, "interrupted") || strings.Contains(e, context.Canceled.Error()) {
		return OutcomeInterrupted
	}
	switch st.Status {
	case journal.RunVerified, journal.RunCleaned:
		return OutcomeOK
	case journal.RunUnknown:
		return OutcomeUnknown
	case journal.RunPartiallyCleaned:
		return OutcomePartial
	}
	return OutcomeFailed
}

// ErrNoRunYet is returned (wrapped) by NewestRun when the table has no run in the journal.
var ErrNoRunYet = errors.New("no run of the table in the journal yet")

// NewestRun returns the newest run (by start) of the table; an error wrapping ErrNoRunYet
// when it has none. A run that cannot be read is skipped.
func NewestRun(ctx context.Context, store journal.Store, tableID string) (string, error) {
	runs, err := journal.Runs(ctx, store, tableID)
	if err != nil {
		return "", err
	}
	for _, r := range runs {
		if r.Problem == "" {
			return r.Run, nil
		}
	}
	return "", fmt.Errorf("%w (table id %s, journal at %s)", ErrNoRunYet, tableID, store.Location())
}

// FindRun returns the table (of ids, or of every table of the journal when ids is nil)
// that holds the run.
func FindRun(ctx context.Context, store journal.Store, ids []string, run string) (string, error) {
	ids, err := tables(ctx, store, ids)
	if err != nil {
		return "", err
	}
	for _, id := range ids {
		runs, err := store.RunIDs(ctx, id)
		if err != nil {
			return "", err
		}
		for _, r := range runs {
			if r == run {
				return id, nil
			}
		}
	}
	return "", fmt.Errorf("no run %s in the journal at %s", run, store.Location())
}
