package inspect

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// Object is an ordered JSON object: struct members in schema order, or a map with string keys
// in file order.
type Object []Member

// Member is one key and value of an Object.
type Member struct {
	Key   string
	Value any
}

// MarshalJSON writes the members in order.
func (o Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshal(m.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		v, err := marshal(m.Value)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// MapEntry is one entry of a map whose keys are not strings.
type MapEntry struct {
	Key   any `json:"key"`
	Value any `json:"value"`
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

const ntzLayout = "2006-01-02T15:04:05.999999999"

// Value renders element i of arr, whose Spark type is t, as a JSON-ready value: nil for null;
// bool; json.Number for integers, floats and decimals (decimals exactly, with their scale);
// strings for text, JSON and ENUM columns; base64 strings for binary; "2006-01-02" dates;
// RFC3339 timestamps to the microsecond, in UTC with "Z" for timestamp and without a zone for
// timestamp_ntz; []any for arrays; Object for structs and string-keyed maps; []MapEntry for
// other maps.
// Non-finite floats become the strings "NaN", "Infinity" and "-Infinity".
func Value(arr arrow.Array, i int, t schemadiff.Type) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return json.Number(strconv.FormatInt(int64(a.Value(i)), 10))
	case *array.Int16:
		return json.Number(strconv.FormatInt(int64(a.Value(i)), 10))
	case *array.Int32:
		return json.Number(strconv.FormatInt(int64(a.Value(i)), 10))
	case *array.Int64:
		return json.Number(strconv.FormatInt(a.Value(i), 10))
	case *array.Uint8:
		return json.Number(strconv.FormatUint(uint64(a.Value(i)), 10))
	case *array.Uint16:
		return json.Number(strconv.FormatUint(uint64(a.Value(i)), 10))
	case *array.Uint32:
		return json.Number(strconv.FormatUint(uint64(a.Value(i)), 10))
	case *array.Uint64:
		return json.Number(strconv.FormatUint(a.Value(i), 10))
	case *array.Float32:
		return float(float64(a.Value(i)), 32)
	case *array.Float64:
		return float(a.Value(i), 64)
	case *array.Decimal128:
		return json.Number(a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale))
	case *array.Decimal256:
		return json.Number(a.Value(i).ToString(a.DataType().(*arrow.Decimal256Type).Scale))
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Binary:
		return binaryValue(a.Value(i), t)
	case *array.LargeBinary:
		return binaryValue(a.Value(i), t)
	case *array.FixedSizeBinary:
		return binaryValue(a.Value(i), t)
	case *array.Date32:
		return a.Value(i).ToTime().Format(time.DateOnly)
	case *array.Timestamp:
		// Spark timestamps hold microseconds: finer digits (INT96 nanoseconds) are dropped.
		ts := a.Value(i).ToTime(a.DataType().(*arrow.TimestampType).Unit).UTC().Truncate(time.Microsecond)
		if t.Kind == schemadiff.TimestampNTZ {
			return ts.Format(ntzLayout)
		}
		return ts.Format(time.RFC3339Nano)
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		obj := make(Object, a.NumField())
		for f := 0; f < a.NumField(); f++ {
			ft := schemadiff.Type{}
			if f < len(t.Fields) {
				ft = t.Fields[f].Type
			}
			obj[f] = Member{Key: st.Field(f).Name, Value: Value(a.Field(f), i, ft)}
		}
		return obj
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		kt, vt := elemType(t.Key), elemType(t.Value)
		if _, ok := keys.(*array.String); ok {
			obj := make(Object, 0, end-start)
			for j := start; j < end; j++ {
				obj = append(obj, Member{Key: keys.(*array.String).Value(int(j)), Value: Value(items, int(j), vt)})
			}
			return obj
		}
		out := make([]MapEntry, 0, end-start)
		for j := start; j < end; j++ {
			out = append(out, MapEntry{Key: Value(keys, int(j), kt), Value: Value(items, int(j), vt)})
		}
		return out
	case *array.List:
		start, end := a.ValueOffsets(i)
		return listValues(a.ListValues(), int(start), int(end), elemType(t.Elem))
	case *array.LargeList:
		start, end := a.ValueOffsets(i)
		return listValues(a.ListValues(), int(start), int(end), elemType(t.Elem))
	case *array.FixedSizeList:
		n := int(a.DataType().(*arrow.FixedSizeListType).Len())
		return listValues(a.ListValues(), i*n, (i+1)*n, elemType(t.Elem))
	case array.ExtensionArray:
		return Value(a.Storage(), i, t)
	case *array.Null:
		return nil
	}
	return arr.ValueStr(i)
}

func elemType(t *schemadiff.Type) schemadiff.Type {
	if t == nil {
		return schemadiff.Type{}
	}
	return *t
}

func listValues(vals arrow.Array, start, end int, t schemadiff.Type) []any {
	out := make([]any, 0, end-start)
	for j := start; j < end; j++ {
		out = append(out, Value(vals, j, t))
	}
	return out
}

func float(v float64, bits int) any {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	return json.Number(strconv.FormatFloat(v, 'g', -1, bits))
}

// binaryValue shows JSON- and ENUM-annotated binaries (Spark strings) as text, real binary as
// base64.
func binaryValue(b []byte, t schemadiff.Type) any {
	if t.Kind == schemadiff.String {
		return string(b)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// Text renders a Value for a table or CSV cell: NULL for null, strings as they are, numbers
// and booleans in their JSON spelling, nested values as compact JSON.
func Text(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return v
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	}
	b, err := marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}
