package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// Keys, column names and values holding ESC, newline, tab and U+202E reach the text output
// escaped, never raw: no byte of a terminal control sequence and no bidirectional override
// is printed as it is.
func TestHostileNamesInTextOutput(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "evil\x1b]0;pwned\x07", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "tab\there", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rows := `[{"id": 1, "evil\u001b]0;pwned\u0007": "clear\u001b[2J", "tab\there": "line\nforged: 0 unreadable"},
	          {"id": 2, "evil\u001b]0;pwned\u0007": "\u202egpj.exe", "tab\there": "ok"}]`
	data := mustBytes(t, sc, rows, pqgen.Options{})
	s := newStore()
	s.put(prefix+"a\x1b[2J.parquet", data, t0)
	s.put(prefix+"b\nUnreadable files: 0.parquet", data, t0)
	s.put(prefix+"c\u202ekcod.parquet", []byte("not parquet at all"), t0)
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	var prev bytes.Buffer
	res, err := inspect.PreviewGroup(context.Background(), s, rep, rep.Groups[0].SchemaID, inspect.PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WriteTable(&prev); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string][]byte{"inspect": text.Bytes(), "preview": prev.Bytes()} {
		for _, bad := range []string{"\x1b", "\x07", "\u202e", "\nforged", "\nUnreadable files: 0"} {
			if bytes.Contains(out, []byte(bad)) {
				t.Errorf("%s output holds %q raw:\n%s", name, bad, out)
			}
		}
	}
	golden(t, "hostile-inspect.golden", text.Bytes())
	golden(t, "hostile-preview.golden", prev.Bytes())
}

// A key that is not valid UTF-8 survives JSON: key_quoted holds it Go-quoted, and preview
// takes that form back to the object.
func TestNonUTF8KeyRoundTripsThroughJSON(t *testing.T) {
	f := newFixture(t)
	s := newStore()
	key := "bad\xff\xfename.parquet"
	s.put(prefix+key, f.a1, t0)
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Files []struct {
			Key       string `json:"key"`
			KeyQuoted string `json:"key_quoted"`
		} `json:"files"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	got := doc.Files[0].KeyQuoted
	if got != `"bad\xff\xfename.parquet"` {
		t.Fatalf("key_quoted %q", got)
	}
	res, err := inspect.Preview(context.Background(), s, got, inspect.PreviewOptions{Rows: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Files[0].Key != key || len(res.Rows) != 1 {
		t.Errorf("previewed %q, %d rows", res.Files[0].Key, len(res.Rows))
	}
}
