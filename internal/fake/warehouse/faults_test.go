package warehouse_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dbsql "github.com/databricks/databricks-sql-go"
	dbsqlerr "github.com/databricks/databricks-sql-go/errors"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

func loadFixture(t *testing.T, srv *warehouse.Server) (dir string) {
	t.Helper()
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	dir = filepath.Join(t.TempDir(), "src")
	writeParquet(t, filepath.Join(dir, "a.parquet"), eventsSchema, eventRows(1, 3))
	writeParquet(t, filepath.Join(dir, "b.parquet"), eventsSchema, eventRows(4, 2))
	return dir
}

func TestFaultFailsNthMatchingStatement(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	f := srv.Inject(warehouse.Fault{
		Match: `^\s*COPY INTO`,
		Skip:  1, // the second COPY INTO fails
		Error: &warehouse.SQLError{Class: "COPY_INTO_STATE_INTERNAL_ERROR.MULTIPLE_STATES_NOT_ALLOWED", SQLState: "55019", Message: "Injected."},
	})
	if _, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('a.parquet')"); err != nil {
		t.Fatalf("first COPY INTO: %v", err)
	}
	_, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('b.parquet')")
	execError(t, err, "55019", "COPY_INTO_STATE_INTERNAL_ERROR")
	if n := count(t, db, "events"); n != 3 {
		t.Errorf("rows after the failed statement = %d, want 3", n)
	}
	// The fault fires once; the retry succeeds.
	if got, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('b.parquet')"); err != nil || got.inserted != 2 {
		t.Fatalf("retry: %+v %v", got, err)
	}
	if f.Fired() != 1 {
		t.Errorf("fault fired %d times", f.Fired())
	}
	var faulted []string
	for _, s := range srv.Statements() {
		if s.Fault != "" {
			faulted = append(faulted, s.State+" "+s.SQLState)
		}
	}
	if strings.Join(faulted, ",") != "ERROR 55019" {
		t.Errorf("statement log faults = %v", faulted)
	}
}

// TestFaultLostAcknowledgement: the warehouse commits a COPY INTO, then the reply is lost.
// The client sees a transport error; the rows are in the table; a re-run loads nothing; the
// history shows the commit.
func TestFaultLostAcknowledgement(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	srv.Inject(warehouse.Fault{Match: "COPY INTO", DropResponse: true})
	_, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	if err == nil {
		t.Fatal("COPY INTO with a dropped reply succeeded")
	}
	// The driver reports a transport failure (a request error, no SQLSTATE), not a failed
	// statement: the client cannot tell whether the commit happened.
	var re dbsqlerr.DBRequestError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "EOF") {
		t.Errorf("error is not a request error: %T %v", err, err)
	}
	var ee dbsqlerr.DBExecutionError
	if errors.As(err, &ee) && ee.SqlState() != "" {
		t.Errorf("a lost reply carries SQLSTATE %q", ee.SqlState())
	}
	if n := count(t, db, "events"); n != 5 {
		t.Fatalf("rows after the lost reply = %d, want 5 (the commit happened)", n)
	}
	got, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	if err != nil || got != (copyCounts{}) {
		t.Fatalf("re-run = %+v %v, want 0/0/0", got, err)
	}
	h := describeHistory(t, db, "events")
	if h[0].operation != "COPY INTO" || h[0].metrics["numOutputRows"] != "5" {
		t.Errorf("latest commit = %s %v", h[0].operation, h[0].metrics)
	}
	dropped := 0
	for _, r := range srv.Requests() {
		if r.Method == "ExecuteStatement" && r.Status == 0 {
			dropped++
		}
	}
	if dropped != 1 {
		t.Errorf("dropped replies logged = %d", dropped)
	}
}

func TestFaultHTTPStatusRetried(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv) // default retries: 429/503 are retried, honouring Retry-After
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "CREATE TABLE t (id INT)")
	srv.Inject(warehouse.Fault{Match: "INSERT", HTTPStatus: 429, RetryAfter: "0", Times: 2})
	before := len(srv.Requests())
	mustExec(t, db, "INSERT INTO t VALUES (1)")
	var statuses []string
	for _, r := range srv.Requests()[before:] {
		statuses = append(statuses, r.Method+":"+itoa(r.Status))
	}
	if got := strings.Join(statuses, ","); got != "ExecuteStatement:429,ExecuteStatement:429,ExecuteStatement:200" {
		t.Errorf("requests = %s", got)
	}
	if n := count(t, db, "t"); n != 1 {
		t.Errorf("rows = %d: a rejected request must not run", n)
	}

	// 503 on OpenSession: the driver retries the connect.
	srv.Inject(warehouse.Fault{Method: "OpenSession", HTTPStatus: 503, RetryAfter: "0"})
	db2 := open(t, srv)
	if err := db2.PingContext(ctx(t)); err != nil {
		t.Fatalf("ping after a 503: %v", err)
	}
}

func TestFaultHTTPStatusWithoutRetries(t *testing.T) {
	srv := warehouse.New(t)
	db := connect(t, srv) // retries off
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	srv.Inject(warehouse.Fault{HTTPStatus: 429, RetryAfter: "7"})
	_, err := db.ExecContext(ctx(t), "SELECT 1")
	if err == nil {
		t.Fatal("429 did not fail the statement")
	}
	if !strings.Contains(err.Error(), "429") {
		t.Errorf("error = %v", err)
	}
	srv.Inject(warehouse.Fault{HTTPStatus: 503})
	_, err = db.ExecContext(ctx(t), "SELECT 1")
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("503: %v", err)
	}
}

func TestFaultSlowStatementIsPolled(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	srv.Inject(warehouse.Fault{Match: "COPY INTO", Delay: 200 * time.Millisecond})
	before := len(srv.Requests())
	got, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 5 {
		t.Fatalf("slow COPY INTO: %+v %v", got, err)
	}
	ms := methods(srv, before)
	if ms[0] != "ExecuteStatement" || ms[1] != "GetOperationStatus" || !contains(ms, "FetchResults") || ms[len(ms)-1] != "CloseOperation" {
		t.Errorf("requests = %v", ms)
	}
}

func TestFaultSlowStatementCanceled(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	srv.Inject(warehouse.Fault{Match: "COPY INTO", Delay: time.Minute})
	c, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	_, err := db.QueryContext(c, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	if err == nil {
		t.Fatal("canceled COPY INTO succeeded")
	}
	waitFor(t, "the COPY INTO to be CANCELED", func() bool {
		state := ""
		for _, s := range srv.Statements() {
			if strings.HasPrefix(s.SQL, "COPY INTO") {
				state = s.State
			}
		}
		return state == "CANCELED"
	})
	if srv.CountRequests("CancelOperation") != 1 {
		t.Errorf("CancelOperation requests = %d", srv.CountRequests("CancelOperation"))
	}
	if n := count(t, db, "events"); n != 0 {
		t.Errorf("a canceled COPY INTO loaded %d rows", n)
	}
}

func TestSessionExpiry(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	conn, err := db.Conn(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := srv.ExpireSessions(); n != 1 {
		t.Fatalf("expired %d sessions", n)
	}
	// On a pinned connection the driver reports a bad connection…
	_, err = conn.QueryContext(ctx(t), "SELECT 1")
	if !errors.Is(err, driver.ErrBadConn) || !strings.Contains(err.Error(), "Invalid SessionHandle") {
		t.Errorf("pinned connection error = %v", err)
	}
	conn.Close()
	// … and through the pool database/sql retries on a new session.
	var one int
	if err := db.QueryRowContext(ctx(t), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query after expiry: %v", err)
	}
	if n := srv.CountRequests("OpenSession"); n != 2 {
		t.Errorf("OpenSession requests = %d, want 2", n)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func TestLogRedactsInlineCredentials(t *testing.T) {
	var lines []string
	var mu sync.Mutex
	srv := warehouse.New(t, warehouse.Options{Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf(format, args...))
	}})
	dir := loadFixture(t, srv)
	db := open(t, srv)
	got, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' WITH (CREDENTIAL (AWS_ACCESS_KEY = 'AKIDEXAMPLE', "+
		"AWS_SECRET_KEY = 'very-secret-key', AWS_SESSION_TOKEN = 'session-token-value')) FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 5 {
		t.Fatalf("%+v %v", got, err)
	}
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(lines, "\n")
	if !strings.Contains(all, "COPY INTO events") {
		t.Fatalf("no statement was logged: %q", all)
	}
	for _, secret := range []string{"AKIDEXAMPLE", "very-secret-key", "session-token-value"} {
		if strings.Contains(all, secret) {
			t.Errorf("log line leaks %q: %s", secret, all)
		}
	}
}

// TestConcurrentCopyIntoLoadsEachFileOnce: sessions running the same COPY INTO on one table
// at once load every file exactly once; the others see the files as loaded (0/0/0), and the
// history holds one COPY INTO commit whose metrics match the rows in the table.
// TestConcurrentCopyIntoLoadsEachFileOnce: COPY INTO statements from several sessions, in
// flight at once on the same files, load each file once. Which of them fail is unknown: by
// default the ones that lose the race get a transaction conflict; with ConflictNone they
// are serialised and load nothing.
func TestConcurrentCopyIntoLoadsEachFileOnce(t *testing.T) {
	for _, mode := range []warehouse.CopyConflict{warehouse.ConflictConcurrentAppend, warehouse.ConflictConcurrentCopyInto, warehouse.ConflictNone} {
		t.Run(mode.String(), func(t *testing.T) { testConcurrentCopyInto(t, mode) })
	}
}

func testConcurrentCopyInto(t *testing.T, mode warehouse.CopyConflict) {
	srv := warehouse.New(t, warehouse.Options{Unknowns: warehouse.Unknowns{CopyConflict: mode}})
	dir := loadFixture(t, srv) // 5 rows in 2 files
	const sessions = 4
	dbs := make([]*sql.DB, sessions)
	for i := range dbs {
		dbs[i] = open(t, srv)
		if err := dbs[i].PingContext(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	// One slow statement holds the others behind it while they are all in flight.
	srv.Inject(warehouse.Fault{Match: "COPY INTO", Delay: 50 * time.Millisecond})
	stmt := "COPY INTO events FROM '" + dir + "' FILEFORMAT = PARQUET COPY_OPTIONS ('mergeSchema' = 'false')"
	var wg sync.WaitGroup
	results := make([]copyCounts, sessions)
	errs := make([]error, sessions)
	for i := range dbs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i], errs[i] = copyInto(t, dbs[i], stmt)
		}(i)
	}
	wg.Wait()
	var inserted int64
	conflicts := 0
	for i := range results {
		if errs[i] != nil {
			if mode == warehouse.ConflictNone {
				t.Fatalf("session %d: %v", i, errs[i])
			}
			state, class := "2D521", "DELTA_CONCURRENT_APPEND"
			if mode == warehouse.ConflictConcurrentCopyInto {
				state, class = "25000", "TRANSACTION_CONCURRENT_COPY_INTO"
			}
			execError(t, errs[i], state, class)
			conflicts++
		}
		inserted += results[i].inserted
	}
	if mode != warehouse.ConflictNone && conflicts != sessions-1 {
		t.Errorf("%d sessions got a conflict, want %d", conflicts, sessions-1)
	}
	if inserted != 5 {
		t.Errorf("sessions inserted %d rows in total (%+v), want 5", inserted, results)
	}
	if n := count(t, dbs[0], "events"); n != 5 {
		t.Errorf("table has %d rows, want 5", n)
	}
	var copies []historyRow
	for _, h := range describeHistory(t, dbs[0], "events") {
		if h.operation == "COPY INTO" {
			copies = append(copies, h)
		}
	}
	// numFiles counts the data files written (one), not the two source files.
	if len(copies) != 1 || copies[0].metrics["numOutputRows"] != "5" || copies[0].metrics["numFiles"] != "1" {
		t.Errorf("COPY INTO commits = %+v, want one with numOutputRows 5 and numFiles 1", copies)
	}
}

// connectRetrying opens a handle whose driver retries quickly (10–100 ms), so a test sees
// retried requests succeed without the default one-second waits.
func connectRetrying(t *testing.T, srv *warehouse.Server) *sql.DB {
	t.Helper()
	return connect(t, srv, dbsql.WithRetries(4, 10*time.Millisecond, 100*time.Millisecond))
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// statementsLike returns the statement log entries whose SQL starts with prefix.
func statementsLike(srv *warehouse.Server, prefix string) []warehouse.Statement {
	var out []warehouse.Statement
	for _, s := range srv.Statements() {
		if strings.HasPrefix(s.SQL, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// TestFaultCommitThenError: the statement commits, then the answer is an error (Delta's
// post-commit hook failure); the rows and the version are there, and a re-run loads nothing.
func TestFaultCommitThenError(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	f := srv.Inject(warehouse.Fault{Match: "^COPY INTO", CommitThenError: warehouse.PostCommitHookFailed()})
	_, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	msg := execError(t, err, "2DKD0", "DELTA_POST_COMMIT_HOOK_FAILED")
	if !strings.Contains(msg, "Committing to the Delta table version 1 succeeded but error while executing post-commit hook") {
		t.Errorf("error = %q", msg)
	}
	if n := count(t, db, "events"); n != 5 {
		t.Errorf("rows after the failed answer = %d, want 5 (the commit happened)", n)
	}
	st := statementsLike(srv, "COPY INTO")
	if len(st) != 1 || st[0].State != "ERROR" || len(st[0].Commits) != 1 || st[0].Commits[0] != (warehouse.CommitRef{Table: "main.default.events", Version: 1}) {
		t.Errorf("statement log = %+v", st)
	}
	// The fault fired once: the re-run answers normally, with nothing left to load.
	got, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	if err != nil || got != (copyCounts{}) || f.Fired() != 1 {
		t.Errorf("re-run = %+v %v (fired %d), want 0/0/0", got, err, f.Fired())
	}
}

// TestFaultCommitThenBadConn: the statement commits and the answer is "Invalid
// SessionHandle": database/sql re-executes it on a new session, where the COPY INTO loads
// nothing, so the client sees 0 rows for a statement that committed; on a pinned connection
// the client sees driver.ErrBadConn.
func TestFaultCommitThenBadConn(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	srv.Inject(warehouse.Fault{Match: "^COPY INTO", CommitThenBadConn: true})
	got, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('a.parquet')")
	if err != nil || got != (copyCounts{}) {
		t.Fatalf("COPY INTO through the pool = %+v %v, want the re-execution's 0/0/0", got, err)
	}
	st := statementsLike(srv, "COPY INTO")
	if len(st) != 2 || st[0].State != "FINISHED" || st[0].Rows != 3 || len(st[0].Commits) != 1 ||
		st[1].State != "FINISHED" || st[1].Rows != 0 || len(st[1].Commits) != 0 || st[0].SessionID == st[1].SessionID {
		t.Errorf("statement log = %+v, want a committing run and a re-run on another session", st)
	}
	if n := count(t, db, "events"); n != 3 {
		t.Errorf("rows = %d, want 3", n)
	}

	srv.Inject(warehouse.Fault{Match: "^COPY INTO", CommitThenBadConn: true})
	c := pinned(t, db)
	rows, err := c.QueryContext(ctx(t), "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('b.parquet')")
	if err == nil {
		rows.Close()
		t.Fatal("pinned COPY INTO succeeded")
	}
	if !errors.Is(err, driver.ErrBadConn) || !strings.Contains(err.Error(), "Invalid SessionHandle") {
		t.Errorf("pinned error = %v, want driver.ErrBadConn", err)
	}
	if n := count(t, db, "events"); n != 5 {
		t.Errorf("rows = %d, want 5: the pinned statement committed", n)
	}
}

// TestFaultDropRequest: the connection is cut before the statement reaches the warehouse,
// so nothing runs; DropResponse, by contrast, runs it and then cuts the connection.
func TestFaultDropRequest(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := connect(t, srv)
	srv.Inject(warehouse.Fault{Match: "^COPY INTO", DropRequest: true})
	_, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	var re dbsqlerr.DBRequestError
	if !errors.As(err, &re) {
		t.Fatalf("error = %T %v, want a request error", err, err)
	}
	if n := count(t, db, "events"); n != 0 {
		t.Errorf("rows after a dropped request = %d, want 0", n)
	}
	if st := statementsLike(srv, "COPY INTO"); len(st) != 1 || st[0].State != "DROPPED" || st[0].Fault != "drop request" {
		t.Errorf("statement log = %+v", st)
	}
	for _, h := range describeHistory(t, db, "events") {
		if h.operation == "COPY INTO" {
			t.Errorf("a dropped request committed version %d", h.version)
		}
	}
	srv.Inject(warehouse.Fault{Match: "^COPY INTO", DropResponse: true})
	if _, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET"); err == nil {
		t.Fatal("dropped response succeeded")
	}
	if n := count(t, db, "events"); n != 5 {
		t.Errorf("rows after a dropped response = %d, want 5", n)
	}
}

// TestFaultPercentIsDeterministic: a fault on a share of the matches fires on the same
// matches for the same seed, on roughly that share, and on other matches for another seed.
func TestFaultPercentIsDeterministic(t *testing.T) {
	pattern := func(seed uint64) string {
		srv := warehouse.New(t)
		db := connect(t, srv)
		srv.Inject(warehouse.Fault{Match: `^SELECT 1$`, Times: -1, Percent: 30, Seed: seed,
			Error: &warehouse.SQLError{Class: "INTERNAL_ERROR", SQLState: "XX000", Message: "Injected."}})
		var b strings.Builder
		for i := 0; i < 60; i++ {
			if _, err := db.ExecContext(ctx(t), "SELECT 1"); err != nil {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, b, other := pattern(7), pattern(7), pattern(8)
	if a != b {
		t.Errorf("same seed, different matches:\n%s\n%s", a, b)
	}
	if n := strings.Count(a, "x"); n < 8 || n > 30 {
		t.Errorf("30%% of 60 fired %d times: %s", n, a)
	}
	if a == other {
		t.Errorf("seeds 7 and 8 fired on the same matches: %s", a)
	}
}

// TestFaultOnPolls: while a statement is polled, a lost poll (HTTP 503 or 429, a request or
// a response dropped) does not stop it: it completes on the warehouse, and with retries the
// client gets its result; without retries the client gets an error for a statement that
// completed.
func TestFaultOnPolls(t *testing.T) {
	faults := map[string]warehouse.Fault{
		"503":           {HTTPStatus: 503, RetryAfter: "0"},
		"429":           {HTTPStatus: 429, RetryAfter: "0"},
		"drop_request":  {DropRequest: true},
		"drop_response": {DropResponse: true},
	}
	for name, f := range faults {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := warehouse.New(t)
			dir := loadFixture(t, srv)
			db := connectRetrying(t, srv)
			srv.Inject(warehouse.Fault{Match: "^COPY INTO", Delay: 50 * time.Millisecond})
			f.Method = "GetOperationStatus"
			poll := srv.Inject(f)
			got, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
			if err != nil || got.inserted != 5 {
				t.Fatalf("COPY INTO = %+v %v", got, err)
			}
			if poll.Fired() != 1 || srv.CountRequests("GetOperationStatus") < 2 {
				t.Errorf("poll fault fired %d times, %d polls", poll.Fired(), srv.CountRequests("GetOperationStatus"))
			}
		})
	}
	t.Run("503 without retries", func(t *testing.T) {
		t.Parallel()
		srv := warehouse.New(t)
		dir := loadFixture(t, srv)
		db := connect(t, srv)
		srv.Inject(warehouse.Fault{Match: "^COPY INTO", Delay: 50 * time.Millisecond})
		srv.Inject(warehouse.Fault{Method: "GetOperationStatus", HTTPStatus: 503, Times: -1})
		if _, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET"); err == nil || !strings.Contains(err.Error(), "503") {
			t.Fatalf("COPY INTO with every poll refused = %v, want the 503", err)
		}
		waitFor(t, "the COPY INTO to finish", func() bool {
			st := statementsLike(srv, "COPY INTO")
			return len(st) == 1 && st[0].State == "FINISHED"
		})
		srv.ClearFaults()
		if n := count(t, db, "events"); n != 5 {
			t.Errorf("rows = %d, want 5: the statement completed on the warehouse", n)
		}
	})
}
