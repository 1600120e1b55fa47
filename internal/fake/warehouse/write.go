package warehouse

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// commitSpec is one new version of a table.
type commitSpec struct {
	op              string
	params, metrics map[string]string
	blind           bool
	user, engine    string // default: the history user (historyUser), defaultEngineInfo
	// adds and removes are the data files the version adds and removes: the log gets their
	// add and remove actions and the table's live files change accordingly.
	adds    []dataFile
	removes []dataFile
	// userMetadata is the commit's userMetadata; empty means the running statement's session
	// value (none outside a statement).
	userMetadata string
	// noDataChange marks the adds and removes dataChange false (OPTIMIZE rearranges rows,
	// it does not change them).
	noDataChange bool
	// readds are live files committed again (dataChange false) with new fields: the
	// backfill of row IDs when row tracking is enabled.
	readds []dataFile
}

// dataFile is one data file of a table.
type dataFile struct {
	path    string // relative to the table root, as add and remove actions name it
	dir     string // the folder it is in on disk; "" when the engine does not keep the file
	size    int64
	rows    int64
	modTime int64 // milliseconds since the epoch
	// tracked is set when row tracking numbered the file's rows: its add action carries
	// baseRowId and defaultRowCommitVersion (rowtracking.go).
	tracked    bool
	baseRowID  int64
	rowVersion int64
}

// local returns the file on disk, "" when the engine does not keep it.
func (f dataFile) local() string {
	if f.dir == "" {
		return ""
	}
	return filepath.Join(f.dir, f.path)
}

// defaultEngineInfo is the engineInfo of the warehouse's own commits.
const defaultEngineInfo = "Databricks-Runtime/fake-warehouse"

// addCommit appends a history entry, writes its Delta log file for local locations, and
// returns its version.
func (e *DuckDB) addCommit(t *tableMeta, op string, params, metrics map[string]string, blindAppend bool) (int64, error) {
	return e.addCommitSpec(t, commitSpec{op: op, params: params, metrics: metrics, blind: blindAppend})
}

func (e *DuckDB) addCommitSpec(t *tableMeta, cs commitSpec) (int64, error) {
	v := t.baseVersion + int64(len(t.history))
	c := commit{Version: v, Timestamp: time.Now().UTC(), Operation: cs.op, Parameters: cs.params, Metrics: cs.metrics,
		IsBlindAppend: cs.blind, UserName: cs.user, EngineInfo: cs.engine, UserMetadata: cs.userMetadata}
	if c.UserName == "" {
		c.UserName = e.historyUser()
	}
	if c.UserMetadata == "" && e.stmt != nil {
		c.UserMetadata = e.stmt.userMetadata
	}
	if c.EngineInfo == "" {
		c.EngineInfo = defaultEngineInfo
	}
	if v > 0 {
		rv := v - 1
		c.ReadVersion = &rv
	}
	if c.Parameters == nil {
		c.Parameters = map[string]string{}
	}
	if c.Metrics == nil {
		c.Metrics = map[string]string{}
	}
	before := t.lastMetaData
	lines, err := e.deltaActions(t, c)
	if err != nil {
		return 0, errInternal(err)
	}
	// The schema and properties of the version, shared with the previous version while they
	// do not change (RESTORE goes back to them).
	if t.lastMetaData != before || t.snapCols == nil {
		t.snapCols, t.snapProps = cloneFields(t.cols), maps.Clone(t.props)
	}
	c.cols, c.props = t.snapCols, t.snapProps
	ts := c.Timestamp.UnixMilli()
	for _, f := range cs.removes {
		fields := orderedJSON{
			{"path", f.path}, {"deletionTimestamp", ts}, {"dataChange", !cs.noDataChange}, {"extendedFileMetadata", true},
			{"partitionValues", map[string]string{}}, {"size", f.size},
		}
		if f.tracked {
			fields = append(fields, kv{"baseRowId", f.baseRowID}, kv{"defaultRowCommitVersion", f.rowVersion})
		}
		rm, err := json.Marshal(map[string]any{"remove": fields})
		if err != nil {
			return 0, errInternal(err)
		}
		lines = append(lines, string(rm))
	}
	addLine := func(f dataFile, dataChange bool) error {
		stats, _ := json.Marshal(map[string]any{"numRecords": f.rows})
		fields := orderedJSON{
			{"path", f.path}, {"partitionValues", map[string]string{}}, {"size", f.size},
			{"modificationTime", f.modTime}, {"dataChange", dataChange}, {"stats", string(stats)},
		}
		if f.tracked {
			fields = append(fields, kv{"baseRowId", f.baseRowID}, kv{"defaultRowCommitVersion", f.rowVersion})
		}
		add, err := json.Marshal(map[string]any{"add": fields})
		if err != nil {
			return err
		}
		lines = append(lines, string(add))
		return nil
	}
	for _, f := range cs.readds {
		if err := addLine(f, false); err != nil {
			return 0, errInternal(err)
		}
	}
	for _, f := range cs.adds {
		if err := addLine(f, !cs.noDataChange); err != nil {
			return 0, errInternal(err)
		}
	}
	if t.nextRowID > t.loggedNextRowID {
		dm, err := rowTrackingDomain(t.nextRowID - 1)
		if err != nil {
			return 0, errInternal(err)
		}
		lines = append(lines, dm)
		t.loggedNextRowID = t.nextRowID
	}
	c.logLines = lines
	c.adds = cs.adds
	for _, f := range cs.removes {
		c.removes = append(c.removes, f.path)
	}
	t.files = applyFiles(t.files, c.removes, cs.adds)
	for _, f := range cs.readds {
		for i := range t.files {
			if t.files[i].path == f.path {
				t.files[i] = f
			}
		}
	}
	c.seq = e.commitSeq.Add(1)
	if !t.foreignLog {
		if err := writeDeltaLog(t.location, []commit{c}); err != nil {
			return 0, errInternal(fmt.Errorf("write the Delta log of %s: %w", t.fullName(), err))
		}
		if _, local := localPath(t.location); local {
			c.logLines = nil // on disk; memory stays flat over many versions
		}
	}
	t.history = append(t.history, c)
	if e.stmt != nil {
		e.stmt.commits = append(e.stmt.commits, CommitRef{Table: t.fullName(), Version: v})
	}
	t.lastModified = c.Timestamp
	return v, nil
}

// applyFiles returns the live files after a version removed and added some.
func applyFiles(live []dataFile, removes []string, adds []dataFile) []dataFile {
	if len(removes) > 0 {
		gone := map[string]bool{}
		for _, p := range removes {
			gone[p] = true
		}
		kept := make([]dataFile, 0, len(live))
		for _, f := range live {
			if !gone[f.path] {
				kept = append(kept, f)
			}
		}
		live = kept
	}
	return append(live, adds...)
}

// filesSize returns the total size of files.
func filesSize(files []dataFile) int64 {
	var n int64
	for _, f := range files {
		n += f.size
	}
	return n
}

// cloneFields returns a deep copy of fields.
func cloneFields(fs []Field) []Field {
	if fs == nil {
		return []Field{}
	}
	out := make([]Field, len(fs))
	for i, f := range fs {
		out[i] = f
		out[i].Type = cloneType(f.Type)
	}
	return out
}

func cloneType(t *Type) *Type {
	if t == nil {
		return nil
	}
	c := *t
	c.Elem, c.Key, c.Value = cloneType(t.Elem), cloneType(t.Key), cloneType(t.Value)
	if t.Fields != nil {
		c.Fields = cloneFields(t.Fields)
	}
	return &c
}

// historyUser is the userName the warehouse's own commits record: Unknowns.HistoryUserName
// when set, else the user statements run as.
func (e *DuckDB) historyUser() string {
	if u := e.Unknowns().HistoryUserName; u != "" {
		return u
	}
	return e.opts.UserName
}

// rowMark returns the largest DuckDB rowid of a table's rows (-1 when empty): rows appended
// after it have larger rowids.
func (e *DuckDB) rowMark(ctx context.Context, t *tableMeta) (int64, error) {
	res, err := e.duckQuery(ctx, "SELECT coalesce(max(rowid), -1) FROM "+duckIdent(t.phys))
	if err != nil {
		return 0, err
	}
	return res.Int(0, 0), nil
}

// written is what a commit wrote: its data files and their total size.
type written struct {
	files int
	bytes int64
	adds  []dataFile
}

// writeDataFiles writes the rows appended after mark (every row for mark -1) as one Parquet
// data file with the columns' physical names, as a Delta writer does. The file goes into the
// table's location when that is a local folder whose log the engine keeps; otherwise it is
// only measured (the metrics still count it) and removed.
func (e *DuckDB) writeDataFiles(ctx context.Context, t *tableMeta, mark int64) (written, error) {
	return e.writeRows(ctx, t, fmt.Sprintf("rowid > %d", mark))
}

// writeRows writes the rows where (a DuckDB condition over the table's columns, hidden ones
// included) holds as one Parquet data file, as writeDataFiles does.
func (e *DuckDB) writeRows(ctx context.Context, t *tableMeta, where string) (written, error) {
	res, err := e.duckQuery(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", duckIdent(t.phys), where))
	if err != nil {
		return written{}, err
	}
	rows := res.Int(0, 0)
	if rows == 0 {
		return written{}, nil
	}
	name := newDataFileName()
	tr, err := e.trackRows(ctx, t, where, name, rows)
	if err != nil {
		return written{}, err
	}
	exprs := make([]string, len(t.cols))
	for i, c := range t.cols {
		exprs[i] = physicalExpr(duckIdent(c.Name), c.Type) + " AS " + duckIdent(c.physical())
	}
	// In rowid order: the order row IDs were given in.
	df, keep, err := e.newDataFile(ctx, t, name, fmt.Sprintf("SELECT %s FROM %s WHERE %s = %s ORDER BY rowid", strings.Join(exprs, ", "), duckIdent(t.phys), duckIdent(hiddenFile), duckString(name)))
	if err != nil {
		return written{}, err
	}
	w, err := df.written(keep, rows)
	if err == nil && tr.tracked {
		w.adds[0].tracked, w.adds[0].baseRowID, w.adds[0].rowVersion = true, tr.baseRowID, tr.rowVersion
	}
	return w, err
}

// rewriteTouched writes, after a DELETE, UPDATE or MERGE, one data file of the rows the
// statement changed or inserted (their data file is cleared: withChangedMark) and of the rows
// left in the files it touched (files now holding fewer rows than they were written with), and
// returns it with the touched files, which the commit removes, and the rows copied from them:
// Delta's copy-on-write rewrites the files it touches and leaves the others as they are.
func (e *DuckDB) rewriteTouched(ctx context.Context, t *tableMeta) (written, []dataFile, int64, error) {
	res, err := e.duckQuery(ctx, fmt.Sprintf("SELECT %[1]s, count(*) FROM %[2]s WHERE %[1]s IS NOT NULL GROUP BY %[1]s", duckIdent(hiddenFile), duckIdent(t.phys)))
	if err != nil {
		return written{}, nil, 0, err
	}
	left := map[string]int64{}
	for i := range res.Rows {
		left[res.String(i, 0)] = res.Int(i, 1)
	}
	var touched []dataFile
	var names []string
	var copied int64
	for _, f := range t.files {
		if n := left[f.path]; n < f.rows {
			touched = append(touched, f)
			names = append(names, duckString(f.path))
			copied += n
		}
	}
	where := duckIdent(hiddenFile) + " IS NULL"
	if len(names) > 0 {
		where += " OR " + duckIdent(hiddenFile) + " IN (" + strings.Join(names, ", ") + ")"
	}
	w, err := e.writeRows(ctx, t, where)
	return w, touched, copied, err
}

// newDataFileName is the name of a new data file, as Delta writers name them.
func newDataFileName() string { return fmt.Sprintf("part-00000-%s-c000.snappy.parquet", newUUID()) }

// pendingFile is a data file written and not yet committed.
type pendingFile struct{ name, dir, file string }

// newDataFile writes the rows of query as the Parquet file name of t: in the table's location
// when that is a local folder whose log the engine keeps (keep), else in the working
// directory, where written removes it once measured.
func (e *DuckDB) newDataFile(ctx context.Context, t *tableMeta, name, query string) (pendingFile, bool, error) {
	dir, local := localPath(t.location)
	keep := local && !t.foreignLog
	if !keep {
		dir = filepath.Join(e.opts.Dir, "datafiles")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return pendingFile{}, false, errInternal(err)
	}
	file := filepath.Join(dir, name)
	if _, err := e.duckExec(ctx, fmt.Sprintf("COPY (%s) TO %s (FORMAT PARQUET, COMPRESSION SNAPPY)", query, duckString(file))); err != nil {
		_ = os.Remove(file)
		return pendingFile{}, false, err
	}
	return pendingFile{name: name, dir: dir, file: file}, keep, nil
}

// written measures the file; a file the engine does not keep is removed.
func (df pendingFile) written(keep bool, rows int64) (written, error) {
	fi, err := os.Stat(df.file)
	if err != nil {
		return written{}, errInternal(err)
	}
	f := dataFile{path: df.name, size: fi.Size(), rows: rows, modTime: fi.ModTime().UnixMilli()}
	if keep {
		f.dir = df.dir // shared with the table's location string: no copy per file
	} else {
		_ = os.Remove(df.file)
	}
	return written{files: 1, bytes: fi.Size(), adds: []dataFile{f}}, nil
}

// physicalExpr renames struct members to their physical names (struct members nested in
// arrays and maps keep their logical names).
func physicalExpr(expr string, t *Type) string {
	if t.Kind != KindStruct || !hasPhysicalMembers(t) {
		return expr
	}
	parts := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		parts[i] = duckIdent(f.physical()) + " := " + physicalExpr(expr+"."+duckIdent(f.Name), f.Type)
	}
	return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE struct_pack(%s) END", expr, strings.Join(parts, ", "))
}

func hasPhysicalMembers(t *Type) bool {
	for _, f := range t.Fields {
		if f.PhysicalName != "" && f.PhysicalName != f.Name || f.Type.Kind == KindStruct && hasPhysicalMembers(f.Type) {
			return true
		}
	}
	return false
}

// physical returns the field's physical name: its column-mapping name, else its name.
func (f Field) physical() string {
	if f.PhysicalName != "" {
		return f.PhysicalName
	}
	return f.Name
}

// columnMapping reports whether the table uses column mapping by name.
func (t *tableMeta) columnMapping() bool {
	return strings.EqualFold(t.props["delta.columnMapping.mode"], "name")
}

// assignPhysical gives every field (and struct member, outside arrays and maps) without one a
// column-mapping id and physical name, as Delta does for a table with
// delta.columnMapping.mode = name; new names are col-<uuid>. upgraded fields (an existing
// table switching to column mapping) keep their name as physical name.
func assignPhysical(t *tableMeta, cols []Field) []Field {
	if !t.columnMapping() {
		return cols
	}
	maxID, _ := strconv.ParseInt(t.props["delta.columnMapping.maxColumnId"], 10, 64)
	var walk func(fs []Field, upgrade bool)
	walk = func(fs []Field, upgrade bool) {
		for i := range fs {
			if fs[i].ID == 0 {
				maxID++
				fs[i].ID = maxID
				if upgrade {
					fs[i].PhysicalName = fs[i].Name
				} else {
					fs[i].PhysicalName = "col-" + newUUID()
				}
			}
			if fs[i].Type.Kind == KindStruct {
				walk(fs[i].Type.Fields, upgrade)
			}
		}
	}
	walk(cols, false)
	t.props["delta.columnMapping.maxColumnId"] = strconv.FormatInt(maxID, 10)
	return cols
}

// upgradeColumnMapping turns column mapping on for existing columns: their physical names
// are their current names (Delta does not rewrite data files on upgrade).
func upgradeColumnMapping(t *tableMeta) {
	maxID, _ := strconv.ParseInt(t.props["delta.columnMapping.maxColumnId"], 10, 64)
	var walk func(fs []Field)
	walk = func(fs []Field) {
		for i := range fs {
			if fs[i].ID == 0 {
				maxID++
				fs[i].ID, fs[i].PhysicalName = maxID, fs[i].Name
			}
			if fs[i].Type.Kind == KindStruct {
				walk(fs[i].Type.Fields)
			}
		}
	}
	walk(t.cols)
	t.props["delta.columnMapping.maxColumnId"] = strconv.FormatInt(maxID, 10)
}

// constraintPrefix is the table property prefix under which Delta keeps CHECK constraints.
const constraintPrefix = "delta.constraints."

// constraints returns the table's CHECK constraints (name → expression), by name.
func (t *tableMeta) constraints() [][2]string {
	var out [][2]string
	for k, v := range t.props {
		if strings.HasPrefix(k, constraintPrefix) {
			out = append(out, [2]string{strings.TrimPrefix(k, constraintPrefix), v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// constraintViolation returns the first row of relation (a DuckDB query with the table's
// columns) that violates a CHECK constraint of t, as DELTA_VIOLATE_CONSTRAINT_WITH_VALUES.
func (e *DuckDB) constraintViolation(ctx context.Context, t *tableMeta, relation string) error {
	for _, c := range t.constraints() {
		q, err := e.constraintQuery(ctx, t, c[1], relation, "*")
		if err != nil {
			return err
		}
		res, err := e.duckQuery(ctx, q+" LIMIT 1")
		if err != nil {
			return err
		}
		if len(res.Rows) == 0 {
			continue
		}
		var vals []string
		for i, col := range res.Columns {
			vals = append(vals, fmt.Sprintf(" - %s : %s", col.Name, res.String(0, i)))
		}
		return &SQLError{Class: "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES", SQLState: "23001", Message: fmt.Sprintf(
			"CHECK constraint %s (%s) violated by row with values:\n%s", c[0], c[1], strings.Join(vals, "\n"))}
	}
	return nil
}

// constraintQuery selects what from the rows of relation that violate expr (a Spark SQL
// boolean expression over t's columns; NULL passes, as in SQL).
func (e *DuckDB) constraintQuery(ctx context.Context, t *tableMeta, expr, relation, what string) (string, error) {
	p, err := newParser(fmt.Sprintf("SELECT %s FROM %s WHERE NOT coalesce((%s), true)", what, t.quoted(), expr))
	if err != nil {
		return "", err
	}
	q, _, err := e.rewrite(ctx, &Session{Catalog: t.catalog, Schema: t.schema}, p.toks, rewriteOpts{bareTables: true})
	if err != nil {
		return "", err
	}
	return strings.Replace(q, duckIdent(t.phys), "("+relation+")", 1), nil
}

// checkConstraints checks the rows appended after mark (all rows for mark -1) against t's
// CHECK constraints.
func (e *DuckDB) checkConstraints(ctx context.Context, t *tableMeta, mark int64) error {
	if len(t.constraints()) == 0 {
		return nil
	}
	return e.constraintViolation(ctx, t, fmt.Sprintf("SELECT * FROM %s WHERE rowid > %d", duckIdent(t.phys), mark))
}
