package keyfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// castable reports whether a key column of the file's Spark type from is read into the
// table's type to exactly, value by value: equal types; void (all NULL) into any type;
// integers (decimal(20,0) from unsigned 64-bit ones included) into any integer, decimal or
// string type; decimals into a decimal of the same or a larger scale, and those of scale 0
// into integers; dates into timestamp_ntz (midnight); strings and binaries into each other
// (the same bytes). A value that does not fit the table's type (an overflow) is an error,
// as Spark's ANSI CAST makes it; a cast that would round, or that would need a session time
// zone (timestamp and timestamp_ntz, date and timestamp), is refused.
func castable(from, to schemadiff.Type) bool {
	if from.Kind == schemadiff.Void || from.Equal(to) {
		return true
	}
	switch {
	case isInt(from.Kind):
		return isInt(to.Kind) || to.Kind == schemadiff.Decimal || to.Kind == schemadiff.String
	case from.Kind == schemadiff.Decimal && to.Kind == schemadiff.Decimal:
		return to.Scale >= from.Scale
	case from.Kind == schemadiff.Decimal:
		return isInt(to.Kind) && from.Scale == 0
	case from.Kind == schemadiff.Date:
		return to.Kind == schemadiff.TimestampNTZ
	case from.Kind == schemadiff.String:
		return to.Kind == schemadiff.Binary
	case from.Kind == schemadiff.Binary:
		return to.Kind == schemadiff.String
	}
	return false
}

func isInt(k schemadiff.Kind) bool {
	switch k {
	case schemadiff.Byte, schemadiff.Short, schemadiff.Integer, schemadiff.Long:
		return true
	}
	return false
}

// arrowType is the Arrow type a key column of the table's type t is held in, and written to
// the keys file as: Parquet then carries the same Spark type (timestamps in microseconds,
// UTC-adjusted or not).
func arrowType(t schemadiff.Type) arrow.DataType {
	switch t.Kind {
	case schemadiff.Boolean:
		return arrow.FixedWidthTypes.Boolean
	case schemadiff.Byte:
		return arrow.PrimitiveTypes.Int8
	case schemadiff.Short:
		return arrow.PrimitiveTypes.Int16
	case schemadiff.Integer:
		return arrow.PrimitiveTypes.Int32
	case schemadiff.Long:
		return arrow.PrimitiveTypes.Int64
	case schemadiff.Decimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}
	case schemadiff.String:
		return arrow.BinaryTypes.String
	case schemadiff.Binary:
		return arrow.BinaryTypes.Binary
	case schemadiff.Date:
		return arrow.FixedWidthTypes.Date32
	case schemadiff.Timestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case schemadiff.TimestampNTZ:
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	}
	return nil
}

// domain is the form a key column's values take once decoded, before the cast.
type domain int

const (
	domNull    domain = iota // a void column: every value is NULL
	domBool                  // BOOLEAN
	domInt                   // signed integers, and unsigned ones of up to 32 bits
	domUint                  // unsigned 64-bit integers (Spark decimal(20,0))
	domDecimal               // unscaled decimal integers (INT32, INT64, BINARY, FIXED_LEN_BYTE_ARRAY)
	domDate                  // days since the epoch
	domMicros                // timestamps: microseconds since the epoch
	domBytes                 // strings and binaries
)

// source is how a key column's values are decoded from its Parquet column.
type source struct {
	dom      domain
	unsigned bool  // an INT32 holding an unsigned integer
	scale    int32 // domDecimal
	mul      int64 // domMicros from INT64: 1000 for milliseconds, 1 for microseconds
	int96    bool  // domMicros from INT96
	spark    schemadiff.Type
}

// sourceOf says how to decode the leaf column col, whose Spark type (inspect's mapping) is t.
func sourceOf(col *schema.Column, t schemadiff.Type) (source, error) {
	s := source{spark: t}
	lt := col.LogicalType()
	unsigned := false
	if il, ok := lt.(schema.IntLogicalType); ok && !il.IsSigned() {
		unsigned = true
	}
	phys := col.PhysicalType()
	switch t.Kind {
	case schemadiff.Void:
		s.dom = domNull
	case schemadiff.Boolean:
		s.dom = domBool
	case schemadiff.Byte, schemadiff.Short, schemadiff.Integer, schemadiff.Long:
		s.dom, s.unsigned = domInt, unsigned && phys == parquet.Types.Int32
	case schemadiff.Decimal:
		if phys == parquet.Types.Int64 && unsigned {
			s.dom = domUint
		} else {
			s.dom, s.scale = domDecimal, int32(t.Scale)
		}
	case schemadiff.Date:
		s.dom = domDate
	case schemadiff.Timestamp, schemadiff.TimestampNTZ:
		s.dom = domMicros
		switch phys {
		case parquet.Types.Int96:
			s.int96 = true
		case parquet.Types.Int64:
			ts, ok := lt.(schema.TimestampLogicalType)
			switch {
			case ok && ts.TimeUnit() == schema.TimeUnitMillis:
				s.mul = 1000
			case ok && ts.TimeUnit() == schema.TimeUnitMicros:
				s.mul = 1
			default:
				return s, fmt.Errorf("%w: a %s column stored as %s", ErrColumn, t, phys)
			}
		}
	case schemadiff.String, schemadiff.Binary:
		s.dom = domBytes
	case schemadiff.Float, schemadiff.Double:
		return s, fmt.Errorf("%w: a %s column is not supported as a key (floating-point values do not compare exactly)", ErrColumn, t)
	default:
		return s, fmt.Errorf("%w: a %s column is not supported as a key", ErrColumn, t)
	}
	return s, nil
}

// dest appends the values of one key column, cast to the table's type, to an Arrow builder.
// Each put function is set for the domains that cast to the type (see castable).
type dest struct {
	t         schemadiff.Type
	b         array.Builder
	putInt    func(int64) error
	putUint   func(uint64) error
	putDec    func(n decimal128.Num, scale int32) error
	putDate   func(int32) error
	putMicros func(int64) error
	putBool   func(bool) error
	putBytes  func([]byte) error
}

func (d *dest) overflow(v any) error {
	return fmt.Errorf("%w: the value %v does not fit %s", ErrCast, v, d.t)
}

func newDest(t schemadiff.Type, mem memory.Allocator) *dest {
	d := &dest{t: t, b: array.NewBuilder(mem, arrowType(t))}
	switch b := d.b.(type) {
	case *array.BooleanBuilder:
		d.putBool = func(v bool) error { b.Append(v); return nil }
	case *array.Int8Builder:
		d.setInts(math.MinInt8, math.MaxInt8, func(v int64) { b.Append(int8(v)) })
	case *array.Int16Builder:
		d.setInts(math.MinInt16, math.MaxInt16, func(v int64) { b.Append(int16(v)) })
	case *array.Int32Builder:
		d.setInts(math.MinInt32, math.MaxInt32, func(v int64) { b.Append(int32(v)) })
	case *array.Int64Builder:
		d.setInts(math.MinInt64, math.MaxInt64, b.Append)
	case *array.Decimal128Builder:
		p, s := int32(t.Precision), int32(t.Scale)
		d.putDec = func(n decimal128.Num, scale int32) error {
			shift := s - scale
			if shift < 0 || !fits(n, p-shift) {
				return d.overflow(n.ToString(scale))
			}
			b.Append(n.Mul(decimal128.GetScaleMultiplier(int(shift))))
			return nil
		}
		d.putInt = func(v int64) error { return d.putDec(decimal128.FromI64(v), 0) }
		d.putUint = func(v uint64) error { return d.putDec(decimal128.FromU64(v), 0) }
	case *array.StringBuilder:
		var buf []byte
		d.putBytes = func(v []byte) error { b.BinaryBuilder.Append(v); return nil }
		d.putInt = func(v int64) error { buf = strconv.AppendInt(buf[:0], v, 10); b.BinaryBuilder.Append(buf); return nil }
		d.putUint = func(v uint64) error {
			buf = strconv.AppendUint(buf[:0], v, 10)
			b.BinaryBuilder.Append(buf)
			return nil
		}
	case *array.BinaryBuilder:
		d.putBytes = func(v []byte) error { b.Append(v); return nil }
	case *array.Date32Builder:
		d.putDate = func(v int32) error { b.Append(arrow.Date32(v)); return nil }
	case *array.TimestampBuilder:
		d.putMicros = func(v int64) error { b.Append(arrow.Timestamp(v)); return nil }
		if t.Kind == schemadiff.TimestampNTZ {
			d.putDate = func(v int32) error { b.Append(arrow.Timestamp(int64(v) * microsPerDay)); return nil }
		}
	}
	return d
}

const microsPerDay = 86400 * 1000 * 1000

// setInts sets the integer put functions of an integer type of range [lo, hi].
func (d *dest) setInts(lo, hi int64, app func(int64)) {
	d.putInt = func(v int64) error {
		if v < lo || v > hi {
			return d.overflow(v)
		}
		app(v)
		return nil
	}
	d.putUint = func(v uint64) error {
		if v > uint64(hi) {
			return d.overflow(v)
		}
		app(int64(v))
		return nil
	}
	d.putDec = func(n decimal128.Num, scale int32) error {
		hi64, lo64 := n.HighBits(), n.LowBits()
		if scale != 0 || !(hi64 == 0 && lo64>>63 == 0 || hi64 == -1 && lo64>>63 == 1) {
			return d.overflow(n.ToString(scale))
		}
		return d.putInt(int64(lo64))
	}
}

// fits reports whether n has at most prec decimal digits.
func fits(n decimal128.Num, prec int32) bool {
	switch {
	case prec <= 0:
		return n.Sign() == 0
	case prec > 38:
		return true
	}
	return n.FitsInPrecision(prec)
}

// decimalFromBigEndian reads an unscaled decimal stored as big-endian two's complement (the
// BINARY and FIXED_LEN_BYTE_ARRAY forms).
func decimalFromBigEndian(b []byte) (decimal128.Num, error) {
	if len(b) == 0 || len(b) > 16 {
		return decimal128.Num{}, fmt.Errorf("a decimal of %d bytes", len(b))
	}
	var buf [16]byte
	if b[0]&0x80 != 0 {
		for i := range buf {
			buf[i] = 0xff
		}
	}
	copy(buf[16-len(b):], b)
	return decimal128.New(int64(binary.BigEndian.Uint64(buf[:8])), binary.BigEndian.Uint64(buf[8:])), nil
}

// julianDayOfEpoch is the Julian day number of 1970-01-01.
const julianDayOfEpoch = 2440588

// int96Micros converts an INT96 timestamp (nanoseconds of the day, then the Julian day, both
// little-endian) to microseconds since the epoch, truncating the nanoseconds as Spark does.
func int96Micros(v parquet.Int96) int64 {
	nanos := int64(binary.LittleEndian.Uint64(v[:8]))
	days := int64(binary.LittleEndian.Uint32(v[8:]))
	return (days-julianDayOfEpoch)*microsPerDay + nanos/1000
}

// errNoCast is returned for a column whose decoded domain has no put function in the
// destination: castable refuses such a pair first, so it means the two disagree.
var errNoCast = errors.New("no cast for this column")

// leafReader reads one key column of a row group.
type leafReader interface {
	// read appends the next n rows (or those left, if fewer) to the column's builder and
	// returns how many it read.
	read(n int64) (int64, error)
	// more reports whether the column chunk holds values past those read.
	more() bool
	// err is the column reader's error after more returned false.
	err() error
}

// batchReader is the typed part of arrow-go's column chunk readers.
type batchReader[T any] interface {
	ReadBatch(batchSize int64, values []T, defLvls, repLvls []int16) (int64, int, error)
	HasNext() bool
	Err() error
}

type typedLeaf[T any] struct {
	r      batchReader[T]
	vals   []T
	defs   []int16
	maxDef int16
	b      array.Builder
	put    func(T) error
}

func newTypedLeaf[T any](r batchReader[T], maxDef int16, batch int, b array.Builder, put func(T) error) *typedLeaf[T] {
	l := &typedLeaf[T]{r: r, vals: make([]T, batch), maxDef: maxDef, b: b, put: put}
	if maxDef > 0 {
		l.defs = make([]int16, batch)
	}
	return l
}

func (l *typedLeaf[T]) more() bool { return l.r.HasNext() }
func (l *typedLeaf[T]) err() error { return l.r.Err() }

func (l *typedLeaf[T]) read(n int64) (int64, error) {
	n = min(n, int64(len(l.vals)))
	var defs []int16
	if l.maxDef > 0 {
		defs = l.defs[:n]
	}
	total, nv, err := l.r.ReadBatch(n, l.vals[:n], defs, nil)
	if err != nil {
		return 0, err
	}
	if l.maxDef == 0 {
		if int64(nv) != total {
			return 0, fmt.Errorf("%d values for %d rows of a required column", nv, total)
		}
		for _, v := range l.vals[:nv] {
			if err := l.put(v); err != nil {
				return 0, err
			}
		}
		return total, nil
	}
	vi := 0
	for _, d := range defs[:total] {
		if d < l.maxDef {
			l.b.AppendNull()
			continue
		}
		if vi >= nv {
			return 0, fmt.Errorf("more defined levels than the %d values read", nv)
		}
		if err := l.put(l.vals[vi]); err != nil {
			return 0, err
		}
		vi++
	}
	if vi != nv {
		return 0, fmt.Errorf("%d values read for %d defined levels", nv, vi)
	}
	return total, nil
}

// newLeafReader returns the reader of one key column chunk, decoding src and casting into d.
func newLeafReader(cr file.ColumnChunkReader, src source, d *dest, batch int) (leafReader, error) {
	desc := cr.Descriptor()
	if desc.MaxRepetitionLevel() > 0 {
		return nil, fmt.Errorf("%w: a repeated column is not a key", ErrColumn)
	}
	maxDef := desc.MaxDefinitionLevel()
	null := func() error { return errors.New("a value in a column of the void type") }
	switch r := cr.(type) {
	case *file.BooleanColumnChunkReader:
		if src.dom != domBool || d.putBool == nil {
			return nil, errNoCast
		}
		return newTypedLeaf(r, maxDef, batch, d.b, d.putBool), nil
	case *file.Int32ColumnChunkReader:
		var f func(int32) error
		switch {
		case src.dom == domNull:
			f = func(int32) error { return null() }
		case src.dom == domInt && src.unsigned && d.putInt != nil:
			f = func(v int32) error { return d.putInt(int64(uint32(v))) }
		case src.dom == domInt && d.putInt != nil:
			f = func(v int32) error { return d.putInt(int64(v)) }
		case src.dom == domDecimal && d.putDec != nil:
			f = func(v int32) error { return d.putDec(decimal128.FromI64(int64(v)), src.scale) }
		case src.dom == domDate && d.putDate != nil:
			f = d.putDate
		default:
			return nil, errNoCast
		}
		return newTypedLeaf(r, maxDef, batch, d.b, f), nil
	case *file.Int64ColumnChunkReader:
		var f func(int64) error
		switch {
		case src.dom == domInt && d.putInt != nil:
			f = d.putInt
		case src.dom == domUint && d.putUint != nil:
			f = func(v int64) error { return d.putUint(uint64(v)) }
		case src.dom == domDecimal && d.putDec != nil:
			f = func(v int64) error { return d.putDec(decimal128.FromI64(v), src.scale) }
		case src.dom == domMicros && src.mul == 1 && d.putMicros != nil:
			f = d.putMicros
		case src.dom == domMicros && d.putMicros != nil:
			mul := src.mul
			f = func(v int64) error {
				if v > math.MaxInt64/mul || v < math.MinInt64/mul {
					return d.overflow(v)
				}
				return d.putMicros(v * mul)
			}
		default:
			return nil, errNoCast
		}
		return newTypedLeaf(r, maxDef, batch, d.b, f), nil
	case *file.Int96ColumnChunkReader:
		if !src.int96 || d.putMicros == nil {
			return nil, errNoCast
		}
		return newTypedLeaf(r, maxDef, batch, d.b, func(v parquet.Int96) error { return d.putMicros(int96Micros(v)) }), nil
	case *file.ByteArrayColumnChunkReader:
		f, err := bytesPut[parquet.ByteArray](src, d)
		if err != nil {
			return nil, err
		}
		return newTypedLeaf(r, maxDef, batch, d.b, f), nil
	case *file.FixedLenByteArrayColumnChunkReader:
		f, err := bytesPut[parquet.FixedLenByteArray](src, d)
		if err != nil {
			return nil, err
		}
		return newTypedLeaf(r, maxDef, batch, d.b, f), nil
	}
	return nil, fmt.Errorf("%w: unknown column reader %T", ErrColumn, cr)
}

// bytesPut decodes BINARY and FIXED_LEN_BYTE_ARRAY values: bytes, or big-endian decimals.
func bytesPut[T ~[]byte](src source, d *dest) (func(T) error, error) {
	switch {
	case src.dom == domBytes && d.putBytes != nil:
		return func(v T) error { return d.putBytes(v) }, nil
	case src.dom == domDecimal && d.putDec != nil:
		return func(v T) error {
			n, err := decimalFromBigEndian(v)
			if err != nil {
				return err
			}
			return d.putDec(n, src.scale)
		}, nil
	}
	return nil, errNoCast
}
