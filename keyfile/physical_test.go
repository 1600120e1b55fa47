package keyfile_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/keyfile"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// Decimals stored as INT32, INT64 and BINARY, timestamps in milliseconds without UTC
// adjustment and a REQUIRED key column, which the Arrow writer does not produce, are read as
// Spark reads them.
func TestReadPhysicalForms(t *testing.T) {
	opt, req := parquet.Repetitions.Optional, parquet.Repetitions.Required
	leaf := func(name string, r parquet.Repetition, lt schema.LogicalType, pt parquet.Type) schema.Node {
		return schema.MustPrimitive(schema.NewPrimitiveNodeLogical(name, r, lt, pt, -1, -1))
	}
	def := []int16{1, 0, 1}
	cases := []struct {
		name  string
		node  schema.Node
		col   pqgen.Column
		table sd.Type
		want  []string
	}{
		{"int32 decimal", leaf("k", opt, schema.NewDecimalLogicalType(9, 2), parquet.Types.Int32),
			pqgen.Column{Values: []int32{-12345, 99}, Def: def}, sd.DecimalType(9, 2), []string{"-123.45", "NULL", "0.99"}},
		{"int64 decimal widened", leaf("k", opt, schema.NewDecimalLogicalType(18, 3), parquet.Types.Int64),
			pqgen.Column{Values: []int64{-1, 123456789012345678}, Def: def}, sd.DecimalType(20, 3), []string{"-0.001", "NULL", "123456789012345.678"}},
		{"binary decimal", leaf("k", opt, schema.NewDecimalLogicalType(20, 2), parquet.Types.ByteArray),
			pqgen.Column{Values: []parquet.ByteArray{{0xff, 0x85}, {0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}}, Def: def}, sd.DecimalType(20, 2),
			[]string{"-1.23", "NULL", "184467440737095516.16"}},
		{"millisecond timestamp_ntz", leaf("k", opt, schema.NewTimestampLogicalType(false, schema.TimeUnitMillis), parquet.Types.Int64),
			pqgen.Column{Values: []int64{1714564800123, -1}, Def: def}, sd.TimestampNTZType, []string{"2024-05-01T12:00:00.123", "NULL", "1969-12-31T23:59:59.999"}},
		{"required uint32", leaf("k", req, schema.NewIntLogicalType(32, false), parquet.Types.Int32),
			pqgen.Column{Values: []int32{-1, 0, 7}}, sd.LongType, []string{"4294967295", "0", "7"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := schema.MustGroup(schema.NewGroupNode("schema", req, schema.FieldList{c.node}, -1))
			data, err := pqgen.ColumnsBytes(root, []pqgen.RowGroup{{c.col}}, pqgen.Options{})
			if err != nil {
				t.Fatal(err)
			}
			b := mem.New()
			src := put(b, "f.parquet", "g", data)
			spec := keyfile.Spec{Columns: []keyfile.Column{col("k", c.table)}}
			_, got, err := readAll(t, b, []keyfile.Source{src}, spec, keyfile.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if k := keysOf(got["f.parquet"]); !slices.Equal(k, c.want) {
				t.Errorf("keys %q, want %q", k, c.want)
			}
		})
	}
}

// A row group whose key chunks are larger than the bytes allowed in flight, and a page larger
// than the page limit, fail their file with an error naming the limit.
func TestReadLimits(t *testing.T) {
	data := wideFile(t, 4000, 2000, 2)
	b := mem.New()
	src := put(b, "wide.parquet", "g", data)
	spec := keyfile.Spec{Columns: []keyfile.Column{col("id", sd.LongType)}}
	for _, c := range []struct {
		opts keyfile.Options
		want string
	}{
		{keyfile.Options{MaxBytesInFlight: 4 << 10}, "over the 4.0 KiB limit of bytes held at once"},
		{keyfile.Options{MaxPageBytes: 1 << 10}, "exceeds configured limit 1024"},
	} {
		res, _, err := readAll(t, b, []keyfile.Source{src}, spec, c.opts)
		if err == nil || res.Files[0].Err == nil || !strings.Contains(res.Files[0].Err.Error(), c.want) {
			t.Errorf("options %+v: error %v, want %q", c.opts, err, c.want)
		}
	}
}

// No more files are read at once than Options.Concurrency.
func TestReadConcurrency(t *testing.T) {
	data := wideFile(t, 200, 50, 3)
	b := mem.New()
	var srcs []keyfile.Source
	for i := 0; i < 40; i++ {
		srcs = append(srcs, put(b, fmt.Sprintf("f%02d.parquet", i), "g", data))
	}
	for _, conc := range []int{1, 3} {
		g := &gauge{Backend: b}
		spec := keyfile.Spec{Columns: []keyfile.Column{col("id", sd.LongType)}}
		if _, _, err := readAll(t, g, srcs, spec, keyfile.Options{Concurrency: conc}); err != nil {
			t.Fatal(err)
		}
		if m := g.max.Load(); m != int64(conc) {
			t.Errorf("concurrency %d: %d files read at once", conc, m)
		}
	}
}

// gauge records the most reads open at once; the reads of one file are sequential.
type gauge struct {
	storage.Backend
	open, max atomic.Int64
}

func (g *gauge) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	if v := g.open.Add(1); v > g.max.Load() {
		g.max.Store(v)
	}
	defer g.open.Add(-1)
	time.Sleep(2 * time.Millisecond) // long enough for the reads of concurrent files to overlap
	rc, err := g.Backend.ReadRange(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(rc)
	rc.Close()
	return io.NopCloser(strings.NewReader(string(data))), err
}
