package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/schemadiff"
)

func run(t *testing.T, f *fixture, opts inspect.Options) *inspect.Report {
	t.Helper()
	rep, err := inspect.Run(context.Background(), f.store, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

func fileByKey(t *testing.T, rep *inspect.Report, key string) inspect.File {
	t.Helper()
	for _, f := range rep.Files {
		if f.Key == key {
			return f
		}
	}
	t.Fatalf("no file %q in report", key)
	return inspect.File{}
}

func TestRunReadsFootersAndGroups(t *testing.T) {
	f := newFixture(t)
	rep := run(t, f, inspect.Options{})

	wantKeys := []string{"a.parquet", "bad.parquet", "c.parquet", "empty.parquet", "sub/2024/b.parquet"}
	var keys []string
	for _, fi := range rep.Files {
		keys = append(keys, fi.Key)
	}
	if strings.Join(keys, " ") != strings.Join(wantKeys, " ") {
		t.Errorf("files %v, want %v", keys, wantKeys)
	}

	a := fileByKey(t, rep, "a.parquet")
	if a.Rows != 5 || a.RowGroups != 3 || a.Size != int64(len(f.a1)) || a.Error != "" {
		t.Errorf("a.parquet: %+v", a)
	}
	if a.CreatedBy != "zerobus-writer 0.9" {
		t.Errorf("created_by %q", a.CreatedBy)
	}
	if len(a.KeyValue) == 0 || a.KeyValue[len(a.KeyValue)-1] != (inspect.KV{Key: "zerobus.stream", Value: "s-1"}) {
		t.Errorf("key-value %v", a.KeyValue)
	}
	if !a.Modified.Equal(t0) {
		t.Errorf("modified %v", a.Modified)
	}
	b := fileByKey(t, rep, "sub/2024/b.parquet")
	if b.Rows != 2 || b.RowGroups != 1 {
		t.Errorf("b: %+v", b)
	}
	e := fileByKey(t, rep, "empty.parquet")
	if e.Rows != 0 || e.Error != "" {
		t.Errorf("empty: %+v", e)
	}
	c := fileByKey(t, rep, "c.parquet")
	if c.Rows != 3 || c.Error != "" {
		t.Errorf("c: %+v", c)
	}
	bad := fileByKey(t, rep, "bad.parquet")
	if bad.Error == "" || bad.SchemaID != "" || bad.Rows != 0 {
		t.Errorf("bad.parquet should be unreadable: %+v", bad)
	}

	idA, idB := inspect.SchemaID(sparkA), inspect.SchemaID(sparkB)
	if a.SchemaID != idA || b.SchemaID != idA || e.SchemaID != idA {
		t.Errorf("schema A ids: %s %s %s, want %s", a.SchemaID, b.SchemaID, e.SchemaID, idA)
	}
	if c.SchemaID != idB {
		t.Errorf("schema B id %s, want %s", c.SchemaID, idB)
	}

	tot := rep.Totals
	want := inspect.Totals{Files: 5, Rows: 10, Unreadable: 1, OtherObjects: 4, Groups: 2,
		Bytes:      int64(len(f.a1) + len(f.a2) + len(f.empty) + len(f.b) + len(f.bad)),
		OtherBytes: int64(2*len(f.a1) + 5)}
	if tot != want {
		t.Errorf("totals %+v, want %+v", tot, want)
	}

	if len(rep.Groups) != 2 {
		t.Fatalf("%d groups", len(rep.Groups))
	}
	ga, gb := rep.Groups[0], rep.Groups[1]
	if ga.SchemaID != idA || ga.Files != 3 || ga.Rows != 7 || ga.Bytes != int64(len(f.a1)+len(f.a2)+len(f.empty)) {
		t.Errorf("group A: %+v", ga)
	}
	if !ga.FirstModified.Equal(t0) || !ga.LastModified.Equal(t0.Add(2*time.Hour)) || ga.FirstFile != "a.parquet" {
		t.Errorf("group A times/first: %v %v %s", ga.FirstModified, ga.LastModified, ga.FirstFile)
	}
	if gb.SchemaID != idB || gb.Files != 1 || gb.Rows != 3 {
		t.Errorf("group B: %+v", gb)
	}
	if got, want := inspect.SchemaKey(ga.Schema), inspect.SchemaKey(sparkA); got != want {
		t.Errorf("group A schema\n got %s\nwant %s", got, want)
	}
	if got, want := inspect.SchemaKey(gb.Schema), inspect.SchemaKey(sparkB); got != want {
		t.Errorf("group B schema\n got %s\nwant %s", got, want)
	}
	wantCols := []string{"id bigint false", "name string true", "amount decimal(18,4) true", "big decimal(38,10) true",
		"ts timestamp true", "local_ts timestamp_ntz true", "day date true",
		"attrs struct<a:int,b:string NOT NULL,inner:struct<c:decimal(9,2)>> true",
		"tags array<string> true", "counts map<string,bigint> true", "items array<struct<x:bigint NOT NULL,y:array<double>>> true"}
	for i, col := range ga.Columns {
		got := col.Name + " " + col.Type + " " + map[bool]string{true: "true", false: "false"}[col.Nullable]
		if i >= len(wantCols) || got != wantCols[i] {
			t.Errorf("column %d: %s", i, got)
		}
	}
}

func TestNullCountsFromFooterStatistics(t *testing.T) {
	f := newFixture(t)
	rep := run(t, f, inspect.Options{})
	ga := rep.Group(inspect.SchemaID(sparkA))
	if ga == nil {
		t.Fatal("no group A")
	}
	byName := map[string]schemadiff.Field{}
	for _, fl := range ga.Schema.Fields {
		byName[fl.Name] = fl
	}
	// name: 2 nulls in a.parquet + 1 in b.parquet + 0 rows in empty.parquet.
	if n := byName["name"]; !n.NullCountKnown || n.NullCount != 3 {
		t.Errorf("name null count %d known %v, want 3", n.NullCount, n.NullCountKnown)
	}
	if n := byName["id"]; !n.NullCountKnown || n.NullCount != 0 {
		t.Errorf("id (required) null count %d known %v", n.NullCount, n.NullCountKnown)
	}
	// amount: 1 null in a.parquet, 1 in b.parquet.
	if n := byName["amount"]; !n.NullCountKnown || n.NullCount != 2 {
		t.Errorf("amount null count %d known %v, want 2", n.NullCount, n.NullCountKnown)
	}
	// Nested columns: not derivable exactly from leaf statistics.
	if n := byName["attrs"]; n.NullCountKnown {
		t.Errorf("attrs null count should be unknown, got %d", n.NullCount)
	}
	for _, c := range ga.Columns {
		if c.Name == "name" && (c.NullCount == nil || *c.NullCount != 3) {
			t.Errorf("column name null_count %v", c.NullCount)
		}
	}

	// Without statistics the count is unknown, and that spreads to the whole group.
	s := newStore()
	s.put(prefix+"1.parquet", mustBytes(t, schemaA, rowsA2, pqgen.Options{}), t0)
	s.put(prefix+"2.parquet", mustBytes(t, schemaA, rowsA2, pqgen.Options{NoStats: true}), t0)
	rep2, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep2.Groups) != 1 {
		t.Fatalf("%d groups", len(rep2.Groups))
	}
	for _, fl := range rep2.Groups[0].Schema.Fields {
		if fl.Name == "name" && fl.NullCountKnown {
			t.Errorf("name null count known (%d) though one file has no statistics", fl.NullCount)
		}
		if fl.Name == "id" && (!fl.NullCountKnown || fl.NullCount != 0) {
			t.Errorf("required id must have a known 0 null count")
		}
	}
}

func TestReportJSONShape(t *testing.T) {
	f := newFixture(t)
	rep := run(t, f, inspect.Options{})
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Root  *string `json:"root"`
		Files []map[string]json.RawMessage
		Group []map[string]json.RawMessage `json:"groups"`
		Tot   map[string]json.RawMessage   `json:"totals"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Root == nil || *doc.Root != "mem://table" {
		t.Errorf("root %v", doc.Root)
	}
	need := func(what string, m map[string]json.RawMessage, keys ...string) {
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Errorf("%s lacks %q: %v", what, k, m)
			}
		}
	}
	for _, fi := range doc.Files {
		need("file", fi, "key", "size", "rows", "row_groups", "modified")
		var key string
		json.Unmarshal(fi["key"], &key)
		if key == "bad.parquet" {
			need("unreadable file", fi, "error")
		} else {
			need("file", fi, "schema_id")
		}
		var mod string
		json.Unmarshal(fi["modified"], &mod)
		if _, err := time.Parse(time.RFC3339, mod); err != nil {
			t.Errorf("modified %q is not RFC3339", mod)
		}
	}
	for _, g := range doc.Group {
		need("group", g, "schema_id", "files", "rows", "bytes", "first_modified", "last_modified", "columns")
		var cols []map[string]json.RawMessage
		json.Unmarshal(g["columns"], &cols)
		for _, c := range cols {
			need("column", c, "name", "type", "nullable")
		}
	}
	need("totals", doc.Tot, "files", "rows", "bytes", "unreadable", "other_objects")
	if string(doc.Tot["rows"]) != "10" || string(doc.Tot["other_objects"]) != "4" {
		t.Errorf("totals %v", doc.Tot)
	}
}

func TestReportText(t *testing.T) {
	f := newFixture(t)
	rep := run(t, f, inspect.Options{})
	var buf bytes.Buffer
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	idA := inspect.SchemaID(sparkA)
	for _, want := range []string{
		"Files:   5 Parquet files, 10 rows",
		"1 unreadable",
		"Other:   4 objects not read",
		"Schema groups: 2",
		idA + "  3      7",
		"2024-05-01T10:00:00Z",
		"2024-05-01T12:00:00Z",
		"bad.parquet (",
		"Schema " + idA + " (3 files, first: a.parquet)",
		"local_ts  timestamp_ntz",
		"name      string",
		"NULL (3 nulls)",
		"id        bigint",
		"NOT NULL",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
}

func TestEmptyFolder(t *testing.T) {
	s := newStore()
	s.put("_delta_log/0.json", []byte("{}"), t0)
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals != (inspect.Totals{}) || len(rep.Files) != 0 || len(rep.Groups) != 0 {
		t.Errorf("report %+v", rep)
	}
	var buf bytes.Buffer
	rep.WriteText(&buf)
	if !strings.Contains(buf.String(), "nothing to recover") {
		t.Errorf("text: %s", buf.String())
	}
	buf.Reset()
	rep.WriteJSON(&buf)
	if !strings.Contains(buf.String(), `"files": []`) {
		t.Errorf("json should list no files as []: %s", buf.String())
	}
}

func TestClassify(t *testing.T) {
	for rel, want := range map[string]string{
		"a.parquet":                "parquet",
		"2024/05/01/part.parquet":  "parquet",
		"_SUCCESS":                 "other",
		"_tmp/a.parquet":           "other",
		".hidden.parquet":          "other",
		"x/.staging/a.parquet":     "other",
		"a.parquet.crc":            "other",
		"notes.txt":                "other",
		"a_b.parquet":              "parquet",
		"dir_/x.parquet":           "parquet",
		"x/_committed_123.parquet": "other",
		// Spark lists a "_" name that holds "=" (a partition folder such as _p=1) as data.
		"_p=1/a.parquet":      "parquet",
		"x/_k=v.parquet":      "parquet",
		"_p=1/_tmp/a.parquet": "other",
		".p=1/a.parquet":      "other",
	} {
		if got := inspect.Classify(rel); got != want {
			t.Errorf("Classify(%q) = %s, want %s", rel, got, want)
		}
	}
}

func TestProgressAndStream(t *testing.T) {
	f := newFixture(t)
	var last inspect.Progress
	calls := 0
	rep, err := inspect.Run(context.Background(), f.store, inspect.Options{Concurrency: 2, Progress: func(p inspect.Progress) {
		calls++
		if p.Done < last.Done || p.Listed < last.Listed {
			t.Errorf("progress went backwards: %+v after %+v", p, last)
		}
		last = p
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !last.ListingDone || last.Done != 5 || last.Listed != 5 || last.DoneBytes != rep.Totals.Bytes || last.ListedBytes != rep.Totals.Bytes {
		t.Errorf("final progress %+v", last)
	}
	if calls < 11 {
		t.Errorf("%d progress calls", calls)
	}

	// A callback error stops the stream and is returned.
	boom := errors.New("boom")
	_, err = inspect.Stream(context.Background(), f.store, inspect.Options{}, func(inspect.FileResult) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("Stream error %v, want boom", err)
	}
}

func TestCancelledContext(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := inspect.Run(ctx, f.store, inspect.Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run on a cancelled context: %v", err)
	}
}

func TestSchemaIDStableAndSensitive(t *testing.T) {
	base := schemadiff.Schema{Fields: []schemadiff.Field{
		{Name: "id", Type: schemadiff.LongType},
		{Name: "tags", Type: schemadiff.ArrayType(schemadiff.StringType, true), Nullable: true},
	}}
	id := inspect.SchemaID(base)
	if len(id) != 12 || id != inspect.SchemaID(base) {
		t.Fatalf("id %q", id)
	}
	// Null counts do not change the id.
	withCounts := base
	withCounts.Fields = append([]schemadiff.Field(nil), base.Fields...)
	withCounts.Fields[1].NullCount, withCounts.Fields[1].NullCountKnown = 5, true
	if inspect.SchemaID(withCounts) != id {
		t.Error("null counts changed the schema id")
	}
	variants := map[string]func(s *schemadiff.Schema){
		"nullability":  func(s *schemadiff.Schema) { s.Fields[0].Nullable = true },
		"element null": func(s *schemadiff.Schema) { s.Fields[1].Type = schemadiff.ArrayType(schemadiff.StringType, false) },
		"type":         func(s *schemadiff.Schema) { s.Fields[0].Type = schemadiff.IntegerType },
		"name case":    func(s *schemadiff.Schema) { s.Fields[0].Name = "ID" },
		"order":        func(s *schemadiff.Schema) { s.Fields[0], s.Fields[1] = s.Fields[1], s.Fields[0] },
		"field id":     func(s *schemadiff.Schema) { s.Fields[0].ID = 3 },
	}
	for name, mut := range variants {
		s := schemadiff.Schema{Fields: append([]schemadiff.Field(nil), base.Fields...)}
		mut(&s)
		if inspect.SchemaID(s) == id {
			t.Errorf("%s change kept the schema id", name)
		}
	}
}

func TestManyFilesOneGroup(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	s := newStore()
	s.setPageSize(7)
	var rows int64
	for i := 0; i < 50; i++ {
		n := i % 5
		data, err := pqgen.GeneratedBytes(sc, n, int64(i), pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rows += int64(n)
		s.put(prefix+"d"+string(rune('a'+i%3))+"/f"+strings.Repeat("x", i%4)+"-"+time.Duration(i).String()+".parquet", data, t0.Add(time.Duration(i)*time.Minute))
	}
	rep, err := inspect.Run(context.Background(), s, inspect.Options{Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Files != 50 || rep.Totals.Rows != rows || len(rep.Groups) != 1 || rep.Groups[0].Files != 50 {
		t.Errorf("totals %+v, %d groups", rep.Totals, len(rep.Groups))
	}
	g := rep.Groups[0]
	if !g.FirstModified.Equal(t0) || !g.LastModified.Equal(t0.Add(49*time.Minute)) {
		t.Errorf("group times %v .. %v", g.FirstModified, g.LastModified)
	}
}

func TestFindGroup(t *testing.T) {
	r := &inspect.Report{Groups: []inspect.Group{{SchemaID: "abc123def456"}, {SchemaID: "abd456abc123"}}}
	if g, err := r.FindGroup("abc"); err != nil || g.SchemaID != "abc123def456" {
		t.Errorf("unique prefix: %v %v", g, err)
	}
	if g, err := r.FindGroup("abd456abc123"); err != nil || g.SchemaID != "abd456abc123" {
		t.Errorf("full id: %v %v", g, err)
	}
	if _, err := r.FindGroup("ab"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("ambiguous prefix: %v", err)
	}
	if _, err := r.FindGroup("ff"); err == nil || !strings.Contains(err.Error(), "abc123def456, abd456abc123") {
		t.Errorf("unknown id: %v", err)
	}
	if r.Group("ab") != nil {
		t.Error("Group returned a match for an ambiguous prefix")
	}
}

func TestLongKeyValueIsCut(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	long := strings.Repeat("é", 3000) // 6,000 bytes
	s := newStore()
	for i := 0; i < 3; i++ {
		s.put(fmt.Sprintf("%s%d.parquet", prefix, i), mustBytes(t, sc, `[{"id":1}]`, pqgen.Options{
			KeyValue: []pqgen.KV{{Key: "short", Value: "v"}, {Key: "schema", Value: long}},
		}), t0)
	}
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Files {
		kv := map[string]inspect.KV{}
		for _, e := range f.KeyValue {
			kv[e.Key] = e
		}
		if kv["short"] != (inspect.KV{Key: "short", Value: "v"}) {
			t.Errorf("short value %+v", kv["short"])
		}
		cut := kv["schema"]
		if cut.Bytes != len(long) || len(cut.Value) > inspect.MaxKeyValueBytes || !strings.HasPrefix(long, cut.Value) || cut.Value == "" {
			t.Errorf("long value: %d bytes kept, Bytes=%d", len(cut.Value), cut.Bytes)
		}
	}
}
