// Package schemadiff models Spark / Delta schemas, parses them from the forms Databricks
// exposes (Delta schemaString, DESCRIBE … AS JSON, Unity Catalog type_json), maps Parquet
// schemas onto them, and diffs a fallback file's schema against a table's to predict what
// COPY INTO with mergeSchema = false will do.
//
// The package is pure: no I/O, no context, no mutation of its inputs.
package schemadiff

import (
	"strconv"
	"strings"
)

// Kind is a Spark SQL type constructor.
type Kind int

// The Spark / Delta types. Names follow Spark's DDL spelling (Kind.String).
const (
	Invalid Kind = iota
	Boolean
	Byte    // tinyint
	Short   // smallint
	Integer // int
	Long    // bigint
	Float
	Double
	Decimal // decimal(p,s)
	String
	Binary
	Date
	Timestamp    // instant, UTC-adjusted
	TimestampNTZ // local date-time without time zone
	Variant
	Void // NULL type
	Struct
	Array
	Map
	Geometry    // geometry(srid): planar shapes (Parquet GEOMETRY)
	Geography   // geography(srid): shapes on the sphere (Parquet GEOGRAPHY)
	Unsupported // a file column Databricks has no type for (Type.Parquet, Type.Reason)
)

var kindNames = [...]string{
	Invalid: "invalid", Boolean: "boolean", Byte: "tinyint", Short: "smallint", Integer: "int",
	Long: "bigint", Float: "float", Double: "double", Decimal: "decimal", String: "string",
	Binary: "binary", Date: "date", Timestamp: "timestamp", TimestampNTZ: "timestamp_ntz",
	Variant: "variant", Void: "void", Struct: "struct", Array: "array", Map: "map",
	Geometry: "geometry", Geography: "geography", Unsupported: "unsupported",
}

// String returns the Spark DDL name of the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Type is a Spark SQL data type. Only the fields of its Kind are set.
type Type struct {
	Kind Kind

	// Decimal.
	Precision, Scale int

	// Struct.
	Fields []Field

	// Array: Elem and ContainsNull. Map: Key, Value and ValueContainsNull.
	Elem              *Type
	ContainsNull      bool
	Key, Value        *Type
	ValueContainsNull bool

	// Geometry and Geography: SRID is the spatial reference system ("4326"), "" when the
	// type does not state one (see SRIDFromCRS).
	SRID string
	// Geography: Algorithm is the edge interpolation algorithm (vincenty, thomas, andoyer,
	// karney), "" for spherical, the default.
	Algorithm string

	// Unsupported (file columns only): Parquet is the column's Parquet type ("FIXED_LEN_BYTE_ARRAY
	// (Float16)") and Reason why Databricks cannot read it.
	Parquet, Reason string
}

// Field is a named column or struct member.
type Field struct {
	Name     string
	Type     Type
	Nullable bool
	// PhysicalName and ID are the Delta column-mapping physical name and id
	// (delta.columnMapping.physicalName / .id), empty / 0 without column mapping.
	PhysicalName string
	ID           int64
	// Comment is the column comment (Delta metadata "comment", DESCRIBE "comment").
	Comment string
	// Metadata is the field's raw metadata (Delta schemaString), for round trips. Numbers are
	// json.Number so that they marshal back unchanged.
	Metadata map[string]any
	// NullCount is the number of nulls the Parquet footer statistics report across all row
	// groups, meaningful only when NullCountKnown (fields read from a file).
	NullCount      int64
	NullCountKnown bool
}

// Schema is a table's or a file's top-level columns, in order.
type Schema struct {
	Fields []Field
}

// Primitive types, for building schemas.
var (
	BooleanType      = Type{Kind: Boolean}
	ByteType         = Type{Kind: Byte}
	ShortType        = Type{Kind: Short}
	IntegerType      = Type{Kind: Integer}
	LongType         = Type{Kind: Long}
	FloatType        = Type{Kind: Float}
	DoubleType       = Type{Kind: Double}
	StringType       = Type{Kind: String}
	BinaryType       = Type{Kind: Binary}
	DateType         = Type{Kind: Date}
	TimestampType    = Type{Kind: Timestamp}
	TimestampNTZType = Type{Kind: TimestampNTZ}
	VariantType      = Type{Kind: Variant}
)

// GeometryType returns geometry(srid) (plain geometry when srid is "").
func GeometryType(srid string) Type { return Type{Kind: Geometry, SRID: srid} }

// GeographyType returns geography(srid) (plain geography when srid is "").
func GeographyType(srid string) Type { return Type{Kind: Geography, SRID: srid} }

// UnsupportedType returns the type of a file column Databricks cannot read: parquet names
// the Parquet type, reason says why.
func UnsupportedType(parquet, reason string) Type {
	return Type{Kind: Unsupported, Parquet: parquet, Reason: reason}
}

// HasUnsupported reports whether t is, or contains, an Unsupported type.
func (t Type) HasUnsupported() bool {
	switch t.Kind {
	case Unsupported:
		return true
	case Struct:
		for _, f := range t.Fields {
			if f.Type.HasUnsupported() {
				return true
			}
		}
	case Array:
		return t.Elem != nil && t.Elem.HasUnsupported()
	case Map:
		return (t.Key != nil && t.Key.HasUnsupported()) || (t.Value != nil && t.Value.HasUnsupported())
	}
	return false
}

// DecimalType returns decimal(p,s).
func DecimalType(p, s int) Type { return Type{Kind: Decimal, Precision: p, Scale: s} }

// ArrayType returns array<elem>.
func ArrayType(elem Type, containsNull bool) Type {
	return Type{Kind: Array, Elem: &elem, ContainsNull: containsNull}
}

// MapType returns map<key,value>.
func MapType(key, value Type, valueContainsNull bool) Type {
	return Type{Kind: Map, Key: &key, Value: &value, ValueContainsNull: valueContainsNull}
}

// StructType returns struct<fields…>.
func StructType(fields ...Field) Type { return Type{Kind: Struct, Fields: fields} }

// String returns the type in Spark DDL form: bigint, decimal(10,2), array<int>,
// map<string,bigint>, struct<a:int,b:string>. Names inside struct<> are backquoted when they
// are not plain identifiers.
func (t Type) String() string { return simpleSyntax.render(t) }

// syntax is one way of writing types: Spark's simpleString (Type.String) or SQL DDL
// (Type.SQL). Both spell types with the Kind names; they differ in case, spacing, the quoting
// of member names, and whether member comments are written.
type syntax struct {
	upper    bool                // type names in upper case
	sep      string              // between a map's key and value types, and between members
	colon    string              // between a member's name and its type
	quote    func(string) string // quotes a member name
	comments bool                // writes COMMENT '…' after a member that has one
}

var (
	simpleSyntax = syntax{sep: ",", colon: ":", quote: QuoteIdentIfNeeded}
	sqlSyntax    = syntax{upper: true, sep: ", ", colon: ": ", quote: QuoteIdent, comments: true}
)

func (s syntax) render(t Type) string {
	var b strings.Builder
	s.writeType(&b, t)
	return b.String()
}

func (s syntax) writeType(b *strings.Builder, t Type) {
	name := t.Kind.String()
	if s.upper {
		name = strings.ToUpper(name)
	}
	b.WriteString(name)
	switch t.Kind {
	case Decimal:
		b.WriteString("(" + strconv.Itoa(t.Precision) + "," + strconv.Itoa(t.Scale) + ")")
	case Geometry, Geography:
		switch {
		case t.Algorithm != "":
			b.WriteString("(" + t.SRID + s.sep + t.Algorithm + ")")
		case t.SRID != "":
			b.WriteString("(" + t.SRID + ")")
		}
	case Unsupported:
		if t.Parquet != "" {
			b.WriteString("(" + t.Parquet + ")")
		}
	case Array:
		b.WriteString("<")
		if t.Elem != nil {
			s.writeType(b, *t.Elem)
		}
		b.WriteString(">")
	case Map:
		b.WriteString("<")
		if t.Key != nil {
			s.writeType(b, *t.Key)
		}
		b.WriteString(s.sep)
		if t.Value != nil {
			s.writeType(b, *t.Value)
		}
		b.WriteString(">")
	case Struct:
		b.WriteString("<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(s.sep)
			}
			b.WriteString(s.quote(f.Name))
			b.WriteString(s.colon)
			s.writeMember(b, f)
		}
		b.WriteString(">")
	}
}

// writeMember writes what follows a member's name: TYPE [NOT NULL] [COMMENT '…'].
func (s syntax) writeMember(b *strings.Builder, f Field) {
	s.writeType(b, f.Type)
	if !f.Nullable {
		b.WriteString(" NOT NULL")
	}
	if s.comments && f.Comment != "" {
		b.WriteString(" COMMENT ")
		b.WriteString(QuoteString(f.Comment))
	}
}

// Equal reports whether two types are the same, nullability of nested members included and
// struct member names compared case-insensitively (as Spark resolves them).
func (t Type) Equal(u Type) bool { return typesEqual(t, u, strings.EqualFold) }

// typesEqual compares two types, nullability of nested members included, with sameName
// deciding whether two struct member names match.
func typesEqual(t, u Type, sameName func(a, b string) bool) bool {
	if t.Kind != u.Kind {
		return false
	}
	switch t.Kind {
	case Decimal:
		return t.Precision == u.Precision && t.Scale == u.Scale
	case Geometry, Geography:
		return t.SRID == u.SRID && t.Algorithm == u.Algorithm
	case Unsupported:
		return t.Parquet == u.Parquet
	case Array:
		return t.ContainsNull == u.ContainsNull && ptrsEqual(t.Elem, u.Elem, sameName)
	case Map:
		return t.ValueContainsNull == u.ValueContainsNull && ptrsEqual(t.Key, u.Key, sameName) &&
			ptrsEqual(t.Value, u.Value, sameName)
	case Struct:
		return fieldsEqual(t.Fields, u.Fields, sameName)
	}
	return true
}

func ptrsEqual(a, b *Type, sameName func(a, b string) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return typesEqual(*a, *b, sameName)
}

// fieldsEqual compares two field lists member by member: names (by sameName), nullability
// and types.
func fieldsEqual(a, b []Field, sameName func(a, b string) bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameName(a[i].Name, b[i].Name) || a[i].Nullable != b[i].Nullable || !typesEqual(a[i].Type, b[i].Type, sameName) {
			return false
		}
	}
	return true
}

// QuoteIdent quotes a name with backquotes for Spark SQL, doubling any backquote inside.
func QuoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// QuoteIdentIfNeeded quotes name unless it is a plain identifier ([A-Za-z_][A-Za-z0-9_]*).
func QuoteIdentIfNeeded(name string) string {
	if name == "" {
		return QuoteIdent(name)
	}
	for i, r := range name {
		if !(r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9')) {
			return QuoteIdent(name)
		}
	}
	return name
}
