package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInspectJSONLines: -o jsonl writes a header, one line per file, then the table, the
// groups and the totals; the same facts as -o json.
func TestInspectJSONLines(t *testing.T) {
	root := tableRoot(t, true)
	code, out, errOut := run(t, "inspect", "-o", "jsonl", "--schema-file", writeTemp(t, "id BIGINT NOT NULL, customer STRING, amount DECIMAL(10,2)"), root)
	if code != ExitSchema {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	kinds := map[string]int{}
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil || len(m) != 1 {
			t.Fatalf("line %q: %v", line, err)
		}
		for k := range m {
			kinds[k]++
			if len(order) == 0 || order[len(order)-1] != k {
				order = append(order, k)
			}
		}
	}
	if got := strings.Join(order, " "); got != "inspect file table group change_totals totals" || kinds["file"] != 4 || kinds["group"] != 2 {
		t.Errorf("lines %s %v", got, kinds)
	}
	_, jout, _ := run(t, "inspect", "-o", "json", "--schema-file", writeTemp(t, "id BIGINT NOT NULL, customer STRING, amount DECIMAL(10,2)"), root)
	var doc struct {
		Totals json.RawMessage `json:"totals"`
	}
	if err := json.Unmarshal([]byte(jout), &doc); err != nil {
		t.Fatal(err)
	}
	last := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	var tl struct {
		Totals json.RawMessage `json:"totals"`
	}
	json.Unmarshal([]byte(last), &tl)
	if compact(t, tl.Totals) != compact(t, doc.Totals) {
		t.Errorf("totals %s, -o json has %s", tl.Totals, doc.Totals)
	}
	if code, _, errOut := run(t, "ls", "-o", "jsonl", root); code != ExitUsage || !strings.Contains(errOut, "jsonl is for inspect") {
		t.Errorf("ls -o jsonl: exit %d, %s", code, errOut)
	}
}

func compact(t *testing.T, b json.RawMessage) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "schema.ddl")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
