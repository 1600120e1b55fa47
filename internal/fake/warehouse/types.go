package warehouse

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse/tcli"
)

// Kind is a Spark SQL data type family.
type Kind uint8

// The Spark types the fake warehouse stores and returns.
const (
	KindNull Kind = iota // Spark's void
	KindBoolean
	KindByte
	KindShort
	KindInt
	KindLong
	KindFloat
	KindDouble
	KindDecimal
	KindString
	KindBinary
	KindDate
	KindTimestamp    // timestamp (timestamp_ltz): an instant, shown in the session time zone
	KindTimestampNTZ // timestamp_ntz: a wall-clock time without zone
	KindArray
	KindMap
	KindStruct
)

// Type is a Spark SQL data type. The fake keeps its own small model, independent of the
// project's schemadiff package, so the tool's parsers are checked against a separate
// implementation.
type Type struct {
	Kind      Kind
	Precision int // decimal
	Scale     int // decimal

	Elem         *Type // array element
	ElemNullable bool  // array containsNull

	Key           *Type // map key
	Value         *Type // map value
	ValueNullable bool  // map valueContainsNull

	Fields []Field // struct fields, in order
}

// Field is a named struct field or table column.
type Field struct {
	Name     string
	Type     *Type
	Nullable bool
	Comment  string
	// PhysicalName and ID are the Delta column-mapping physical name and id (tables with
	// delta.columnMapping.mode = name); empty and 0 otherwise.
	PhysicalName string
	ID           int64
}

var primitiveByName = map[string]Kind{
	"void": KindNull, "null": KindNull,
	"boolean": KindBoolean, "bool": KindBoolean,
	"tinyint": KindByte, "byte": KindByte,
	"smallint": KindShort, "short": KindShort,
	"int": KindInt, "integer": KindInt,
	"bigint": KindLong, "long": KindLong,
	"float": KindFloat, "real": KindFloat,
	"double": KindDouble,
	"string": KindString, "varchar": KindString, "char": KindString,
	"binary":    KindBinary,
	"date":      KindDate,
	"timestamp": KindTimestamp, "timestamp_ltz": KindTimestamp,
	"timestamp_ntz": KindTimestampNTZ,
	"decimal":       KindDecimal, "dec": KindDecimal, "numeric": KindDecimal,
}

// Prim returns a primitive type of kind k (not decimal, array, map or struct).
func Prim(k Kind) *Type { return &Type{Kind: k} }

// Decimal returns decimal(p,s).
func Decimal(p, s int) *Type { return &Type{Kind: KindDecimal, Precision: p, Scale: s} }

// ArrayOf returns array<elem> with nullable elements.
func ArrayOf(elem *Type) *Type { return &Type{Kind: KindArray, Elem: elem, ElemNullable: true} }

// MapOf returns map<key,value> with nullable values.
func MapOf(key, value *Type) *Type {
	return &Type{Kind: KindMap, Key: key, Value: value, ValueNullable: true}
}

// StructOf returns struct<fields>.
func StructOf(fields ...Field) *Type { return &Type{Kind: KindStruct, Fields: fields} }

// IsComplex reports whether t is an array, map or struct.
func (t *Type) IsComplex() bool {
	return t.Kind == KindArray || t.Kind == KindMap || t.Kind == KindStruct
}

// Equal reports whether two types are the same, comparing struct field names
// case-insensitively and ignoring comments.
func (t *Type) Equal(o *Type) bool {
	if t == nil || o == nil {
		return t == o
	}
	if t.Kind != o.Kind {
		return false
	}
	switch t.Kind {
	case KindDecimal:
		return t.Precision == o.Precision && t.Scale == o.Scale
	case KindArray:
		return t.ElemNullable == o.ElemNullable && t.Elem.Equal(o.Elem)
	case KindMap:
		return t.ValueNullable == o.ValueNullable && t.Key.Equal(o.Key) && t.Value.Equal(o.Value)
	case KindStruct:
		if len(t.Fields) != len(o.Fields) {
			return false
		}
		for i := range t.Fields {
			a, b := t.Fields[i], o.Fields[i]
			if !strings.EqualFold(a.Name, b.Name) || a.Nullable != b.Nullable || !a.Type.Equal(b.Type) {
				return false
			}
		}
	}
	return true
}

// Simple returns Spark's simpleString, as DESCRIBE's data_type column shows it:
// "bigint", "decimal(10,2)", "struct<a:int,b:string>".
func (t *Type) Simple() string {
	switch t.Kind {
	case KindNull:
		return "void"
	case KindBoolean:
		return "boolean"
	case KindByte:
		return "tinyint"
	case KindShort:
		return "smallint"
	case KindInt:
		return "int"
	case KindLong:
		return "bigint"
	case KindFloat:
		return "float"
	case KindDouble:
		return "double"
	case KindDecimal:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	case KindString:
		return "string"
	case KindBinary:
		return "binary"
	case KindDate:
		return "date"
	case KindTimestamp:
		return "timestamp"
	case KindTimestampNTZ:
		return "timestamp_ntz"
	case KindArray:
		return "array<" + t.Elem.Simple() + ">"
	case KindMap:
		return "map<" + t.Key.Simple() + "," + t.Value.Simple() + ">"
	case KindStruct:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = f.Name + ":" + f.Type.Simple()
		}
		return "struct<" + strings.Join(parts, ",") + ">"
	}
	return "unknown"
}

// SQL returns the type as Spark SQL DDL writes it: "BIGINT", "STRUCT<a: INT, b: STRING>".
func (t *Type) SQL() string {
	switch t.Kind {
	case KindArray:
		return "ARRAY<" + t.Elem.SQL() + ">"
	case KindMap:
		return "MAP<" + t.Key.SQL() + ", " + t.Value.SQL() + ">"
	case KindStruct:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = quoteSparkIdent(f.Name) + ": " + f.Type.SQL()
			if !f.Nullable {
				parts[i] += " NOT NULL"
			}
		}
		return "STRUCT<" + strings.Join(parts, ", ") + ">"
	}
	return strings.ToUpper(t.Simple())
}

// treeName is the name Spark's printSchema/treeString uses ("integer", "long", "struct").
func (t *Type) treeName() string {
	switch t.Kind {
	case KindByte:
		return "byte"
	case KindShort:
		return "short"
	case KindInt:
		return "integer"
	case KindLong:
		return "long"
	case KindArray:
		return "array"
	case KindMap:
		return "map"
	case KindStruct:
		return "struct"
	}
	return t.Simple()
}

// TreeString renders fields as Spark's StructType.treeString does ("root\n |-- id: long
// (nullable = true)\n"), the form Delta's schema-mismatch errors print.
func TreeString(fields []Field) string {
	var b strings.Builder
	b.WriteString("root\n")
	writeTreeFields(&b, fields, " |")
	return b.String()
}

func writeTreeFields(b *strings.Builder, fields []Field, prefix string) {
	for _, f := range fields {
		fmt.Fprintf(b, "%s-- %s: %s (nullable = %t)\n", prefix, f.Name, f.Type.treeName(), f.Nullable)
		writeTreeType(b, f.Type, prefix+"    |")
	}
}

func writeTreeType(b *strings.Builder, t *Type, prefix string) {
	switch t.Kind {
	case KindStruct:
		writeTreeFields(b, t.Fields, prefix)
	case KindArray:
		fmt.Fprintf(b, "%s-- element: %s (containsNull = %t)\n", prefix, t.Elem.treeName(), t.ElemNullable)
		writeTreeType(b, t.Elem, prefix+"    |")
	case KindMap:
		fmt.Fprintf(b, "%s-- key: %s\n", prefix, t.Key.treeName())
		writeTreeType(b, t.Key, prefix+"    |")
		fmt.Fprintf(b, "%s-- value: %s (valueContainsNull = %t)\n", prefix, t.Value.treeName(), t.ValueNullable)
		writeTreeType(b, t.Value, prefix+"    |")
	}
}

// Duck returns the DuckDB type that stores values of t.
func (t *Type) Duck() string {
	switch t.Kind {
	case KindNull:
		return "INTEGER"
	case KindBoolean:
		return "BOOLEAN"
	case KindByte:
		return "TINYINT"
	case KindShort:
		return "SMALLINT"
	case KindInt:
		return "INTEGER"
	case KindLong:
		return "BIGINT"
	case KindFloat:
		return "FLOAT"
	case KindDouble:
		return "DOUBLE"
	case KindDecimal:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case KindString:
		return "VARCHAR"
	case KindBinary:
		return "BLOB"
	case KindDate:
		return "DATE"
	case KindTimestamp:
		return "TIMESTAMPTZ"
	case KindTimestampNTZ:
		return "TIMESTAMP"
	case KindArray:
		return t.Elem.Duck() + "[]"
	case KindMap:
		return "MAP(" + t.Key.Duck() + ", " + t.Value.Duck() + ")"
	case KindStruct:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = duckIdent(f.Name) + " " + f.Type.Duck()
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")"
	}
	return "VARCHAR"
}

// JSON returns the type as DESCRIBE TABLE … AS JSON writes it ({"name":"bigint"},
// {"name":"decimal","precision":10,"scale":2}, {"name":"struct","fields":[…]}).
func (t *Type) JSON() map[string]any {
	switch t.Kind {
	case KindDecimal:
		return map[string]any{"name": "decimal", "precision": t.Precision, "scale": t.Scale}
	case KindTimestamp:
		return map[string]any{"name": "timestamp_ltz"}
	case KindArray:
		return map[string]any{"name": "array", "element_type": t.Elem.JSON(), "element_nullable": t.ElemNullable}
	case KindMap:
		return map[string]any{"name": "map", "key_type": t.Key.JSON(), "value_type": t.Value.JSON(), "value_nullable": t.ValueNullable}
	case KindStruct:
		fields := make([]any, len(t.Fields))
		for i, f := range t.Fields {
			m := map[string]any{"name": f.Name, "type": f.Type.JSON(), "nullable": f.Nullable}
			if f.Comment != "" {
				m["comment"] = f.Comment
			}
			fields[i] = m
		}
		return map[string]any{"name": "struct", "fields": fields}
	}
	return map[string]any{"name": t.Simple()}
}

// Delta returns the type as a Delta log schemaString writes it: a primitive name ("long",
// "integer", "decimal(10,2)") or an object for array, map and struct.
func (t *Type) Delta() any {
	switch t.Kind {
	case KindByte, KindShort, KindInt, KindLong:
		return t.treeName()
	case KindArray:
		return map[string]any{"type": "array", "elementType": t.Elem.Delta(), "containsNull": t.ElemNullable}
	case KindMap:
		return map[string]any{"type": "map", "keyType": t.Key.Delta(), "valueType": t.Value.Delta(), "valueContainsNull": t.ValueNullable}
	case KindStruct:
		return map[string]any{"type": "struct", "fields": DeltaFields(t.Fields)}
	}
	return t.Simple()
}

// DeltaFields returns fields in Delta schemaString form.
func DeltaFields(fields []Field) []any {
	out := make([]any, len(fields))
	for i, f := range fields {
		md := map[string]any{}
		if f.Comment != "" {
			md["comment"] = f.Comment
		}
		if f.PhysicalName != "" {
			md["delta.columnMapping.id"] = f.ID
			md["delta.columnMapping.physicalName"] = f.PhysicalName
		}
		out[i] = map[string]any{"name": f.Name, "type": f.Type.Delta(), "nullable": f.Nullable, "metadata": md}
	}
	return out
}

// thriftType is the TTypeId the column descriptor carries.
func (t *Type) thriftType() tcli.TTypeId {
	switch t.Kind {
	case KindNull:
		return tcli.TTypeId_NULL_TYPE
	case KindBoolean:
		return tcli.TTypeId_BOOLEAN_TYPE
	case KindByte:
		return tcli.TTypeId_TINYINT_TYPE
	case KindShort:
		return tcli.TTypeId_SMALLINT_TYPE
	case KindInt:
		return tcli.TTypeId_INT_TYPE
	case KindLong:
		return tcli.TTypeId_BIGINT_TYPE
	case KindFloat:
		return tcli.TTypeId_FLOAT_TYPE
	case KindDouble:
		return tcli.TTypeId_DOUBLE_TYPE
	case KindDecimal:
		return tcli.TTypeId_DECIMAL_TYPE
	case KindString:
		return tcli.TTypeId_STRING_TYPE
	case KindBinary:
		return tcli.TTypeId_BINARY_TYPE
	case KindDate:
		return tcli.TTypeId_DATE_TYPE
	case KindTimestamp, KindTimestampNTZ:
		return tcli.TTypeId_TIMESTAMP_TYPE
	case KindArray:
		return tcli.TTypeId_ARRAY_TYPE
	case KindMap:
		return tcli.TTypeId_MAP_TYPE
	case KindStruct:
		return tcli.TTypeId_STRUCT_TYPE
	}
	return tcli.TTypeId_STRING_TYPE
}

// ParseType parses a Spark SQL type ("BIGINT", "decimal(10,2)", "ARRAY<STRUCT<a: INT NOT
// NULL>>", "map<string,long>").
func ParseType(s string) (*Type, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	t, err := p.sparkType()
	if err != nil {
		return nil, err
	}
	if !p.atEnd() {
		return nil, fmt.Errorf("unexpected %q after type", p.peek().text())
	}
	return t, nil
}

// sparkType parses a Spark SQL type at the parser's position.
func (p *parser) sparkType() (*Type, error) {
	tok := p.peek()
	if tok.kind != tkIdent {
		return nil, p.errorf("expected a data type")
	}
	name := strings.ToLower(tok.val)
	p.next()
	switch name {
	case "array":
		if err := p.expectOp("<"); err != nil {
			return nil, err
		}
		elem, err := p.sparkType()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(">"); err != nil {
			return nil, err
		}
		return ArrayOf(elem), nil
	case "map":
		if err := p.expectOp("<"); err != nil {
			return nil, err
		}
		k, err := p.sparkType()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
		v, err := p.sparkType()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(">"); err != nil {
			return nil, err
		}
		return MapOf(k, v), nil
	case "struct":
		if err := p.expectOp("<"); err != nil {
			return nil, err
		}
		st := &Type{Kind: KindStruct}
		if p.acceptOp(">") {
			return st, nil
		}
		for {
			fname, err := p.ident()
			if err != nil {
				return nil, err
			}
			p.acceptOp(":")
			ft, err := p.sparkType()
			if err != nil {
				return nil, err
			}
			f := Field{Name: fname, Type: ft, Nullable: true}
			for {
				if p.acceptKw("NOT") {
					if err := p.expectKw("NULL"); err != nil {
						return nil, err
					}
					f.Nullable = false
					continue
				}
				if p.acceptKw("COMMENT") {
					c, err := p.stringLit()
					if err != nil {
						return nil, err
					}
					f.Comment = c
					continue
				}
				break
			}
			st.Fields = append(st.Fields, f)
			if p.acceptOp(",") {
				continue
			}
			if err := p.expectOp(">"); err != nil {
				return nil, err
			}
			return st, nil
		}
	case "interval", "variant", "object", "geography", "geometry":
		return nil, &SQLError{Class: "UNSUPPORTED_DATATYPE", SQLState: "0A000",
			Message: fmt.Sprintf("Unsupported data type %q (the fake warehouse does not implement it).", strings.ToUpper(name))}
	}
	k, ok := primitiveByName[name]
	if !ok {
		return nil, &SQLError{Class: "UNSUPPORTED_DATATYPE", SQLState: "0A000",
			Message: fmt.Sprintf("Unsupported data type %q.", strings.ToUpper(tok.val))}
	}
	var args []int
	if p.acceptOp("(") {
		for {
			n := p.peek()
			if n.kind != tkNumber {
				return nil, p.errorf("expected a number in type arguments")
			}
			v, err := strconv.Atoi(n.val)
			if err != nil {
				return nil, p.errorf("bad type argument %q", n.val)
			}
			args = append(args, v)
			p.next()
			if p.acceptOp(",") {
				continue
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			break
		}
	}
	if k == KindDecimal {
		t := Decimal(10, 0)
		if len(args) >= 1 {
			t.Precision = args[0]
		}
		if len(args) >= 2 {
			t.Scale = args[1]
		}
		if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
			return nil, &SQLError{Class: "DECIMAL_PRECISION_EXCEEDS_MAX_PRECISION", SQLState: "22003",
				Message: fmt.Sprintf("Decimal precision %d exceeds max precision 38 or scale %d is invalid.", t.Precision, t.Scale)}
		}
		return t, nil
	}
	return Prim(k), nil
}

// ParseDuckType parses a DuckDB type name as DESCRIBE or a result column reports it and maps
// it to the Spark type that Databricks infers for the same Parquet column (unsigned integers
// widen, TIMESTAMP WITH TIME ZONE is timestamp, TIMESTAMP is timestamp_ntz).
func ParseDuckType(s string) (*Type, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	t, err := p.duckType()
	if err != nil {
		return nil, fmt.Errorf("duckdb type %q: %w", s, err)
	}
	if !p.atEnd() {
		return nil, fmt.Errorf("duckdb type %q: unexpected %q", s, p.peek().text())
	}
	return t, nil
}

func (p *parser) duckType() (*Type, error) {
	tok := p.next()
	name := strings.ToUpper(tok.val)
	if tok.kind != tkIdent && tok.kind != tkQuoted {
		return nil, fmt.Errorf("expected a type name, got %q", tok.text())
	}
	var t *Type
	switch name {
	case "STRUCT":
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		t = &Type{Kind: KindStruct}
		for !p.acceptOp(")") {
			fname := p.next()
			if fname.kind != tkIdent && fname.kind != tkQuoted && fname.kind != tkString {
				return nil, fmt.Errorf("expected a field name, got %q", fname.text())
			}
			ft, err := p.duckType()
			if err != nil {
				return nil, err
			}
			t.Fields = append(t.Fields, Field{Name: fname.val, Type: ft, Nullable: true})
			p.acceptOp(",")
		}
	case "MAP":
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		k, err := p.duckType()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
		v, err := p.duckType()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		t = MapOf(k, v)
	case "DECIMAL", "NUMERIC":
		t = Decimal(18, 3)
		if p.acceptOp("(") {
			prec, scale := p.next(), 0
			if p.acceptOp(",") {
				scale, _ = strconv.Atoi(p.next().val)
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			t.Precision, _ = strconv.Atoi(prec.val)
			t.Scale = scale
		}
	case "TIMESTAMP":
		if p.acceptKw("WITH") {
			if !p.acceptKw("TIME") || !p.acceptKw("ZONE") {
				return nil, fmt.Errorf("expected TIME ZONE")
			}
			t = Prim(KindTimestamp)
		} else {
			t = Prim(KindTimestampNTZ)
		}
	case "TIMESTAMPTZ":
		t = Prim(KindTimestamp)
	case "TIMESTAMP_MS", "TIMESTAMP_S":
		t = Prim(KindTimestampNTZ)
	case "BOOLEAN", "BOOL":
		t = Prim(KindBoolean)
	case "TINYINT", "INT1":
		t = Prim(KindByte)
	case "SMALLINT", "INT2", "UTINYINT":
		t = Prim(KindShort)
	case "INTEGER", "INT", "INT4", "USMALLINT":
		t = Prim(KindInt)
	case "BIGINT", "INT8", "UINTEGER":
		t = Prim(KindLong)
	case "UBIGINT":
		t = Decimal(20, 0)
	case "HUGEINT", "UHUGEINT":
		t = Decimal(38, 0)
	case "FLOAT", "REAL", "FLOAT4":
		t = Prim(KindFloat)
	case "DOUBLE", "FLOAT8":
		t = Prim(KindDouble)
	case "VARCHAR", "TEXT", "STRING", "JSON", "UUID", "ENUM", "BIT":
		t = Prim(KindString)
		if p.peek().isOp("(") { // VARCHAR(n), ENUM('a', 'b')
			depth := 0
			for !p.atEnd() {
				tk := p.next()
				if tk.isOp("(") {
					depth++
				} else if tk.isOp(")") {
					depth--
					if depth == 0 {
						break
					}
				}
			}
		}
	case "BLOB", "BYTEA", "VARBINARY":
		t = Prim(KindBinary)
	case "DATE":
		t = Prim(KindDate)
	case `"NULL"`, "NULL":
		t = Prim(KindNull)
	default:
		return nil, &SQLError{Class: "UNSUPPORTED_DATATYPE", SQLState: "0A000",
			Message: fmt.Sprintf("Unsupported data type %s (no Spark equivalent in the fake warehouse).", name)}
	}
	for p.peek().isOp("[") {
		p.next()
		if p.peek().kind == tkNumber { // fixed-size ARRAY
			p.next()
		}
		if err := p.expectOp("]"); err != nil {
			return nil, err
		}
		t = ArrayOf(t)
	}
	return t, nil
}

// quoteSparkIdent quotes a name with backticks when it is not a plain identifier.
func quoteSparkIdent(s string) string {
	if isPlainIdent(s) {
		return s
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// duckIdent always quotes a name for DuckDB.
func duckIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func isPlainIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
