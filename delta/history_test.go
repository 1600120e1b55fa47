package delta_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage/local"
)

// TestHistoryEndsAtTheLatestSchema: on every shared test table, the last schema History
// replays is the schema Read finds, and versions ascend.
func TestHistoryEndsAtTheLatestSchema(t *testing.T) {
	entries, err := os.ReadDir(testdata)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Delta test tables missing (CI=true): %v", err)
		}
		t.Skipf("Delta test tables missing: %v", err)
	}
	read := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			b := local.New(filepath.Join(testdata, e.Name()))
			snap, err := delta.Read(context.Background(), b)
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			read++
			h, err := delta.History(context.Background(), b, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(h) == 0 {
				t.Fatal("no schema in the history")
			}
			for i := 1; i < len(h); i++ {
				if h[i].Version <= h[i-1].Version {
					t.Errorf("versions %d then %d", h[i-1].Version, h[i].Version)
				}
			}
			last := h[len(h)-1]
			if last.Schema.DeltaJSON() != snap.Schema.DeltaJSON() {
				t.Errorf("last schema (version %d) %s, want %s", last.Version, last.Schema.DeltaJSON(), snap.Schema.DeltaJSON())
			}
		})
	}
	if read == 0 {
		t.Fatal("no table of the test data was read")
	}
}

// writeLog writes commits as JSON lines under dir/_delta_log/.
func writeLog(t *testing.T, dir string, commits ...[]map[string]any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	for v, actions := range commits {
		var lines []string
		for _, a := range actions {
			b, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(b))
		}
		name := filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", v))
		if err := os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func commit(ts time.Time, op, user string, s *sd.Schema) []map[string]any {
	acts := []map[string]any{{"commitInfo": map[string]any{"timestamp": ts.UnixMilli(), "operation": op, "userName": user}}}
	if s != nil {
		acts = append(acts, map[string]any{"metaData": map[string]any{
			"id": "t1", "format": map[string]any{"provider": "parquet"}, "schemaString": s.DeltaJSON(),
			"partitionColumns": []string{}, "configuration": map[string]string{},
		}})
	}
	return acts
}

// TestHistoryReplaysSchemaChanges: appends do not change the schema; a REPLACE TABLE does,
// and History names its version, time, operation and user.
func TestHistoryReplaysSchemaChanges(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v0 := sd.NewSchema().Col("id", sd.LongType).Col("note", sd.StringType)
	v3 := sd.NewSchema().Col("id", sd.LongType).Col("region", sd.StringType)
	dir := t.TempDir()
	c0 := commit(t0, "CREATE TABLE", "ann@example.com", &v0)
	c0 = append(c0, map[string]any{"protocol": map[string]any{"minReaderVersion": 1, "minWriterVersion": 2}})
	writeLog(t, dir,
		c0,
		commit(t0.Add(time.Hour), "WRITE", "zerobus", nil),
		commit(t0.Add(2*time.Hour), "WRITE", "zerobus", nil),
		commit(t0.Add(3*time.Hour), "REPLACE TABLE", "bo@example.com", &v3),
		commit(t0.Add(4*time.Hour), "WRITE", "zerobus", nil),
	)
	h, err := delta.History(context.Background(), local.New(dir), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 {
		t.Fatalf("history %+v, want 2 schemas", h)
	}
	if h[0].Version != 0 || h[0].Operation != "CREATE TABLE" || h[0].User != "ann@example.com" || !h[0].Time.Equal(t0) {
		t.Errorf("first %+v", h[0])
	}
	if h[1].Version != 3 || h[1].Operation != "REPLACE TABLE" || h[1].User != "bo@example.com" || !h[1].Time.Equal(t0.Add(3*time.Hour)) {
		t.Errorf("second %+v", h[1])
	}
	if h[1].Schema.Fields[1].Name != "region" || h[0].Schema.Fields[1].Name != "note" {
		t.Errorf("schemas %s / %s", h[0].Schema.DeltaJSON(), h[1].Schema.DeltaJSON())
	}

	// A bound on the commits read: only the newest two, so the oldest schema seen is version 3's.
	h, err = delta.History(context.Background(), local.New(dir), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Version != 3 {
		t.Errorf("bounded history %+v", h)
	}
}
