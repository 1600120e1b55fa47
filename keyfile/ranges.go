package keyfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/storage"
)

// span is the byte range [off, end) of a file.
type span struct{ off, end int64 }

func (s span) len() int64 { return s.end - s.off }

// maxWaste is the share of a merged read's useful bytes that the bytes between its chunks
// (read and dropped) may reach: two chunks with a small gap between them are one request.
const maxWaste = 10 // percent

// fetches returns the reads that cover chunks, given that the bytes [have, size) are already
// held: the parts of the chunks below have, in file order, merged when they touch or overlap,
// and when the gap between them keeps the bytes read for nothing within maxWaste percent of
// the merged read's useful bytes.
func fetches(chunks []span, have int64) []span {
	var parts []span
	for _, c := range chunks {
		if c.off < have {
			parts = append(parts, span{c.off, min(c.end, have)})
		}
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].off < parts[j].off })
	var out []span
	var useful, waste int64 // of the last read in out
	for _, p := range parts {
		if n := len(out); n > 0 {
			cur := &out[n-1]
			if p.off <= cur.end {
				if p.end > cur.end {
					useful += p.end - cur.end
					cur.end = p.end
				}
				continue
			}
			if gap := p.off - cur.end; (waste+gap)*100 <= maxWaste*(useful+p.len()) {
				waste += gap
				useful += p.len()
				cur.end = p.end
				continue
			}
		}
		out = append(out, p)
		useful, waste = p.len(), 0
	}
	return out
}

// chunkSpans returns the byte ranges of the given leaf columns of row group rg, as arrow-go's
// column reader reads them, checked against the file's data region (inspect.ChunkSpans), and
// the sum of their compressed sizes.
func chunkSpans(md *metadata.FileMetaData, rg int, leaves []int, size, footerLen int64) ([]span, int64, error) {
	spans, total, err := inspect.ChunkSpans(md, rg, leaves, size, footerLen)
	if err != nil {
		return nil, 0, err
	}
	out := make([]span, len(spans))
	for i, sp := range spans {
		out[i] = span{sp.Off, sp.End}
	}
	return out, total, nil
}

// held is an io.ReaderAt over the byte ranges of one file already in memory: the footer
// read's tail, kept for the whole file, and the reads of the current row group. A read that
// leaves them fails: the reader is built so that the Parquet library reads nothing else.
type held struct {
	size  int64
	parts []heldPart // sorted by offset, not overlapping; the tail is the last one
	tail  heldPart
}

type heldPart struct {
	off  int64
	data []byte
}

// set makes the reads of a row group (sorted, not overlapping, all below the tail) and the
// tail the held bytes.
func (h *held) set(reads []heldPart) {
	clear(h.parts)
	h.parts = append(h.parts[:0], reads...)
	if len(h.tail.data) > 0 {
		h.parts = append(h.parts, h.tail)
	}
}

var errOutside = errors.New("read outside the fetched byte ranges")

// ReadAt implements io.ReaderAt.
func (h *held) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("negative offset %d", off)
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		if pos >= h.size {
			return n, io.EOF
		}
		i := sort.Search(len(h.parts), func(i int) bool { return h.parts[i].off+int64(len(h.parts[i].data)) > pos })
		if i == len(h.parts) || h.parts[i].off > pos {
			return n, fmt.Errorf("%w: offset %d", errOutside, pos)
		}
		n += copy(p[n:], h.parts[i].data[pos-h.parts[i].off:])
	}
	return n, nil
}

// readSpan reads the bytes of s from key with one ranged request into a buffer of exactly
// that size; a short read (the object changed since it was listed) is an error.
func readSpan(ctx context.Context, b storage.Backend, key string, s span) ([]byte, int64, error) {
	rc, err := b.ReadRange(ctx, key, s.off, s.len())
	if err != nil {
		return nil, 0, err
	}
	defer rc.Close()
	buf := make([]byte, s.len())
	got, err := io.ReadFull(rc, buf)
	switch {
	case err == nil:
		return buf, int64(got), nil
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return nil, int64(got), fmt.Errorf("short read: got %d of the %d bytes at offset %d (has the object changed since it was listed?)", got, s.len(), s.off)
	default:
		return nil, int64(got), fmt.Errorf("read %d bytes at offset %d: %w", s.len(), s.off, err)
	}
}
