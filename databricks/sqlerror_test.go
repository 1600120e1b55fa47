package databricks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	dbsqlerr "github.com/databricks/databricks-sql-go/errors"
	pkgerrors "github.com/pkg/errors"
)

// execErr implements dbsqlerr.DBExecutionError as the driver's execution errors do.
type execErr struct{ msg, state, query string }

func (e execErr) Error() string {
	return "databricks: execution error: failed to execute query: unexpected operation state ERROR_STATE: " + e.msg
}
func (e execErr) CorrelationId() string            { return "" }
func (e execErr) ConnectionId() string             { return "conn" }
func (e execErr) StackTrace() pkgerrors.StackTrace { return nil }
func (e execErr) Cause() error                     { return nil }
func (e execErr) IsRetryable() bool                { return false }
func (e execErr) RetryAfter() time.Duration        { return 0 }
func (e execErr) QueryId() string                  { return e.query }
func (e execErr) SqlState() string                 { return e.state }
func (e execErr) Is(t error) bool                  { return t == dbsqlerr.ExecutionError }

var _ dbsqlerr.DBExecutionError = execErr{}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		class     Class
		errClass  string
		state     string
		hintWords string
	}{
		{name: "table not found", err: execErr{msg: "[TABLE_OR_VIEW_NOT_FOUND] The table or view `main`.`sales`.`nope` cannot be found. SQLSTATE: 42P01", state: "42P01", query: "q1"},
			class: ClassNotFound, errClass: "TABLE_OR_VIEW_NOT_FOUND", state: "42P01", hintWords: "table name"},
		{name: "location overlap", err: execErr{msg: "[INVALID_PARAMETER_VALUE.LOCATION_OVERLAP] Input path url 's3://lake/tables/orders/_zerobus/table_rejected_parquets' overlaps with managed storage within 'CheckPathAccess' call. SQLSTATE: 22023", state: "22023"},
			class: ClassLocationOverlap, errClass: "INVALID_PARAMETER_VALUE.LOCATION_OVERLAP", state: "22023", hintWords: "volume"},
		{name: "schema mismatch", err: execErr{msg: "[DELTA_METADATA_MISMATCH.SCHEMA_MISMATCH] A schema mismatch detected when writing to the Delta table. SQLSTATE: 42KDG", state: "42KDG"},
			class: ClassSchemaMismatch, errClass: "DELTA_METADATA_MISMATCH.SCHEMA_MISMATCH", state: "42KDG", hintWords: "inspect"},
		{name: "not null", err: execErr{msg: "[DELTA_NOT_NULL_CONSTRAINT_VIOLATED] NOT NULL constraint violated for column: id. SQLSTATE: 23502", state: "23502"},
			class: ClassSchemaMismatch, state: "23502", errClass: "DELTA_NOT_NULL_CONSTRAINT_VIOLATED"},
		{name: "state only", err: execErr{msg: "Failed to merge incompatible data types LongType and StringType", state: "42K09"},
			class: ClassSchemaMismatch, state: "42K09"},
		{name: "concurrent copy", err: execErr{msg: "[COPY_INTO_DUPLICATED_FILES_COPY_NOT_ALLOWED] Duplicated files were committed in a concurrent transaction. SQLSTATE: 25000", state: "25000"},
			class: ClassConcurrentCopy, errClass: "COPY_INTO_DUPLICATED_FILES_COPY_NOT_ALLOWED", hintWords: "re-run"},
		{name: "concurrent append", err: execErr{msg: "[DELTA_CONCURRENT_APPEND] ConcurrentAppendException: Files were added to the root of the table by a concurrent update. SQLSTATE: 2D521", state: "2D521"},
			class: ClassConcurrentCopy, errClass: "DELTA_CONCURRENT_APPEND"},
		{name: "permission", err: execErr{msg: "[INSUFFICIENT_PERMISSIONS] Insufficient privileges: User does not have MODIFY on Table 'main.sales.orders'. SQLSTATE: 42501", state: "42501"},
			class: ClassPermissionDenied, errClass: "INSUFFICIENT_PERMISSIONS", hintWords: "MODIFY"},
		{name: "state from text", err: fmt.Errorf("wrapped: %w", errors.New("[PARSE_SYNTAX_ERROR] Syntax error at or near 'FORM'. SQLSTATE: 42601")),
			class: ClassOther, errClass: "PARSE_SYNTAX_ERROR", state: "42601"},
		{name: "bad token", err: fmt.Errorf("databricks: request error: error connecting: host=h port=443, httpPath=/p: databricks: request error: open session request error: Post \"https://h/p\": invalid access token: request error after 1 attempt(s): unexpected HTTP status 401 Unauthorized: %w", dbsqlerr.RequestError),
			class: ClassAuth, hintWords: "DATABRICKS_TOKEN"},
		{name: "unreachable", err: fmt.Errorf("databricks: request error: error connecting: dial tcp 127.0.0.1:1: connect: connection refused: %w", dbsqlerr.RequestError),
			class: ClassConnection, hintWords: "warehouse"},
		{name: "cancelled", err: fmt.Errorf("run: %w", context.DeadlineExceeded), class: ClassCanceled, hintWords: "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := Classify(tc.err)
			if se.Class != tc.class {
				t.Errorf("class %v, want %v (%v)", se.Class, tc.class, se)
			}
			if tc.errClass != "" && se.ErrorClass != tc.errClass {
				t.Errorf("error class %q, want %q", se.ErrorClass, tc.errClass)
			}
			if tc.state != "" && se.SQLState != tc.state {
				t.Errorf("sqlstate %q, want %q", se.SQLState, tc.state)
			}
			if !strings.Contains(se.Hint, tc.hintWords) {
				t.Errorf("hint %q lacks %q", se.Hint, tc.hintWords)
			}
			if !errors.Is(se, tc.err) && !errors.Is(se, errors.Unwrap(tc.err)) {
				t.Errorf("cause lost")
			}
			if strings.Contains(se.Error(), "unexpected operation state") {
				t.Errorf("driver wrapping kept in %q", se.Error())
			}
			// The error class and SQLSTATE are said once, in the header, not again in the message.
			if tc.errClass != "" && strings.Count(se.Error(), tc.errClass) != 1 {
				t.Errorf("error class %s repeated in %q", tc.errClass, se.Error())
			}
			if tc.state != "" && strings.Count(se.Error(), tc.state) != 1 {
				t.Errorf("SQLSTATE %s repeated in %q", tc.state, se.Error())
			}
		})
	}
	// The driver wraps a cancelled poll twice in the same words; the message says it once.
	se0 := Classify(fmt.Errorf("databricks: execution error: failed to execute query: failed to execute query: %w", context.Canceled))
	if strings.Count(se0.Error(), "failed to execute query") != 1 {
		t.Errorf("repeated wrapping in %q", se0.Error())
	}
	if Classify(nil) != nil {
		t.Errorf("Classify(nil) != nil")
	}
	se := Classify(execErr{msg: "[TABLE_OR_VIEW_NOT_FOUND] x", query: "01ef-query"})
	if Classify(fmt.Errorf("again: %w", se)) != se {
		t.Errorf("an *SQLError is not passed through")
	}
	if !strings.Contains(se.Error(), "01ef-query") {
		t.Errorf("query id missing from %q", se.Error())
	}
}

// TestRefusedBeforeCommit: only a refusal the warehouse gave while the statement ran, of a
// class that commits nothing, lets an attempt count as failed; everything else may have
// committed.
func TestRefusedBeforeCommit(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"schema mismatch", &SQLError{SQLState: "42KDG", ErrorClass: "COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE"}, true},
		{"not null", &SQLError{SQLState: "23502"}, true},
		{"cast", &SQLError{SQLState: "22018"}, true},
		{"unsupported", &SQLError{SQLState: "0A000"}, true},
		{"concurrent append", &SQLError{SQLState: "2D521", ErrorClass: "DELTA_CONCURRENT_APPEND"}, true},
		{"concurrent copy", &SQLError{SQLState: "25000"}, true},
		{"post-commit hook", &SQLError{SQLState: "2DKD0", ErrorClass: "DELTA_POST_COMMIT_HOOK_FAILED"}, false},
		{"post-commit class, wrong state", &SQLError{SQLState: "42000", ErrorClass: "DELTA_POST_COMMIT_HOOK_FAILED"}, false},
		{"internal error", &SQLError{SQLState: "XX000", ErrorClass: "INTERNAL_ERROR"}, false},
		{"no sqlstate", &SQLError{ErrorClass: "SOMETHING"}, false},
		{"no class at all", &SQLError{}, false},
		{"fetch of a finished statement", &SQLError{SQLState: "42000", Fetched: true}, false},
		{"connection", &SQLError{Class: ClassConnection, SQLState: "08000"}, false},
		{"cancelled", &SQLError{Class: ClassCanceled}, false},
		{"bare error", errors.New("EOF"), false},
		{"class without sqlstate", Classify(errors.New("[COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE] extra column")), true},
		{"overlap without sqlstate", Classify(errors.New("INVALID_PARAMETER_VALUE.LOCATION_OVERLAP: Input path url overlaps")), true},
		{"internal class without sqlstate", Classify(errors.New("[COPY_INTO_STATE_INTERNAL_ERROR] boom")), false},
		{"401 to the statement's request", Classify(fmt.Errorf("failed to execute query: execute statement request error: Post \"http://h/sql/1.0/warehouses/w\": request error after 1 attempt(s): unexpected HTTP status 401 Unauthorized: %w", dbsqlerr.RequestError)), true},
		{"403 to the session's request", Classify(fmt.Errorf("databricks: request error: open session request error: Post \"https://h/p\": request error after 1 attempt(s): unexpected HTTP status 403 Forbidden: %w", dbsqlerr.RequestError)), true},
		{"401 while polling a statement that was received", Classify(fmt.Errorf("failed to execute query: get operation status request error: Post \"http://h/p\": request error after 1 attempt(s): unexpected HTTP status 401 Unauthorized: %w", dbsqlerr.RequestError)), false},
		{"401 while fetching the result", Classify(fmt.Errorf("fetch results request error: unexpected HTTP status 401 Unauthorized: %w", dbsqlerr.RequestError)), false},
		{"401 to the statement's request, read after it ran", &SQLError{Class: ClassAuth, NotSent: true, Fetched: true}, false},
		{"invalid access token, no request named", Classify(errors.New("invalid access token")), false},
		{"503 to the statement's request", Classify(fmt.Errorf("execute statement request error: unexpected HTTP status 503 Service Unavailable: %w", dbsqlerr.RequestError)), false},
	} {
		if got := RefusedBeforeCommit(c.err); got != c.want {
			t.Errorf("%s: RefusedBeforeCommit = %v, want %v", c.name, got, c.want)
		}
	}
}
