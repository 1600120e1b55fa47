package databricks

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/zbrecover/zbrecover/internal/redact"

	dbsqlerr "github.com/databricks/databricks-sql-go/errors"
)

// Class is the operator-level category of a failed SQL statement.
type Class int

// The classes Classify recognises. ClassOther covers everything else.
const (
	ClassOther Class = iota
	// ClassNotFound: the table, schema, catalog or path does not exist.
	ClassNotFound
	// ClassPermissionDenied: the identity lacks a privilege.
	ClassPermissionDenied
	// ClassLocationOverlap: Unity Catalog refuses path access inside managed storage.
	ClassLocationOverlap
	// ClassSchemaMismatch: the data does not fit the table (COPY INTO schema enforcement).
	ClassSchemaMismatch
	// ClassConcurrentCopy: another COPY INTO or write conflicted on the same table or files.
	ClassConcurrentCopy
	// ClassAuth: the warehouse rejected the credentials.
	ClassAuth
	// ClassConnection: the warehouse could not be reached or the request failed in transit.
	ClassConnection
	// ClassCanceled: the context was cancelled or its deadline passed; the outcome on the
	// server is unknown.
	ClassCanceled
)

var classNames = [...]string{
	ClassOther: "sql error", ClassNotFound: "not found", ClassPermissionDenied: "permission denied",
	ClassLocationOverlap: "location overlap", ClassSchemaMismatch: "schema mismatch",
	ClassConcurrentCopy: "concurrent write", ClassAuth: "authentication failed",
	ClassConnection: "warehouse unreachable", ClassCanceled: "cancelled",
}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "sql error"
}

// SQLError is a failed statement, classified for the operator.
type SQLError struct {
	Class Class
	// SQLState is the five-character SQLSTATE when known (42P01, 42KDG, …).
	SQLState string
	// ErrorClass is the Databricks error class from the message ([TABLE_OR_VIEW_NOT_FOUND]),
	// with its sub-class (INVALID_PARAMETER_VALUE.LOCATION_OVERLAP).
	ErrorClass string
	// QueryID identifies the statement in the warehouse's query history.
	QueryID string
	// Message is the server's message (or the driver's), redacted.
	Message string
	// Hint says what the operator can do.
	Hint string
	// Statement is the SQL text, redacted.
	Statement string
	// Err is the driver error.
	Err error
	// Fetched is set when the statement ran and the error came while its result was read:
	// the statement may have committed.
	Fetched bool
	// NotSent is set when the workspace refused the request that carries the statement (or
	// the session it runs in) with HTTP 401 or 403 before the warehouse received it: the
	// statement did not run.
	NotSent bool
}

func (e *SQLError) Error() string {
	var b strings.Builder
	b.WriteString(e.Class.String())
	if e.ErrorClass != "" || e.SQLState != "" {
		b.WriteString(" (")
		b.WriteString(e.ErrorClass)
		if e.SQLState != "" {
			if e.ErrorClass != "" {
				b.WriteString(", ")
			}
			b.WriteString("SQLSTATE " + e.SQLState)
		}
		b.WriteString(")")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(strings.TrimRight(e.Message, ". \n"))
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	if e.QueryID != "" {
		b.WriteString(" [query id " + e.QueryID + "]")
	}
	return redact.String(b.String())
}

func (e *SQLError) Unwrap() error { return e.Err }

var (
	errorClassRe = regexp.MustCompile(`\[([A-Z][A-Z0-9_]*(?:\.[A-Z][A-Z0-9_]*)*)\]`)
	sqlStateRe   = regexp.MustCompile(`SQLSTATE:?\s*([0-9A-Z]{5})`)
	// driverPrefixRe strips the driver's wrapping to leave the server's message.
	driverPrefixRe = regexp.MustCompile(`^.*?unexpected operation state [A-Z_]+: `)
	// driverNoiseRe matches the driver's repeated wrappers around request errors.
	driverNoiseRe = regexp.MustCompile(`databricks: (?:request|execution|driver) error: |error connecting: host=\S+ port=\d+, httpPath=\S+: `)
)

// Classify turns a driver error into an *SQLError with a class and a hint, matching on
// SQLSTATE and Databricks error classes, never on free message text alone. It returns nil for a
// nil error and the error itself when it already is an *SQLError.
func Classify(err error) *SQLError {
	if err == nil {
		return nil
	}
	var se *SQLError
	if errors.As(err, &se) {
		return se
	}
	e := &SQLError{Err: redact.Error(err)}
	msg := err.Error()
	var ee dbsqlerr.DBExecutionError
	if errors.As(err, &ee) {
		e.SQLState, e.QueryID = ee.SqlState(), ee.QueryId()
	}
	if m := errorClassRe.FindStringSubmatch(msg); m != nil {
		e.ErrorClass = m[1]
	}
	if e.SQLState == "" {
		if m := sqlStateRe.FindStringSubmatch(msg); m != nil {
			e.SQLState = m[1]
		}
	}
	e.Message = redact.String(tidyMessage(msg, e.ErrorClass, e.SQLState))

	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		e.Class = ClassCanceled
		e.Hint = "the statement was cancelled before the warehouse answered; its outcome is unknown: re-run the command (it is idempotent) to converge"
		return e
	case e.ErrorClass != "" || e.SQLState != "":
		e.Class, e.Hint = classifyServer(e.ErrorClass, e.SQLState)
		if e.Class != ClassOther || errors.As(err, &ee) {
			return e
		}
	}
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "status 401") || strings.Contains(low, "401 unauthorized") ||
		strings.Contains(low, "status 403") || strings.Contains(low, "invalid access token"):
		e.Class = ClassAuth
		e.Hint = "the warehouse rejected the credentials; check DATABRICKS_TOKEN or the profile's credentials, and that the identity may use the warehouse (CAN USE)"
		if refusedRequest(low) {
			e.NotSent = true
			e.Hint = "the workspace refused the credentials before the statement reached the warehouse, so it did not run; " +
				"check DATABRICKS_TOKEN or the profile's credentials (a token may expire during a long run), and that the identity may use the warehouse (CAN USE)"
		}
	case errors.Is(err, dbsqlerr.RequestError) || strings.Contains(low, "connection refused") ||
		strings.Contains(low, "no such host") || strings.Contains(low, "error connecting"):
		e.Class = ClassConnection
		e.Hint = "cannot reach the SQL warehouse; check the workspace host, --warehouse-id / --http-path, and that the warehouse is running"
	}
	return e
}

// refusedRequest reports whether a driver message (lower case) is an HTTP 401 or 403 answer
// to the request that sends a statement or opens its session: the workspace's front end
// checks the credentials before the warehouse receives anything. An answer to a later
// request (polling the statement's status, fetching its result) does not say so: the
// statement was received and may have run.
func refusedRequest(low string) bool {
	if !strings.Contains(low, "execute statement request error") && !strings.Contains(low, "open session request error") {
		return false
	}
	for _, later := range []string{"get operation status request error", "fetch results request error", "get result set metadata request error"} {
		if strings.Contains(low, later) {
			return false
		}
	}
	return strings.Contains(low, "http status 401") || strings.Contains(low, "http status 403") || strings.Contains(low, "401 unauthorized")
}

// repeatedWrapRe matches the driver's doubled "failed to execute query: " wrapping.
var repeatedWrapRe = regexp.MustCompile(`(failed to execute query: )+`)

// tidyMessage leaves the server's words: it drops the driver's wrappers, and the [ERROR_CLASS]
// prefix and SQLSTATE suffix that SQLError.Error already prints in its header.
func tidyMessage(msg, errorClass, sqlState string) string {
	msg = driverNoiseRe.ReplaceAllString(driverPrefixRe.ReplaceAllString(msg, ""), "")
	msg = repeatedWrapRe.ReplaceAllString(msg, "$1")
	if errorClass != "" {
		msg = strings.Replace(msg, "["+errorClass+"] ", "", 1)
		msg = strings.Replace(msg, "["+errorClass+"]", "", 1)
	}
	if sqlState != "" {
		msg = regexp.MustCompile(`\s*SQLSTATE:?\s*`+regexp.QuoteMeta(sqlState)+`\b\.?`).ReplaceAllString(msg, "")
	}
	return strings.TrimSpace(msg)
}

func classifyServer(errorClass, sqlState string) (Class, string) {
	ec := errorClass
	has := func(parts ...string) bool {
		for _, p := range parts {
			if strings.Contains(ec, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("LOCATION_OVERLAP"):
		return ClassLocationOverlap, "Unity Catalog refuses path access inside the table's managed storage, where the fallback files are; " +
			"copy them to a Unity Catalog volume or external location the identity can READ FILES on, and load from there"
	case has("COPY_INTO_DUPLICATED_FILES_COPY_NOT_ALLOWED", "TRANSACTION_CONCURRENT_COPY_INTO", "COPY_INTO_STATE_INTERNAL_ERROR",
		"DELTA_CONCURRENT_APPEND", "DELTA_CONCURRENT_", "CONCURRENT_APPEND", "CONCURRENT_WRITE"):
		return ClassConcurrentCopy, "another COPY INTO or write conflicted on this table; wait for it to finish and re-run " +
			"(COPY INTO skips files already loaded), and run one reload per table at a time"
	case has("DELTA_METADATA_MISMATCH", "COPY_INTO_SCHEMA_MISMATCH", "DELTA_MERGE_INCOMPATIBLE", "DELTA_FAILED_TO_MERGE_FIELDS", "DELTA_NOT_NULL_CONSTRAINT_VIOLATED",
		"INCOMPATIBLE_DATA_FOR_TABLE", "DELTA_SCHEMA_CHANGED", "CAST_INVALID_INPUT", "DELTA_COLUMN_NOT_FOUND_IN_SCHEMA"),
		sqlState == "42KDG", sqlState == "42K09", sqlState == "23502", sqlState == "42000" && has("SCHEMA_MISMATCH"):
		return ClassSchemaMismatch, "the files do not fit the table's schema; run `zbrecover inspect` to see the differences, " +
			"then evolve the table or load with a projection"
	case has("PERMISSION_DENIED", "INSUFFICIENT_PERMISSIONS", "UNAUTHORIZED_ACCESS"), sqlState == "42501":
		return ClassPermissionDenied, "the identity needs USE CATALOG and USE SCHEMA, MODIFY and SELECT on the table, " +
			"and READ FILES (or READ VOLUME) on the source path"
	case has("TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND", "CATALOG_NOT_FOUND", "PATH_NOT_FOUND", "_NOT_FOUND", "_DOES_NOT_EXIST"),
		sqlState == "42P01", sqlState == "42704", sqlState == "42K03":
		return ClassNotFound, "check the table name and the path; a table the identity cannot see is also reported as not found"
	}
	return ClassOther, ""
}

// RefusedBeforeCommit reports whether err says that the warehouse refused the statement
// before anything was committed, so that sending it again cannot load anything twice and
// the attempt may be recorded as failed: a SQLSTATE of the analysis, data, constraint or
// feature classes (42, 22, 23, 0A, 21) or a transaction conflict (2D521, 25000, 40001,
// which Delta raises instead of committing), given while the statement ran; without a
// SQLSTATE, an error class of those kinds (schema mismatch, permission, not found,
// LOCATION_OVERLAP, a concurrent write).
//
// An authentication failure (HTTP 401 or 403) answering the request that sends the
// statement, or opens its session, was given before the warehouse received the statement:
// it did not run (SQLError.NotSent).
//
// Everything else may have committed: an error without a SQLSTATE, an internal error
// (XX000), DELTA_POST_COMMIT_HOOK_FAILED (2DKD0: "Committing to the Delta table version N
// succeeded but error while executing post-commit hook") or any other post-commit class,
// an error while reading the result of a statement that ran, a lost connection, a
// cancellation. Such an attempt stays open until the table's history or a new send settles
// it.
func RefusedBeforeCommit(err error) bool {
	se := Classify(err)
	if se != nil && se.Class == ClassAuth && se.NotSent && !se.Fetched {
		return true
	}
	if se == nil || se.Fetched || se.Class == ClassCanceled || se.Class == ClassConnection || se.Class == ClassAuth {
		return false
	}
	if strings.Contains(se.ErrorClass, "POST_COMMIT") || se.SQLState == "2DKD0" || strings.Contains(se.Message, "POST_COMMIT") {
		return false
	}
	if strings.Contains(se.ErrorClass+" "+se.Message, "LOCATION_OVERLAP") {
		return true // Unity Catalog refused the path: nothing was read
	}
	switch se.SQLState {
	case "2D521", "25000", "40001":
		return true
	}
	if len(se.SQLState) == 5 {
		switch se.SQLState[:2] {
		case "42", "22", "23", "0A", "21":
			return true
		}
		return false
	}
	// No SQLSTATE (some Databricks errors arrive without one): an error class of the kinds
	// that refuse a statement before it reads anything.
	switch se.Class {
	case ClassSchemaMismatch, ClassPermissionDenied, ClassNotFound, ClassLocationOverlap:
		return se.ErrorClass != ""
	case ClassConcurrentCopy:
		return strings.Contains(se.ErrorClass, "CONCURRENT")
	}
	return false
}

// IsLocationOverlap reports whether err is Unity Catalog's refusal of a path read inside a
// managed table's storage: the class LOCATION_OVERLAP, recognised by SQLSTATE-free text too.
func IsLocationOverlap(err error) bool {
	if err == nil {
		return false
	}
	return Classify(err).Class == ClassLocationOverlap || strings.Contains(err.Error(), "LOCATION_OVERLAP")
}
