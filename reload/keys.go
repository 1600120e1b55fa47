package reload

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/sqlstmt"
	"github.com/zbrecover/zbrecover/storage"
)

// KeySource is a set of fallback files (or a keys file) the key statements read
// (sqlstmt.KeySource).
type KeySource = sqlstmt.KeySource

// Keys are the columns that identify a record (--key, --dedupe-key), as the table and the
// fallback files name them.
type Keys []string

// ParseKeys reads COL[,COL…]: names separated by commas, each as written or in backquotes
// (a backquote inside doubled), so that `a,b`,c names two columns. Spaces around names are
// dropped; a name may hold spaces and any other character.
func ParseKeys(s string) (Keys, error) {
	var out Keys
	var cur strings.Builder
	quoted, inQuote, seen := false, false, false
	flush := func() error {
		name := cur.String()
		if !quoted {
			name = strings.TrimSpace(name)
		}
		if name == "" {
			return fmt.Errorf("key %q: an empty column name", s)
		}
		for _, k := range out {
			if strings.EqualFold(k, name) {
				return fmt.Errorf("key %q: column %s is named twice", s, schemadiff.QuoteIdent(name))
			}
		}
		out = append(out, name)
		cur.Reset()
		quoted, seen = false, false
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote && c == '`' && i+1 < len(s) && s[i+1] == '`':
			cur.WriteByte('`')
			i++
		case inQuote && c == '`':
			inQuote = false
		case inQuote:
			cur.WriteByte(c)
		case c == '`' && !seen:
			inQuote, quoted, seen = true, true, true
		case c == ',':
			if err := flush(); err != nil {
				return nil, err
			}
		case quoted && c != ' ':
			return nil, fmt.Errorf("key %q: text after the backquoted name %s", s, schemadiff.QuoteIdent(cur.String()))
		case quoted:
		default:
			if c != ' ' {
				seen = true
			}
			cur.WriteByte(c)
		}
	}
	if inQuote {
		return nil, fmt.Errorf("key %q: unclosed backquote", s)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

// ParseName reads one column name as ParseKeys reads each of a key's: as written (the
// spaces around it trimmed), or in backquotes, a doubled backquote standing for one
// (`order id`, `a,b`).
func ParseName(s string) (string, error) {
	k, err := ParseKeys(s)
	if err != nil {
		return "", err
	}
	if len(k) != 1 {
		return "", fmt.Errorf("%q names %d columns, not one (a name with a comma goes in backquotes)", s, len(k))
	}
	return k[0], nil
}

// String renders the keys as ParseKeys reads them.
func (k Keys) String() string {
	parts := make([]string, len(k))
	for i, c := range k {
		parts[i] = schemadiff.QuoteIdentIfNeeded(c)
	}
	return strings.Join(parts, ",")
}

// KeyCounts is what the fallback files hold by key, against the table.
type KeyCounts struct {
	// Group is the schema group; "" for the total over every group.
	Group string `json:"group,omitempty"`
	// Records are the fallback records; Keys the distinct keys without a NULL column among
	// them (a key with a NULL column identifies nothing: it is no key).
	Records int64 `json:"records"`
	Keys    int64 `json:"keys"`
	// InTable are the records whose key the table already holds (never a NULL-keyed one).
	InTable int64 `json:"records_key_in_table"`
	// DuplicateKeys are keys more than one fallback record holds; DuplicateRecords the
	// records beyond the first of each (NULL-keyed records duplicate nothing).
	DuplicateKeys    int64 `json:"keys_duplicated_in_files"`
	DuplicateRecords int64 `json:"records_duplicated_in_files"`
	// New are the records a load by key inserts: one per key the table lacks, and every
	// NULL-keyed record.
	New int64 `json:"records_new"`
	// WouldDuplicate are the rows a load without --dedupe-key adds whose key is then in the
	// table more than once: Records − New.
	WouldDuplicate int64 `json:"rows_duplicated_by_a_plain_reload"`
	// NullKeyRecords are records with a NULL key column: counted in Records and New, never in
	// Keys or InTable.
	NullKeyRecords int64 `json:"records_null_key"`
}

// OverlapReport is inspect --key: per schema group and in total. A key in two groups counts
// in both groups' figures, once in the total.
type OverlapReport struct {
	Table  string      `json:"table"`
	Key    Keys        `json:"key"`
	Groups []KeyCounts `json:"groups"`
	Total  KeyCounts   `json:"total"`
	// Statements is the number of statements the measure took (one per run).
	Statements int    `json:"statements"`
	Note       string `json:"note"`
}

// OverlapNote says what the overlap figures mean.
const OverlapNote = "Computed on the warehouse from the fallback files' key columns and the table's. " +
	"COPY INTO deduplicates files, not rows: a plain reload inserts every record, so records whose key is " +
	"already in the table, and records duplicated in the files, end up in the table more than once. " +
	"reload --dedupe-key inserts only records_new (one record per key the table lacks, and every record with a NULL key " +
	"column: such a key identifies nothing)."

// ErrKeyColumn: a key column is missing from the table or from a schema group's files.
var ErrKeyColumn = errors.New("key column not found")

// OverlapSources returns the sources of the readable files of rep's groups, their key
// columns cast to the table's types. dir is the fallback folder's location.
func OverlapSources(rep *inspect.Report, table schemadiff.Schema, keys Keys, dir storage.Location) ([]KeySource, error) {
	types := make([]string, len(keys))
	for i, k := range keys {
		f, ok := findField(table.Fields, k)
		if !ok {
			return nil, fmt.Errorf("%w: the table has no column %s", ErrKeyColumn, schemadiff.QuoteIdent(k))
		}
		types[i] = f.Type.SQL()
	}
	base := strings.TrimSuffix(dir.URL(), "/") + "/"
	var out []KeySource
	for _, g := range rep.Groups {
		exprs := make([]string, len(keys))
		for i, k := range keys {
			f, ok := findField(g.Schema.Fields, k)
			if !ok {
				return nil, fmt.Errorf("%w: the files of schema group %s have no column %s (the key must have the same name in the files and the table)",
					ErrKeyColumn, g.SchemaID, schemadiff.QuoteIdent(k))
			}
			exprs[i] = "CAST(" + schemadiff.QuoteIdent(f.Name) + " AS " + types[i] + ")"
		}
		var files []inspect.File
		for _, f := range rep.GroupFiles(g.SchemaID) {
			if strings.HasSuffix(f.Key, ".parquet") {
				files = append(files, f)
			}
		}
		for _, b := range inspect.Batches(files, 1<<30) {
			out = append(out, KeySource{Label: g.SchemaID, Folder: schemadiff.JoinFolder(base, b.Folder), Files: b.Names, Exprs: exprs})
		}
	}
	return out, nil
}

func findField(fs []schemadiff.Field, name string) (schemadiff.Field, bool) {
	for _, f := range fs {
		if strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return schemadiff.Field{}, false
}

// Overlap measures, with one statement, what the sources hold by key against the table.
func Overlap(ctx context.Context, wh Warehouse, table databricks.TableName, keys Keys, srcs []KeySource) (*OverlapReport, error) {
	rep := &OverlapReport{Table: table.String(), Key: keys, Groups: []KeyCounts{}, Note: OverlapNote}
	if len(srcs) == 0 {
		return rep, nil
	}
	res, err := wh.QueryAll(ctx, sqlstmt.Overlap(table, keys, srcs))
	rep.Statements = 1
	if err != nil {
		if databricks.IsLocationOverlap(err) {
			return nil, fmt.Errorf("measure the overlap by key: %w", ErrLocationOverlap)
		}
		return nil, fmt.Errorf("measure the overlap by key: %w", err)
	}
	col := columns(res)
	for _, row := range res.Rows {
		c := KeyCounts{Group: asString(row[col["g"]])}
		get := func(name string) int64 {
			n, _ := asInt(row[col[name]])
			return n
		}
		c.Keys, c.Records, c.InTable = get("keys"), get("records"), get("in_table")
		c.DuplicateKeys, c.DuplicateRecords, c.New, c.NullKeyRecords = get("dup_keys"), get("dup_records"), get("new_keys"), get("null_records")
		c.WouldDuplicate = c.Records - c.New
		if c.Group == "" {
			rep.Total = c
		} else {
			rep.Groups = append(rep.Groups, c)
		}
	}
	order := map[string]int{}
	for i, s := range srcs {
		if _, ok := order[s.Label]; !ok {
			order[s.Label] = i
		}
	}
	sortBy(rep.Groups, func(a, b KeyCounts) bool { return order[a.Group] < order[b.Group] })
	return rep, nil
}

func columns(res *databricks.Result) map[string]int {
	col := map[string]int{}
	for i, c := range res.Columns {
		col[strings.ToLower(c)] = i
	}
	return col
}

func sortBy[T any](s []T, less func(a, b T) bool) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && less(s[j], s[j-1]); j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// Histogram counts the distinct keys of a run's files by the table's rows per key.
type Histogram struct {
	Once  int64 `json:"1"`
	Twice int64 `json:"2"`
	More  int64 `json:"3+"`
}

// KeyCheck is verify --key: every key of the run's files against the table.
type KeyCheck struct {
	Key Keys `json:"key"`
	// Rows are the rows read of the run's files; NullRows those with a NULL key column and
	// NullKeys their distinct keys: a key with a NULL column identifies nothing, so it is
	// never looked up in the table, and a batch with such a row is never proved by key.
	Rows     int64 `json:"rows"`
	NullRows int64 `json:"null_rows"`
	NullKeys int64 `json:"null_keys"`
	// Keys are the distinct keys without a NULL column; Missing those the table has no row
	// for (must be 0).
	Keys    int64 `json:"keys"`
	Missing int64 `json:"missing"`
	// RowsPerKey is the histogram of table rows per key; Duplicated the keys with 2 or more rows;
	// MaxRows the most rows one key has.
	RowsPerKey Histogram `json:"rows_per_key"`
	Duplicated int64     `json:"duplicated_keys"`
	MaxRows    int64     `json:"max_rows_per_key"`
	// Batches is the check of each batch read: proved, failed or unproved, and why.
	Batches []journal.KeyBatch `json:"batches"`
	// Files are the run's files read; Statements the statements the check took.
	Files      int  `json:"files"`
	Statements int  `json:"statements"`
	OK         bool `json:"ok"`
	// Problems say what the check found wanting, or could not prove (NULL keys); Note what
	// the check shows.
	Problems []string `json:"problems"`
	Note     string   `json:"note"`
}

// Proved returns the batches the check proves in the table by key.
func (kc *KeyCheck) Proved() []int { return verdicts(kc.Batches, journal.KeyProved) }

// FailedBatches returns the batches the check failed.
func (kc *KeyCheck) FailedBatches() []int { return verdicts(kc.Batches, journal.KeyFailed) }

func verdicts(bs []journal.KeyBatch, v string) []int {
	var out []int
	for _, b := range bs {
		if b.Verdict == v {
			out = append(out, b.Batch)
		}
	}
	return out
}

// Result is the journal's record of the check.
func (kc *KeyCheck) Result() *journal.KeyResult {
	return &journal.KeyResult{Key: kc.Key, Files: kc.Files, Rows: kc.Rows, Keys: kc.Keys, Missing: kc.Missing, OK: kc.OK,
		Batches: kc.Proved(), Failed: kc.FailedBatches(), NullRows: kc.NullRows, NullKeys: kc.NullKeys, PerBatch: kc.Batches,
		Duplicated: kc.Duplicated, MaxRows: kc.MaxRows, Note: strings.Join(kc.Problems, "; ")}
}

// ReconcileNote says what the key check shows.
const ReconcileNote = "Keys are read from the run's fallback files (run verify --key before cleanup deletes them) and " +
	"counted in the table, whoever wrote the rows (Zerobus, this reload, others). Missing keys must be 0. " +
	"A key with a NULL column identifies nothing: it is never looked up, and a batch with such a row is not proved by key. " +
	"Keys with 2 or more rows are duplicates: a plain reload (without --dedupe-key) creates them for records " +
	"Zerobus also published."

// RunSources returns the sources of a run's files: one per batch, with the key columns as
// the files name them. root is the run's table root.
func RunSources(st *journal.State, keys Keys, root storage.Location) []KeySource {
	exprs := make([]string, len(keys))
	for i, k := range keys {
		exprs[i] = schemadiff.QuoteIdent(k)
	}
	// A staged run's files are read from their copies, as its statements read them.
	type copyOf struct{ loc, key string }
	copies := map[string]copyOf{}
	for _, sg := range st.Staging {
		for _, c := range sg.Files {
			if sg.Removed {
				delete(copies, c.Source)
			} else {
				copies[c.Source] = copyOf{sg.Location, c.Key}
			}
		}
	}
	var out []KeySource
	for _, b := range st.Batches {
		if len(b.Files) == 0 {
			continue
		}
		folder := strings.TrimSuffix(root.Join(b.Folder).URL(), "/") + "/"
		names := make([]string, len(b.Files))
		for i, f := range b.Files {
			names[i] = strings.TrimPrefix(f.Key, b.Folder)
		}
		if c, ok := copies[b.Files[0].Key]; ok {
			dir, _ := path.Split(c.key)
			folder = strings.TrimSuffix(c.loc, "/") + "/" + dir
			// Each copy under its staged name (a glob character replaced), as the batch's
			// statement named it. A file without a copy keeps its name: it is not there, and
			// the count of rows read against the footers then fails the check.
			for i, f := range b.Files {
				if fc, ok := copies[f.Key]; ok {
					names[i] = path.Base(fc.key)
				}
			}
		}
		out = append(out, KeySource{Label: fmt.Sprint(b.Batch), Folder: folder, Files: names, Exprs: exprs})
	}
	return out
}

// LabelCounts is what a key check read of one label of its sources (a batch).
type LabelCounts struct {
	// Rows are the rows read, NullRows those with a NULL key column, NullKeys their
	// distinct keys; Keys the distinct keys without one, Missing those the table lacks.
	Rows, NullRows, NullKeys, Keys, Missing int64
}

// Reconcile checks, with one statement, every key of the sources against the table: the
// totals and histogram (a KeyCheck with no verdict yet) and the counts per label. Keys with a
// NULL column are counted apart, never looked up.
func Reconcile(ctx context.Context, wh Warehouse, table databricks.TableName, keys Keys, srcs []KeySource) (*KeyCheck, map[string]LabelCounts, error) {
	kc := &KeyCheck{Key: keys, Batches: []journal.KeyBatch{}, Problems: []string{}}
	for _, s := range srcs {
		kc.Files += len(s.Files)
	}
	per := map[string]LabelCounts{}
	if len(srcs) == 0 {
		return kc, per, nil
	}
	res, err := wh.QueryAll(ctx, sqlstmt.ReconcileByLabel(table, keys, srcs))
	kc.Statements = 1
	if err != nil {
		if databricks.IsLocationOverlap(err) {
			return nil, nil, fmt.Errorf("reconcile by key: %w", ErrLocationOverlap)
		}
		return nil, nil, fmt.Errorf("reconcile by key: %w", err)
	}
	col := columns(res)
	total := false
	for _, row := range res.Rows {
		get := func(name string) int64 {
			n, _ := asInt(row[col[name]])
			return n
		}
		lc := LabelCounts{Rows: get("nrows"), NullRows: get("null_rows"), NullKeys: get("null_keys"), Keys: get("keys"), Missing: get("missing")}
		if g := asString(row[col["g"]]); g != "" {
			per[g] = lc
			continue
		}
		total = true
		kc.Rows, kc.NullRows, kc.NullKeys, kc.Keys, kc.Missing = lc.Rows, lc.NullRows, lc.NullKeys, lc.Keys, lc.Missing
		kc.MaxRows = get("max_rows")
		kc.RowsPerKey = Histogram{Once: get("once"), Twice: get("twice"), More: get("more")}
		kc.Duplicated = kc.RowsPerKey.Twice + kc.RowsPerKey.More
	}
	if !total {
		return nil, nil, fmt.Errorf("reconcile by key: no total row in the answer (%d rows)", len(res.Rows))
	}
	return kc, per, nil
}

// OverlapByKeys measures inspect --key without the warehouse reading the fallback files: the
// key columns are read by zbrecover (BuildKeys) into one keys file at place, which one
// statement then compares with the table; the keys file is removed afterwards.
func OverlapByKeys(ctx context.Context, wh Warehouse, table databricks.TableName, src storage.Backend, rep *inspect.Report, spec KeysSpec,
	place KeysPlace, progress func(done, total int)) (*OverlapReport, *journal.KeysFile, error) {
	files := reportSources(rep)
	if spec.Groups == nil {
		spec.Groups = map[string]schemadiff.Schema{}
		for _, g := range rep.Groups {
			spec.Groups[g.SchemaID] = g.Schema
		}
	}
	kf, err := BuildKeys(ctx, src, files, spec, place, "inspect", progress)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = place.Dst.Delete(context.WithoutCancel(ctx), kf.Key, storage.Precondition{}) }()
	srcs := []KeySource{keysFileSource(KeysFileURL(*kf), len(spec.Key))}
	rep2, err := Overlap(ctx, wh, table, spec.Key, srcs)
	if err != nil {
		return nil, kf, err
	}
	order := map[string]int{}
	for i, g := range rep.Groups {
		order[g.SchemaID] = i
	}
	sortBy(rep2.Groups, func(a, b KeyCounts) bool { return order[a.Group] < order[b.Group] })
	return rep2, kf, nil
}

// ReconcileKeysNote says what the key check from keys files shows.
const ReconcileKeysNote = "Keys are read from the keys files recorded in the journal (zbrecover read the key columns of the run's " +
	"files itself, every row of every file, and stored them where the warehouse reads them; each keys file is checked against " +
	"its recorded SHA-256 before it is used), so the check works after cleanup. They are counted in the table, whoever wrote the rows. " +
	"Missing keys must be 0. A key with a NULL column identifies nothing: it is never looked up, and a batch with such a row is not " +
	"proved by key. Keys with 2 or more rows are duplicates."
