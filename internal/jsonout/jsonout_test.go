package jsonout

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestVersioned(t *testing.T) {
	type doc struct {
		A int      `json:"a"`
		B []string `json:"b"`
	}
	var ind bytes.Buffer
	enc := json.NewEncoder(&ind)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc{1, []string{"x"}}); err != nil {
		t.Fatal(err)
	}
	flat, _ := json.Marshal(doc{2, nil})
	for _, in := range [][]byte{ind.Bytes(), flat, []byte("{}"), []byte("{}\n")} {
		out := Versioned(in)
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("Versioned(%q) = %q: %v", in, out, err)
		}
		if m["schema_version"] != float64(SchemaVersion) {
			t.Errorf("Versioned(%q) = %q: no schema_version", in, out)
		}
		if !bytes.HasPrefix(bytes.TrimLeft(bytes.TrimPrefix(out, []byte("{")), " \n"), []byte(`"schema_version"`)) {
			t.Errorf("Versioned(%q) = %q: schema_version is not the first member", in, out)
		}
	}
	if got := Versioned(ind.Bytes()); !bytes.HasPrefix(got, []byte("{\n  \"schema_version\": 2,\n  \"a\": 1")) {
		t.Errorf("indented: %q", got)
	}
	for _, in := range []string{`[1,2]`, `"s"`, ``} {
		if got := Versioned([]byte(in)); string(got) != in {
			t.Errorf("Versioned(%q) = %q", in, got)
		}
	}
}
