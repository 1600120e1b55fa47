package schemadiff

import (
	"fmt"
	"strconv"
	"strings"
)

// Suggestion is how to load files whose schema differs from the table's. It offers two kinds
// of fix, which the operator chooses between:
//
//   - DDL: table changes (ALTER TABLE … ADD COLUMNS, ALTER COLUMN … DROP NOT NULL,
//     ALTER COLUMN … TYPE) after which COPY INTO takes the files as they are;
//   - Projection: a SELECT list for COPY INTO t FROM (SELECT … FROM 'path') that casts widened
//     columns, renames columns stored under another name, and leaves out (Omit) columns the
//     table does not have, with no table change.
//
// Widened columns have no DDL fix (the table already has the wider type): they need the
// projection, or VALIDATE to show that COPY INTO casts them. Notes explain what neither fix
// covers.
type Suggestion struct {
	Table      string           `json:"table"`
	DDL        []string         `json:"ddl,omitempty"`
	Projection []ProjectionItem `json:"projection,omitempty"`
	// Omit lists the file's top-level columns the projection leaves out.
	Omit  []string `json:"omit,omitempty"`
	Notes []string `json:"notes,omitempty"`
	// Confirm is true when the projection contains a guess (a likely rename) that the operator
	// must confirm before loading.
	Confirm bool `json:"confirm,omitempty"`
	// Complete is true when loading through the projection settles every change (none is left
	// that only a table change or an explicit conversion can fix).
	Complete bool `json:"complete"`
}

// ProjectionItem is one entry of a projection: Expr AS As, computed from the file's
// top-level column Column.
type ProjectionItem struct {
	Column string `json:"column"`
	Expr   string `json:"expr"`
	As     string `json:"as"`
}

// String renders the item as a SELECT list entry.
func (p ProjectionItem) String() string { return p.Expr + " AS " + QuoteIdent(p.As) }

// NeedsProjection reports whether loading through the projection differs from loading the
// files as they are.
func (s Suggestion) NeedsProjection() bool { return len(s.Projection) > 0 || len(s.Omit) > 0 }

// SelectList renders the projection over files with schema file: every file column in file
// order, as the projection says (cast, renamed or omitted), the others unchanged. It is empty
// when the projection leaves out every file column.
func (s Suggestion) SelectList(file Schema) string {
	items := make(map[string]ProjectionItem, len(s.Projection))
	for _, p := range s.Projection {
		items[p.Column] = p
	}
	omit := make(map[string]bool, len(s.Omit))
	for _, o := range s.Omit {
		omit[o] = true
	}
	var parts []string
	for _, f := range file.Fields {
		switch p, ok := items[f.Name]; {
		case ok:
			parts = append(parts, p.String())
		case omit[f.Name]:
		default:
			parts = append(parts, QuoteIdent(f.Name))
		}
	}
	return strings.Join(parts, ", ")
}

// Select renders the COPY INTO source query: SELECT <SelectList> FROM '<source>'. It returns
// "" when the projection leaves out every file column (none of them is in the table): no
// projection loads such files, and "SELECT  FROM …" is not SQL.
func (s Suggestion) Select(file Schema, source string) string {
	list := s.SelectList(file)
	if list == "" {
		return ""
	}
	return "SELECT " + list + " FROM " + QuoteString(source)
}

// Suggest turns changes (from Diff) into fixes for table, a table name such as
// catalog.schema.table (quoted part by part with backquotes). Changes built by hand, rather
// than by Diff, yield DDL and notes but no projection.
func Suggest(changes []Change, table string) Suggestion {
	qt := QuoteName(table)
	s := Suggestion{Table: table, Complete: true}
	addDDL := func(stmt string) {
		for _, d := range s.DDL {
			if d == stmt {
				return
			}
		}
		s.DDL = append(s.DDL, stmt)
	}
	var addCols []string

	type group struct {
		top     top
		changes []Change
	}
	var order []string
	groups := map[string]*group{}
	for _, c := range changes {
		t, ok := topOf(c)
		if !ok {
			continue
		}
		var key string
		switch {
		case t.file == nil:
			continue // a table column the files lack: NULL-filled, or noted below
		case t.table != nil:
			key = "t\x00" + strings.ToLower(t.table.Name)
		default:
			key = "f\x00" + t.file.Name
		}
		g := groups[key]
		if g == nil {
			g = &group{top: t}
			groups[key] = g
			order = append(order, key)
		}
		g.changes = append(g.changes, c)
	}

	for _, c := range changes {
		switch c := c.(type) {
		case MissingInFile:
			if !c.Table.Nullable {
				// The projection supplies no value for it: only the table change, or a default
				// the operator writes into the projection, settles it.
				s.Complete = false
				addDDL(fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL", qt, c.Path.SQL()))
				s.Notes = append(s.Notes, fmt.Sprintf("%s is NOT NULL in the table and missing from the file: drop the constraint, or load through a projection that supplies a value (<default> AS %s)", c.Path, QuoteIdent(c.Table.Name)))
			}
		case ExtraInFile:
			col := c.Path.SQL() + " " + c.File.Type.SQL()
			if c.File.Comment != "" {
				col += " COMMENT " + QuoteString(c.File.Comment)
			}
			addCols = append(addCols, col)
			if len(c.Path) > 1 {
				s.Notes = append(s.Notes, fmt.Sprintf("the projection drops member %s, which the table does not have; add it to the table to keep its values", c.Path))
			}
		case NullabilityChanged:
			if c.Verdict() != Blocks {
				continue
			}
			if last := c.Path[len(c.Path)-1]; len(c.Path) > 1 && (last == "element" || last == "value") {
				s.Notes = append(s.Notes, fmt.Sprintf("%s may be NULL in the file but not in the table; ALTER TABLE cannot relax that: filter or replace NULLs in a projection, or recreate the column", c.Path))
				s.Complete = false
				continue
			}
			addDDL(fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL", qt, c.Path.SQL()))
			s.Notes = append(s.Notes, fmt.Sprintf("%s may hold NULLs: drop the NOT NULL constraint, or replace NULLs in a projection (coalesce(%s, <default>))", c.Path, QuoteIdent(c.Path[len(c.Path)-1])))
			s.Complete = false
		case TypeChanged:
			if c.Widening {
				continue
			}
			s.Complete = false
			switch {
			case CanWiden(c.Table, c.File):
				addDDL(fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s TYPE %s", qt, c.Path.SQL(), c.File.SQL()))
				s.Notes = append(s.Notes, fmt.Sprintf("%s: widening the table column to %s needs type widening (ALTER TABLE %s SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true'))", c.Path, c.File.SQL(), qt))
			case c.File.Kind == TimestampNTZ && c.Table.Kind == Timestamp:
				ex := ""
				if len(c.Path) == 1 {
					ex = fmt.Sprintf(", e.g. to_utc_timestamp(%s, '<zone>') AS %s", QuoteIdent(c.Path[0]), QuoteIdent(c.Path[0]))
				}
				s.Notes = append(s.Notes, fmt.Sprintf("%s: the file holds local date-times; convert them to instants in the producer's time zone%s", c.Path, ex))
			case c.File.Kind == Timestamp && c.Table.Kind == TimestampNTZ:
				ex := ""
				if len(c.Path) == 1 {
					ex = fmt.Sprintf(", e.g. CAST(from_utc_timestamp(%s, '<zone>') AS TIMESTAMP_NTZ) AS %s", QuoteIdent(c.Path[0]), QuoteIdent(c.Path[0]))
				}
				s.Notes = append(s.Notes, fmt.Sprintf("%s: the file holds instants; convert them to local date-times in a stated time zone%s", c.Path, ex))
			default:
				s.Notes = append(s.Notes, fmt.Sprintf("%s: %s in the file cannot be loaded into %s without losing values; change the table or convert explicitly", c.Path, c.File, c.Table))
			}
		case LikelyRename:
			s.Confirm = true
		case UnsupportedInFile:
			s.Complete = false
			s.Notes = append(s.Notes, fmt.Sprintf("%s is %s in the files, which Spark cannot read: no table change or projection loads these files; rewrite them without that column (or with a supported type), then load the rewritten files", c.Path, c.File.Parquet))
		}
	}
	if len(addCols) > 0 {
		addDDL(fmt.Sprintf("ALTER TABLE %s ADD COLUMNS (%s)", qt, strings.Join(addCols, ", ")))
	}

	for _, key := range order {
		g := groups[key]
		t := g.top
		switch {
		case t.table == nil:
			s.Omit = append(s.Omit, t.file.Name)
			continue
		}
		if !needsProjection(g.changes) {
			continue
		}
		cv := converter{physical: t.physical, renames: t.renames}
		expr, ok := cv.convert(QuoteIdent(t.file.Name), t.file.Type, t.table.Type)
		if !ok {
			s.Complete = false
			continue
		}
		s.Projection = append(s.Projection, ProjectionItem{Column: t.file.Name, Expr: expr, As: t.table.Name})
	}
	return s
}

func topOf(c Change) (top, bool) {
	switch c := c.(type) {
	case MissingInFile:
		return c.top, true
	case ExtraInFile:
		return c.top, true
	case TypeChanged:
		return c.top, true
	case NullabilityChanged:
		return c.top, true
	case LikelyRename:
		return c.top, true
	case Renamed:
		return c.top, true
	case UnsupportedInFile:
		return c.top, true
	}
	return top{}, false
}

// needsProjection reports whether a column's changes call for a projection entry: a cast, a
// rename, or a nested member to drop.
func needsProjection(changes []Change) bool {
	for _, c := range changes {
		switch c := c.(type) {
		case TypeChanged:
			if c.Widening {
				return true
			}
		case Renamed, LikelyRename:
			return true
		case ExtraInFile:
			if len(c.Path) > 1 {
				return true
			}
		}
	}
	return false
}

// converter builds Spark SQL expressions that turn a value of a file type into the table type.
type converter struct {
	physical bool
	renames  bool
	vars     int
}

// convert returns an expression converting expr (of type ft) to tt, or false when no safe
// conversion exists (narrowing, unrelated types, or a NOT NULL member the file lacks).
func (cv *converter) convert(expr string, ft, tt Type) (string, bool) {
	if sameForLoad(ft, tt) {
		return expr, true
	}
	if cv.castable(ft, tt) {
		return "CAST(" + expr + " AS " + looseSQL(tt) + ")", true
	}
	switch {
	case ft.Kind == Struct && tt.Kind == Struct:
		d := differ{physical: cv.physical}
		pairs := d.match(ft.Fields, tt.Fields)
		var renames map[int]int
		if cv.renames {
			renames = likelyRenames(ft.Fields, tt.Fields, pairs)
		}
		var args []string
		for _, p := range pairs {
			if p.table < 0 {
				continue // file-only member: dropped
			}
			if j, ok := renames[p.table]; ok && p.file < 0 {
				p.file = j // a likely rename, which Suggest flags for confirmation
			}
			tf := tt.Fields[p.table]
			var v string
			if p.file < 0 {
				if !tf.Nullable {
					return "", false
				}
				v = "CAST(NULL AS " + looseSQL(tf.Type) + ")"
			} else {
				var ok bool
				v, ok = cv.convert(expr+"."+QuoteIdent(ft.Fields[p.file].Name), ft.Fields[p.file].Type, tf.Type)
				if !ok {
					return "", false
				}
			}
			args = append(args, QuoteString(tf.Name)+", "+v)
		}
		return "IF(" + expr + " IS NULL, NULL, named_struct(" + strings.Join(args, ", ") + "))", true
	case ft.Kind == Array && tt.Kind == Array && ft.Elem != nil && tt.Elem != nil:
		cv.vars++
		x := "_e" + strconv.Itoa(cv.vars)
		body, ok := cv.convert(x, *ft.Elem, *tt.Elem)
		if !ok {
			return "", false
		}
		return "transform(" + expr + ", " + x + " -> " + body + ")", true
	case ft.Kind == Map && tt.Kind == Map && ft.Key != nil && tt.Key != nil && ft.Value != nil && tt.Value != nil:
		cv.vars++
		k, v := "_k"+strconv.Itoa(cv.vars), "_v"+strconv.Itoa(cv.vars)
		out := expr
		if !sameForLoad(*ft.Key, *tt.Key) {
			body, ok := cv.convert(k, *ft.Key, *tt.Key)
			if !ok {
				return "", false
			}
			out = "transform_keys(" + out + ", (" + k + ", " + v + ") -> " + body + ")"
		}
		if !sameForLoad(*ft.Value, *tt.Value) {
			body, ok := cv.convert(v, *ft.Value, *tt.Value)
			if !ok {
				return "", false
			}
			out = "transform_values(" + out + ", (" + k + ", " + v + ") -> " + body + ")"
		}
		return out, true
	}
	return "", false
}

// sameForLoad reports whether a file type loads into the table type without conversion: the
// same kinds and decimals, and struct members with the same names (case-insensitively) in the
// same order. Nullability is checked separately.
func sameForLoad(ft, tt Type) bool {
	if ft.Kind != tt.Kind {
		return false
	}
	switch ft.Kind {
	case Decimal:
		return ft.Precision == tt.Precision && ft.Scale == tt.Scale
	case Geometry, Geography:
		return ft.SRID == tt.SRID && ft.Algorithm == tt.Algorithm
	case Unsupported:
		return false
	case Array:
		return ft.Elem != nil && tt.Elem != nil && sameForLoad(*ft.Elem, *tt.Elem)
	case Map:
		return ft.Key != nil && tt.Key != nil && ft.Value != nil && tt.Value != nil &&
			sameForLoad(*ft.Key, *tt.Key) && sameForLoad(*ft.Value, *tt.Value)
	case Struct:
		if len(ft.Fields) != len(tt.Fields) {
			return false
		}
		for i := range ft.Fields {
			if !strings.EqualFold(ft.Fields[i].Name, tt.Fields[i].Name) || !sameForLoad(ft.Fields[i].Type, tt.Fields[i].Type) {
				return false
			}
		}
	}
	return true
}

// castable reports whether CAST(x AS tt) converts ft exactly: primitives that are equal or
// widen, and structs whose members pair up position by position (Spark casts structs by
// position).
func (cv *converter) castable(ft, tt Type) bool {
	switch {
	case ft.Kind == Struct && tt.Kind == Struct:
		if len(ft.Fields) != len(tt.Fields) {
			return false
		}
		d := differ{physical: cv.physical}
		for i, p := range d.match(ft.Fields, tt.Fields) {
			if i >= len(tt.Fields) {
				break
			}
			if p.file != i || !cv.castable(ft.Fields[i].Type, tt.Fields[i].Type) {
				return false
			}
		}
		return true
	case ft.Kind == Array && tt.Kind == Array && ft.Elem != nil && tt.Elem != nil:
		return cv.castable(*ft.Elem, *tt.Elem)
	case ft.Kind == Map && tt.Kind == Map && ft.Key != nil && tt.Key != nil && ft.Value != nil && tt.Value != nil:
		return cv.castable(*ft.Key, *tt.Key) && cv.castable(*ft.Value, *tt.Value)
	case ft.Kind == Struct || ft.Kind == Array || ft.Kind == Map:
		return false
	}
	return sameForLoad(ft, tt) || LosslessCast(ft, tt)
}

// looseSQL is Type.SQL without NOT NULL on struct members: CAST cannot turn a nullable member
// into a NOT NULL one, and the table enforces its constraints when the rows are written.
func looseSQL(t Type) string {
	return mapMembers(t, func(f Field) Field {
		return Field{Name: f.Name, Type: f.Type, Nullable: true}
	}).SQL()
}
