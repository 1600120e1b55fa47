package warehouse

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse/tcli"
)

// tableSchema describes result columns as a Databricks warehouse does: one primitive type
// entry per column (complex types included), DECIMAL with precision and scale qualifiers.
func tableSchema(cols []Column) *tcli.TTableSchema {
	out := &tcli.TTableSchema{Columns: make([]*tcli.TColumnDesc, len(cols))}
	for i, c := range cols {
		entry := &tcli.TPrimitiveTypeEntry{Type: c.Type.thriftType()}
		if c.Type.Kind == KindDecimal {
			p, s := int32(c.Type.Precision), int32(c.Type.Scale)
			entry.TypeQualifiers = &tcli.TTypeQualifiers{Qualifiers: map[string]*tcli.TTypeQualifierValue{
				"precision": {I32Value: &p}, "scale": {I32Value: &s},
			}}
		}
		comment := ""
		out.Columns[i] = &tcli.TColumnDesc{
			ColumnName: c.Name,
			TypeDesc:   &tcli.TTypeDesc{Types: []*tcli.TTypeEntry{{PrimitiveEntry: entry}}},
			Position:   int32(i + 1),
			Comment:    &comment,
		}
	}
	return out
}

// rowSet encodes rows [from, to) column by column. Numbers and booleans travel in their own
// column kinds; strings, decimals, dates, timestamps and nested values travel as strings, as a
// real warehouse sends them in COLUMN_BASED_SET form.
func rowSet(res *Result, from, to int) *tcli.TRowSet {
	n := to - from
	rs := &tcli.TRowSet{StartRowOffset: int64(from), Rows: []*tcli.TRow{}, Columns: make([]*tcli.TColumn, len(res.Columns))}
	for ci, c := range res.Columns {
		nulls := make([]byte, (n+7)/8)
		for r := range n {
			if res.Rows[from+r][ci] == nil {
				nulls[r/8] |= 1 << (uint(r) % 8)
			}
		}
		cell := func(r int) any { return res.Rows[from+r][ci] }
		col := &tcli.TColumn{}
		switch c.Type.Kind {
		case KindBoolean:
			col.BoolVal = &tcli.TBoolColumn{Values: fill(n, cell, func(v any) bool { b, _ := v.(bool); return b }), Nulls: nulls}
		case KindByte:
			col.ByteVal = &tcli.TByteColumn{Values: fill(n, cell, func(v any) int8 { return int8(asInt64(v)) }), Nulls: nulls}
		case KindShort:
			col.I16Val = &tcli.TI16Column{Values: fill(n, cell, func(v any) int16 { return int16(asInt64(v)) }), Nulls: nulls}
		case KindInt:
			col.I32Val = &tcli.TI32Column{Values: fill(n, cell, func(v any) int32 { return int32(asInt64(v)) }), Nulls: nulls}
		case KindLong:
			col.I64Val = &tcli.TI64Column{Values: fill(n, cell, asInt64), Nulls: nulls}
		case KindFloat, KindDouble:
			col.DoubleVal = &tcli.TDoubleColumn{Values: fill(n, cell, func(v any) float64 { f, _ := v.(float64); return f }), Nulls: nulls}
		case KindBinary:
			vals := fill(n, cell, func(v any) []byte { b, _ := v.([]byte); return b })
			for r := range vals {
				if vals[r] == nil {
					vals[r] = []byte{}
				}
			}
			col.BinaryVal = &tcli.TBinaryColumn{Values: vals, Nulls: nulls}
		default:
			col.StringVal = &tcli.TStringColumn{Values: fill(n, cell, func(v any) string { return formatValue(v, c.Type) }), Nulls: nulls}
		}
		rs.Columns[ci] = col
	}
	return rs
}

// fill converts the n cells of a column with conv; a NULL cell keeps T's zero value (its
// null bit is set by the caller).
func fill[T any](n int, cell func(int) any, conv func(any) T) []T {
	vals := make([]T, n)
	for r := range n {
		if v := cell(r); v != nil {
			vals[r] = conv(v)
		}
	}
	return vals
}

func asInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int:
		return int64(x)
	case int32:
		return int64(x)
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// formatValue renders a non-nil value of type t as its string form in a result set.
func formatValue(v any, t *Type) string {
	switch t.Kind {
	case KindArray, KindMap, KindStruct:
		var b strings.Builder
		writeJSONValue(&b, v, t)
		return b.String()
	case KindDate:
		if tm, ok := v.(time.Time); ok {
			return tm.Format("2006-01-02")
		}
	case KindTimestamp:
		if tm, ok := v.(time.Time); ok {
			return formatTimestamp(tm.UTC())
		}
	case KindTimestampNTZ:
		if tm, ok := v.(time.Time); ok {
			return formatTimestamp(tm)
		}
	case KindFloat:
		if f, ok := v.(float64); ok {
			return formatFloat(f, 32)
		}
	case KindDouble:
		if f, ok := v.(float64); ok {
			return formatFloat(f, 64)
		}
	case KindBinary:
		if b, ok := v.([]byte); ok {
			return string(b)
		}
	}
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatFloat(x, 64)
	case []byte:
		return string(x)
	case time.Time:
		return formatTimestamp(x)
	}
	return fmt.Sprint(v)
}

// formatTimestamp renders a timestamp as Spark does: seconds always, fractional digits only
// as many as needed.
func formatTimestamp(t time.Time) string {
	return t.Format("2006-01-02 15:04:05.999999")
}

func formatFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	s := strconv.FormatFloat(f, 'f', -1, bits)
	if !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

// writeJSONValue writes a nested value as the JSON text Databricks returns for ARRAY, MAP and
// STRUCT columns: struct fields in order, map keys as JSON strings, decimals as numbers,
// dates and timestamps as quoted strings.
func writeJSONValue(b *strings.Builder, v any, t *Type) {
	if v == nil {
		b.WriteString("null")
		return
	}
	switch t.Kind {
	case KindArray:
		elems, _ := v.([]any)
		b.WriteByte('[')
		for i, e := range elems {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONValue(b, e, t.Elem)
		}
		b.WriteByte(']')
	case KindMap:
		entries, _ := v.([]MapEntry)
		b.WriteByte('{')
		for i, e := range entries {
			if i > 0 {
				b.WriteByte(',')
			}
			key := formatValue(e.Key, t.Key)
			if t.Key.IsComplex() {
				var kb strings.Builder
				writeJSONValue(&kb, e.Key, t.Key)
				key = kb.String()
			}
			writeJSONString(b, key)
			b.WriteByte(':')
			writeJSONValue(b, e.Value, t.Value)
		}
		b.WriteByte('}')
	case KindStruct:
		vals, _ := v.([]any)
		b.WriteByte('{')
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, f.Name)
			b.WriteByte(':')
			var fv any
			if i < len(vals) {
				fv = vals[i]
			}
			writeJSONValue(b, fv, f.Type)
		}
		b.WriteByte('}')
	case KindBoolean, KindByte, KindShort, KindInt, KindLong, KindDecimal:
		b.WriteString(formatValue(v, t))
	case KindFloat, KindDouble:
		f, _ := v.(float64)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			writeJSONString(b, formatValue(v, t))
		} else {
			b.WriteString(formatValue(v, t))
		}
	case KindBinary:
		bs, _ := v.([]byte)
		writeJSONString(b, base64.StdEncoding.EncodeToString(bs))
	default:
		writeJSONString(b, formatValue(v, t))
	}
}

func writeJSONString(b *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}
