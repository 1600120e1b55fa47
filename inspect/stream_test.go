package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

// encoded is the report as one json.Encoder call writes it: the form WriteJSON streams.
func encoded(t *testing.T, r *inspect.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := jsonout.Encode(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func streamStore(t *testing.T) *store {
	f := newFixture(t)
	s := newStore()
	s.put(prefix+"2024/05/01/a <1>.parquet", f.a1, t0)
	s.put(prefix+"2024/05/01/b.parquet", f.a2, t0)
	s.put(prefix+"2024/05/02/c.parquet", f.b, t0)
	s.put(prefix+"2024/05/02/bad.parquet", pqgen.Truncate(f.b, 40), t0)
	s.put(prefix+"_hidden/x.parquet", f.a1, t0)
	return s
}

// TestWriteJSONIsTheEncodedDocument: the streamed JSON document is byte for byte the one
// json.Encoder writes for the report, with and without a table diff, and for no files.
func TestWriteJSONIsTheEncodedDocument(t *testing.T) {
	s := streamStore(t)
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, r *inspect.Report) {
		var got bytes.Buffer
		if err := r.WriteJSON(&got); err != nil {
			t.Fatal(err)
		}
		if want := encoded(t, r); got.String() != want {
			t.Errorf("%s: streamed JSON differs from the encoded report:\n%s\nwant:\n%s", name, got.String(), want)
		}
	}
	check("no table", rep)
	table := sd.NewSchema().Col("id", sd.LongType).Col("region", sd.StringType, sd.NotNull)
	rep.Diff(inspect.NewTable(&sd.Table{Source: sd.SourceDelta, Schema: table}), inspect.DiffOptions{TableName: "main.s.t"})
	check("diffed", rep)

	// Under AllChanges every group is written with every change: the document json.Encoder
	// writes for the report whose groups hold them, and the keys after it.
	wider := table.Col("zz_note", sd.StringType)
	rep.Diff(inspect.NewTable(&sd.Table{Source: sd.SourceDelta, Schema: wider}), inspect.DiffOptions{TableName: "main.s.t", AllChanges: true})
	all := *rep
	all.Groups = append([]inspect.Group(nil), rep.Groups...)
	for i := range all.Groups {
		all.Groups[i].Changes, all.Groups[i].SameChangesAs = all.Groups[i].AllChanges(), ""
	}
	var got bytes.Buffer
	if err := rep.WriteJSON(&got, inspect.JSONMember{Key: "keys", Value: map[string]int{"records": 3}}); err != nil {
		t.Fatal(err)
	}
	want := encoded(t, &all)
	want = strings.TrimSuffix(want, "\n}\n") + ",\n  \"keys\": {\n    \"records\": 3\n  }\n}\n"
	if got.String() != want {
		t.Errorf("all changes: streamed JSON differs from the encoded report:\n%s\nwant:\n%s", got.String(), want)
	}
	if !strings.Contains(got.String(), `"path": "zz_note",
          "verdict": "ok"`) {
		t.Errorf("all changes: no ok change listed:\n%s", got.String())
	}
	rep.Diff(inspect.MissingTable("no table schema"), inspect.DiffOptions{})
	check("missing table", rep)
	empty, err := inspect.Run(context.Background(), newStore(), inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	check("empty", empty)
}

// TestStreamedReportMatchesRun: a report streamed without its files has the same groups,
// totals, unreadable files, diff and text as Run's, and JSON lines carry every file once,
// then the table, the groups and the totals.
func TestStreamedReportMatchesRun(t *testing.T) {
	s := streamStore(t)
	table := inspect.NewTable(&sd.Table{Source: sd.SourceDelta, Schema: sd.NewSchema().Col("id", sd.LongType).Col("region", sd.StringType)})
	full, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	jl := inspect.NewJSONLines(&out)
	jl.Header(s.Location(), prefix)
	streamed, err := inspect.StreamReport(context.Background(), s, inspect.Options{}, false, func(r inspect.FileResult) error {
		return jl.File(r.File)
	})
	if err != nil {
		t.Fatal(err)
	}
	if streamed.Files != nil {
		t.Errorf("streamed report kept %d files", len(streamed.Files))
	}
	for _, r := range []*inspect.Report{full, streamed} {
		r.Diff(table, inspect.DiffOptions{TableName: "main.s.t"})
	}
	var a, b strings.Builder
	full.WriteText(&a)
	streamed.WriteText(&b)
	if a.String() != b.String() {
		t.Errorf("text differs:\n%s\nstreamed:\n%s", a.String(), b.String())
	}
	gj, _ := json.Marshal(full.Groups)
	sj, _ := json.Marshal(streamed.Groups)
	if string(gj) != string(sj) || full.Totals != streamed.Totals {
		t.Errorf("groups or totals differ:\n%s %+v\n%s %+v", gj, full.Totals, sj, streamed.Totals)
	}
	if err := jl.Summary(streamed); err != nil {
		t.Fatal(err)
	}
	jl.Close()
	var kinds []string
	files := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil || len(m) != 1 {
			t.Fatalf("line %q: %v", line, err)
		}
		for k, v := range m {
			kinds = append(kinds, k)
			if k == "file" {
				var f inspect.File
				json.Unmarshal(v, &f)
				files[f.Key]++
			}
		}
	}
	want := "inspect file file file file table group group change_totals totals"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("lines %s, want %s", got, want)
	}
	for _, f := range full.Files {
		if files[f.Key] != 1 {
			t.Errorf("%s in %d file lines", f.Key, files[f.Key])
		}
	}
}

// TestStreamedGroupKeepsBoundedFiles: a streamed report keeps a group's files only while
// three COPY INTO statements can name them; past that, the suggestion points at reload.
func TestStreamedGroupKeepsBoundedFiles(t *testing.T) {
	f := newFixture(t)
	s := newStore()
	for i := 0; i < 3001; i++ {
		s.put(fmt.Sprintf("%sp-%05d.parquet", prefix, i), f.a1, t0)
	}
	rep, err := inspect.StreamReport(context.Background(), s, inspect.Options{}, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rep.GroupFiles(rep.Groups[0].SchemaID)); n != 0 {
		t.Errorf("kept %d files of a 3001-file group", n)
	}
	rep.Diff(inspect.NewTable(&sd.Table{Source: sd.SourceDelta, Schema: sd.NewSchema().Col("id", sd.LongType).Col("other", sd.LongType)}), inspect.DiffOptions{})
	sg := rep.Groups[0].Suggestion
	if sg == nil || len(sg.Statements) != 0 || !strings.Contains(strings.Join(sg.Notes, "\n"), "3,001 files need more than 3 COPY INTO statements (one per folder and 1,000 files)") {
		t.Errorf("suggestion %+v", sg)
	}
}
