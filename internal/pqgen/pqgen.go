// Package pqgen writes real Parquet files for tests, benchmarks and the demo: from an Arrow
// schema and rows given as JSON or generated at random, through arrow-go's pqarrow writer, with
// control over row groups, compression, created_by, key-value metadata and INT96 timestamps.
// WriteColumns writes hand-built Parquet schemas (legacy 2-level lists, bare repeated fields)
// that the Arrow writer cannot produce. The corrupt helpers derive damaged variants of a file.
//
// No binary fixture is committed to the repository: tests generate what they need.
package pqgen

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// KV is one footer key-value metadata entry.
type KV struct {
	Key, Value string
}

// Options control how a file is written. The zero value writes one uncompressed row group with
// statistics, dictionary encoding and arrow-go's default created_by.
type Options struct {
	// RowGroupRows is the most rows per row group; 0 puts all rows in one row group.
	RowGroupRows int64
	// Compression is the codec for every column (compress.Codecs.Snappy, .Zstd, …).
	Compression compress.Compression
	// CreatedBy sets the footer's created_by; empty keeps arrow-go's default.
	CreatedBy string
	// KeyValue is appended to the footer's key-value metadata, in order.
	KeyValue []KV
	// Int96 writes every timestamp column as legacy INT96 (as old Spark and Hive writers do).
	Int96 bool
	// NoStats leaves column statistics (and with them null counts) out of the footer.
	NoStats bool
	// NoDictionary disables dictionary encoding.
	NoDictionary bool
	// DataPageSize is the target data page size in bytes; 0 keeps the default (1 MiB).
	DataPageSize int64
}

func (o Options) writerProps() *parquet.WriterProperties {
	props := []parquet.WriterProperty{
		parquet.WithCompression(o.Compression),
		parquet.WithStats(!o.NoStats),
		parquet.WithDictionaryDefault(!o.NoDictionary),
	}
	if o.RowGroupRows > 0 {
		props = append(props, parquet.WithMaxRowGroupLength(o.RowGroupRows))
	}
	if o.CreatedBy != "" {
		props = append(props, parquet.WithCreatedBy(o.CreatedBy))
	}
	if o.DataPageSize > 0 {
		props = append(props, parquet.WithDataPageSize(o.DataPageSize))
	}
	return parquet.NewWriterProperties(props...)
}

func (o Options) arrowProps() pqarrow.ArrowWriterProperties {
	var opts []pqarrow.WriterOption
	if o.Int96 {
		opts = append(opts, pqarrow.WithDeprecatedInt96Timestamps(true), pqarrow.WithCoerceTimestamps(arrow.Nanosecond))
	}
	return pqarrow.NewArrowWriterProperties(opts...)
}

// Write writes the records as one Parquet file. An empty list of records, or records with no
// rows, give a valid file with zero rows; schema is then taken from sc.
func Write(w io.Writer, sc *arrow.Schema, recs []arrow.RecordBatch, opts Options) error {
	fw, err := pqarrow.NewFileWriter(sc, w, opts.writerProps(), opts.arrowProps())
	if err != nil {
		return fmt.Errorf("pqgen: %w", err)
	}
	for _, kv := range opts.KeyValue {
		if err := fw.AppendKeyValueMetadata(kv.Key, kv.Value); err != nil {
			fw.Close()
			return fmt.Errorf("pqgen: key-value metadata: %w", err)
		}
	}
	for _, rec := range recs {
		if rec.NumRows() == 0 {
			continue
		}
		if err := fw.Write(rec); err != nil {
			fw.Close()
			return fmt.Errorf("pqgen: write: %w", err)
		}
	}
	if err := fw.Close(); err != nil {
		return fmt.Errorf("pqgen: close: %w", err)
	}
	return nil
}

// Records parses rows given as a JSON array of objects (one per row) into a record batch, as
// array.RecordFromJSON reads them: decimals as strings ("12.30"), timestamps as
// "2024-05-01T12:00:00.000001Z" for a column with a time zone and without the "Z" for one
// without, dates as "2024-05-01", maps as [{"key":…,"value":…}], binary as base64. The caller
// releases the record.
func Records(sc *arrow.Schema, rowsJSON string) (arrow.RecordBatch, error) {
	if strings.TrimSpace(rowsJSON) == "" {
		rowsJSON = "[]"
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rowsJSON))
	if err != nil {
		return nil, fmt.Errorf("pqgen: rows: %w", err)
	}
	return rec, nil
}

// WriteJSON writes the rows (see Records) as one Parquet file.
func WriteJSON(w io.Writer, sc *arrow.Schema, rowsJSON string, opts Options) error {
	rec, err := Records(sc, rowsJSON)
	if err != nil {
		return err
	}
	defer rec.Release()
	return Write(w, sc, []arrow.RecordBatch{rec}, opts)
}

// Bytes returns the Parquet file for the rows (see Records).
func Bytes(sc *arrow.Schema, rowsJSON string, opts Options) ([]byte, error) {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, sc, rowsJSON, opts); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// GeneratedBytes returns a Parquet file of n generated rows (see Generate).
func GeneratedBytes(sc *arrow.Schema, n int, seed int64, opts Options) ([]byte, error) {
	rec, err := Generate(sc, n, seed)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	var buf bytes.Buffer
	if err := Write(&buf, sc, []arrow.RecordBatch{rec}, opts); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteFile writes data to path, creating parent directories.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// Must returns data or panics with err. For test tables built at package level.
func Must(data []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return data
}

// JSONType is a string column written with the Parquet JSON logical type.
func JSONType() arrow.DataType {
	t, err := extensions.NewJSONType(arrow.BinaryTypes.String)
	if err != nil {
		panic(err) // String is a supported storage type
	}
	return t
}

// EnumType is a string column written with the Parquet ENUM logical type (as parquet-avro and
// parquet-protobuf write enums).
func EnumType() arrow.DataType {
	return &enumType{ExtensionBase: arrow.ExtensionBase{Storage: arrow.BinaryTypes.String}}
}

type enumType struct {
	arrow.ExtensionBase
}

// enumArray is the array type of enumType.
type enumArray struct {
	array.ExtensionArrayBase
}

func (*enumType) ExtensionName() string { return "zbrecover.pqgen.enum" }
func (*enumType) Serialize() string     { return "" }
func (*enumType) ArrayType() reflect.Type {
	return reflect.TypeOf(enumArray{})
}
func (e *enumType) ExtensionEquals(o arrow.ExtensionType) bool {
	return e.ExtensionName() == o.ExtensionName()
}
func (e *enumType) Deserialize(storage arrow.DataType, _ string) (arrow.ExtensionType, error) {
	return &enumType{ExtensionBase: arrow.ExtensionBase{Storage: storage}}, nil
}
func (*enumType) String() string { return "extension<zbrecover.pqgen.enum>" }

// ParquetLogicalType implements pqarrow.ExtensionCustomParquetType.
func (*enumType) ParquetLogicalType() schema.LogicalType { return schema.EnumLogicalType{} }
