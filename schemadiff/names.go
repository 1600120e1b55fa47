package schemadiff

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/zbrecover/zbrecover/internal/suggest"
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
	"interval": true, "calendarinterval": true,
	"object": true, "time": true,
}

var (
	decimalRe = regexp.MustCompile(`^(?:decimal|dec|numeric)\s*\(\s*(\d+)\s*(?:,\s*(-?\d+)\s*)?\)$`)
	charRe    = regexp.MustCompile(`^(?:char|varchar|character)\s*\(\s*\d+\s*\)$`)
	collateRe = regexp.MustCompile(`^string\s+collate\s+[A-Za-z0-9_.]+$`)
	// geoRe matches geometry and geography with their parameters as Databricks spells them
	// (GEOMETRY(4326), GEOGRAPHY(ANY)) and as the Delta protocol does (geometry(<crs>),
	// geography(<crs>, <algorithm>): geometry(OGC:CRS84), geography(OGC:CRS84, spherical)).
	geoRe = regexp.MustCompile(`(?i)^(geometry|geography)\s*(?:\(\s*([^\s,()]+)\s*(?:,\s*([^\s,()]+)\s*)?\))?$`)
)

// MaxDecimalPrecision is the largest decimal precision Spark and Delta accept.
const MaxDecimalPrecision = 38

// ParsePrimitive parses a primitive type name in any accepted spelling, case-insensitively:
// long, bigint, integer, int, decimal(10,2), decimal (= decimal(10,0)), timestamp_ltz,
// varchar(20), "string collate UTF8_LCASE", geometry(4326), geometry(OGC:CRS84),
// geography(OGC:CRS84, spherical), … Unknown and unsupported names are errors.
func ParsePrimitive(name string) (Type, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if m := geoRe.FindStringSubmatch(strings.TrimSpace(name)); m != nil {
		t, err := geoType(strings.ToLower(m[1]), m[2], m[3])
		if err != nil {
			return Type{}, fmt.Errorf("type %q: %w", name, err)
		}
		return t, nil
	}
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

// EdgeAlgorithms are the edge interpolation algorithms a geography may name (Delta protocol,
// Parquet GEOGRAPHY); spherical is the default, which the model keeps as "".
var EdgeAlgorithms = []string{"spherical", "vincenty", "thomas", "andoyer", "karney"}

// geoType builds geometry(crs) or geography(crs[, algorithm]) from a parsed name: the CRS
// normalized by SRIDFromCRS, the algorithm lower case and "" for spherical.
func geoType(kind, crs, algorithm string) (Type, error) {
	if kind == "geometry" {
		if algorithm != "" {
			return Type{}, fmt.Errorf("geometry takes one parameter, a CRS (an edge algorithm such as %q belongs to geography)", algorithm)
		}
		return GeometryType(SRIDFromCRS(crs)), nil
	}
	alg := strings.ToLower(algorithm)
	if alg != "" && !slices.Contains(EdgeAlgorithms, alg) {
		return Type{}, fmt.Errorf("unknown edge interpolation algorithm %q (want one of %s)", algorithm, strings.Join(EdgeAlgorithms, ", "))
	}
	if alg == "spherical" {
		alg = ""
	}
	t := GeographyType(SRIDFromCRS(crs))
	t.Algorithm = alg
	return t, nil
}

// SRIDFromCRS turns a geospatial CRS, as the Delta protocol and Parquet state it, into the
// SRID Databricks types carry: OGC:CRS84 (the Parquet and Delta default) and EPSG:4326 are
// 4326, EPSG:n and SRID:n are n, ANY is ANY (Databricks' GEOMETRY(ANY)), a bare number stays;
// any other CRS (projjson:…, another authority) is kept as it is, so that it differs from
// every SRID rather than matching one by accident. "" (no CRS stated) stays "".
func SRIDFromCRS(crs string) string {
	c := strings.TrimSpace(crs)
	u := strings.ToUpper(c)
	switch {
	case u == "OGC:CRS84", u == "EPSG:4326":
		return "4326"
	case u == "ANY":
		return "ANY"
	case strings.HasPrefix(u, "EPSG:"), strings.HasPrefix(u, "SRID:"):
		return c[5:]
	}
	return c
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
	case Geometry, Geography:
		switch {
		case t.Algorithm != "":
			return t.Kind.String() + "(" + strings.ToLower(t.SRID) + ", " + t.Algorithm + ")"
		case t.SRID != "":
			return t.Kind.String() + "(" + strings.ToLower(t.SRID) + ")"
		}
	}
	return t.Kind.String()
}

// SimilarNames reports whether two column names are alike enough to state that one is
// probably the other renamed, and how: they are equal once case and the separators "_", "-",
// "." and " " are ignored; or one extends the other (a prefix or suffix of at least 3
// characters and half the longer name: amount → amount_usd); or they share a prefix of at
// least 5 characters and two thirds of the longer name (customer_id → customer_key); or they
// differ by one character (two in names of 8 or more: adress → address). Names that share
// only a type, such as note and region, are not alike.
func SimilarNames(a, b string) (string, bool) {
	na, nb := normName(a), normName(b)
	if na == "" || nb == "" {
		return "", false
	}
	if na == nb {
		return "the names differ only in case and separators", true
	}
	short, long := na, nb
	if len([]rune(short)) > len([]rune(long)) {
		short, long = long, short
	}
	ns, nl := len([]rune(short)), len([]rune(long))
	if ns >= 3 && 2*ns >= nl && (strings.HasPrefix(long, short) || strings.HasSuffix(long, short)) {
		return "one name extends the other", true
	}
	ra, rb := []rune(na), []rune(nb)
	common := 0
	for common < len(ra) && common < len(rb) && ra[common] == rb[common] {
		common++
	}
	if common >= 5 && 3*common >= 2*nl {
		return "the names share the prefix " + string(ra[:common]), true
	}
	if nl > 256 {
		return "", false // the distance costs ns × nl: a name this long is not a typo of another
	}
	d := suggest.Distance(na, nb)
	switch {
	case d == 1 && ns >= 4:
		return "the names differ by one character", true
	case d == 2 && ns >= 8:
		return "the names differ by two characters", true
	}
	return "", false
}

func normName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch r {
		case '_', '-', '.', ' ':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
