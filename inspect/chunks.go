package inspect

import (
	"fmt"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// Span is the byte range [Off, End) of a file.
type Span struct{ Off, End int64 }

// maxDictHeaderSize is the padding arrow-go reads past a column chunk of files written by
// parquet-mr before PARQUET-816 was fixed (their chunk sizes leave out the dictionary page
// header).
const maxDictHeaderSize = 100

// ChunkSpans returns the byte ranges of the given leaf columns of row group rg, in the order
// of leaves, as arrow-go's column reader reads them, and the sum of their compressed sizes.
// Each is checked against the file's data region (after the leading magic, before the footer
// of footerLen bytes and its trailer): a footer that places a chunk elsewhere, or a row group
// with another number of columns than the schema, is an error that says so. The footer's
// accessors may panic on a corrupt footer; callers run ChunkSpans where that is recovered.
func ChunkSpans(md *metadata.FileMetaData, rg int, leaves []int, size, footerLen int64) ([]Span, int64, error) {
	r := md.RowGroup(rg)
	if r.NumColumns() != md.Schema.NumColumns() {
		return nil, 0, fmt.Errorf("corrupt footer: row group %d has %d columns, the schema %d", rg, r.NumColumns(), md.Schema.NumColumns())
	}
	dataEnd := size - 8 - footerLen
	padded := md.WriterVersion().LessThan(metadata.Parquet816FixedVersion)
	var out []Span
	var total int64
	for _, j := range leaves {
		cc, s, err := columnChunk(r, j)
		if err != nil {
			return nil, 0, err
		}
		n := cc.TotalCompressedSize()
		if s < 4 || n <= 0 || s > dataEnd || n > dataEnd-s {
			return nil, 0, fmt.Errorf("corrupt footer: column chunk %d of row group %d at offset %d, length %d lies outside the file's data (4..%d)", j, rg, s, n, dataEnd)
		}
		end := s + n
		if padded {
			end = min(end+maxDictHeaderSize, size)
		}
		out = append(out, Span{s, end})
		total += n
	}
	return out, total, nil
}

// columnChunk returns column chunk j of row group r and the offset of its first page: its
// dictionary page when it has one before the data pages, else its first data page.
func columnChunk(r *metadata.RowGroupMetaData, j int) (*metadata.ColumnChunkMetaData, int64, error) {
	cc, err := r.ColumnChunk(j)
	if err != nil {
		return nil, 0, err
	}
	s := cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < s {
		s = cc.DictionaryPageOffset()
	}
	return cc, s, nil
}
