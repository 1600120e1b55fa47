// Package history reads what the journal holds of past runs, for zbrecover history: the runs
// of tables, newest first, and the files of one run with what happened to each. It only
// reads: what reload, verify and cleanup recorded is theirs.
package history

import (
	"context"
	"fmt"

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
// table of the journal when ids is nil).
func ReadRun(ctx context.Context, store journal.Store, ids []string, run string) (*Run, error) {
	st, err := readState(ctx, store, ids, run)
	if err != nil {
		return nil, err
	}
	return runOf(st), nil
}

// readState replays the run, looking for it among the tables with the given ids (every
// table of the journal when ids is nil).
func readState(ctx context.Context, store journal.Store, ids []string, run string) (*journal.State, error) {
	ids, err := tables(ctx, store, ids)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		st, err := journal.ReadState(ctx, store, id, run)
		if err != nil {
			continue
		}
		return st, nil
	}
	return nil, fmt.Errorf("no run %s in the journal at %s", run, store.Location())
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
