package reload

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/sqlstmt"
	"github.com/zbrecover/zbrecover/storage"
)

// ErrBlocked is returned (wrapped) when some schema group cannot be loaded into the table as
// it is: the operator must change the table (the error carries the suggested DDL) or confirm
// a rename. Nothing was executed.
var ErrBlocked = errors.New("the files' schema blocks the load")

// PlanOptions configure NewPlan.
type PlanOptions struct {
	// BatchFiles is the most files one statement names (at most, and by default, 1000).
	BatchFiles int
	// Renames are confirmed renames, file column → table column (--rename old=new).
	Renames map[string]string
	// Source, when set, is the folder URL the statements read instead of Dir (a staging
	// location holding the same relative keys).
	Source string
	// Skip are fallback keys (relative to the prefix) that must not be planned: files a
	// journal shows as loaded or possibly loaded.
	Skip map[string]string
	// Refuse are fallback keys (relative to the prefix) left behind with the reason: files a
	// run of another journal may have loaded.
	Refuse map[string]string
	// Staged says that Source is a staging location: each file is loaded under its staged
	// path (StagedPath, which needs TableID), glob characters made safe. From the fallback
	// folder itself files whose names hold glob characters are left behind.
	Staged  bool
	TableID string
	// Redo counts, by fallback key (the prefix included, as the journal keys files), how
	// often an undo took back the rows of a file (journal.TableFacts.Undone): a file loaded
	// again is staged under a path of its redo generation, or, read from the fallback folder
	// itself, loaded in a batch of its own with COPY INTO forced on exactly its FILES (the
	// undo proved its rows gone; COPY INTO would skip it there).
	Redo map[string]int
}

// Batch is one COPY INTO statement's work: files of one schema group in one folder.
type Batch struct {
	N      int    // 1-based, in plan order
	Group  string // schema id
	Folder string // relative to the fallback prefix: "" or "2024/05/01/"
	Files  []inspect.File
	// ExpectedRows is the sum of the files' footer row counts.
	ExpectedRows int64
	// Select is the projection's select list, "" when the files load as they are.
	Select string
	// SQL loads the batch; ValidateSQL checks it (VALIDATE ALL) without writing.
	SQL         string
	ValidateSQL string
	// Redo counts the batch's files of undone batches, loaded again; Forced is set when
	// they are read from the fallback folder, with COPY INTO's force on exactly these FILES.
	Redo   int
	Forced bool
}

// Keys returns the batch's keys relative to the fallback prefix.
func (b Batch) Keys() []string {
	out := make([]string, len(b.Files))
	for i, f := range b.Files {
		out[i] = f.Key
	}
	return out
}

// BlockedGroup is a schema group that cannot be loaded as the table is.
type BlockedGroup struct {
	Group   string                  `json:"group"`
	Files   int                     `json:"files"`
	Changes []schemadiff.ChangeInfo `json:"changes"`
	DDL     []string                `json:"ddl"`
	Notes   []string                `json:"notes"`
}

// Plan is everything a reload will send, computed without I/O.
type Plan struct {
	Table databricks.TableName
	// Prefix is the fallback folder under the table root; Dir its location (SQL names
	// Dir.URL() or PlanOptions.Source).
	Prefix string
	Dir    storage.Location
	Source string
	// Batches in order: by group (in report order), then by folder and key.
	Batches []Batch
	// Unreadable files are left behind: never put in a batch.
	Unreadable []inspect.File
	// Skipped are files a journal already shows loaded (or possibly loaded), with why.
	Skipped []SkippedFile
	// Refused are files no statement may name as they are (glob characters in a name
	// loaded from the fallback folder, a key outside it), with why: left behind.
	Refused []SkippedFile
	// Blocked groups; NewPlan returns ErrBlocked when there are any.
	Blocked []BlockedGroup
}

// SkippedFile is a file left out of the plan because of an earlier run.
type SkippedFile struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// Files returns the number of files the batches load.
func (p *Plan) Files() int {
	n := 0
	for _, b := range p.Batches {
		n += len(b.Files)
	}
	return n
}

// Rows returns the rows the batches are expected to insert.
func (p *Plan) Rows() int64 {
	var n int64
	for _, b := range p.Batches {
		n += b.ExpectedRows
	}
	return n
}

// NewPlan plans the reload of rep's readable files into table. dir is the fallback folder's
// location (the root joined with rep.Prefix). The groups are compared with the table as
// inspect compares them (Report.Diff, with the confirmed renames): one rule decides what
// inspect reports loadable and what reload loads, a rename included only when the table's
// history proves it or the operator confirms it (--rename). It returns the plan and, when
// some group blocks the load, an error wrapping ErrBlocked (the plan then lists the blocked
// groups and their suggested table changes).
func NewPlan(rep *inspect.Report, table *schemadiff.Table, name databricks.TableName, dir storage.Location, o PlanOptions) (*Plan, error) {
	if table == nil || !table.Known() {
		return nil, errors.New("reload needs the table's schema")
	}
	max := o.BatchFiles
	if max <= 0 || max > schemadiff.MaxCopyFiles {
		max = schemadiff.MaxCopyFiles
	}
	prefix, err := fallback.CheckPrefix(rep.Prefix)
	if err != nil {
		return nil, err
	}
	source := o.Source
	if source == "" {
		source = strings.TrimSuffix(dir.URL(), "/") + "/"
	}
	rep.Diff(inspect.NewTable(table), inspect.DiffOptions{TableName: name.String(), Dir: dir, Source: source, Renames: o.Renames})
	p := &Plan{Table: name, Prefix: prefix, Dir: dir, Source: source, Unreadable: rep.Unreadable()}
	for i := range rep.Groups {
		g := &rep.Groups[i]
		files := p.groupFiles(rep, g, prefix, o)
		load := g.Load()
		if load.Blocked {
			if len(files) > 0 {
				// Lists, never null, as every other list of the plan's document.
				p.Blocked = append(p.Blocked, BlockedGroup{Group: g.SchemaID, Files: len(files), Changes: load.Blocking,
					DDL: append([]string{}, load.DDL...), Notes: append([]string{}, load.Notes...)})
			}
			continue
		}
		if load.Empty {
			return nil, fmt.Errorf("schema group %s: the projection would leave out every file column", g.SchemaID)
		}
		// Read from the fallback folder, files loaded again after an undo go in batches of
		// their own, forced (PlanOptions.Redo).
		sets := [][]inspect.File{files}
		if !o.Staged && len(o.Redo) > 0 {
			var fresh, redo []inspect.File
			for _, f := range files {
				if o.Redo[prefix+f.Key] > 0 {
					redo = append(redo, f)
				} else {
					fresh = append(fresh, f)
				}
			}
			sets = [][]inspect.File{fresh, redo}
		}
		for si, set := range sets {
			forced := si == 1
			for _, b := range inspect.Batches(set, max) {
				batch := Batch{N: len(p.Batches) + 1, Group: g.SchemaID, Folder: b.Folder, Files: b.Files, Select: load.Select, Forced: forced}
				for _, f := range b.Files {
					batch.ExpectedRows += f.Rows
					if o.Redo[prefix+f.Key] > 0 {
						batch.Redo++
					}
				}
				jf := journalFiles(prefix, b.Files)
				var staged map[string]string
				if o.Staged {
					staged = stagedPaths(o.TableID, jf, o.Redo)
				}
				folder, names := batchNames(prefix, jf, staged)
				batch.SQL = copySQL(name, source, folder, load.Select, names, false, forced)
				batch.ValidateSQL = copySQL(name, source, folder, load.Select, names, true, forced)
				p.Batches = append(p.Batches, batch)
			}
		}
	}
	// Without a schema group (no fallback files left, as after cleanup) there is nothing to
	// check a rename against: the plan is empty, not wrong.
	if unused := rep.UnusedRenames(); len(unused) > 0 && len(p.Blocked) == 0 && len(rep.Groups) > 0 {
		return p, fmt.Errorf("--rename %s: no schema group has that column under that name (check the spelling against inspect's report)", strings.Join(unused, ", "))
	}
	if len(p.Blocked) > 0 {
		return p, fmt.Errorf("%w: %s", ErrBlocked, p.blockedHint(table.Source))
	}
	return p, nil
}

// RenameGuesses returns the --rename values (OLD=NEW, names backquoted where they need it)
// of the likely renames that block the plan: a column only in the files and one of the same
// type only in the table, which the table's schema cannot prove renamed. Each pair is listed
// once, in the order the blocked groups give them.
func (p *Plan) RenameGuesses() []string {
	var out []string
	for _, g := range p.Blocked {
		for _, c := range g.Changes {
			if c.Kind != schemadiff.KindLikelyRename || len(c.Path) != 1 || len(c.FilePath) != 1 {
				continue
			}
			pair := schemadiff.QuoteIdentIfNeeded(c.FilePath[0]) + "=" + schemadiff.QuoteIdentIfNeeded(c.Path[0])
			if !slices.Contains(out, pair) {
				out = append(out, pair)
			}
		}
	}
	return out
}

// blockedHint says why the plan is blocked and what to do: for each likely rename, the exact
// --rename flag that confirms it (and, when the schema came from the warehouse or Unity
// Catalog, that the Delta log's history proves renames); for the other blocking changes, the
// ALTER TABLE statements the plan lists.
func (p *Plan) blockedHint(source schemadiff.Source) string {
	groups := fmt.Sprintf("%d schema group", len(p.Blocked))
	if len(p.Blocked) != 1 {
		groups += "s"
	}
	msg := fmt.Sprintf("%s cannot be loaded into %s as it is", groups, p.Table)
	renames := p.RenameGuesses()
	other := 0
	for _, g := range p.Blocked {
		for _, c := range g.Changes {
			if c.Kind != schemadiff.KindLikelyRename {
				other++
			}
		}
	}
	if len(renames) > 0 {
		var flags []string
		for _, r := range renames {
			flags = append(flags, "--rename "+shellWord(r))
		}
		msg += fmt.Sprintf(". The files hold columns the table probably renamed (same type, alike names; %s cannot prove a rename): "+
			"if so, run again with %s", sourceText(source), strings.Join(flags, " "))
		if source != schemadiff.SourceDelta {
			msg += " (or with --from delta: under column mapping the table's Delta log proves a rename, as inspect shows)"
		}
		if other > 0 {
			msg += "; the other changes listed need the table changed first: run the suggested ALTER TABLE statements"
		}
		return msg
	}
	return msg + "; change the table (the suggested ALTER TABLE statements are listed), or confirm a rename with --rename OLD=NEW"
}

// sourceText names where the table's schema came from, as the rename hint words it.
func sourceText(s schemadiff.Source) string {
	switch s {
	case schemadiff.SourceWarehouse:
		return "the warehouse's DESCRIBE of the table"
	case schemadiff.SourceUC:
		return "Unity Catalog's schema of the table"
	case schemadiff.SourceDelta:
		return "the Delta log, without column mapping,"
	case schemadiff.SourceFile:
		return "a schema file"
	}
	return "the table's schema"
}

// shellWord quotes s for a POSIX shell when it holds anything but letters, digits and _=.,-
func shellWord(s string) string {
	for _, r := range s {
		if !(r == '_' || r == '=' || r == '.' || r == ',' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// groupFiles returns the group's files the plan may load, in key order (one folder's files
// adjacent, for batching), recording those skipped (o.Skip) and those refused (a name no
// statement may name) in p.
func (p *Plan) groupFiles(rep *inspect.Report, g *inspect.Group, prefix string, o PlanOptions) []inspect.File {
	var files []inspect.File
	for _, f := range rep.GroupFiles(g.SchemaID) {
		if why, ok := o.Refuse[f.Key]; ok {
			p.Refused = append(p.Refused, SkippedFile{Key: f.Key, Reason: why})
			continue
		}
		if why, ok := o.Skip[f.Key]; ok {
			p.Skipped = append(p.Skipped, SkippedFile{Key: f.Key, Reason: why})
			continue
		}
		if !strings.HasSuffix(f.Key, ".parquet") {
			continue
		}
		if err := fallback.CheckKey(prefix, prefix+f.Key); err != nil {
			p.Refused = append(p.Refused, SkippedFile{Key: f.Key, Reason: err.Error()})
			continue
		}
		if fallback.HasGlob(f.Key) && !o.Staged {
			p.Refused = append(p.Refused, SkippedFile{Key: f.Key, Reason: "its name holds a glob character (" + fallback.GlobChars +
				"), which a statement reading the folder may take as a pattern: stage the files (--stage-to) to load it under a safe name"})
			continue
		}
		files = append(files, f)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Key < files[j].Key })
	return files
}

// CopySQL renders the COPY INTO of one batch: the files names (bare, relative to folder,
// which is relative to source, the folder URL the statements read) loaded with the projection
// sel ("" for none); validate renders its VALIDATE ALL form.
func CopySQL(t databricks.TableName, source, folder, sel string, names []string, validate bool) string {
	return sqlstmt.CopyInto(t, schemadiff.JoinFolder(source, folder), sel, names, validate)
}

// copySQL is CopySQL, forced on exactly the named files when forced is set (a redo read
// from the fallback folder: sqlstmt.CopyIntoForced).
func copySQL(t databricks.TableName, source, folder, sel string, names []string, validate, forced bool) string {
	if forced {
		return sqlstmt.CopyIntoForced(t, schemadiff.JoinFolder(source, folder), sel, names, validate)
	}
	return CopySQL(t, source, folder, sel, names, validate)
}

// Redo returns the files of undone batches the plan loads again, and how many of them load
// with COPY INTO forced (read from the fallback folder).
func (p *Plan) Redo() (files, forced int) {
	for _, b := range p.Batches {
		files += b.Redo
		if b.Forced {
			forced += len(b.Files)
		}
	}
	return files, forced
}

// stagingCopySQL is CopySQL into a load by key's staging table, the batch number a column.
func stagingCopySQL(staging databricks.TableName, batch int, source, folder, sel string, names []string, validate bool) string {
	return sqlstmt.CopyIntoStaging(staging, batch, schemadiff.JoinFolder(source, folder), sel, names, validate)
}

// journalFiles are listed files (keys relative to prefix) as the journal records them.
func journalFiles(prefix string, files []inspect.File) []journal.File {
	out := make([]journal.File, len(files))
	for i, f := range files {
		out[i] = journal.File{Key: prefix + f.Key, Size: f.Size, ETag: f.ETag, Generation: f.Generation, ModTime: f.Modified, Rows: f.Rows}
	}
	return out
}

// stagedPaths maps each file's key to its StagedPath; a file of an undone batch (redo: its
// undo count by key, journal.TableFacts.Undone) to a path of its redo generation, which no
// earlier load read.
func stagedPaths(tableID string, files []journal.File, redo map[string]int) map[string]string {
	m := make(map[string]string, len(files))
	for _, f := range files {
		m[f.Key] = stagedPathGen(tableID, f, redo[f.Key])
	}
	return m
}
