package delta_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/delta"
	"github.com/zbrecover/zbrecover/storage/local"
)

// writeCommits writes JSON commits (version → lines) under dir/_delta_log.
func writeCommits(t *testing.T, dir string, commits map[int64][]string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	for v, lines := range commits {
		if err := os.WriteFile(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v)), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadCommitAndRemovals: a commit's adds with their stats and row tracking fields (as
// Databricks writes them), its removes, its commitInfo and high-water mark; the later commits
// that removed its files (paths compared decoded); a commit the log no longer holds.
func TestReadCommitAndRemovals(t *testing.T) {
	dir := t.TempDir()
	writeCommits(t, dir, map[int64][]string{
		0: {`{"commitInfo":{"operation":"CREATE TABLE"}}`, `{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["domainMetadata","rowTracking"]}}`},
		1: {`{"commitInfo":{"timestamp":1,"userName":"ops@example.com","operation":"COPY INTO","operationMetrics":{"numOutputRows":"5"},"userMetadata":"zbrecover:r1:1:1:abc"}}`,
			`{"add":{"path":"part-0%20a.snappy.parquet","partitionValues":{},"size":526,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":3,\"minValues\":{\"id\":1}}","tags":{"INSERTION_TIME":"1"},"baseRowId":10,"defaultRowCommitVersion":1}}`,
			`{"add":{"path":"part-1.snappy.parquet","partitionValues":{},"size":500,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":2}","baseRowId":13,"defaultRowCommitVersion":1}}`,
			`{"domainMetadata":{"domain":"delta.rowTracking","configuration":"{\"rowIdHighWaterMark\":14,\"domainName\":\"delta.rowTracking\"}","removed":false}}`},
		2: {`{"commitInfo":{"operation":"WRITE","operationMetrics":{"numOutputRows":"1"}}}`, `{"add":{"path":"part-2.snappy.parquet","size":9,"dataChange":true}}`},
		3: {`{"commitInfo":{"operation":"OPTIMIZE"}}`, `{"remove":{"path":"part-0 a.snappy.parquet","dataChange":false}}`, `{"remove":{"path":"part-2.snappy.parquet","dataChange":false}}`},
		4: {`{"commitInfo":{"operation":"DELETE"}}`, `{"remove":{"path":"part-1.snappy.parquet","dataChange":true}}`},
	})
	b := local.New(dir)
	ctx := context.Background()
	c, err := delta.ReadCommit(ctx, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c.Info == nil || c.Info.Operation != "COPY INTO" || c.Info.UserMetadata != "zbrecover:r1:1:1:abc" || c.Info.Metrics["numOutputRows"] != "5" {
		t.Errorf("commitInfo %+v", c.Info)
	}
	if len(c.Adds) != 2 || c.Adds[0].NumRecords != 3 || *c.Adds[0].BaseRowID != 10 || *c.Adds[1].BaseRowID != 13 ||
		*c.Adds[1].DefaultRowCommitVersion != 1 || !c.Adds[0].DataChange || c.RowIDHighWaterMark == nil || *c.RowIDHighWaterMark != 14 {
		t.Errorf("adds %+v, high-water mark %v", c.Adds, c.RowIDHighWaterMark)
	}
	c2, err := delta.ReadCommit(ctx, b, 2)
	if err != nil || len(c2.Adds) != 1 || c2.Adds[0].NumRecords != -1 || c2.Adds[0].BaseRowID != nil {
		t.Errorf("a commit without stats or row IDs: %+v, %v", c2, err)
	}
	rm, newest, err := delta.RemovedAfter(ctx, b, 1, []string{c.Adds[0].Path, c.Adds[1].Path})
	if err != nil || newest != 4 || len(rm) != 2 {
		t.Fatalf("removals %+v, newest %d, %v", rm, newest, err)
	}
	if rm[0].Path != "part-0%20a.snappy.parquet" || rm[0].Version != 3 || rm[0].Operation != "OPTIMIZE" || rm[1].Version != 4 || rm[1].Operation != "DELETE" {
		t.Errorf("removals %+v", rm)
	}
	if rm, _, err := delta.RemovedAfter(ctx, b, 3, []string{"part-9.parquet"}); err != nil || len(rm) != 0 {
		t.Errorf("a file no later commit removed: %+v, %v", rm, err)
	}
	// Log cleanup removed version 2: what it removed is unknown.
	if err := os.Remove(filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 2))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := delta.RemovedAfter(ctx, b, 1, []string{"part-1.snappy.parquet"}); !errors.Is(err, delta.ErrCommitGone) {
		t.Errorf("a gap in the log: %v", err)
	}
	if _, err := delta.ReadCommit(ctx, b, 2); !errors.Is(err, delta.ErrCommitGone) {
		t.Errorf("a commit the log no longer holds: %v", err)
	}
}

// TestRemovedInReadsOnlyTheVersionsGiven: the versions a table's history shows could remove
// files are the only ones read.
func TestRemovedInReadsOnlyTheVersionsGiven(t *testing.T) {
	dir := t.TempDir()
	writeCommits(t, dir, map[int64][]string{
		0: {`{"commitInfo":{"operation":"CREATE TABLE"}}`},
		1: {`{"commitInfo":{"operation":"OPTIMIZE"}}`, `{"remove":{"path":"a.parquet"}}`},
		2: {`{"commitInfo":{"operation":"DELETE"}}`, `{"remove":{"path":"b.parquet"}}`},
	})
	rm, err := delta.RemovedIn(context.Background(), local.New(dir), []int64{2}, []string{"a.parquet", "b.parquet"})
	if err != nil || len(rm) != 1 || rm[0].Path != "b.parquet" || rm[0].Version != 2 {
		t.Errorf("removals %+v, %v", rm, err)
	}
	if _, err := delta.RemovedIn(context.Background(), local.New(dir), []int64{5}, []string{"a.parquet"}); !errors.Is(err, delta.ErrCommitGone) {
		t.Errorf("a version the log does not hold: %v", err)
	}
}
