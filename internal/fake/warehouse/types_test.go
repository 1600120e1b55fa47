package warehouse

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseType(t *testing.T) {
	tests := []struct {
		in, simple, sql, duck string
	}{
		{"BIGINT", "bigint", "BIGINT", "BIGINT"},
		{"long", "bigint", "BIGINT", "BIGINT"},
		{"Integer", "int", "INT", "INTEGER"},
		{"short", "smallint", "SMALLINT", "SMALLINT"},
		{"byte", "tinyint", "TINYINT", "TINYINT"},
		{"decimal", "decimal(10,0)", "DECIMAL(10,0)", "DECIMAL(10,0)"},
		{"DECIMAL(38, 10)", "decimal(38,10)", "DECIMAL(38,10)", "DECIMAL(38,10)"},
		{"varchar(20)", "string", "STRING", "VARCHAR"},
		{"timestamp_ltz", "timestamp", "TIMESTAMP", "TIMESTAMPTZ"},
		{"TIMESTAMP_NTZ", "timestamp_ntz", "TIMESTAMP_NTZ", "TIMESTAMP"},
		{"ARRAY<ARRAY<INT>>", "array<array<int>>", "ARRAY<ARRAY<INT>>", "INTEGER[][]"},
		{"map<string,bigint>", "map<string,bigint>", "MAP<STRING, BIGINT>", "MAP(VARCHAR, BIGINT)"},
		{"STRUCT<a: INT NOT NULL COMMENT 'x', `b c`: STRUCT<d STRING>>", "struct<a:int,b c:struct<d:string>>",
			"STRUCT<a: INT NOT NULL, `b c`: STRUCT<d: STRING>>", `STRUCT("a" INTEGER, "b c" STRUCT("d" VARCHAR))`},
		{"struct<>", "struct<>", "STRUCT<>", "STRUCT()"},
	}
	for _, tt := range tests {
		typ, err := ParseType(tt.in)
		if err != nil {
			t.Errorf("ParseType(%q): %v", tt.in, err)
			continue
		}
		if typ.Simple() != tt.simple || typ.SQL() != tt.sql || typ.Duck() != tt.duck {
			t.Errorf("ParseType(%q) = %s | %s | %s, want %s | %s | %s", tt.in, typ.Simple(), typ.SQL(), typ.Duck(), tt.simple, tt.sql, tt.duck)
		}
		// The SQL form parses back to the same type.
		back, err := ParseType(typ.SQL())
		if err != nil || !back.Equal(typ) {
			t.Errorf("round trip of %q via %q: %v %v", tt.in, typ.SQL(), back, err)
		}
	}
	for _, bad := range []string{"", "FOO", "DECIMAL(39,0)", "DECIMAL(5,6)", "ARRAY<INT", "MAP<INT>", "INTERVAL DAY", "VARIANT"} {
		if _, err := ParseType(bad); err == nil {
			t.Errorf("ParseType(%q) succeeded", bad)
		}
	}
}

func TestTypeJSONAndDelta(t *testing.T) {
	typ, err := ParseType("STRUCT<a: DECIMAL(5,2), b: ARRAY<TIMESTAMP>, c: MAP<STRING, INT>>")
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(typ.JSON())
	want := `{"fields":[{"name":"a","nullable":true,"type":{"name":"decimal","precision":5,"scale":2}},` +
		`{"name":"b","nullable":true,"type":{"element_nullable":true,"element_type":{"name":"timestamp_ltz"},"name":"array"}},` +
		`{"name":"c","nullable":true,"type":{"key_type":{"name":"string"},"name":"map","value_nullable":true,"value_type":{"name":"int"}}}],"name":"struct"}`
	if string(j) != want {
		t.Errorf("JSON = %s", j)
	}
	d, _ := json.Marshal(typ.Delta())
	wantDelta := `{"fields":[{"metadata":{},"name":"a","nullable":true,"type":"decimal(5,2)"},` +
		`{"metadata":{},"name":"b","nullable":true,"type":{"containsNull":true,"elementType":"timestamp","type":"array"}},` +
		`{"metadata":{},"name":"c","nullable":true,"type":{"keyType":"string","type":"map","valueContainsNull":true,"valueType":"integer"}}],"type":"struct"}`
	if string(d) != wantDelta {
		t.Errorf("Delta = %s", d)
	}
	tree := TreeString([]Field{{Name: "s", Type: typ, Nullable: false}})
	if !strings.Contains(tree, " |-- s: struct (nullable = false)\n |    |-- a: decimal(5,2) (nullable = true)\n") ||
		!strings.Contains(tree, " |    |    |-- element: timestamp (containsNull = true)\n") ||
		!strings.Contains(tree, " |    |    |-- key: string\n |    |    |-- value: integer (valueContainsNull = true)\n") {
		t.Errorf("tree:\n%s", tree)
	}
}

func TestParseDuckType(t *testing.T) {
	tests := map[string]string{
		"INTEGER":                         "int",
		"UTINYINT":                        "smallint",
		"USMALLINT":                       "int",
		"UINTEGER":                        "bigint",
		"UBIGINT":                         "decimal(20,0)",
		"TIMESTAMP WITH TIME ZONE":        "timestamp",
		"TIMESTAMP":                       "timestamp_ntz",
		"DECIMAL(10,2)":                   "decimal(10,2)",
		"VARCHAR[]":                       "array<string>",
		"MAP(VARCHAR, INTEGER[])":         "map<string,array<int>>",
		`STRUCT("x y" INTEGER, z BLOB)[]`: "array<struct<x y:int,z:binary>>",
		"JSON":                            "string",
		"ENUM('a', 'b')":                  "string",
	}
	for in, want := range tests {
		typ, err := ParseDuckType(in)
		if err != nil || typ.Simple() != want {
			t.Errorf("ParseDuckType(%q) = %v, %v; want %s", in, typ, err, want)
		}
	}
	if _, err := ParseDuckType("TIME"); err == nil {
		t.Error("TIME has no Spark equivalent")
	}
}

func TestTokenize(t *testing.T) {
	toks, err := tokenize("SELECT `a``b`, 'it\\'s', \"dq\", r'raw\\n', 10L, 1.5BD, x::bigint -- comment\n/* block */ FROM t;")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tk := range toks {
		if tk.kind != tkEOF {
			got = append(got, tk.val)
		}
	}
	want := []string{"SELECT", "a`b", ",", "it's", ",", "dq", ",", `raw\n`, ",", "10", ",", "1.5", ",", "x", "::", "bigint", "FROM", "t", ";"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("tokens = %q", got)
	}
	for _, bad := range []string{"'open", "`open", "/* open"} {
		if _, err := tokenize(bad); err == nil {
			t.Errorf("tokenize(%q) succeeded", bad)
		}
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		glob, path string
		match      bool
	}{
		{"*.parquet", "a.parquet", true},
		{"*.parquet", "sub/a.parquet", false},
		{"sub/*.parquet", "sub/a.parquet", true},
		{"file_[a-c].parquet", "file_b.parquet", true},
		{"file_[^a-c].parquet", "file_b.parquet", false},
		{"{a,b}/x?.parquet", "b/x1.parquet", true},
		{"{a,b}/x?.parquet", "c/x1.parquet", false},
	}
	for _, tt := range tests {
		re, err := globToRegexp(tt.glob)
		if err != nil {
			t.Fatalf("%s: %v", tt.glob, err)
		}
		if re.MatchString(tt.path) != tt.match {
			t.Errorf("glob %q on %q = %t", tt.glob, tt.path, !tt.match)
		}
	}
}

func TestCanonicalURL(t *testing.T) {
	tests := map[string]string{
		"/tmp/x/":                                "file:///tmp/x",
		"file:/tmp/x":                            "file:///tmp/x",
		"file:///tmp/x/../y":                     "file:///tmp/y",
		"s3://bucket/a/b/":                       "s3://bucket/a/b",
		"s3a://bucket/a":                         "s3://bucket/a",
		"gs://bucket/a":                          "gs://bucket/a",
		"abfss://c@acct.dfs.core.windows.net/p/": "abfss://c@acct.dfs.core.windows.net/p",
	}
	for in, want := range tests {
		if got, err := canonicalURL(in); err != nil || got != want {
			t.Errorf("canonicalURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if !isUnder("s3://b/root/_zerobus/x", "s3://b/root") || isUnder("s3://b/rootx", "s3://b/root") {
		t.Error("isUnder")
	}
}

func TestTypeRules(t *testing.T) {
	p := func(s string) *Type {
		typ, err := ParseType(s)
		if err != nil {
			t.Fatal(err)
		}
		return typ
	}
	compat := []struct {
		src, dst string
		ok       bool
	}{
		{"INT", "INT", true},
		{"SMALLINT", "INT", true},
		{"TINYINT", "SMALLINT", true},
		{"INT", "SMALLINT", false},
		{"INT", "BIGINT", false},
		{"FLOAT", "DOUBLE", false},
		{"DECIMAL(10,2)", "DECIMAL(10,2)", true},
		{"DECIMAL(10,2)", "DECIMAL(12,2)", false},
		{"TIMESTAMP", "TIMESTAMP_NTZ", false},
		{"STRING", "BINARY", false},
		{"STRUCT<B: INT>", "STRUCT<a: STRING, b: INT>", true},
		{"STRUCT<b: INT>", "STRUCT<a: STRING NOT NULL, b: INT>", false},
		{"STRUCT<b: INT, c: INT>", "STRUCT<b: INT>", false},
		{"ARRAY<SMALLINT>", "ARRAY<INT>", true},
		{"MAP<STRING, INT>", "MAP<STRING, BIGINT>", false},
	}
	for _, c := range compat {
		if got := copyCompatible(p(c.src), p(c.dst)); got != c.ok {
			t.Errorf("copyCompatible(%s, %s) = %t", c.src, c.dst, got)
		}
	}
	fits := []struct {
		src, dst string
		fit      fit
		path     string
	}{
		{"STRUCT<b: INT, c: INT>", "STRUCT<b: INT>", fitExtraMember, "c"},
		{"STRUCT<b: INT>", "STRUCT<a: STRING NOT NULL, b: INT>", fitMissingNotNull, "a"},
		{"STRUCT<b: BIGINT, c: INT>", "STRUCT<b: INT>", fitIncompatible, "b"},
		{"ARRAY<STRUCT<x: INT, y: INT>>", "ARRAY<STRUCT<X: INT>>", fitExtraMember, "element.y"},
		{"MAP<STRING, STRUCT<x: INT>>", "MAP<STRING, STRUCT<x: INT, z: INT NOT NULL>>", fitMissingNotNull, "value.z"},
	}
	for _, c := range fits {
		if got, path := copyFit(p(c.src), p(c.dst)); got != c.fit || path != c.path {
			t.Errorf("copyFit(%s, %s) = %d %q, want %d %q", c.src, c.dst, got, path, c.fit, c.path)
		}
	}
	widen := []struct {
		from, to string
		ok       bool
	}{
		{"INT", "BIGINT", true},
		{"BIGINT", "INT", false},
		{"INT", "DECIMAL(10,0)", true},
		{"INT", "DECIMAL(9,0)", false},
		{"BIGINT", "DECIMAL(20,0)", true},
		{"FLOAT", "DOUBLE", true},
		{"DECIMAL(10,2)", "DECIMAL(12,2)", true},
		{"DECIMAL(10,2)", "DECIMAL(12,4)", true},
		{"DECIMAL(10,2)", "DECIMAL(11,3)", true},
		{"DECIMAL(10,2)", "DECIMAL(11,4)", false},
		{"DATE", "TIMESTAMP_NTZ", true},
		{"DATE", "TIMESTAMP", false},
		{"STRING", "BINARY", false},
	}
	for _, w := range widen {
		if got := typeWidening(p(w.from), p(w.to)); got != w.ok {
			t.Errorf("typeWidening(%s, %s) = %t", w.from, w.to, got)
		}
	}
}

func TestSQLErrorText(t *testing.T) {
	err := errTableNotFound(quoteName("c", "s", "t"))
	if !strings.HasPrefix(err.Error(), "[TABLE_OR_VIEW_NOT_FOUND] The table or view `c`.`s`.`t` cannot be found.") ||
		!strings.HasSuffix(err.Error(), " SQLSTATE: 42P01") {
		t.Errorf("error text = %q", err)
	}
}
