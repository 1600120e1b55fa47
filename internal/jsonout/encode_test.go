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
