package databricks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// This file turns the two JSON type forms Databricks serves into schemadiff types:
//
//   - Spark's DataType JSON, used by Unity Catalog's column type_json (a StructField:
//     {"name":"id","type":"long","nullable":true,"metadata":{}}) and by Delta's schemaString;
//   - the type_json of DESCRIBE TABLE EXTENDED … AS JSON ({"name":"bigint"},
//     {"name":"decimal","precision":10,"scale":2}, {"name":"array","element_type":…}).
//
// Unknown types are errors, never skipped: a column the tool cannot model would make every
// later schema comparison wrong.

var decimalRe = regexp.MustCompile(`^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$`)
var charRe = regexp.MustCompile(`^(?:var)?char\(\s*\d+\s*\)$`)

// atomicType maps a Spark type name, in any of its spellings (DataType JSON, simpleString,
// SQL DDL), to a type.
func atomicType(name string) (schemadiff.Type, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	switch n {
	case "boolean", "bool":
		return schemadiff.BooleanType, true
	case "byte", "tinyint":
		return schemadiff.ByteType, true
	case "short", "smallint":
		return schemadiff.ShortType, true
	case "integer", "int":
		return schemadiff.IntegerType, true
	case "long", "bigint":
		return schemadiff.LongType, true
	case "float", "real":
		return schemadiff.FloatType, true
	case "double":
		return schemadiff.DoubleType, true
	case "decimal", "dec", "numeric":
		return schemadiff.DecimalType(10, 0), true
	case "string", "varchar", "char":
		return schemadiff.StringType, true
	case "binary":
		return schemadiff.BinaryType, true
	case "date":
		return schemadiff.DateType, true
	case "timestamp", "timestamp_ltz":
		return schemadiff.TimestampType, true
	case "timestamp_ntz":
		return schemadiff.TimestampNTZType, true
	case "variant":
		return schemadiff.VariantType, true
	case "void", "null":
		return schemadiff.Type{Kind: schemadiff.Void}, true
	}
	if m := decimalRe.FindStringSubmatch(n); m != nil {
		p, _ := strconv.Atoi(m[1])
		s, _ := strconv.Atoi(m[2])
		return schemadiff.DecimalType(p, s), true
	}
	if charRe.MatchString(n) || strings.HasPrefix(n, "string collate ") {
		return schemadiff.StringType, true
	}
	return schemadiff.Type{}, false
}

// sparkField is a StructField in Spark's DataType JSON.
type sparkField struct {
	Name     string          `json:"name"`
	Type     json.RawMessage `json:"type"`
	Nullable *bool           `json:"nullable"`
	Metadata map[string]any  `json:"metadata"`
}

// parseSparkField parses one StructField of Spark's DataType JSON (the form of Unity Catalog's
// type_json), with Delta column-mapping metadata.
func parseSparkField(raw []byte) (schemadiff.Field, error) {
	var f sparkField
	if err := json.Unmarshal(raw, &f); err != nil {
		return schemadiff.Field{}, fmt.Errorf("invalid field JSON: %v", err)
	}
	return sparkFieldToField(f)
}

func sparkFieldToField(f sparkField) (schemadiff.Field, error) {
	if len(f.Type) == 0 {
		return schemadiff.Field{}, fmt.Errorf("field %q has no type", f.Name)
	}
	t, err := parseSparkType(f.Type)
	if err != nil {
		return schemadiff.Field{}, fmt.Errorf("field %q: %w", f.Name, err)
	}
	out := schemadiff.Field{Name: f.Name, Type: t, Nullable: f.Nullable == nil || *f.Nullable}
	if len(f.Metadata) > 0 {
		out.Metadata = f.Metadata
		if pn, ok := f.Metadata["delta.columnMapping.physicalName"].(string); ok {
			out.PhysicalName = pn
		}
		if id, ok := f.Metadata["delta.columnMapping.id"].(float64); ok {
			out.ID = int64(id)
		}
	}
	return out, nil
}

// parseSparkType parses a DataType in Spark's JSON form: a string for atomic types, an object
// for struct, array and map.
func parseSparkType(raw json.RawMessage) (schemadiff.Type, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return schemadiff.Type{}, fmt.Errorf("invalid type JSON: %v", err)
		}
		if t, ok := atomicType(name); ok {
			return t, nil
		}
		return schemadiff.Type{}, fmt.Errorf("unsupported type %q", name)
	}
	var obj struct {
		Type              string          `json:"type"`
		Fields            []sparkField    `json:"fields"`
		ElementType       json.RawMessage `json:"elementType"`
		ContainsNull      *bool           `json:"containsNull"`
		KeyType           json.RawMessage `json:"keyType"`
		ValueType         json.RawMessage `json:"valueType"`
		ValueContainsNull *bool           `json:"valueContainsNull"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return schemadiff.Type{}, fmt.Errorf("invalid type JSON: %v", err)
	}
	switch obj.Type {
	case "struct":
		fields := make([]schemadiff.Field, 0, len(obj.Fields))
		for _, f := range obj.Fields {
			ff, err := sparkFieldToField(f)
			if err != nil {
				return schemadiff.Type{}, err
			}
			fields = append(fields, ff)
		}
		return schemadiff.StructType(fields...), nil
	case "array":
		elem, err := parseSparkType(obj.ElementType)
		if err != nil {
			return schemadiff.Type{}, fmt.Errorf("array element: %w", err)
		}
		return schemadiff.ArrayType(elem, obj.ContainsNull == nil || *obj.ContainsNull), nil
	case "map":
		k, err := parseSparkType(obj.KeyType)
		if err != nil {
			return schemadiff.Type{}, fmt.Errorf("map key: %w", err)
		}
		v, err := parseSparkType(obj.ValueType)
		if err != nil {
			return schemadiff.Type{}, fmt.Errorf("map value: %w", err)
		}
		return schemadiff.MapType(k, v, obj.ValueContainsNull == nil || *obj.ValueContainsNull), nil
	case "":
		return schemadiff.Type{}, fmt.Errorf("type object without \"type\": %s", truncate(string(raw), 80))
	default:
		return schemadiff.Type{}, fmt.Errorf("unsupported type %q", obj.Type)
	}
}

// describeType is a type in the DESCRIBE TABLE … AS JSON form.
type describeType struct {
	Name           string          `json:"name"`
	Precision      *int            `json:"precision"`
	Scale          *int            `json:"scale"`
	ElementType    *describeType   `json:"element_type"`
	ElementNull    *bool           `json:"element_nullable"`
	KeyType        *describeType   `json:"key_type"`
	ValueType      *describeType   `json:"value_type"`
	ValueNullable  *bool           `json:"value_nullable"`
	Fields         []describeField `json:"fields"`
	StartUnit      string          `json:"start_unit"`
	EndUnit        string          `json:"end_unit"`
	ExtraCollation string          `json:"collation"`
}

type describeField struct {
	Name     string        `json:"name"`
	Type     *describeType `json:"type"`
	Nullable *bool         `json:"nullable"`
}

func (d *describeType) toType() (schemadiff.Type, error) {
	if d == nil {
		return schemadiff.Type{}, fmt.Errorf("missing type")
	}
	switch strings.ToLower(d.Name) {
	case "decimal":
		p, s := 10, 0
		if d.Precision != nil {
			p = *d.Precision
		}
		if d.Scale != nil {
			s = *d.Scale
		}
		return schemadiff.DecimalType(p, s), nil
	case "array":
		e, err := d.ElementType.toType()
		if err != nil {
			return schemadiff.Type{}, fmt.Errorf("array element: %w", err)
		}
		return schemadiff.ArrayType(e, d.ElementNull == nil || *d.ElementNull), nil
	case "map":
		k, err := d.KeyType.toType()
		if err != nil {
			return schemadiff.Type{}, fmt.Errorf("map key: %w", err)
		}
		v, err := d.ValueType.toType()
		if err != nil {
			return schemadiff.Type{}, fmt.Errorf("map value: %w", err)
		}
		return schemadiff.MapType(k, v, d.ValueNullable == nil || *d.ValueNullable), nil
	case "struct":
		fields := make([]schemadiff.Field, 0, len(d.Fields))
		for _, f := range d.Fields {
			t, err := f.Type.toType()
			if err != nil {
				return schemadiff.Type{}, fmt.Errorf("field %q: %w", f.Name, err)
			}
			fields = append(fields, schemadiff.Field{Name: f.Name, Type: t, Nullable: f.Nullable == nil || *f.Nullable})
		}
		return schemadiff.StructType(fields...), nil
	}
	if t, ok := atomicType(d.Name); ok {
		return t, nil
	}
	return schemadiff.Type{}, fmt.Errorf("unsupported type %q", d.Name)
}

// describeJSON is the document of DESCRIBE TABLE EXTENDED … AS JSON (the fields zbrecover reads).
type describeJSON struct {
	TableName   string            `json:"table_name"`
	CatalogName string            `json:"catalog_name"`
	SchemaName  string            `json:"schema_name"`
	Namespace   []string          `json:"namespace"`
	Type        string            `json:"type"`
	Provider    string            `json:"provider"`
	Location    string            `json:"location"`
	Columns     []describeField   `json:"columns"`
	Properties  map[string]string `json:"table_properties"`
}

// parseDescribeJSON parses the json_metadata string of DESCRIBE TABLE EXTENDED … AS JSON.
func parseDescribeJSON(doc string) (describeJSON, schemadiff.Schema, error) {
	var d describeJSON
	if err := json.Unmarshal([]byte(doc), &d); err != nil {
		return d, schemadiff.Schema{}, fmt.Errorf("DESCRIBE … AS JSON: invalid document: %v", err)
	}
	if len(d.Columns) == 0 {
		return d, schemadiff.Schema{}, fmt.Errorf("DESCRIBE … AS JSON: the document lists no columns")
	}
	var s schemadiff.Schema
	for _, c := range d.Columns {
		t, err := c.Type.toType()
		if err != nil {
			return d, schemadiff.Schema{}, fmt.Errorf("DESCRIBE … AS JSON: column %q: %w", c.Name, err)
		}
		s.Fields = append(s.Fields, schemadiff.Field{Name: c.Name, Type: t, Nullable: c.Nullable == nil || *c.Nullable})
	}
	return d, s, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
