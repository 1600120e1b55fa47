// Package history reads what the journal holds of past runs, for zbrecover history: the runs
// of tables, newest first, and the files of one run with what happened to each. It only
// reads: what reload, verify and cleanup recorded is theirs.
package history

import (
	"context"
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/internal/suggest"
	"github.com/zbrecover/zbrecover/journal"
)

// Runs is the runs of the tables asked for, newest first per table.
type Runs struct {
	Journal string               `json:"journal"`
	Runs    []journal.RunSummary `json:"runs"`
}

// ListRuns returns the runs of the tables with the given ids, or of every table the journal
// holds when ids is nil. A run that cannot be read is listed with its Problem.
func ListRuns(ctx context.Context, store journal.Store, ids []string) (*Runs, error) {
	ids, err := tables(ctx, store, ids)
	if err != nil {
		return nil, err
	}
	out := &Runs{Journal: store.Location(), Runs: []journal.RunSummary{}}
	for _, id := range ids {
		runs, err := journal.Runs(ctx, store, id)
		if err != nil {
			return nil, err
		}
		out.Runs = append(out.Runs, runs...)
	}
	return out, nil
}

// Wedged returns, for each run of the table that this process has read from store and found
// written by two processes at once, how the journal reads it and how to go on
// (journal.Wedges): what a reload, verify or cleanup tells the operator about the runs it
// read, without reading the journal again.
func Wedged(store journal.Store, tableID string) []string { return journal.Wedges(store, tableID) }

// Run is one run's files and what happened to each.
type Run struct {
	Run     string            `json:"run"`
	Table   string            `json:"table"`
	TableID string            `json:"table_id"`
	Root    string            `json:"root"`
	Status  journal.RunStatus `json:"status"`
	Files   []File            `json:"files"`
}

// File is one file of a run: its batch, the batch's state and commit, and its delete.
type File struct {
	Key      string `json:"key"`
	Size     int64  `json:"size"`
	ETag     string `json:"etag,omitempty"`
	Rows     int64  `json:"expected_rows"`
	Batch    int    `json:"batch"`
	State    string `json:"state"`
	Version  *int64 `json:"history_version,omitempty"`
	QueryID  string `json:"query_id,omitempty"`
	Inserted *int64 `json:"batch_inserted_rows,omitempty"`
	Deleted  string `json:"deleted,omitempty"`
	Reason   string `json:"delete_reason,omitempty"`
}

// ReadRun returns the run's files, looking for it among the tables with the given ids (every
// table of the journal when ids is nil); table names them in a *NoRunError ("" for every
// table), returned when the journal does not hold the run.
func ReadRun(ctx context.Context, store journal.Store, ids []string, table, run string) (*Run, error) {
	st, err := readState(ctx, store, ids, table, run)
	if err != nil {
		return nil, err
	}
	return runOf(st), nil
}

// readState replays the run, looking for it among the tables with the given ids (every
// table of the journal when ids is nil); a *NoRunError names the runs the journal holds
// when it does not hold this one.
func readState(ctx context.Context, store journal.Store, ids []string, table, run string) (*journal.State, error) {
	ids, err := tables(ctx, store, ids)
	if err != nil {
		return nil, err
	}
	var readErr error
	for _, id := range ids {
		st, err := journal.ReadState(ctx, store, id, run)
		if err != nil {
			readErr = err
			continue
		}
		return st, nil
	}
	if err := MissingRun(ctx, store, ids, table, run); err != nil {
		return nil, err
	}
	// The run is listed, but could not be read.
	return nil, fmt.Errorf("run %s cannot be read: %w", run, readErr)
}

// NoRunError is a run the journal does not hold: it names the runs it holds instead (of the
// tables asked for), the closest to the id given first.
type NoRunError struct {
	Journal string
	// Table names the table asked for ("" for every table of the journal).
	Table string
	Run   string
	// Runs are the runs the journal holds, newest first.
	Runs []journal.RunSummary
}

// maxRunsNamed is the most runs a NoRunError names.
const maxRunsNamed = 5

func (e *NoRunError) Error() string {
	of := ""
	if e.Table != "" {
		of = " of " + e.Table
	}
	if len(e.Runs) == 0 {
		return fmt.Sprintf("the journal at %s has no run %s; it holds no run%s at all (is it the journal the reload used? --journal names another)",
			e.Journal, e.Run, of)
	}
	ids := make([]string, len(e.Runs))
	for i, r := range e.Runs {
		ids[i] = r.Run
	}
	msg := fmt.Sprintf("the journal at %s has no run %s%s", e.Journal, e.Run, of)
	if dym := suggest.Phrase(e.Run, ids, func(s string) string { return s }); dym != "" {
		msg += "; " + dym
	}
	var named []string
	for i, r := range e.Runs {
		if i == maxRunsNamed {
			named = append(named, fmt.Sprintf("and %d more", len(e.Runs)-maxRunsNamed))
			break
		}
		desc := string(r.Status)
		if r.Problem != "" {
			desc = "cannot be read"
		}
		named = append(named, fmt.Sprintf("%s (%s, started %s)", r.Run, desc, r.Started.UTC().Format("2006-01-02T15:04:05Z")))
	}
	list := "zbrecover history"
	if e.Table != "" {
		list += " " + e.Table
	}
	return fmt.Sprintf("%s. Its runs%s, newest first: %s. `%s` lists them with their files and rows", msg, of, strings.Join(named, ", "), list)
}

// MissingRun returns nil when the journal holds run among the tables with the given ids (every
// table of the journal when ids is nil), and a *NoRunError naming the runs it holds otherwise;
// table is the table's name for the message ("" for every table). An error reading the
// journal is returned as is.
func MissingRun(ctx context.Context, store journal.Store, ids []string, table, run string) error {
	runs, err := ListRuns(ctx, store, ids)
	if err != nil {
		return err
	}
	for _, r := range runs.Runs {
		if r.Run == run {
			return nil
		}
	}
	return &NoRunError{Journal: store.Location(), Table: table, Run: run, Runs: runs.Runs}
}

func tables(ctx context.Context, store journal.Store, ids []string) ([]string, error) {
	if ids != nil {
		return ids, nil
	}
	return store.Tables(ctx)
}

func runOf(st *journal.State) *Run {
	r := &Run{Run: st.Run, Table: st.Table, TableID: st.TableID, Root: st.Root, Status: st.Status, Files: []File{}}
	for _, fs := range st.Files() {
		f := File{Key: fs.Key, Size: fs.Size, ETag: fs.ETag, Rows: fs.Rows, Batch: fs.Batch, State: string(fs.Status),
			Deleted: string(fs.Delete), Reason: fs.DeleteReason}
		if b := st.Batch(fs.Batch); b != nil {
			if b.Outcome != nil {
				f.Version = b.Outcome.Version
			}
			if b.Result != nil {
				f.QueryID, f.Inserted = b.Result.QueryID, b.Result.Inserted
			}
		}
		r.Files = append(r.Files, f)
	}
	return r
}
