package inspect

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/zbrecover/zbrecover/internal/textfmt"
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
	Columns []schemadiff.Column `json:"columns"`
	// Note explains a missing table schema.
	Note string `json:"note,omitempty"`
}

// NewTable returns the report's Table for a table schema. The Delta log details are left
// out: `zbrecover schema` shows them.
func NewTable(st *schemadiff.Table) *Table {
	t := &Table{Table: *st, Columns: schemadiff.Columns(st.Schema, false)}
	t.Log = nil
	if t.PartitionColumns == nil {
		t.PartitionColumns = []string{}
	}
	return t
}

// MissingTable returns the Table for a run without a table schema; note says why and what to
// do about it.
func MissingTable(note string) *Table {
	return &Table{Table: schemadiff.Table{Source: NoTable, PartitionColumns: []string{}}, Columns: []schemadiff.Column{}, Note: note}
}

// Known reports whether t holds a table schema the groups can be compared with.
func (t *Table) Known() bool { return t != nil && t.Table.Known() }

// describe names the schema's origin for the text report.
func (t *Table) describe() string {
	var b strings.Builder
	b.WriteString(t.Describe())
	fmt.Fprintf(&b, " (%s", textfmt.Plural(len(t.Columns), "column"))
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
	// AllChanges makes the report's writers list every change of every group, the ok ones
	// too, each group its own (no SameChangesAs). The report still keeps only the listed
	// changes and the counts: each group's changes are computed again as it is written.
	AllChanges bool
	// Renames are renames the operator confirmed, file column → table column (--rename
	// old=new): the group's files load column old into the table's column new, as a rename
	// the table's history proves does. Names match the table's columns case-insensitively.
	Renames map[string]string
}

// Diff records t in the report and compares every schema group with it: each group gets the
// worst verdict of the changes COPY INTO with mergeSchema = false meets, those that block the
// load or need the projection (Changes, or SameChangesAs when an earlier group has the same),
// the ok ones counted by kind (OKChanges), and, when the verdict is not ok, the suggested fix;
// the report gets the counts over all groups (ChangeTotals). Columns are matched by name, and
// under column mapping through the table's physical names first (schemadiff.Diff). When t is
// not Known, only t is recorded and the groups keep no verdict.
//
// What the report keeps grows with the changes it lists and the groups, not with the groups
// times the table's columns: a group's changes are held only while it is compared.
func (r *Report) Diff(t *Table, opts DiffOptions) {
	r.Table = t
	r.ChangeTotals = nil
	r.allChanges = opts.AllChanges
	for i := range r.Groups {
		g := &r.Groups[i]
		g.Verdict, g.Changes, g.SameChangesAs, g.OKChanges, g.Suggestion, g.against, g.load = nil, nil, "", nil, nil, nil, nil
	}
	r.unusedRenames = nil
	if !t.Known() {
		return
	}
	confirmed := confirmedRenames(opts.Renames, t.Schema)
	used := map[string]bool{} // confirmed renames some group's files use, by file column
	source := opts.Source
	if source == "" && opts.Dir.Scheme != "" {
		source = strings.TrimSuffix(opts.Dir.URL(), "/") + "/"
	}
	if source == "" {
		root, _, _ := strings.Cut(r.Root, "?") // never a redacted query in SQL
		source = strings.TrimSuffix(root, "/") + "/" + r.Prefix
	}
	var (
		totals changeTotals
		lists  = map[[32]byte]string{} // listed changes → the first group listing them
	)
	for i := range r.Groups {
		g := &r.Groups[i]
		g.TableVersion = matchVersion(g.Schema, t.History)
		g.against = &comparison{table: &t.Schema}
		if tv := g.TableVersion; tv != nil && !tv.Current && t.Schema.HasColumnMapping() {
			for _, h := range t.History {
				if h.Version == tv.Version {
					g.against.renames = historyRenames(g.Schema, h.Schema, t.Schema)
				}
			}
		}
		for old, nw := range confirmed {
			if _, ok := g.Schema.Lookup(old); ok {
				if g.against.renames == nil {
					g.against.renames = map[string]string{}
				}
				g.against.renames[old] = nw
				if g.against.confirmed == nil {
					g.against.confirmed = map[string]bool{}
				}
				g.against.confirmed[old] = true
			}
		}
		if len(g.against.renames) > 0 {
			ts := withFileNames(t.Schema, g.against.renames)
			g.against.table = &ts
		}
		changes := g.changes()
		for _, c := range changes {
			if rn, ok := c.(schemadiff.Renamed); ok && len(rn.FilePath) == 1 && g.against.confirmed[rn.FilePath[0]] {
				used[rn.FilePath[0]] = true
			}
		}
		v := schemadiff.Worst(changes)
		g.Verdict = &v
		g.Changes, g.OKChanges = summarize(changes)
		if len(g.Changes) > 0 {
			k := listKey(g.Changes)
			if first, ok := lists[k]; ok {
				g.SameChangesAs, g.Changes = first, nil
			} else {
				lists[k] = g.SchemaID
			}
		}
		totals.add(changes, g.Files)
		g.load = newLoad(changes, g.Schema, opts.TableName)
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
	r.ChangeTotals = totals.list()
	for old, nw := range opts.Renames {
		if c, ok := confirmed[old]; !ok || !used[old] {
			if ok {
				nw = c
			}
			r.unusedRenames = append(r.unusedRenames, old+"="+nw)
		}
	}
	slices.Sort(r.unusedRenames)
}

// UnusedRenames lists the confirmed renames (DiffOptions.Renames, as old=new) that no schema
// group's files use: a file column no group has, or a table column the table lacks.
func (r *Report) UnusedRenames() []string { return r.unusedRenames }

// confirmedRenames returns the confirmed renames whose table column the table has, under the
// table's spelling of its name.
func confirmedRenames(renames map[string]string, table schemadiff.Schema) map[string]string {
	out := map[string]string{}
	for old, nw := range renames {
		for _, f := range table.Fields {
			if strings.EqualFold(f.Name, nw) {
				out[old] = f.Name
			}
		}
	}
	return out
}

// comparison is the table schema a group was compared with: the table's, or a copy whose
// renamed columns carry the files' names as physical names (renames: file column → table
// column, from the table's history or confirmed by the operator).
type comparison struct {
	table     *schemadiff.Schema
	renames   map[string]string
	confirmed map[string]bool // the renames the operator confirmed, by file column
}

// Load is how a schema group's files load into the table Report.Diff compared them with,
// under the rule inspect reports: COPY INTO with mergeSchema = false, through the projection
// when the files need one.
type Load struct {
	// Blocked is true when a change blocks the load, or the projection does not settle every
	// change; Blocking lists the changes that block it and DDL, Notes the suggested fix.
	Blocked  bool
	Blocking []schemadiff.ChangeInfo
	DDL      []string
	Notes    []string
	// Select is the projection's select list, "" when the files load as they are.
	Select string
	// Empty is true when the projection would leave out every file column.
	Empty bool
}

func newLoad(changes []schemadiff.Change, file schemadiff.Schema, table string) *Load {
	if table == "" {
		table = TablePlaceholder
	}
	s := schemadiff.Suggest(changes, table)
	l := &Load{}
	if schemadiff.Worst(changes) == schemadiff.Blocks || (s.NeedsProjection() && !s.Complete) {
		l.Blocked, l.Blocking, l.DDL, l.Notes = true, schemadiff.Infos(schemadiff.Blocking(changes)), s.DDL, s.Notes
		return l
	}
	if s.NeedsProjection() {
		l.Select = s.SelectList(file)
		l.Empty = l.Select == ""
	}
	return l
}

// Load returns how the group's files load into the table, nil when the report was not
// compared with a known table schema (Report.Diff).
func (g *Group) Load() *Load { return g.load }

// changes diffs the group against what Report.Diff compared it with.
func (g *Group) changes() []schemadiff.Change {
	changes := schemadiff.Diff(g.Schema, *g.against.table)
	for j, c := range changes {
		if rn, ok := c.(schemadiff.Renamed); ok && len(rn.FilePath) == 1 && g.against.renames[rn.FilePath[0]] != "" {
			from, to := rn.FilePath[0], g.against.renames[rn.FilePath[0]]
			if g.against.confirmed[from] {
				rn.Evidence = fmt.Sprintf("the operator confirmed the rename of %s to %s (--rename %s=%s)", from, to, from, to)
			} else {
				rn.Evidence = renameEvidence(from, to, g.TableVersion)
			}
			changes[j] = rn
		}
	}
	return changes
}

// AllChanges returns every change of the group against the table, the ok ones too, in Diff
// order; nil when the group was not compared. It diffs the group again: the report keeps only
// the changes it lists and the counts.
func (g *Group) AllChanges() []schemadiff.ChangeInfo {
	if g.against == nil {
		return nil
	}
	return schemadiff.Infos(g.changes())
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
		parts = append(parts, textfmt.Time(c.Time))
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
		out.Notes = append(out.Notes, fmt.Sprintf("the group's %s %s more than %s (one per folder and %s): "+
			"load them with zbrecover reload", textfmt.Plural(total, "file"), textfmt.Either(total, "needs", "need"),
			textfmt.Plural(maxSuggestedStatements, "COPY INTO statement"), textfmt.Plural(schemadiff.MaxCopyFiles, "file")))
	case batches <= maxSuggestedStatements:
		qt := unplace(schemadiff.QuoteName(name))
		for _, b := range bs {
			out.Statements = append(out.Statements, schemadiff.CopyInto{
				Table: qt, Folder: schemadiff.JoinFolder(source, b.Folder), Select: out.Select, Files: b.Names,
			}.SQL())
		}
	default:
		out.Notes = append(out.Notes, fmt.Sprintf("the group's %s %s %s (one per folder and %s): "+
			"load them with zbrecover reload", textfmt.Plural(total, "file"), textfmt.Either(total, "needs", "need"),
			textfmt.Plural(batches, "COPY INTO statement"), textfmt.Plural(schemadiff.MaxCopyFiles, "file")))
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

// maxInlineShared is the most changes the text report repeats for a group whose changes an
// earlier group lists (SameChangesAs); a longer list is named by reference.
const maxInlineShared = 3

// maxSharedShown is the most distinct changes the text report's section across groups shows
// (all of them under AllChanges); maxGroupsNamed the most groups it names for each.
const (
	maxSharedShown  = 20
	maxGroupsNamed  = 3
	maxPathsInlined = 3
)

// writeAcrossGroups writes, for a report of several compared groups, the changes that block
// or need a cast with the groups that have them, and the ok changes counted over all groups.
func (r *Report) writeAcrossGroups(ew *textfmt.Writer, byID map[string]int) {
	if !r.Table.Known() || len(r.Groups) < 2 || len(r.ChangeTotals) == 0 {
		return
	}
	type shared struct {
		info     schemadiff.ChangeInfo
		groups   []string
		n, files int
		last     int // the last group counted
	}
	var order []*shared
	byKey := map[[32]byte]*shared{}
	for i := range r.Groups {
		g := &r.Groups[i]
		for _, c := range r.listedChanges(g, byID) {
			k := listKey([]schemadiff.ChangeInfo{c})
			sh := byKey[k]
			if sh == nil {
				sh = &shared{info: c, last: -1}
				byKey[k] = sh
				order = append(order, sh)
			}
			if sh.last == i {
				continue
			}
			sh.last = i
			sh.n++
			sh.files += g.Files
			if r.allChanges || len(sh.groups) < maxGroupsNamed {
				sh.groups = append(sh.groups, g.SchemaID)
			}
		}
	}
	// Blocking first, then by how many groups have the change, then in order of appearance.
	slices.SortStableFunc(order, func(a, b *shared) int {
		if a.info.Verdict != b.info.Verdict {
			return cmp.Compare(b.info.Verdict, a.info.Verdict)
		}
		return cmp.Compare(b.n, a.n)
	})
	ew.Printf("\nChanges across the %s:\n", countOf(len(r.Groups), "schema group"))
	for i, sh := range order {
		if i == maxSharedShown && !r.allChanges {
			ew.Printf("  and %s (blocking or needing a cast): each group lists its own\n", countOf(len(order)-i, "more distinct change"))
			break
		}
		ew.Printf("  %s\n", sh.info)
		ew.Printf("    in %s (%s): %s\n", countOf(sh.n, "group"), countOf(sh.files, "file"), namesAndMore(sh.groups, sh.n))
	}
	for _, t := range r.ChangeTotals {
		if t.Verdict == schemadiff.OK {
			ew.Printf("  ok: %s, in %s (%s)\n", t.Summary, countOf(t.Groups, "group"), countOf(t.Files, "file"))
		}
	}
	var ddl []string
	groups := map[string]int{}
	for i := range r.Groups {
		if s := r.Groups[i].Suggestion; s != nil {
			for _, d := range s.DDL {
				if groups[d] == 0 {
					ddl = append(ddl, d)
				}
				groups[d]++
			}
		}
	}
	if len(ddl) > 0 {
		ew.Printf("  Table changes the groups' fixes suggest (each group's fix below says what else it needs):\n")
	}
	for i, d := range ddl {
		if i == maxSharedShown && !r.allChanges {
			ew.Printf("    and %s\n", countOf(len(ddl)-i, "more statement"))
			break
		}
		ew.Printf("    %s: %s;\n", countOf(groups[d], "group"), d)
	}
}

// listedChanges returns the changes the report lists for g: its own, or those of the group
// SameChangesAs names (byID: schema id → index in r.Groups).
func (r *Report) listedChanges(g *Group, byID map[string]int) []schemadiff.ChangeInfo {
	if g.SameChangesAs != "" {
		if i, ok := byID[g.SameChangesAs]; ok {
			return r.Groups[i].Changes
		}
	}
	return g.Changes
}

// namesAndMore joins names, the first of n, and says how many others there are: "a, b, c and
// 1,997 more".
func namesAndMore(names []string, n int) string {
	s := strings.Join(names, ", ")
	if n > len(names) {
		s += " and " + thousands(n-len(names)) + " more"
	}
	return s
}

// changePaths returns the changes' paths, for naming them in one line.
func changePaths(cs []schemadiff.ChangeInfo) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Path.String()
	}
	return out
}

// writeGroupDiff writes a group's changes and suggested fix (byID: schema id → index in
// r.Groups).
func (r *Report) writeGroupDiff(ew *textfmt.Writer, g *Group, byID map[string]int) {
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
			ew.Printf("  Written against table version %d%s, the table's current schema.\n", tv.Version, from)
		default:
			ew.Printf("  Written against table version %d%s; the schema changed since in:\n", tv.Version, from)
			for _, c := range tv.ChangedBy {
				ew.Printf("    version %d%s\n", c.Version, commitDesc(c))
			}
		}
	}
	ew.Printf("  Against the table: %s\n", verdictText(*g.Verdict))
	if r.allChanges {
		for _, c := range g.AllChanges() {
			ew.Printf("    %s\n", c)
		}
	} else {
		list := r.listedChanges(g, byID)
		if g.SameChangesAs != "" && len(list) > maxInlineShared {
			ew.Printf("    the same %s changes that block or need a cast as schema %s, listed there: %s\n", thousands(len(list)),
				g.SameChangesAs, namesAndMore(changePaths(list[:maxPathsInlined]), len(list)))
			list = nil
		}
		for _, c := range list {
			ew.Printf("    %s\n", c)
		}
		for _, s := range g.OKChanges {
			if s.Count <= len(s.Examples) {
				for _, c := range s.Examples {
					ew.Printf("    %s\n", c)
				}
				continue
			}
			ew.Printf("    ok: %s: %s (--all-changes lists them)\n", s.Summary, namesAndMore(changePaths(s.Examples), s.Count))
		}
	}
	s := g.Suggestion
	if s == nil {
		return
	}
	ew.Printf("  Suggested fix:\n")
	if len(s.DDL) > 0 {
		ew.Printf("    Table changes:\n")
		for _, d := range s.DDL {
			ew.Printf("      %s;\n", d)
		}
	}
	if s.Select != "" {
		ew.Printf("    Projection, for COPY INTO … FROM (SELECT … FROM '<folder>'):\n")
		ew.Printf("      SELECT %s\n", s.Select)
		if len(s.Omit) > 0 {
			ew.Printf("      It leaves out %s, which the table does not have.\n", strings.Join(s.Omit, ", "))
		}
		if s.Confirm {
			ew.Printf("      It guesses a rename: confirm it before loading.\n")
		}
		if !s.Complete {
			ew.Printf("      It does not settle every change on its own: see the notes.\n")
		}
	}
	if len(s.Statements) > 0 {
		ew.Printf("    To load this group's files, and only them (FILES lists cut here; -o json has them whole):\n")
		for _, st := range s.Statements {
			ew.Printf("      %s;\n", shortFilesList(st, 2))
		}
	}
	for _, n := range s.Notes {
		ew.Printf("    Note: %s\n", n)
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
			return st[:cut] + ", … " + textfmt.Count(n-keep) + " more" + st[j:]
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
	if len(file.Fields) != len(t.Fields) {
		// Diff pairs columns one to one: a column left over on either side is a change.
		return false
	}
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
