package reload

import (
	"context"
	"fmt"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
)

// What package undo takes from reload: the table's history as reload reads it, the commit
// tag of an undo's DELETE, and the one rule (settle) that says which commit is a
// statement's. An undo's DELETE is settled as a load is: by its tag, else as the only
// unclaimed DELETE by the statements' identity after its base with exactly the batch's
// rows (numDeletedRows).

// UndoTag is the commit tag of one attempt of the undo of a batch of a run.
func UndoTag(run string, batch, attempt int) string {
	return fmt.Sprintf("zbrecover:%s:undo:%d:%d", run, batch, attempt)
}

// History reads a table's commits, retrying a failed read (retries times, waiting backoff,
// doubled each time).
type History struct{ h *history }

// NewHistory returns the history of table read through wh.
func NewHistory(wh Warehouse, table databricks.TableName, retries int, backoff time.Duration) *History {
	if backoff <= 0 {
		backoff = time.Second
	}
	return &History{h: &history{wh: wh, table: table, retries: retries, backoff: backoff}}
}

// Latest returns the table's newest version (-1 when the history shows none).
func (h *History) Latest(ctx context.Context) (int64, error) { return h.h.latest(ctx) }

// Since returns the commits after version base, newest first, the newest version read, and
// whether the history reaches back to base (log retention may have removed older commits).
func (h *History) Since(ctx context.Context, base int64) ([]Commit, int64, bool, error) {
	cs, err := h.h.since(ctx, base)
	if err != nil {
		return nil, 0, false, err
	}
	return cs.List, cs.Latest, cs.Whole, nil
}

// DeleteFacts is what settling knows of an undo's DELETE: the run and batch, the tags of
// its attempts, the rows it must have deleted, and the version its first attempt started
// from.
type DeleteFacts struct {
	Run   string
	Batch int
	Tags  []string
	Rows  int64
	Base  int64
}

// DeleteSettlement is what SettleDelete found.
type DeleteSettlement struct {
	// Commit is the DELETE's commit, nil when none is proved.
	Commit *Commit
	// Evidence is EvidenceTag (its tag) or EvidenceHistory (the only candidate).
	Evidence journal.Evidence
	// Mismatch is set when the tagged commit deleted another number of rows than Rows.
	Mismatch bool
	// Why says what settled it, or why nothing did.
	Why string
}

// SettleDelete decides which commit of cs (the table's commits after f.Base; whole says the
// read reached back to it) is the undo's DELETE, by settle's rules with the operation DELETE
// and its numDeletedRows. identity is current_user() of the warehouse; claimed are the
// versions other undos' DELETEs settled (a claimed commit settles nothing else). Two
// commits carrying the undo's tags with deleted rows are an error: the journal and the
// table disagree.
func SettleDelete(cs []Commit, whole bool, f DeleteFacts, identity string, claimed map[int64]journal.BatchRef) (DeleteSettlement, error) {
	s, err := settle(cs, whole, batchFacts{Run: f.Run, Batch: f.Batch, Tags: f.Tags, Rows: f.Rows, Base: f.Base, Operation: "DELETE", Metric: "numDeletedRows"},
		knownCommits{Identity: identity, Claimed: claimed})
	if err != nil {
		return DeleteSettlement{}, err
	}
	return DeleteSettlement{Commit: s.Commit, Evidence: s.Evidence, Mismatch: s.Mismatch, Why: s.Why}, nil
}

// DeletedRows returns a DELETE commit's numDeletedRows, and false when it does not carry it.
func (c Commit) DeletedRows() (int64, bool) { return c.metric("numDeletedRows") }

// AsInt reads an integer of a result row tolerantly (int64, int32, float, a decimal string
// or text), as reload reads counts.
func AsInt(v any) (int64, bool) { return asInt(v) }

// StagedPathRedo is StagedPath for a file loaded again after its rows were undone gen times
// (journal.TableFacts.Undone): gen 0 is StagedPath; each generation is a path no earlier
// load read, so that COPY INTO, which skips a path it loaded even if the file changed since,
// loads the file once more.
func StagedPathRedo(tableID string, f journal.File, gen int) string {
	return stagedPathGen(tableID, f, gen)
}
