package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/internal/redact"
)

// TestJSONLines: one JSON object per line, schema_version first, secrets in messages
// redacted, members that do not apply left out.
func TestJSONLines(t *testing.T) {
	redact.Register("s3cr3t-token-value")
	var b bytes.Buffer
	sink := JSONLines(&b)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sink(Event{Time: at, Event: Error, Cycle: 3, Table: "main.sales.orders", ErrorKind: KindStorage, Step: "inspect",
		Error: "GET https://lake/x?sig=s3cr3t-token-value: 403", Failures: 1})
	sink(Event{Time: at, Event: CycleEnd, Cycle: 3, DurationMS: 1200, Scanned: 50})
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%q", b.String())
	}
	if !strings.HasPrefix(lines[0], `{"schema_version":2,"time":"2026-01-02T03:04:05Z","event":"error","cycle":3,"table":"main.sales.orders"`) {
		t.Errorf("line %s", lines[0])
	}
	if strings.Contains(b.String(), "s3cr3t-token-value") {
		t.Errorf("a secret was written: %s", b.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &m); err != nil {
		t.Fatal(err)
	}
	if m["schema_version"] != float64(jsonout.SchemaVersion) || m["tables_scanned"] != float64(50) || m["duration_ms"] != float64(1200) {
		t.Errorf("cycle_end %v", m)
	}
	for _, absent := range []string{"table", "error", "blocked_groups", "retry_at"} {
		if _, ok := m[absent]; ok {
			t.Errorf("cycle_end has %s: %v", absent, m)
		}
	}
}

// TestCommandAlert: the alert command gets the event's JSON on stdin and its kind and table in
// the environment; a failing command's output is in the error.
func TestCommandAlert(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "alert.json")
	alert := CommandAlert(`cat > ` + out + `; echo "$ZBRECOVER_EVENT $ZBRECOVER_TABLE" >> ` + out)
	e := Event{Event: Blocked, Cycle: 2, Table: "main.sales.orders", Reason: "blocks"}
	if err := alert(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(data), "\n")
	var got Event
	if err := json.Unmarshal([]byte(first), &got); err != nil || got.Event != Blocked || got.Table != e.Table || got.SchemaVersion != jsonout.SchemaVersion {
		t.Fatalf("stdin %q: %v", first, err)
	}
	if rest != "blocked main.sales.orders\n" {
		t.Errorf("environment %q", rest)
	}
	err = CommandAlert("echo no webhook configured >&2; exit 3")(context.Background(), e)
	if err == nil || !strings.Contains(err.Error(), "no webhook configured") {
		t.Errorf("a failing alert command: %v", err)
	}
}

// TestTablePlace: a table's folder under a place, before a query.
func TestTablePlace(t *testing.T) {
	for place, want := range map[string]string{
		"/Volumes/main/ops/staging/zb":            "/Volumes/main/ops/staging/zb/tid",
		"/Volumes/main/ops/staging/zb/":           "/Volumes/main/ops/staging/zb/tid",
		"s3://ops/stage":                          "s3://ops/stage/tid",
		"abfss://c@a.dfs.core.windows.net/s?sv=1": "abfss://c@a.dfs.core.windows.net/s/tid?sv=1",
	} {
		if got := TablePlace(place, "tid"); got != want {
			t.Errorf("TablePlace(%q) = %q, want %q", place, got, want)
		}
	}
}
