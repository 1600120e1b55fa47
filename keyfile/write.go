package keyfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/zbrecover/zbrecover/storage"
)

// The keys file's layout.
const (
	// ColGroup is the column of each row's schema group id (string, not null).
	ColGroup = "g"
	// ColFile is the column of each row's file, as Source.Key names it (string, not null).
	ColFile = "f"
	// ColRow is the column of each row's ordinal within its file (bigint, not null), present
	// when the file was written with Options.RowOrdinals.
	ColRow = "r"
	// MetaKey is the footer key-value entry that describes the file (Meta, as JSON).
	MetaKey = "zbrecover.keys"
	// FormatVersion is the version of the layout Meta.Version carries.
	FormatVersion = 1
	// DefaultRowGroupRows is the default number of rows per row group of a keys file.
	DefaultRowGroupRows = 1 << 20
	// OrderByFile is Meta.Order of the files Write writes: rows are not sorted by key. The
	// rows of one row group of a source are contiguous and in row order; the row groups of
	// different sources interleave in the order they were read.
	OrderByFile = "file-row-group"
)

// KeyColumn returns the name of the keys file's column for key column i: k0, k1, …
func KeyColumn(i int) string { return "k" + strconv.Itoa(i) }

// Meta describes a keys file; it is stored, as JSON, under MetaKey.
type Meta struct {
	Version int `json:"version"`
	// Columns are the key columns, in order: the table's names and types of k0, k1, …
	Columns []MetaColumn `json:"columns"`
	// RowOrdinals tells whether the file has the ColRow column.
	RowOrdinals bool `json:"row_ordinals"`
	// Rows is the number of rows.
	Rows int64 `json:"rows"`
	// Order says how the rows are ordered (OrderByFile).
	Order string `json:"order"`
}

// MetaColumn is one key column of a keys file.
type MetaColumn struct {
	Column string `json:"column"` // k0, k1, …
	Name   string `json:"name"`   // the table's name
	Type   string `json:"type"`   // the table's type, in Spark's simple form (bigint, decimal(10,2))
}

// chunkRows is how many rows a Writer gathers before it hands them to the Parquet writer.
const chunkRows = 64 << 10

// Writer writes a keys file to an io.Writer as it is given rows. Memory is bounded by one
// row group of the keys file (Options.RowGroupRows rows, encoded and compressed, as the
// Parquet writer holds a row group until it is complete) and chunkRows rows waiting to be
// encoded.
type Writer struct {
	fw       *pqarrow.FileWriter
	schema   *arrow.Schema
	cols     []Column
	types    []arrow.DataType
	ordinals bool
	pending  []pendingRows
	held     int
	rows     int64
	closed   bool
	err      error
}

type pendingRows struct {
	group, file string
	first       int64
	keys        []arrow.Array
}

// NewWriter starts a keys file for the key columns cols on w, with opts' RowOrdinals,
// Compression and RowGroupRows. Nothing is written before the first row group is complete.
func NewWriter(w io.Writer, cols []Column, opts Options) (*Writer, error) {
	if err := (Spec{Columns: cols}).check(); err != nil {
		return nil, err
	}
	codec := opts.Compression
	switch codec {
	case compress.Codecs.Uncompressed:
		codec = compress.Codecs.Zstd
	case compress.Codecs.Zstd, compress.Codecs.Snappy:
	default:
		return nil, fmt.Errorf("keyfile: compression %s is not supported (zstd or snappy)", codec)
	}
	rgRows := positiveOr(opts.RowGroupRows, DefaultRowGroupRows)
	fields := []arrow.Field{
		{Name: ColGroup, Type: arrow.BinaryTypes.String},
		{Name: ColFile, Type: arrow.BinaryTypes.String},
	}
	if opts.RowOrdinals {
		fields = append(fields, arrow.Field{Name: ColRow, Type: arrow.PrimitiveTypes.Int64})
	}
	kw := &Writer{cols: cols, ordinals: opts.RowOrdinals}
	for i, c := range cols {
		t := arrowType(c.Type)
		kw.types = append(kw.types, t)
		fields = append(fields, arrow.Field{Name: KeyColumn(i), Type: t, Nullable: true})
	}
	kw.schema = arrow.NewSchema(fields, nil)
	props := parquet.NewWriterProperties(
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(rgRows),
		// Only the group and file columns repeat: a dictionary there holds one entry per
		// group and per source of a row group. Keys are mostly distinct, and a dictionary
		// of them would cost memory until it fell back to plain encoding.
		parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor(ColGroup, true),
		parquet.WithDictionaryFor(ColFile, true),
		parquet.WithDictionaryPageSizeLimit(8<<20),
		parquet.WithEncodingFor(ColRow, parquet.Encodings.DeltaBinaryPacked),
	)
	fw, err := pqarrow.NewFileWriter(kw.schema, w, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, fmt.Errorf("keyfile: %w", err)
	}
	kw.fw = fw
	return kw, nil
}

// Add appends the rows of keys (one array per key column, of the types arrowType gives the
// columns, all of the same length) as rows first, first+1, … of file in group. The arrays
// are retained until they are written.
func (w *Writer) Add(group, file string, first int64, keys []arrow.Array) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("keyfile: Add after Close")
	}
	if len(keys) != len(w.cols) {
		return fmt.Errorf("keyfile: %d key arrays for %d key columns", len(keys), len(w.cols))
	}
	n := keys[0].Len()
	for i, a := range keys {
		if a.Len() != n {
			return fmt.Errorf("keyfile: key arrays of %d and %d rows", n, a.Len())
		}
		if !arrow.TypeEqual(a.DataType(), w.types[i]) {
			return fmt.Errorf("keyfile: key column %d is %s, want %s", i, a.DataType(), w.types[i])
		}
	}
	if n == 0 {
		return nil
	}
	for _, a := range keys {
		a.Retain()
	}
	w.pending = append(w.pending, pendingRows{group: group, file: file, first: first, keys: keys})
	w.held += n
	if w.held >= chunkRows {
		return w.writePending()
	}
	return nil
}

// writePending hands the gathered rows to the Parquet writer as one record.
func (w *Writer) writePending() (err error) {
	if len(w.pending) == 0 {
		return nil
	}
	defer func() {
		for _, p := range w.pending {
			for _, a := range p.keys {
				a.Release()
			}
		}
		clear(w.pending)
		w.pending, w.held = w.pending[:0], 0
		if err != nil {
			w.err = err
		}
	}()
	mem := memory.DefaultAllocator
	g, f := array.NewStringBuilder(mem), array.NewStringBuilder(mem)
	defer g.Release()
	defer f.Release()
	var r *array.Int64Builder
	if w.ordinals {
		r = array.NewInt64Builder(mem)
		defer r.Release()
		r.Reserve(w.held)
	}
	g.Reserve(w.held)
	f.Reserve(w.held)
	for _, p := range w.pending {
		n := p.keys[0].Len()
		for i := 0; i < n; i++ {
			g.Append(p.group)
			f.Append(p.file)
			if r != nil {
				r.UnsafeAppend(p.first + int64(i))
			}
		}
	}
	cols := []arrow.Array{g.NewArray(), f.NewArray()}
	if r != nil {
		cols = append(cols, r.NewArray())
	}
	for k := range w.cols {
		parts := make([]arrow.Array, len(w.pending))
		for j, p := range w.pending {
			parts[j] = p.keys[k]
		}
		a, err := array.Concatenate(parts, mem)
		if err != nil {
			releaseAll(cols)
			return fmt.Errorf("keyfile: %w", err)
		}
		cols = append(cols, a)
	}
	defer releaseAll(cols)
	rec := array.NewRecordBatch(w.schema, cols, int64(w.held))
	defer rec.Release()
	if err := w.fw.WriteBuffered(rec); err != nil {
		return fmt.Errorf("keyfile: write: %w", err)
	}
	w.rows += int64(w.held)
	return nil
}

func releaseAll(as []arrow.Array) {
	for _, a := range as {
		a.Release()
	}
}

// Rows returns the rows added so far.
func (w *Writer) Rows() int64 { return w.rows + int64(w.held) }

// Close writes the rows still held and the footer, with Meta under MetaKey. The keys file is
// complete once Close returns nil; w's underlying writer is not closed.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if w.err != nil {
		return w.err
	}
	if err := w.writePending(); err != nil {
		return err
	}
	meta := Meta{Version: FormatVersion, RowOrdinals: w.ordinals, Rows: w.rows, Order: OrderByFile}
	for i, c := range w.cols {
		meta.Columns = append(meta.Columns, MetaColumn{Column: KeyColumn(i), Name: c.Name, Type: c.Type.String()})
	}
	doc, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	if err := w.fw.AppendKeyValueMetadata(MetaKey, string(doc)); err != nil {
		return fmt.Errorf("keyfile: %w", err)
	}
	if err := w.fw.Close(); err != nil {
		w.err = fmt.Errorf("keyfile: close: %w", err)
		return w.err
	}
	return nil
}

// Write reads the keys of sources (Read) and writes them to w as one keys file (Writer):
// one row per row of each file read whole. When some files could not be read whole, the
// keys file is still completed, without them (but for the rows a failed file delivered past
// Options.FileBuffer, counted in FileResult.Delivered), and the error is the *FileErrors
// that names them. Any other error leaves w holding an incomplete file.
func Write(ctx context.Context, w io.Writer, b storage.Backend, sources []Source, spec Spec, opts Options) (*Result, error) {
	kw, err := NewWriter(w, spec.Columns, opts)
	if err != nil {
		return nil, err
	}
	res, err := Read(ctx, b, sources, spec, opts, func(bt Batch) error {
		s := sources[bt.Source]
		return kw.Add(s.Group, s.Key, bt.Row, bt.Keys)
	})
	var fe *FileErrors
	if err != nil && !errors.As(err, &fe) {
		return res, err
	}
	if cerr := kw.Close(); cerr != nil {
		return res, cerr
	}
	return res, err
}
