package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

const (
	// DefaultPreviewRows is how many rows a preview shows unless told otherwise.
	DefaultPreviewRows = 20
	// DefaultPreviewMaxBytes caps the row-group span a preview fetches from one file.
	DefaultPreviewMaxBytes = 64 << 20
)

// PreviewOptions configure a preview.
type PreviewOptions struct {
	// Rows is how many rows to show; 0 means DefaultPreviewRows.
	Rows int
	// Columns restricts the preview to these top-level columns (matched exactly, else
	// case-insensitively), in the file's column order; empty means all.
	Columns []string
	// MaxBytes caps the bytes of column data fetched per row group; 0 means
	// DefaultPreviewMaxBytes. A larger row group is refused with an error naming its size.
	MaxBytes int64
	// MaxDecoded caps the uncompressed bytes decoded per row group, from the page headers,
	// before any page is decompressed; 0 means DefaultPreviewMaxDecoded.
	MaxDecoded int64
	// Prefix is the fallback folder relative to the backend root; "" means fallback.Prefix.
	Prefix string
	// TailSize is the footer read size; 0 means DefaultTailSize.
	TailSize int64
}

func (o PreviewOptions) maxDecoded() int64 { return positiveOr(o.MaxDecoded, DefaultPreviewMaxDecoded) }

func (o PreviewOptions) rows() int { return positiveOr(o.Rows, DefaultPreviewRows) }

func (o PreviewOptions) maxBytes() int64 { return positiveOr(o.MaxBytes, DefaultPreviewMaxBytes) }

// positiveOr returns v, or def when v is not positive (an option left at zero).
func positiveOr[T int | int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// PreviewFile says what a preview read from one file.
type PreviewFile struct {
	Key       string `json:"key"`
	KeyQuoted string `json:"key_quoted,omitempty"` // set when Key is not valid UTF-8
	Rows      int64  `json:"rows"`                 // rows in the file (footer)
	Shown     int    `json:"shown"`                // rows of it in the preview
	BytesRead int64  `json:"bytes_read"`           // footer tail + row-group spans
	Requests  int    `json:"requests"`             // storage reads made
	Error     string `json:"error,omitempty"`
}

// PreviewResult is the first rows of a file or of a schema group.
type PreviewResult struct {
	Root     string        `json:"root"`
	SchemaID string        `json:"schema_id"`
	Files    []PreviewFile `json:"files"`
	Columns  []Column      `json:"columns"`
	Rows     []Row         `json:"rows"`
}

// Row is one previewed row: rendered values in column order (see Value).
type Row []any

// Preview shows the first rows of one file. key is relative to the fallback prefix (a key that
// starts with the prefix is accepted too). The size comes from one Stat; then the footer and the
// first row group's byte span are read with one request each. PreviewObject skips the Stat
// when the size is already known from a listing.
func Preview(ctx context.Context, b storage.Backend, key string, opts PreviewOptions) (*PreviewResult, error) {
	prefix := Options{Prefix: opts.Prefix}.prefix()
	key = strings.TrimPrefix(strings.TrimPrefix(key, "/"), prefix)
	obj, err := b.Stat(ctx, prefix+key)
	if errors.Is(err, storage.ErrNotExist) {
		// The Go-quoted form text output and key_quoted show for keys that are not printable
		// or not valid UTF-8.
		if k, ok := UnquoteKey(key); ok {
			k = strings.TrimPrefix(strings.TrimPrefix(k, "/"), prefix)
			if o, err2 := b.Stat(ctx, prefix+k); err2 == nil {
				obj, err = o, nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return PreviewObject(ctx, b, obj, opts)
}

// PreviewObject shows the first rows of the listed object obj (its key relative to the backend
// root): 2 storage reads when the first row group holds enough rows (footer, then the row
// group's byte span for the selected columns), one more per further row group needed.
func PreviewObject(ctx context.Context, b storage.Backend, obj storage.ObjectInfo, opts PreviewOptions) (*PreviewResult, error) {
	prefix := Options{Prefix: opts.Prefix}.prefix()
	res := &PreviewResult{Root: b.Location(), Rows: []Row{}}
	pf, err := previewFile(ctx, b, obj, prefix, opts, opts.rows(), res)
	res.Files = append(res.Files, pf)
	if err != nil {
		return nil, fmt.Errorf("preview %s: %w", pf.Key, err)
	}
	return res, nil
}

// PreviewGroup shows the first rows of a schema group of rep (id may be a unique prefix of the
// schema id), reading the group's files in key order until enough rows are shown; their sizes
// come from the report, so each file costs 2 reads. A file that fails is listed with its error
// and the preview moves on to the next. For a report read back with LoadReport, each file is
// first checked unchanged (CheckUnchanged: one Stat), and a changed one is listed with its
// error instead of read.
func PreviewGroup(ctx context.Context, b storage.Backend, rep *Report, id string, opts PreviewOptions) (*PreviewResult, error) {
	g, err := rep.FindGroup(id)
	if err != nil {
		return nil, err
	}
	// Every file of the group has its schema: check the columns once, before reading.
	sel, err := selectFields(g.Schema, opts.Columns)
	if err != nil {
		return nil, err
	}
	opts.Prefix = rep.Prefix
	res := &PreviewResult{Root: b.Location(), SchemaID: g.SchemaID, Rows: []Row{}}
	want := opts.rows()
	for _, f := range rep.GroupFiles(g.SchemaID) {
		if len(res.Rows) >= want {
			break
		}
		if f.Rows == 0 {
			continue
		}
		obj := f.Object(rep.Prefix)
		if rep.saved {
			// A saved report's file must still be the object it describes.
			if _, err := CheckUnchanged(ctx, b, rep.Prefix, f); err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				res.Files = append(res.Files, PreviewFile{Key: f.Key, KeyQuoted: f.KeyQuoted, Rows: f.Rows, Requests: 1, Error: err.Error()})
				continue
			}
		}
		pf, err := previewFile(ctx, b, obj, rep.Prefix, opts, want-len(res.Rows), res)
		if rep.saved {
			pf.Requests++ // the Stat
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			pf.Error = err.Error()
		}
		res.Files = append(res.Files, pf)
	}
	if res.Columns == nil {
		for _, i := range sel {
			res.Columns = append(res.Columns, g.Columns[i])
		}
	}
	return res, nil
}

// selectFields resolves column names to top-level field indices, in schema order.
func selectFields(s schemadiff.Schema, names []string) ([]int, error) {
	if len(names) == 0 {
		idx := make([]int, len(s.Fields))
		for i := range idx {
			idx[i] = i
		}
		return idx, nil
	}
	want := make(map[int]bool)
	for _, n := range names {
		n = strings.TrimSpace(n)
		found := -1
		for i, f := range s.Fields {
			if f.Name == n {
				found = i
				break
			}
		}
		if found < 0 {
			for i, f := range s.Fields {
				if strings.EqualFold(f.Name, n) {
					found = i
					break
				}
			}
		}
		if found < 0 {
			all := make([]string, len(s.Fields))
			for i, f := range s.Fields {
				all[i] = f.Name
			}
			return nil, fmt.Errorf("no column %q (columns: %s)", n, strings.Join(all, ", "))
		}
		want[found] = true
	}
	var idx []int
	for i := range s.Fields {
		if want[i] {
			idx = append(idx, i)
		}
	}
	return idx, nil
}

// previewFile appends up to need rows of obj to res (setting res.Columns and res.SchemaID
// from the first file) and reports what it read.
func previewFile(ctx context.Context, b storage.Backend, obj storage.ObjectInfo, prefix string, opts PreviewOptions, need int, res *PreviewResult) (PreviewFile, error) {
	pf := PreviewFile{Key: strings.TrimPrefix(obj.Key, prefix)}
	pf.KeyQuoted = QuoteInvalidKey(pf.Key)
	ft, err := readFooter(ctx, b, obj.Key, obj.Size, opts.TailSize)
	pf.Requests += ft.reads
	pf.BytesRead += int64(len(ft.tail))
	if err != nil {
		return pf, err
	}
	defer ft.release()
	ff, err := extract(ft.md)
	if err != nil {
		return pf, err
	}
	pf.Rows = ff.rows
	sel, err := selectFields(ff.schema, opts.Columns)
	if err != nil {
		return pf, err
	}
	if res.Columns == nil {
		res.SchemaID = SchemaID(ff.schema)
		for _, i := range sel {
			f := ff.schema.Fields[i]
			c := Column{Name: f.Name, Type: f.Type.String(), Nullable: f.Nullable}
			res.Columns = append(res.Columns, c)
		}
	}
	md := ft.md
	leaves, err := leafColumns(md, sel)
	if err != nil {
		return pf, err
	}
	ra := &prefetched{ctx: ctx, b: b, key: obj.Key, size: obj.Size}
	ra.add(obj.Size-int64(len(ft.tail)), ft.tail)
	for rg := 0; rg < md.NumRowGroups() && pf.Shown < need; rg++ {
		if md.RowGroup(rg).NumRows() == 0 {
			continue
		}
		start, end, err := rowGroupSpan(md, rg, leaves, obj.Size, ft.length)
		if err != nil {
			return pf, err
		}
		if end-start > opts.maxBytes() {
			return pf, fmt.Errorf("row group %d spans %s of column data, over the preview limit of %s (raise the limit or select fewer columns)",
				rg, textfmt.Bytes(end-start), textfmt.Bytes(opts.maxBytes()))
		}
		span, err := readRange(ctx, b, obj.Key, start, end-start)
		pf.Requests++
		if err != nil {
			return pf, err
		}
		if int64(len(span)) != end-start {
			return pf, fmt.Errorf("short read: got %d of %d bytes of row group %d (has the object changed?)", len(span), end-start, rg)
		}
		pf.BytesRead += int64(len(span))
		if err := checkDecodedSize(md, rg, leaves, span, start, opts.maxDecoded()); err != nil {
			return pf, err
		}
		ra.add(start, span)
		rows, err := readRows(ctx, ra, md, leaves, rg, need-pf.Shown, ff.schema, sel)
		pf.Requests += ra.extra
		ra.extra = 0
		ra.drop(start)
		if err != nil {
			return pf, err
		}
		res.Rows = append(res.Rows, rows...)
		pf.Shown += len(rows)
	}
	return pf, nil
}

// leafColumns returns the leaf column indices under the selected top-level fields.
func leafColumns(md *metadata.FileMetaData, sel []int) (leaves []int, err error) {
	err = contain("schema", func() error {
		want := make(map[int]bool, len(sel))
		for _, i := range sel {
			want[i] = true
		}
		root := md.Schema.Root()
		for j := 0; j < md.Schema.NumColumns(); j++ {
			if want[root.FieldIndexByField(md.Schema.ColumnRoot(j))] {
				leaves = append(leaves, j)
			}
		}
		return nil
	})
	return leaves, err
}

// rowGroupSpan returns the byte range [start, end) that holds the given leaf columns of row
// group rg, checked against the file's data region (ChunkSpans).
func rowGroupSpan(md *metadata.FileMetaData, rg int, leaves []int, size, footerLen int64) (start, end int64, err error) {
	err = contain("row group metadata", func() error {
		spans, _, err := ChunkSpans(md, rg, leaves, size, footerLen)
		if err != nil {
			return err
		}
		if len(spans) == 0 {
			return errors.New("no columns selected")
		}
		start, end = spans[0].Off, spans[0].End
		for _, sp := range spans[1:] {
			start, end = min(start, sp.Off), max(end, sp.End)
		}
		return nil
	})
	return start, end, err
}

// readRows decodes up to n rows of row group rg from the prefetched ranges.
func readRows(ctx context.Context, ra *prefetched, md *metadata.FileMetaData, leaves []int, rg, n int, s schemadiff.Schema, sel []int) (rows []Row, err error) {
	err = contain("rows", func() error {
		props := parquet.NewReaderProperties(memory.DefaultAllocator)
		rdr, err := file.NewParquetReader(io.NewSectionReader(ra, 0, ra.size), file.WithMetadata(md), file.WithReadProps(props))
		if err != nil {
			return err
		}
		fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{BatchSize: int64(n), Parallel: false}, memory.DefaultAllocator)
		if err != nil {
			return err
		}
		rr, err := fr.GetRecordReader(ctx, leaves, []int{rg})
		if err != nil {
			return err
		}
		defer rr.Release()
		for len(rows) < n && rr.Next() {
			rec := rr.RecordBatch()
			if int(rec.NumCols()) != len(sel) {
				return fmt.Errorf("read %d columns, expected %d", rec.NumCols(), len(sel))
			}
			for i := 0; i < int(rec.NumRows()) && len(rows) < n; i++ {
				row := make(Row, len(sel))
				for c := range sel {
					row[c] = capValue(Value(rec.Column(c), i, s.Fields[sel[c]].Type))
				}
				rows = append(rows, row)
			}
		}
		return rr.Err()
	})
	return rows, err
}

// prefetched is an io.ReaderAt over a few byte ranges of one object already in memory. A read
// outside them goes to storage (counted in extra); the preview is built not to need it.
type prefetched struct {
	ctx    context.Context
	b      storage.Backend
	key    string
	size   int64
	ranges []prefetchedRange
	extra  int
}

type prefetchedRange struct {
	off  int64
	data []byte
}

func (p *prefetched) add(off int64, data []byte) {
	p.ranges = append(p.ranges, prefetchedRange{off: off, data: data})
}

// drop forgets the range starting at off.
func (p *prefetched) drop(off int64) {
	for i, r := range p.ranges {
		if r.off == off {
			p.ranges = append(p.ranges[:i], p.ranges[i+1:]...)
			return
		}
	}
}

// ReadAt implements io.ReaderAt.
func (p *prefetched) ReadAt(buf []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("negative offset %d", off)
	}
	end := off + int64(len(buf))
	for _, r := range p.ranges {
		if off >= r.off && end <= r.off+int64(len(r.data)) {
			return copy(buf, r.data[off-r.off:end-r.off]), nil
		}
	}
	if off >= p.size {
		return 0, io.EOF
	}
	n := min(int64(len(buf)), p.size-off)
	p.extra++
	data, err := storage.ReadAll(p.ctx, p.b, p.key, off, n)
	if err != nil {
		return 0, err
	}
	c := copy(buf, data)
	if c < len(buf) {
		return c, io.EOF
	}
	return c, nil
}
