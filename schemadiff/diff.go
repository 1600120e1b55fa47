package schemadiff

import (
	"encoding/json"
	"fmt"
	"strings"
)

//go:generate go run golang.org/x/tools/cmd/stringer -type=ChangeKind,Verdict -linecomment

// Verdict is what COPY INTO with mergeSchema = false does with a file given one change (or,
// for a group, the worst of its changes).
type Verdict int

// Verdicts, from harmless to blocking. Their order matters: Worst takes the maximum.
const (
	OK        Verdict = iota // ok
	NeedsCast                // needs-cast
	Blocks                   // blocks
)

// MarshalText implements encoding.TextMarshaler: "ok", "needs_cast", "blocks", in the one
// enum style of the JSON output (snake_case); the text output says needs-cast.
func (v Verdict) MarshalText() ([]byte, error) {
	return []byte(strings.ReplaceAll(v.String(), "-", "_")), nil
}

// UnmarshalText implements encoding.TextUnmarshaler; it also reads the text form
// (needs-cast), which reports of earlier versions hold.
func (v *Verdict) UnmarshalText(b []byte) error {
	for _, c := range []Verdict{OK, NeedsCast, Blocks} {
		if m, _ := c.MarshalText(); string(b) == c.String() || string(b) == string(m) {
			*v = c
			return nil
		}
	}
	return fmt.Errorf("unknown verdict %q", b)
}

// Worst returns the worst verdict of changes: OK for none.
func Worst(changes []Change) Verdict {
	v := OK
	for _, c := range changes {
		v = max(v, c.Verdict())
	}
	return v
}

// Blocking returns the changes that block the load.
func Blocking(changes []Change) []Change {
	var out []Change
	for _, c := range changes {
		if c.Verdict() == Blocks {
			out = append(out, c)
		}
	}
	return out
}

// ChangeKind names the kind of a Change.
type ChangeKind int

// The kinds of change, one per Change type.
const (
	KindMissingInFile      ChangeKind = iota + 1 // missing_in_file
	KindExtraInFile                              // extra_in_file
	KindTypeChanged                              // type_changed
	KindNullabilityChanged                       // nullability_changed
	KindLikelyRename                             // likely_rename
	KindRenamed                                  // renamed
	KindCaseDiffers                              // case_differs
	KindUnsupportedType                          // unsupported_type
)

// MarshalText implements encoding.TextMarshaler.
func (k ChangeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Path locates a column or a nested member: column names, struct member names, and the steps
// "element" (array element), "key" and "value" (map key and value).
type Path []string

// String renders the path with dots, backquoting names that are not plain identifiers:
// a.b.element.c, `my col`.x.
func (p Path) String() string {
	parts := make([]string, len(p))
	for i, s := range p {
		parts[i] = QuoteIdentIfNeeded(s)
	}
	return strings.Join(parts, ".")
}

// SQL renders the path as ALTER TABLE … ADD COLUMNS and ALTER COLUMN take nested names, every
// part backquoted: `a`.`b`.`element`.`c`.
func (p Path) SQL() string {
	parts := make([]string, len(p))
	for i, s := range p {
		parts[i] = QuoteIdent(s)
	}
	return strings.Join(parts, ".")
}

// MarshalText implements encoding.TextMarshaler.
func (p Path) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// pathNode is a Path as a chain of names while the differ descends: a level costs one small
// allocation, and a Path is built only for a change (copying the path at every level would be
// quadratic in the nesting depth).
type pathNode struct {
	parent *pathNode
	name   string
	n      int
}

func (p *pathNode) child(name string) *pathNode {
	n := 1
	if p != nil {
		n = p.n + 1
	}
	return &pathNode{parent: p, name: name, n: n}
}

func (p *pathNode) path() Path {
	if p == nil {
		return nil
	}
	out := make(Path, p.n)
	for q := p; q != nil; q = q.parent {
		out[q.n-1] = q.name
	}
	return out
}

// Change is one difference between a file's schema and the table's, with what COPY INTO does
// about it. The set of changes is closed: MissingInFile, ExtraInFile, TypeChanged,
// NullabilityChanged, LikelyRename, Renamed, CaseDiffers and UnsupportedInFile.
type Change interface {
	Kind() ChangeKind
	// Where is the path of the change in the table's terms (logical names); for a column only
	// in the file, its path in the file.
	Where() Path
	// Verdict says whether the change blocks the load, needs a projection, or is harmless.
	Verdict() Verdict
	// Reason explains the change and the verdict in an operator's words.
	Reason() string
	change()
}

// top is the top-level column a change belongs to, in the file and in the table (either may
// be nil). Suggest uses it to build one projection per column.
type top struct {
	file, table *Field
	physical    bool // matched by physical names (Diff's setting)
	renames     bool // likely renames guessed (Diff's setting)
}

// MissingInFile is a table column (or struct member) that the file lacks. COPY INTO fills it
// with NULL, which fails for a NOT NULL column.
type MissingInFile struct {
	Path  Path
	Table Field
	top   top
}

// ExtraInFile is a file column (or struct member) the table does not have. COPY INTO with
// mergeSchema = false rejects the file.
type ExtraInFile struct {
	Path Path
	File Field
	top  top
}

// TypeChanged is a column whose type differs. Widening is true when every file value converts
// to the table type without loss (int → bigint, float → double, decimal widening, numbers,
// booleans, dates and timestamps to string: LosslessCast): the load then needs a CAST
// projection. Otherwise the change blocks.
type TypeChanged struct {
	Path        Path
	File, Table Type
	Widening    bool
	top         top
}

// NullabilityChanged is a column, array element or map value that may be NULL in the file and
// is NOT NULL in the table. It is harmless only when the file's footer statistics prove that
// there are no NULLs (NullCountKnown and NullCount == 0).
type NullabilityChanged struct {
	Path           Path
	NullCount      int64
	NullCountKnown bool
	top            top
}

// LikelyRename is a column only in the file and a column of the same type only in the table
// whose names are alike enough to say so (Evidence: how they are alike, see SimilarNames):
// probably a rename. It blocks (COPY INTO rejects the file's column and would leave the
// table's NULL); the suggested projection "old AS new" is for the operator to confirm. Two
// such columns with unrelated names are not guessed at: they are an ExtraInFile and a
// MissingInFile.
type LikelyRename struct {
	Path        Path // in the table
	FilePath    Path
	File, Table Field
	Evidence    string
	top         top
}

// UnsupportedInFile is a file column (or member) whose Parquet type has no Databricks
// equivalent (Float16, TIME, INTERVAL, …). Spark fails on such a file whatever the table
// looks like, so the change blocks; the rest of the file (rows, other columns) is readable.
type UnsupportedInFile struct {
	Path Path // in the table's terms where the column pairs with one, else in the file's
	File Type
	top  top
}

// Renamed is a column the file stores under its Delta column-mapping physical name, or under
// a name the table's history shows it was renamed from (Evidence says so). The match is
// exact, but COPY INTO resolves columns by name, so the load needs the projection
// "file name AS table name".
type Renamed struct {
	Path     Path // in the table
	FilePath Path
	// Evidence, when set, says how the rename is known other than by the file using the
	// physical name (a RENAME COLUMN commit that kept the column's physical name).
	Evidence string
	top      top
}

// CaseDiffers is a column whose name differs only by case. Spark resolves names
// case-insensitively, so it is harmless.
type CaseDiffers struct {
	Path     Path // in the table
	FilePath Path
}

func (MissingInFile) change()      {}
func (ExtraInFile) change()        {}
func (TypeChanged) change()        {}
func (NullabilityChanged) change() {}
func (LikelyRename) change()       {}
func (Renamed) change()            {}
func (CaseDiffers) change()        {}
func (UnsupportedInFile) change()  {}

// Kind implements Change.
func (MissingInFile) Kind() ChangeKind      { return KindMissingInFile }
func (ExtraInFile) Kind() ChangeKind        { return KindExtraInFile }
func (TypeChanged) Kind() ChangeKind        { return KindTypeChanged }
func (NullabilityChanged) Kind() ChangeKind { return KindNullabilityChanged }
func (LikelyRename) Kind() ChangeKind       { return KindLikelyRename }
func (Renamed) Kind() ChangeKind            { return KindRenamed }
func (CaseDiffers) Kind() ChangeKind        { return KindCaseDiffers }
func (UnsupportedInFile) Kind() ChangeKind  { return KindUnsupportedType }

// Where implements Change.
func (c MissingInFile) Where() Path      { return c.Path }
func (c ExtraInFile) Where() Path        { return c.Path }
func (c TypeChanged) Where() Path        { return c.Path }
func (c NullabilityChanged) Where() Path { return c.Path }
func (c LikelyRename) Where() Path       { return c.Path }
func (c Renamed) Where() Path            { return c.Path }
func (c CaseDiffers) Where() Path        { return c.Path }
func (c UnsupportedInFile) Where() Path  { return c.Path }

// Verdict implements Change.
func (c MissingInFile) Verdict() Verdict {
	if c.Table.Nullable {
		return OK
	}
	return Blocks
}

// Verdict implements Change.
func (ExtraInFile) Verdict() Verdict { return Blocks }

// Verdict implements Change.
func (c TypeChanged) Verdict() Verdict {
	if c.Widening {
		return NeedsCast
	}
	return Blocks
}

// Verdict implements Change.
func (c NullabilityChanged) Verdict() Verdict {
	if c.NullCountKnown && c.NullCount == 0 {
		return OK
	}
	return Blocks
}

// Verdict implements Change.
func (LikelyRename) Verdict() Verdict { return Blocks }

// Verdict implements Change.
func (Renamed) Verdict() Verdict { return NeedsCast }

// Verdict implements Change.
func (CaseDiffers) Verdict() Verdict { return OK }

// Verdict implements Change.
func (UnsupportedInFile) Verdict() Verdict { return Blocks }

// Reason implements Change.
func (c UnsupportedInFile) Reason() string {
	why := c.File.Reason
	if why == "" {
		why = "Databricks has no type for it"
	}
	return fmt.Sprintf("%s is %s in the file: %s; Spark cannot read the files' schema, so COPY INTO rejects them whatever the table has (the other columns and the row counts are readable)",
		what(c.Path), c.File.Parquet, why)
}

func what(p Path) string {
	if len(p) == 0 {
		return "the column"
	}
	switch p[len(p)-1] {
	case "element":
		return "the elements of " + p[:len(p)-1].String()
	case "key":
		return "the keys of " + p[:len(p)-1].String()
	case "value":
		return "the values of " + p[:len(p)-1].String()
	}
	if len(p) == 1 {
		return "column " + p.String()
	}
	return "member " + p.String()
}

func fieldDesc(f Field) string {
	s := f.Type.String()
	if !f.Nullable {
		s += " NOT NULL"
	}
	return s
}

// Reason implements Change.
func (c MissingInFile) Reason() string {
	if c.Table.Nullable {
		return fmt.Sprintf("%s (%s) is in the table but not in the file: COPY INTO fills it with NULL", what(c.Path), fieldDesc(c.Table))
	}
	return fmt.Sprintf("%s (%s) is in the table but not in the file: COPY INTO would write NULL into a NOT NULL column and fail (SQLSTATE 23502)", what(c.Path), fieldDesc(c.Table))
}

// Reason implements Change.
func (c ExtraInFile) Reason() string {
	return fmt.Sprintf("%s (%s) is in the file but not in the table: COPY INTO with mergeSchema = false rejects the file (DELTA_METADATA_MISMATCH)", what(c.Path), fieldDesc(c.File))
}

// Reason implements Change.
func (c TypeChanged) Reason() string {
	w := what(c.Path)
	switch {
	case c.Widening && c.Table.Kind == String:
		return fmt.Sprintf("%s is %s in the file and %s in the table: every value converts to a string without loss, but COPY INTO does not cast implicitly; load through CAST(… AS %s)", w, c.File, c.Table, c.Table.SQL())
	case c.Widening:
		return fmt.Sprintf("%s is %s in the file and %s in the table: every value fits, but COPY INTO is not documented to cast implicitly; load through CAST(… AS %s) or confirm with VALIDATE", w, c.File, c.Table, c.Table.SQL())
	case isTimestamp(c.File.Kind) && isTimestamp(c.Table.Kind):
		return fmt.Sprintf("%s is %s in the file and %s in the table: a UTC instant and a local date-time without time zone are different values; convert explicitly, stating the time zone", w, tsDesc(c.File.Kind), tsDesc(c.Table.Kind))
	case c.File.Kind == c.Table.Kind && c.File.Kind == Decimal:
		return fmt.Sprintf("%s is %s in the file and %s in the table: values may not fit (fewer integer digits or a smaller scale); COPY INTO rejects the file", w, c.File, c.Table)
	case narrowing(c.File, c.Table):
		return fmt.Sprintf("%s is %s in the file and %s in the table: values may not fit (narrowing); COPY INTO rejects the file", w, c.File, c.Table)
	}
	return fmt.Sprintf("%s is %s in the file and %s in the table: incompatible types; COPY INTO rejects the file", w, c.File, c.Table)
}

func isTimestamp(k Kind) bool { return k == Timestamp || k == TimestampNTZ }

func tsDesc(k Kind) string {
	if k == Timestamp {
		return "timestamp (UTC instant)"
	}
	return "timestamp_ntz (local date-time)"
}

// narrowing reports whether the table type is narrower than the file type in the same family.
func narrowing(file, table Type) bool { return CanWiden(table, file) }

// Reason implements Change.
func (c NullabilityChanged) Reason() string {
	var subject string
	switch w := what(c.Path); {
	case strings.HasPrefix(w, "the elements of"), strings.HasPrefix(w, "the values of"):
		subject = w + " may be NULL in the file and are NOT NULL in the table"
	default:
		subject = w + " is nullable in the file and NOT NULL in the table"
	}
	switch {
	case c.NullCountKnown && c.NullCount == 0:
		return subject + ": the file's statistics show no NULLs, so the load passes"
	case c.NullCountKnown:
		return fmt.Sprintf("%s: the file's statistics show %d NULLs, which COPY INTO rejects (SQLSTATE 23502)", subject, c.NullCount)
	}
	return subject + ": the file has no NULL-count statistics for it, so NULLs cannot be ruled out"
}

// Reason implements Change.
func (c LikelyRename) Reason() string {
	ev := ""
	if c.Evidence != "" {
		ev = " (" + c.Evidence + ")"
	}
	return fmt.Sprintf("column %s (%s) is only in the file and %s (%s) only in the table: probably renamed%s. COPY INTO rejects %s and would leave %s NULL; confirm, then load with %s AS %s",
		c.FilePath, c.File.Type, c.Path, c.Table.Type, ev, c.FilePath, c.Path, QuoteIdent(c.File.Name), QuoteIdent(c.Table.Name))
}

// Reason implements Change.
func (c Renamed) Reason() string {
	if c.Evidence != "" {
		return fmt.Sprintf("%s is %s in the file: %s; COPY INTO matches columns by name, so load through %s AS %s",
			what(c.Path), c.FilePath, c.Evidence, QuoteIdent(c.FilePath[len(c.FilePath)-1]), QuoteIdent(c.Path[len(c.Path)-1]))
	}
	return fmt.Sprintf("the file stores %s under its column-mapping physical name %s; COPY INTO matches columns by name, so load through %s AS %s",
		what(c.Path), c.FilePath, QuoteIdent(c.FilePath[len(c.FilePath)-1]), QuoteIdent(c.Path[len(c.Path)-1]))
}

// Reason implements Change.
func (c CaseDiffers) Reason() string {
	return fmt.Sprintf("%s in the file matches %s in the table: names are case-insensitive", c.FilePath, c.Path)
}

// CanWiden reports whether every value of type from is exactly representable in type to, by
// the Delta type-widening rules: byte → short → int → bigint; byte, short, int → double;
// byte, short, int, bigint → decimal with enough integer digits; float → double; decimal →
// decimal with a scale and an integer part at least as large; date → timestamp_ntz; void → any.
// Nested types widen when their elements, keys and values do. Equal types are not widenings.
func CanWiden(from, to Type) bool {
	if from.Kind == Void && to.Kind != Void {
		return true
	}
	switch from.Kind {
	case Byte, Short, Integer, Long:
		switch to.Kind {
		case Byte, Short, Integer, Long:
			return intRank(to.Kind) > intRank(from.Kind)
		case Double:
			return from.Kind != Long
		case Decimal:
			return to.Precision-to.Scale >= intDigits(from.Kind)
		}
	case Float:
		return to.Kind == Double
	case Decimal:
		return to.Kind == Decimal && (to.Precision != from.Precision || to.Scale != from.Scale) &&
			to.Scale >= from.Scale && to.Precision-to.Scale >= from.Precision-from.Scale
	case Date:
		return to.Kind == TimestampNTZ
	}
	return false
}

// LosslessCast reports whether CAST(x AS to) keeps every value of type from: the widenings
// of CanWiden, and numbers, booleans, dates and timestamps to string (Spark's string forms
// of them cast back to the same value). Equal types are not casts.
func LosslessCast(from, to Type) bool {
	if CanWiden(from, to) {
		return true
	}
	if to.Kind != String {
		return false
	}
	switch from.Kind {
	case Boolean, Byte, Short, Integer, Long, Float, Double, Decimal, Date, Timestamp, TimestampNTZ:
		return true
	}
	return false
}

func intRank(k Kind) int {
	switch k {
	case Byte:
		return 1
	case Short:
		return 2
	case Integer:
		return 3
	case Long:
		return 4
	}
	return 0
}

// intDigits is the number of decimal digits the largest value of an integer type needs
// (Delta's rule for integer → decimal widening).
func intDigits(k Kind) int {
	switch k {
	case Byte:
		return 3
	case Short:
		return 5
	case Integer:
		return 10
	}
	return 20
}

// Option changes how Diff matches columns.
type Option func(*config)

type config struct {
	physical *bool
	renames  bool
}

// MatchPhysicalNames forces matching file columns by the table's column-mapping physical names
// on (true) or off (false). By default it is on when the table schema has physical names.
func MatchPhysicalNames(on bool) Option { return func(c *config) { c.physical = &on } }

// NoRenameGuess turns off LikelyRename: a column only in the file and one only in the table
// are reported as ExtraInFile and MissingInFile.
func NoRenameGuess() Option { return func(c *config) { c.renames = false } }

// Diff compares a fallback file's schema with the table's and returns what COPY INTO with
// mergeSchema = false will meet, column by column and into nested struct members, array
// elements and map keys and values. Columns are matched by name case-insensitively (an exact
// match first); under column mapping, by physical name first, then by name. Changes come in
// table column order, then columns only in the file. Diff is pure: it does not modify its
// inputs.
func Diff(file, table Schema, opts ...Option) []Change {
	cfg := config{renames: true}
	for _, o := range opts {
		o(&cfg)
	}
	physical := table.HasColumnMapping()
	if cfg.physical != nil {
		physical = *cfg.physical
	}
	d := differ{physical: physical, renames: cfg.renames}
	d.fields(file.Fields, table.Fields, nil, nil, nil)
	return d.out
}

type differ struct {
	physical bool
	renames  bool
	out      []Change
}

type pair struct {
	file, table int // indexes; -1 when absent
	byPhysical  bool
}

// match pairs file fields with table fields: by physical name (when enabled), then exact name,
// then case-insensitive name. The result lists every table field in order (file = -1 when
// unmatched), then the unmatched file fields in order (table = -1).
func (d *differ) match(ff, tf []Field) []pair {
	fileUsed := make([]bool, len(ff))
	pairs := make([]pair, len(tf))
	for i := range pairs {
		pairs[i] = pair{file: -1, table: i}
	}
	find := func(eq func(string) bool) int {
		for j, f := range ff {
			if !fileUsed[j] && eq(f.Name) {
				return j
			}
		}
		return -1
	}
	if d.physical {
		for i, t := range tf {
			if t.PhysicalName == "" {
				continue
			}
			if j := find(func(n string) bool { return strings.EqualFold(n, t.PhysicalName) }); j >= 0 {
				fileUsed[j] = true
				pairs[i].file = j
				pairs[i].byPhysical = !strings.EqualFold(ff[j].Name, t.Name)
			}
		}
	}
	for _, exact := range []bool{true, false} {
		for i, t := range tf {
			if pairs[i].file >= 0 {
				continue
			}
			j := find(func(n string) bool {
				if exact {
					return n == t.Name
				}
				return strings.EqualFold(n, t.Name)
			})
			if j >= 0 {
				fileUsed[j] = true
				pairs[i].file = j
			}
		}
	}
	for j := range ff {
		if !fileUsed[j] {
			pairs = append(pairs, pair{file: j, table: -1})
		}
	}
	return pairs
}

// likelyRenames pairs an unmatched file field with an unmatched table field when its type
// equals that table field's type, no other unmatched field on either side has that type, and
// their names are alike (SimilarNames): the type alone is no evidence. It returns table
// index → file index.
func likelyRenames(ff, tf []Field, pairs []pair) map[int]int {
	var onlyFile, onlyTable []int
	for _, p := range pairs {
		switch {
		case p.file < 0:
			onlyTable = append(onlyTable, p.table)
		case p.table < 0:
			onlyFile = append(onlyFile, p.file)
		}
	}
	out := map[int]int{}
	for _, j := range onlyFile {
		var cands []int
		for _, i := range onlyTable {
			if ff[j].Type.Equal(tf[i].Type) {
				cands = append(cands, i)
			}
		}
		if len(cands) != 1 {
			continue
		}
		if _, ok := SimilarNames(ff[j].Name, tf[cands[0]].Name); !ok {
			continue
		}
		back := 0
		for _, j2 := range onlyFile {
			if ff[j2].Type.Equal(tf[cands[0]].Type) {
				back++
			}
		}
		if back == 1 {
			out[cands[0]] = j
		}
	}
	return out
}

// fields diffs two field lists at the same level. tpath and fpath are the parents' paths in
// table and file terms; tp is the enclosing top-level column (nil at the top level).
func (d *differ) fields(ff, tf []Field, tpath, fpath *pathNode, tp *top) {
	pairs := d.match(ff, tf)
	var renameOf map[int]int // table index → file index
	if d.renames {
		renameOf = likelyRenames(ff, tf, pairs)
	}
	renamedFile := map[int]bool{}
	for _, j := range renameOf {
		renamedFile[j] = true
	}

	// Changes point into ff and tf (never modified) for their top-level columns: a table
	// wider than the files costs no copy of each column it has and they lack.
	for _, p := range pairs {
		switch {
		case p.file >= 0 && p.table >= 0:
			f, t := &ff[p.file], &tf[p.table]
			d.pair(*f, *t, tpath.child(t.Name), fpath.child(f.Name), p.byPhysical, d.topFor(tp, f, t))
		case p.table >= 0:
			t := &tf[p.table]
			if j, ok := renameOf[p.table]; ok {
				f := &ff[j]
				ctp := d.topFor(tp, f, t)
				ev, _ := SimilarNames(f.Name, t.Name)
				d.out = append(d.out, LikelyRename{Path: tpath.child(t.Name).path(), FilePath: fpath.child(f.Name).path(), File: *f, Table: *t, Evidence: ev, top: ctp})
				// Nested nullability still matters once the operator confirms the rename.
				if f.Nullable && !t.Nullable {
					d.out = append(d.out, NullabilityChanged{Path: tpath.child(t.Name).path(), NullCount: f.NullCount, NullCountKnown: f.NullCountKnown, top: ctp})
				}
				continue
			}
			d.out = append(d.out, MissingInFile{Path: tpath.child(t.Name).path(), Table: *t, top: d.topFor(tp, nil, t)})
		default:
			if renamedFile[p.file] {
				continue
			}
			f := &ff[p.file]
			if f.Type.HasUnsupported() {
				d.unsupported(f.Type, tpath.child(f.Name), d.topFor(tp, f, nil))
				continue
			}
			// A file column the table lacks is named in the table's terms where its parent is.
			d.out = append(d.out, ExtraInFile{Path: tpath.child(f.Name).path(), File: *f, top: d.topFor(tp, f, nil)})
		}
	}
}

// topFor returns the top-level column of a change: the enclosing one (tp) inside a column,
// else, at the top level, the column pair itself (file or table may be nil).
func (d *differ) topFor(tp *top, file, table *Field) top {
	if tp != nil {
		return *tp
	}
	return top{file: file, table: table, physical: d.physical, renames: d.renames}
}

func (d *differ) pair(f, t Field, tpath, fpath *pathNode, byPhysical bool, tp top) {
	switch {
	case byPhysical:
		d.out = append(d.out, Renamed{Path: tpath.path(), FilePath: fpath.path(), top: tp})
	case f.Name != t.Name:
		d.out = append(d.out, CaseDiffers{Path: tpath.path(), FilePath: fpath.path()})
	}
	if f.Nullable && !t.Nullable {
		d.out = append(d.out, NullabilityChanged{Path: tpath.path(), NullCount: f.NullCount, NullCountKnown: f.NullCountKnown, top: tp})
	}
	d.types(f.Type, t.Type, tpath, fpath, tp)
}

// unsupported reports every Unsupported type inside t (a file column the table lacks).
func (d *differ) unsupported(t Type, path *pathNode, tp top) {
	switch t.Kind {
	case Unsupported:
		d.out = append(d.out, UnsupportedInFile{Path: path.path(), File: t, top: tp})
	case Struct:
		for _, f := range t.Fields {
			d.unsupported(f.Type, path.child(f.Name), tp)
		}
	case Array:
		if t.Elem != nil {
			d.unsupported(*t.Elem, path.child("element"), tp)
		}
	case Map:
		if t.Key != nil {
			d.unsupported(*t.Key, path.child("key"), tp)
		}
		if t.Value != nil {
			d.unsupported(*t.Value, path.child("value"), tp)
		}
	}
}

func (d *differ) types(ft, tt Type, tpath, fpath *pathNode, tp top) {
	switch {
	case ft.Kind == Unsupported:
		d.out = append(d.out, UnsupportedInFile{Path: tpath.path(), File: ft, top: tp})
	case ft.Kind == Struct && tt.Kind == Struct:
		d.fields(ft.Fields, tt.Fields, tpath, fpath, &tp)
	case ft.Kind == Array && tt.Kind == Array && ft.Elem != nil && tt.Elem != nil:
		ep := tpath.child("element")
		if ft.ContainsNull && !tt.ContainsNull {
			d.out = append(d.out, NullabilityChanged{Path: ep.path(), top: tp})
		}
		d.types(*ft.Elem, *tt.Elem, ep, fpath.child("element"), tp)
	case ft.Kind == Map && tt.Kind == Map && ft.Key != nil && tt.Key != nil && ft.Value != nil && tt.Value != nil:
		d.types(*ft.Key, *tt.Key, tpath.child("key"), fpath.child("key"), tp)
		vp := tpath.child("value")
		if ft.ValueContainsNull && !tt.ValueContainsNull {
			d.out = append(d.out, NullabilityChanged{Path: vp.path(), top: tp})
		}
		d.types(*ft.Value, *tt.Value, vp, fpath.child("value"), tp)
	case ft.Kind != tt.Kind || !typesEqual(ft, tt, strings.EqualFold) && ft.Kind != Struct && ft.Kind != Array && ft.Kind != Map:
		d.out = append(d.out, TypeChanged{Path: tpath.path(), File: ft, Table: tt, Widening: LosslessCast(ft, tt), top: tp})
	}
}

// ChangeInfo is the flat, serialisable form of a Change, as reports print it.
type ChangeInfo struct {
	Kind     ChangeKind `json:"kind"`
	Path     Path       `json:"path"`
	FilePath Path       `json:"file_path,omitempty"`
	Verdict  Verdict    `json:"verdict"`
	// FileType and TableType are Spark simpleString types where the change has them.
	FileType  string `json:"file_type,omitempty"`
	TableType string `json:"table_type,omitempty"`
	Reason    string `json:"reason"`
}

// Info returns the flat form of c.
func Info(c Change) ChangeInfo {
	in := ChangeInfo{Kind: c.Kind(), Path: c.Where(), Verdict: c.Verdict(), Reason: c.Reason()}
	switch c := c.(type) {
	case MissingInFile:
		in.TableType = fieldDesc(c.Table)
	case ExtraInFile:
		in.FileType = fieldDesc(c.File)
	case TypeChanged:
		in.FileType, in.TableType = c.File.String(), c.Table.String()
	case LikelyRename:
		in.FilePath = c.FilePath
		in.FileType, in.TableType = fieldDesc(c.File), fieldDesc(c.Table)
	case Renamed:
		in.FilePath = c.FilePath
	case CaseDiffers:
		in.FilePath = c.FilePath
	case UnsupportedInFile:
		in.FileType = c.File.String()
	}
	return in
}

// Infos returns the flat form of every change.
func Infos(changes []Change) []ChangeInfo {
	out := make([]ChangeInfo, len(changes))
	for i, c := range changes {
		out[i] = Info(c)
	}
	return out
}

// Label is the change's label in text reports: its verdict (ok, needs-cast, blocks), except
// for a rename the load maps (Renamed), labelled rename: its verdict is needs-cast only in
// that it needs the projection, which reads the column under its new name; no value is cast.
func (in ChangeInfo) Label() string {
	if in.Kind == KindRenamed {
		return "rename"
	}
	return in.Verdict.String()
}

// String renders the change as "path: label: reason".
func (in ChangeInfo) String() string {
	return in.Path.String() + ": " + in.Label() + ": " + in.Reason
}

// MarshalJSON implements json.Marshaler through ChangeInfo.
func (c MissingInFile) MarshalJSON() ([]byte, error) { return json.Marshal(Info(c)) }

// MarshalJSON implements json.Marshaler through ChangeInfo.
func (c ExtraInFile) MarshalJSON() ([]byte, error) { return json.Marshal(Info(c)) }

// MarshalJSON implements json.Marshaler through ChangeInfo.
func (c TypeChanged) MarshalJSON() ([]byte, error) { return json.Marshal(Info(c)) }

// MarshalJSON implements json.Marshaler through ChangeInfo.
func (c NullabilityChanged) MarshalJSON() ([]byte, error) { return json.Marshal(Info(c)) }

// MarshalJSON implements json.Marshaler through ChangeInfo.
func (c LikelyRename) MarshalJSON() ([]byte, error) { return json.Marshal(Info(c)) }

// MarshalJSON implements json.Marshaler through ChangeInfo.
func (c Renamed) MarshalJSON() ([]byte, error) { return json.Marshal(Info(c)) }

// MarshalJSON implements json.Marshaler through ChangeInfo.
func (c CaseDiffers) MarshalJSON() ([]byte, error) { return json.Marshal(Info(c)) }

// MarshalJSON implements json.Marshaler through ChangeInfo.
func (c UnsupportedInFile) MarshalJSON() ([]byte, error) { return json.Marshal(Info(c)) }
