package inspect_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/schemadiff"
)

var (
	req = parquet.Repetitions.Required
	opt = parquet.Repetitions.Optional
	rep = parquet.Repetitions.Repeated
)

func prim(name string, r parquet.Repetition, lt schema.LogicalType, pt parquet.Type, tlen int) schema.Node {
	return schema.MustPrimitive(schema.NewPrimitiveNodeLogical(name, r, lt, pt, tlen, -1))
}

func conv(name string, r parquet.Repetition, pt parquet.Type, ct schema.ConvertedType) schema.Node {
	return schema.MustPrimitive(schema.NewPrimitiveNodeConverted(name, r, pt, ct, 0, 0, 0, -1))
}

func group(name string, r parquet.Repetition, lt schema.LogicalType, fields ...schema.Node) schema.Node {
	if lt == nil {
		return schema.MustGroup(schema.NewGroupNode(name, r, fields, -1))
	}
	return schema.MustGroup(schema.NewGroupNodeLogical(name, r, fields, lt, -1))
}

func groupConv(name string, r parquet.Repetition, ct schema.ConvertedType, fields ...schema.Node) schema.Node {
	return schema.MustGroup(schema.NewGroupNodeConverted(name, r, fields, ct, -1))
}

func sparkOf(t *testing.T, col schema.Node) (string, error) {
	t.Helper()
	root := schema.MustGroup(schema.NewGroupNode("schema", req, schema.FieldList{col}, -1))
	s, err := inspect.SparkSchema(schema.NewSchema(root))
	if err != nil {
		return "", err
	}
	f := s.Fields[0]
	out := f.Type.String()
	if !f.Nullable {
		out += " NOT NULL"
	}
	if f.Type.Elem != nil && !f.Type.ContainsNull {
		out += " (elements not null)"
	}
	return out, nil
}

func TestSparkSchemaMapping(t *testing.T) {
	i32, i64, ba, flba := parquet.Types.Int32, parquet.Types.Int64, parquet.Types.ByteArray, parquet.Types.FixedLenByteArray
	cases := []struct {
		name string
		node schema.Node
		want string
	}{
		{"int32 plain", prim("c", opt, schema.NoLogicalType{}, i32, -1), "int"},
		{"int8", prim("c", opt, schema.NewIntLogicalType(8, true), i32, -1), "tinyint"},
		{"int16", prim("c", opt, schema.NewIntLogicalType(16, true), i32, -1), "smallint"},
		{"uint8 widens", prim("c", opt, schema.NewIntLogicalType(8, false), i32, -1), "smallint"},
		{"uint16 widens", prim("c", opt, schema.NewIntLogicalType(16, false), i32, -1), "int"},
		{"uint32 widens", prim("c", opt, schema.NewIntLogicalType(32, false), i32, -1), "bigint"},
		{"uint64 widens", prim("c", opt, schema.NewIntLogicalType(64, false), i64, -1), "decimal(20,0)"},
		{"converted UINT_32", conv("c", opt, i32, schema.ConvertedTypes.Uint32), "bigint"},
		{"int64 required", prim("c", req, schema.NoLogicalType{}, i64, -1), "bigint NOT NULL"},
		{"date", prim("c", opt, schema.DateLogicalType{}, i32, -1), "date"},
		{"decimal int32", prim("c", opt, schema.NewDecimalLogicalType(9, 2), i32, -1), "decimal(9,2)"},
		{"decimal int64", prim("c", opt, schema.NewDecimalLogicalType(18, 0), i64, -1), "decimal(18,0)"},
		{"decimal binary", prim("c", opt, schema.NewDecimalLogicalType(30, 5), ba, -1), "decimal(30,5)"},
		{"decimal flba", prim("c", opt, schema.NewDecimalLogicalType(38, 10), flba, 16), "decimal(38,10)"},
		{"timestamp utc micros", prim("c", opt, schema.NewTimestampLogicalType(true, schema.TimeUnitMicros), i64, -1), "timestamp"},
		{"timestamp utc millis", prim("c", opt, schema.NewTimestampLogicalType(true, schema.TimeUnitMillis), i64, -1), "timestamp"},
		{"timestamp local", prim("c", opt, schema.NewTimestampLogicalType(false, schema.TimeUnitMicros), i64, -1), "timestamp_ntz"},
		{"legacy TIMESTAMP_MICROS", conv("c", opt, i64, schema.ConvertedTypes.TimestampMicros), "timestamp"},
		{"int96", prim("c", opt, schema.NoLogicalType{}, parquet.Types.Int96, -1), "timestamp"},
		{"string", prim("c", opt, schema.StringLogicalType{}, ba, -1), "string"},
		{"json", prim("c", opt, schema.JSONLogicalType{}, ba, -1), "string"},
		{"enum", prim("c", opt, schema.EnumLogicalType{}, ba, -1), "string"},
		{"bson", prim("c", opt, schema.BSONLogicalType{}, ba, -1), "binary"},
		{"binary", prim("c", opt, schema.NoLogicalType{}, ba, -1), "binary"},
		{"fixed binary", prim("c", opt, schema.NoLogicalType{}, flba, 8), "binary"},
		{"boolean float double", prim("c", opt, schema.NoLogicalType{}, parquet.Types.Double, -1), "double"},
		{"3-level list", group("c", opt, schema.ListLogicalType{},
			group("list", rep, nil, prim("element", opt, schema.StringLogicalType{}, ba, -1))), "array<string>"},
		{"3-level list, required elements", group("c", opt, schema.ListLogicalType{},
			group("list", rep, nil, prim("element", req, schema.NoLogicalType{}, i64, -1))), "array<bigint> (elements not null)"},
		// Spark converts the element by its type alone: a repeated element is not a nested array.
		{"3-level list, repeated element", group("c", opt, schema.ListLogicalType{},
			group("list", rep, nil, prim("element", rep, schema.NoLogicalType{}, i64, -1))), "array<bigint> (elements not null)"},
		{"2-level list, primitive", groupConv("c", opt, schema.ConvertedTypes.List,
			prim("element", rep, schema.NoLogicalType{}, i32, -1)), "array<int> (elements not null)"},
		{"2-level list, group of two", groupConv("c", opt, schema.ConvertedTypes.List,
			group("element", rep, nil, prim("a", req, schema.NoLogicalType{}, i32, -1), prim("b", opt, schema.StringLogicalType{}, ba, -1))),
			"array<struct<a:int NOT NULL,b:string>> (elements not null)"},
		{"2-level list, avro 'array'", groupConv("c", opt, schema.ConvertedTypes.List,
			group("array", rep, nil, prim("a", req, schema.NoLogicalType{}, i32, -1))),
			"array<struct<a:int NOT NULL>> (elements not null)"},
		{"2-level list, thrift _tuple", groupConv("c", opt, schema.ConvertedTypes.List,
			group("c_tuple", rep, nil, prim("a", req, schema.NoLogicalType{}, i32, -1))),
			"array<struct<a:int NOT NULL>> (elements not null)"},
		{"bare repeated field", prim("c", rep, schema.StringLogicalType{}, ba, -1), "array<string> NOT NULL (elements not null)"},
		{"map", group("c", opt, schema.MapLogicalType{}, group("key_value", rep, nil,
			prim("key", req, schema.StringLogicalType{}, ba, -1), prim("value", opt, schema.NoLogicalType{}, i64, -1))), "map<string,bigint>"},
		{"MAP_KEY_VALUE", groupConv("c", opt, schema.ConvertedTypes.MapKeyValue, group("map", rep, nil,
			prim("key", req, schema.NoLogicalType{}, i32, -1), prim("value", req, schema.NoLogicalType{}, parquet.Types.Float, -1))), "map<int,float>"},
		{"struct", group("c", req, nil, prim("a", opt, schema.NoLogicalType{}, parquet.Types.Boolean, -1),
			group("b", opt, nil, prim("x", req, schema.DateLogicalType{}, i32, -1))), "struct<a:boolean,b:struct<x:date NOT NULL>> NOT NULL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := sparkOf(t, c.node)
			if err != nil {
				t.Fatalf("error %v", err)
			}
			if got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestSparkSchemaUnsupported(t *testing.T) {
	cases := map[string]schema.Node{
		"timestamp nanos": prim("c", opt, schema.NewTimestampLogicalType(true, schema.TimeUnitNanos), parquet.Types.Int64, -1),
		"time millis":     prim("c", opt, schema.NewTimeLogicalType(true, schema.TimeUnitMillis), parquet.Types.Int32, -1),
		"time micros":     prim("c", opt, schema.NewTimeLogicalType(false, schema.TimeUnitMicros), parquet.Types.Int64, -1),
		"interval":        prim("c", opt, schema.IntervalLogicalType{}, parquet.Types.FixedLenByteArray, 12),
		"uuid":            prim("c", opt, schema.UUIDLogicalType{}, parquet.Types.FixedLenByteArray, 16),
		"float16":         prim("c", opt, schema.Float16LogicalType{}, parquet.Types.FixedLenByteArray, 2),
		"decimal 40":      prim("c", opt, schema.NewDecimalLogicalType(40, 2), parquet.Types.FixedLenByteArray, 17),
	}
	for name, n := range cases {
		got, err := sparkOf(t, n)
		if err != nil || !strings.HasPrefix(got, "unsupported(") {
			t.Errorf("%s: %s, %v; want an unsupported column type, no error", name, got, err)
		}
	}
}

// A file with a column Spark cannot read is readable: its rows and row groups are reported,
// it joins a schema group, and the group's diff blocks on that column with the reason.
func TestUnsupportedColumnBlocksTheGroup(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(mustTable(t, sc), &buf, 10, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	s := newStore()
	s.put(prefix+"nanos.parquet", buf.Bytes(), t0)
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Files[0]
	if f.Error != "" || f.Rows != 3 || f.RowGroups != 1 || rep.Totals.Unreadable != 0 || len(rep.Groups) != 1 {
		t.Fatalf("file %+v totals %+v", f, rep.Totals)
	}
	table := schemadiff.NewSchema().Col("id", schemadiff.LongType).Col("ts", schemadiff.TimestampType)
	rep.Diff(inspect.NewTable(&schemadiff.Table{Source: schemadiff.SourceDelta, Schema: table}), inspect.DiffOptions{TableName: "t"})
	g := rep.Groups[0]
	if !g.Blocks() || len(g.Changes) != 1 || g.Changes[0].Path.String() != "ts" || g.Changes[0].Kind != schemadiff.KindUnsupportedType {
		t.Fatalf("changes %v", g.Changes)
	}
	if want := "INT64 (Timestamp(isAdjustedToUTC=true, timeUnit=nanoseconds"; !strings.Contains(g.Changes[0].Reason, want) {
		t.Errorf("reason %q lacks %q", g.Changes[0].Reason, want)
	}
}

func mustTable(t *testing.T, sc *arrow.Schema) arrow.Table {
	t.Helper()
	rec, err := pqgen.Generate(sc, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

// A file written with legacy 2-level lists reads with the same schema Spark infers.
func TestLegacyListFile(t *testing.T) {
	elem := schema.NewInt32Node("element", rep, -1)
	tags := schema.MustGroup(schema.NewGroupNodeConverted("tags", opt, schema.FieldList{elem}, schema.ConvertedTypes.List, -1))
	id := schema.NewInt64Node("id", req, -1)
	root := schema.MustGroup(schema.NewGroupNode("schema", req, schema.FieldList{id, tags}, -1))
	data, err := pqgen.ColumnsBytes(root, []pqgen.RowGroup{{
		{Values: []int64{1, 2, 3}},
		{Values: []int32{1, 2}, Def: []int16{2, 2, 0, 1}, Rep: []int16{0, 1, 0, 0}},
	}}, pqgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newStore()
	s.put(prefix+"legacy.parquet", data, t0)
	r, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Groups) != 1 || r.Files[0].Rows != 3 {
		t.Fatalf("report %+v", r)
	}
	if got := inspect.SchemaKey(r.Groups[0].Schema); got != "`id`:bigint not null,`tags`:array<int not null>" {
		t.Errorf("schema %s", got)
	}
	res, err := inspect.PreviewObject(context.Background(), s, r.Files[0].Object(r.Prefix), inspect.PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	res.WriteCSV(&out)
	if got, want := out.String(), "id,tags\n1,\"[1,2]\"\n2,\n3,[]\n"; got != want {
		t.Errorf("csv %q, want %q", got, want)
	}
}
