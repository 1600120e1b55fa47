package warehouse

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Engine runs Databricks SQL statements for the server. The server owns the protocol
// (sessions, operations, paging, faults); the engine owns the data.
type Engine interface {
	// Execute runs one statement in the session and returns its result. A failed statement
	// returns an *SQLError (wrapped errors are classified as INTERNAL_ERROR). Execute may
	// change sess (USE CATALOG, USE SCHEMA, SET).
	Execute(ctx context.Context, sess *Session, stmt string, params []Param) (*Result, error)
	// Close releases the engine.
	Close() error
}

// Session is the per-connection state a statement runs in.
type Session struct {
	ID      string
	Catalog string            // current catalog
	Schema  string            // current schema
	Conf    map[string]string // session configuration (SET k = v, DSN session parameters)
}

// Param is a statement parameter as the driver sends it: positional when Name is empty.
type Param struct {
	Name  string
	Type  string  // "STRING", "BIGINT", "DECIMAL(10,2)", "VOID", …
	Value *string // nil for NULL
}

// Column is one result column.
type Column struct {
	Name string
	Type *Type
}

// Result is what a statement returns: a result set (possibly empty) and, for DML, the number
// of modified rows the driver reports as RowsAffected.
type Result struct {
	Columns []Column
	// Rows holds values in the normalized form: nil, bool, int64 (all integer types), float64,
	// string (strings and exact decimals), []byte, time.Time (date and timestamps), and for
	// nested types []any (array elements or struct fields in order) and []MapEntry.
	Rows [][]any
	// ModifiedRows, when set, is sent as numModifiedRows.
	ModifiedRows *int64

	commits []CommitRef // the versions the statement committed (set by DuckDB.Execute)
}

// Commits returns the table versions the statement committed, in order.
func (r *Result) Commits() []CommitRef { return append([]CommitRef(nil), r.commits...) }

// MapEntry is one key/value pair of a map value.
type MapEntry struct{ Key, Value any }

// Int returns the value at row r, column c as an int64 (it panics on other types: for tests).
func (r *Result) Int(row, col int) int64 {
	switch v := r.Rows[row][col].(type) {
	case int64:
		return v
	case string:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			panic(err)
		}
		return n
	}
	panic(fmt.Sprintf("fakewarehouse: value %v (%T) is not an integer", r.Rows[row][col], r.Rows[row][col]))
}

// String returns the value at row r, column c formatted as the driver would receive it.
func (r *Result) String(row, col int) string {
	v := r.Rows[row][col]
	if v == nil {
		return "NULL"
	}
	return formatValue(v, r.Columns[col].Type)
}

// ColumnIndex returns the index of the named column (case-insensitive), or -1.
func (r *Result) ColumnIndex(name string) int {
	for i, c := range r.Columns {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

func int64p(n int64) *int64 { return &n }

// SQLError is a statement failure as a Databricks SQL warehouse reports it: an error class,
// a SQLSTATE and a message. Error() renders "[CLASS] message SQLSTATE: xxxxx", the text a
// real warehouse puts in the Thrift errorMessage/displayMessage.
type SQLError struct {
	Class    string // such as TABLE_OR_VIEW_NOT_FOUND or DELTA_METADATA_MISMATCH.SCHEMA_MISMATCH
	SQLState string // five characters, sent in the Thrift sqlState field
	Message  string // without the class prefix and the SQLSTATE suffix
	// Plain renders the class as "CLASS: message" with no SQLSTATE suffix, a form some
	// Unity Catalog errors take (INVALID_PARAMETER_VALUE.LOCATION_OVERLAP: …).
	Plain bool
}

func (e *SQLError) Error() string {
	msg := e.Message
	if e.Plain {
		if e.Class != "" {
			msg = e.Class + ": " + msg
		}
		return msg
	}
	if e.Class != "" {
		msg = "[" + e.Class + "] " + msg
	}
	if e.SQLState != "" {
		msg += " SQLSTATE: " + e.SQLState
	}
	return msg
}

// Error constructors for the classes the fake raises in several places.

func errTableNotFound(name string) *SQLError {
	return &SQLError{Class: "TABLE_OR_VIEW_NOT_FOUND", SQLState: "42P01", Message: fmt.Sprintf(
		"The table or view %s cannot be found. Verify the spelling and correctness of the schema and catalog.\n"+
			"If you did not qualify the name with a schema, verify the current_schema() output, or qualify the name with the correct schema and catalog.\n"+
			"To tolerate the error on drop use DROP VIEW IF EXISTS or DROP TABLE IF EXISTS.", name)}
}

func errSchemaNotFound(name string) *SQLError {
	return &SQLError{Class: "SCHEMA_NOT_FOUND", SQLState: "42704", Message: fmt.Sprintf(
		"The schema %s cannot be found. Verify the spelling and correctness of the schema and catalog.\n"+
			"If you did not qualify the name with a catalog, verify the current_schema() output, or qualify the name with the correct catalog.\n"+
			"To tolerate the error on drop use DROP SCHEMA IF EXISTS.", name)}
}

func errCatalogNotFound(name string) *SQLError {
	return &SQLError{Class: "NO_SUCH_CATALOG_EXCEPTION", SQLState: "42704",
		Message: fmt.Sprintf("The catalog '%s' was not found. Please verify the catalog name and then retry the query or command again.", name)}
}

func errUnsupported(what string) *SQLError {
	return &SQLError{Class: "UNSUPPORTED_FEATURE", SQLState: "0A000",
		Message: fmt.Sprintf("The feature is not supported: %s (not implemented by the fake warehouse).", what)}
}

func errInternal(err error) *SQLError {
	return &SQLError{Class: "INTERNAL_ERROR", SQLState: "XX000", Message: err.Error()}
}

// checkSingleStatement rejects a second statement after ";", as Spark's parser does
// (singleStatement: statement ';'* EOF). Semicolons inside string literals and quoted
// identifiers are part of their tokens and do not count.
func checkSingleStatement(p *parser) error {
	for i, t := range p.toks {
		if !t.isOp(";") {
			continue
		}
		for j := i + 1; j < len(p.toks); j++ {
			if p.toks[j].kind == tkEOF {
				return nil
			}
			if !p.toks[j].isOp(";") {
				return &SQLError{Class: "PARSE_SYNTAX_ERROR", SQLState: "42601",
					Message: fmt.Sprintf("Syntax error at or near '%s' (one statement per request; a second statement follows ';').", p.toks[j].text())}
			}
		}
		return nil
	}
	return nil
}

// quoteName renders a name as Databricks error messages do: `c`.`s`.`t`.
func quoteName(parts ...string) string {
	q := make([]string, len(parts))
	for i, p := range parts {
		q[i] = "`" + strings.ReplaceAll(p, "`", "``") + "`"
	}
	return strings.Join(q, ".")
}
