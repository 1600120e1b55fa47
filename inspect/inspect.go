// Package inspect lists the Zerobus fallback Parquet files under a table root, reads their
// footers with one ranged request each, maps their schemas onto Spark types, groups the files
// by schema, and previews their first rows.
//
// Every call into the Parquet library runs under panic containment: a corrupt or truncated
// file becomes an unreadable entry with its error, never a crash.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// DefaultConcurrency is the default number of footers read at once.
const DefaultConcurrency = 64

// Options configure Run and Stream.
type Options struct {
	// Concurrency is the most footer reads in flight; 0 means DefaultConcurrency.
	Concurrency int
	// Prefix is the fallback folder relative to the backend root; "" means fallback.Prefix.
	Prefix string
	// TailSize is how many bytes the footer read fetches from the end of each file; 0 means
	// DefaultTailSize.
	TailSize int64
	// Progress, when set, is called after listing finds a file, after each footer, and when
	// listing ends; never concurrently.
	Progress func(Progress)
	// ListSplits is the most key ranges a large folder is listed in at once, on backends
	// whose listing can start after a key; 0 means DefaultListSplits, 1 lists in one stream.
	ListSplits int
}

func (o Options) prefix() string {
	p := o.Prefix
	if p == "" {
		p = fallback.Prefix
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return strings.TrimPrefix(p, "/")
}

// Progress is a snapshot of a run for progress bars.
type Progress struct {
	Listed      int   // Parquet files found so far
	ListedBytes int64 // their total size
	ListingDone bool  // listing has finished: Listed and ListedBytes are final
	Done        int   // footers read (or failed)
	DoneBytes   int64 // total size of those files
}

// MaxKeyValueEntries is the most key-value metadata entries a report keeps per file.
const MaxKeyValueEntries = 64

// MaxKeyValueBytes is the longest key-value metadata value a report keeps; longer ones (an
// embedded Arrow or Spark schema, say) are cut, with their full length in KV.Bytes.
const MaxKeyValueBytes = 1024

// KV is one footer key-value metadata entry.
type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// Bytes is the value's full length when Value was cut at MaxKeyValueBytes, else 0.
	Bytes int `json:"bytes,omitempty"`
}

// File is what inspect learned about one Parquet file.
type File struct {
	// Key is relative to the fallback prefix ("part-1.parquet", "2024/05/part-2.parquet").
	Key string `json:"key"`
	// KeyQuoted is the key Go-quoted, set only when the key is not valid UTF-8 (JSON would
	// replace its bad bytes); preview --file takes this form too.
	KeyQuoted  string    `json:"key_quoted,omitempty"`
	Size       int64     `json:"size"`
	Rows       int64     `json:"rows"`
	RowGroups  int       `json:"row_groups"`
	Modified   time.Time `json:"modified"`
	ETag       string    `json:"etag,omitempty"`
	Generation int64     `json:"generation,omitempty"`
	SchemaID   string    `json:"schema_id,omitempty"`
	CreatedBy  string    `json:"created_by,omitempty"`
	KeyValue   []KV      `json:"key_value,omitempty"`
	// KeyValueDropped is how many key-value entries were left out after MaxKeyValueEntries.
	KeyValueDropped int `json:"key_value_dropped,omitempty"`
	// FooterBytes is the thrift footer's length.
	FooterBytes int64 `json:"footer_bytes,omitempty"`
	// Error is set for an unreadable file; the other footer fields are then zero.
	Error string `json:"error,omitempty"`
}

// Unreadable reports whether the file's footer could not be read or understood.
func (f File) Unreadable() bool { return f.Error != "" }

// Object returns the storage identity of the file, with its key relative to the backend root.
func (f File) Object(prefix string) storage.ObjectInfo {
	return storage.ObjectInfo{Key: prefix + f.Key, Size: f.Size, ModTime: f.Modified, ETag: f.ETag, Generation: f.Generation}
}

// FileResult is one file as Stream delivers it: the report entry and, for a readable file,
// its Spark schema with footer null counts.
type FileResult struct {
	File
	Schema schemadiff.Schema
	Err    error
}

// Column is one top-level column of a group's schema.
type Column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
	// NullCount is the number of nulls across the group's files from footer statistics;
	// absent when some file or row group does not report it.
	NullCount *int64 `json:"null_count,omitempty"`
}

// Group is a set of files with the same schema.
type Group struct {
	SchemaID      string    `json:"schema_id"`
	Files         int       `json:"files"`
	Rows          int64     `json:"rows"`
	Bytes         int64     `json:"bytes"`
	FirstModified time.Time `json:"first_modified"`
	LastModified  time.Time `json:"last_modified"`
	// FirstFile is the group's first key in key order, a handy preview target.
	FirstFile string   `json:"first_file"`
	Columns   []Column `json:"columns"`
	// Schema is the group's Spark schema; each top-level field's NullCount is the sum over
	// the group's files, known only when known for every file.
	Schema schemadiff.Schema `json:"-"`
	// Verdict, Changes, SameChangesAs, OKChanges and Suggestion are the diff against the
	// table's schema, set by Report.Diff; absent when there is no table schema. Verdict is
	// the worst of the changes'.
	Verdict *schemadiff.Verdict `json:"verdict,omitempty"`
	// Changes are the changes that block the load or need the projection, in Diff order:
	// empty when there are none, nil when SameChangesAs is set. The ok changes are counted
	// in OKChanges; AllChanges returns every change.
	Changes []schemadiff.ChangeInfo `json:"changes,omitzero"`
	// SameChangesAs is the schema id of the first group, in report order, whose Changes are
	// this group's too: they are listed there only. Empty when the group lists its own.
	SameChangesAs string `json:"same_changes_as,omitempty"`
	// OKChanges counts the ok changes by kind, in order of first appearance.
	OKChanges  []ChangeSummary `json:"ok_changes,omitempty"`
	Suggestion *Suggestion     `json:"suggestion,omitempty"`
	// TableVersion is the table version the files were written against and the commits that
	// changed the schema after it, set by Report.Diff from the table's history; absent when
	// the history is not known or no version's schema is the group's.
	TableVersion *TableVersion `json:"table_version,omitempty"`

	// against is what Report.Diff compared the group with, for AllChanges.
	against *comparison
	// load is how the group's files load into that table (Load).
	load *Load
}

// Totals sums up a run.
type Totals struct {
	Files        int   `json:"files"` // Parquet files, readable or not
	Rows         int64 `json:"rows"`  // rows of the readable ones
	Bytes        int64 `json:"bytes"` // size of all Parquet files
	Unreadable   int   `json:"unreadable"`
	OtherObjects int   `json:"other_objects"` // hidden objects, non-Parquet names, links and special files, not read
	OtherBytes   int64 `json:"other_bytes"`
	Groups       int   `json:"groups"`
}

// Report is the result of Run.
type Report struct {
	Root   string `json:"root"`   // the table root, secrets redacted
	Prefix string `json:"prefix"` // the fallback folder under it
	// Table is the table schema the groups were compared with (Report.Diff); nil when no
	// comparison was asked for.
	Table  *Table  `json:"table,omitempty"`
	Files  []File  `json:"files"`  // in key order
	Groups []Group `json:"groups"` // by first modification, then schema id
	// ChangeTotals count the groups' changes by kind and verdict (Report.Diff): empty when no
	// group differs from the table, nil when no comparison was made.
	ChangeTotals []ChangeTotal `json:"change_totals,omitzero"`
	Totals       Totals        `json:"totals"`

	// saved is set on a report read back with LoadReport: previews check each file is
	// unchanged before reading it.
	saved bool
	// A streamed report (StreamReport without its files) keeps the unreadable files, and
	// per group the files its suggestion names, unless the group has more (overflow).
	streamed   bool
	unreadable []File
	kept       map[string][]File
	overflow   map[string]bool
	// allChanges is DiffOptions.AllChanges: the writers list every change of every group.
	allChanges bool
	// unusedRenames are the confirmed renames no group uses (UnusedRenames).
	unusedRenames []string
}

// Group returns the group with the given schema id, or the one group whose id starts with id;
// nil when none or several match.
func (r *Report) Group(id string) *Group {
	g, _ := r.FindGroup(id)
	return g
}

// FindGroup is Group with an error that says why nothing was found: no such group, or a
// prefix shared by several.
func (r *Report) FindGroup(id string) (*Group, error) {
	var matches []*Group
	for i := range r.Groups {
		if r.Groups[i].SchemaID == id {
			return &r.Groups[i], nil
		}
		if id != "" && strings.HasPrefix(r.Groups[i].SchemaID, id) {
			matches = append(matches, &r.Groups[i])
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		ids := make([]string, len(r.Groups))
		for i, g := range r.Groups {
			ids[i] = g.SchemaID
		}
		if len(ids) == 0 {
			return nil, fmt.Errorf("no schema group %q: no readable fallback files", id)
		}
		return nil, fmt.Errorf("no schema group %q (groups: %s)", id, strings.Join(ids, ", "))
	}
	ids := make([]string, len(matches))
	for i, g := range matches {
		ids[i] = g.SchemaID
	}
	return nil, fmt.Errorf("schema group prefix %q is ambiguous (%s)", id, strings.Join(ids, ", "))
}

// GroupFiles returns the readable files of a group, in key order. For a streamed report
// without its files, those it kept: all of a group's files unless it has more than
// three COPY INTO statements take.
func (r *Report) GroupFiles(id string) []File {
	if r.streamed {
		return r.kept[id]
	}
	var out []File
	for _, f := range r.Files {
		if f.SchemaID == id && !f.Unreadable() {
			out = append(out, f)
		}
	}
	return out
}

// Unreadable returns the unreadable files, in key order.
func (r *Report) Unreadable() []File {
	if r.streamed {
		return r.unreadable
	}
	var out []File
	for _, f := range r.Files {
		if f.Unreadable() {
			out = append(out, f)
		}
	}
	return out
}

// Classify tells what inspect does with a key relative to the fallback prefix: "parquet" for a
// file it reads, "other" for everything else (non-Parquet names, and names or folders that
// Spark's file listing, and so COPY INTO, treats as hidden: those starting with ".", and those
// starting with "_" unless they hold "=", as a partition folder such as "_p=1" does).
func Classify(rel string) string {
	for _, part := range strings.Split(rel, "/") {
		if fallback.Hidden(part) {
			return "other"
		}
	}
	if strings.HasSuffix(rel, ".parquet") {
		return "parquet"
	}
	return "other"
}

// Stream lists the fallback folder and reads the footer of every Parquet file with bounded
// concurrency, calling fn once per file as soon as its footer is read, in completion order and
// never concurrently. It returns the listing totals (files, bytes, other objects; not rows,
// unreadable or groups). A listing error or fn's error stops the run and is returned; a file
// whose footer cannot be read or understood is delivered with Err set instead.
//
// Memory does not grow with the number of files beyond the listing's small per-file records
// queued for the readers: no footer buffer is kept after parsing.
func Stream(ctx context.Context, b storage.Backend, opts Options, fn func(FileResult) error) (Totals, error) {
	prefix := opts.prefix()
	conc := positiveOr(opts.Concurrency, DefaultConcurrency)
	tailSize := positiveOr(opts.TailSize, DefaultTailSize)

	var (
		mu     sync.Mutex // guards tot, prog and calls to fn and Progress
		tot    Totals
		prog   Progress
		intern = newInterner()
	)
	report := func() {
		if opts.Progress != nil {
			opts.Progress(prog)
		}
	}

	g, gctx := errgroup.WithContext(ctx)
	work := make(chan storage.ObjectInfo, 1024)
	g.Go(func() error {
		defer close(work)
		splits := positiveOr(opts.ListSplits, DefaultListSplits)
		err := listSplit(gctx, b, prefix, splits, func(o storage.ObjectInfo) error {
			rel := strings.TrimPrefix(o.Key, prefix)
			if o.Special != "" || Classify(rel) != "parquet" {
				mu.Lock()
				tot.OtherObjects++
				tot.OtherBytes += o.Size
				mu.Unlock()
				return nil
			}
			mu.Lock()
			tot.Files++
			tot.Bytes += o.Size
			prog.Listed++
			prog.ListedBytes += o.Size
			report()
			mu.Unlock()
			select {
			case work <- o:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
		mu.Lock()
		prog.ListingDone = true
		report()
		mu.Unlock()
		return err
	})
	for i := 0; i < conc; i++ {
		g.Go(func() error {
			for o := range work {
				if err := gctx.Err(); err != nil {
					return err
				}
				res := inspectFile(gctx, b, o, prefix, tailSize, intern)
				if res.Err != nil && gctx.Err() != nil {
					// Cancellation, not a bad file.
					return gctx.Err()
				}
				mu.Lock()
				err := fn(res)
				prog.Done++
				prog.DoneBytes += o.Size
				report()
				mu.Unlock()
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			return tot, errors.Join(ctx.Err(), err)
		}
		return tot, err
	}
	return tot, nil
}

// inspectFile reads one file's footer and turns it into a result.
func inspectFile(ctx context.Context, b storage.Backend, o storage.ObjectInfo, prefix string, tailSize int64, intern *interner) FileResult {
	res := FileResult{File: File{
		Key:        strings.TrimPrefix(o.Key, prefix),
		KeyQuoted:  QuoteInvalidKey(strings.TrimPrefix(o.Key, prefix)),
		Size:       o.Size,
		Modified:   o.ModTime.UTC(),
		ETag:       o.ETag,
		Generation: o.Generation,
	}}
	fail := func(err error) FileResult {
		res.Err = err
		res.Error = err.Error()
		return res
	}
	ft, err := readFooter(ctx, b, o.Key, o.Size, tailSize)
	if err != nil {
		return fail(err)
	}
	ff, err := extract(ft.md)
	ft.release()
	if err != nil {
		// A footer that was read still says how many rows the file holds.
		res.Rows, res.RowGroups, res.FooterBytes = ff.rows, ff.rowGroups, ft.length
		return fail(err)
	}
	res.Rows = ff.rows
	res.RowGroups = ff.rowGroups
	res.FooterBytes = ft.length
	res.CreatedBy = intern.get(ff.createdBy)
	kvs := ff.keyValue
	if len(kvs) > MaxKeyValueEntries {
		res.KeyValueDropped = len(kvs) - MaxKeyValueEntries
		kvs = kvs[:MaxKeyValueEntries]
	}
	for _, kv := range kvs {
		e := KV{Key: intern.get(kv.Key), Value: kv.Value}
		if len(e.Value) > MaxKeyValueBytes {
			e.Bytes = len(e.Value)
			e.Value = strings.ToValidUTF8(e.Value[:MaxKeyValueBytes], "")
		}
		e.Value = intern.get(e.Value)
		res.KeyValue = append(res.KeyValue, e)
	}
	res.Schema = ff.schema
	res.SchemaID = intern.get(SchemaID(ff.schema))
	return res
}

// QuoteInvalidKey returns key Go-quoted when it is not valid UTF-8, else "".
func QuoteInvalidKey(key string) string {
	if utf8.ValidString(key) {
		return ""
	}
	return strconv.Quote(key)
}

// UnquoteKey returns the key a Go-quoted string stands for, and whether s was one.
func UnquoteKey(s string) (string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", false
	}
	k, err := strconv.Unquote(s)
	return k, err == nil
}

// interner shares the strings that repeat across files (created_by, key-value metadata,
// schema ids), so that many files from one writer cost one copy.
type interner struct {
	mu sync.Mutex
	m  map[string]string
}

func newInterner() *interner { return &interner{m: make(map[string]string)} }

func (in *interner) get(s string) string {
	if s == "" {
		return ""
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.m[s]; ok {
		return v
	}
	s = strings.Clone(s)
	in.m[s] = s
	return s
}

// Run lists and reads every fallback file under b (rooted at the table root), groups the
// readable files by schema and returns the report. Unreadable files are in the report with
// their error; Run itself fails only when listing fails or ctx ends.
func Run(ctx context.Context, b storage.Backend, opts Options) (*Report, error) {
	return StreamReport(ctx, b, opts, true, nil)
}

// StreamReport is Run with the files handed to each (when not nil) as they are read, in
// completion order and never concurrently, and with the report's Files kept only when
// keepFiles is set. Without them the report holds the totals, the schema groups, the
// unreadable files and, per group, the files its suggested COPY INTO statements name (at
// most the 3,000 that three statements take; a larger group is pointed at reload): memory
// does not grow with the number of files. Report.GroupFiles then returns those kept files.
func StreamReport(ctx context.Context, b storage.Backend, opts Options, keepFiles bool, each func(FileResult) error) (*Report, error) {
	c := newCollector(keepFiles)
	tot, err := Stream(ctx, b, opts, func(r FileResult) error {
		c.add(r)
		if each != nil {
			return each(r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c.report(b.Location(), opts.prefix(), tot), nil
}

// maxKeptPerGroup is how many files a streamed report keeps per group: as many as the
// suggested statements name.
const maxKeptPerGroup = maxSuggestedStatements * schemadiff.MaxCopyFiles

// collector accumulates a Stream run into a Report.
type collector struct {
	keepFiles  bool
	files      []File
	unreadable []File
	groups     map[string]*groupAcc
	rows       int64
}

func newCollector(keepFiles bool) *collector {
	return &collector{keepFiles: keepFiles, groups: map[string]*groupAcc{}}
}

func (c *collector) add(r FileResult) {
	if c.keepFiles {
		c.files = append(c.files, r.File)
	}
	if r.Err != nil {
		if !c.keepFiles {
			c.unreadable = append(c.unreadable, r.File)
		}
		return
	}
	c.rows = addRows(c.rows, r.Rows)
	acc, ok := c.groups[r.SchemaID]
	if !ok {
		acc = &groupAcc{Group: Group{SchemaID: r.SchemaID, Schema: r.Schema}}
		c.groups[r.SchemaID] = acc
	} else {
		acc.addNullCounts(r.Schema)
	}
	acc.add(r.File)
	if !c.keepFiles && !acc.overflow {
		if len(acc.kept) < maxKeptPerGroup {
			acc.kept = append(acc.kept, r.File)
		} else {
			acc.kept, acc.overflow = nil, true
		}
	}
}

func (c *collector) report(root, prefix string, tot Totals) *Report {
	rep := &Report{Root: root, Prefix: prefix, Totals: tot}
	if c.keepFiles {
		rep.Files = c.files
		if rep.Files == nil {
			rep.Files = []File{}
		}
		sort.Slice(rep.Files, func(i, j int) bool { return rep.Files[i].Key < rep.Files[j].Key })
		for _, f := range rep.Files {
			if f.Unreadable() {
				rep.Totals.Unreadable++
			}
		}
	} else {
		rep.streamed = true
		rep.unreadable = c.unreadable
		sort.Slice(rep.unreadable, func(i, j int) bool { return rep.unreadable[i].Key < rep.unreadable[j].Key })
		rep.Totals.Unreadable = len(rep.unreadable)
		rep.kept = map[string][]File{}
		rep.overflow = map[string]bool{}
	}
	rep.Totals.Rows = c.rows
	rep.Groups = make([]Group, 0, len(c.groups))
	for _, acc := range c.groups {
		rep.Groups = append(rep.Groups, acc.finish())
		if rep.streamed {
			sort.Slice(acc.kept, func(i, j int) bool { return acc.kept[i].Key < acc.kept[j].Key })
			rep.kept[acc.SchemaID] = acc.kept
			rep.overflow[acc.SchemaID] = acc.overflow
		}
	}
	sort.Slice(rep.Groups, func(i, j int) bool {
		a, b := rep.Groups[i], rep.Groups[j]
		if !a.FirstModified.Equal(b.FirstModified) {
			return a.FirstModified.Before(b.FirstModified)
		}
		return a.SchemaID < b.SchemaID
	})
	rep.Totals.Groups = len(rep.Groups)
	return rep
}

type groupAcc struct {
	Group
	kept     []File // a streamed report's files of the group, up to maxKeptPerGroup
	overflow bool   // more than maxKeptPerGroup: kept is dropped
}

func (g *groupAcc) add(f File) {
	if g.Files == 0 || f.Modified.Before(g.FirstModified) {
		g.FirstModified = f.Modified
	}
	if g.Files == 0 || f.Modified.After(g.LastModified) {
		g.LastModified = f.Modified
	}
	if g.Files == 0 || f.Key < g.FirstFile {
		g.FirstFile = f.Key
	}
	g.Files++
	g.Rows = addRows(g.Rows, f.Rows)
	g.Bytes += f.Size
}

// addNullCounts adds another file's top-level null counts (same schema, so same fields).
func (g *groupAcc) addNullCounts(s schemadiff.Schema) {
	for i := range g.Schema.Fields {
		if i >= len(s.Fields) {
			return
		}
		f, o := &g.Schema.Fields[i], s.Fields[i]
		if f.NullCountKnown && o.NullCountKnown {
			f.NullCount = addRows(f.NullCount, o.NullCount)
		} else {
			f.NullCount, f.NullCountKnown = 0, false
		}
	}
}

func (g *groupAcc) finish() Group {
	out := g.Group
	out.Columns = make([]Column, len(out.Schema.Fields))
	for i, f := range out.Schema.Fields {
		c := Column{Name: f.Name, Type: f.Type.String(), Nullable: f.Nullable}
		if f.NullCountKnown {
			n := f.NullCount
			c.NullCount = &n
		}
		out.Columns[i] = c
	}
	return out
}
