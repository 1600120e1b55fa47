package inspect

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/zbrecover/zbrecover/internal/textfmt"
)

const (
	// DefaultPreviewMaxDecoded caps the uncompressed bytes a preview decodes from one row
	// group: the sum of the page sizes declared in the page headers of the selected columns,
	// checked before any page is decompressed.
	DefaultPreviewMaxDecoded = 256 << 20
	// MaxCellBytes is the longest string or binary value a preview keeps; a longer one is cut
	// and marked with its full length.
	MaxCellBytes = 4096
)

// checkDecodedSize walks the page headers of the selected leaf columns of row group rg in
// span (the bytes [start, start+len(span)) of the file) and refuses the row group when the
// uncompressed sizes they declare add up to more than limit: a few KB of zstd can declare,
// and hold, hundreds of MB.
func checkDecodedSize(md *metadata.FileMetaData, rg int, leaves []int, span []byte, start, limit int64) error {
	return contain("page headers", func() error {
		r := md.RowGroup(rg)
		var total int64
		for _, j := range leaves {
			cc, s, err := columnChunk(r, j)
			if err != nil {
				return err
			}
			off, end := s-start, s-start+cc.TotalCompressedSize()
			if off < 0 || end > int64(len(span)) {
				return fmt.Errorf("column chunk %d of row group %d lies outside the bytes read", j, rg)
			}
			for off < end {
				uncompressed, compressed, n, err := pageHeader(span[off:end])
				if err != nil {
					return fmt.Errorf("column chunk %d of row group %d: page header at offset %d: %w", j, rg, s+(off-(s-start)), err)
				}
				if uncompressed < 0 || compressed < 0 {
					return fmt.Errorf("column chunk %d of row group %d: page declares a negative size", j, rg)
				}
				total += uncompressed
				if total > limit {
					return fmt.Errorf("row group %d decodes to more than %s (its pages declare at least %s uncompressed), over the preview limit; select fewer columns",
						rg, textfmt.Bytes(limit), textfmt.Bytes(total))
				}
				off += n + compressed
			}
		}
		return nil
	})
}

// pageHeader reads a Thrift PageHeader's uncompressed and compressed sizes and its length.
func pageHeader(b []byte) (uncompressed, compressed, n int64, err error) {
	s := &footerScanner{b: b}
	var id int16
	seen := 0
	for {
		h, err := s.byte1()
		if err != nil {
			return 0, 0, 0, err
		}
		t := h & 0x0f
		if t == ctStop {
			break
		}
		if d := h >> 4; d != 0 {
			id += int16(d)
		} else {
			v, err := s.zigzag()
			if err != nil {
				return 0, 0, 0, err
			}
			id = int16(v)
		}
		switch {
		case (id == 2 || id == 3) && t == ctI32:
			v, err := s.zigzag()
			if err != nil {
				return 0, 0, 0, err
			}
			if id == 2 {
				uncompressed = v
			} else {
				compressed = v
			}
			seen++
		default:
			if err := s.value(kindGeneric, t); err != nil {
				return 0, 0, 0, err
			}
		}
	}
	if seen < 2 {
		return 0, 0, 0, errors.New("no page sizes")
	}
	return uncompressed, compressed, int64(s.pos), nil
}

// truncatedMark ends a preview value cut at MaxCellBytes.
func truncatedMark(full int) string {
	return "…[truncated: " + strconv.Itoa(full) + " bytes]"
}

// capValue cuts the strings inside v to MaxCellBytes, marking each cut one.
func capValue(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) <= MaxCellBytes {
			return x
		}
		n := MaxCellBytes
		for n > 0 && !utf8.RuneStart(x[n]) {
			n-- // cut before a rune, not inside it
		}
		return x[:n] + truncatedMark(len(x))
	case []any:
		for i := range x {
			x[i] = capValue(x[i])
		}
		return x
	case Object:
		for i := range x {
			x[i].Key = capValue(x[i].Key).(string)
			x[i].Value = capValue(x[i].Value)
		}
		return x
	}
	return v
}
