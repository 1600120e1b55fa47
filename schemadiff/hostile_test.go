package schemadiff

import (
	"runtime"
	"strings"
	"testing"
)

// nestedDDL is a column nested depth levels deep in DDL.
func nestedDDL(depth int) string {
	return "c " + strings.Repeat("STRUCT<a: ", depth) + "INT" + strings.Repeat(">", depth)
}

// nestedJSON is the same as a Delta schema string.
func nestedJSON(depth int) string {
	t := `"integer"`
	for i := 0; i < depth; i++ {
		t = `{"type":"struct","fields":[{"name":"a","type":` + t + `,"nullable":true,"metadata":{}}]}`
	}
	return `{"type":"struct","fields":[{"name":"c","type":` + t + `,"nullable":true,"metadata":{}}]}`
}

// Schema files are held to the same depth and size limits as footers, in every form.
func TestSchemaFileLimits(t *testing.T) {
	ok := map[string]string{
		"ddl at the limit":  nestedDDL(MaxDepth - 1),
		"json at the limit": nestedJSON(MaxDepth - 1),
	}
	for name, doc := range ok {
		if _, err := ParseSchemaFile([]byte(doc)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]struct{ doc, want string }{
		"deep ddl":          {nestedDDL(100_000), "types nested deeper than 100 levels"},
		"deep json":         {nestedJSON(2_000), "types nested deeper than 100 levels"},
		"deep describe":     {`{"columns":[{"name":"c","type":` + strings.Repeat(`{"name":"array","element_type":`, 500) + `{"name":"int"}` + strings.Repeat(`}`, 500) + `}]}`, "types nested deeper than 100 levels"},
		"too big":           {"c INT, " + strings.Repeat(" ", MaxSchemaBytes), "over the 16777216-byte limit"},
		"no columns (json)": {`{"type":"struct","fields":[]}`, "no columns"},
		"no columns (list)": {`[]`, "no columns"},
		"duplicate (json)":  {`{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{}},{"name":"A","type":"long","nullable":true,"metadata":{}}]}`, "duplicate column A (and a)"},
		"duplicate nested":  {`[{"name":"s","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"x","type":"integer","nullable":true,"metadata":{}},{"name":"x","type":"integer","nullable":true,"metadata":{}}]},"containsNull":true},"nullable":true,"metadata":{}}]`, "duplicate column s.element.x"},
		"duplicate (ddl)":   {"a INT, b INT, a STRING", "duplicate column a"},
	}
	for name, c := range bad {
		_, err := ParseSchemaFile([]byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", name, err, c.want)
		}
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// Diffing schemas costs memory linear in their nesting depth: doubling the depth about doubles
// the allocation (copying the path at every level made it quadruple). The parsers stop at
// MaxDepth, and build their paths the same way.
func TestPathsAreLinearInDepth(t *testing.T) {
	deep := func(n int, leaf Type) Schema {
		typ := leaf
		for i := 0; i < n; i++ {
			typ = Type{Kind: Struct, Fields: []Field{{Name: "member_with_a_long_name", Type: typ, Nullable: true}}}
		}
		return Schema{Fields: []Field{{Name: "c", Type: typ, Nullable: true}}}
	}
	measure := func(n int) (diff uint64) {
		file, table := deep(n, Type{Kind: Integer}), deep(n, Type{Kind: Long})
		diff = allocated(func() {
			if ch := Diff(file, table); len(ch) != 1 {
				t.Fatalf("%d changes", len(ch))
			}
		})
		return diff
	}
	d1, d2 := measure(2000), measure(4000)
	if d2 > d1*3 {
		t.Errorf("diff: %d bytes at depth 2000, %d at 4000", d1, d2)
	}
}
