package warehouse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Unknowns are the answers the local warehouse gives where Databricks' behaviour is not known
// (no documentation, source or published output settles it). Each field is a switch, so a test
// can run the same code against every plausible Databricks; the zero value of each field is
// the default named in its comment. In JSON the fields have snake_case names and the enums
// their names (path_access: bracketed, plain, no_sqlstate, allowed; copy_conflict:
// concurrent_append, concurrent_copy_into, none); decoding a partial document into the
// current Unknowns changes only the fields it names. Set them with Options.Unknowns at start, or at run time
// with Server.SetUnknowns / DuckDB.SetUnknowns (statements that start afterwards see them).
type Unknowns struct {
	// PathAccess is how a path read (COPY INTO, parquet.`…`, read_files, LIST) inside a
	// managed table's storage is answered. Default OverlapBracketed: refused.
	PathAccess PathAccess `json:"path_access"`
	// RefuseFilesPaths refuses FILES entries that are not bare names relative to the FROM
	// folder (a subpath such as 'a/b.parquet', or an absolute URI or path). Default false:
	// accepted, as long as they lie inside the FROM folder.
	RefuseFilesPaths bool `json:"refuse_files_paths"`
	// NoSQLState sends every error without a SQLSTATE: the Thrift sqlState is empty and the
	// text has no "SQLSTATE: …" suffix. Default false: sent.
	NoSQLState bool `json:"no_sqlstate"`
	// CopyConflict is what a COPY INTO gets when a COPY INTO that started later committed
	// some of the same files first. Default ConflictConcurrentAppend.
	CopyConflict CopyConflict `json:"copy_conflict"`
	// CommitEmptyCopy makes a COPY INTO that loads nothing commit a version (operation COPY
	// INTO, numOutputRows 0). Default false: no version.
	CommitEmptyCopy bool `json:"commit_empty_copy"`
	// RefuseMissingNestedMember makes COPY INTO refuse a file whose struct column lacks a
	// nullable member of the table's struct, with DELTA_INSERT_COLUMN_ARITY_MISMATCH, as a
	// batch INSERT does. Default false: the member is NULL, as a streaming write does.
	RefuseMissingNestedMember bool `json:"refuse_missing_nested_member"`
	// GlobPaths reads COPY INTO's FROM folder and FILES entries as Hadoop globs, as Spark's
	// DataSource resolves a read path (read_files and parquet.`…` always do). Default false:
	// they are literal ("[b]/" is the folder named "[b]").
	GlobPaths bool `json:"glob_paths"`
	// RefuseUserMetadata refuses SET and RESET of spark.databricks.delta.commitInfo.userMetadata
	// as a SQL warehouse refuses a configuration it does not allow: CONFIG_NOT_AVAILABLE
	// (SQLSTATE 42K0I). Default false: accepted, and later commits of the session carry it.
	RefuseUserMetadata bool `json:"refuse_user_metadata"`
	// HistoryUserName, when set, is the userName the warehouse's commits record in DESCRIBE
	// HISTORY and the Delta log (a service principal's application id, say), while
	// current_user() keeps returning the user statements run as. Default empty: the same name.
	HistoryUserName string `json:"history_user_name"`
	// SchemaAutoMerge evolves the target of MERGE … INSERT * / UPDATE SET * as with
	// spark.databricks.delta.schema.autoMerge.enabled = true (a warehouse admin may set it):
	// source columns the target lacks are added to it. Default false: they are ignored, and a
	// target column the source lacks is DELTA_MERGE_UNRESOLVED_EXPRESSION. MERGE WITH SCHEMA
	// EVOLUTION INTO and the session configuration evolve either way.
	SchemaAutoMerge bool `json:"schema_auto_merge"`
	// SkipEmptyCommits makes an INSERT that writes no row commit no version, as Delta does
	// with skipRecordingEmptyCommits. Default false: it commits a version (a WRITE with
	// numOutputRows 0), as Databricks was seen to do (OBS: an empty INSERT shows in DESCRIBE
	// HISTORY).
	SkipEmptyCommits bool `json:"skip_empty_commits"`
	// RefuseMetadataInDelete refuses _metadata (row_id, row_commit_version, file_path, …) in a
	// DELETE's condition, as an analyzer that does not resolve the hidden column there would:
	// UNRESOLVED_COLUMN.WITH_SUGGESTION (SQLSTATE 42703). Whether a SQL warehouse takes it is
	// not known (Delta's own DELETE reads _metadata.file_path internally). Default false:
	// accepted. SELECT takes _metadata either way.
	RefuseMetadataInDelete bool `json:"refuse_metadata_in_delete"`
}

// PathAccess is the answer to a path read inside a managed table's storage.
type PathAccess int

const (
	// OverlapBracketed refuses with "[INVALID_PARAMETER_VALUE.LOCATION_OVERLAP] Input path url
	// '…' overlaps with managed storage within '…' call. SQLSTATE: 22023".
	OverlapBracketed PathAccess = iota
	// OverlapPlain refuses with the form seen from a SQL warehouse, without a [CLASS] prefix:
	// "INVALID_PARAMETER_VALUE.LOCATION_OVERLAP: Input path url '…' overlaps with managed
	// storage within 'ListFiles' call." (SQLSTATE 22023 in the Thrift field).
	OverlapPlain
	// OverlapNoSQLState refuses in the bracketed form with an empty SQLSTATE.
	OverlapNoSQLState
	// OverlapAllowed reads the path as any other.
	OverlapAllowed
)

func (p PathAccess) String() string {
	switch p {
	case OverlapBracketed:
		return "refused ([CLASS] form)"
	case OverlapPlain:
		return "refused (CLASS: form)"
	case OverlapNoSQLState:
		return "refused (no SQLSTATE)"
	case OverlapAllowed:
		return "allowed"
	}
	return fmt.Sprintf("PathAccess(%d)", int(p))
}

var pathAccessNames = []string{"bracketed", "plain", "no_sqlstate", "allowed"}

// MarshalText renders the answer by its JSON name (bracketed, plain, no_sqlstate, allowed).
func (p PathAccess) MarshalText() ([]byte, error) {
	if p < 0 || int(p) >= len(pathAccessNames) {
		return nil, fmt.Errorf("fakewarehouse: unknown PathAccess %d", int(p))
	}
	return []byte(pathAccessNames[p]), nil
}

// UnmarshalText reads an answer by its JSON name.
func (p *PathAccess) UnmarshalText(b []byte) error {
	for i, n := range pathAccessNames {
		if string(b) == n {
			*p = PathAccess(i)
			return nil
		}
	}
	return fmt.Errorf("fakewarehouse: path_access %q is not one of %v", b, pathAccessNames)
}

// CopyConflict is the answer to two COPY INTO statements loading the same files at once.
type CopyConflict int

const (
	// ConflictConcurrentAppend fails the statement that commits second with
	// DELTA_CONCURRENT_APPEND (SQLSTATE 2D521).
	ConflictConcurrentAppend CopyConflict = iota
	// ConflictConcurrentCopyInto fails it with TRANSACTION_CONCURRENT_COPY_INTO (SQLSTATE 25000).
	ConflictConcurrentCopyInto
	// ConflictNone serialises the two: the second skips the files the first loaded and
	// succeeds (0 rows when they were all loaded).
	ConflictNone
)

func (c CopyConflict) String() string {
	switch c {
	case ConflictConcurrentAppend:
		return "DELTA_CONCURRENT_APPEND"
	case ConflictConcurrentCopyInto:
		return "TRANSACTION_CONCURRENT_COPY_INTO"
	case ConflictNone:
		return "none"
	}
	return fmt.Sprintf("CopyConflict(%d)", int(c))
}

var copyConflictNames = []string{"concurrent_append", "concurrent_copy_into", "none"}

// MarshalText renders the answer by its JSON name (concurrent_append, concurrent_copy_into,
// none).
func (c CopyConflict) MarshalText() ([]byte, error) {
	if c < 0 || int(c) >= len(copyConflictNames) {
		return nil, fmt.Errorf("fakewarehouse: unknown CopyConflict %d", int(c))
	}
	return []byte(copyConflictNames[c]), nil
}

// UnmarshalText reads an answer by its JSON name.
func (c *CopyConflict) UnmarshalText(b []byte) error {
	for i, n := range copyConflictNames {
		if string(b) == n {
			*c = CopyConflict(i)
			return nil
		}
	}
	return fmt.Errorf("fakewarehouse: copy_conflict %q is not one of %v", b, copyConflictNames)
}

// conflictError is the error of a COPY INTO that lost the race for file.
func (c CopyConflict) conflictError(table, file string) *SQLError {
	switch c {
	case ConflictConcurrentCopyInto:
		return &SQLError{Class: "TRANSACTION_CONCURRENT_COPY_INTO", SQLState: "25000", Message: fmt.Sprintf(
			"A concurrent COPY INTO committed to %s while this COPY INTO ran and loaded some of the same files (%s). Please try the operation again.", table, file)}
	}
	return &SQLError{Class: "DELTA_CONCURRENT_APPEND", SQLState: "2D521", Message: fmt.Sprintf(
		"ConcurrentAppendException: Files were added to the root of the table by a concurrent update. Please try the operation again.\n"+
			"Conflicting commit: a concurrent COPY INTO on %s loaded %s.", table, file)}
}

// overlapError is the LOCATION_OVERLAP refusal in the configured form; call names the
// internal call Unity Catalog reports ('ListFiles', 'CheckPathAccess').
func (p PathAccess) overlapError(url, call string) *SQLError {
	e := &SQLError{Class: "INVALID_PARAMETER_VALUE.LOCATION_OVERLAP", SQLState: "22023",
		Message: fmt.Sprintf("Input path url '%s' overlaps with managed storage within '%s' call.", url, call)}
	switch p {
	case OverlapPlain:
		e.Plain = true
	case OverlapNoSQLState:
		e.SQLState = ""
	}
	return e
}

// SetUnknowns replaces the engine's answers to unknown behaviours.
func (e *DuckDB) SetUnknowns(u Unknowns) {
	e.unkMu.Lock()
	e.unknowns = u
	e.unkMu.Unlock()
}

// Unknowns returns the engine's current answers to unknown behaviours.
func (e *DuckDB) Unknowns() Unknowns {
	e.unkMu.Lock()
	defer e.unkMu.Unlock()
	return e.unknowns
}

// SetUnknowns replaces the warehouse's answers to unknown behaviours (see Unknowns).
func (s *Server) SetUnknowns(u Unknowns) { s.duck.SetUnknowns(u) }

// Unknowns returns the warehouse's current answers to unknown behaviours.
func (s *Server) Unknowns() Unknowns { return s.duck.Unknowns() }

// Patch changes the fields a JSON document names (snake_case, see Unknowns) and leaves the
// others; a name that is not a field, or a value of the wrong kind, is an error and changes
// nothing.
func (u *Unknowns) Patch(doc []byte) error {
	c := *u
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return fmt.Errorf("fakewarehouse: unknowns: %w", err)
	}
	if dec.More() {
		return errors.New("fakewarehouse: unknowns: more than one JSON value")
	}
	*u = c
	return nil
}
