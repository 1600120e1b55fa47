package watch

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/reload"
)

// Kind is what an Event reports.
type Kind string

// The events a watcher reports, one JSON line each (docs/json-output.md, "watch").
const (
	// CycleStart and CycleEnd frame a cycle; CycleEnd carries its totals.
	CycleStart Kind = "cycle_start"
	CycleEnd   Kind = "cycle_end"
	// TableFound: the scan found the table's parked files (older than MinAge).
	TableFound Kind = "table_found"
	// Blocked: a schema group of the table blocks the load (the diff and the fix in Blocked);
	// its files wait for the fix, the table is never changed. Unblocked: no group blocks any
	// more (the table was fixed, or the files are gone).
	Blocked   Kind = "blocked"
	Unblocked Kind = "unblocked"
	// BatchLoaded: a batch of a reload has its outcome (Status: verified, unknown, …).
	BatchLoaded Kind = "batch_loaded"
	// Verified: verify passed for the run; NeedsReview: it did not, or a batch mismatched or
	// stayed unknown (Reason says which): a person looks at it.
	Verified    Kind = "verified"
	NeedsReview Kind = "needs_review"
	// Cleaned: cleanup deleted (or archived, then deleted) files of a run.
	Cleaned Kind = "cleaned"
	// Error: a step failed (Kind, Step, Error); the table is tried again after RetryAt.
	Error Kind = "error"
	// SkippedLocked: another process holds the table's lock (Holder): the table is left for
	// this cycle.
	SkippedLocked Kind = "skipped_locked"
	// Quarantined: the table failed MaxFailures cycles in a row: it is no longer tried.
	Quarantined Kind = "quarantined"
	// Stopped: the watcher stopped on a signal, at a journaled point.
	Stopped Kind = "stopped"
)

// Event is one thing a watcher saw or did, written as one JSON line. Members that do not
// apply to its kind are absent (a missing number reads as 0).
type Event struct {
	SchemaVersion int       `json:"schema_version"`
	Time          time.Time `json:"time"`
	Event         Kind      `json:"event"`
	Cycle         int64     `json:"cycle"`
	Table         string    `json:"table,omitempty"`
	TableID       string    `json:"table_id,omitempty"`
	Run           string    `json:"run,omitempty"`
	// Alert is set when the alert command was run for this event.
	Alert bool `json:"alert,omitempty"`

	// table_found: the fallback files the scan counted, and the oldest one's time.
	Files  int64      `json:"files,omitempty"`
	Bytes  int64      `json:"bytes,omitempty"`
	Oldest *time.Time `json:"oldest,omitempty"`

	// blocked: the groups that block, each with its changes and the suggested fix.
	BlockedGroups []reload.BlockedGroup `json:"blocked_groups,omitempty"`

	// batch_loaded: the batch, its outcome and rows.
	Batch        int    `json:"batch,omitempty"`
	Status       string `json:"status,omitempty"`
	ExpectedRows int64  `json:"expected_rows,omitempty"`
	InsertedRows int64  `json:"inserted_rows,omitempty"`

	// verified and needs_review: the run's batches, those that failed or need review, why.
	Batches     int    `json:"batches,omitempty"`
	Failed      int    `json:"failed_batches,omitempty"`
	ReviewCount int    `json:"needs_review_batches,omitempty"`
	Reason      string `json:"reason,omitempty"`

	// cleaned: the files deleted and their bytes, the archive they were copied to first, the
	// files of the run kept.
	Deleted      int    `json:"deleted,omitempty"`
	DeletedBytes int64  `json:"deleted_bytes,omitempty"`
	Archive      string `json:"archive,omitempty"`
	Kept         int    `json:"kept,omitempty"`

	// error: the kind of failure (ErrorKind), the step, the message, the failures in a row
	// and when the table is tried again (absent once quarantined).
	ErrorKind ErrorKind  `json:"kind,omitempty"`
	Step      string     `json:"step,omitempty"`
	Error     string     `json:"error,omitempty"`
	Failures  int        `json:"failures,omitempty"`
	RetryAt   *time.Time `json:"retry_at,omitempty"`

	// skipped_locked: who holds the table's lock.
	Holder string `json:"holder,omitempty"`

	// cycle_end: how long the cycle took and what it saw and did.
	DurationMS     int64 `json:"duration_ms,omitempty"`
	Scanned        int   `json:"tables_scanned,omitempty"`
	Parked         int   `json:"tables_parked,omitempty"`
	Recovered      int   `json:"tables_recovered,omitempty"`
	BlockedTables  int   `json:"tables_blocked,omitempty"`
	FailedTables   int   `json:"tables_failed,omitempty"`
	ReviewRuns     int   `json:"runs_needing_review,omitempty"`
	SkippedTables  int   `json:"tables_skipped,omitempty"`
	RowsRecovered  int64 `json:"rows_recovered,omitempty"`
	FilesDeleted   int   `json:"files_deleted,omitempty"`
	NextCycleAfter int64 `json:"next_cycle_in_ms,omitempty"`
}

// JSONLines returns an event sink that writes each event to w as one JSON line (its messages'
// secrets redacted), with the schema version of zbrecover's JSON output; safe for concurrent use.
func JSONLines(w io.Writer) func(Event) {
	var mu sync.Mutex
	return func(e Event) {
		e.SchemaVersion = jsonout.SchemaVersion
		e.Error, e.Reason, e.Holder = redact.String(e.Error), redact.String(e.Reason), redact.String(e.Holder)
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(e); err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		_, _ = w.Write(b.Bytes())
	}
}
