package reload

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/schemadiff"
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
	// Staged says that Source is a staging location: names that glob characters make
	// unsafe in a statement are loaded under their staged names (StagedKey). From the
	// fallback folder itself such files are left behind.
	Staged bool
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
// location (the root joined with rep.Prefix). It returns the plan and, when some group
// blocks the load, an error wrapping ErrBlocked (the plan then lists the blocked groups and
// their suggested table changes).
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
	p := &Plan{Table: name, Prefix: prefix, Dir: dir, Source: source, Unreadable: rep.Unreadable()}
	tableSchema := withRenames(table.Schema, o.Renames)
	usedRenames := map[string]bool{}
	for _, g := range rep.Groups {
		var files []inspect.File
		for _, f := range rep.GroupFiles(g.SchemaID) {
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
		// One folder's files must be adjacent for batching: key order does it.
		sort.Slice(files, func(i, j int) bool { return files[i].Key < files[j].Key })
		changes := schemadiff.Diff(g.Schema, tableSchema)
		for _, c := range changes {
			if r, ok := c.(schemadiff.Renamed); ok && len(r.Path) == 1 {
				// The table column's name as --rename gives it, not Path.String's quoted form.
				usedRenames[strings.ToLower(r.Path[0])] = true
			}
		}
		verdict := schemadiff.Worst(changes)
		sug := schemadiff.Suggest(changes, name.String())
		if verdict == schemadiff.Blocks || (sug.NeedsProjection() && !sug.Complete) {
			if len(files) > 0 {
				p.Blocked = append(p.Blocked, BlockedGroup{Group: g.SchemaID, Files: len(files),
					Changes: schemadiff.Infos(schemadiff.Blocking(changes)), DDL: sug.DDL, Notes: sug.Notes})
			}
			continue
		}
		sel := ""
		if sug.NeedsProjection() {
			if sel = sug.SelectList(g.Schema); sel == "" {
				return nil, fmt.Errorf("schema group %s: the projection would leave out every file column", g.SchemaID)
			}
		}
		for _, b := range inspect.Batches(files, max) {
			batch := Batch{N: len(p.Batches) + 1, Group: g.SchemaID, Folder: b.Folder, Files: b.Files, Select: sel}
			for _, f := range b.Files {
				batch.ExpectedRows += f.Rows
			}
			batch.SQL = CopySQL(name, source, o.Staged, b.Folder, sel, b.Names, false)
			batch.ValidateSQL = CopySQL(name, source, o.Staged, b.Folder, sel, b.Names, true)
			p.Batches = append(p.Batches, batch)
		}
	}
	var unused []string
	for old, nw := range o.Renames {
		if !usedRenames[strings.ToLower(nw)] {
			unused = append(unused, old+"="+nw)
		}
	}
	sort.Strings(unused)
	// Without a schema group (no fallback files left, as after cleanup) there is nothing to
	// check a rename against: the plan is empty, not wrong.
	if len(unused) > 0 && len(p.Blocked) == 0 && len(rep.Groups) > 0 {
		return p, fmt.Errorf("--rename %s: no schema group has that column under that name (check the spelling against inspect's report)", strings.Join(unused, ", "))
	}
	if len(p.Blocked) > 0 {
		return p, fmt.Errorf("%w: %d schema group(s) cannot be loaded into %s as it is; change the table (the suggested ALTER TABLE statements are listed) or confirm a rename with --rename old=new", ErrBlocked, len(p.Blocked), name)
	}
	return p, nil
}

// withRenames returns the table schema in which each confirmed rename target is matched to
// its old file column through the column-mapping physical name, so that Diff pairs them and
// the projection reads `old` AS `new`.
func withRenames(s schemadiff.Schema, renames map[string]string) schemadiff.Schema {
	if len(renames) == 0 {
		return s
	}
	byNew := map[string]string{}
	for old, nw := range renames {
		byNew[strings.ToLower(nw)] = old
	}
	out := s
	out.Fields = append([]schemadiff.Field(nil), s.Fields...)
	for i, f := range out.Fields {
		if old, ok := byNew[strings.ToLower(f.Name)]; ok {
			out.Fields[i].PhysicalName = old
		}
	}
	return out
}

func joinFolder(base, rel string) string {
	if rel == "" {
		return base
	}
	return strings.TrimSuffix(base, "/") + "/" + rel
}

// CopySQL renders the COPY INTO of one batch: the files names (bare, relative to folder, a
// folder relative to the fallback folder: "" or "2026/01/01/") read from source, the folder
// URL the statements read. From a staging location (staged) names and folders are the
// staged ones (StagedKey).
func CopySQL(t databricks.TableName, source string, staged bool, folder, sel string, names []string, validate bool) string {
	if staged {
		folder = stagedFolder(folder)
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = stagedElement(n)
		}
		names = out
	}
	ci := schemadiff.CopyInto{Table: t.SQL(), Folder: joinFolder(source, folder), Select: sel, Files: names, Validate: validate}
	return ci.SQL()
}

// StagedKey is the key a fallback file (key relative to the fallback folder) is staged
// under: the same key, except that a folder or file name holding a glob character gets
// them replaced with "-" and a short hash of the original name appended (before ".parquet"),
// so that no statement names it as a pattern and no two names meet.
func StagedKey(rel string) string {
	dir, name := path.Split(rel)
	return stagedFolder(dir) + stagedElement(name)
}

func stagedFolder(dir string) string {
	if dir == "" {
		return ""
	}
	els := strings.Split(strings.TrimSuffix(dir, "/"), "/")
	for i, el := range els {
		els[i] = stagedElement(el)
	}
	return strings.Join(els, "/") + "/"
}

func stagedElement(el string) string {
	if !fallback.HasGlob(el) {
		return el
	}
	sum := sha256.Sum256([]byte(el))
	base, ext := el, ""
	if strings.HasSuffix(el, ".parquet") {
		base, ext = strings.TrimSuffix(el, ".parquet"), ".parquet"
	}
	var b strings.Builder
	for _, c := range base {
		if strings.ContainsRune(fallback.GlobChars, c) {
			c = '-' // not "_": a leading "_" would hide the name from the folder's listing
		}
		b.WriteRune(c)
	}
	return b.String() + "~" + hex.EncodeToString(sum[:4]) + ext
}
