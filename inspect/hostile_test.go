package inspect

import (
	"encoding/binary"
	"strings"
)

// thriftWriter writes the Thrift compact protocol by hand, so that tests can build footers that
// no Parquet writer would: lists that declare more elements than they hold, schemas a hundred
// thousand levels deep, millions of row groups or key-value entries.
type thriftWriter struct {
	b    []byte
	last []int16 // the last field id of each open struct
}

func (w *thriftWriter) uvarint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }

func (w *thriftWriter) zigzag(v int64) { w.uvarint(uint64(v<<1) ^ uint64(v>>63)) }

func (w *thriftWriter) field(id int16, t byte) {
	last := &w.last[len(w.last)-1]
	if d := id - *last; d > 0 && d <= 15 {
		w.b = append(w.b, byte(d)<<4|t)
	} else {
		w.b = append(w.b, t)
		w.zigzag(int64(id))
	}
	*last = id
}

func (w *thriftWriter) begin()                { w.last = append(w.last, 0) }
func (w *thriftWriter) end()                  { w.b = append(w.b, ctStop); w.last = w.last[:len(w.last)-1] }
func (w *thriftWriter) structField(id int16)  { w.field(id, ctStruct); w.begin() }
func (w *thriftWriter) i32(id int16, v int32) { w.field(id, ctI32); w.zigzag(int64(v)) }
func (w *thriftWriter) i64(id int16, v int64) { w.field(id, ctI64); w.zigzag(v) }
func (w *thriftWriter) str(id int16, s string) {
	w.field(id, ctBinary)
	w.uvarint(uint64(len(s)))
	w.b = append(w.b, s...)
}

// list writes a list header declaring n elements of type et.
func (w *thriftWriter) list(id int16, et byte, n int) {
	w.field(id, ctList)
	if n < 15 {
		w.b = append(w.b, byte(n)<<4|et)
		return
	}
	w.b = append(w.b, 0xf0|et)
	w.uvarint(uint64(n))
}

// schemaElem writes one SchemaElement as a list element: a group when kids > 0 (or when
// group is set), else an optional INT64 leaf.
func (w *thriftWriter) schemaElem(name string, kids int, group bool) {
	w.begin()
	if kids == 0 && !group {
		w.i32(1, 2) // INT64
		w.i32(3, 1) // OPTIONAL
	}
	w.str(4, name)
	if kids > 0 || group {
		w.i32(5, int32(kids))
	}
	w.end()
}

// parquetFile wraps a Thrift footer into the smallest file inspect reads: magic, footer,
// length, magic.
func parquetFile(ft []byte) []byte {
	out := append([]byte("PAR1"), ft...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(ft)))
	return append(out, "PAR1"...)
}

// footerSpec describes a well-formed footer for buildFooter.
type footerSpec struct {
	columns   int // top-level INT64 columns
	depth     int // nest the columns this many struct levels deep
	rowGroups int // each with a chunk per column
	stats     bool
	keyValues int
	valueLen  int // length of each key-value value
	groupName string
	rows      int64 // all in the first row group
}

func (s footerSpec) group() string {
	if s.groupName == "" {
		return "s"
	}
	return s.groupName
}

// buildFooter writes a valid FileMetaData for spec, with zero rows.
func buildFooter(spec footerSpec) []byte {
	w := &thriftWriter{}
	w.begin()
	w.i32(1, 2)
	elems := 1 + spec.depth + spec.columns
	w.list(2, ctStruct, elems)
	if spec.depth > 0 {
		w.schemaElem("schema", 1, true)
		for d := 0; d < spec.depth; d++ {
			kids := 1
			if d == spec.depth-1 {
				kids = spec.columns
			}
			w.begin()
			w.i32(3, 1)
			w.str(4, spec.group())
			w.i32(5, int32(kids))
			w.end()
		}
	} else {
		w.schemaElem("schema", spec.columns, true)
	}
	path := strings.Repeat(spec.group()+".", spec.depth)
	for c := 0; c < spec.columns; c++ {
		w.schemaElem("c"+itoa(c), 0, false)
	}
	w.i64(3, spec.rows)
	w.list(4, ctStruct, spec.rowGroups)
	for r := 0; r < spec.rowGroups; r++ {
		rows := int64(0)
		if r == 0 {
			rows = spec.rows
		}
		w.begin()
		w.list(1, ctStruct, spec.columns)
		for c := 0; c < spec.columns; c++ {
			w.begin()
			w.i64(2, 4)
			w.structField(3)
			w.i32(1, 2)
			w.list(2, ctI32, 1)
			w.zigzag(0)
			w.list(3, ctBinary, spec.depth+1)
			for _, p := range strings.Split(path+"c"+itoa(c), ".") {
				w.uvarint(uint64(len(p)))
				w.b = append(w.b, p...)
			}
			w.i32(4, 0)
			w.i64(5, 0)
			w.i64(6, 0)
			w.i64(7, 0)
			w.i64(9, 4)
			if spec.stats {
				w.structField(12)
				w.i64(3, 0)
				w.end()
			}
			w.end()
			w.end()
		}
		w.i64(2, 0)
		w.i64(3, rows)
		w.end()
	}
	if spec.keyValues > 0 {
		w.list(5, ctStruct, spec.keyValues)
		v := strings.Repeat("v", spec.valueLen)
		for i := 0; i < spec.keyValues; i++ {
			w.begin()
			w.str(1, "k"+itoa(i))
			w.str(2, v)
			w.end()
		}
	}
	w.str(6, "zbrecover hostile footer test")
	w.end()
	return w.b
}

func itoa(i int) string {
	var buf [20]byte
	n := len(buf)
	for {
		n--
		buf[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			break
		}
	}
	return string(buf[n:])
}

// hostileFooters builds one footer of each hostile class, keyed by class. Each must be
// rejected before it is parsed, with the reason in want.
func hostileFooters() map[string]struct {
	Footer []byte
	Want   string
} {
	type h = struct {
		Footer []byte
		Want   string
	}
	out := map[string]h{}

	// A schema list declaring 100 million elements in a handful of bytes.
	w := &thriftWriter{}
	w.begin()
	w.i32(1, 2)
	w.list(2, ctStruct, 100_000_000)
	out["count/schema list"] = h{w.b, "declares 100000000 elements"}

	// A row-group list declaring 2^31-1 elements.
	w = &thriftWriter{}
	w.begin()
	w.i32(1, 2)
	w.list(2, ctStruct, 1)
	w.schemaElem("schema", 0, true)
	w.i64(3, 0)
	w.list(4, ctStruct, 1<<31-1)
	out["count/row groups"] = h{w.b, "declares 2147483647 elements"}

	// A string declaring a gigabyte.
	w = &thriftWriter{}
	w.begin()
	w.i32(1, 2)
	w.field(6, ctBinary)
	w.uvarint(1 << 30)
	out["size/string length"] = h{w.b, "a string declares 1073741824 bytes"}

	// A root declaring two billion children (arrow-go allocates a slice of that capacity).
	w = &thriftWriter{}
	w.begin()
	w.i32(1, 2)
	w.list(2, ctStruct, 2)
	w.schemaElem("schema", 1<<31-1, true)
	w.schemaElem("c", 0, false)
	w.end()
	out["count/num_children"] = h{w.b, "declares 2147483647 children but only 1 elements follow"}

	// Every element declaring all the elements after it as its children: the field slices
	// arrow-go allocates along the way add up quadratically.
	const n = 1_000_000
	w = &thriftWriter{}
	w.begin()
	w.i32(1, 2)
	w.list(2, ctStruct, n)
	for i := 0; i < n; i++ {
		w.begin()
		w.str(4, "g")
		w.i32(5, int32(n-i-1))
		w.end()
	}
	w.end()
	out["count/overlapping children"] = h{w.b, "MiB a footer may use"}

	// A schema nested 100,000 levels deep (800 KB).
	w = &thriftWriter{}
	w.begin()
	w.i32(1, 2)
	const deep = 100_000
	w.list(2, ctStruct, deep+1)
	for i := 0; i < deep; i++ {
		w.begin()
		w.str(4, "s")
		w.i32(5, 1)
		w.end()
	}
	w.schemaElem("leaf", 0, false)
	w.end()
	out["depth/schema"] = h{w.b, "schema nested deeper than 256 levels"}

	// Thrift structs nested in an unknown field, 10,000 levels deep.
	w = &thriftWriter{}
	w.begin()
	w.i32(1, 2)
	for i := 0; i < 10_000; i++ {
		w.structField(100)
	}
	out["depth/thrift"] = h{w.b, "Thrift structures nested deeper than 32 levels"}

	// Two million row groups (about 12 MB), each valid.
	w = &thriftWriter{}
	w.begin()
	w.i32(1, 2)
	w.list(2, ctStruct, 2)
	w.schemaElem("schema", 1, true)
	w.schemaElem("c", 0, false)
	w.i64(3, 0)
	w.list(4, ctStruct, 2_000_000)
	for i := 0; i < 2_000_000; i++ {
		w.begin()
		w.list(1, ctStruct, 0)
		w.i64(2, 0)
		w.i64(3, 0)
		w.end()
	}
	w.end()
	out["count/many row groups"] = h{w.b, "MiB a footer may use"}

	// Three million key-value entries (about 15 MB).
	w = &thriftWriter{}
	w.begin()
	w.i32(1, 2)
	w.list(2, ctStruct, 2)
	w.schemaElem("schema", 1, true)
	w.schemaElem("c", 0, false)
	w.i64(3, 0)
	w.list(4, ctStruct, 0)
	w.list(5, ctStruct, 3_000_000)
	for i := 0; i < 3_000_000; i++ {
		w.begin()
		w.str(1, "k")
		w.end()
	}
	w.end()
	out["size/many key-values"] = h{w.b, "MiB a footer may use"}

	// 200,000 columns (about 2.6 MB).
	out["count/columns"] = h{buildFooter(footerSpec{columns: 200_000}), "MiB a footer may use"}

	// A 10 MiB key-value value: fits MaxFooterSize, but its parse (buffer growth, copies) is
	// over the per-footer memory.
	out["size/long value"] = h{buildFooter(footerSpec{columns: 1, keyValues: 1, valueLen: 10 << 20}), "MiB a footer may use"}
	return out
}
