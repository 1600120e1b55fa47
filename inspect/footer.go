package inspect

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"

	"golang.org/x/sync/semaphore"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

const (
	// DefaultTailSize is how many bytes at the end of a file one read fetches: enough for the
	// footers of files with several hundred column chunks, so most files need one request.
	DefaultTailSize = 64 << 10
	// MaxFooterSize caps the footer length a file may claim before anything is allocated.
	MaxFooterSize = 16 << 20
	// FooterBytesInFlight caps the footers longer than the tail read held at once across the
	// process (their raw bytes); each is at most MaxFooterSize.
	FooterBytesInFlight = 32 << 20
	// FooterMemoryInFlight caps the estimated parse memory (scanFooter) of the footers being
	// parsed and converted at once across the process; each is at most MaxFooterMemory.
	FooterMemoryInFlight = 128 << 20
)

// FooterMemoryBudget is the most memory inspect's footer reading holds at once at the default
// concurrency, whatever the files: the tail buffers of the readers, the raw bytes of large
// footers, and the estimated memory of the footers being parsed.
const FooterMemoryBudget = DefaultConcurrency*DefaultTailSize + FooterBytesInFlight + FooterMemoryInFlight

// DefaultMemoryLimit is the soft memory limit the command line sets (runtime/debug
// SetMemoryLimit, unless GOMEMLIMIT is set): footer memory in flight is bounded by
// FooterMemoryBudget, and the limit keeps the garbage of refused and parsed footers from
// piling up between collections, so that the heap of an inspect stays under it whatever the
// files (BenchmarkInspectHostile).
const DefaultMemoryLimit = 256 << 20

// The process-wide footer budget. Raw bytes are acquired before parse memory and released
// after it, and nothing blocks while holding parse memory, so the two cannot deadlock.
var (
	footerRaw   = semaphore.NewWeighted(FooterBytesInFlight)
	footerParse = semaphore.NewWeighted(FooterMemoryInFlight)
)

// ErrPanic is wrapped by errors that come from a panic inside the Parquet library (corrupt
// input it does not guard against). Test with errors.Is.
var ErrPanic = errors.New("parquet library panic")

// contain runs f and turns a panic into an error wrapping ErrPanic.
func contain(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if debugPanics {
				err = fmt.Errorf("%s: %w: %v\n%s", what, ErrPanic, r, debug.Stack())
				return
			}
			err = fmt.Errorf("%s: %w: %v", what, ErrPanic, r)
		}
	}()
	return f()
}

// debugPanics adds stack traces to contained panics (set in tests when investigating).
var debugPanics = false

// footer is a parsed footer and the tail bytes it was read with.
type footer struct {
	md *metadata.FileMetaData
	// tail holds the last bytes of the file [size-len(tail), size), kept only for previews.
	tail []byte
	// length is the thrift footer's length in bytes.
	length int64
	// reads is the number of storage requests it took (1, or 2 for a large footer).
	reads int
	// stats is what the pre-scan found.
	stats footerStats
	// release returns the footer's share of the budget; call it once md is no longer used.
	release func()
}

// readFooter fetches and parses the footer of the object with one ranged read of the last
// tailSize bytes, computed from the listed size (no Stat), and a second read only when the
// footer is larger than that.
func readFooter(ctx context.Context, b storage.Backend, key string, size, tailSize int64) (footer, error) {
	ft := footer{release: func() {}}
	if size == 0 {
		return ft, errors.New("empty object (0 bytes), not a Parquet file")
	}
	if size < 12 {
		return ft, fmt.Errorf("file too small for Parquet (%d bytes)", size)
	}
	if tailSize < 8 {
		tailSize = DefaultTailSize
	}
	tail := min(size, tailSize)
	buf, err := readRange(ctx, b, key, size-tail, tail)
	ft.reads++
	if err != nil {
		return ft, err
	}
	if int64(len(buf)) != tail {
		return ft, fmt.Errorf("short read: got %d of the last %d bytes (has the object changed since it was listed?)", len(buf), tail)
	}
	switch string(buf[tail-4:]) {
	case "PAR1":
	case "PARE":
		return ft, errors.New("encrypted Parquet footer (PARE): encrypted files are not supported")
	default:
		return ft, errors.New("not a Parquet file: no PAR1 magic at the end (truncated or not Parquet)")
	}
	l := int64(binary.LittleEndian.Uint32(buf[tail-8 : tail-4]))
	switch {
	case l == 0:
		return ft, errors.New("corrupt footer: footer length is 0")
	case l > size-12:
		return ft, fmt.Errorf("corrupt footer: footer length %d does not fit a %d-byte file (truncated?)", l, size)
	case l > MaxFooterSize:
		return ft, fmt.Errorf("footer length %d is over the %d-byte limit", l, MaxFooterSize)
	}
	ft.length = l
	var raw []byte
	var held []func()
	release := func() {
		for i := len(held) - 1; i >= 0; i-- {
			held[i]()
		}
		held = nil
	}
	if l+8 <= tail {
		raw = buf[tail-8-l : tail-8]
		ft.tail = buf
	} else {
		if err := footerRaw.Acquire(ctx, l+8); err != nil {
			return ft, err
		}
		held = append(held, func() { footerRaw.Release(l + 8) })
		raw, err = readRange(ctx, b, key, size-8-l, l)
		ft.reads++
		if err != nil {
			release()
			return ft, err
		}
		if int64(len(raw)) != l {
			release()
			return ft, fmt.Errorf("short read: got %d of %d footer bytes (has the object changed since it was listed?)", len(raw), l)
		}
		ft.tail = append(raw, buf[tail-8:]...)
	}
	// Nothing the footer declares reaches the Parquet library before the pre-scan has checked
	// it and the footer's estimated memory is reserved.
	st, err := scanFooter(raw)
	ft.stats = st
	if err != nil {
		release()
		var le *FooterLimitError
		if errors.As(err, &le) {
			return ft, err
		}
		return ft, fmt.Errorf("corrupt footer: %w", err)
	}
	if err := footerParse.Acquire(ctx, st.cost); err != nil {
		release()
		return ft, err
	}
	held = append(held, func() { footerParse.Release(st.cost) })
	ft.release = release
	if len(st.unknownLogical) > 0 {
		raw = withoutSpans(raw, st.unknownLogical)
	}
	err = contain("footer", func() error {
		md, err := metadata.NewFileMetaData(raw, nil)
		if err != nil {
			return err
		}
		md.SetSourceFileSize(size)
		ft.md = md
		return nil
	})
	if err != nil {
		release()
		ft.release = func() {}
		return ft, fmt.Errorf("corrupt footer: %w", err)
	}
	return ft, nil
}

// readRange reads n bytes at off into a buffer of exactly that size. It returns fewer bytes,
// without error, when the object is shorter than expected (callers check the length).
func readRange(ctx context.Context, b storage.Backend, key string, off, n int64) ([]byte, error) {
	rc, err := b.ReadRange(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	buf := make([]byte, n)
	got, err := io.ReadFull(rc, buf)
	switch {
	case err == nil, errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return buf[:got], nil
	default:
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
}

// fileFacts is what inspect keeps from a footer.
type fileFacts struct {
	rows      int64
	rowGroups int
	createdBy string
	keyValue  []KV
	schema    schemadiff.Schema
}

// extract reads the facts out of parsed metadata, checking the row counts and converting the
// schema, with panics contained.
func extract(md *metadata.FileMetaData) (fileFacts, error) {
	var ff fileFacts
	err := contain("footer", func() error {
		if md.Schema == nil {
			return errors.New("corrupt footer: no schema")
		}
		if md.NumRows < 0 {
			return fmt.Errorf("corrupt footer: negative row count %d", md.NumRows)
		}
		var sum int64
		for i, rg := range md.RowGroups {
			if rg == nil || rg.NumRows < 0 {
				return fmt.Errorf("corrupt footer: row group %d has no valid row count", i)
			}
			if rg.NumRows > math.MaxInt64-sum {
				return fmt.Errorf("corrupt footer: the row groups' row counts add up past %d", int64(math.MaxInt64))
			}
			sum += rg.NumRows
		}
		if sum != md.NumRows {
			return fmt.Errorf("corrupt footer: num_rows is %d but the row groups hold %d", md.NumRows, sum)
		}
		if max := maxPlausibleRows(md.GetSourceFileSize()); md.NumRows > max {
			return fmt.Errorf("implausible footer: %d rows in a %d-byte file (at most %d could fit)", md.NumRows, md.GetSourceFileSize(), max)
		}
		ff.rows = md.NumRows
		ff.rowGroups = len(md.RowGroups)
		ff.createdBy = md.GetCreatedBy()
		kvm := md.KeyValueMetadata()
		keys, values := kvm.Keys(), kvm.Values()
		for i := range keys {
			ff.keyValue = append(ff.keyValue, KV{Key: keys[i], Value: values[i]})
		}
		s, err := SparkSchema(md.Schema)
		if err != nil {
			return err
		}
		fillNullCounts(md, &s)
		ff.schema = s
		return nil
	})
	return ff, err
}

// MaxRowsPerByte bounds the rows a file can hold per byte of its size. Encodings compress
// repeated values far below a byte per row (a run of a million equal values takes a few
// bytes), so the bound is generous; a count above it is a footer that lies.
const MaxRowsPerByte = 1 << 16

func maxPlausibleRows(size int64) int64 {
	if size <= 0 || size > math.MaxInt64/MaxRowsPerByte {
		return math.MaxInt64
	}
	return size * MaxRowsPerByte
}

// addRows adds row counts, saturating at math.MaxInt64 instead of wrapping.
func addRows(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// fillNullCounts sets NullCount / NullCountKnown on each top-level field from the footer's
// column statistics. A REQUIRED column has 0 nulls. An OPTIONAL primitive column's count is the
// sum over row groups, known only if every row group reports it. For nested columns the leaf
// counts do not give the column's own nulls exactly, so they stay unknown.
func fillNullCounts(md *metadata.FileMetaData, s *schemadiff.Schema) {
	root := md.Schema.Root()
	leafOf := make([]int, len(s.Fields)) // top-level field → its leaf column index, or -1
	for i := range leafOf {
		leafOf[i] = -1
	}
	for j := 0; j < md.Schema.NumColumns(); j++ {
		top := md.Schema.ColumnRoot(j)
		idx := root.FieldIndexByField(top)
		if idx >= 0 && idx < len(leafOf) && top.Type() == schema.Primitive {
			leafOf[idx] = j
		}
	}
	for i := range s.Fields {
		f := &s.Fields[i]
		if !f.Nullable {
			f.NullCount, f.NullCountKnown = 0, true
			continue
		}
		j := leafOf[i]
		if j < 0 {
			continue
		}
		var total int64
		known := true
		for _, rg := range md.RowGroups {
			if j >= len(rg.Columns) || rg.Columns[j] == nil || rg.Columns[j].MetaData == nil ||
				rg.Columns[j].MetaData.Statistics == nil || !rg.Columns[j].MetaData.Statistics.IsSetNullCount() {
				known = false
				break
			}
			total = addRows(total, *rg.Columns[j].MetaData.Statistics.NullCount)
		}
		if known {
			f.NullCount, f.NullCountKnown = total, true
		}
	}
}
