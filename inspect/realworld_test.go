package inspect_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/schemadiff"
)

// realWorldFile writes a two-row file with id (int64) and one more column.
func realWorldFile(t *testing.T, extra schema.Node, values any) []byte {
	t.Helper()
	id := schema.NewInt64Node("id", req, -1)
	root := schema.MustGroup(schema.NewGroupNode("schema", req, schema.FieldList{id, extra}, -1))
	data, err := pqgen.ColumnsBytes(root, []pqgen.RowGroup{{
		{Values: []int64{1, 2}},
		{Values: values, Def: []int16{1, 1}},
	}}, pqgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// withUnknownLogicalType turns the Float16 annotation (LogicalType union member 15) of a
// file's footer into member 9, which no Parquet version assigns: a logical type this reader
// cannot know. The footer keeps its length.
func withUnknownLogicalType(t *testing.T, data []byte) []byte {
	t.Helper()
	start := pqgen.FooterStart(data)
	footer := data[start : len(data)-8]
	// The union's member header: field delta 15, type struct; the empty Float16Type; the
	// union's stop byte.
	pat := []byte{0xFC, 0x00, 0x00}
	if n := bytes.Count(footer, pat); n != 1 {
		t.Fatalf("Float16 annotation found %d times in the footer", n)
	}
	out := bytes.Clone(data)
	out[start+bytes.Index(footer, pat)] = 0x9C
	return out
}

// TestRealWorldTypes: files from other writers with Float16, Geometry, Geography and an
// unknown logical type are readable (rows and row groups reported); Geometry and Geography
// map to Databricks' GEOMETRY and GEOGRAPHY; an unknown logical type falls back to the
// physical type; and the column that does not fit the table is the one the diff blocks on.
func TestRealWorldTypes(t *testing.T) {
	wkb := []parquet.ByteArray{[]byte("\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf0?\x00\x00\x00\x00\x00\x00\x00@"), []byte("\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00@\x00\x00\x00\x00\x00\x00\xf0?")}
	half := []parquet.FixedLenByteArray{{0x00, 0x3c}, {0x00, 0x40}}
	float16 := realWorldFile(t, prim("h", opt, schema.Float16LogicalType{}, parquet.Types.FixedLenByteArray, 2), half)
	cases := []struct {
		name     string
		data     []byte
		wantType string
		table    schemadiff.Type // the table's type for the column
		wantKind schemadiff.ChangeKind
		reason   string
	}{
		{"float16", float16, "unsupported(FIXED_LEN_BYTE_ARRAY (Float16))", schemadiff.FloatType,
			schemadiff.KindUnsupportedType, "no 16-bit floating-point type"},
		{"geometry", realWorldFile(t, prim("h", opt, schema.GeometryLogicalType{}, parquet.Types.ByteArray, -1), wkb),
			"geometry(4326)", schemadiff.GeometryType("3857"), schemadiff.KindTypeChanged, "geometry(4326) in the file and geometry(3857) in the table"},
		{"geography", realWorldFile(t, prim("h", opt, schema.GeographyLogicalType{Crs: "OGC:CRS84"}, parquet.Types.ByteArray, -1), wkb),
			"geography(4326)", schemadiff.StringType, schemadiff.KindTypeChanged, "geography(4326) in the file and string in the table"},
		{"unknown logical type", withUnknownLogicalType(t, float16),
			"binary", schemadiff.FloatType, schemadiff.KindTypeChanged, "binary in the file and float in the table"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore()
			s.put(prefix+"f.parquet", c.data, t0)
			rep, err := inspect.Run(context.Background(), s, inspect.Options{})
			if err != nil {
				t.Fatal(err)
			}
			f := rep.Files[0]
			if f.Error != "" || f.Rows != 2 || f.RowGroups != 1 || len(rep.Groups) != 1 || rep.Totals.Rows != 2 {
				t.Fatalf("file %+v, totals %+v: want a readable file of 2 rows in 1 row group", f, rep.Totals)
			}
			if got := rep.Groups[0].Columns[1].Type; got != c.wantType {
				t.Errorf("column type %s, want %s", got, c.wantType)
			}
			table := schemadiff.NewSchema().Col("id", schemadiff.LongType, schemadiff.NotNull).Col("h", c.table)
			rep.Diff(inspect.NewTable(&schemadiff.Table{Source: schemadiff.SourceDelta, Schema: table}), inspect.DiffOptions{TableName: "t"})
			g := rep.Groups[0]
			if !g.Blocks() || len(g.Changes) != 1 {
				t.Fatalf("verdict %v changes %v: want one blocking change", g.Verdict, g.Changes)
			}
			ch := g.Changes[0]
			if ch.Path.String() != "h" || ch.Kind != c.wantKind || !strings.Contains(ch.Reason, c.reason) {
				t.Errorf("change %s (%s), want a %s on h saying %q", ch, ch.Kind, c.wantKind, c.reason)
			}
			// Same-typed table: geometry and geography load as they are.
			if c.name == "geometry" || c.name == "geography" {
				ok := schemadiff.NewSchema().Col("id", schemadiff.LongType, schemadiff.NotNull).Col("h", g.Schema.Fields[1].Type)
				rep.Diff(inspect.NewTable(&schemadiff.Table{Source: schemadiff.SourceDelta, Schema: ok}), inspect.DiffOptions{TableName: "t"})
				if rep.Groups[0].Blocks() {
					t.Errorf("against %s: %v", ok.Fields[1].Type, rep.Groups[0].Changes)
				}
			}
		})
	}
}
