package jsonout

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestEncode(t *testing.T) {
	type inner struct {
		Kind string `json:"kind"`
	}
	type doc struct {
		A    int      `json:"a"`
		Type string   `json:"type"`
		B    []string `json:"b,omitempty"`
		Sub  *inner   `json:"sub,omitempty"`
	}
	var out bytes.Buffer
	if err := Encode(&out, &doc{A: 1, Type: "array<int>", Sub: &inner{"x"}}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"schema_version\": 2,\n  \"a\": 1,\n  \"type\": \"array<int>\",\n  \"sub\": {\n    \"kind\": \"x\"\n  }\n}\n"
	if out.String() != want {
		t.Errorf("Encode = %q, want %q", out.String(), want)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || m["schema_version"] != float64(SchemaVersion) {
		t.Errorf("decoded %v, %v", m, err)
	}
	out.Reset()
	if err := Encode(&out, doc{A: 2}); err != nil || !strings.HasPrefix(out.String(), "{\n  \"schema_version\": 2,\n  \"a\": 2") {
		t.Errorf("a value: %q, %v", out.String(), err)
	}
	if err := Encode(&out, map[string]int{"a": 1}); err == nil {
		t.Error("a map was encoded: its members would be sorted, schema_version not first")
	}
}

// plan has methods, as cleanup.Plan does; report embeds it, as cleanup.Report does.
type plan struct {
	Files  int    `json:"files"`
	Run    string `json:"run"`
	hidden int
}

func (p *plan) Total() int { return p.Files + p.hidden }

type report struct {
	*plan
	Deleted int `json:"deleted"`
}

type valueReport struct {
	plan
	Deleted int `json:"deleted"`
}

// TestEncodeEmbeddedWithMethods: an embedded type with methods has its members promoted as
// json.Marshal promotes them (a nil pointer: none), after schema_version.
func TestEncodeEmbeddedWithMethods(t *testing.T) {
	for name, v := range map[string]any{
		"pointer": report{plan: &plan{Files: 3, Run: "r1", hidden: 9}, Deleted: 2},
		"nil":     report{Deleted: 2},
		"value":   valueReport{plan: plan{Files: 3, Run: "r1"}, Deleted: 2},
	} {
		var out bytes.Buffer
		if err := Encode(&out, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plain, _ := json.Marshal(v)
		var got, want map[string]any
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal(plain, &want)
		want["schema_version"] = float64(SchemaVersion)
		if g, w := mustJSON(got), mustJSON(want); g != w || !strings.HasPrefix(out.String(), "{\n  \"schema_version\": 2,") {
			t.Errorf("%s: %s, want the members of %s", name, out.String(), w)
		}
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
