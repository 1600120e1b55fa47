package inspect

import (
	"errors"
	"fmt"
	"math"
)

// Footer limits. A footer is pre-scanned (scanFooter) before the Parquet library sees it: the
// scan allocates nothing that grows with the input, checks every count the footer declares
// against the bytes that follow it, and estimates what parsing it will allocate. A footer that
// breaks a limit, or whose estimate is over MaxFooterMemory, is reported as unreadable and
// never parsed.
const (
	// MaxFooterMemory is the most memory one footer may need to be parsed and converted, as
	// estimated by the pre-scan (an upper bound on what arrow-go and inspect allocate for it).
	MaxFooterMemory = 64 << 20
	// MaxSchemaDepth is the deepest Parquet schema nesting accepted (a Spark array or map
	// takes 2 or 3 Parquet levels).
	MaxSchemaDepth = 256
	// maxThriftDepth is the deepest Thrift struct nesting accepted; a valid footer needs
	// about 7 levels (FileMetaData → SchemaElement → LogicalType → TimestampType → TimeUnit).
	maxThriftDepth = 32
)

// FooterLimitError is a footer rejected by the pre-scan, before it was parsed.
type FooterLimitError struct{ Reason string }

func (e *FooterLimitError) Error() string { return "footer rejected: " + e.Reason }

func limitErr(format string, args ...any) error {
	return &FooterLimitError{Reason: fmt.Sprintf(format, args...)}
}

// Estimated allocation per thing parsed, in bytes. Struct sizes are those of arrow-go's
// generated Thrift types rounded up to Go's size classes; the schema costs cover arrow-go's
// schema tree (nodes, column descriptors, path maps) and inspect's Spark conversion. A test
// (TestFooterEstimateBoundsAllocation) checks that the sum is at least what is allocated.
const (
	costBase          = 64 << 10
	costGenericStruct = 256 // any struct the scan does not know (largest generated one: 208)
	costField         = 16  // an optional scalar is a separate pointer target
	costListElem      = 16  // a slice element: a pointer, an int or a string header
	costSchemaNode    = 2048
	costLeaf          = 1024
	costLeafPerLevel  = 64 // path slices and strings, per level of a leaf's path
	costKeyValue      = 256
	// Strings longer than this are read through a growing bytes.Buffer, then copied.
	smallString = 512
)

type structKind int

const (
	kindGeneric structKind = iota
	kindFileMeta
	kindSchemaElem
	kindRowGroup
	kindColumnChunk
	kindColumnMeta
	kindStatistics
	kindKeyValue
)

var structCost = [...]int64{
	kindGeneric:     costGenericStruct,
	kindFileMeta:    costGenericStruct,
	kindSchemaElem:  96,
	kindRowGroup:    96,
	kindColumnChunk: 96,
	kindColumnMeta:  208,
	kindStatistics:  144,
	kindKeyValue:    32 + costKeyValue,
}

// child returns the kind of the struct (or of the list's struct elements) in field id of a
// struct of kind k.
func (k structKind) child(id int16) structKind {
	switch {
	case k == kindFileMeta && id == 2:
		return kindSchemaElem
	case k == kindFileMeta && id == 4:
		return kindRowGroup
	case k == kindFileMeta && id == 5, k == kindColumnMeta && id == 8:
		return kindKeyValue
	case k == kindRowGroup && id == 1:
		return kindColumnChunk
	case k == kindColumnChunk && id == 3:
		return kindColumnMeta
	case k == kindColumnMeta && id == 12:
		return kindStatistics
	}
	return kindGeneric
}

// Thrift compact protocol type codes.
const (
	ctStop   = 0
	ctTrue   = 1
	ctFalse  = 2
	ctByte   = 3
	ctI16    = 4
	ctI32    = 5
	ctI64    = 6
	ctDouble = 7
	ctBinary = 8
	ctList   = 9
	ctSet    = 10
	ctMap    = 11
	ctStruct = 12
	ctUUID   = 13
)

// footerStats is what the pre-scan learnt about a footer.
type footerStats struct {
	// cost is the estimated number of bytes parsing and converting the footer allocates.
	cost        int64
	schemaElems int64
	columns     int64 // leaf columns
	depth       int   // deepest schema nesting
	rowGroups   int64
	keyValues   int64
	// unknownLogical are the byte spans [start, end) of schema elements' logicalType fields
	// whose union holds no member this reader knows (a logical type newer than it): the
	// footer is parsed without them, so those columns read as their physical type.
	unknownLogical [][2]int
}

// schemaLevel is one open group of the schema tree while its elements are scanned.
type schemaLevel struct {
	left    int64 // children not yet seen
	pathLen int64 // length of the dotted path up to and including this group
}

type footerScanner struct {
	b     []byte
	pos   int
	depth int
	st    footerStats

	// The schema element being scanned.
	elemName     int64
	elemChildren int64
	elemHasKids  bool

	// fieldStart is where the header of the field being scanned starts.
	fieldStart int
	// union, when not nil, collects the member ids of the LogicalType union being scanned.
	union *[]int16
	// unionDepth is the Thrift depth of that union's fields.
	unionDepth int
}

var errShort = errors.New("footer ends in the middle of a value")

// scanFooter walks a Thrift compact FileMetaData without building it. It rejects declared
// counts that the remaining bytes cannot hold (each element takes at least one byte), schema
// elements that claim more children than follow them, schemas deeper than MaxSchemaDepth,
// Thrift nesting deeper than maxThriftDepth, and footers whose estimated parse cost is over
// MaxFooterMemory. Its own memory is O(MaxSchemaDepth).
func scanFooter(b []byte) (footerStats, error) {
	s := &footerScanner{b: b}
	// DeserializeThrift's buffer, and what every parse allocates whatever the footer
	// (protocol buffers, the writer version, the schema's maps).
	s.st.cost = int64(len(b)) + costBase
	if err := s.structBody(kindFileMeta); err != nil {
		return s.st, err
	}
	if s.st.cost > MaxFooterMemory {
		return s.st, limitErr("parsing it would need about %d MiB, over the %d MiB a footer may use", s.st.cost>>20, MaxFooterMemory>>20)
	}
	return s.st, nil
}

func (s *footerScanner) add(n int64) error {
	if n < 0 || s.st.cost > math.MaxInt64-n {
		s.st.cost = math.MaxInt64
	} else {
		s.st.cost += n
	}
	if s.st.cost > MaxFooterMemory {
		return limitErr("parsing it would need more than the %d MiB a footer may use (%d schema elements, %d row groups, %d key-value entries so far)",
			MaxFooterMemory>>20, s.st.schemaElems, s.st.rowGroups, s.st.keyValues)
	}
	return nil
}

func (s *footerScanner) remaining() int64 { return int64(len(s.b) - s.pos) }

func (s *footerScanner) byte1() (byte, error) {
	if s.pos >= len(s.b) {
		return 0, errShort
	}
	c := s.b[s.pos]
	s.pos++
	return c, nil
}

func (s *footerScanner) uvarint() (uint64, error) {
	var x uint64
	for shift := uint(0); shift < 70; shift += 7 {
		c, err := s.byte1()
		if err != nil {
			return 0, err
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, nil
		}
	}
	return 0, errors.New("corrupt footer: varint longer than 10 bytes")
}

func (s *footerScanner) zigzag() (int64, error) {
	u, err := s.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

func (s *footerScanner) skip(n int64) error {
	if n < 0 || n > s.remaining() {
		return errShort
	}
	s.pos += int(n)
	return nil
}

// size reads a declared length or count and checks it against the bytes left, given that
// each unit takes at least min bytes.
func (s *footerScanner) size(what string, min int64) (int64, error) {
	u, err := s.uvarint()
	if err != nil {
		return 0, err
	}
	n := int64(u & math.MaxInt32)
	if u > math.MaxInt32 || n*min > s.remaining() {
		unit := "elements"
		if what == "string" {
			unit = "bytes"
		}
		return 0, limitErr("a %s declares %d %s but only %d bytes follow", what, u, unit, s.remaining())
	}
	return n, nil
}

func (s *footerScanner) enter() error {
	s.depth++
	if s.depth > maxThriftDepth {
		return limitErr("Thrift structures nested deeper than %d levels", maxThriftDepth)
	}
	return nil
}

// structBody scans the fields of a struct up to its stop byte.
func (s *footerScanner) structBody(k structKind) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer func() { s.depth-- }()
	if err := s.add(structCost[k]); err != nil {
		return err
	}
	var id int16
	for {
		start := s.pos
		h, err := s.byte1()
		if err != nil {
			return err
		}
		t := h & 0x0f
		if t == ctStop {
			return nil
		}
		if d := h >> 4; d != 0 {
			id += int16(d)
		} else {
			v, err := s.zigzag()
			if err != nil {
				return err
			}
			id = int16(v)
		}
		if s.union != nil && s.depth == s.unionDepth {
			*s.union = append(*s.union, id)
		}
		s.fieldStart = start
		if err := s.field(k, id, t); err != nil {
			return err
		}
	}
}

// field scans one field's value, with what the schema check needs from the known ones.
func (s *footerScanner) field(k structKind, id int16, t byte) error {
	if err := s.add(costField); err != nil {
		return err
	}
	switch {
	case k == kindSchemaElem && id == 4 && t == ctBinary:
		start := s.pos
		if err := s.value(kindGeneric, t); err != nil {
			return err
		}
		s.elemName = int64(s.pos - start)
		return nil
	case k == kindSchemaElem && id == 5 && t == ctI32:
		v, err := s.zigzag()
		if err != nil {
			return err
		}
		s.elemChildren, s.elemHasKids = v, true
		return nil
	case k == kindFileMeta && id == 2 && t == ctList:
		return s.schemaList()
	case k == kindSchemaElem && id == 10 && t == ctStruct && s.union == nil:
		return s.logicalType()
	}
	return s.value(k.child(id), t)
}

// knownLogicalTypes are the LogicalType union members arrow-go reads (parquet.thrift: 1 STRING
// to 8 TIMESTAMP, 10 INTEGER to 18 GEOGRAPHY; 9 was never assigned).
func knownLogicalType(id int16) bool { return id >= 1 && id <= 18 && id != 9 }

// logicalType scans a schema element's logicalType union and records its span when none of
// its members is known and it is the element's last field: the Parquet format asks readers
// to ignore a logical type they do not know and read the physical type, where arrow-go
// panics. (A field after it would have its header's id delta taken from the removed one, so
// such a span is left alone and the panic, contained, makes the file unreadable.)
func (s *footerScanner) logicalType() error {
	start := s.fieldStart
	var ids []int16
	s.union, s.unionDepth = &ids, s.depth+1
	err := s.value(kindGeneric, ctStruct)
	s.union = nil
	if err != nil {
		return err
	}
	for _, id := range ids {
		if knownLogicalType(id) {
			return nil
		}
	}
	if s.pos < len(s.b) && s.b[s.pos] == ctStop {
		s.st.unknownLogical = append(s.st.unknownLogical, [2]int{start, s.pos})
	}
	return nil
}

// withoutSpans returns b without the byte spans (sorted, disjoint), in a new slice.
func withoutSpans(b []byte, spans [][2]int) []byte {
	out := make([]byte, 0, len(b))
	at := 0
	for _, sp := range spans {
		out = append(out, b[at:sp[0]]...)
		at = sp[1]
	}
	return append(out, b[at:]...)
}

// value scans one value of wire type t; kind is the struct kind when t is a struct or a list
// of structs.
func (s *footerScanner) value(kind structKind, t byte) error {
	switch t {
	case ctTrue, ctFalse:
		return nil
	case ctByte:
		return s.skip(1)
	case ctI16, ctI32, ctI64:
		_, err := s.uvarint()
		return err
	case ctDouble:
		return s.skip(8)
	case ctUUID:
		return s.skip(16)
	case ctBinary:
		n, err := s.size("string", 1)
		if err != nil {
			return err
		}
		c := 2*n + 32
		if n > smallString {
			// Read through a doubling bytes.Buffer, then copied into a string: measured at 5
			// times the length, 9 under the race detector.
			c = 10*n + 32
		}
		if err := s.add(c); err != nil {
			return err
		}
		return s.skip(n)
	case ctStruct:
		return s.structBody(kind)
	case ctList, ctSet:
		et, n, err := s.listHeader()
		if err != nil {
			return err
		}
		return s.elements(kind, et, n)
	case ctMap:
		n, err := s.size("map", 2)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		kv, err := s.byte1()
		if err != nil {
			return err
		}
		if err := s.enter(); err != nil {
			return err
		}
		defer func() { s.depth-- }()
		if err := s.add(n * 2 * costListElem); err != nil {
			return err
		}
		for i := int64(0); i < n; i++ {
			if err := s.value(kindGeneric, listElemType(kv>>4)); err != nil {
				return err
			}
			if err := s.value(kindGeneric, listElemType(kv&0x0f)); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("corrupt footer: unknown Thrift type %d", t)
	}
}

// listElemType maps a list or map element type code to the field type code that value
// understands (booleans in containers are one byte each).
func listElemType(t byte) byte {
	if t == ctTrue || t == ctFalse {
		return ctByte
	}
	return t
}

func (s *footerScanner) listHeader() (byte, int64, error) {
	h, err := s.byte1()
	if err != nil {
		return 0, 0, err
	}
	et := listElemType(h & 0x0f)
	n := int64(h >> 4)
	if n == 15 {
		if n, err = s.size("list", 1); err != nil {
			return 0, 0, err
		}
	} else if n > s.remaining() {
		return 0, 0, limitErr("a list declares %d elements but only %d bytes follow", n, s.remaining())
	}
	return et, n, nil
}

func (s *footerScanner) elements(kind structKind, et byte, n int64) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer func() { s.depth-- }()
	if err := s.add(n * costListElem); err != nil {
		return err
	}
	switch kind {
	case kindRowGroup:
		s.st.rowGroups += n
	case kindKeyValue:
		s.st.keyValues += n
	}
	for i := int64(0); i < n; i++ {
		if err := s.value(kind, et); err != nil {
			return err
		}
	}
	return nil
}

// schemaList scans FileMetaData.schema, the depth-first flattened schema tree, checking each
// element's declared child count against the elements that follow and the tree's depth, and
// adding the cost of the tree that arrow-go and inspect build from it.
func (s *footerScanner) schemaList() error {
	et, n, err := s.listHeader()
	if err != nil {
		return err
	}
	if et != ctStruct {
		return s.elements(kindGeneric, et, n)
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer func() { s.depth-- }()
	if err := s.add(n * costListElem); err != nil {
		return err
	}
	s.st.schemaElems = n
	stack := make([]schemaLevel, 0, 16)
	for i := int64(0); i < n; i++ {
		s.elemName, s.elemChildren, s.elemHasKids = 0, 0, false
		if err := s.structBody(kindSchemaElem); err != nil {
			return err
		}
		kids := s.elemChildren
		if kids < 0 {
			return limitErr("schema element %d declares %d children", i, kids)
		}
		if kids > n-i-1 {
			return limitErr("schema element %d declares %d children but only %d elements follow", i, kids, n-i-1)
		}
		if i > 0 && len(stack) == 0 {
			// Elements after the root's subtree are not part of the schema: arrow-go ignores
			// them, so they cost only their Thrift form.
			continue
		}
		// arrow-go allocates a group's field slice from its declared child count.
		if err := s.add(costSchemaNode + 4*s.elemName + kids*costListElem); err != nil {
			return err
		}
		var pathLen int64
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			pathLen = top.pathLen + s.elemName + 1
			top.left--
		}
		depth := len(stack)
		if depth > s.st.depth {
			s.st.depth = depth
		}
		if kids > 0 || (i == 0 && s.elemHasKids) {
			if depth+1 > MaxSchemaDepth {
				return limitErr("schema nested deeper than %d levels", MaxSchemaDepth)
			}
			if kids > 0 {
				stack = append(stack, schemaLevel{left: kids, pathLen: pathLen})
			}
		} else if i > 0 {
			s.st.columns++
			if err := s.add(costLeaf + costLeafPerLevel*int64(depth) + 4*pathLen); err != nil {
				return err
			}
		}
		for len(stack) > 0 && stack[len(stack)-1].left == 0 {
			stack = stack[:len(stack)-1]
		}
	}
	return nil
}
