package keyfile

import (
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// ErrColumn is wrapped by the errors of a key column that a file does not hold, or holds in a
// form that is not a key (a list, a map, a struct, a floating-point number).
var ErrColumn = errors.New("key column not found")

// ErrCast is wrapped by the errors of a key column whose file type does not cast exactly to
// the table's type, and of a value that does not fit the table's type.
var ErrCast = errors.New("key column does not cast to the table's type")

// Column is one key column as the table has it.
type Column struct {
	// Name is the table's name for the column; the keys file records it.
	Name string
	// Type is the table's type of the column: the values read are cast to it.
	Type schemadiff.Type
}

// Path is where a key column is in a file: the names from a top-level column down to the
// column itself ({"id"}; {"col-5f3a…"} under Delta column mapping; {"payload", "id"} for a
// struct member). Each name is matched exactly, else case-insensitively, as Spark resolves
// columns; a case-insensitive match must be unique.
type Path []string

// String renders the path as Spark SQL writes it: names joined by dots, each backquoted when
// it is not a plain identifier.
func (p Path) String() string {
	parts := make([]string, len(p))
	for i, n := range p {
		parts[i] = schemadiff.QuoteIdentIfNeeded(n)
	}
	return strings.Join(parts, ".")
}

// Spec says which columns make the key and where the files of each schema group hold them.
type Spec struct {
	// Columns is the key, in order: k0, k1, … in the keys file.
	Columns []Column
	// Groups maps a schema group id to the path of each key column in that group's files, in
	// the order of Columns: a renamed column (--rename) or a column-mapping physical name
	// (col-…) is found there. A group without an entry finds each key column under its
	// table name.
	Groups map[string][]Path
}

// Source is one Parquet file to read.
type Source struct {
	// Key is the object's key, relative to the backend root; the keys file records it as the
	// file's name.
	Key string
	// Size is the object's size in bytes, as listed: the footer read is placed from it.
	Size int64
	// Group is the file's schema group id; the keys file records it.
	Group string
	// FooterLength is the length of the file's thrift footer when it is known (inspect's
	// File.FooterBytes): the footer read then fetches exactly the footer and its 8-byte
	// trailer. 0 means unknown: the footer read fetches Options.TailSize bytes.
	FooterLength int64
	// Footer is the file's parsed footer when the caller already holds it: no footer read is
	// made. Its source file size is set to Size.
	Footer *metadata.FileMetaData
}

// check validates the spec: at least one column, distinct names (case-insensitive), key
// types, and paths of the right number for each group.
func (s Spec) check() error {
	if len(s.Columns) == 0 {
		return errors.New("keyfile: no key column")
	}
	for i, c := range s.Columns {
		if c.Name == "" {
			return fmt.Errorf("keyfile: key column %d has no name", i)
		}
		for _, d := range s.Columns[:i] {
			if strings.EqualFold(c.Name, d.Name) {
				return fmt.Errorf("keyfile: key column %s is named twice", schemadiff.QuoteIdent(c.Name))
			}
		}
		if !keyKind(c.Type.Kind) {
			return fmt.Errorf("keyfile: key column %s: the table's type %s is not supported for a key (boolean, integers, decimal, string, binary, date, timestamp, timestamp_ntz are)",
				schemadiff.QuoteIdent(c.Name), c.Type)
		}
		if c.Type.Kind == schemadiff.Decimal && (c.Type.Precision < 1 || c.Type.Precision > 38 || c.Type.Scale < 0 || c.Type.Scale > c.Type.Precision) {
			return fmt.Errorf("keyfile: key column %s: invalid type %s", schemadiff.QuoteIdent(c.Name), c.Type)
		}
	}
	for g, paths := range s.Groups {
		if len(paths) != len(s.Columns) {
			return fmt.Errorf("keyfile: schema group %s: %d paths for %d key columns", g, len(paths), len(s.Columns))
		}
		for i, p := range paths {
			if len(p) == 0 {
				return fmt.Errorf("keyfile: schema group %s: key column %s has an empty path", g, schemadiff.QuoteIdent(s.Columns[i].Name))
			}
		}
	}
	return nil
}

// paths returns where the files of group hold the key columns.
func (s Spec) paths(group string) []Path {
	if p, ok := s.Groups[group]; ok {
		return p
	}
	out := make([]Path, len(s.Columns))
	for i, c := range s.Columns {
		out[i] = Path{c.Name}
	}
	return out
}

// keyKind reports whether a table column of kind k can be a key of the keys file.
func keyKind(k schemadiff.Kind) bool {
	switch k {
	case schemadiff.Boolean, schemadiff.Byte, schemadiff.Short, schemadiff.Integer, schemadiff.Long,
		schemadiff.Decimal, schemadiff.String, schemadiff.Binary, schemadiff.Date,
		schemadiff.Timestamp, schemadiff.TimestampNTZ:
		return true
	}
	return false
}

// resolve finds path in a file's Spark schema: the exact names along it, and the type and
// nullability of the column at its end. Every step but the last must be a struct; the last
// must be a primitive column.
func resolve(fields []schemadiff.Field, path Path) (names []string, f schemadiff.Field, err error) {
	for i, part := range path {
		j, err := lookup(fields, part)
		if err != nil {
			return nil, f, fmt.Errorf("%w: %s: %w", ErrColumn, path, err)
		}
		f = fields[j]
		names = append(names, f.Name)
		if i == len(path)-1 {
			break
		}
		if f.Type.Kind != schemadiff.Struct {
			return nil, f, fmt.Errorf("%w: %s: %s is a %s, not a struct", ErrColumn, path, Path(names), f.Type)
		}
		fields = f.Type.Fields
	}
	switch f.Type.Kind {
	case schemadiff.Struct, schemadiff.Array, schemadiff.Map, schemadiff.Variant:
		return nil, f, fmt.Errorf("%w: %s is a %s, not a column a key can be made of", ErrColumn, path, f.Type)
	}
	return names, f, nil
}

// lookup returns the index of the field named name: the exact match, else the only
// case-insensitive one.
func lookup(fields []schemadiff.Field, name string) (int, error) {
	for i, f := range fields {
		if f.Name == name {
			return i, nil
		}
	}
	found := -1
	for i, f := range fields {
		if strings.EqualFold(f.Name, name) {
			if found >= 0 {
				return -1, fmt.Errorf("%s is ambiguous: the file has %s and %s",
					schemadiff.QuoteIdent(name), schemadiff.QuoteIdent(fields[found].Name), schemadiff.QuoteIdent(f.Name))
			}
			found = i
		}
	}
	if found < 0 {
		return -1, fmt.Errorf("the file has no column %s", schemadiff.QuoteIdent(name))
	}
	return found, nil
}
