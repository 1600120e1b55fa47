//go:build cgo

package databricks

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/schemadiff"
)

// fakeWarehouseClient starts a fake SQL warehouse and a Client pointed at it through the
// environment (DATABRICKS_HOST, DATABRICKS_TOKEN, DATABRICKS_WAREHOUSE_ID), logging at debug
// level into the returned buffer.
func fakeWarehouseClient(t *testing.T, opts warehouse.Options) (*warehouse.Server, *Client, *bytes.Buffer) {
	t.Helper()
	cleanEnv(t)
	opts.Token = goodToken
	opts.WarehouseID = "wh7"
	srv := warehouse.New(t, opts)
	t.Setenv("DATABRICKS_HOST", srv.URL())
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	t.Setenv("DATABRICKS_WAREHOUSE_ID", "wh7")
	var logBuf bytes.Buffer
	c, err := NewClient(context.Background(), Options{Version: "0.9.0",
		Log: slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, &logBuf
}

func TestWarehouseStatements(t *testing.T) {
	srv, c, logBuf := fakeWarehouseClient(t, warehouse.Options{})
	ctx := context.Background()
	w, err := c.Warehouse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	if _, err := w.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS main.sales"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec(ctx, "CREATE TABLE main.sales.orders (id BIGINT NOT NULL, customer STRING, amount DECIMAL(12,2), "+
		"at TIMESTAMP_NTZ, tags ARRAY<STRING>, addr STRUCT<city: STRING, zip: INT>) USING DELTA"); err != nil {
		t.Fatal(err)
	}

	// COPY INTO returns its counters as a result set: read through QueryAll.
	dir := t.TempDir()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	if err := os.WriteFile(filepath.Join(dir, "part-0.parquet"),
		pqgen.Must(pqgen.Bytes(sc, `[{"id":1,"customer":"ada"},{"id":2,"customer":null}]`, pqgen.Options{})), 0o644); err != nil {
		t.Fatal(err)
	}
	copySQL := "COPY INTO main.sales.orders FROM '" + filepath.ToSlash(dir) + "' FILEFORMAT = PARQUET COPY_OPTIONS ('mergeSchema' = 'false')"
	res, err := w.QueryAll(ctx, copySQL)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || strings.Join(res.Columns, ",") != "num_affected_rows,num_inserted_rows,num_skipped_corrupt_files" {
		t.Fatalf("COPY INTO result %+v", res)
	}
	if n, ok := res.Rows[0][1].(int64); !ok || n != 2 {
		t.Errorf("num_inserted_rows = %#v, want 2", res.Rows[0][1])
	}
	res, err = w.QueryAll(ctx, copySQL)
	if err != nil || res.Rows[0][1].(int64) != 0 {
		t.Errorf("re-run: %+v, %v (COPY INTO skips loaded files)", res, err)
	}
	rows, err := w.Query(ctx, "SELECT count(*) FROM main.sales.orders WHERE customer IS NULL")
	if err != nil {
		t.Fatal(err)
	}
	var nulls int64
	for rows.Next() {
		if err := rows.Scan(&nulls); err != nil {
			t.Fatal(err)
		}
	}
	rows.Close()
	if nulls != 1 {
		t.Errorf("null customers %d", nulls)
	}

	// DESCRIBE TABLE EXTENDED … AS JSON gives the table's schema.
	d, err := w.DescribeTable(ctx, "`main`.sales.orders")
	if err != nil {
		t.Fatal(err)
	}
	want := schemadiff.NewSchema().Col("id", schemadiff.LongType, schemadiff.NotNull).
		Col("customer", schemadiff.StringType).Col("amount", schemadiff.DecimalType(12, 2)).
		Col("at", schemadiff.TimestampNTZType).Col("tags", schemadiff.ArrayType(schemadiff.StringType, true)).
		Col("addr", schemadiff.StructType(schemadiff.NewField("city", schemadiff.StringType), schemadiff.NewField("zip", schemadiff.IntegerType)))
	if !d.Schema.Equal(want) {
		t.Errorf("describe schema\n %s\nwant\n %s", d.Schema, want)
	}
	if d.Name.String() != "main.sales.orders" || d.StorageLocation == "" {
		t.Errorf("description %+v", d)
	}

	// Telemetry stayed in the process; no secret reached the log.
	for _, r := range srv.Requests() {
		if strings.Contains(r.Method, "feature-flags") || strings.Contains(r.Method, "telemetry") {
			t.Errorf("telemetry request reached the warehouse: %s", r.Method)
		}
	}
	if strings.Contains(logBuf.String(), goodToken) {
		t.Errorf("token in the verbose log")
	}
}

func TestWarehouseErrorsClassified(t *testing.T) {
	srv, c, logBuf := fakeWarehouseClient(t, warehouse.Options{})
	ctx := context.Background()
	w, err := c.Warehouse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS main.sales"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec(ctx, "CREATE TABLE main.sales.orders (id BIGINT NOT NULL, customer STRING)"); err != nil {
		t.Fatal(err)
	}
	loc, err := srv.Engine().Location("main.sales.orders")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	if err := os.WriteFile(filepath.Join(dir, "extra.parquet"),
		pqgen.Must(pqgen.Bytes(sc, `[{"id":1,"customer":"ada","region":"eu"}]`, pqgen.Options{})), 0o644); err != nil {
		t.Fatal(err)
	}

	check := func(name string, err error, class Class, errClass string) {
		t.Helper()
		var se *SQLError
		if !errors.As(err, &se) {
			t.Errorf("%s: err = %v, want an *SQLError", name, err)
			return
		}
		if se.Class != class || (errClass != "" && !strings.HasPrefix(se.ErrorClass, errClass)) || se.Hint == "" {
			t.Errorf("%s: class %v (%s, %s), want %v %s: %v", name, se.Class, se.ErrorClass, se.SQLState, class, errClass, se)
		}
		if se.Statement == "" {
			t.Errorf("%s: the statement is not recorded", name)
		}
	}

	_, err = w.QueryAll(ctx, "SELECT * FROM main.sales.nope")
	check("missing table", err, ClassNotFound, "TABLE_OR_VIEW_NOT_FOUND")
	_, err = w.DescribeTable(ctx, "main.sales.nope")
	check("describe missing table", err, ClassNotFound, "TABLE_OR_VIEW_NOT_FOUND")

	_, err = w.QueryAll(ctx, "COPY INTO main.sales.orders FROM '"+filepath.ToSlash(dir)+"' FILEFORMAT = PARQUET")
	check("extra column", err, ClassSchemaMismatch, "COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE")

	_, err = w.QueryAll(ctx, "SELECT * FROM parquet.`"+loc+"/_zerobus/table_rejected_parquets/`")
	check("path inside managed storage", err, ClassLocationOverlap, "INVALID_PARAMETER_VALUE.LOCATION_OVERLAP")

	srv.Inject(warehouse.Fault{Match: "^COPY INTO", Error: &warehouse.SQLError{Class: "COPY_INTO_DUPLICATED_FILES_COPY_NOT_ALLOWED",
		SQLState: "25000", Message: "Duplicated files were committed in a concurrent transaction."}})
	_, err = w.QueryAll(ctx, "COPY INTO main.sales.orders FROM '"+filepath.ToSlash(dir)+"' FILEFORMAT = PARQUET")
	check("concurrent copy", err, ClassConcurrentCopy, "COPY_INTO_DUPLICATED_FILES_COPY_NOT_ALLOWED")

	srv.Inject(warehouse.Fault{Match: "^SELECT 42", Error: &warehouse.SQLError{Class: "INSUFFICIENT_PERMISSIONS",
		SQLState: "42501", Message: "User does not have MODIFY on Table 'main.sales.orders'."}})
	_, err = w.QueryAll(ctx, "SELECT 42")
	check("permission", err, ClassPermissionDenied, "INSUFFICIENT_PERMISSIONS")

	srv.Inject(warehouse.Fault{Match: "^SELECT 7", Delay: 5 * time.Second})
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = w.QueryAll(cctx, "SELECT 7")
	cancel()
	var se *SQLError
	if !errors.As(err, &se) || se.Class != ClassCanceled || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: %v", err)
	}
	// The statement is cancelled on the warehouse too, not only abandoned by the client.
	if n := srv.CountRequests("CancelOperation"); n != 1 {
		t.Errorf("CancelOperation sent %d times after the deadline, want 1", n)
	}

	if strings.Contains(logBuf.String(), goodToken) {
		t.Errorf("token in the verbose log")
	}
	if testing.Verbose() {
		t.Logf("log:\n%s", logBuf.String())
	}
	if !strings.Contains(logBuf.String(), "sql statement failed") {
		t.Errorf("failures are not in the verbose log")
	}
}

func TestWarehouseWrongToken(t *testing.T) {
	_, c, logBuf := fakeWarehouseClient(t, warehouse.Options{})
	const wrong = "dapi-not-the-warehouse-token-42"
	t.Setenv("DATABRICKS_TOKEN", wrong)
	c2, err := NewClient(context.Background(), Options{Log: slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	_ = c
	_, err = c2.Warehouse(context.Background())
	var se *SQLError
	if !errors.As(err, &se) || se.Class != ClassAuth {
		t.Fatalf("err = %v, want ClassAuth", err)
	}
	if strings.Contains(err.Error(), wrong) || strings.Contains(logBuf.String(), wrong) {
		t.Fatalf("token leaked: %v", err)
	}
}

func TestWarehouseDSN(t *testing.T) {
	srv, _, logBuf := fakeWarehouseClient(t, warehouse.Options{})
	w, err := OpenDSN(context.Background(), srv.DSN(), Options{Version: "1.0.0",
		Log: slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	res, err := w.QueryAll(context.Background(), "SELECT 1 AS one")
	if err != nil || len(res.Rows) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	if strings.Contains(logBuf.String(), goodToken) {
		t.Errorf("token in the verbose log")
	}
}
