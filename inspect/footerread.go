package inspect

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// Footer is a file's footer as ReadFooter reads it, for packages that read column data after
// the footer (the keys of a file) through ranged reads of their own.
type Footer struct {
	// Meta is the parsed footer.
	Meta *metadata.FileMetaData
	// Schema is the file's Spark schema (SparkSchema), with footer null counts.
	Schema schemadiff.Schema
	// Tail holds the last bytes of the file, [size-len(Tail), size): the bytes of the footer
	// read, or, after a second read, the footer and the 8-byte trailer.
	Tail []byte
	// Length is the thrift footer's length in bytes.
	Length int64
	// Reads is the number of storage requests the footer took (1, or 2 for a footer longer
	// than the tail read); BytesRead the bytes they returned.
	Reads     int
	BytesRead int64

	release func()
}

// Release returns the footer's share of the process-wide footer memory budget. Call it once
// Meta is no longer used; calling it again does nothing.
func (f *Footer) Release() {
	if f != nil && f.release != nil {
		f.release()
		f.release = nil
	}
}

// ReadFooter reads and checks the footer of the object key of size bytes (the listed size)
// as inspect does: one ranged read of the last min(size, tailSize) bytes (under 8
// means DefaultTailSize), a second only when the footer is longer; the footer is pre-scanned
// against the limits of footerscan.go before it is parsed, parsed under panic containment,
// its row counts checked (num_rows equals the sum of the row groups' and is plausible for the
// file's size) and its schema mapped onto Spark types. The Footer is returned with Reads and
// BytesRead set even with an error, and must be released when the error is nil.
func ReadFooter(ctx context.Context, b storage.Backend, key string, size, tailSize int64) (*Footer, error) {
	if tailSize < 8 {
		tailSize = DefaultTailSize
	}
	ft, err := readFooter(ctx, b, key, size, tailSize)
	out := &Footer{Reads: ft.reads}
	if ft.reads > 0 {
		out.BytesRead = min(size, tailSize)
	}
	if ft.reads > 1 {
		out.BytesRead += ft.length
	}
	if err != nil {
		return out, err
	}
	s, err := FooterSchema(ft.md)
	if err != nil {
		ft.release()
		return out, err
	}
	out.Meta, out.Schema, out.Tail, out.Length, out.release = ft.md, s, ft.tail, ft.length, ft.release
	return out, nil
}

// FooterSchema checks the row counts of parsed metadata as ReadFooter does and returns the
// file's Spark schema with footer null counts, with panics of the Parquet library contained
// (the error then wraps ErrPanic).
func FooterSchema(md *metadata.FileMetaData) (schemadiff.Schema, error) {
	if md == nil {
		return schemadiff.Schema{}, fmt.Errorf("no footer")
	}
	ff, err := extract(md)
	if err != nil {
		return schemadiff.Schema{}, err
	}
	return ff.schema, nil
}
