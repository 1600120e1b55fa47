package schemadiff

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Delta column metadata keys the model reads.
const (
	MetaPhysicalName = "delta.columnMapping.physicalName"
	MetaColumnID     = "delta.columnMapping.id"
	MetaComment      = "comment"
)

// ParseDeltaSchema parses a Delta log schemaString (metaData.schemaString, already decoded
// from its JSON string): {"type":"struct","fields":[{"name","type","nullable","metadata"}]}.
// Types are primitive names (long, integer, decimal(p,s), timestamp_ntz, … in any accepted
// spelling) or struct / array / map objects. Field metadata is kept in Field.Metadata, and
// delta.columnMapping.physicalName / .id and comment fill PhysicalName, ID and Comment.
// Unknown types are errors that name the field.
func ParseDeltaSchema(schemaString string) (Schema, error) {
	v, err := decodeJSON([]byte(schemaString))
	if err != nil {
		return Schema{}, fmt.Errorf("delta schema: %w", err)
	}
	t, err := sparkJSONType(v, nil)
	if err != nil {
		return Schema{}, fmt.Errorf("delta schema: %w", err)
	}
	if t.Kind != Struct {
		return Schema{}, fmt.Errorf("delta schema: top level is %s, want a struct", t)
	}
	return Schema{Fields: t.Fields}, nil
}

// ParseSparkField parses one Spark StructField in JSON form,
// {"name":"c","type":"integer","nullable":true,"metadata":{}}, as Unity Catalog stores it in
// a column's type_json.
func ParseSparkField(doc []byte) (Field, error) {
	v, err := decodeJSON(doc)
	if err != nil {
		return Field{}, err
	}
	return sparkJSONField(v, nil)
}

func decodeJSON(doc []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("invalid JSON: trailing data after the document")
	}
	return v, nil
}

// MaxDepth is the deepest type nesting the schema parsers accept (a struct, array or map
// inside another counts one level).
const MaxDepth = 100

// MaxSchemaBytes is the largest schema document the parsers accept.
const MaxSchemaBytes = 16 << 20

// fieldPath is where a parser is in a schema, as a chain of names: descending a level costs one
// small allocation, and the dotted string is built only for an error message (joining strings
// level by level costs time and memory quadratic in the depth).
type fieldPath struct {
	parent *fieldPath
	name   string
	depth  int
}

func joinPath(parent *fieldPath, name string) *fieldPath {
	d := 1
	if parent != nil {
		d = parent.depth + 1
	}
	return &fieldPath{parent: parent, name: name, depth: d}
}

// String renders the path with dots, backquoting names that are not plain identifiers.
func (p *fieldPath) String() string {
	var parts []string
	for q := p; q != nil; q = q.parent {
		parts = append(parts, QuoteIdentIfNeeded(q.name))
	}
	slices.Reverse(parts)
	return strings.Join(parts, ".")
}

// tooDeep returns an error when path is deeper than MaxDepth.
func tooDeep(path *fieldPath) error {
	if path != nil && path.depth > MaxDepth {
		return fmt.Errorf("types nested deeper than %d levels%s", MaxDepth, at(path))
	}
	return nil
}

func at(path *fieldPath) string {
	if path == nil {
		return ""
	}
	return " at " + path.String()
}

// sparkJSONType parses a Spark DataType in JSON form.
func sparkJSONType(v any, path *fieldPath) (Type, error) {
	if err := tooDeep(path); err != nil {
		return Type{}, err
	}
	switch x := v.(type) {
	case string:
		t, err := ParsePrimitive(x)
		if err != nil {
			return Type{}, fmt.Errorf("%w%s", err, at(path))
		}
		return t, nil
	case map[string]any:
		kind, _ := x["type"].(string)
		switch kind {
		case "struct":
			raw, ok := x["fields"].([]any)
			if !ok && x["fields"] != nil {
				return Type{}, fmt.Errorf("struct fields%s: want an array", at(path))
			}
			fields := make([]Field, 0, len(raw))
			for _, rf := range raw {
				f, err := sparkJSONField(rf, path)
				if err != nil {
					return Type{}, err
				}
				fields = append(fields, f)
			}
			return Type{Kind: Struct, Fields: fields}, nil
		case "array":
			elem, err := sparkJSONType(x["elementType"], joinPath(path, "element"))
			if err != nil {
				return Type{}, err
			}
			return ArrayType(elem, boolOr(x["containsNull"], true)), nil
		case "map":
			key, err := sparkJSONType(x["keyType"], joinPath(path, "key"))
			if err != nil {
				return Type{}, err
			}
			val, err := sparkJSONType(x["valueType"], joinPath(path, "value"))
			if err != nil {
				return Type{}, err
			}
			return MapType(key, val, boolOr(x["valueContainsNull"], true)), nil
		case "udt":
			if sql, ok := x["sqlType"]; ok {
				return sparkJSONType(sql, path)
			}
			return Type{}, fmt.Errorf("user-defined type without sqlType%s", at(path))
		case "":
			return Type{}, fmt.Errorf("type object without \"type\"%s", at(path))
		default:
			return Type{}, fmt.Errorf("unknown type %q%s", kind, at(path))
		}
	case nil:
		return Type{}, fmt.Errorf("missing type%s", at(path))
	default:
		return Type{}, fmt.Errorf("type%s: want a name or an object, got %T", at(path), v)
	}
}

func boolOr(v any, def bool) bool {
	if b, ok := v.(bool); ok {
		return b
	}
	return def
}

func sparkJSONField(v any, parent *fieldPath) (Field, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Field{}, fmt.Errorf("field%s: want an object, got %T", at(parent), v)
	}
	name, ok := m["name"].(string)
	if !ok {
		return Field{}, fmt.Errorf("field without a name%s", at(parent))
	}
	path := joinPath(parent, name)
	t, err := sparkJSONType(m["type"], path)
	if err != nil {
		return Field{}, err
	}
	f := Field{Name: name, Type: t, Nullable: boolOr(m["nullable"], true)}
	if md, ok := m["metadata"].(map[string]any); ok && len(md) > 0 {
		f.Metadata = md
		if pn, ok := md[MetaPhysicalName].(string); ok {
			f.PhysicalName = pn
		}
		if id, ok := md[MetaColumnID]; ok {
			n, err := jsonInt(id)
			if err != nil {
				return Field{}, fmt.Errorf("field %s: %s: %w", path, MetaColumnID, err)
			}
			f.ID = n
		}
		if c, ok := md[MetaComment].(string); ok {
			f.Comment = c
		}
	}
	return f, nil
}

func jsonInt(v any) (int64, error) {
	switch x := v.(type) {
	case json.Number:
		return x.Int64()
	case float64:
		return int64(x), nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("want an integer, got %T", v)
}

// DeltaJSON returns the schema in Delta schemaString form, as ParseDeltaSchema reads it. Field
// metadata is written from Field.Metadata, with PhysicalName, ID and Comment overriding the
// corresponding keys; keys are sorted.
func (s Schema) DeltaJSON() string {
	var b bytes.Buffer
	writeDeltaType(&b, s.Type())
	return b.String()
}

// DeltaJSON returns the type in Delta schemaString form: a quoted name for primitives, an
// object for struct, array and map.
func (t Type) DeltaJSON() string {
	var b bytes.Buffer
	writeDeltaType(&b, t)
	return b.String()
}

// DeltaJSON returns the field as a Spark StructField JSON object (the Unity Catalog type_json
// form).
func (f Field) DeltaJSON() string {
	var b bytes.Buffer
	writeDeltaField(&b, f)
	return b.String()
}

func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

func writeDeltaType(b *bytes.Buffer, t Type) {
	switch t.Kind {
	case Struct:
		b.WriteString(`{"type":"struct","fields":[`)
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			writeDeltaField(b, f)
		}
		b.WriteString(`]}`)
	case Array:
		b.WriteString(`{"type":"array","elementType":`)
		writeDeltaType(b, deref(t.Elem))
		b.WriteString(`,"containsNull":` + strconv.FormatBool(t.ContainsNull) + `}`)
	case Map:
		b.WriteString(`{"type":"map","keyType":`)
		writeDeltaType(b, deref(t.Key))
		b.WriteString(`,"valueType":`)
		writeDeltaType(b, deref(t.Value))
		b.WriteString(`,"valueContainsNull":` + strconv.FormatBool(t.ValueContainsNull) + `}`)
	default:
		writeJSONString(b, deltaTypeName(t))
	}
}

func deref(t *Type) Type {
	if t == nil {
		return Type{Kind: Invalid}
	}
	return *t
}

func writeDeltaField(b *bytes.Buffer, f Field) {
	b.WriteString(`{"name":`)
	writeJSONString(b, f.Name)
	b.WriteString(`,"type":`)
	writeDeltaType(b, f.Type)
	b.WriteString(`,"nullable":` + strconv.FormatBool(f.Nullable) + `,"metadata":`)
	md := make(map[string]any, len(f.Metadata)+3)
	for k, v := range f.Metadata {
		md[k] = v
	}
	if f.PhysicalName != "" {
		md[MetaPhysicalName] = f.PhysicalName
	}
	if f.ID != 0 {
		md[MetaColumnID] = json.Number(strconv.FormatInt(f.ID, 10))
	}
	if f.Comment != "" {
		md[MetaComment] = f.Comment
	}
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(b, k)
		b.WriteByte(':')
		var vb bytes.Buffer
		enc := json.NewEncoder(&vb)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(md[k]); err != nil {
			// Metadata comes from JSON or from callers; a value JSON cannot hold is written as null.
			b.WriteString("null")
			continue
		}
		b.Write(bytes.TrimRight(vb.Bytes(), "\n"))
	}
	b.WriteString(`}}`)
}

// UCColumn is one column of a Unity Catalog table as the REST API returns it
// (GET /api/2.1/unity-catalog/tables/{full_name}, "columns"). TypeJSON is the column's Spark
// StructField JSON and is the only type field ParseUCColumns trusts.
type UCColumn struct {
	Name     string `json:"name"`
	TypeText string `json:"type_text,omitempty"`
	TypeName string `json:"type_name,omitempty"`
	TypeJSON string `json:"type_json"`
	Position int    `json:"position"`
	Nullable *bool  `json:"nullable,omitempty"`
	Comment  string `json:"comment,omitempty"`
}

// ParseUCTypeJSON parses a Unity Catalog column's type_json, a Spark StructField in JSON form.
func ParseUCTypeJSON(typeJSON string) (Field, error) {
	f, err := ParseSparkField([]byte(typeJSON))
	if err != nil {
		return Field{}, fmt.Errorf("type_json: %w", err)
	}
	return f, nil
}

// ParseUCColumns builds a schema from Unity Catalog columns, ordered by Position. Each column's
// type comes from its type_json; its name must agree with the column name (case-insensitively).
// A column's comment fills Field.Comment when type_json has none.
func ParseUCColumns(cols []UCColumn) (Schema, error) {
	sorted := append([]UCColumn(nil), cols...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Position < sorted[j].Position })
	out := make([]Field, 0, len(sorted))
	for _, c := range sorted {
		if c.TypeJSON == "" {
			return Schema{}, fmt.Errorf("column %s: no type_json", QuoteIdentIfNeeded(c.Name))
		}
		f, err := ParseUCTypeJSON(c.TypeJSON)
		if err != nil {
			return Schema{}, fmt.Errorf("column %s: %w", QuoteIdentIfNeeded(c.Name), err)
		}
		if c.Name != "" && !strings.EqualFold(c.Name, f.Name) {
			return Schema{}, fmt.Errorf("column %s: type_json names the column %q", QuoteIdentIfNeeded(c.Name), f.Name)
		}
		if f.Comment == "" {
			f.Comment = c.Comment
		}
		out = append(out, f)
	}
	return Schema{Fields: out}, nil
}
