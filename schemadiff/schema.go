package schemadiff

import (
	"fmt"
	"strings"
)

// FieldOption sets a property of a field built with NewField or Schema.Col.
type FieldOption func(*Field)

// NotNull marks a field NOT NULL (fields are nullable by default).
func NotNull(f *Field) { f.Nullable = false }

// Physical sets the Delta column-mapping physical name and id.
func Physical(name string, id int64) FieldOption {
	return func(f *Field) { f.PhysicalName, f.ID = name, id }
}

// NullCount records that the file's footer statistics report n nulls for the field.
func NullCount(n int64) FieldOption {
	return func(f *Field) { f.NullCount, f.NullCountKnown = n, true }
}

// Comment sets the column comment.
func Comment(c string) FieldOption {
	return func(f *Field) { f.Comment = c }
}

// NewField returns a nullable field with the options applied.
func NewField(name string, t Type, opts ...FieldOption) Field {
	f := Field{Name: name, Type: t, Nullable: true}
	for _, o := range opts {
		o(&f)
	}
	return f
}

// NewSchema returns a schema holding fields.
func NewSchema(fields ...Field) Schema {
	return Schema{Fields: append([]Field(nil), fields...)}
}

// Col returns a copy of s with one more column; s itself is not modified.
//
//	NewSchema().Col("id", LongType, NotNull).Col("name", StringType)
func (s Schema) Col(name string, t Type, opts ...FieldOption) Schema {
	out := make([]Field, len(s.Fields), len(s.Fields)+1)
	copy(out, s.Fields)
	return Schema{Fields: append(out, NewField(name, t, opts...))}
}

// Type returns the schema as a struct type.
func (s Schema) Type() Type { return StructType(s.Fields...) }

// String returns the schema in Spark's simple form: struct<id:bigint,name:string>.
func (s Schema) String() string { return s.Type().String() }

// Lookup returns the column named name, compared case-insensitively as Spark resolves
// columns (an exact match wins over a case-insensitive one).
func (s Schema) Lookup(name string) (Field, bool) {
	i := lookup(s.Fields, name)
	if i < 0 {
		return Field{}, false
	}
	return s.Fields[i], true
}

func lookup(fields []Field, name string) int {
	for i, f := range fields {
		if f.Name == name {
			return i
		}
	}
	for i, f := range fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// Names returns the top-level column names in order.
func (s Schema) Names() []string {
	out := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		out[i] = f.Name
	}
	return out
}

// Equal reports whether two schemas are the same logical schema: the same column names
// (exactly), types and nullability, nested members included. Metadata, comments, column-mapping
// physical names and file statistics are not compared, so a schema read from the Delta log
// equals the same table's schema from DESCRIBE or Unity Catalog.
func (s Schema) Equal(o Schema) bool {
	return fieldsEqual(s.Fields, o.Fields, func(a, b string) bool { return a == b })
}

// HasColumnMapping reports whether any field, nested ones included, carries a Delta
// column-mapping physical name.
func (s Schema) HasColumnMapping() bool { return hasPhysical(s.Fields) }

func hasPhysical(fields []Field) bool {
	for _, f := range fields {
		if f.PhysicalName != "" || hasPhysicalType(f.Type) {
			return true
		}
	}
	return false
}

func hasPhysicalType(t Type) bool {
	switch t.Kind {
	case Struct:
		return hasPhysical(t.Fields)
	case Array:
		return t.Elem != nil && hasPhysicalType(*t.Elem)
	case Map:
		return (t.Key != nil && hasPhysicalType(*t.Key)) || (t.Value != nil && hasPhysicalType(*t.Value))
	}
	return false
}

// PhysicalView returns the schema as data files store it under Delta column mapping: every
// field that has a physical name is renamed to it, nested members included. Fields without a
// physical name keep their name. s is not modified.
func (s Schema) PhysicalView() Schema {
	return Schema{Fields: mapFields(s.Fields, func(f Field) Field {
		if f.PhysicalName != "" {
			f.Name = f.PhysicalName
		}
		return f
	})}
}

// mapFields returns a copy of fields in which every field, and every struct member nested in
// their types, is replaced by fn's result. fn sees a field whose type is already mapped. The
// input is not modified; nil stays nil.
func mapFields(fields []Field, fn func(Field) Field) []Field {
	if fields == nil {
		return nil
	}
	out := make([]Field, len(fields))
	for i, f := range fields {
		f.Type = mapMembers(f.Type, fn)
		out[i] = fn(f)
	}
	return out
}

// mapMembers returns a copy of t with mapFields applied to its struct members, at any depth
// (inside arrays and maps too).
func mapMembers(t Type, fn func(Field) Field) Type {
	switch t.Kind {
	case Struct:
		t.Fields = mapFields(t.Fields, fn)
	case Array:
		if t.Elem != nil {
			e := mapMembers(*t.Elem, fn)
			t.Elem = &e
		}
	case Map:
		if t.Key != nil {
			k := mapMembers(*t.Key, fn)
			t.Key = &k
		}
		if t.Value != nil {
			v := mapMembers(*t.Value, fn)
			t.Value = &v
		}
	}
	return t
}

// SQL returns the type as Spark SQL DDL writes it: BIGINT, DECIMAL(10,2), ARRAY<INT>,
// MAP<STRING, BIGINT>, STRUCT<`a`: INT NOT NULL, `b`: STRING COMMENT 'x'>. Member names are
// always backquoted. Spark DDL cannot express non-null array elements or map values, so
// ContainsNull and ValueContainsNull are not rendered.
func (t Type) SQL() string { return sqlSyntax.render(t) }

// DDL returns the schema as a Spark column list, as CREATE TABLE and ParseDDL take it:
// "`id` BIGINT NOT NULL, `s` STRUCT<`a`: INT>". See Type.SQL for what DDL cannot express.
func (s Schema) DDL() string {
	var b strings.Builder
	for i, f := range s.Fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(QuoteIdent(f.Name))
		b.WriteString(" ")
		sqlSyntax.writeMember(&b, f)
	}
	return b.String()
}

// QuoteString returns s as a Spark SQL string literal in single quotes, with backslashes and
// single quotes escaped.
func QuoteString(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

// SplitName splits a possibly qualified name (catalog.schema.table, schema.table, name) into
// its parts. Each part may be quoted with backquotes (`my.catalog`.sales.`orders`), a doubled
// backquote standing for one inside a quoted part; spaces around an unquoted part are kept as
// written. It is the one parser of qualified names (databricks.ParseTableName checks its
// parts against Unity Catalog's rules).
func SplitName(s string) ([]string, error) {
	var parts []string
	var cur strings.Builder
	quoted, inQuotes, afterQuote := false, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuotes:
			if c == '`' {
				if i+1 < len(s) && s[i+1] == '`' {
					cur.WriteByte('`')
					i++
					continue
				}
				inQuotes, afterQuote = false, true
				continue
			}
			cur.WriteByte(c)
		case c == '.':
			parts = append(parts, cur.String())
			cur.Reset()
			quoted, afterQuote = false, false
		case c == '`' && cur.Len() > 0 && !quoted && i+1 < len(s) && s[i+1] != '.' && s[i+1] != '`':
			// Between two characters of an unquoted part a backquote is the name's own, as
			// Unity Catalog spells such a name unquoted (or`ders). One that ends a part is a
			// quote left open or closed too early, and refused.
			cur.WriteByte(c)
		case c == '`':
			if cur.Len() > 0 || quoted {
				return nil, fmt.Errorf("unexpected backquote at offset %d", i)
			}
			quoted, inQuotes = true, true
		default:
			if afterQuote {
				return nil, fmt.Errorf("unexpected %q after a quoted name at offset %d", c, i)
			}
			cur.WriteByte(c)
		}
	}
	if inQuotes {
		return nil, fmt.Errorf("unterminated backquote")
	}
	return append(parts, cur.String()), nil
}

// QuoteName quotes a possibly qualified name part by part (SplitName's parts, each
// backquoted). A name SplitName cannot read, such as a placeholder (<table>), is returned as
// it is.
func QuoteName(name string) string {
	parts, err := SplitName(strings.TrimSpace(name))
	if err != nil {
		return name
	}
	for i, p := range parts {
		parts[i] = QuoteIdent(strings.TrimSpace(p))
	}
	return strings.Join(parts, ".")
}
