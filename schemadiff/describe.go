package schemadiff

import (
	"encoding/json"
	"fmt"
)

// DescribeTable is the part of a DESCRIBE TABLE EXTENDED … AS JSON document that zbrecover
// uses.
type DescribeTable struct {
	TableName        string            `json:"table_name"`
	CatalogName      string            `json:"catalog_name"`
	SchemaName       string            `json:"schema_name"`
	Type             string            `json:"type"`
	Provider         string            `json:"provider"`
	Location         string            `json:"location"`
	PartitionColumns []string          `json:"partition_columns"`
	TableProperties  map[string]string `json:"table_properties"`
	Schema           Schema            `json:"-"`
}

// ParseDescribeJSON parses the json_metadata document of DESCRIBE TABLE EXTENDED t AS JSON
// and returns the table's columns. See ParseDescribeTable.
func ParseDescribeJSON(doc []byte) (Schema, error) {
	t, err := ParseDescribeTable(doc)
	if err != nil {
		return Schema{}, err
	}
	return t.Schema, nil
}

// ParseDescribeTable parses the json_metadata document of DESCRIBE TABLE EXTENDED t AS JSON.
// Column types are objects: {"name":"bigint"}, {"name":"decimal","precision":p,"scale":s},
// {"name":"varchar","length":n}, {"name":"timestamp_ltz"}, {"name":"array","element_type":…,
// "element_nullable":b}, {"name":"map","key_type":…,"value_type":…,"value_nullable":b},
// {"name":"struct","fields":[{"name","type","nullable","comment"}]}; both simpleString (int)
// and JSON (integer) spellings are accepted. Unknown or unsupported types (interval, …) are
// errors that name the column.
func ParseDescribeTable(doc []byte) (*DescribeTable, error) {
	v, err := decodeJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("describe json: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("describe json: want an object, got %T", v)
	}
	cols, ok := m["columns"].([]any)
	if !ok {
		return nil, fmt.Errorf("describe json: no \"columns\" array (is this the output of DESCRIBE TABLE EXTENDED … AS JSON?)")
	}
	// Table properties may hold non-string values in some versions; read them leniently.
	props := map[string]string{}
	if tp, ok := m["table_properties"].(map[string]any); ok {
		for k, pv := range tp {
			props[k] = fmt.Sprint(pv)
		}
		delete(m, "table_properties")
	}
	delete(m, "columns")
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("describe json: %w", err)
	}
	var out DescribeTable
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("describe json: %w", err)
	}
	out.TableProperties = props
	fields := make([]Field, 0, len(cols))
	for _, c := range cols {
		f, err := describeJSONField(c, nil)
		if err != nil {
			return nil, fmt.Errorf("describe json: %w", err)
		}
		fields = append(fields, f)
	}
	out.Schema = Schema{Fields: fields}
	return &out, nil
}

func describeJSONField(v any, parent *fieldPath) (Field, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Field{}, fmt.Errorf("column%s: want an object, got %T", at(parent), v)
	}
	name, ok := m["name"].(string)
	if !ok {
		return Field{}, fmt.Errorf("column without a name%s", at(parent))
	}
	path := joinPath(parent, name)
	t, err := describeJSONType(m["type"], path)
	if err != nil {
		return Field{}, err
	}
	f := Field{Name: name, Type: t, Nullable: boolOr(m["nullable"], true)}
	if c, ok := m["comment"].(string); ok {
		f.Comment = c
	}
	return f, nil
}

func describeJSONType(v any, path *fieldPath) (Type, error) {
	if err := tooDeep(path); err != nil {
		return Type{}, err
	}
	switch x := v.(type) {
	case string:
		// Not the documented form, but a bare name is unambiguous.
		t, err := ParseType(x)
		if err != nil {
			return Type{}, fmt.Errorf("%w%s", err, at(path))
		}
		return t, nil
	case map[string]any:
		name, _ := x["name"].(string)
		switch name {
		case "struct":
			raw, _ := x["fields"].([]any)
			fields := make([]Field, 0, len(raw))
			for _, rf := range raw {
				f, err := describeJSONField(rf, path)
				if err != nil {
					return Type{}, err
				}
				fields = append(fields, f)
			}
			return Type{Kind: Struct, Fields: fields}, nil
		case "array":
			elem, err := describeJSONType(x["element_type"], joinPath(path, "element"))
			if err != nil {
				return Type{}, err
			}
			return ArrayType(elem, boolOr(x["element_nullable"], true)), nil
		case "map":
			key, err := describeJSONType(x["key_type"], joinPath(path, "key"))
			if err != nil {
				return Type{}, err
			}
			val, err := describeJSONType(x["value_type"], joinPath(path, "value"))
			if err != nil {
				return Type{}, err
			}
			return MapType(key, val, boolOr(x["value_nullable"], true)), nil
		case "decimal", "dec", "numeric":
			p, s := int64(10), int64(0)
			var err error
			if pv, ok := x["precision"]; ok {
				if p, err = jsonInt(pv); err != nil {
					return Type{}, fmt.Errorf("decimal precision%s: %w", at(path), err)
				}
			}
			if sv, ok := x["scale"]; ok {
				if s, err = jsonInt(sv); err != nil {
					return Type{}, fmt.Errorf("decimal scale%s: %w", at(path), err)
				}
			}
			t, err := checkDecimal(int(p), int(s))
			if err != nil {
				return Type{}, fmt.Errorf("%w%s", err, at(path))
			}
			return t, nil
		case "":
			return Type{}, fmt.Errorf("type object without \"name\"%s", at(path))
		default:
			// Scalars, including {"name":"string","collation":…} and {"name":"varchar","length":n}:
			// extra keys do not change the Spark type the model needs.
			t, err := ParsePrimitive(name)
			if err != nil {
				return Type{}, fmt.Errorf("%w%s", err, at(path))
			}
			return t, nil
		}
	case nil:
		return Type{}, fmt.Errorf("missing type%s", at(path))
	default:
		return Type{}, fmt.Errorf("type%s: want an object, got %T", at(path), v)
	}
}
