package warehouse_test

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dbsql "github.com/databricks/databricks-sql-go"
	dbsqlerr "github.com/databricks/databricks-sql-go/errors"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// methods returns the Thrift methods of the requests received since the given index.
func methods(srv *warehouse.Server, since int) []string {
	var out []string
	for _, r := range srv.Requests()[since:] {
		out = append(out, r.Method)
	}
	return out
}

// TestOneRoundTripPerStatement checks that direct results make every statement one HTTP
// request: no polling, no metadata or fetch calls, no CloseOperation.
func TestOneRoundTripPerStatement(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "src")
	writeParquet(t, filepath.Join(dir, "a.parquet"), eventsSchema, eventRows(1, 3))

	before := len(srv.Requests())
	start := time.Now()
	mustExec(t, db, eventsDDL)                                                                         // DDL with ExecContext
	if _, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET"); err != nil { // QueryContext
		t.Fatal(err)
	}
	_ = count(t, db, "events")                                // QueryRowContext
	_ = describeJSON(t, db, "events")                         // QueryContext
	_, err := db.ExecContext(ctx(t), "SELECT * FROM missing") // a failing statement
	execError(t, err, "42P01", "TABLE_OR_VIEW_NOT_FOUND")
	elapsed := time.Since(start)

	got := methods(srv, before)
	if len(got) != 5 {
		t.Fatalf("5 statements cost %d requests: %v", len(got), got)
	}
	for _, m := range got {
		if m != "ExecuteStatement" {
			t.Errorf("unexpected request %s in %v", m, got)
		}
	}
	// Without direct results the driver would wait its fixed 1 s poll interval per statement.
	if elapsed > 4*time.Second {
		t.Logf("note: 5 statements took %v", elapsed)
	}
}

func TestPagingPastMaxRows(t *testing.T) {
	srv := warehouse.New(t)
	db := connect(t, srv, dbsql.WithMaxRows(2))
	mustExec(t, db, "CREATE TABLE t (id INT, s STRING)", "INSERT INTO t VALUES (1,'a'),(2,'b'),(3,'c'),(4,'d'),(5,NULL)")
	before := len(srv.Requests())
	rows, err := db.QueryContext(ctx(t), "SELECT id, s FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int32
	var nulls int
	for rows.Next() {
		var id int32
		var s sql.NullString
		if err := rows.Scan(&id, &s); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		if !s.Valid {
			nulls++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(ids) != 5 || ids[0] != 1 || ids[4] != 5 || nulls != 1 {
		t.Errorf("rows = %v (nulls %d)", ids, nulls)
	}
	got := strings.Join(methods(srv, before), ",")
	if got != "ExecuteStatement,FetchResults,FetchResults,CloseOperation" {
		t.Errorf("requests = %s", got)
	}
}

func TestWrongTokenIs401(t *testing.T) {
	srv := warehouse.New(t, warehouse.Options{Token: "right-token"})
	db := connect(t, srv, dbsql.WithAccessToken("wrong-token"))
	err := db.PingContext(ctx(t))
	if err == nil {
		t.Fatal("ping with a wrong token succeeded")
	}
	var re dbsqlerr.DBRequestError
	if !errors.As(err, &re) {
		t.Errorf("error is not a DBRequestError: %T", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "401") || !strings.Contains(msg, "Invalid access token") {
		t.Errorf("error = %q, want HTTP 401 with the reason", msg)
	}
	if strings.Contains(msg, "wrong-token") || strings.Contains(msg, "right-token") {
		t.Errorf("error leaks a token: %q", msg)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 || reqs[0].Status != 401 {
		t.Errorf("requests = %+v", reqs)
	}
	if srv.OpenSessions() != 0 {
		t.Error("a session was opened with a wrong token")
	}
}

func TestFeatureFlagStub(t *testing.T) {
	srv := warehouse.New(t)
	// Without enableTelemetry=false the driver asks for feature flags on port 443 of the host;
	// routing its transport to the fake answers that request.
	tr := &redirect{to: srv.URL()}
	db := connect(t, srv, dbsql.WithTransport(tr))
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a feature-flag request to reach the stub", func() bool {
		for _, r := range srv.Requests() {
			if strings.HasPrefix(r.Method, "GET /api/2.0/connector-service/feature-flags/GOLANG/") && r.Status == 200 {
				return true
			}
		}
		return false
	})
}

func TestParametersAndTypes(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	var n int64
	var s string
	if err := db.QueryRowContext(ctx(t), "SELECT ? + 1, ?", int64(41), "x").Scan(&n, &s); err != nil || n != 42 || s != "x" {
		t.Fatalf("positional parameters: %d %q %v", n, s, err)
	}
	if err := db.QueryRowContext(ctx(t), "SELECT :a * 2", sql.Named("a", 21)).Scan(&n); err != nil || n != 42 {
		t.Fatalf("named parameter: %d %v", n, err)
	}
	var decp string
	if err := db.QueryRowContext(ctx(t), "SELECT CAST(? AS STRING)", dbsql.Parameter{Type: dbsql.SqlDecimal, Value: "-123.450"}).Scan(&decp); err != nil || decp != "-123.450" {
		t.Fatalf("decimal parameter: %q %v", decp, err)
	}

	mustExec(t, db, "CREATE TABLE types (b BOOLEAN, y TINYINT, sm SMALLINT, i INT, l BIGINT, f FLOAT, d DOUBLE, "+
		"dec DECIMAL(38,10), s STRING, bin BINARY, dt DATE, ts TIMESTAMP, ntz TIMESTAMP_NTZ, "+
		"arr ARRAY<INT>, m MAP<STRING, DOUBLE>, st STRUCT<a: INT, b: STRUCT<c: STRING>>)",
		"INSERT INTO types VALUES (true, 1, 2, 3, 9007199254740993, 1.5, 2.25, 12345678901234567890.0123456789, 'héllo', X'00FF', "+
			"DATE'2024-02-29', TIMESTAMP'2024-02-29 23:59:59.123456', TIMESTAMP_NTZ'2024-02-29 23:59:59', "+
			"array(1, NULL, 3), map('k', 1.5), named_struct('a', 7, 'b', named_struct('c', 'z')))",
		"INSERT INTO types (s) VALUES (NULL)")
	rows, err := db.QueryContext(ctx(t), "SELECT * FROM types WHERE b")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cts, _ := rows.ColumnTypes()
	var names []string
	for _, ct := range cts {
		names = append(names, ct.DatabaseTypeName())
	}
	if got := strings.Join(names, ","); got != "BOOLEAN,TINYINT,SMALLINT,INT,BIGINT,FLOAT,DOUBLE,DECIMAL,STRING,BINARY,DATE,TIMESTAMP,TIMESTAMP,ARRAY,MAP,STRUCT" {
		t.Errorf("column types = %s", got)
	}
	rows.Next()
	var (
		b        bool
		y        int8
		sm       int16
		i        int32
		l        int64
		f        float32
		d        float64
		dec, str string
		bin      []byte
		dt, ts   time.Time
		ntz      time.Time
		arr, m   string
		st       string
	)
	if err := rows.Scan(&b, &y, &sm, &i, &l, &f, &d, &dec, &str, &bin, &dt, &ts, &ntz, &arr, &m, &st); err != nil {
		t.Fatal(err)
	}
	if !b || y != 1 || sm != 2 || i != 3 || l != 9007199254740993 || f != 1.5 || math.Abs(d-2.25) > 0 {
		t.Errorf("numbers = %v %d %d %d %d %v %v", b, y, sm, i, l, f, d)
	}
	if dec != "12345678901234567890.0123456789" || str != "héllo" || string(bin) != "\x00\xff" {
		t.Errorf("decimal/string/binary = %q %q %x", dec, str, bin)
	}
	if !dt.Equal(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)) || !ts.Equal(time.Date(2024, 2, 29, 23, 59, 59, 123456000, time.UTC)) ||
		!ntz.Equal(time.Date(2024, 2, 29, 23, 59, 59, 0, time.UTC)) {
		t.Errorf("dates = %v %v %v", dt, ts, ntz)
	}
	if arr != "[1,null,3]" || m != `{"k":1.5}` || st != `{"a":7,"b":{"c":"z"}}` {
		t.Errorf("nested = %s %s %s", arr, m, st)
	}
	var nulls sql.NullInt64
	if err := db.QueryRowContext(ctx(t), "SELECT l FROM types WHERE s IS NULL").Scan(&nulls); err != nil || nulls.Valid {
		t.Errorf("NULL bigint = %v %v", nulls, err)
	}
}

// redirect sends every request to the fake server, whatever host and port it names.
type redirect struct{ to string }

func (r *redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	u, _ := url.Parse(r.to)
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = u.Scheme, u.Host, u.Host
	return http.DefaultTransport.RoundTrip(out)
}

func TestConcurrentSessions(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (worker INT, n INT)")
	const workers, each = 6, 10
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func(w int) {
			for i := 0; i < each; i++ {
				if _, err := db.ExecContext(ctx(t), "INSERT INTO t VALUES (?, ?)", w, i); err != nil {
					errs <- err
					return
				}
				var n int64
				if err := db.QueryRowContext(ctx(t), "SELECT count(*) FROM t WHERE worker = ?", w).Scan(&n); err != nil || n != int64(i+1) {
					errs <- fmt.Errorf("worker %d sees %d rows after %d inserts: %v", w, n, i+1, err)
					return
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < workers; w++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := count(t, db, "t"); n != workers*each {
		t.Errorf("rows = %d, want %d", n, workers*each)
	}
	if len(describeHistory(t, db, "t")) != workers*each+1 {
		t.Error("every INSERT is one version")
	}
}
