package schemadiff

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// primitiveNames maps every accepted spelling of a primitive type, lower case, to its type.
// It covers the Delta log vocabulary (long, integer, short, byte), Spark's simpleString and
// SQL names (bigint, int, smallint, tinyint), DESCRIBE … AS JSON (timestamp_ltz) and common
// synonyms (real, bool, numeric). char and varchar are strings in Delta.
var primitiveNames = map[string]Type{
	"boolean": BooleanType, "bool": BooleanType,
	"tinyint": ByteType, "byte": ByteType,
	"smallint": ShortType, "short": ShortType,
	"int": IntegerType, "integer": IntegerType,
	"bigint": LongType, "long": LongType,
	"float": FloatType, "real": FloatType,
	"double": DoubleType,
	"string": StringType, "char": StringType, "varchar": StringType, "character": StringType,
	"binary":    BinaryType,
	"date":      DateType,
	"timestamp": TimestampType, "timestamp_ltz": TimestampType,
	"timestamp_ntz": TimestampNTZType,
	"variant":       VariantType,
	"void":          {Kind: Void}, "null": {Kind: Void},
}

// unsupportedTypes are Spark types the model deliberately does not carry; parsers name them in
// their error instead of calling them unknown.
var unsupportedTypes = map[string]bool{
	"interval": true, "calendarinterval": true, "geography": true, "geometry": true,
	"object": true, "time": true,
}

var (
	decimalRe = regexp.MustCompile(`^(?:decimal|dec|numeric)\s*\(\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?\)$`)
	charRe    = regexp.MustCompile(`^(?:char|varchar|character)\s*\(\s*\d+\s*\)$`)
	collateRe = regexp.MustCompile(`^string\s+collate\s+[A-Za-z0-9_.]+$`)
)

// MaxDecimalPrecision is the largest decimal precision Spark and Delta accept.
const MaxDecimalPrecision = 38

// ParsePrimitive parses a primitive type name in any accepted spelling, case-insensitively:
// long, bigint, integer, int, decimal(10,2), decimal (= decimal(10,0)), timestamp_ltz,
// varchar(20), "string collate UTF8_LCASE", … Unknown and unsupported names are errors.
func ParsePrimitive(name string) (Type, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if t, ok := primitiveNames[n]; ok {
		return t, nil
	}
	switch n {
	case "decimal", "dec", "numeric":
		return DecimalType(10, 0), nil
	}
	if m := decimalRe.FindStringSubmatch(n); m != nil {
		p, _ := strconv.Atoi(m[1])
		s := 0
		if m[2] != "" {
			s, _ = strconv.Atoi(m[2])
		}
		return checkDecimal(p, s)
	}
	if charRe.MatchString(n) || collateRe.MatchString(n) {
		return StringType, nil
	}
	first := n
	if i := strings.IndexAny(first, " (<"); i > 0 {
		first = first[:i]
	}
	if unsupportedTypes[first] {
		return Type{}, fmt.Errorf("type %q is not supported by zbrecover", name)
	}
	return Type{}, fmt.Errorf("unknown type %q", name)
}

func checkDecimal(p, s int) (Type, error) {
	if p < 1 || p > MaxDecimalPrecision || s < 0 || s > p {
		return Type{}, fmt.Errorf("invalid decimal(%d,%d): precision must be 1..%d and scale 0..precision", p, s, MaxDecimalPrecision)
	}
	return DecimalType(p, s), nil
}

// deltaTypeName returns a primitive type's name in the Delta log vocabulary.
func deltaTypeName(t Type) string {
	switch t.Kind {
	case Byte:
		return "byte"
	case Short:
		return "short"
	case Integer:
		return "integer"
	case Long:
		return "long"
	case Decimal:
		return "decimal(" + strconv.Itoa(t.Precision) + "," + strconv.Itoa(t.Scale) + ")"
	}
	return t.Kind.String()
}
