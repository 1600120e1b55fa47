package schemadiff

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// deltaTestdata is the shared directory of real Delta tables (see its README.md).
const deltaTestdata = "../../shared/testdata/delta"

func loadExpected(t *testing.T) map[string]struct {
	SchemaString string `json:"schemaString"`
} {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deltaTestdata, "expected.json"))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Delta test tables missing: %v", err)
		}
		t.Skipf("Delta test tables missing: %v", err)
	}
	var exp map[string]struct {
		SchemaString string `json:"schemaString"`
	}
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	return exp
}

func TestParseDeltaSchemaRealTables(t *testing.T) {
	exp := loadExpected(t)
	names := make([]string, 0, len(exp))
	for n := range exp {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			s, err := ParseDeltaSchema(exp[name].SchemaString)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Fields) == 0 {
				t.Fatal("no fields")
			}
			// Round trip: DeltaJSON writes what ParseDeltaSchema reads, metadata included.
			again, err := ParseDeltaSchema(s.DeltaJSON())
			if err != nil {
				t.Fatalf("re-parse %s: %v", s.DeltaJSON(), err)
			}
			if !reflect.DeepEqual(s, again) {
				t.Errorf("round trip changed the schema:\n got %#v\nwant %#v", again, s)
			}
			// And the JSON is the same document, up to metadata key order.
			var a, b any
			if err := json.Unmarshal([]byte(exp[name].SchemaString), &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(s.DeltaJSON()), &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("DeltaJSON differs from the log's schemaString:\n got %s\nwant %s", s.DeltaJSON(), exp[name].SchemaString)
			}
		})
	}
}

func TestParseDeltaSchemaColumnMapping(t *testing.T) {
	exp := loadExpected(t)
	s, err := ParseDeltaSchema(exp["table-with-columnmapping-mode-name"].SchemaString)
	if err != nil {
		t.Fatal(err)
	}
	if !s.HasColumnMapping() {
		t.Error("HasColumnMapping = false")
	}
	ns, ok := s.Lookup("NESTED_STRUCT")
	if !ok {
		t.Fatal("nested_struct not found case-insensitively")
	}
	if ns.PhysicalName != "col-e08b8668-6c8f-4081-aa77-357325212630" || ns.ID != 13 {
		t.Errorf("nested_struct physical = %q id %d", ns.PhysicalName, ns.ID)
	}
	aca := ns.Type.Fields[1].Type.Fields[0]
	if aca.Name != "aca" || aca.ID != 16 || aca.PhysicalName != "col-562033a2-86d8-4eb3-83e6-87eb2f27314f" || aca.Type.Kind != Integer {
		t.Errorf("nested_struct.ac.aca = %+v", aca)
	}
	dec, _ := s.Lookup("decimal")
	if !dec.Type.Equal(DecimalType(10, 2)) {
		t.Errorf("decimal column type = %s", dec.Type)
	}
	am, _ := s.Lookup("array_of_map_of_arrays")
	if got := am.Type.String(); got != "array<map<int,array<int>>>" {
		t.Errorf("array_of_map_of_arrays = %s", got)
	}
	if got := s.Type().Fields[0].Type.String(); got != "tinyint" {
		t.Errorf("ByteType column = %s, want tinyint", got)
	}

	phys := s.PhysicalView()
	if phys.Fields[0].Name != "col-33314a5e-7dc1-438a-8f4d-df8c417071d6" {
		t.Errorf("PhysicalView first column = %q", phys.Fields[0].Name)
	}
	if got := phys.Fields[12].Type.Fields[1].Type.Fields[0].Name; got != "col-562033a2-86d8-4eb3-83e6-87eb2f27314f" {
		t.Errorf("PhysicalView nested member = %q", got)
	}
	if s.Fields[0].Name != "ByteType" {
		t.Error("PhysicalView modified its input")
	}
}

func TestParseDeltaSchemaMetadataKept(t *testing.T) {
	exp := loadExpected(t)
	s, err := ParseDeltaSchema(exp["checkpoint-v2-table"].SchemaString)
	if err != nil {
		t.Fatal(err)
	}
	hw := s.Fields[0].Metadata["delta.identity.highWaterMark"]
	if n, ok := hw.(json.Number); !ok || n.String() != "44" {
		t.Errorf("highWaterMark = %#v, want json.Number 44", hw)
	}
	if !strings.Contains(s.DeltaJSON(), `"delta.identity.highWaterMark":44`) {
		t.Errorf("DeltaJSON lost the metadata: %s", s.DeltaJSON())
	}
}

func TestParsePrimitiveSynonyms(t *testing.T) {
	cases := map[string]Type{
		"int": IntegerType, "INTEGER": IntegerType, "bigint": LongType, "long": LongType,
		"tinyint": ByteType, "byte": ByteType, "smallint": ShortType, "short": ShortType,
		"real": FloatType, "float": FloatType, "double": DoubleType, "boolean": BooleanType,
		"timestamp": TimestampType, "timestamp_ltz": TimestampType, "TIMESTAMP_NTZ": TimestampNTZType,
		"string": StringType, "varchar(20)": StringType, "char(3)": StringType,
		"string collate UTF8_LCASE": StringType, "binary": BinaryType, "date": DateType,
		"decimal": DecimalType(10, 0), "decimal(10,2)": DecimalType(10, 2), "DECIMAL( 38 , 0 )": DecimalType(38, 0),
		"numeric(5)": DecimalType(5, 0), "variant": VariantType, "void": {Kind: Void},
	}
	for name, want := range cases {
		got, err := ParsePrimitive(name)
		if err != nil {
			t.Errorf("ParsePrimitive(%q): %v", name, err)
			continue
		}
		if !got.Equal(want) {
			t.Errorf("ParsePrimitive(%q) = %s, want %s", name, got, want)
		}
	}
	for _, bad := range []string{"interval", "uuid", "decimal(39,0)", "decimal(5,6)", "int64", ""} {
		if _, err := ParsePrimitive(bad); err == nil {
			t.Errorf("ParsePrimitive(%q) succeeded, want an error", bad)
		}
	}
}

func TestParseDeltaSchemaErrors(t *testing.T) {
	cases := map[string]string{
		`{"type":"struct","fields":[{"name":"x","type":"interval","nullable":true,"metadata":{}}]}`:                                                "interval",
		`{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[{"name":"y","type":"uuid","nullable":true}]},"nullable":true}]}`: "s.y",
		`{"type":"struct","fields":[{"name":"a","type":{"type":"array","elementType":"int128","containsNull":true},"nullable":true}]}`:             "a.element",
		`{"type":"array","elementType":"int","containsNull":true}`:                                                                                 "want a struct",
		`{"type":"struct","fields":[{"type":"int"}]}`:                                                                                              "without a name",
		`not json`:                         "invalid JSON",
		`{"type":"struct","fields":[]} {}`: "trailing",
	}
	for doc, want := range cases {
		_, err := ParseDeltaSchema(doc)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDeltaSchema(%s) error = %v, want one mentioning %q", doc, err, want)
		}
	}
}

// describeDoc is a DESCRIBE TABLE EXTENDED … AS JSON document in the documented shape (Spark's
// docs/sql-ref-syntax-aux-describe-table.md), with the simpleString spelling (int) the
// implementation emits.
const describeDoc = `{"table_name":"orders","catalog_name":"main","schema_name":"sales","namespace":["sales"],
"type":"MANAGED","provider":"delta",
"columns":[
 {"name":"id","type":{"name":"bigint"},"nullable":false,"comment":"order id"},
 {"name":"qty","type":{"name":"int"},"nullable":true},
 {"name":"n","type":{"name":"integer"},"nullable":true},
 {"name":"price","type":{"name":"decimal","precision":12,"scale":2},"nullable":true},
 {"name":"code","type":{"name":"varchar","length":8},"nullable":true},
 {"name":"label","type":{"name":"string","collation":"UTF8_LCASE"},"nullable":true},
 {"name":"at","type":{"name":"timestamp_ltz"},"nullable":true},
 {"name":"local","type":{"name":"timestamp_ntz"},"nullable":true},
 {"name":"tags","type":{"name":"array","element_type":{"name":"string"},"element_nullable":false},"nullable":true},
 {"name":"attrs","type":{"name":"map","key_type":{"name":"string"},"value_type":{"name":"double"},"value_nullable":true},"nullable":true},
 {"name":"ship","type":{"name":"struct","fields":[
    {"name":"city","type":{"name":"string"},"nullable":true},
    {"name":"zip","type":{"name":"smallint"},"nullable":false,"comment":"postal"}]},"nullable":true}
],
"partition_columns":["qty"],"location":"s3://bucket/tables/orders","table_properties":{"delta.minReaderVersion":"1","delta.columnMapping.mode":"name"},
"created_time":"2025-01-01T00:00:00Z"}`

func TestParseDescribeJSON(t *testing.T) {
	want := NewSchema().
		Col("id", LongType, NotNull, Comment("order id")).
		Col("qty", IntegerType).
		Col("n", IntegerType).
		Col("price", DecimalType(12, 2)).
		Col("code", StringType).
		Col("label", StringType).
		Col("at", TimestampType).
		Col("local", TimestampNTZType).
		Col("tags", ArrayType(StringType, false)).
		Col("attrs", MapType(StringType, DoubleType, true)).
		Col("ship", StructType(NewField("city", StringType), NewField("zip", ShortType, NotNull, Comment("postal"))))
	tab, err := ParseDescribeTable([]byte(describeDoc))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tab.Schema, want) {
		t.Errorf("schema:\n got %s\nwant %s", tab.Schema.DDL(), want.DDL())
	}
	if tab.Location != "s3://bucket/tables/orders" || tab.TableName != "orders" || tab.CatalogName != "main" ||
		!reflect.DeepEqual(tab.PartitionColumns, []string{"qty"}) || tab.TableProperties["delta.columnMapping.mode"] != "name" {
		t.Errorf("table = %+v", tab)
	}
	s, err := ParseDescribeJSON([]byte(describeDoc))
	if err != nil || !s.Equal(want) {
		t.Errorf("ParseDescribeJSON = %v, %v", s, err)
	}
}

func TestParseDescribeJSONErrors(t *testing.T) {
	cases := map[string]string{
		`{"columns":[{"name":"i","type":{"name":"interval","start_unit":"day","end_unit":"second"}}]}`:       "not supported",
		`{"columns":[{"name":"g","type":{"name":"interval"}}]}`:                                              "not supported",
		`{"columns":[{"name":"s","type":{"name":"struct","fields":[{"name":"x","type":{"name":"what"}}]}}]}`: "s.x",
		`{"col_name":"id","data_type":"bigint"}`:                                                             "no \"columns\"",
		`[]`:                                                                                                 "want an object",
		`{"columns":[{"name":"d","type":{"name":"decimal","precision":50,"scale":2}}]}`:                      "decimal(50,2)",
	}
	for doc, want := range cases {
		_, err := ParseDescribeJSON([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDescribeJSON(%s) error = %v, want one mentioning %q", doc, err, want)
		}
	}
}

func TestParseUCColumns(t *testing.T) {
	// Columns as the Unity Catalog REST API returns them, deliberately out of order.
	raw := `[
	 {"name":"name","type_text":"string","type_name":"STRING","position":1,"nullable":true,
	  "type_json":"{\"name\":\"name\",\"type\":\"string\",\"nullable\":true,\"metadata\":{\"comment\":\"who\"}}"},
	 {"name":"id","type_text":"bigint","type_name":"LONG","position":0,"nullable":false,
	  "type_json":"{\"name\":\"id\",\"type\":\"long\",\"nullable\":false,\"metadata\":{\"delta.columnMapping.id\":1,\"delta.columnMapping.physicalName\":\"col-a1\"}}"},
	 {"name":"s","type_text":"struct<a:int>","type_name":"STRUCT","position":2,"nullable":true,
	  "type_json":"{\"name\":\"s\",\"type\":{\"type\":\"struct\",\"fields\":[{\"name\":\"a\",\"type\":\"integer\",\"nullable\":true,\"metadata\":{}}]},\"nullable\":true,\"metadata\":{}}"}
	]`
	var cols []UCColumn
	if err := json.Unmarshal([]byte(raw), &cols); err != nil {
		t.Fatal(err)
	}
	s, err := ParseUCColumns(cols)
	if err != nil {
		t.Fatal(err)
	}
	want := NewSchema().
		Col("id", LongType, NotNull, Physical("col-a1", 1)).
		Col("name", StringType, Comment("who")).
		Col("s", StructType(NewField("a", IntegerType)))
	if !s.Equal(want) {
		t.Fatalf("got %s, want %s", s.DDL(), want.DDL())
	}
	if s.Fields[0].PhysicalName != "col-a1" || s.Fields[0].ID != 1 || s.Fields[1].Comment != "who" {
		t.Errorf("metadata lost: %+v", s.Fields[:2])
	}

	bad := []UCColumn{{Name: "x", TypeJSON: `{"name":"x","type":"interval","nullable":true,"metadata":{}}`}}
	if _, err := ParseUCColumns(bad); err == nil || !strings.Contains(err.Error(), "interval") {
		t.Errorf("unknown type: err = %v", err)
	}
	mismatch := []UCColumn{{Name: "x", TypeJSON: `{"name":"y","type":"int","nullable":true,"metadata":{}}`}}
	if _, err := ParseUCColumns(mismatch); err == nil {
		t.Error("type_json naming another column was accepted")
	}
	if _, err := ParseUCColumns([]UCColumn{{Name: "x"}}); err == nil {
		t.Error("a column without type_json was accepted")
	}
}

func TestParseDDL(t *testing.T) {
	cases := []struct {
		name, ddl string
		want      Schema
	}{
		{"sql form", "id BIGINT NOT NULL, name STRING COMMENT 'display name', price DECIMAL(12, 2)",
			NewSchema().Col("id", LongType, NotNull).Col("name", StringType, Comment("display name")).Col("price", DecimalType(12, 2))},
		{"synonyms", "a long, b integer, c short, d byte, e real, f timestamp_ltz, g timestamp_ntz, h varchar(10), i dec, j NUMERIC(5,1)",
			NewSchema().Col("a", LongType).Col("b", IntegerType).Col("c", ShortType).Col("d", ByteType).Col("e", FloatType).
				Col("f", TimestampType).Col("g", TimestampNTZType).Col("h", StringType).Col("i", DecimalType(10, 0)).Col("j", DecimalType(5, 1))},
		{"nested sql", "s STRUCT<a: INT NOT NULL, `b c`: ARRAY<STRUCT<x: DOUBLE>>>, m MAP<STRING, ARRAY<BIGINT>>",
			NewSchema().
				Col("s", StructType(NewField("a", IntegerType, NotNull), NewField("b c", ArrayType(StructType(NewField("x", DoubleType)), true)))).
				Col("m", MapType(StringType, ArrayType(LongType, true), true))},
		{"simpleString", "s struct<a:int,b:map<string,decimal(5,2)>>",
			NewSchema().Col("s", StructType(NewField("a", IntegerType), NewField("b", MapType(StringType, DecimalType(5, 2), true))))},
		{"whole struct", "STRUCT<id: BIGINT NOT NULL, v: STRING>",
			NewSchema().Col("id", LongType, NotNull).Col("v", StringType)},
		{"quoted names", "`a``b` INT, `select` STRING NULL, `1x` INT, 2y INT",
			NewSchema().Col("a`b", IntegerType).Col("select", StringType).Col("1x", IntegerType).Col("2y", IntegerType)},
		{"comments, collation, semicolon", "-- the columns\nid INT, s STRING COLLATE UTF8_LCASE COMMENT 'it''s';\n",
			NewSchema().Col("id", IntegerType).Col("s", StringType, Comment("it's"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDDL(tc.ddl)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %s\nwant %s", got.DDL(), tc.want.DDL())
			}
			// DDL renders what ParseDDL reads.
			again, err := ParseDDL(got.DDL())
			if err != nil {
				t.Fatalf("re-parse %s: %v", got.DDL(), err)
			}
			if !reflect.DeepEqual(again, got) {
				t.Errorf("DDL round trip: %s became %s", got.DDL(), again.DDL())
			}
		})
	}
}

func TestParseDDLErrors(t *testing.T) {
	cases := map[string]string{
		"id BIGINT, x INTERVAL DAY":         "INTERVAL",
		"id BIGINT DEFAULT 1":               "unsupported column option",
		"id UUID":                           "unknown type",
		"s STRUCT<a INT":                    "want \">\"",
		"id INT, ID BIGINT":                 "duplicate column",
		"s STRUCT<a: INT, A: INT>":          "duplicate column s.A",
		"d DECIMAL(40,2)":                   "decimal(40,2)",
		"m MAP<STRING>":                     "want \",\"",
		"id INT NOT":                        "want NULL after NOT",
		"id INT id2 INT":                    "unsupported column option",
		"`open INT":                         "unterminated",
		"":                                  "want a column name",
		"a ARRAY<STRUCT<x: INTERVAL>>":      "a.element.x",
		"c VARCHAR":                         "",
		"id INT COMMENT 5":                  "want a string after COMMENT",
		"x INT(4)":                          "takes no parameters",
		"id INT; DROP TABLE t":              "unexpected",
		"s STRUCT<a: INT> NOT NULL COMMENT": "want a string",
	}
	for ddl, want := range cases {
		_, err := ParseDDL(ddl)
		if want == "" {
			if err != nil {
				t.Errorf("ParseDDL(%q): %v", ddl, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDDL(%q) error = %v, want one mentioning %q", ddl, err, want)
		}
	}
}

func TestParseSchemaFile(t *testing.T) {
	want := NewSchema().Col("id", LongType, NotNull).Col("s", StructType(NewField("a", IntegerType)))
	files := map[string]string{
		"delta json":      want.DeltaJSON(),
		"json string":     mustJSON(t, want.DeltaJSON()),
		"field array":     "[" + want.Fields[0].DeltaJSON() + "," + want.Fields[1].DeltaJSON() + "]",
		"ddl":             "id BIGINT NOT NULL,\n s STRUCT<a: INT>\n",
		"ddl with bom":    "\xef\xbb\xbfid BIGINT NOT NULL, s STRUCT<a: INT>",
		"simple struct":   "struct<id:bigint not null,s:struct<a:int>>",
		"whitespace json": "\n  " + want.DeltaJSON() + "\n",
	}
	for name, content := range files {
		got, err := ParseSchemaFile([]byte(content))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !got.Equal(want) {
			t.Errorf("%s: got %s, want %s", name, got.DDL(), want.DDL())
		}
	}
	if _, err := ParseSchemaFile([]byte("  \n")); err == nil {
		t.Error("empty schema file accepted")
	}
}

// TestParseSchemaFileDocuments: the JSON documents an operator has at hand (zbrecover schema
// -o json, DESCRIBE TABLE EXTENDED … AS JSON) are schema files too, and column-mapping
// physical names survive them.
func TestParseSchemaFileDocuments(t *testing.T) {
	want := NewSchema().Col("id", LongType, NotNull, Physical("col-1", 1)).
		Col("s", StructType(NewField("a", IntegerType, Physical("col-3", 3))), Physical("col-2", 2), Comment("nested"))
	// zbrecover schema -o json: the columns, and for the delta source the schema string.
	columns := `[{"name":"id","type":"bigint","nullable":false,"physical_name":"col-1","id":1,"delta_type":"long"},` +
		`{"name":"s","type":"struct<a:int>","nullable":true,"comment":"nested","physical_name":"col-2","id":2,"delta_type":` +
		want.Fields[1].Type.DeltaJSON() + `}]`
	docs := map[string]string{
		"schema -o json, delta source": `{"source":"delta","version":3,"columns":` + columns +
			`,"partition_columns":[],"delta":{"schema_string":` + mustJSON(t, want.DeltaJSON()) + `}}`,
		"schema -o json, uc source": `{"source":"uc","table":"main.s.t","columns":` + columns + `,"partition_columns":[]}`,
	}
	for name, doc := range docs {
		got, err := ParseSchemaFile([]byte(doc))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !got.Equal(want) || !got.PhysicalView().Equal(want.PhysicalView()) || got.Fields[1].Comment != "nested" {
			t.Errorf("%s: got %s (physical %s), want %s (physical %s)", name, got.DDL(), got.PhysicalView().DDL(),
				want.DDL(), want.PhysicalView().DDL())
		}
	}

	describe := `{"table_name":"t","type":"MANAGED","columns":[{"name":"id","type":{"name":"bigint"},"nullable":false},` +
		`{"name":"s","type":{"name":"struct","fields":[{"name":"a","type":{"name":"int"},"nullable":true}]},"nullable":true}]}`
	got, err := ParseSchemaFile([]byte(describe))
	if err != nil || !got.Equal(want) {
		t.Errorf("DESCRIBE … AS JSON: got %v (%v), want %s", got, err, want.DDL())
	}

	_, err = ParseSchemaFile([]byte(`{"fields":[]}`))
	if err == nil || !strings.Contains(err.Error(), "zbrecover schema -o json") {
		t.Errorf("unknown object: err = %v, want one listing the accepted documents", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRendering(t *testing.T) {
	s := NewSchema().
		Col("id", LongType, NotNull).
		Col("my col", DecimalType(10, 2), Comment("it's \\ here")).
		Col("s", StructType(NewField("a", IntegerType, NotNull), NewField("b", ArrayType(TimestampNTZType, true)))).
		Col("m", MapType(StringType, VariantType, true))
	wantDDL := "`id` BIGINT NOT NULL, `my col` DECIMAL(10,2) COMMENT 'it\\'s \\\\ here', " +
		"`s` STRUCT<`a`: INT NOT NULL, `b`: ARRAY<TIMESTAMP_NTZ>>, `m` MAP<STRING, VARIANT>"
	if got := s.DDL(); got != wantDDL {
		t.Errorf("DDL:\n got %s\nwant %s", got, wantDDL)
	}
	wantSimple := "struct<id:bigint NOT NULL,`my col`:decimal(10,2),s:struct<a:int NOT NULL,b:array<timestamp_ntz>>,m:map<string,variant>>"
	if got := s.String(); got != wantSimple {
		t.Errorf("String:\n got %s\nwant %s", got, wantSimple)
	}
	wantJSON := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},` +
		`{"name":"my col","type":"decimal(10,2)","nullable":true,"metadata":{"comment":"it's \\ here"}},` +
		`{"name":"s","type":{"type":"struct","fields":[{"name":"a","type":"integer","nullable":false,"metadata":{}},` +
		`{"name":"b","type":{"type":"array","elementType":"timestamp_ntz","containsNull":true},"nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},` +
		`{"name":"m","type":{"type":"map","keyType":"string","valueType":"variant","valueContainsNull":true},"nullable":true,"metadata":{}}]}`
	if got := s.DeltaJSON(); got != wantJSON {
		t.Errorf("DeltaJSON:\n got %s\nwant %s", got, wantJSON)
	}
	for _, tc := range []struct{ in, want string }{
		{"main.sales.orders", "`main`.`sales`.`orders`"},
		{"`my.cat`.s.`t``x`", "`my.cat`.`s`.`t``x`"},
		{"orders", "`orders`"},
		{"<table>", "`<table>`"}, // placeholders are unquoted by their callers
		{"`open", "`open"},
	} {
		if got := QuoteName(tc.in); got != tc.want {
			t.Errorf("QuoteName(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestColDoesNotMutate(t *testing.T) {
	base := NewSchema().Col("a", IntegerType).Col("b", IntegerType)
	x := base.Col("x", StringType)
	y := base.Col("y", StringType)
	if x.Fields[2].Name != "x" || y.Fields[2].Name != "y" || len(base.Fields) != 2 {
		t.Errorf("Col shares storage: base %v x %v y %v", base.Names(), x.Names(), y.Names())
	}
}
