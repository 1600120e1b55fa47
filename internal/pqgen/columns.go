package pqgen

import (
	"bytes"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Column is the data of one leaf column in a row group, in Parquet's own terms: the non-null
// values, and the definition and repetition levels (nil when the column's maximum level is 0).
// Values is a []bool, []int32, []int64, []parquet.Int96, []float32, []float64,
// []parquet.ByteArray or []parquet.FixedLenByteArray matching the leaf's physical type.
type Column struct {
	Values any
	Def    []int16
	Rep    []int16
}

// RowGroup is the leaf columns of one row group, in schema order.
type RowGroup []Column

// WriteColumns writes a file with a hand-built Parquet schema (root is the schema's root group),
// one row group per element of rowGroups. It reaches what the Arrow writer cannot produce:
// legacy 2-level lists, bare repeated fields, MAP_KEY_VALUE, converted-type-only annotations.
// RowGroupRows, Int96 and the Arrow-specific options are ignored.
func WriteColumns(w io.Writer, root *schema.GroupNode, rowGroups []RowGroup, opts Options) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pqgen: write columns: %v", r)
		}
	}()
	fw := file.NewParquetWriter(w, root, file.WithWriterProps(opts.writerProps()))
	for _, kv := range opts.KeyValue {
		if err := fw.AppendKeyValueMetadata(kv.Key, kv.Value); err != nil {
			return err
		}
	}
	for gi, rg := range rowGroups {
		rgw := fw.AppendRowGroup()
		if len(rg) != fw.NumColumns() {
			return fmt.Errorf("pqgen: row group %d has %d columns, schema has %d", gi, len(rg), fw.NumColumns())
		}
		for ci, col := range rg {
			cw, err := rgw.NextColumn()
			if err != nil {
				return err
			}
			if err := writeColumn(cw, col); err != nil {
				return fmt.Errorf("pqgen: row group %d column %d: %w", gi, ci, err)
			}
			if err := cw.Close(); err != nil {
				return err
			}
		}
		if err := rgw.Close(); err != nil {
			return err
		}
	}
	return fw.Close()
}

// ColumnsBytes returns the file WriteColumns writes.
func ColumnsBytes(root *schema.GroupNode, rowGroups []RowGroup, opts Options) ([]byte, error) {
	var buf bytes.Buffer
	if err := WriteColumns(&buf, root, rowGroups, opts); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeColumn(cw file.ColumnChunkWriter, col Column) error {
	var err error
	switch w := cw.(type) {
	case *file.BooleanColumnChunkWriter:
		v, _ := col.Values.([]bool)
		_, err = w.WriteBatch(v, col.Def, col.Rep)
	case *file.Int32ColumnChunkWriter:
		v, _ := col.Values.([]int32)
		_, err = w.WriteBatch(v, col.Def, col.Rep)
	case *file.Int64ColumnChunkWriter:
		v, _ := col.Values.([]int64)
		_, err = w.WriteBatch(v, col.Def, col.Rep)
	case *file.Int96ColumnChunkWriter:
		v, _ := col.Values.([]parquet.Int96)
		_, err = w.WriteBatch(v, col.Def, col.Rep)
	case *file.Float32ColumnChunkWriter:
		v, _ := col.Values.([]float32)
		_, err = w.WriteBatch(v, col.Def, col.Rep)
	case *file.Float64ColumnChunkWriter:
		v, _ := col.Values.([]float64)
		_, err = w.WriteBatch(v, col.Def, col.Rep)
	case *file.ByteArrayColumnChunkWriter:
		v, _ := col.Values.([]parquet.ByteArray)
		_, err = w.WriteBatch(v, col.Def, col.Rep)
	case *file.FixedLenByteArrayColumnChunkWriter:
		v, _ := col.Values.([]parquet.FixedLenByteArray)
		_, err = w.WriteBatch(v, col.Def, col.Rep)
	default:
		return fmt.Errorf("unsupported column writer %T", cw)
	}
	return err
}
