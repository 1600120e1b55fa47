package cmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/schemadiff"
)

// checkVersioned checks that doc is one JSON object, and nothing after it, whose first member
// is "schema_version" with the current version; it returns the object's members.
func checkVersioned(t *testing.T, what, doc string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: not a JSON object (%v, %v):\n%s", what, tok, err, doc)
	}
	if tok, err := dec.Token(); err != nil || tok != "schema_version" {
		t.Fatalf("%s: first member %v (%v), want schema_version:\n%s", what, tok, err, doc)
	}
	var v json.Number
	if err := dec.Decode(&v); err != nil || v.String() != "2" || jsonout.SchemaVersion != 2 {
		t.Fatalf("%s: schema_version %q (%v), want 2", what, v, err)
	}
	var m map[string]any
	dec = json.NewDecoder(strings.NewReader(doc))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: %v:\n%s", what, err, doc)
	}
	if _, err := dec.Token(); err == nil {
		t.Fatalf("%s: more than one JSON value:\n%s", what, doc)
	}
	return m
}

// TestJSONOutDocuments runs every command that works offline with -o json and checks that
// stdout is one JSON document that starts with schema_version (docs/json-output.md).
func TestJSONOutDocuments(t *testing.T) {
	root := tableRoot(t, false)
	writeLog(t, root, ordersTable)
	t.Setenv("XDG_STATE_HOME", t.TempDir())

	cases := []struct {
		args    []string
		codes   []int    // accepted exit codes
		members []string // members the document must have
	}{
		{[]string{"-o", "json", "version"}, []int{ExitOK}, []string{"version", "go", "platform"}},
		{[]string{"-o", "json", "ls", root}, []int{ExitOK}, []string{"location", "objects", "count", "bytes", "truncated"}},
		{[]string{"-o", "json", "inspect", root}, []int{ExitOK, ExitSchema}, []string{"root", "prefix", "table", "files", "groups", "totals"}},
		{[]string{"-o", "json", "preview", root, "-n", "1"}, []int{ExitOK}, []string{"previews"}},
		{[]string{"preview", root, "--format", "json", "-n", "1"}, []int{ExitOK}, []string{"previews"}},
		{[]string{"-o", "json", "schema", root}, []int{ExitOK}, []string{"source", "columns", "partition_columns", "delta"}},
		{[]string{"schema", root, "-o", "json"}, []int{ExitOK}, []string{"source", "columns", "partition_columns", "delta"}},
		{[]string{"-o", "json", "history"}, []int{ExitOK}, []string{"journal", "runs"}},
	}
	for _, c := range cases {
		code, out, errOut := run(t, c.args...)
		if !slices.Contains(c.codes, code) {
			t.Errorf("%v: exit %d, want one of %v; stderr %s", c.args, code, c.codes, errOut)
			continue
		}
		m := checkVersioned(t, strings.Join(c.args, " "), out)
		for _, k := range c.members {
			if _, ok := m[k]; !ok {
				t.Errorf("%v: no member %q in\n%s", c.args, k, out)
			}
		}
		if code != ExitOK {
			checkErrorLine(t, strings.Join(c.args, " "), errOut, code)
		}
	}
	// An empty journal lists no runs: [], not null.
	_, out, _ := run(t, "-o", "json", "history")
	if m := checkVersioned(t, "history", out); m["runs"] == nil {
		t.Errorf("history on an empty journal: runs is %v, want []", m["runs"])
	}
}

// checkErrorLine checks that stderr's last line is the JSON error line with the exit code.
func checkErrorLine(t *testing.T, what, errOut string, code int) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	last := lines[len(lines)-1]
	m := checkVersioned(t, what+" (stderr)", last)
	if m["code"] != float64(code) {
		t.Errorf("%s: error line code %v, want %d: %s", what, m["code"], code, last)
	}
	if s, _ := m["error"].(string); s == "" {
		t.Errorf("%s: error line without an error: %s", what, last)
	}
}

// TestJSONOutErrors checks the stderr error line of a failure and of a usage error: nothing on
// stdout, one JSON line on stderr that starts with schema_version and carries the exit code.
func TestJSONOutErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"-o", "json", "ls", missing}, ExitFailure},
		{[]string{"-o", "json", "ls"}, ExitUsage},
		{[]string{"-o", "json", "no-such-command"}, ExitUsage},
		{[]string{"-o", "json", "inspect", t.TempDir()}, ExitFailure},
	} {
		code, out, errOut := run(t, c.args...)
		what := strings.Join(c.args, " ")
		if code != c.code {
			t.Errorf("%s: exit %d, want %d; stderr %s", what, code, c.code, errOut)
			continue
		}
		if c.args[2] != "inspect" && out != "" {
			t.Errorf("%s: stdout %q, want nothing", what, out)
		}
		if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s: stderr holds more than the error line:\n%s", what, errOut)
		}
		checkErrorLine(t, what, errOut, c.code)
	}
}

// TestJSONOutInspectLines checks inspect -o jsonl: every line is an object with one member,
// the first is "inspect" with the current schema_version, and the last is "totals".
func TestJSONOutInspectLines(t *testing.T) {
	root := tableRoot(t, true)
	writeLog(t, root, ordersTable)
	code, out, errOut := run(t, "-o", "jsonl", "inspect", root)
	if code != ExitSchema && code != ExitPartial {
		t.Fatalf("exit %d, want %d or %d; stderr %s", code, ExitSchema, ExitPartial, errOut)
	}
	sc := bufio.NewScanner(bytes.NewReader([]byte(out)))
	sc.Buffer(nil, 1<<20)
	var kinds []string
	for sc.Scan() {
		var line map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil || len(line) != 1 {
			t.Fatalf("line %d is not an object with one member (%v): %s", len(kinds)+1, err, sc.Text())
		}
		for k, v := range line {
			kinds = append(kinds, k)
			if len(kinds) == 1 {
				if k != "inspect" {
					t.Fatalf("first line is %q, want inspect: %s", k, sc.Text())
				}
				checkVersioned(t, "inspect line", string(v))
			}
		}
	}
	if len(kinds) < 2 || kinds[len(kinds)-1] != "totals" {
		t.Fatalf("line kinds %v: want inspect first and totals last", kinds)
	}
	for _, want := range []string{"file", "table", "group"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("no %q line in %v", want, kinds)
		}
	}
}

// TestJSONOutStderrIsJSONLines: under -o json every line on stderr is a JSON object, the
// status lines a command prints as text included (as {"notice": …}).
func TestJSONOutStderrIsJSONLines(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	root := t.TempDir()
	if _, err := deltatest.Write(root, deltatest.Table{Schema: schemadiff.NewSchema().Col("id", schemadiff.LongType)}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "-o", "json", "cleanup", root)
	if code != ExitOK || !strings.Contains(errOut, `{"notice":"Nothing to clean up: no verified run of `) {
		t.Fatalf("cleanup: exit %d, stderr %q", code, errOut)
	}
	// stdout holds a document even when there is nothing to do.
	if doc := checkVersioned(t, "cleanup with nothing to clean up", out); doc["nothing_to_clean_up"] == nil || doc["root"] == nil {
		t.Errorf("cleanup document %v", doc)
	}
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("stderr line %q: %v", line, err)
		}
	}
	// In text, the same line is text.
	if _, _, errOut := run(t, "cleanup", root); !strings.HasPrefix(errOut, "Nothing to clean up") {
		t.Errorf("text: stderr %q", errOut)
	}
}
