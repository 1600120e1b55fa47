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
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
)

// TestHistoryEndsAtTheLatestSchema: on every shared test table, the last schema History
// replays is the schema Read finds, and versions ascend. Every table must be read: under
// CI=true missing test tables fail, and a table Read rejects fails.
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
		read++
		t.Run(e.Name(), func(t *testing.T) {
			for _, p := range historyProblems(local.New(filepath.Join(testdata, e.Name()))) {
				t.Error(p)
			}
		})
	}
	if read == 0 {
		t.Fatal("no table of the test data was read")
	}
}

// historyProblems returns what is wrong with the schema history of the table in b: Read or
// History failing, no schema, versions that do not ascend, a last schema that is not the
// snapshot's.
func historyProblems(b storage.Backend) []string {
	snap, err := delta.Read(context.Background(), b)
	if err != nil {
		return []string{fmt.Sprintf("Read: %v", err)}
	}
	h, err := delta.History(context.Background(), b, 0)
	if err != nil {
		return []string{fmt.Sprintf("History: %v", err)}
	}
	return schemaHistoryProblems(snap.Schema, h)
}

// schemaHistoryProblems compares a schema history with the snapshot's schema.
func schemaHistoryProblems(latest sd.Schema, h []sd.SchemaVersion) []string {
	if len(h) == 0 {
		return []string{"no schema in the history"}
	}
	var out []string
	for i := 1; i < len(h); i++ {
		if h[i].Version <= h[i-1].Version {
			out = append(out, fmt.Sprintf("versions %d then %d", h[i-1].Version, h[i].Version))
		}
	}
	if last := h[len(h)-1]; last.Schema.DeltaJSON() != latest.DeltaJSON() {
		out = append(out, fmt.Sprintf("last schema (version %d) %s, want %s", last.Version, last.Schema.DeltaJSON(), latest.DeltaJSON()))
	}
	return out
}

// TestHistoryCheckCatches is a test of the test: a table Read rejects, an empty history,
// versions out of order and a last schema other than the snapshot's are each reported.
func TestHistoryCheckCatches(t *testing.T) {
	if got := historyProblems(local.New(t.TempDir())); len(got) != 1 || !strings.HasPrefix(got[0], "Read: ") {
		t.Errorf("a folder that is no table: %q", got)
	}
	v1 := sd.NewSchema().Col("id", sd.LongType)
	v2 := sd.NewSchema().Col("id", sd.LongType).Col("region", sd.StringType)
	for name, c := range map[string]struct {
		h    []sd.SchemaVersion
		want string
	}{
		"empty":     {nil, "no schema"},
		"order":     {[]sd.SchemaVersion{{Version: 3, Schema: v1}, {Version: 3, Schema: v2}}, "versions 3 then 3"},
		"not last":  {[]sd.SchemaVersion{{Version: 1, Schema: v2}, {Version: 4, Schema: v1}}, "last schema (version 4)"},
		"all right": {[]sd.SchemaVersion{{Version: 1, Schema: v1}, {Version: 4, Schema: v2}}, ""},
	} {
		got := schemaHistoryProblems(v2, c.h)
		if c.want == "" && len(got) != 0 || c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)) {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
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
