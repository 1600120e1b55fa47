package delta

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/zbrecover/zbrecover/storage"
)

// backendReaderAt reads an object through ranged reads: one ReadRange per ReadAt.
type backendReaderAt struct {
	ctx  context.Context
	b    storage.Backend
	key  string
	size int64
}

func (r *backendReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= r.size {
		return 0, io.EOF
	}
	n := int64(len(p))
	if off+n > r.size {
		n = r.size - off
	}
	rc, err := r.b.ReadRange(r.ctx, r.key, off, n)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	got, err := io.ReadFull(rc, p[:n])
	if err == io.ErrUnexpectedEOF {
		err = fmt.Errorf("%s changed while being read (short read at offset %d)", r.key, off)
	}
	if err == nil && got < len(p) {
		err = io.EOF
	}
	return got, err
}

// segment is a byte range of an object held in memory.
type segment struct {
	off  int64
	data []byte
}

// prefetchingReaderAt serves ReadAt from prefetched segments when they cover the request, and
// through ranged reads otherwise. It turns the many small reads of a Parquet reader (footer
// length, footer, one per column chunk) into a few large requests.
type prefetchingReaderAt struct {
	backendReaderAt
	segs []segment
}

// prefetch reads [off, off+n) into memory in one request.
func (r *prefetchingReaderAt) prefetch(off, n int64) error {
	off = max(off, 0)
	n = min(n, r.size-off)
	if n <= 0 {
		return nil
	}
	for _, s := range r.segs {
		if off >= s.off && off+n <= s.off+int64(len(s.data)) {
			return nil // already held
		}
	}
	buf := make([]byte, n)
	got, err := r.backendReaderAt.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		return err
	}
	r.segs = append(r.segs, segment{off: off, data: buf[:got]})
	return nil
}

func (r *prefetchingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	for _, s := range r.segs {
		if off >= s.off && off+int64(len(p)) <= s.off+int64(len(s.data)) {
			return copy(p, s.data[off-s.off:]), nil
		}
	}
	return r.backendReaderAt.ReadAt(p, off)
}

const (
	// footerPrefetch is read from the end of a checkpoint before parsing it: the footer of a
	// checkpoint of a small table, or the whole file, fits in it.
	footerPrefetch = 64 << 10
	// maxSpanPrefetch caps the one read that fetches all the needed column chunks.
	maxSpanPrefetch = 64 << 20
	// chunkPadding covers the padding arrow-go adds to column chunks of files written by old
	// parquet-mr versions (PARQUET-816).
	chunkPadding = 100
)

// readParquetCheckpoint reads the metaData and protocol rows of one Parquet checkpoint file,
// fetching only those columns, and only from row groups whose statistics do not rule them out:
// one request for the footer (the whole file when it is small) and one for the span of the
// needed column chunks. arrow-go panics on some corrupt files; a panic becomes an error naming
// the file.
func readParquetCheckpoint(ctx context.Context, b storage.Backend, f logFile) (md *metaData, p *protocol, err error) {
	key := LogDir + f.name
	defer func() {
		if r := recover(); r != nil {
			md, p, err = nil, nil, fmt.Errorf("read checkpoint %s: corrupt Parquet (reader panic: %v)", key, r)
		}
	}()
	ra := &prefetchingReaderAt{backendReaderAt: backendReaderAt{ctx: ctx, b: b, key: key, size: f.size}}
	if err := ra.prefetch(f.size-footerPrefetch, footerPrefetch); err != nil {
		return nil, nil, fmt.Errorf("read checkpoint %s: %w", key, err)
	}
	pf, err := file.NewParquetReader(io.NewSectionReader(ra, 0, f.size))
	if err != nil {
		return nil, nil, fmt.Errorf("read checkpoint %s: %w", key, err)
	}
	defer pf.Close()

	schema := pf.MetaData().Schema
	var leaves []int
	// Leaves whose null counts tell whether a row group holds the action at all.
	probe := map[string]int{}
	for i := 0; i < schema.NumColumns(); i++ {
		path := schema.Column(i).ColumnPath()
		if len(path) == 0 || (path[0] != "metaData" && path[0] != "protocol") {
			continue
		}
		leaves = append(leaves, i)
		if len(path) == 2 && (path[1] == "schemaString" || path[1] == "minReaderVersion") {
			probe[path[0]] = i
		}
	}
	if len(leaves) == 0 {
		return nil, nil, nil // a checkpoint part with file actions only
	}
	var rowGroups []int
	for rg := 0; rg < pf.NumRowGroups(); rg++ {
		if mayHold(pf, rg, probe) {
			rowGroups = append(rowGroups, rg)
		}
	}
	if len(rowGroups) == 0 {
		return nil, nil, nil
	}
	if start, end, ok := chunkSpan(pf, leaves, rowGroups, f.size); ok && end-start <= maxSpanPrefetch {
		if err := ra.prefetch(start, end-start); err != nil {
			return nil, nil, fmt.Errorf("read checkpoint %s: %w", key, err)
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: false}, memory.DefaultAllocator)
	if err != nil {
		return nil, nil, fmt.Errorf("read checkpoint %s: %w", key, err)
	}
	tbl, err := fr.ReadRowGroups(ctx, leaves, rowGroups)
	if err != nil {
		return nil, nil, fmt.Errorf("read checkpoint %s: %w", key, err)
	}
	defer tbl.Release()
	for c := 0; c < int(tbl.NumCols()); c++ {
		col := tbl.Column(c)
		for _, chunk := range col.Data().Chunks() {
			st, ok := chunk.(*array.Struct)
			if !ok {
				return nil, nil, fmt.Errorf("read checkpoint %s: column %s is %s, want a struct", key, col.Name(), chunk.DataType())
			}
			for row := 0; row < st.Len(); row++ {
				if st.IsNull(row) {
					continue
				}
				switch col.Name() {
				case "metaData":
					if md == nil {
						md, err = metaDataAt(st, row)
					}
				case "protocol":
					if p == nil {
						p, err = protocolAt(st, row)
					}
				}
				if err != nil {
					return nil, nil, fmt.Errorf("read checkpoint %s: %s: %w", key, col.Name(), err)
				}
			}
		}
	}
	return md, p, nil
}

// chunkSpan returns the byte range covering the given leaves' column chunks in the given row
// groups, as arrow-go will read them.
func chunkSpan(pf *file.Reader, leaves, rowGroups []int, size int64) (start, end int64, ok bool) {
	start, end = size, 0
	for _, rg := range rowGroups {
		rgm := pf.MetaData().RowGroup(rg)
		for _, leaf := range leaves {
			cc, err := rgm.ColumnChunk(leaf)
			if err != nil {
				return 0, 0, false
			}
			s := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < s {
				s = cc.DictionaryPageOffset()
			}
			e := s + cc.TotalCompressedSize() + chunkPadding
			if s < 0 || cc.TotalCompressedSize() < 0 {
				return 0, 0, false
			}
			start, end = min(start, s), max(end, min(e, size))
		}
	}
	return start, end, start < end
}

// mayHold reports whether row group rg may hold a metaData or protocol row: false only when
// the statistics of both probe columns say every value is null.
func mayHold(pf *file.Reader, rg int, probe map[string]int) bool {
	rgm := pf.MetaData().RowGroup(rg)
	if len(probe) < 2 {
		return true
	}
	for _, leaf := range probe {
		cc, err := rgm.ColumnChunk(leaf)
		if err != nil {
			return true
		}
		if set, err := cc.StatsSet(); err != nil || !set {
			return true
		}
		stats, err := cc.Statistics()
		if err != nil || stats == nil || !stats.HasNullCount() || stats.NullCount() < rgm.NumRows() {
			return true
		}
	}
	return false
}

func field(st *array.Struct, name string) (arrow.Array, bool) {
	idx, ok := st.DataType().(*arrow.StructType).FieldIdx(name)
	if !ok {
		return nil, false
	}
	return st.Field(idx), true
}

func stringField(st *array.Struct, row int, name string) (string, error) {
	a, ok := field(st, name)
	if !ok || a.IsNull(row) {
		return "", nil
	}
	return stringAt(a, row)
}

func stringAt(a arrow.Array, i int) (string, error) {
	switch x := a.(type) {
	case *array.String:
		return x.Value(i), nil
	case *array.LargeString:
		return x.Value(i), nil
	case *array.Binary:
		return string(x.Value(i)), nil
	case *array.LargeBinary:
		return string(x.Value(i)), nil
	}
	return "", fmt.Errorf("want a string column, got %s", a.DataType())
}

func intField(st *array.Struct, row int, name string) (int, error) {
	a, ok := field(st, name)
	if !ok || a.IsNull(row) {
		return 0, nil
	}
	switch x := a.(type) {
	case *array.Int32:
		return int(x.Value(row)), nil
	case *array.Int64:
		return int(x.Value(row)), nil
	}
	return 0, fmt.Errorf("%s: want an integer column, got %s", name, a.DataType())
}

func stringListField(st *array.Struct, row int, name string) ([]string, error) {
	a, ok := field(st, name)
	if !ok || a.IsNull(row) {
		return nil, nil
	}
	l, ok := a.(array.ListLike)
	if !ok {
		return nil, fmt.Errorf("%s: want a list column, got %s", name, a.DataType())
	}
	start, end := l.ValueOffsets(row)
	values := l.ListValues()
	out := make([]string, 0, end-start)
	for i := start; i < end; i++ {
		s, err := stringAt(values, int(i))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func stringMapField(st *array.Struct, row int, name string) (map[string]string, error) {
	a, ok := field(st, name)
	if !ok || a.IsNull(row) {
		return nil, nil
	}
	m, ok := a.(*array.Map)
	if !ok {
		return nil, fmt.Errorf("%s: want a map column, got %s", name, a.DataType())
	}
	start, end := m.ValueOffsets(row)
	keys, items := m.Keys(), m.Items()
	out := make(map[string]string, end-start)
	for i := start; i < end; i++ {
		k, err := stringAt(keys, int(i))
		if err != nil {
			return nil, fmt.Errorf("%s keys: %w", name, err)
		}
		if items.IsNull(int(i)) {
			out[k] = ""
			continue
		}
		v, err := stringAt(items, int(i))
		if err != nil {
			return nil, fmt.Errorf("%s values: %w", name, err)
		}
		out[k] = v
	}
	return out, nil
}

func metaDataAt(st *array.Struct, row int) (*metaData, error) {
	var md metaData
	var err error
	if md.ID, err = stringField(st, row, "id"); err != nil {
		return nil, err
	}
	if md.SchemaString, err = stringField(st, row, "schemaString"); err != nil {
		return nil, err
	}
	if md.SchemaString == "" {
		return nil, fmt.Errorf("metaData row without schemaString")
	}
	if md.PartitionColumns, err = stringListField(st, row, "partitionColumns"); err != nil {
		return nil, err
	}
	if md.Configuration, err = stringMapField(st, row, "configuration"); err != nil {
		return nil, err
	}
	return &md, nil
}

func protocolAt(st *array.Struct, row int) (*protocol, error) {
	var p protocol
	var err error
	if p.MinReaderVersion, err = intField(st, row, "minReaderVersion"); err != nil {
		return nil, err
	}
	if p.MinWriterVersion, err = intField(st, row, "minWriterVersion"); err != nil {
		return nil, err
	}
	if p.ReaderFeatures, err = stringListField(st, row, "readerFeatures"); err != nil {
		return nil, err
	}
	if p.WriterFeatures, err = stringListField(st, row, "writerFeatures"); err != nil {
		return nil, err
	}
	return &p, nil
}
