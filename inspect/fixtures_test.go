package inspect_test

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/schemadiff"
)

const prefix = "_zerobus/table_rejected_parquets/"

var t0 = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

// schemaA is a nested schema with decimals and both kinds of timestamps.
var schemaA = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 4}, Nullable: true},
	{Name: "big", Type: &arrow.Decimal128Type{Precision: 38, Scale: 10}, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "local_ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "attrs", Type: arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String},
		arrow.Field{Name: "inner", Type: arrow.StructOf(
			arrow.Field{Name: "c", Type: &arrow.Decimal128Type{Precision: 9, Scale: 2}, Nullable: true},
		), Nullable: true},
	), Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "counts", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "items", Type: arrow.ListOfNonNullable(arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: "y", Type: arrow.ListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
	)), Nullable: true},
}, nil)

// sparkA is the Spark schema schemaA's files must map to.
var sparkA = schemadiff.Schema{Fields: []schemadiff.Field{
	{Name: "id", Type: schemadiff.LongType},
	{Name: "name", Type: schemadiff.StringType, Nullable: true},
	{Name: "amount", Type: schemadiff.DecimalType(18, 4), Nullable: true},
	{Name: "big", Type: schemadiff.DecimalType(38, 10), Nullable: true},
	{Name: "ts", Type: schemadiff.TimestampType, Nullable: true},
	{Name: "local_ts", Type: schemadiff.TimestampNTZType, Nullable: true},
	{Name: "day", Type: schemadiff.DateType, Nullable: true},
	{Name: "attrs", Type: schemadiff.StructType(
		schemadiff.Field{Name: "a", Type: schemadiff.IntegerType, Nullable: true},
		schemadiff.Field{Name: "b", Type: schemadiff.StringType},
		schemadiff.Field{Name: "inner", Type: schemadiff.StructType(
			schemadiff.Field{Name: "c", Type: schemadiff.DecimalType(9, 2), Nullable: true},
		), Nullable: true},
	), Nullable: true},
	{Name: "tags", Type: schemadiff.ArrayType(schemadiff.StringType, true), Nullable: true},
	{Name: "counts", Type: schemadiff.MapType(schemadiff.StringType, schemadiff.LongType, true), Nullable: true},
	{Name: "items", Type: schemadiff.ArrayType(schemadiff.StructType(
		schemadiff.Field{Name: "x", Type: schemadiff.LongType},
		schemadiff.Field{Name: "y", Type: schemadiff.ArrayType(schemadiff.DoubleType, true), Nullable: true},
	), false), Nullable: true},
}}

// rowsA1 has 5 rows, 2 of them with a null name.
const rowsA1 = `[
 {"id":1,"name":"alpha","amount":"12.3400","big":"1234567890123456789012345678.0123456789","ts":"2024-05-01T12:00:00.000001Z","local_ts":"2024-05-01T12:00:00","day":"2024-05-01",
  "attrs":{"a":7,"b":"x","inner":{"c":"-1.50"}},"tags":["red","blue"],"counts":[{"key":"k1","value":1},{"key":"k2","value":null}],
  "items":[{"x":1,"y":[1.5,null]},{"x":2,"y":null}]},
 {"id":2,"name":null,"amount":null,"big":null,"ts":null,"local_ts":null,"day":null,"attrs":null,"tags":null,"counts":null,"items":null},
 {"id":3,"name":"<gamma & \"delta\">","amount":"0.0001","big":"-0.0000000001","ts":"1999-12-31T23:59:59.999999Z","local_ts":"1999-12-31T23:59:59.5","day":"1999-12-31",
  "attrs":{"a":null,"b":"","inner":null},"tags":[],"counts":[],"items":[]},
 {"id":4,"name":null,"amount":"-99999999999999.9999","big":"0.0000000000","ts":"2024-02-29T00:00:00Z","local_ts":"2024-02-29T00:00:00","day":"2024-02-29",
  "attrs":{"a":1,"b":"tab\there","inner":{"c":null}},"tags":[null],"counts":[{"key":"only","value":42}],"items":[{"x":3,"y":[]}]},
 {"id":5,"name":"epsilon","amount":"1","big":"1","ts":"2024-05-02T00:00:00Z","local_ts":"2024-05-02T00:00:00","day":"2024-05-02",
  "attrs":{"a":5,"b":"e","inner":{"c":"0.01"}},"tags":["z"],"counts":null,"items":null}
]`

// rowsA2 has 2 rows, 1 with a null name.
const rowsA2 = `[
 {"id":10,"name":null,"amount":"5.5000","big":null,"ts":"2024-06-01T00:00:00Z","local_ts":null,"day":null,"attrs":null,"tags":null,"counts":null,"items":null},
 {"id":11,"name":"k","amount":null,"big":null,"ts":null,"local_ts":null,"day":null,"attrs":null,"tags":null,"counts":null,"items":null}
]`

// schemaB is written with INT96 timestamps, unsigned ints, JSON and ENUM columns.
var schemaB = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "u8", Type: arrow.PrimitiveTypes.Uint8, Nullable: true},
	{Name: "u16", Type: arrow.PrimitiveTypes.Uint16, Nullable: true},
	{Name: "u32", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
	{Name: "doc", Type: pqgen.JSONType(), Nullable: true},
	{Name: "color", Type: pqgen.EnumType(), Nullable: true},
	{Name: "raw", Type: arrow.BinaryTypes.Binary, Nullable: true},
}, nil)

var sparkB = schemadiff.Schema{Fields: []schemadiff.Field{
	{Name: "id", Type: schemadiff.LongType},
	{Name: "ts", Type: schemadiff.TimestampType, Nullable: true},
	{Name: "u8", Type: schemadiff.ShortType, Nullable: true},
	{Name: "u16", Type: schemadiff.IntegerType, Nullable: true},
	{Name: "u32", Type: schemadiff.LongType, Nullable: true},
	{Name: "u64", Type: schemadiff.DecimalType(20, 0), Nullable: true},
	{Name: "doc", Type: schemadiff.StringType, Nullable: true},
	{Name: "color", Type: schemadiff.StringType, Nullable: true},
	{Name: "raw", Type: schemadiff.BinaryType, Nullable: true},
}}

const rowsB = `[
 {"id":100,"ts":"2024-05-01T12:34:56.123456Z","u8":255,"u16":65535,"u32":4294967295,"u64":18446744073709551615,"doc":"{\"a\":[1,2]}","color":"GREEN","raw":"AAEC/w=="},
 {"id":101,"ts":null,"u8":null,"u16":null,"u32":null,"u64":null,"doc":null,"color":null,"raw":null},
 {"id":102,"ts":"1970-01-01T00:00:00Z","u8":0,"u16":0,"u32":0,"u64":0,"doc":"[]","color":"RED","raw":""}
]`

type fixture struct {
	store *store
	a1    []byte // a.parquet
	a2    []byte // sub/2024/b.parquet
	empty []byte // empty.parquet (0 rows, schema A)
	b     []byte // c.parquet (schema B)
	bad   []byte // bad.parquet (truncated)
}

func mustBytes(t testing.TB, sc *arrow.Schema, rows string, opts pqgen.Options) []byte {
	t.Helper()
	b, err := pqgen.Bytes(sc, rows, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newFixture builds a table root with fallback files, hidden and foreign objects.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{store: newStore()}
	f.a1 = mustBytes(t, schemaA, rowsA1, pqgen.Options{
		RowGroupRows: 2, Compression: compress.Codecs.Snappy, CreatedBy: "zerobus-writer 0.9",
		KeyValue: []pqgen.KV{{Key: "zerobus.stream", Value: "s-1"}},
	})
	f.a2 = mustBytes(t, schemaA, rowsA2, pqgen.Options{Compression: compress.Codecs.Zstd})
	f.empty = mustBytes(t, schemaA, `[]`, pqgen.Options{})
	f.b = mustBytes(t, schemaB, rowsB, pqgen.Options{Int96: true})
	f.bad = pqgen.Truncate(f.a1, 100)

	s := f.store
	s.put(prefix+"a.parquet", f.a1, t0)
	s.put(prefix+"sub/2024/b.parquet", f.a2, t0.Add(2*time.Hour))
	s.put(prefix+"empty.parquet", f.empty, t0.Add(time.Hour))
	s.put(prefix+"c.parquet", f.b, t0.Add(3*time.Hour))
	s.put(prefix+"bad.parquet", f.bad, t0.Add(4*time.Hour))
	// Hidden and non-Parquet objects: counted, never read.
	s.put(prefix+"_hidden/x.parquet", f.a1, t0)
	s.put(prefix+".tmp.parquet", f.a1, t0)
	s.put(prefix+"sub/_SUCCESS", nil, t0)
	s.put(prefix+"notes.txt", []byte("hello"), t0)
	// Outside the fallback folder: ignored.
	s.put("_delta_log/00000000000000000000.json", []byte("{}"), t0)
	s.put("part-00000.parquet", f.a1, t0)
	return f
}
