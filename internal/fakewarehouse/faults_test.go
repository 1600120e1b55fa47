package fakewarehouse_test

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

	dbsqlerr "github.com/databricks/databricks-sql-go/errors"

	"github.com/zbrecover/zbrecover/internal/fakewarehouse"
)

func loadFixture(t *testing.T, srv *fakewarehouse.Server) (dir string) {
	t.Helper()
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	dir = filepath.Join(t.TempDir(), "src")
	writeParquet(t, filepath.Join(dir, "a.parquet"), eventsSchema, eventRows(1, 3))
	writeParquet(t, filepath.Join(dir, "b.parquet"), eventsSchema, eventRows(4, 2))
	return dir
}

func TestFaultFailsNthMatchingStatement(t *testing.T) {
	srv := fakewarehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	f := srv.Inject(fakewarehouse.Fault{
		Match: `^\s*COPY INTO`,
		Skip:  1, // the second COPY INTO fails
		Error: &fakewarehouse.SQLError{Class: "COPY_INTO_STATE_INTERNAL_ERROR.MULTIPLE_STATES_NOT_ALLOWED", SQLState: "55019", Message: "Injected."},
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
	srv := fakewarehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	srv.Inject(fakewarehouse.Fault{Match: "COPY INTO", DropResponse: true})
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
	srv := fakewarehouse.New(t)
	db := open(t, srv) // default retries: 429/503 are retried, honouring Retry-After
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "CREATE TABLE t (id INT)")
	srv.Inject(fakewarehouse.Fault{Match: "INSERT", HTTPStatus: 429, RetryAfter: "0", Times: 2})
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
	srv.Inject(fakewarehouse.Fault{Method: "OpenSession", HTTPStatus: 503, RetryAfter: "0"})
	db2 := open(t, srv)
	if err := db2.PingContext(ctx(t)); err != nil {
		t.Fatalf("ping after a 503: %v", err)
	}
}

func TestFaultHTTPStatusWithoutRetries(t *testing.T) {
	srv := fakewarehouse.New(t)
	db := connect(t, srv) // retries off
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	srv.Inject(fakewarehouse.Fault{HTTPStatus: 429, RetryAfter: "7"})
	_, err := db.ExecContext(ctx(t), "SELECT 1")
	if err == nil {
		t.Fatal("429 did not fail the statement")
	}
	if !strings.Contains(err.Error(), "429") {
		t.Errorf("error = %v", err)
	}
	srv.Inject(fakewarehouse.Fault{HTTPStatus: 503})
	_, err = db.ExecContext(ctx(t), "SELECT 1")
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("503: %v", err)
	}
}

func TestFaultSlowStatementIsPolled(t *testing.T) {
	srv := fakewarehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	srv.Inject(fakewarehouse.Fault{Match: "COPY INTO", Delay: 200 * time.Millisecond})
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
	srv := fakewarehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	srv.Inject(fakewarehouse.Fault{Match: "COPY INTO", Delay: time.Minute})
	c, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	_, err := db.QueryContext(c, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET")
	if err == nil {
		t.Fatal("canceled COPY INTO succeeded")
	}
	deadline := time.Now().Add(5 * time.Second)
	state := ""
	for time.Now().Before(deadline) {
		for _, s := range srv.Statements() {
			if strings.HasPrefix(s.SQL, "COPY INTO") {
				state = s.State
			}
		}
		if state == "CANCELED" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if state != "CANCELED" {
		t.Errorf("statement state = %s, want CANCELED", state)
	}
	if srv.CountRequests("CancelOperation") != 1 {
		t.Errorf("CancelOperation requests = %d", srv.CountRequests("CancelOperation"))
	}
	if n := count(t, db, "events"); n != 0 {
		t.Errorf("a canceled COPY INTO loaded %d rows", n)
	}
}

func TestSessionExpiry(t *testing.T) {
	srv := fakewarehouse.New(t)
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
	srv := fakewarehouse.New(t, fakewarehouse.Options{Logf: func(format string, args ...any) {
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
	for _, mode := range []fakewarehouse.CopyConflict{fakewarehouse.ConflictConcurrentAppend, fakewarehouse.ConflictConcurrentCopyInto, fakewarehouse.ConflictNone} {
		t.Run(mode.String(), func(t *testing.T) { testConcurrentCopyInto(t, mode) })
	}
}

func testConcurrentCopyInto(t *testing.T, mode fakewarehouse.CopyConflict) {
	srv := fakewarehouse.New(t, fakewarehouse.Options{Unknowns: fakewarehouse.Unknowns{CopyConflict: mode}})
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
	srv.Inject(fakewarehouse.Fault{Match: "COPY INTO", Delay: 50 * time.Millisecond})
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
			if mode == fakewarehouse.ConflictNone {
				t.Fatalf("session %d: %v", i, errs[i])
			}
			state, class := "2D521", "DELTA_CONCURRENT_APPEND"
			if mode == fakewarehouse.ConflictConcurrentCopyInto {
				state, class = "25000", "TRANSACTION_CONCURRENT_COPY_INTO"
			}
			execError(t, errs[i], state, class)
			conflicts++
		}
		inserted += results[i].inserted
	}
	if mode != fakewarehouse.ConflictNone && conflicts != sessions-1 {
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
