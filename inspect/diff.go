package inspect

import (
	"fmt"
	"path"
	"strings"

	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// NoTable is Table.Source when no table schema was found: the groups are listed but not
// compared, and Table.Note says why.
const NoTable = schemadiff.SourceNone

// TablePlaceholder stands for the table's name in suggested SQL when the name is not known
// (the target was given as a storage root).
const TablePlaceholder = "<table>"

// maxSuggestedStatements is the most COPY INTO statements a group's suggestion spells out;
// a group that needs more is pointed at reload, which runs them.
const maxSuggestedStatements = 3

// Table is the table schema the schema groups are compared with, as reports show it.
type Table struct {
	schemadiff.Table
	Columns []TableColumn `json:"columns"`
	// Note explains a missing table schema.
	Note string `json:"note,omitempty"`
}

// TableColumn is one top-level column of the table.
type TableColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
	// PhysicalName is the column-mapping physical name data files use for the column.
	PhysicalName string `json:"physical_name,omitempty"`
}

// NewTable returns the report's Table for a table schema. The Delta log details are left
// out: `zbrecover schema` shows them.
func NewTable(st *schemadiff.Table) *Table {
	t := &Table{Table: *st, Columns: make([]TableColumn, len(st.Schema.Fields))}
	t.Log = nil
	if t.PartitionColumns == nil {
		t.PartitionColumns = []string{}
	}
	for i, f := range st.Schema.Fields {
		t.Columns[i] = TableColumn{Name: f.Name, Type: f.Type.String(), Nullable: f.Nullable, PhysicalName: f.PhysicalName}
	}
	return t
}

// MissingTable returns the Table for a run without a table schema; note says why and what to
// do about it.
func MissingTable(note string) *Table {
	return &Table{Table: schemadiff.Table{Source: NoTable, PartitionColumns: []string{}}, Columns: []TableColumn{}, Note: note}
}

// Known reports whether t holds a table schema the groups can be compared with.
func (t *Table) Known() bool { return t != nil && t.Table.Known() }

// describe names the schema's origin for the text report.
func (t *Table) describe() string {
	var b strings.Builder
	b.WriteString(t.Describe())
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
	// Select is the projection's select list for COPY INTO t FROM (SELECT … FROM '<folder>'):
	// every file column, cast, renamed or left out as the table needs. Empty when the files
	// load as they are.
	Select string `json:"select,omitempty"`
	// Source is the fallback folder the files are in (a URL without secrets).
	Source string `json:"source"`
	// Statements are the COPY INTO statements that load this group's files, and only them
	// (one per folder, FILES of at most 1000 names), to run after the DDL. Empty when the
	// group needs more than a few statements: reload runs those.
	Statements []string `json:"statements"`
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
	// TableName names the table in suggested SQL (catalog.schema.table); empty writes
	// TablePlaceholder.
	TableName string
	// Dir is the fallback folder's storage location (the root joined with the prefix). SQL
	// names Dir.URL(), never a display string: a SAS or other secret never goes into SQL.
	Dir storage.Location
	// Source, when set, replaces Dir as the folder the statements read (a staging volume).
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
	if source == "" && opts.Dir.Scheme != "" {
		source = strings.TrimSuffix(opts.Dir.URL(), "/") + "/"
	}
	if source == "" {
		root, _, _ := strings.Cut(r.Root, "?") // never a redacted query in SQL
		source = strings.TrimSuffix(root, "/") + "/" + r.Prefix
	}
	for i := range r.Groups {
		g := &r.Groups[i]
		g.TableVersion = matchVersion(g.Schema, t.History)
		tableSchema := t.Schema
		var renames map[string]string
		if tv := g.TableVersion; tv != nil && !tv.Current && t.Schema.HasColumnMapping() {
			for _, h := range t.History {
				if h.Version == tv.Version {
					renames = historyRenames(g.Schema, h.Schema, t.Schema)
				}
			}
			if len(renames) > 0 {
				tableSchema = withFileNames(t.Schema, renames)
			}
		}
		changes := schemadiff.Diff(g.Schema, tableSchema)
		for j, c := range changes {
			if rn, ok := c.(schemadiff.Renamed); ok && len(rn.FilePath) == 1 && renames[rn.FilePath[0]] != "" {
				rn.Evidence = renameEvidence(rn.FilePath[0], renames[rn.FilePath[0]], g.TableVersion)
				changes[j] = rn
			}
		}
		v := schemadiff.Worst(changes)
		g.Verdict = &v
		g.Changes = schemadiff.Infos(changes)
		g.Suggestion = nil
		if v != schemadiff.OK {
			var files []File
			batches := 0
			if g.Files <= maxKeptPerGroup {
				files = r.GroupFiles(g.SchemaID)
			} else if !r.streamed {
				// Too many for the statements: count them without copying the files.
				batches = r.countBatches(g.SchemaID)
			}
			g.Suggestion = suggest(changes, g.Schema, opts.TableName, source, files, g.Files, batches)
		}
	}
}

// renameEvidence says which commit renamed a column the files still have under its old name.
func renameEvidence(from, to string, tv *TableVersion) string {
	for _, c := range tv.ChangedBy {
		if f, ok := c.Schema.Lookup(to); ok && f.PhysicalName != "" {
			return fmt.Sprintf("the table renamed %s to %s in version %d%s, keeping its column-mapping physical name %s",
				from, to, c.Version, commitDesc(c), f.PhysicalName)
		}
	}
	return fmt.Sprintf("the table renamed %s to %s after version %d, keeping its column-mapping physical name", from, to, tv.Version)
}

// commitDesc describes a commit for messages: " (RENAME COLUMN by ann, 2026-01-02T10:00:00Z)".
func commitDesc(c schemadiff.SchemaVersion) string {
	var parts []string
	if c.Operation != "" {
		op := c.Operation
		if c.User != "" {
			op += " by " + c.User
		}
		parts = append(parts, op)
	} else if c.User != "" {
		parts = append(parts, "by "+c.User)
	}
	if !c.Time.IsZero() {
		parts = append(parts, rfc3339(c.Time))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// suggest builds a group's suggestion; files are the group's files in key order, all of its
// total of them, or none when they are more than the suggested statements take: then
// batches is their number of COPY INTO statements, 0 when not known (a streamed report).
func suggest(changes []schemadiff.Change, file schemadiff.Schema, table, source string, files []File, total, batches int) *Suggestion {
	name := table
	if name == "" {
		name = TablePlaceholder
	}
	s := schemadiff.Suggest(changes, name)
	out := &Suggestion{DDL: []string{}, Source: source, Statements: []string{}, Omit: s.Omit, Confirm: s.Confirm, Complete: s.Complete}
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
		out.Select = s.SelectList(file)
	}
	if s.NeedsProjection() && out.Select == "" {
		return out // nothing of the files would be loaded: no statement
	}
	var bs []Batch
	if len(files) > 0 || total == 0 {
		total = len(files)
		bs = Batches(files, schemadiff.MaxCopyFiles)
		batches = len(bs)
	}
	switch {
	case batches == 0 && total > 0:
		out.Notes = append(out.Notes, fmt.Sprintf("the group's %s need more than %d COPY INTO statements (one per folder and %d files): "+
			"load them with zbrecover reload", plural(total, "file"), maxSuggestedStatements, schemadiff.MaxCopyFiles))
	case batches <= maxSuggestedStatements:
		qt := unplace(schemadiff.QuoteQualified(name))
		for _, b := range bs {
			out.Statements = append(out.Statements, schemadiff.CopyInto{
				Table: qt, Folder: joinFolder(source, b.Folder), Select: out.Select, Files: b.Names,
			}.SQL())
		}
	default:
		out.Notes = append(out.Notes, fmt.Sprintf("the group's %s need %d COPY INTO statements (one per folder and %d files): "+
			"load them with zbrecover reload", plural(total, "file"), batches, schemadiff.MaxCopyFiles))
	}
	if table == "" && (len(out.DDL) > 0 || len(out.Statements) > 0) {
		out.Notes = append(out.Notes, "replace "+TablePlaceholder+" with the table's name (catalog.schema.table)")
	}
	return out
}

// Batch is a set of files of one folder that one COPY INTO … FILES = (…) statement names.
type Batch struct {
	// Folder is the files' folder relative to the fallback prefix ("" for the prefix itself,
	// else "2024/05/" with a trailing slash).
	Folder string
	// Names are the files' names relative to Folder, in key order.
	Names []string
	Files []File
}

// Batches splits files (in key order) into batches of at most max files of one folder each.
func Batches(files []File, max int) []Batch {
	var out []Batch
	for _, f := range files {
		dir, name := path.Split(f.Key)
		if n := len(out); n == 0 || out[n-1].Folder != dir || len(out[n-1].Names) >= max {
			out = append(out, Batch{Folder: dir})
		}
		b := &out[len(out)-1]
		b.Names = append(b.Names, name)
		b.Files = append(b.Files, f)
	}
	return out
}

// countBatches counts the batches Batches would make of a group's files (Report.Files is
// in key order), without copying them.
func (r *Report) countBatches(id string) int {
	n, inBatch, folder := 0, 0, ""
	for i := range r.Files {
		f := &r.Files[i]
		if f.SchemaID != id || f.Unreadable() {
			continue
		}
		dir, _ := path.Split(f.Key)
		if n == 0 || dir != folder || inBatch >= schemadiff.MaxCopyFiles {
			n, inBatch, folder = n+1, 0, dir
		}
		inBatch++
	}
	return n
}

// joinFolder joins a folder URL and a relative folder ("" or "a/b/").
func joinFolder(base, rel string) string {
	if rel == "" {
		return base
	}
	return strings.TrimSuffix(base, "/") + "/" + rel
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
	if tv := g.TableVersion; tv != nil {
		from := ""
		if tv.FromCheckpoint {
			from = " (known from its checkpoint)"
		}
		switch {
		case tv.Current:
			ew.printf("  Written against table version %d%s, the table's current schema.\n", tv.Version, from)
		default:
			ew.printf("  Written against table version %d%s; the schema changed since in:\n", tv.Version, from)
			for _, c := range tv.ChangedBy {
				ew.printf("    version %d%s\n", c.Version, commitDesc(c))
			}
		}
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
	if s.Select != "" {
		ew.printf("    Projection, for COPY INTO … FROM (SELECT … FROM '<folder>'):\n")
		ew.printf("      SELECT %s\n", s.Select)
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
	if len(s.Statements) > 0 {
		ew.printf("    To load this group's files, and only them (FILES lists cut here; -o json has them whole):\n")
		for _, st := range s.Statements {
			ew.printf("      %s;\n", shortFilesList(st, 2))
		}
	}
	for _, n := range s.Notes {
		ew.printf("    Note: %s\n", n)
	}
}

// shortFilesList returns the statement st with its FILES = (…) list cut to its first keep
// names and a count of the others, for text output. A statement without such a list, or
// with one it cannot read, is returned as it is.
func shortFilesList(st string, keep int) string {
	const open = " FILES = ("
	i := strings.Index(st, open)
	if i < 0 {
		return st
	}
	j := i + len(open)
	n, cut := 0, -1
	for {
		if j >= len(st) || st[j] != '\'' {
			return st
		}
		// A quoted name: '' is an escaped quote.
		k := j + 1
		for {
			q := strings.IndexByte(st[k:], '\'')
			if q < 0 {
				return st
			}
			k += q + 1
			if k < len(st) && st[k] == '\'' {
				k++
				continue
			}
			break
		}
		n++
		if n == keep {
			cut = k
		}
		j = k
		switch {
		case strings.HasPrefix(st[j:], ", "):
			j += 2
		case strings.HasPrefix(st[j:], ")"):
			if cut < 0 || n == keep {
				return st
			}
			return st[:cut] + fmt.Sprintf(", … %d more", n-keep) + st[j:]
		default:
			return st
		}
	}
}

// TableVersion is the table version a schema group's files were written against: the newest
// version of the table's history whose schema is the group's (the same columns and types; under
// column mapping, through physical names), and the commits after it that changed the schema.
type TableVersion struct {
	Version int64 `json:"version"`
	// FromCheckpoint is true when that schema is known from a checkpoint at Version only.
	FromCheckpoint bool `json:"from_checkpoint,omitempty"`
	// Current is true when Version's schema is still the table's.
	Current bool `json:"current"`
	// ChangedBy are the commits after Version that changed the table's schema, oldest first:
	// the first is the one the files stopped matching at.
	ChangedBy []schemadiff.SchemaVersion `json:"changed_by"`
}

// sameSchema reports whether files of schema file were written with table schema t: Diff
// finds nothing but names that differ by case, physical names and nullability.
func sameSchema(file, t schemadiff.Schema) bool {
	for _, c := range schemadiff.Diff(file, t, schemadiff.NoRenameGuess()) {
		switch c.Kind() {
		case schemadiff.KindCaseDiffers, schemadiff.KindRenamed, schemadiff.KindNullabilityChanged:
		default:
			return false
		}
	}
	return true
}

// matchVersion finds the newest schema of history (oldest first) that file equals.
func matchVersion(file schemadiff.Schema, history []schemadiff.SchemaVersion) *TableVersion {
	for i := len(history) - 1; i >= 0; i-- {
		if !sameSchema(file, history[i].Schema) {
			continue
		}
		tv := &TableVersion{Version: history[i].Version, FromCheckpoint: history[i].FromCheckpoint,
			Current: i == len(history)-1, ChangedBy: []schemadiff.SchemaVersion{}}
		tv.ChangedBy = append(tv.ChangedBy, history[i+1:]...)
		return tv
	}
	return nil
}

// historyRenames returns the top-level file columns that the table's history shows renamed:
// file column → table column, for a file column named as in version v's schema whose
// column-mapping physical name the table now gives another name (RENAME COLUMN keeps the
// physical name). A dropped column and a new one have different physical names: no rename.
func historyRenames(file schemadiff.Schema, v schemadiff.Schema, table schemadiff.Schema) map[string]string {
	out := map[string]string{}
	for _, f := range file.Fields {
		if _, ok := table.Lookup(f.Name); ok {
			continue
		}
		old, ok := v.Lookup(f.Name)
		if !ok || old.PhysicalName == "" {
			continue
		}
		for _, t := range table.Fields {
			if t.PhysicalName == old.PhysicalName && !strings.EqualFold(t.Name, f.Name) {
				out[f.Name] = t.Name
			}
		}
	}
	return out
}

// withFileNames returns table with the physical name of each renamed column set to the file
// column's name, so that Diff pairs them as Renamed.
func withFileNames(table schemadiff.Schema, renames map[string]string) schemadiff.Schema {
	out := schemadiff.Schema{Fields: append([]schemadiff.Field(nil), table.Fields...)}
	for fileName, tableName := range renames {
		for i := range out.Fields {
			if out.Fields[i].Name == tableName {
				out.Fields[i].PhysicalName = fileName
			}
		}
	}
	return out
}
