package warehouse_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/delta"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage/local"
)

// TestDeltaLogMatchesDescribe reads a fake table's schema the two ways the tool can — the
// Delta log at its location (the project's delta package) and DESCRIBE … AS JSON (its
// schemadiff parser) — and expects the same schema after each change.
func TestDeltaLogMatchesDescribe(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE main.default.wide (id BIGINT NOT NULL COMMENT 'key', amount DECIMAL(12,3), "+
		"items ARRAY<STRUCT<sku: STRING, qty: INT NOT NULL>>, attrs MAP<STRING, BIGINT>, at TIMESTAMP, local_at TIMESTAMP_NTZ, "+
		"day DATE, ok BOOLEAN, score DOUBLE, ratio FLOAT, small SMALLINT, tiny TINYINT, raw BINARY) PARTITIONED BY (day)")
	loc, err := srv.Engine().Location("wide")
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimPrefix(loc, "file://")
	check := func(wantVersion int64) {
		t.Helper()
		snap, err := delta.Read(ctx(t), local.New(root))
		if err != nil {
			t.Fatalf("delta.Read: %v", err)
		}
		doc := describeJSONRaw(t, db, "wide")
		fromDescribe, err := schemadiff.ParseDescribeJSON([]byte(doc))
		if err != nil {
			t.Fatalf("ParseDescribeJSON: %v", err)
		}
		if snap.Version != wantVersion || !snap.Schema.Equal(fromDescribe) {
			t.Errorf("version %d (want %d)\nlog:      %s\ndescribe: %s", snap.Version, wantVersion, snap.Schema, fromDescribe)
		}
		if len(snap.PartitionColumns) != 1 || snap.PartitionColumns[0] != "day" {
			t.Errorf("partition columns = %v", snap.PartitionColumns)
		}
	}
	check(0)
	mustExec(t, db, "ALTER TABLE wide ADD COLUMNS (country STRING)", "ALTER TABLE wide ALTER COLUMN id DROP NOT NULL",
		"ALTER TABLE wide SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')", "ALTER TABLE wide ALTER COLUMN small TYPE INT")
	check(4)

	// The log holds one file per version; COPY INTO commits carry their metrics.
	dir := filepath.Join(t.TempDir(), "src")
	mustExec(t, db, eventsDDL)
	writeParquet(t, filepath.Join(dir, "a.parquet"), eventsSchema, eventRows(1, 3))
	if _, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET"); err != nil {
		t.Fatal(err)
	}
	eloc, _ := srv.Engine().Location("events")
	f, err := os.Open(filepath.Join(strings.TrimPrefix(eloc, "file://"), "_delta_log", "00000000000000000001.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var info struct {
		CommitInfo struct {
			Operation        string            `json:"operation"`
			OperationMetrics map[string]string `json:"operationMetrics"`
		} `json:"commitInfo"`
	}
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		lines++
		if strings.Contains(sc.Text(), `"commitInfo"`) {
			if err := json.Unmarshal(sc.Bytes(), &info); err != nil {
				t.Fatal(err)
			}
		}
	}
	// commitInfo and the add action of the one data file written.
	if lines != 2 || info.CommitInfo.Operation != "COPY INTO" || info.CommitInfo.OperationMetrics["numOutputRows"] != "3" {
		t.Errorf("version 1: %d lines, commitInfo %+v", lines, info.CommitInfo)
	}
}

// TestDeltaLogLeavesForeignLogsAlone: a table created at a location that already holds a
// Delta log does not overwrite it.
func TestDeltaLogLeavesForeignLogsAlone(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	dir := t.TempDir()
	logFile := filepath.Join(dir, "_delta_log", "00000000000000000000.json")
	if err := os.MkdirAll(filepath.Dir(logFile), 0o755); err != nil {
		t.Fatal(err)
	}
	const original = `{"commitInfo":{"operation":"CREATE TABLE"}}` + "\n"
	if err := os.WriteFile(logFile, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	mustExec(t, db, "CREATE TABLE ext (id INT) LOCATION '"+dir+"'", "INSERT INTO ext VALUES (1)")
	got, _ := os.ReadFile(logFile)
	if string(got) != original {
		t.Errorf("the existing log was rewritten: %s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "_delta_log", "00000000000000000001.json")); err == nil {
		t.Error("a commit was added to a foreign log")
	}
}
