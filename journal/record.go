package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/storage"
)

// Version is the record format this package writes ("v" in every record). Readers keep the
// records of newer versions they do not understand and report them.
const Version = 1

// Kind says what a record records, and so which payload field it carries.
type Kind string

// The record kinds, each with its payload field.
const (
	KindRun          Kind = "run"           // Header: a process starts or continues the run
	KindPlan         Kind = "plan"          // Plan: the batches the run means to load
	KindIntent       Kind = "intent"        // Intent: a statement is about to be sent
	KindResult       Kind = "result"        // Result: what the statement returned
	KindOutcome      Kind = "outcome"       // Outcome: the batch's classification
	KindVerification Kind = "verification"  // Verification: counts checked per batch
	KindStaging      Kind = "staging"       // Staging: original → staged copies
	KindDeleteIntent Kind = "delete_intent" // Deletion.Files: files about to be deleted
	KindDeleted      Kind = "deleted"       // Deletion.Results: what each delete did
	KindEnd          Kind = "end"           // End: the process is done with the run
	KindMerge        Kind = "merge"         // Merge: a step of a load by key (reload --dedupe-key)
	KindKeys         Kind = "keys"          // Keys: a keys file of the run's files, where the warehouse reads it
	KindUndo         Kind = "undo"          // Undo: a step of taking back a batch's rows (zbrecover undo)
)

// Known reports whether this version of the package understands kind k.
func (k Kind) Known() bool {
	switch k {
	case KindRun, KindPlan, KindIntent, KindResult, KindOutcome, KindVerification, KindStaging,
		KindDeleteIntent, KindDeleted, KindEnd, KindMerge, KindKeys, KindUndo:
		return true
	}
	return false
}

// Record is one line of the journal (one object on an object store). The header fields are
// set on every record; exactly one payload field, the one named by Kind, is set.
type Record struct {
	V       int       `json:"v"`
	Run     string    `json:"run"`
	Seq     int       `json:"seq"` // 1, 2, … without gaps within a run
	Time    time.Time `json:"time"`
	Kind    Kind      `json:"kind"`
	TableID string    `json:"table_id"`        // UC table_id, else Delta metaData.id: the key
	Table   string    `json:"table,omitempty"` // catalog.schema.table, when known
	// Root is the fallback root as shown (a URL with any secret query redacted). Runs are
	// matched by the root without its query (SameRoot), so a fresh Azure SAS finds them.
	Root string `json:"root,omitempty" redact:"yes"`

	Header       *Header       `json:"header,omitempty"`
	Plan         *Plan         `json:"plan,omitempty"`
	Intent       *Intent       `json:"intent,omitempty"`
	Result       *Result       `json:"result,omitempty"`
	Outcome      *Outcome      `json:"outcome,omitempty"`
	Verification *Verification `json:"verification,omitempty"`
	Staging      *Staging      `json:"staging,omitempty"`
	Deletion     *Deletion     `json:"deletion,omitempty"`
	End          *End          `json:"end,omitempty"`
	Merge        *Merge        `json:"merge,omitempty"`
	Keys         *KeysFile     `json:"keys,omitempty"`
	Undo         *Undo         `json:"undo,omitempty"`

	// Raw holds a record of a kind this version does not know, as it was read.
	Raw json.RawMessage `json:"-"`
}

// Header says who works on a run, from where, with what. The first run record opens the run;
// every later process that continues it (a re-run, verify, cleanup) writes its own.
type Header struct {
	User        string `json:"user,omitempty"`     // operating system user
	Identity    string `json:"identity,omitempty"` // Databricks identity, as the caller knows it
	Host        string `json:"host,omitempty"`
	PID         int    `json:"pid,omitempty"`
	Command     string `json:"command,omitempty" redact:"yes"` // the command line
	ToolVersion string `json:"tool_version,omitempty"`
}

// File is one source file as the journal knows it: enough to name it, check it is unchanged
// and count its rows.
type File struct {
	Key        string    `json:"key"` // relative to the run's root
	Size       int64     `json:"size"`
	ETag       string    `json:"etag,omitempty"`
	Generation int64     `json:"generation,omitempty"`
	ModTime    time.Time `json:"mod_time,omitzero"`
	Rows       int64     `json:"rows"` // from the footer's num_rows
}

// Precondition is the version of the file a conditional delete requires.
func (f File) Precondition() storage.Precondition {
	return storage.ObjectInfo{Key: f.Key, Size: f.Size, ETag: f.ETag, Generation: f.Generation, ModTime: f.ModTime}.Version()
}

// FileOf returns the journal's view of a listed object with rows rows.
func FileOf(o storage.ObjectInfo, rows int64) File {
	return File{Key: o.Key, Size: o.Size, ETag: o.ETag, Generation: o.Generation, ModTime: o.ModTime, Rows: rows}
}

// Plan lists the batches a run means to load. A run may carry several plan records (a re-run
// that found new files adds batches); a batch number is planned once.
type Plan struct {
	Batches []PlanBatch `json:"batches"`
	// Source is the folder URL (no query, trailing "/") the statements of these batches read:
	// the fallback folder, or the staging location. A run reads one source: it may change it
	// only while none of its batches has an intent.
	Source string `json:"source,omitempty"`
	// IgnoredForeign records an operator's --ignore-foreign-runs: the reason given and the
	// runs of other journals whose loads of the table were found and not refused.
	IgnoredForeign *IgnoredForeign `json:"ignored_foreign_runs,omitempty"`
	// Left are the listed files the plan leaves behind (unreadable, refused), with why: what
	// an incident summary says was not recovered.
	Left []LeftFile `json:"left,omitempty"`
}

// LeftFile is a file a plan leaves behind, and why.
type LeftFile struct {
	Key    string `json:"key"`
	Reason string `json:"reason" redact:"yes"`
}

// IgnoredForeign is an operator's decision to load files that runs of other journals may
// have loaded.
type IgnoredForeign struct {
	Reason string   `json:"reason"`
	Runs   []string `json:"runs"`
}

// PlanBatch is one planned statement: one schema group, one folder, at most 1000 files.
type PlanBatch struct {
	Batch        int    `json:"batch"` // 1, 2, … unique within the run
	Group        string `json:"group"` // schema group id
	Folder       string `json:"folder"`
	Files        []File `json:"files"`
	ExpectedRows int64  `json:"expected_rows"`
	SQL          string `json:"sql"`
	// Select is the batch's projection ("" for none): with Source, Folder and the files'
	// names it renders the statement again for another source.
	Select string `json:"select,omitempty"`
}

// Intent is written, durably, before a batch's statement is sent.
type Intent struct {
	Batch        int       `json:"batch"`
	Files        []File    `json:"files"`
	ExpectedRows int64     `json:"expected_rows"`
	SQL          string    `json:"sql"` // the statement as sent
	Started      time.Time `json:"started"`
	// BaseVersion is the table's newest version just before the statement was sent: a
	// commit of this statement can only be a later version. Every intent this version
	// writes has one (journals of earlier versions may lack it).
	BaseVersion *int64 `json:"base_version,omitempty"`
	// Tag is the commit tag the statement carried (the session's
	// spark.databricks.delta.commitInfo.userMetadata, zbrecover:<run>:<batch>:<attempt>),
	// "" when the warehouse does not take one: a commit whose userMetadata is the tag is
	// this statement's.
	Tag string `json:"tag,omitempty"`
}

// Result is what the statement of the batch's latest intent returned. Inserted is nil when
// no row count came back (an error, a lost response, an interrupt): the outcome is then
// unknown until settled from the table's history.
type Result struct {
	Batch    int       `json:"batch"`
	Inserted *int64    `json:"inserted,omitempty"`
	QueryID  string    `json:"query_id,omitempty"`
	Version  *int64    `json:"version,omitempty"` // table version of the commit, if known
	Ended    time.Time `json:"ended"`
	Err      string    `json:"error,omitempty" redact:"yes"`
}

// Outcome classifies a batch. A later outcome for the same batch replaces an earlier one
// (verify may settle an unknown batch).
type Outcome struct {
	Batch  int         `json:"batch"`
	Status BatchStatus `json:"status"` // verified, unknown, mismatch or failed
	Reason string      `json:"reason,omitempty" redact:"yes"`
	// Version is the table version of the batch's commit, when known: it is claimed, and
	// settles no other batch of any run of the table.
	Version *int64 `json:"version,omitempty"`
	// Evidence says what proved a verified batch loaded (EvidenceAnswer, EvidenceTag,
	// EvidenceHistory); "" in journals of earlier versions.
	Evidence Evidence `json:"evidence,omitempty"`
}

// Evidence is what proved a batch's rows reached the table.
type Evidence string

// The kinds of evidence, strongest first.
const (
	// EvidenceAnswer: the batch's own statement answered with the expected row count.
	EvidenceAnswer Evidence = "answer"
	// EvidenceTag: a commit in the table's history carries the batch's tag and the expected
	// numOutputRows.
	EvidenceTag Evidence = "tag"
	// EvidenceHistory: the only commit by this identity after the batch's base, not claimed
	// by any batch, with the operation and the expected numOutputRows. Another writer with
	// the same identity could have made it: cleanup deletes such a batch's files only with
	// a passing key check.
	EvidenceHistory Evidence = "history"
	// EvidenceMerge: a load by key, whose MERGE committed after the batch (every staged key
	// is then in the table).
	EvidenceMerge Evidence = "merge"
)

// Strong reports whether e names the batch itself (its answer, its tag or its MERGE):
// evidence no other writer can produce.
func (e Evidence) Strong() bool { return e == EvidenceAnswer || e == EvidenceTag || e == EvidenceMerge }

// Verification is a check of a run against the table: counts per batch, what the table's
// history says since, and (verify --key) the keys. Cleanup refuses a run whose latest
// verification failed.
type Verification struct {
	Checks []Check `json:"checks"`
	// OK is the check's verdict; nil in journals of earlier versions (then the checks'
	// verdicts decide).
	OK *bool `json:"ok,omitempty"`
	// By names the command that checked: verify or cleanup.
	By string `json:"by,omitempty"`
	// Removals are the commits after the run's loads that removed or rewrote rows (DELETE,
	// TRUNCATE, RESTORE, an overwrite, a MERGE or UPDATE that changed rows).
	Removals []Removal `json:"removals,omitempty"`
	// Keys is the key check (verify --key), when one ran.
	Keys *KeyResult `json:"keys,omitempty"`
	// TableVersion is the table's newest version when the check read it: a later commit that
	// removes rows undoes what the check proved.
	TableVersion *int64 `json:"table_version,omitempty"`
}

// Removal is a commit that removed or rewrote rows of the table.
type Removal struct {
	Version   int64  `json:"version"`
	Operation string `json:"operation"`
	User      string `json:"user,omitempty"`
}

// KeyResult is a key check of a run's files against the table.
type KeyResult struct {
	Key     []string `json:"key"`
	Files   int      `json:"files"`
	Rows    int64    `json:"rows"`    // rows read from the files (every file's footer count)
	Keys    int64    `json:"keys"`    // distinct keys among them
	Missing int64    `json:"missing"` // keys the table does not hold
	OK      bool     `json:"ok"`
	// Batches are the batches the check proves in the table by key: every row of their files
	// read, none with a NULL key column, every key in the table, and no batch of the check
	// failed. (In journals of earlier versions: the batches covered, each proved when OK.)
	Batches []int `json:"batches,omitempty"`
	// Failed are the batches the check found wanting: a key of their files missing from the
	// table, or their keys not read whole and as recorded (a keys file changed or gone, rows
	// not counted). Whatever else says of them, their files are kept until a later key check
	// passes for them.
	Failed []int `json:"failed_batches,omitempty"`
	// NullRows are the rows read with a NULL in a key column, NullKeys their distinct keys: a
	// NULL key identifies nothing, so such rows prove nothing and a batch holding one is never
	// proved by key.
	NullRows int64 `json:"null_rows,omitempty"`
	NullKeys int64 `json:"null_keys,omitempty"`
	// Duplicated are the keys the table holds 2 or more rows of; MaxRows the most rows one
	// key has (what at-least-once delivery, or a second load, left twice).
	Duplicated int64 `json:"duplicated_keys,omitempty"`
	MaxRows    int64 `json:"max_rows_per_key,omitempty"`
	// PerBatch is the check of each batch it read.
	PerBatch []KeyBatch `json:"per_batch,omitempty"`
	Note     string     `json:"note,omitempty" redact:"yes"`
}

// Verdicts of a key check on one batch.
const (
	KeyProved   = "proved"   // every row read, no NULL key, every key in the table, no batch of the check failed
	KeyFailed   = "failed"   // a key missing, or the keys not read whole and as recorded
	KeyUnproved = "unproved" // every key read is in the table, but some rows have a NULL key, or the check failed another batch
)

// KeyBatch is a key check of one batch's files.
type KeyBatch struct {
	Batch int `json:"batch"`
	// Rows are the rows read of its files; Expected those their footers hold.
	Rows     int64 `json:"rows"`
	Expected int64 `json:"expected_rows"`
	// NullRows are the rows with a NULL key column; Keys the distinct keys without one, and
	// Missing those of them the table does not hold.
	NullRows int64  `json:"null_rows"`
	Keys     int64  `json:"keys"`
	Missing  int64  `json:"missing"`
	Verdict  string `json:"verdict"`
	Note     string `json:"note,omitempty" redact:"yes"`
}

// Batch returns the check of batch n, if the check read it.
func (k *KeyResult) Batch(n int) (KeyBatch, bool) {
	for _, b := range k.PerBatch {
		if b.Batch == n {
			return b, true
		}
	}
	return KeyBatch{}, false
}

// Passed reports the verdict of v: OK when set, else every check's.
func (v *Verification) Passed() bool {
	if v.OK != nil {
		return *v.OK
	}
	for _, c := range v.Checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// Check compares the rows a batch should have loaded with what the statement and the table's
// history say it did.
type Check struct {
	Batch    int    `json:"batch"`
	Expected int64  `json:"expected"`
	Inserted *int64 `json:"inserted,omitempty"`
	History  *int64 `json:"history,omitempty"`
	OK       bool   `json:"ok"`
	Note     string `json:"note,omitempty" redact:"yes"`
	// Evidence is what the check found proving the batch in the table ("" when none).
	Evidence Evidence `json:"evidence,omitempty"`
}

// Staging maps original files to the copies a statement reads instead.
type Staging struct {
	Location string   `json:"location"` // the staging location, a /Volumes/… path or a URL without query
	Files    []Staged `json:"files"`
	// Removing marks the copies cleanup is about to delete; Removed those it deleted (or
	// found gone). A re-run finishes copies left removing.
	Removing bool `json:"removing,omitempty"`
	Removed  bool `json:"removed,omitempty"`
}

// Staged is one verified copy.
type Staged struct {
	Source   string `json:"source"` // original key, relative to the run's root
	Key      string `json:"key"`    // the copy's key, relative to Staging.Location
	Size     int64  `json:"size"`
	Checksum string `json:"checksum,omitempty"` // as the store gives it, e.g. "md5:…"
	// ETag, Generation and ModTime are the copy's version as the staging location's listing
	// showed it once staged: a statement reads the copy only while the listing still shows
	// that version.
	ETag       string     `json:"etag,omitempty"`
	Generation int64      `json:"generation,omitempty"`
	ModTime    *time.Time `json:"mod_time,omitempty"`
}

// DeleteStatus is what one delete did.
type DeleteStatus string

// The outcomes of a delete.
const (
	Deleted      DeleteStatus = "deleted"
	DeleteSkip   DeleteStatus = "skipped" // changed since verified: kept
	DeleteGone   DeleteStatus = "gone"    // already absent
	DeleteFailed DeleteStatus = "failed"  // the store refused or failed; may be retried
)

// Deletion is the payload of delete_intent (Files) and deleted (Results) records.
type Deletion struct {
	Files   []File          `json:"files,omitempty"`
	Results []DeletedResult `json:"results,omitempty"`
}

// DeletedResult is the outcome of deleting one file.
type DeletedResult struct {
	Key    string       `json:"key"`
	Status DeleteStatus `json:"status"`
	Reason string       `json:"reason,omitempty" redact:"yes"`
	// Archive is the URL (redacted) of the verified copy made before the delete, if any.
	Archive string `json:"archive,omitempty" redact:"yes"`
}

// KeysFile is a keys file of some of the run's files (package keyfile): their key columns,
// one row per record, stored where the warehouse reads it, so that the keys of the run's
// files can be compared with the table after the files are gone.
type KeysFile struct {
	// Location is the folder the file is in (a /Volumes/… path or a URL without query) and
	// Key its name under it.
	Location string `json:"location"`
	Key      string `json:"key"`
	// Columns are the key columns, as the table names them.
	Columns []string `json:"columns"`
	Size    int64    `json:"size"`
	SHA256  string   `json:"sha256"`
	Rows    int64    `json:"rows"`
	// Batches are the batches whose files it holds (each file's group is its batch number).
	Batches []int `json:"batches"`
}

// MergeStep is the step of a load by key a merge record records.
type MergeStep string

// The steps of a load by key, in order.
const (
	MergePlanned MergeStep = "planned" // the staging table is about to be created (if missing)
	MergeIntent  MergeStep = "intent"  // the MERGE is about to be sent
	MergeResult  MergeStep = "result"  // what the MERGE returned
	MergeDropped MergeStep = "dropped" // the staging table was dropped
)

// Merge is one step of a load by key (reload --dedupe-key): the run's batches load into a
// staging table, then one MERGE inserts, from the staging rows deduplicated by key, those
// whose key the table does not hold, then the staging table is dropped. A batch of such a run
// is in the table only once a MERGE result with a row count follows it.
type Merge struct {
	Step    MergeStep `json:"step"`
	Staging string    `json:"staging"`       // the staging table, catalog.schema.table
	Key     []string  `json:"key,omitempty"` // the key columns (planned)
	// Order is the column whose highest (lowest with Ascending) value wins among records of
	// one key; "" keeps the first by batch (planned).
	Order     string    `json:"order,omitempty"`
	Ascending bool      `json:"ascending,omitempty"`
	SQL       string    `json:"sql,omitempty"` // the MERGE as sent (intent)
	Started   time.Time `json:"started,omitzero"`
	// BaseVersion is the table's newest version before the MERGE was sent (intent).
	BaseVersion *int64 `json:"base_version,omitempty"`
	// Inserted is the MERGE's num_inserted_rows (result); nil when no count came back.
	Inserted *int64 `json:"inserted,omitempty"`
	Version  *int64 `json:"version,omitempty"` // the history version, when settled from it
	Err      string `json:"error,omitempty" redact:"yes"`
}

// UndoStep is the step of a batch's undo an undo record records.
type UndoStep string

// The steps of one attempt to take back a batch's rows, in order.
const (
	UndoIntent  UndoStep = "intent"  // the DELETE is about to be sent: its statement, the rows it must delete
	UndoResult  UndoStep = "result"  // what the DELETE returned
	UndoOutcome UndoStep = "outcome" // the batch's rows are gone (undone), or nothing was deleted (failed)
)

// UndoEvidence is what names a batch's rows in the table for its DELETE.
type UndoEvidence string

// The kinds of evidence an undo uses, strongest first.
const (
	// UndoByRowIDs: the stable row IDs the batch's commit assigned (row tracking): its add
	// actions' [baseRowId, baseRowId + numRecords − 1]. Stable through UPDATE, MERGE and
	// OPTIMIZE.
	UndoByRowIDs UndoEvidence = "row_ids"
	// UndoByFiles: the data files the batch's commit added, while no later commit removed
	// them: they hold the batch's rows and no other.
	UndoByFiles UndoEvidence = "files"
	// UndoByKeys: the keys of the batch's records (the run's keys file), when no other row
	// of the table has them.
	UndoByKeys UndoEvidence = "keys"
)

// UndoStatus is the outcome of an undo attempt.
type UndoStatus string

// The outcomes of an undo attempt.
const (
	// Undone: the DELETE committed and deleted the batch's rows: the batch is undone, its
	// files loadable again.
	Undone UndoStatus = "undone"
	// UndoFailed: the warehouse refused the DELETE before it committed: nothing was deleted,
	// the batch stays verified.
	UndoFailed UndoStatus = "failed"
	// UndoMismatch: the DELETE committed with another number of deleted rows than the
	// batch's: the table needs a look (exit 4); the batch is neither verified nor undone.
	UndoMismatch UndoStatus = "mismatch"
)

// Undo is one step of taking back a verified batch's rows (zbrecover undo): the intent is
// written, durably, before the DELETE is sent; the result after it answered; the outcome
// once the table's history shows the DELETE's commit. A batch undone is never verified
// again by its old commit, its files may be loaded again (through fresh paths), and cleanup
// keeps them until a later load verifies them.
type Undo struct {
	Step  UndoStep `json:"step"`
	Batch int      `json:"batch"`

	// Evidence names the rows (intent).
	Evidence UndoEvidence `json:"evidence,omitempty"`
	// SQL is the DELETE as sent (intent).
	SQL string `json:"sql,omitempty"`
	// Rows is what the DELETE must delete: the rows the batch loaded (intent).
	Rows int64 `json:"rows,omitempty"`
	// Matched is what the DELETE's condition matched when counted just before it was sent,
	// and Modified how many of those were changed after the load (their row commit version
	// is not the load's; row IDs only) (intent).
	Matched  int64 `json:"matched,omitempty"`
	Modified int64 `json:"modified,omitempty"`
	// LoadVersion is the version of the batch's load commit the evidence was read from
	// (intent).
	LoadVersion *int64    `json:"load_version,omitempty"`
	Started     time.Time `json:"started,omitzero"`
	// BaseVersion is the table's newest version just before the DELETE was sent: its commit
	// is a later version (intent).
	BaseVersion *int64 `json:"base_version,omitempty"`
	// Tag is the commit tag the DELETE carried ("" for none) (intent).
	Tag string `json:"tag,omitempty"`

	// Deleted is the DELETE's num_affected_rows, nil when no count came back (result).
	Deleted *int64 `json:"deleted,omitempty"`
	QueryID string `json:"query_id,omitempty"`
	Err     string `json:"error,omitempty" redact:"yes"`

	// Version is the DELETE's commit in the table's history (result, when known; outcome).
	Version *int64 `json:"version,omitempty"`
	// Status and Reason classify the attempt (outcome).
	Status UndoStatus `json:"status,omitempty"`
	Reason string     `json:"reason,omitempty" redact:"yes"`
}

func (u *Undo) validate() error {
	if u.Batch < 1 {
		return fmt.Errorf("undo of batch %d", u.Batch)
	}
	switch u.Step {
	case UndoIntent:
		switch u.Evidence {
		case UndoByRowIDs, UndoByFiles, UndoByKeys:
		default:
			return fmt.Errorf("undo intent for batch %d: evidence %q (want row_ids, files or keys)", u.Batch, u.Evidence)
		}
		if u.SQL == "" {
			return fmt.Errorf("undo intent for batch %d without its statement", u.Batch)
		}
	case UndoResult:
	case UndoOutcome:
		switch u.Status {
		case Undone, UndoFailed, UndoMismatch:
		default:
			return fmt.Errorf("undo outcome for batch %d: status %q (want undone, failed or mismatch)", u.Batch, u.Status)
		}
	default:
		return fmt.Errorf("undo step %q (want intent, result or outcome)", u.Step)
	}
	return nil
}

// End closes a process's work on a run, with the state it left the run in.
type End struct {
	State RunStatus `json:"state"`
	Err   string    `json:"error,omitempty" redact:"yes"`
}

// Int64 returns a pointer to n, for Result.Inserted and the like.
func Int64(n int64) *int64 { return &n }

// Validate checks the header fields and that exactly the payload named by Kind is set.
// Records of unknown kinds pass when their header is valid.
func (r *Record) Validate() error {
	if r.V < 1 {
		return fmt.Errorf("record %d of run %s: version %d", r.Seq, r.Run, r.V)
	}
	if err := checkName("run id", r.Run); err != nil {
		return err
	}
	if err := checkName("table id", r.TableID); err != nil {
		return err
	}
	if r.Seq < 1 {
		return fmt.Errorf("run %s: record seq %d (seqs start at 1)", r.Run, r.Seq)
	}
	if r.Kind == "" {
		return fmt.Errorf("run %s seq %d: record has no kind", r.Run, r.Seq)
	}
	if !r.Kind.Known() {
		return nil
	}
	set := map[Kind]bool{
		KindRun: r.Header != nil, KindPlan: r.Plan != nil, KindIntent: r.Intent != nil,
		KindResult: r.Result != nil, KindOutcome: r.Outcome != nil, KindVerification: r.Verification != nil,
		KindStaging: r.Staging != nil, KindEnd: r.End != nil, KindMerge: r.Merge != nil, KindKeys: r.Keys != nil, KindUndo: r.Undo != nil,
		KindDeleteIntent: r.Deletion != nil && r.Kind == KindDeleteIntent,
		KindDeleted:      r.Deletion != nil && r.Kind == KindDeleted,
	}
	for k, ok := range set {
		if ok && k != r.Kind {
			return fmt.Errorf("run %s seq %d: a %s record carries a %s payload", r.Run, r.Seq, r.Kind, k)
		}
	}
	if !set[r.Kind] {
		return fmt.Errorf("run %s seq %d: %s record without its payload", r.Run, r.Seq, r.Kind)
	}
	if r.Merge != nil {
		switch r.Merge.Step {
		case MergePlanned, MergeIntent, MergeResult, MergeDropped:
		default:
			return fmt.Errorf("run %s seq %d: merge step %q (want planned, intent, result or dropped)", r.Run, r.Seq, r.Merge.Step)
		}
		if r.Merge.Staging == "" {
			return fmt.Errorf("run %s seq %d: merge record without its staging table", r.Run, r.Seq)
		}
	}
	if r.Undo != nil {
		if err := r.Undo.validate(); err != nil {
			return fmt.Errorf("run %s seq %d: %w", r.Run, r.Seq, err)
		}
	}
	if r.Outcome != nil {
		switch r.Outcome.Status {
		case BatchVerified, BatchUnknown, BatchMismatch, BatchFailed:
		default:
			return fmt.Errorf("run %s seq %d: outcome %q (want verified, unknown, mismatch or failed)", r.Run, r.Seq, r.Outcome.Status)
		}
	}
	return nil
}

// checkName accepts the run and table ids the journal uses as file and key names: letters,
// digits, '-', '_' and '.', not starting with '.', at most 200 bytes.
func checkName(what, s string) error {
	if s == "" {
		return fmt.Errorf("empty %s", what)
	}
	if len(s) > 200 || strings.HasPrefix(s, ".") {
		return fmt.Errorf("invalid %s %q", what, s)
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("invalid %s %q: only letters, digits, '-', '_' and '.'", what, s)
		}
	}
	return nil
}

// encode returns r as one JSON line (with its newline), the fields that can hold secrets
// redacted (those tagged redact:"yes": the root, the command line, error texts and reasons).
// File keys, folders, staging locations and SQL are written verbatim: they are names the
// journal must give back exactly (a folder called sig=1 is a folder), and none of them holds
// a credential (SQL names locations without their query). r itself is not changed.
func encode(r Record) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if !r.Kind.Known() {
		return nil, fmt.Errorf("run %s seq %d: cannot write a record of unknown kind %q", r.Run, r.Seq, r.Kind)
	}
	// A deep copy with the tagged strings redacted, so that redacting never touches the
	// caller's slices; then one encoding.
	c := redactCopy(reflect.ValueOf(r), false).Interface().(Record)
	c.Raw = nil
	if holdsSecret(reflect.ValueOf(c)) {
		return nil, fmt.Errorf("run %s seq %d: the %s record holds a secret in a field stored verbatim (a key, a folder or SQL); it is not written", r.Run, r.Seq, r.Kind)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// redactCopy returns a deep copy of v in which the strings of fields tagged redact:"yes"
// (and everything inside them) are redacted; on is set inside such a field. json.RawMessage
// values (byte slices) are copied as they are.
func redactCopy(v reflect.Value, on bool) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		if !on {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.SetString(redact.String(v.String()))
		return out
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(redactCopy(v.Elem(), on))
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v) // unexported fields (time.Time's) as they are
		for i := 0; i < v.NumField(); i++ {
			if f := v.Type().Field(i); f.IsExported() {
				out.Field(i).Set(redactCopy(v.Field(i), on || f.Tag.Get("redact") == "yes"))
			}
		}
		return out
	case reflect.Slice:
		if v.IsNil() || v.Type().Elem().Kind() == reflect.Uint8 {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			out.Index(i).Set(redactCopy(v.Index(i), on))
		}
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for _, k := range v.MapKeys() {
			out.SetMapIndex(redactCopy(k, on), redactCopy(v.MapIndex(k), on))
		}
		return out
	}
	return v
}

// holdsSecret reports whether some string in v holds a registered secret.
func holdsSecret(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.String:
		return redact.Holds(v.String())
	case reflect.Pointer:
		return !v.IsNil() && holdsSecret(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() && holdsSecret(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return false
		}
		for i := 0; i < v.Len(); i++ {
			if holdsSecret(v.Index(i)) {
				return true
			}
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			if holdsSecret(k) || holdsSecret(v.MapIndex(k)) {
				return true
			}
		}
	}
	return false
}

// errNotRecord marks bytes that do not decode as a record.
var errNotRecord = errors.New("not a journal record")

// decode parses one record. A record of an unknown kind is returned with Raw set.
func decode(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", errNotRecord, err)
	}
	if err := r.Validate(); err != nil {
		return Record{}, fmt.Errorf("%w: %v", errNotRecord, err)
	}
	if !r.Kind.Known() {
		r.Raw = append(json.RawMessage(nil), b...)
	}
	return r, nil
}
