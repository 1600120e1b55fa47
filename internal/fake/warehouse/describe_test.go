package warehouse_test

import (
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// describeDoc is the part of DESCRIBE TABLE EXTENDED … AS JSON the tool reads.
type describeDoc struct {
	TableName   string `json:"table_name"`
	CatalogName string `json:"catalog_name"`
	SchemaName  string `json:"schema_name"`
	Type        string `json:"type"`
	Provider    string `json:"provider"`
	Location    string `json:"location"`
	Columns     []struct {
		Name     string          `json:"name"`
		Type     json.RawMessage `json:"type"`
		Nullable bool            `json:"nullable"`
		Comment  string          `json:"comment"`
	} `json:"columns"`
	TableProperties map[string]string `json:"table_properties"`
	CreatedTime     string            `json:"created_time"`
}

func describeJSON(t *testing.T, db *sql.DB, table string) describeDoc {
	t.Helper()
	doc := describeJSONRaw(t, db, table)
	var d describeDoc
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		t.Fatalf("parse %s: %v", doc, err)
	}
	return d
}

// describeJSONRaw returns the document of DESCRIBE TABLE EXTENDED … AS JSON.
func describeJSONRaw(t *testing.T, db *sql.DB, table string) string {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), "DESCRIBE TABLE EXTENDED "+table+" AS JSON")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if len(cols) != 1 || cols[0] != "json_metadata" {
		t.Fatalf("DESCRIBE … AS JSON columns = %v, want [json_metadata]", cols)
	}
	if !rows.Next() {
		t.Fatal("no row")
	}
	var doc string
	if err := rows.Scan(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestDescribeAsJSON(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db,
		"CREATE SCHEMA IF NOT EXISTS main.sales",
		"CREATE TABLE main.sales.orders (id BIGINT NOT NULL, `order total` DECIMAL(12,3), items ARRAY<STRUCT<sku: STRING, qty: INT NOT NULL>>, "+
			"attrs MAP<STRING, BIGINT>, at TIMESTAMP, local_at TIMESTAMP_NTZ, day DATE, ok BOOLEAN, score DOUBLE, raw BINARY) "+
			"USING DELTA COMMENT 'orders' TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
	d := describeJSON(t, db, "main.sales.orders")
	loc, _ := srv.Engine().Location("main.sales.orders")
	if d.TableName != "orders" || d.CatalogName != "main" || d.SchemaName != "sales" || d.Type != "MANAGED" ||
		d.Provider != "delta" || d.Location != loc || !strings.HasPrefix(loc, "file://") {
		t.Errorf("document header = %+v (location %s)", d, loc)
	}
	if _, err := time.Parse("2006-01-02T15:04:05Z", d.CreatedTime); err != nil {
		t.Errorf("created_time %q: %v", d.CreatedTime, err)
	}
	if d.TableProperties["delta.enableTypeWidening"] != "true" {
		t.Errorf("table_properties = %v", d.TableProperties)
	}
	want := []struct {
		name, typ string
		nullable  bool
	}{
		{"id", `{"name":"bigint"}`, false},
		{"order total", `{"name":"decimal","precision":12,"scale":3}`, true},
		{"items", `{"element_nullable":true,"element_type":{"fields":[{"name":"sku","nullable":true,"type":{"name":"string"}},` +
			`{"name":"qty","nullable":false,"type":{"name":"int"}}],"name":"struct"},"name":"array"}`, true},
		{"attrs", `{"key_type":{"name":"string"},"name":"map","value_nullable":true,"value_type":{"name":"bigint"}}`, true},
		{"at", `{"name":"timestamp_ltz"}`, true},
		{"local_at", `{"name":"timestamp_ntz"}`, true},
		{"day", `{"name":"date"}`, true},
		{"ok", `{"name":"boolean"}`, true},
		{"score", `{"name":"double"}`, true},
		{"raw", `{"name":"binary"}`, true},
	}
	if len(d.Columns) != len(want) {
		t.Fatalf("columns = %d, want %d", len(d.Columns), len(want))
	}
	for i, w := range want {
		c := d.Columns[i]
		var got any
		_ = json.Unmarshal(c.Type, &got)
		norm, _ := json.Marshal(got) // sorted keys
		if c.Name != w.name || string(norm) != w.typ || c.Nullable != w.nullable {
			t.Errorf("column %d = %s %s nullable=%t, want %s %s nullable=%t", i, c.Name, norm, c.Nullable, w.name, w.typ, w.nullable)
		}
	}

	// The report form: col_name, data_type (simpleString), comment; EXTENDED adds Location.
	rows, err := db.QueryContext(ctx(t), "DESCRIBE TABLE EXTENDED main.sales.orders")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	report := map[string]string{}
	for rows.Next() {
		var k, v string
		var c sql.NullString
		if err := rows.Scan(&k, &v, &c); err != nil {
			t.Fatal(err)
		}
		report[k] = v
	}
	if report["items"] != "array<struct<sku:string,qty:int>>" || report["order total"] != "decimal(12,3)" || report["Location"] != loc || report["Type"] != "MANAGED" {
		t.Errorf("DESCRIBE EXTENDED report = %v", report)
	}

	// A table with LOCATION is external and keeps that location.
	ext := filepath.Join(t.TempDir(), "ext")
	mustExec(t, db, "CREATE TABLE main.sales.ext (id INT) LOCATION '"+ext+"'")
	if d := describeJSON(t, db, "main.sales.ext"); d.Type != "EXTERNAL" || d.Location != "file://"+filepath.ToSlash(ext) {
		t.Errorf("external table: type %s location %s", d.Type, d.Location)
	}
	// Engine.SetLocation moves a managed table's root.
	if err := srv.Engine().SetLocation("main.sales.orders", "s3://bucket/tables/orders/"); err != nil {
		t.Fatal(err)
	}
	if d := describeJSON(t, db, "main.sales.orders"); d.Type != "MANAGED" || d.Location != "s3://bucket/tables/orders" {
		t.Errorf("after SetLocation: type %s location %s", d.Type, d.Location)
	}

	_, err = db.QueryContext(ctx(t), "DESCRIBE TABLE EXTENDED main.sales.nope AS JSON")
	execError(t, err, "42P01", "TABLE_OR_VIEW_NOT_FOUND")
	_, err = db.QueryContext(ctx(t), "DESCRIBE TABLE main.sales.orders AS JSON")
	execError(t, err, "0A000", "DESCRIBE_JSON_NOT_EXTENDED")
}

// historyRow is one row of DESCRIBE HISTORY.
type historyRow struct {
	version   int64
	timestamp time.Time
	operation string
	params    map[string]string
	metrics   map[string]string
	readVer   sql.NullInt64
	blind     bool
}

func describeHistory(t *testing.T, db *sql.DB, table string) []historyRow {
	t.Helper()
	rows, err := db.QueryContext(ctx(t), "DESCRIBE HISTORY "+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	want := "version,timestamp,userId,userName,operation,operationParameters,job,notebook,clusterId,readVersion,isolationLevel,isBlindAppend,operationMetrics,userMetadata,engineInfo"
	if strings.Join(cols, ",") != want {
		t.Fatalf("DESCRIBE HISTORY columns = %v", cols)
	}
	var out []historyRow
	for rows.Next() {
		var r historyRow
		var userID, userName, clusterID, iso, params, metrics sql.NullString
		var job, notebook, userMeta, engine sql.NullString
		if err := rows.Scan(&r.version, &r.timestamp, &userID, &userName, &r.operation, &params, &job, &notebook,
			&clusterID, &r.readVer, &iso, &r.blind, &metrics, &userMeta, &engine); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(params.String), &r.params); err != nil {
			t.Fatalf("operationParameters %q: %v", params.String, err)
		}
		if err := json.Unmarshal([]byte(metrics.String), &r.metrics); err != nil {
			t.Fatalf("operationMetrics %q: %v", metrics.String, err)
		}
		out = append(out, r)
	}
	return out
}

func TestDescribeHistory(t *testing.T) {
	srv := warehouse.New(t, allowManagedPaths)
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	dir := fallbackDir(t, srv, "main.default.events")
	writeParquet(t, filepath.Join(dir, "f1.parquet"), eventsSchema, eventRows(1, 3))
	writeParquet(t, filepath.Join(dir, "f2.parquet"), eventsSchema, eventRows(4, 4))
	if _, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET FILES = ('f1.parquet')"); err != nil {
		t.Fatal(err)
	}
	if _, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET"); err != nil {
		t.Fatal(err)
	}
	// A re-run that loads nothing makes no commit.
	if _, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "ALTER TABLE events ADD COLUMNS (country STRING COMMENT 'iso code')", "INSERT INTO events (id, name) VALUES (100, 'manual')")

	h := describeHistory(t, db, "events")
	ops := make([]string, len(h))
	for i, r := range h {
		ops[i] = strconv.FormatInt(r.version, 10) + ":" + r.operation
	}
	if got := strings.Join(ops, " "); got != "4:WRITE 3:ADD COLUMNS 2:COPY INTO 1:COPY INTO 0:CREATE TABLE" {
		t.Fatalf("history = %s", got)
	}
	if h[2].metrics["numOutputRows"] != "4" || h[2].metrics["numFiles"] != "1" || h[3].metrics["numOutputRows"] != "3" {
		t.Errorf("COPY INTO metrics = %v / %v", h[2].metrics, h[3].metrics)
	}
	if !h[2].blind || !h[2].readVer.Valid || h[2].readVer.Int64 != 1 || h[4].readVer.Valid {
		t.Errorf("version 2: blind=%t readVersion=%v; version 0 readVersion=%v", h[2].blind, h[2].readVer, h[4].readVer)
	}
	if h[0].metrics["numOutputRows"] != "1" {
		t.Errorf("WRITE metrics = %v", h[0].metrics)
	}
	if time.Since(h[0].timestamp) > time.Minute || h[0].timestamp.Before(h[4].timestamp) {
		t.Errorf("timestamps: newest %v, oldest %v", h[0].timestamp, h[4].timestamp)
	}
	rows, err := db.QueryContext(ctx(t), "DESCRIBE HISTORY events LIMIT 1")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if n != 1 {
		t.Errorf("LIMIT 1 returned %d rows", n)
	}
}
