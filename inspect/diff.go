package inspect

import (
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// NoTable is Table.Source when no table schema was found: the groups are listed but not
// compared, and Table.Note says why.
const NoTable = "none"

// TablePlaceholder stands for the table's name in suggested DDL when the name is not known
// (the target was given as a storage root).
const TablePlaceholder = "<table>"

// Table is the table schema the schema groups are compared with, as reports show it.
type Table struct {
	// Source is where the schema comes from: "delta" (the Delta log at the root), "warehouse",
	// "uc" or "schema-file"; NoTable when there is none.
	Source string `json:"source"`
	// Name is the table's name (catalog.schema.table), when known.
	Name string `json:"name,omitempty"`
	// Location is the root whose Delta log was read (secrets redacted), or the schema file.
	Location string `json:"location,omitempty"`
	// Version is the Delta table version the schema is from, when the source knows it.
	Version           *int64        `json:"version,omitempty"`
	ColumnMappingMode string        `json:"column_mapping_mode,omitempty"`
	Columns           []TableColumn `json:"columns"`
	// Note explains a missing table schema.
	Note string `json:"note,omitempty"`
	// Schema is the table's schema, physical names included under column mapping.
	Schema schemadiff.Schema `json:"-"`
}

// TableColumn is one top-level column of the table.
type TableColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
	// PhysicalName is the column-mapping physical name data files use for the column.
	PhysicalName string `json:"physical_name,omitempty"`
}

// NewTable returns the Table for a schema read from source; the caller fills in the name,
// location and version it knows.
func NewTable(source string, s schemadiff.Schema) *Table {
	t := &Table{Source: source, Schema: s, Columns: make([]TableColumn, len(s.Fields))}
	for i, f := range s.Fields {
		t.Columns[i] = TableColumn{Name: f.Name, Type: f.Type.String(), Nullable: f.Nullable, PhysicalName: f.PhysicalName}
	}
	return t
}

// MissingTable returns the Table for a run without a table schema; note says why and what to
// do about it.
func MissingTable(note string) *Table {
	return &Table{Source: NoTable, Columns: []TableColumn{}, Note: note}
}

// Known reports whether t holds a table schema the groups can be compared with.
func (t *Table) Known() bool { return t != nil && t.Source != NoTable }

// describe names the schema's origin for the text report.
func (t *Table) describe() string {
	var b strings.Builder
	switch t.Source {
	case "delta":
		b.WriteString("Delta log")
		if t.Location != "" {
			b.WriteString(" at " + t.Location)
		}
	case "warehouse":
		b.WriteString("warehouse (DESCRIBE TABLE EXTENDED")
		if t.Name != "" {
			b.WriteString(" " + t.Name)
		}
		b.WriteString(")")
	case "uc":
		b.WriteString("Unity Catalog")
		if t.Name != "" {
			b.WriteString(" entry of " + t.Name)
		}
	case "schema-file":
		b.WriteString("schema file " + t.Location)
	default:
		b.WriteString(t.Source)
	}
	if t.Version != nil {
		fmt.Fprintf(&b, ", version %d", *t.Version)
	}
	fmt.Fprintf(&b, " (%s", plural(len(t.Columns), "column"))
	if t.Schema.HasColumnMapping() {
		mode := t.ColumnMappingMode
		if mode == "" {
			mode = "on"
		}
		fmt.Fprintf(&b, "; column mapping %s: files compared through physical names", mode)
	}
	b.WriteString(")")
	return b.String()
}

// Suggestion is the fix suggested for one schema group: table changes after which COPY INTO
// takes the files as they are, or a projection to load them through, with no table change.
type Suggestion struct {
	// DDL are ALTER TABLE statements, in order.
	DDL []string `json:"ddl"`
	// Projection is the source query for COPY INTO t FROM (…): every file column, cast,
	// renamed or left out as the table needs. Empty when the files load as they are.
	Projection string `json:"projection,omitempty"`
	// Omit lists the file columns the projection leaves out (the table does not have them).
	Omit []string `json:"omit,omitempty"`
	// Notes explain what the statements and the projection do not settle on their own.
	Notes []string `json:"notes,omitempty"`
	// Confirm is true when the projection contains a guess (a likely rename) the operator must
	// confirm before loading.
	Confirm bool `json:"confirm,omitempty"`
	// Complete is true when loading through the projection settles every change.
	Complete bool `json:"complete"`
}

// DiffOptions configure Report.Diff.
type DiffOptions struct {
	// TableName names the table in suggested DDL (catalog.schema.table); empty writes
	// TablePlaceholder.
	TableName string
	// Source is the folder the projection reads (FROM '…'); empty means the report's root
	// joined with its prefix.
	Source string
}

// Diff records t in the report and compares every schema group with it: each group gets the
// changes COPY INTO with mergeSchema = false meets, the worst verdict, and, when that verdict
// is not ok, the suggested fix. Columns are matched by name, and under column mapping through
// the table's physical names first (schemadiff.Diff). When t is not Known, only t is recorded
// and the groups keep no verdict.
func (r *Report) Diff(t *Table, opts DiffOptions) {
	r.Table = t
	if !t.Known() {
		return
	}
	source := opts.Source
	if source == "" {
		source = strings.TrimSuffix(r.Root, "/") + "/" + r.Prefix
	}
	for i := range r.Groups {
		g := &r.Groups[i]
		changes := schemadiff.Diff(g.Schema, t.Schema)
		v := schemadiff.Worst(changes)
		g.Verdict = &v
		g.Changes = schemadiff.Infos(changes)
		g.Suggestion = nil
		if v != schemadiff.OK {
			g.Suggestion = suggest(changes, g.Schema, opts.TableName, source)
		}
	}
}

func suggest(changes []schemadiff.Change, file schemadiff.Schema, table, source string) *Suggestion {
	name := table
	if name == "" {
		name = TablePlaceholder
	}
	s := schemadiff.Suggest(changes, name)
	out := &Suggestion{DDL: []string{}, Omit: s.Omit, Confirm: s.Confirm, Complete: s.Complete}
	unplace := func(x string) string {
		if table != "" {
			return x
		}
		return strings.ReplaceAll(x, schemadiff.QuoteIdent(TablePlaceholder), TablePlaceholder)
	}
	for _, d := range s.DDL {
		out.DDL = append(out.DDL, unplace(d))
	}
	for _, n := range s.Notes {
		out.Notes = append(out.Notes, unplace(n))
	}
	if s.NeedsProjection() {
		out.Projection = s.Select(file, source)
	}
	if table == "" && len(out.DDL) > 0 {
		out.Notes = append(out.Notes, "replace "+TablePlaceholder+" with the table's name (catalog.schema.table)")
	}
	return out
}

// Blocks reports whether the group's files cannot be loaded into the table as they are.
func (g *Group) Blocks() bool { return g.Verdict != nil && *g.Verdict == schemadiff.Blocks }

// Blocking returns the groups whose files cannot be loaded into the table as they are.
func (r *Report) Blocking() []*Group {
	var out []*Group
	for i := range r.Groups {
		if r.Groups[i].Blocks() {
			out = append(out, &r.Groups[i])
		}
	}
	return out
}

// verdictText is the group verdict as the text report words it.
func verdictText(v schemadiff.Verdict) string {
	switch v {
	case schemadiff.OK:
		return "ok: the files load as they are"
	case schemadiff.NeedsCast:
		return "needs-cast: load through the projection (or confirm with VALIDATE)"
	}
	return "blocks: COPY INTO rejects these files until the table or the load changes"
}

// writeGroupDiff writes a group's changes and suggested fix.
func writeGroupDiff(ew *errWriter, g *Group) {
	if g.Verdict == nil {
		return
	}
	ew.printf("  Against the table: %s\n", verdictText(*g.Verdict))
	for _, c := range g.Changes {
		ew.printf("    %s\n", c)
	}
	s := g.Suggestion
	if s == nil {
		return
	}
	ew.printf("  Suggested fix:\n")
	if len(s.DDL) > 0 {
		ew.printf("    Table changes:\n")
		for _, d := range s.DDL {
			ew.printf("      %s;\n", d)
		}
	}
	if s.Projection != "" {
		ew.printf("    Projection, for COPY INTO … FROM (…):\n")
		ew.printf("      %s\n", s.Projection)
		if len(s.Omit) > 0 {
			ew.printf("      It leaves out %s, which the table does not have.\n", strings.Join(s.Omit, ", "))
		}
		if s.Confirm {
			ew.printf("      It guesses a rename: confirm it before loading.\n")
		}
		if !s.Complete {
			ew.printf("      It does not settle every change on its own: see the notes.\n")
		}
	}
	for _, n := range s.Notes {
		ew.printf("    Note: %s\n", n)
	}
}
