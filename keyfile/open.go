package keyfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// ErrNotKeysFile is wrapped by the error of Open for a Parquet file that is not a keys file
// (no MetaKey entry, another version, or columns that do not match it).
var ErrNotKeysFile = errors.New("not a keys file")

// Reader reads a keys file.
type Reader struct {
	meta    Meta
	cols    []Column
	pf      *file.Reader
	groupIx int // leaf index of ColGroup
	fileIx  int // leaf index of ColFile
}

// Open opens the keys file of size bytes read through r, checking its layout against its
// Meta: the columns g, f, (r,) k0, k1, … with the Spark types Meta names.
func Open(r io.ReaderAt, size int64) (kr *Reader, err error) {
	err = contain("keys file", func() error {
		pf, err := file.NewParquetReader(io.NewSectionReader(r, 0, size))
		if err != nil {
			return err
		}
		kr, err = newReader(pf)
		return err
	})
	return kr, err
}

// OpenObject opens the keys file stored as key on b: one Stat, then ranged reads as the
// Parquet reader asks for them (the footer, then whole column chunks).
func OpenObject(ctx context.Context, b storage.Backend, key string) (*Reader, error) {
	info, err := b.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	return Open(&objectReaderAt{ctx: ctx, b: b, key: key}, info.Size)
}

type objectReaderAt struct {
	ctx context.Context
	b   storage.Backend
	key string
}

func (o *objectReaderAt) ReadAt(p []byte, off int64) (int, error) {
	data, err := storage.ReadAll(o.ctx, o.b, o.key, off, int64(len(p)))
	n := copy(p, data)
	if err == nil && n < len(p) {
		err = io.EOF
	}
	return n, err
}

func newReader(pf *file.Reader) (*Reader, error) {
	md := pf.MetaData()
	kv := md.KeyValueMetadata().FindValue(MetaKey)
	if kv == nil {
		return nil, fmt.Errorf("%w: no %s entry in the footer", ErrNotKeysFile, MetaKey)
	}
	kr := &Reader{pf: pf}
	if err := json.Unmarshal([]byte(*kv), &kr.meta); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotKeysFile, MetaKey, err)
	}
	if kr.meta.Version != FormatVersion {
		return nil, fmt.Errorf("%w: version %d, this reader reads version %d", ErrNotKeysFile, kr.meta.Version, FormatVersion)
	}
	s, err := inspect.SparkSchema(md.Schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotKeysFile, err)
	}
	want := []string{ColGroup, ColFile}
	if kr.meta.RowOrdinals {
		want = append(want, ColRow)
	}
	for i := range kr.meta.Columns {
		want = append(want, KeyColumn(i))
	}
	if len(s.Fields) != len(want) || md.Schema.NumColumns() != len(want) {
		return nil, fmt.Errorf("%w: %d columns, its metadata describes %d", ErrNotKeysFile, len(s.Fields), len(want))
	}
	for i, name := range want {
		if s.Fields[i].Name != name {
			return nil, fmt.Errorf("%w: column %d is %s, not %s", ErrNotKeysFile, i, schemadiff.QuoteIdent(s.Fields[i].Name), name)
		}
	}
	for i, mc := range kr.meta.Columns {
		t, err := schemadiff.ParseType(mc.Type)
		if err != nil {
			return nil, fmt.Errorf("%w: key column %s: %w", ErrNotKeysFile, mc.Column, err)
		}
		got := s.Fields[len(want)-len(kr.meta.Columns)+i].Type
		if mc.Column != KeyColumn(i) || !got.Equal(t) {
			return nil, fmt.Errorf("%w: key column %s is %s, its metadata says %s", ErrNotKeysFile, KeyColumn(i), got, t)
		}
		kr.cols = append(kr.cols, Column{Name: mc.Name, Type: t})
	}
	kr.groupIx, kr.fileIx = 0, 1
	return kr, nil
}

// Meta returns the file's description.
func (r *Reader) Meta() Meta { return r.meta }

// Columns returns the key columns: the table's names and types of k0, k1, …
func (r *Reader) Columns() []Column { return r.cols }

// Rows returns the number of rows, from the footer.
func (r *Reader) Rows() int64 { return r.pf.NumRows() }

// Row is one row of a keys file.
type Row struct {
	Group, File string
	// Ordinal is the row's ordinal within its file, or -1 in a file without row ordinals.
	Ordinal int64
	// Keys are the key values as inspect.Value renders them: nil for NULL, json.Number for
	// integers and decimals, strings for strings, dates ("2024-05-01") and timestamps
	// (RFC 3339 to the microsecond, "Z" for timestamp, no zone for timestamp_ntz), base64
	// strings for binaries, bool for booleans.
	Keys []any
}

const scanBatch = 64 << 10

// Scan calls fn for every row, in file order, row group by row group; it stops at fn's
// first error and returns it.
func (r *Reader) Scan(ctx context.Context, fn func(Row) error) error {
	var group, name string
	return r.records(ctx, nil, func(rec arrow.RecordBatch) error {
		g := rec.Column(0).(*array.String)
		f := rec.Column(1).(*array.String)
		first := 2
		var ord *array.Int64
		if r.meta.RowOrdinals {
			ord = rec.Column(2).(*array.Int64)
			first = 3
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			// The record's strings live in buffers the reader reuses: the row gets copies,
			// shared between consecutive rows of the same file.
			if v := g.Value(i); v != group {
				group = strings.Clone(v)
			}
			if v := f.Value(i); v != name {
				name = strings.Clone(v)
			}
			row := Row{Group: group, File: name, Ordinal: -1, Keys: make([]any, len(r.cols))}
			if ord != nil {
				row.Ordinal = ord.Value(i)
			}
			for k, c := range r.cols {
				v := inspect.Value(rec.Column(first+k), i, c.Type)
				if s, ok := v.(string); ok {
					v = strings.Clone(s)
				}
				row.Keys[k] = v
			}
			if err := fn(row); err != nil {
				return err
			}
		}
		return nil
	})
}

// records calls fn with every record of the given leaf columns (nil: all), row group by row
// group, with panics of the Parquet library contained.
func (r *Reader) records(ctx context.Context, cols []int, fn func(arrow.RecordBatch) error) error {
	var fnErr error
	err := contain("keys file", func() error {
		props := pqarrow.ArrowReadProperties{BatchSize: scanBatch}
		fr, err := pqarrow.NewFileReader(r.pf, props, memory.DefaultAllocator)
		if err != nil {
			return err
		}
		rr, err := fr.GetRecordReader(ctx, cols, nil)
		if err != nil {
			return err
		}
		defer rr.Release()
		for rr.Next() {
			if err := fn(rr.RecordBatch()); err != nil {
				fnErr = err
				return err
			}
		}
		return rr.Err()
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// FileCount is the number of rows a keys file holds for one file of one schema group, and
// how many of them have a NULL key column (such a row identifies nothing).
type FileCount struct {
	Group, File string
	Rows        int64
	NullRows    int64
}

// Counts returns the rows per file, sorted by group then file, with the rows that have a NULL
// in any key column: it reads the group and file columns and the key columns' definition
// levels (their values are decoded, not kept).
func (r *Reader) Counts(ctx context.Context) ([]FileCount, error) {
	type gf struct{ g, f string }
	type n struct{ rows, nulls int64 }
	counts := map[gf]n{}
	first := 2
	if r.meta.RowOrdinals {
		first = 3
	}
	cols := []int{r.groupIx, r.fileIx}
	for i := range r.cols {
		cols = append(cols, first+i)
	}
	err := r.records(ctx, cols, func(rec arrow.RecordBatch) error {
		g := rec.Column(0).(*array.String)
		f := rec.Column(1).(*array.String)
		keys := make([]arrow.Array, len(r.cols))
		for i := range keys {
			keys[i] = rec.Column(2 + i)
		}
		var last gf
		var run n
		flush := func() {
			if run.rows > 0 {
				k := gf{strings.Clone(last.g), strings.Clone(last.f)}
				c := counts[k]
				c.rows += run.rows
				c.nulls += run.nulls
				counts[k] = c
			}
			run = n{}
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			k := gf{g.Value(i), f.Value(i)}
			if run.rows > 0 && k != last {
				flush()
			}
			last = k
			run.rows++
			for _, a := range keys {
				if a.IsNull(i) {
					run.nulls++
					break
				}
			}
		}
		flush()
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]FileCount, 0, len(counts))
	for k, c := range counts {
		out = append(out, FileCount{Group: k.g, File: k.f, Rows: c.rows, NullRows: c.nulls})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].File < out[j].File
	})
	return out, nil
}
