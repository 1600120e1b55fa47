package pqgen_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/zbrecover/zbrecover/internal/pqgen"
)

func open(t *testing.T, data []byte) *file.Reader {
	t.Helper()
	r, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return r
}

func readAll(t *testing.T, data []byte) arrow.Table {
	t.Helper()
	tbl, err := pqarrow.ReadTable(context.Background(), bytes.NewReader(data), nil, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return tbl
}

func TestWriteJSONRoundTrip(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	rows := `[{"id":1,"name":"a","amount":"12.30","tags":["x","y"]},
	          {"id":2,"name":null,"amount":"-0.05","tags":[]},
	          {"id":3,"name":"c","amount":null,"tags":null}]`
	data, err := pqgen.Bytes(sc, rows, pqgen.Options{
		RowGroupRows: 2,
		Compression:  compress.Codecs.Snappy,
		CreatedBy:    "zerobus-test 1.0",
		KeyValue:     []pqgen.KV{{Key: "k1", Value: "v1"}, {Key: "k2", Value: "v2"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := open(t, data)
	md := r.MetaData()
	if md.NumRows != 3 || md.NumRowGroups() != 2 {
		t.Errorf("rows %d, row groups %d; want 3, 2", md.NumRows, md.NumRowGroups())
	}
	if got := md.GetCreatedBy(); got != "zerobus-test 1.0" {
		t.Errorf("created_by %q", got)
	}
	if v := md.KeyValueMetadata().FindValue("k2"); v == nil || *v != "v2" {
		t.Errorf("key-value metadata %v", md.KeyValueMetadata())
	}
	cc, err := md.RowGroup(0).ColumnChunk(0)
	if err != nil {
		t.Fatal(err)
	}
	if cc.Compression() != compress.Codecs.Snappy {
		t.Errorf("compression %v", cc.Compression())
	}
	tbl := readAll(t, data)
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 10)
	defer tr.Release()
	var got []json.RawMessage
	for tr.Next() {
		b, err := tr.RecordBatch().MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var part []json.RawMessage
		if err := json.Unmarshal(b, &part); err != nil {
			t.Fatal(err)
		}
		got = append(got, part...)
	}
	want := []string{
		`{"amount":"12.3","id":1,"name":"a","tags":["x","y"]}`,
		`{"amount":"-0.05","id":2,"name":null,"tags":[]}`,
		`{"amount":null,"id":3,"name":"c","tags":null}`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows", len(got))
	}
	for i := range want {
		var a, b any
		json.Unmarshal(got[i], &a)
		json.Unmarshal([]byte(want[i]), &b)
		ab, _ := json.Marshal(a)
		bb, _ := json.Marshal(b)
		if string(ab) != string(bb) {
			t.Errorf("row %d: got %s, want %s", i, ab, bb)
		}
	}
}

func TestInt96AndLogicalTypes(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "doc", Type: pqgen.JSONType(), Nullable: true},
		{Name: "color", Type: pqgen.EnumType(), Nullable: true},
	}, nil)
	rows := `[{"ts":"2024-05-01T12:00:00.000001Z","doc":"{\"a\":1}","color":"RED"}]`
	data, err := pqgen.Bytes(sc, rows, pqgen.Options{Int96: true})
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, data).MetaData().Schema
	if pt := s.Column(0).PhysicalType(); pt != parquet.Types.Int96 {
		t.Errorf("ts physical type %v, want INT96", pt)
	}
	if lt := s.Column(1).LogicalType(); !lt.Equals(schema.JSONLogicalType{}) {
		t.Errorf("doc logical type %v, want JSON", lt)
	}
	if lt := s.Column(2).LogicalType(); !lt.Equals(schema.EnumLogicalType{}) {
		t.Errorf("color logical type %v, want ENUM", lt)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
		{Name: "u", Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	}, nil)
	a, err := pqgen.GeneratedBytes(sc, 500, 7, pqgen.Options{RowGroupRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	b, err := pqgen.GeneratedBytes(sc, 500, 7, pqgen.Options{RowGroupRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("same seed gave different files")
	}
	md := open(t, a).MetaData()
	if md.NumRows != 500 || md.NumRowGroups() != 5 {
		t.Errorf("rows %d, row groups %d", md.NumRows, md.NumRowGroups())
	}
	tbl := readAll(t, a)
	defer tbl.Release()
	if n := tbl.Column(0).Data().NullN(); n != 0 {
		t.Errorf("non-nullable id has %d nulls", n)
	}
	if n := tbl.Column(3).Data().NullN(); n == 0 || n > 150 {
		t.Errorf("nullable u has %d nulls of 500", n)
	}
}

func TestWriteColumnsLegacyList(t *testing.T) {
	// optional group tags (LIST) { repeated int32 element; }  -- 2-level list
	elem := schema.NewInt32Node("element", parquet.Repetitions.Repeated, -1)
	tags := schema.MustGroup(schema.NewGroupNodeConverted("tags", parquet.Repetitions.Optional, schema.FieldList{elem}, schema.ConvertedTypes.List, -1))
	root := schema.MustGroup(schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{tags}, -1))
	// rows: [1,2], null, []
	data, err := pqgen.ColumnsBytes(root, []pqgen.RowGroup{{{
		Values: []int32{1, 2},
		Def:    []int16{2, 2, 0, 1},
		Rep:    []int16{0, 1, 0, 0},
	}}}, pqgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	md := open(t, data).MetaData()
	if md.NumRows != 3 {
		t.Errorf("rows %d, want 3", md.NumRows)
	}
	tbl := readAll(t, data)
	defer tbl.Release()
	col := tbl.Column(0).Data().Chunk(0)
	if got := col.String(); got != "[[1 2] (null) []]" {
		t.Errorf("tags = %s", got)
	}
}

func TestCorruptHelpers(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	data := pqgen.Must(pqgen.Bytes(sc, `[{"id":1}]`, pqgen.Options{}))
	fs := pqgen.FooterStart(data)
	if fs <= 4 || fs >= len(data)-8 {
		t.Fatalf("footer start %d of %d", fs, len(data))
	}
	if got := pqgen.Truncate(data, 3); len(got) != len(data)-3 {
		t.Errorf("truncate: %d bytes", len(got))
	}
	if pqgen.FooterStart(pqgen.Truncate(data, 1)) != -1 {
		t.Error("truncated file still has a footer")
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 50; i++ {
		c := pqgen.Corrupt(data, rng, 1, pqgen.Footer)
		diff := -1
		for j := range c {
			if c[j] != data[j] {
				diff = j
			}
		}
		if diff < fs || diff >= len(data)-8 {
			t.Fatalf("footer corruption hit byte %d, footer is [%d,%d)", diff, fs, len(data)-8)
		}
	}
	if _, err := file.NewParquetReader(bytes.NewReader(pqgen.SetFooterLength(data, 1<<30))); err == nil {
		t.Error("a footer length past the file size was accepted")
	}
}
