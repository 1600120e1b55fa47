package inspect

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// UnsupportedTypeError reports a Parquet column that Spark (and so COPY INTO) cannot read.
type UnsupportedTypeError struct {
	Path    string // dotted column path
	Parquet string // the Parquet physical type and annotation
	Reason  string
}

func (e *UnsupportedTypeError) Error() string {
	return fmt.Sprintf("column %s: %s: %s", e.Path, e.Parquet, e.Reason)
}

// SparkSchema maps a Parquet schema onto the Spark types that Spark's Parquet reader (and so
// COPY INTO and read_files) infers for it, following ParquetSchemaConverter:
//
//   - INT32 with INT(8/16/32, signed) → tinyint / smallint / int; unsigned ones widen to
//     smallint / int / bigint; INT64 unsigned → decimal(20,0); DATE → date; DECIMAL → decimal.
//
//   - INT64 TIMESTAMP(MILLIS|MICROS) → timestamp when isAdjustedToUTC, else timestamp_ntz
//     (legacy TIMESTAMP_MILLIS/MICROS converted types count as UTC-adjusted); INT96 → timestamp.
//
//   - BINARY with STRING, ENUM or JSON → string; plain BINARY and BSON → binary; FIXED_LEN_BYTE_ARRAY
//     without annotation → binary.
//
//   - LIST → array (3-level lists, and the legacy 2-level forms Spark recognises); MAP and
//     MAP_KEY_VALUE → map; other groups → struct; VARIANT → variant; a repeated field outside a
//     LIST or MAP → a non-null array of non-null elements.
//
//   - OPTIONAL → nullable, REQUIRED → not null.
//
//   - BINARY with GEOMETRY or GEOGRAPHY → geometry(srid) / geography(srid[, algorithm]), the
//     SRID taken from the CRS (OGC:CRS84, the default, is 4326; EPSG:n is n), a geography's
//     edge algorithm kept unless it is spherical, the default.
//
// A column of a type Databricks cannot read (TIMESTAMP(NANOS), TIME, INTERVAL, UUID, FLOAT16,
// decimals over 38 digits, an annotation illegal for its physical type) gets a
// schemadiff.Unsupported type naming the Parquet type and the reason: the file stays
// readable, and the diff blocks on that column. An unknown logical type (one newer than this
// reader) never gets here: the footer reader drops it, so the column is read by its physical
// type, as the Parquet format asks of readers. Field.ID carries a Parquet field_id when one
// is set (≥ 1). Null counts are not filled here (see the footer reader).
func SparkSchema(s *schema.Schema) (schemadiff.Schema, error) {
	if s == nil || s.Root() == nil {
		return schemadiff.Schema{}, fmt.Errorf("parquet schema is missing")
	}
	root := s.Root()
	if root.NumFields() == 0 {
		return schemadiff.Schema{}, fmt.Errorf("parquet schema has no columns")
	}
	fields, err := convertFields(root, nil)
	if err != nil {
		return schemadiff.Schema{}, err
	}
	return schemadiff.Schema{Fields: fields}, nil
}

func convertFields(g *schema.GroupNode, prefix *colPath) ([]schemadiff.Field, error) {
	out := make([]schemadiff.Field, 0, g.NumFields())
	for i := 0; i < g.NumFields(); i++ {
		n := g.Field(i)
		path := prefix.child(n.Name())
		var (
			f   schemadiff.Field
			err error
		)
		f.Name = n.Name()
		if id := n.FieldID(); id > 0 {
			f.ID = int64(id)
		}
		switch n.RepetitionType() {
		case parquet.Repetitions.Repeated:
			// A repeated field outside LIST/MAP: a required list of required elements.
			var elem schemadiff.Type
			elem, err = convertType(n, path)
			f.Type = schemadiff.ArrayType(elem, false)
			f.Nullable = false
		default:
			f.Type, err = convertType(n, path)
			f.Nullable = n.RepetitionType() == parquet.Repetitions.Optional
		}
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// colPath is a column's dotted path as a chain of names, so that descending a level costs
// one small allocation and the string is built only for an error: joining strings level by
// level would cost time and memory quadratic in the nesting depth.
type colPath struct {
	parent *colPath
	name   string
}

func (p *colPath) child(name string) *colPath { return &colPath{parent: p, name: name} }

func (p *colPath) String() string {
	var names []string
	for q := p; q != nil; q = q.parent {
		names = append(names, q.name)
	}
	slices.Reverse(names)
	return strings.Join(names, ".")
}

// convertType converts the node's type, ignoring its own repetition.
func convertType(n schema.Node, path *colPath) (schemadiff.Type, error) {
	switch n := n.(type) {
	case *schema.PrimitiveNode:
		return convertPrimitive(n, path)
	case *schema.GroupNode:
		return convertGroup(n, path)
	default:
		return schemadiff.Type{}, fmt.Errorf("column %s: unknown schema node %T", path, n)
	}
}

func describe(n *schema.PrimitiveNode) string {
	s := n.PhysicalType().String()
	if lt := n.LogicalType(); lt != nil && !lt.IsNone() {
		s += " (" + lt.String() + ")"
	}
	return s
}

func convertPrimitive(n *schema.PrimitiveNode, path *colPath) (schemadiff.Type, error) {
	unsupported := func(reason string) (schemadiff.Type, error) {
		return schemadiff.UnsupportedType(describe(n), reason), nil
	}
	lt := n.LogicalType()
	if lt == nil {
		lt = schema.NoLogicalType{}
	}
	if _, ok := lt.(schema.NullLogicalType); ok {
		// Arrow's null type, written as an all-null INT32 column.
		return schemadiff.Type{Kind: schemadiff.Void}, nil
	}
	if _, ok := lt.(schema.UnknownLogicalType); ok {
		return unsupported("unknown logical type")
	}
	switch t := lt.(type) {
	case schema.Float16LogicalType:
		return unsupported("Databricks has no 16-bit floating-point type")
	case schema.UUIDLogicalType:
		return unsupported("Spark does not read UUID columns")
	case schema.GeometryLogicalType:
		if n.PhysicalType() != parquet.Types.ByteArray {
			return unsupported("illegal physical type for GEOMETRY")
		}
		return schemadiff.GeometryType(sridOf(t.CRS())), nil
	case schema.GeographyLogicalType:
		if n.PhysicalType() != parquet.Types.ByteArray {
			return unsupported("illegal physical type for GEOGRAPHY")
		}
		g := schemadiff.GeographyType(sridOf(t.CRS()))
		if a := strings.ToLower(string(t.EdgeInterpolationAlgorithm())); a != "spherical" {
			g.Algorithm = a
		}
		return g, nil
	}
	decimal := func(lt schema.DecimalLogicalType, maxDigits int32) (schemadiff.Type, error) {
		p, s := lt.Precision(), lt.Scale()
		if p < 1 || p > 38 || s < 0 || s > p {
			return unsupported(fmt.Sprintf("decimal(%d,%d) is outside Spark's decimal range (precision 1 to 38)", p, s))
		}
		if maxDigits > 0 && p > maxDigits {
			return unsupported(fmt.Sprintf("decimal precision %d does not fit the physical type", p))
		}
		return schemadiff.DecimalType(int(p), int(s)), nil
	}
	switch n.PhysicalType() {
	case parquet.Types.Boolean:
		if !lt.IsNone() {
			return unsupported("illegal annotation")
		}
		return schemadiff.BooleanType, nil
	case parquet.Types.Float:
		if !lt.IsNone() {
			return unsupported("illegal annotation")
		}
		return schemadiff.FloatType, nil
	case parquet.Types.Double:
		if !lt.IsNone() {
			return unsupported("illegal annotation")
		}
		return schemadiff.DoubleType, nil
	case parquet.Types.Int32:
		switch t := lt.(type) {
		case schema.NoLogicalType:
			return schemadiff.IntegerType, nil
		case schema.IntLogicalType:
			switch {
			case t.IsSigned() && t.BitWidth() == 8:
				return schemadiff.ByteType, nil
			case t.IsSigned() && t.BitWidth() == 16:
				return schemadiff.ShortType, nil
			case t.IsSigned() && t.BitWidth() == 32:
				return schemadiff.IntegerType, nil
			case !t.IsSigned() && t.BitWidth() == 8:
				return schemadiff.ShortType, nil
			case !t.IsSigned() && t.BitWidth() == 16:
				return schemadiff.IntegerType, nil
			case !t.IsSigned() && t.BitWidth() == 32:
				return schemadiff.LongType, nil
			}
			return unsupported("illegal integer width for INT32")
		case schema.DateLogicalType:
			return schemadiff.DateType, nil
		case schema.DecimalLogicalType:
			return decimal(t, 9)
		case schema.TimeLogicalType:
			return unsupported("Spark has no TIME type to read it into")
		}
		return unsupported("illegal annotation for INT32")
	case parquet.Types.Int64:
		switch t := lt.(type) {
		case schema.NoLogicalType:
			return schemadiff.LongType, nil
		case schema.IntLogicalType:
			switch {
			case t.IsSigned() && t.BitWidth() == 64:
				return schemadiff.LongType, nil
			case !t.IsSigned() && t.BitWidth() == 64:
				return schemadiff.DecimalType(20, 0), nil
			}
			return unsupported("illegal integer width for INT64")
		case schema.DecimalLogicalType:
			return decimal(t, 18)
		case schema.TimestampLogicalType:
			switch t.TimeUnit() {
			case schema.TimeUnitMillis, schema.TimeUnitMicros:
				if t.IsAdjustedToUTC() {
					return schemadiff.TimestampType, nil
				}
				return schemadiff.TimestampNTZType, nil
			}
			return unsupported("Spark reads only MILLIS and MICROS timestamps (NANOS needs spark.sql.legacy.parquet.nanosAsLong)")
		case schema.TimeLogicalType:
			return unsupported("Spark has no TIME type to read it into")
		}
		return unsupported("illegal annotation for INT64")
	case parquet.Types.Int96:
		if !lt.IsNone() {
			return unsupported("illegal annotation for INT96")
		}
		return schemadiff.TimestampType, nil
	case parquet.Types.ByteArray:
		switch t := lt.(type) {
		case schema.StringLogicalType, schema.EnumLogicalType, schema.JSONLogicalType:
			return schemadiff.StringType, nil
		case schema.NoLogicalType, schema.BSONLogicalType:
			return schemadiff.BinaryType, nil
		case schema.DecimalLogicalType:
			return decimal(t, 0)
		}
		return unsupported("illegal annotation for BINARY")
	case parquet.Types.FixedLenByteArray:
		switch t := lt.(type) {
		case schema.NoLogicalType:
			return schemadiff.BinaryType, nil
		case schema.DecimalLogicalType:
			return decimal(t, 0)
		case schema.IntervalLogicalType:
			return unsupported("Spark does not read INTERVAL")
		}
		return unsupported("illegal annotation for FIXED_LEN_BYTE_ARRAY")
	}
	return unsupported("unknown physical type")
}

// sridOf turns a Parquet geospatial CRS into the SRID Databricks types carry
// (schemadiff.SRIDFromCRS); an unset CRS is Parquet's default, OGC:CRS84, so 4326.
func sridOf(crs string) string {
	if strings.TrimSpace(crs) == "" {
		return "4326"
	}
	return schemadiff.SRIDFromCRS(crs)
}

func convertGroup(g *schema.GroupNode, path *colPath) (schemadiff.Type, error) {
	invalid := func(what string) (schemadiff.Type, error) {
		return schemadiff.Type{}, fmt.Errorf("column %s: invalid %s", path, what)
	}
	switch g.LogicalType().(type) {
	case schema.ListLogicalType:
		if g.NumFields() != 1 || g.Field(0).RepetitionType() != parquet.Repetitions.Repeated {
			return invalid("LIST group: it must hold exactly one repeated field")
		}
		rep := g.Field(0)
		if isLegacyElement(rep, g.Name()) {
			// 2-level list: the repeated field is the element, never null.
			elem, err := convertType(rep, path.child("element"))
			if err != nil {
				return schemadiff.Type{}, err
			}
			return schemadiff.ArrayType(elem, false), nil
		}
		// 3-level list: the element's own type, nullable only when OPTIONAL (Spark converts a
		// REPEATED element by its type alone, not as a nested array).
		inner := rep.(*schema.GroupNode).Field(0)
		elem, err := convertType(inner, path.child("element"))
		if err != nil {
			return schemadiff.Type{}, err
		}
		return schemadiff.ArrayType(elem, inner.RepetitionType() == parquet.Repetitions.Optional), nil
	case schema.MapLogicalType:
		if g.NumFields() != 1 || g.Field(0).Type() != schema.Group {
			return invalid("MAP group: it must hold one repeated key_value group")
		}
		kv := g.Field(0).(*schema.GroupNode)
		if kv.RepetitionType() != parquet.Repetitions.Repeated || kv.NumFields() != 2 {
			return invalid("MAP key_value group: it must be repeated with a key and a value")
		}
		key, err := convertType(kv.Field(0), path.child("key"))
		if err != nil {
			return schemadiff.Type{}, err
		}
		val, err := convertType(kv.Field(1), path.child("value"))
		if err != nil {
			return schemadiff.Type{}, err
		}
		return schemadiff.MapType(key, val, kv.Field(1).RepetitionType() == parquet.Repetitions.Optional), nil
	case schema.VariantLogicalType:
		return schemadiff.VariantType, nil
	case schema.NoLogicalType, nil:
		if g.NumFields() == 0 {
			return invalid("group: a struct needs at least one field")
		}
		fields, err := convertFields(g, path)
		if err != nil {
			return schemadiff.Type{}, err
		}
		return schemadiff.StructType(fields...), nil
	}
	return invalid("group annotation " + g.LogicalType().String())
}

// isLegacyElement reports whether the repeated field of a LIST group is itself the element
// type (a legacy 2-level list), by Spark's rules: a primitive, a group of two or more fields,
// a group named "array" (parquet-avro) or "<list>_tuple" (parquet-thrift).
func isLegacyElement(rep schema.Node, listName string) bool {
	g, ok := rep.(*schema.GroupNode)
	if !ok {
		return true
	}
	return g.NumFields() != 1 || rep.Name() == "array" || rep.Name() == listName+"_tuple"
}

// typeKey writes a canonical form of t that, unlike Type.String, includes the nullability of
// array elements and map values and keeps struct member names exact.
func typeKey(b *strings.Builder, t schemadiff.Type) {
	switch t.Kind {
	case schemadiff.Decimal:
		fmt.Fprintf(b, "decimal(%d,%d)", t.Precision, t.Scale)
	case schemadiff.Geometry, schemadiff.Geography, schemadiff.Unsupported:
		b.WriteString(t.String())
	case schemadiff.Array:
		b.WriteString("array<")
		if t.Elem != nil {
			typeKey(b, *t.Elem)
		}
		if !t.ContainsNull {
			b.WriteString(" not null")
		}
		b.WriteString(">")
	case schemadiff.Map:
		b.WriteString("map<")
		if t.Key != nil {
			typeKey(b, *t.Key)
		}
		b.WriteString(",")
		if t.Value != nil {
			typeKey(b, *t.Value)
		}
		if !t.ValueContainsNull {
			b.WriteString(" not null")
		}
		b.WriteString(">")
	case schemadiff.Struct:
		b.WriteString("struct<")
		fieldsKey(b, t.Fields)
		b.WriteString(">")
	default:
		b.WriteString(t.Kind.String())
	}
}

func fieldsKey(b *strings.Builder, fields []schemadiff.Field) {
	for i, f := range fields {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(schemadiff.QuoteIdent(f.Name))
		if f.ID != 0 {
			fmt.Fprintf(b, "#%d", f.ID)
		}
		b.WriteString(":")
		typeKey(b, f.Type)
		if !f.Nullable {
			b.WriteString(" not null")
		}
	}
}
