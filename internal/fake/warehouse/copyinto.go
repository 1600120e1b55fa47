package warehouse

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxCopyFiles is the most names COPY INTO's FILES clause accepts.
const maxCopyFiles = 1000

// maxValidatePreview is the most rows VALIDATE returns.
const maxValidatePreview = 50

type copyStmt struct {
	table      []string
	path       string
	selectToks []token // FROM (SELECT … FROM 'path' …): the subquery's tokens
	pathIdx    int     // index of the path literal in selectToks
	format     string
	validate   bool
	validateN  int // 0 means ALL
	hasFiles   bool
	files      []string
	pattern    string
	formatOpts map[string]string
	copyOpts   map[string]string
}

func parseCopy(p *parser) (*copyStmt, error) {
	st := &copyStmt{formatOpts: map[string]string{}, copyOpts: map[string]string{}}
	if err := p.expectKw("COPY", "INTO"); err != nil {
		return nil, err
	}
	name, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	st.table = name
	if p.peek().isKw("BY") || p.peek().isOp("(") {
		return nil, errUnsupported("COPY INTO with BY POSITION or a column list (headerless CSV only)")
	}
	if err := p.expectKw("FROM"); err != nil {
		return nil, err
	}
	if p.acceptOp("(") {
		start, depth := p.i, 0
		st.pathIdx = -1
		for {
			t := p.peek()
			if t.kind == tkEOF {
				return nil, p.errorf("unclosed subquery")
			}
			if t.isOp("(") {
				depth++
			} else if t.isOp(")") {
				if depth == 0 {
					break
				}
				depth--
			}
			if depth == 0 && t.isKw("FROM") && p.peekN(1).kind == tkString && st.pathIdx < 0 {
				st.pathIdx = p.i + 1 - start
				st.path = p.peekN(1).val
			}
			p.next()
		}
		st.selectToks = append([]token(nil), p.toks[start:p.i]...)
		st.selectToks = append(st.selectToks, token{kind: tkEOF})
		p.next() // ")"
		if st.pathIdx < 0 {
			return nil, p.errorf("the COPY INTO subquery must read FROM a path literal")
		}
		// Drop WITH (CREDENTIAL …) that follows the path inside the subquery.
		if st.pathIdx+1 < len(st.selectToks) && st.selectToks[st.pathIdx+1].isKw("WITH") {
			j, depth := st.pathIdx+2, 0
			for ; j < len(st.selectToks); j++ {
				if st.selectToks[j].isOp("(") {
					depth++
				} else if st.selectToks[j].isOp(")") {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			st.selectToks = append(st.selectToks[:st.pathIdx+1], st.selectToks[j+1:]...)
		}
	} else {
		path, err := p.stringLit()
		if err != nil {
			return nil, err
		}
		st.path = path
		if p.acceptKw("WITH") {
			if err := skipParens(p); err != nil {
				return nil, err
			}
		}
	}
	for !p.atEnd() {
		switch {
		case p.acceptKw("FILEFORMAT"):
			if err := p.expectOp("="); err != nil {
				return nil, err
			}
			f, err := p.ident()
			if err != nil {
				return nil, err
			}
			st.format = strings.ToUpper(f)
		case p.acceptKw("VALIDATE"):
			st.validate = true
			if p.acceptKw("ALL") {
				break
			}
			if p.peek().kind == tkNumber {
				n, err := strconv.Atoi(p.next().val)
				if err != nil || n < 1 {
					return nil, p.errorf("VALIDATE takes a positive number of rows")
				}
				st.validateN = n
				if err := p.expectKw("ROWS"); err != nil {
					return nil, err
				}
			}
		case p.acceptKw("FILES"):
			if st.pattern != "" {
				return nil, p.errorf("FILES and PATTERN cannot be used together")
			}
			if err := p.expectOp("="); err != nil {
				return nil, err
			}
			if err := p.expectOp("("); err != nil {
				return nil, err
			}
			st.hasFiles = true
			for !p.acceptOp(")") {
				f, err := p.stringLit()
				if err != nil {
					return nil, err
				}
				st.files = append(st.files, f)
				if !p.acceptOp(",") {
					if err := p.expectOp(")"); err != nil {
						return nil, err
					}
					break
				}
			}
		case p.acceptKw("PATTERN"):
			if st.hasFiles {
				return nil, p.errorf("FILES and PATTERN cannot be used together")
			}
			if err := p.expectOp("="); err != nil {
				return nil, err
			}
			pat, err := p.stringLit()
			if err != nil {
				return nil, err
			}
			st.pattern = pat
		case p.acceptKw("FORMAT_OPTIONS"):
			if err := parseOptions(p, st.formatOpts); err != nil {
				return nil, err
			}
		case p.acceptKw("COPY_OPTIONS"):
			if err := parseOptions(p, st.copyOpts); err != nil {
				return nil, err
			}
		default:
			return nil, p.errorf("unexpected COPY INTO clause")
		}
	}
	if st.format == "" {
		return nil, p.errorf("COPY INTO requires FILEFORMAT")
	}
	return st, nil
}

// parseOptions reads ( 'key' = value, … ) into opts, keys lower-cased.
func parseOptions(p *parser, opts map[string]string) error {
	if err := p.expectOp("("); err != nil {
		return err
	}
	for !p.acceptOp(")") {
		var key string
		if p.peek().kind == tkString {
			key, _ = p.stringLit()
		} else {
			k, err := p.ident()
			if err != nil {
				return err
			}
			key = k
		}
		if err := p.expectOp("="); err != nil {
			return err
		}
		v := p.next()
		if v.kind == tkEOF || v.kind == tkOp {
			return p.errorf("expected an option value")
		}
		opts[strings.ToLower(key)] = v.val
		if !p.acceptOp(",") {
			if err := p.expectOp(")"); err != nil {
				return err
			}
			break
		}
	}
	return nil
}

func skipParens(p *parser) error {
	if err := p.expectOp("("); err != nil {
		return err
	}
	depth := 1
	for depth > 0 {
		t := p.next()
		switch {
		case t.kind == tkEOF:
			return p.errorf("unclosed parenthesis")
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		}
	}
	return nil
}

func boolOpt(v string) bool { return strings.EqualFold(v, "true") }

// copyPlan is how one source file goes into the table.
type copyPlan struct {
	file    srcFile
	selects string // SELECT of the table's columns, in table order, from the file
}

func (e *DuckDB) copyInto(ctx context.Context, sess *Session, p *parser) (*Result, error) {
	st, err := parseCopy(p)
	if err != nil {
		return nil, err
	}
	t, err := e.table(sess, st.table)
	if err != nil {
		return nil, err
	}
	if st.format != "PARQUET" {
		return nil, errUnsupported("COPY INTO with FILEFORMAT = " + st.format)
	}
	if len(st.files) > maxCopyFiles {
		return nil, &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023",
			Message: fmt.Sprintf("FILES accepts at most %d file names, but %d were given.", maxCopyFiles, len(st.files))}
	}
	unk := e.Unknowns()
	var (
		files    []srcFile
		sd       *sourceDir
		partCols []Field
	)
	if st.hasFiles {
		if sd, files, err = e.filesEntries(ctx, st.path, st.files, unk); err != nil {
			return nil, err
		}
	} else {
		// A directory (its own files, or partition folders; hidden names skipped) or a single
		// file (a glob with Unknowns.GlobPaths); PATTERN matches paths relative to the
		// directory, at any depth.
		recursive := boolOpt(st.formatOpts["recursivefilelookup"]) || st.pattern != ""
		if sd, files, partCols, err = e.pathFiles(ctx, st.path, recursive, unk.GlobPaths); err != nil {
			return nil, err
		}
		if st.pattern != "" {
			re, err := globToRegexp(st.pattern)
			if err != nil {
				return nil, &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023", Message: err.Error()}
			}
			kept := files[:0]
			for _, f := range files {
				if re.MatchString(f.Rel) {
					kept = append(kept, f)
				}
			}
			files = kept
		}
	}

	force := boolOpt(st.copyOpts["force"])
	evolve := boolOpt(st.copyOpts["mergeschema"]) // only COPY_OPTIONS evolves the table
	mergeSource := boolOpt(st.formatOpts["mergeschema"])
	ignoreCorrupt := boolOpt(st.formatOpts["ignorecorruptfiles"])
	if !force {
		snap := snapshotFrom(ctx)
		kept := files[:0]
		for _, f := range files {
			lf, done := t.loaded[f.URL]
			if !done {
				kept = append(kept, f)
				continue
			}
			// Loaded by a commit this statement could not have seen: the two ran at once.
			if lf.Seq > snap && unk.CopyConflict != ConflictNone && !st.validate {
				return nil, unk.CopyConflict.conflictError(t.quoted(), f.URL)
			}
		}
		files = kept
	}

	// Read every file's footer; the source schema is the first readable file's (or all of
	// them merged), and every file is read in it.
	var (
		readable       []srcFile
		schemas        [][]Field
		skippedCorrupt int64
	)
	for i := range files {
		if err := e.stage(ctx, sd, &files[i]); err != nil {
			return nil, err
		}
		cols, err := e.readFileSchema(ctx, files[i])
		if err != nil {
			if ignoreCorrupt {
				skippedCorrupt++
				continue
			}
			return nil, err
		}
		readable = append(readable, files[i])
		schemas = append(schemas, cols)
	}
	if len(readable) == 0 {
		if st.validate {
			return e.validateCopy(ctx, t, nil, st.validateN)
		}
		if unk.CommitEmptyCopy {
			if _, err := e.addCommitSpec(t, commitSpec{op: "COPY INTO", params: copyParams(), metrics: copyMetrics(0, 0, 0, skippedCorrupt), blind: true}); err != nil {
				return nil, err
			}
		}
		return copyResult(0, skippedCorrupt), nil
	}
	src, err := sourceSchema(schemas, mergeSource, partCols)
	if err != nil {
		return nil, err
	}
	queries := make([]string, len(readable))
	for i, f := range readable {
		rel, err := fileRelation(f, schemas[i], src)
		if err != nil {
			return nil, err
		}
		if queries[i], err = e.copySource(ctx, sess, st, rel); err != nil {
			return nil, err
		}
	}
	srcCols, err := e.describeSQL(ctx, queries[0])
	if err != nil {
		return nil, err
	}
	exprs, newCols, err := matchCopySource(t, t.cols, srcCols, evolve, unk)
	if err != nil {
		return nil, err
	}
	plans := make([]copyPlan, len(readable))
	for i := range readable {
		plans[i] = copyPlan{file: readable[i], selects: fmt.Sprintf("SELECT %s FROM (%s) AS src", strings.Join(exprs, ", "), queries[i])}
	}

	if st.validate {
		return e.validateCopy(ctx, t, plans, st.validateN)
	}

	// One atomic commit: every file of the statement or none.
	if _, err := e.duckExec(ctx, "BEGIN TRANSACTION"); err != nil {
		return nil, err
	}
	rollback := func(err error) (*Result, error) {
		_, _ = e.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		if se, ok := e.classify(err).(*SQLError); ok && se.Class == "FAILED_READ_FILE" {
			se.Class = "FAILED_READ_FILE.NO_HINT"
			return nil, se
		}
		return nil, err
	}
	allCols := t.cols
	if len(newCols) > 0 {
		for _, c := range newCols {
			if _, err := e.duckExec(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", duckIdent(t.phys), duckIdent(c.Name), c.Type.Duck())); err != nil {
				return rollback(err)
			}
		}
		allCols = append(append([]Field(nil), t.cols...), newCols...)
		if exprs, _, err = matchCopySource(t, allCols, srcCols, false, unk); err != nil {
			return rollback(err)
		}
		for i := range plans {
			plans[i].selects = fmt.Sprintf("SELECT %s FROM (%s) AS src", strings.Join(exprs, ", "), queries[i])
		}
	}
	colList := make([]string, len(allCols))
	for i, c := range allCols {
		colList[i] = duckIdent(c.Name)
	}
	mark, err := e.rowMark(ctx, t)
	if err != nil {
		return rollback(err)
	}
	var inserted int64
	perFile := make([]int64, len(plans))
	for i, plan := range plans {
		n, err := e.duckExec(ctx, fmt.Sprintf("INSERT INTO %s (%s) %s", duckIdent(t.phys), strings.Join(colList, ", "), plan.selects))
		if err != nil {
			return rollback(err)
		}
		perFile[i] = n
		inserted += n
	}
	newT := *t
	newT.cols = allCols
	if err := e.checkConstraints(ctx, &newT, mark); err != nil {
		return rollback(err)
	}
	if _, err := e.duckExec(ctx, "COMMIT"); err != nil {
		return rollback(err)
	}
	t.cols = assignPhysical(t, allCols)
	written, err := e.writeDataFiles(ctx, t, mark)
	if err != nil {
		return nil, err
	}
	v, err := e.addCommitSpec(t, commitSpec{op: "COPY INTO", params: copyParams(),
		metrics: copyMetrics(written.files, written.bytes, inserted, skippedCorrupt), blind: len(newCols) == 0, adds: written.adds})
	if err != nil {
		return nil, err
	}
	seq := t.history[len(t.history)-1].seq
	for i, plan := range plans {
		t.loaded[plan.file.URL] = loadedFile{Path: plan.file.URL, Size: plan.file.Size, ModTime: plan.file.ModTime, Version: v, Rows: perFile[i], Seq: seq}
	}
	return copyResult(inserted, skippedCorrupt), nil
}

// copyParams are COPY INTO's operationParameters, as seen in real history.
func copyParams() map[string]string { return map[string]string{"statsOnLoad": "false"} }

// copyMetrics are COPY INTO's operationMetrics: numFiles and numOutputBytes count the data
// files written, not the source files; numSkippedCorruptFiles is always present.
func copyMetrics(files int, bytes, rows, skipped int64) map[string]string {
	return map[string]string{
		"numFiles":               strconv.Itoa(files),
		"numOutputBytes":         strconv.FormatInt(bytes, 10),
		"numOutputRows":          strconv.FormatInt(rows, 10),
		"numSkippedCorruptFiles": strconv.FormatInt(skipped, 10),
	}
}

// copySource is the COPY INTO source query over one file's relation: the relation itself, or
// the FROM (SELECT …) subquery with the path replaced by it.
func (e *DuckDB) copySource(ctx context.Context, sess *Session, st *copyStmt, rel string) (string, error) {
	if st.selectToks == nil {
		return rel, nil
	}
	toks := append([]token(nil), st.selectToks...)
	pt := toks[st.pathIdx]
	text := "(" + rel + ")"
	toks[st.pathIdx] = token{kind: tkIdent, raw: text, val: text, pre: pt.pre, pos: pt.pos, literal: true}
	q, _, err := e.rewrite(ctx, sess, toks, rewriteOpts{})
	return q, err
}

func containsField(fs []Field, name string) bool {
	for _, f := range fs {
		if strings.EqualFold(f.Name, name) {
			return true
		}
	}
	return false
}

func copyResult(inserted, skippedCorrupt int64) *Result {
	return &Result{
		Columns: []Column{
			{Name: "num_affected_rows", Type: Prim(KindLong)},
			{Name: "num_inserted_rows", Type: Prim(KindLong)},
			{Name: "num_skipped_corrupt_files", Type: Prim(KindLong)},
		},
		Rows:         [][]any{{inserted, inserted, skippedCorrupt}},
		ModifiedRows: int64p(inserted),
	}
}

// relativeFile turns a FILES entry into a path relative to the source directory. Entries are
// names relative to the directory; absolute URLs and paths must lie inside it.
func relativeFile(dirURL, name string) (string, error) {
	if strings.Contains(name, "://") || strings.HasPrefix(name, "/") || strings.HasPrefix(name, "file:") {
		u, err := canonicalURL(name)
		if err != nil {
			return "", err
		}
		if !isUnder(u, dirURL) || u == dirURL {
			return "", &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023",
				Message: fmt.Sprintf("The file '%s' in FILES is not under the source path '%s'.", name, dirURL)}
		}
		return strings.TrimPrefix(u, dirURL+"/"), nil
	}
	if strings.Contains("/"+name+"/", "/../") {
		return "", &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023",
			Message: fmt.Sprintf("The file '%s' in FILES is not under the source path '%s'.", name, dirURL)}
	}
	return strings.TrimPrefix(name, "./"), nil
}

// matchCopySource matches the source's columns to the table's as Delta does for COPY INTO:
// case-insensitive names, missing nullable columns filled with NULL, everything else an
// error. It returns the SELECT expressions of the table's columns, in table order, over the
// source aliased src, and with evolve the source columns the table lacks.
func matchCopySource(t *tableMeta, cols []Field, srcCols []Field, evolve bool, unk Unknowns) ([]string, []Field, error) {
	var newCols []Field
	matched := make([]int, len(cols))
	for i := range matched {
		matched[i] = -1
	}
	find := func(name string) int {
		for i, c := range cols {
			if strings.EqualFold(c.Name, name) {
				return i
			}
		}
		return -1
	}
	for si, sc := range srcCols {
		ti := find(sc.Name)
		if ti < 0 {
			if evolve {
				newCols = append(newCols, Field{Name: sc.Name, Type: sc.Type, Nullable: true})
				continue
			}
			return nil, nil, copySchemaMismatch(t, cols, srcCols)
		}
		if matched[ti] >= 0 {
			return nil, nil, &SQLError{Class: "DELTA_DUPLICATE_COLUMNS_FOUND", SQLState: "42711",
				Message: fmt.Sprintf("Found duplicate column(s) in the data to save: %s.", strings.ToLower(sc.Name))}
		}
		switch f, path := copyFit(sc.Type, cols[ti].Type); f {
		case fitIncompatible:
			return nil, nil, &SQLError{Class: "DELTA_FAILED_TO_MERGE_FIELDS", SQLState: "22005",
				Message: fmt.Sprintf("Failed to merge fields '%s' and '%s'. Failed to merge incompatible data types %s and %s.",
					cols[ti].Name, sc.Name, cols[ti].Type.Simple(), sc.Type.Simple())}
		case fitExtraMember:
			if evolve {
				return nil, nil, errUnsupported("mergeSchema adding struct member " + joinPath(cols[ti].Name, path))
			}
			return nil, nil, copySchemaMismatch(t, cols, srcCols)
		case fitMissingNotNull:
			return nil, nil, &SQLError{Class: "DELTA_NOT_NULL_COLUMN_NOT_FOUND_IN_STRUCT", SQLState: "42K09",
				Message: fmt.Sprintf("Not nullable column not found in struct: %s.", joinPath(cols[ti].Name, path))}
		case fitMissingMember:
			if unk.RefuseMissingNestedMember {
				parent := joinPath(cols[ti].Name, path)
				if i := strings.LastIndexByte(parent, '.'); i >= 0 {
					parent = parent[:i]
				}
				return nil, nil, &SQLError{Class: "DELTA_INSERT_COLUMN_ARITY_MISMATCH", SQLState: "21S01", Message: fmt.Sprintf(
					"Cannot write to '%s', not enough nested fields in %s; the table's struct has a member (%s) the data does not have.",
					parent, parent, joinPath(cols[ti].Name, path))}
			}
		}
		matched[ti] = si
	}
	exprs := make([]string, len(cols))
	for ti, c := range cols {
		si := matched[ti]
		if si < 0 {
			if !c.Nullable {
				return nil, nil, &SQLError{Class: "DELTA_MISSING_NOT_NULL_COLUMN_VALUE", SQLState: "23502",
					Message: fmt.Sprintf("Column %s, which has a NOT NULL constraint, is missing from the data being written into the table.", c.Name)}
			}
			exprs[ti] = fmt.Sprintf("CAST(NULL AS %s) AS %s", c.Type.Duck(), duckIdent(c.Name))
			continue
		}
		exprs[ti] = fmt.Sprintf("CAST(src.%s AS %s) AS %s", duckIdent(srcCols[si].Name), c.Type.Duck(), duckIdent(c.Name))
	}
	return exprs, newCols, nil
}

// copySchemaMismatch is COPY INTO's error for source columns the table does not have.
func copySchemaMismatch(t *tableMeta, cols, data []Field) *SQLError {
	return &SQLError{Class: "COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE", SQLState: "42KDG", Message: fmt.Sprintf(
		"A schema mismatch was detected while copying into the Delta table (Table: %s).\n"+
			"This may indicate an issue with the incoming data, or the Delta table schema can be evolved automatically according to the incoming data by setting:\n"+
			"COPY_OPTIONS ('mergeSchema' = 'true')\n\nTable schema:\n%s\n\nData schema:\n%s",
		t.quoted(), strings.TrimSuffix(TreeString(cols), "\n"), strings.TrimSuffix(TreeString(data), "\n"))}
}

// copyCompatible reports whether data of type src can be written to a column of type dst
// without a schema change (see copyFit).
func copyCompatible(src, dst *Type) bool {
	f, _ := copyFit(src, dst)
	return f <= fitMissingMember
}

// fit is how data of one type fits a column of another under mergeSchema = false.
type fit int

const (
	fitOK             fit = iota
	fitMissingMember      // a nullable struct member is absent from the data (NULL is written)
	fitMissingNotNull     // a NOT NULL struct member is absent from the data (NULL would be written)
	fitExtraMember        // the data has a struct member the column lacks (a schema change)
	fitIncompatible       // some type differs (Delta cannot merge the two)
)

// copyFit classifies how data of type src fits a column of type dst, as Delta's schema merge
// does for an append with mergeSchema = false: the same type (struct members matched by name,
// case-insensitively), NULL into anything, or a narrower integer of Parquet's INT32 family
// (tinyint, smallint, int) into a wider one is fitOK; a type Delta cannot merge anywhere in
// the tree is fitIncompatible (int → bigint, float → double and decimal changes included, as
// the table's type is not changed); otherwise an extra member is fitExtraMember and a missing
// NOT NULL member fitMissingNotNull. path names the offending member ("" for the column).
func copyFit(src, dst *Type) (fit, string) {
	if src.Kind == KindNull {
		return fitOK, ""
	}
	switch dst.Kind {
	case KindStruct:
		if src.Kind != KindStruct {
			return fitIncompatible, ""
		}
		worst, where := fitOK, ""
		note := func(f fit, path string) {
			if f > worst {
				worst, where = f, path
			}
		}
		used := map[int]bool{}
		for _, sf := range src.Fields {
			found := false
			for di, df := range dst.Fields {
				if strings.EqualFold(sf.Name, df.Name) {
					f, sub := copyFit(sf.Type, df.Type)
					note(f, joinPath(df.Name, sub))
					used[di], found = true, true
					break
				}
			}
			if !found {
				note(fitExtraMember, sf.Name)
			}
		}
		for di, df := range dst.Fields {
			switch {
			case used[di]:
			case !df.Nullable:
				note(fitMissingNotNull, df.Name)
			default:
				note(fitMissingMember, df.Name)
			}
		}
		return worst, where
	case KindArray:
		if src.Kind != KindArray {
			return fitIncompatible, ""
		}
		f, sub := copyFit(src.Elem, dst.Elem)
		return f, joinPath("element", sub)
	case KindMap:
		if src.Kind != KindMap {
			return fitIncompatible, ""
		}
		fk, subK := copyFit(src.Key, dst.Key)
		fv, subV := copyFit(src.Value, dst.Value)
		if fk >= fv {
			return fk, joinPath("key", subK)
		}
		return fv, joinPath("value", subV)
	case KindByte, KindShort, KindInt:
		rank := map[Kind]int{KindByte: 1, KindShort: 2, KindInt: 3}
		if r, ok := rank[src.Kind]; ok && r <= rank[dst.Kind] {
			return fitOK, ""
		}
		return fitIncompatible, ""
	case KindDecimal:
		if src.Kind == KindDecimal && src.Precision == dst.Precision && src.Scale == dst.Scale {
			return fitOK, ""
		}
		return fitIncompatible, ""
	}
	if src.Kind == dst.Kind {
		return fitOK, ""
	}
	return fitIncompatible, ""
}

func joinPath(name, sub string) string {
	if sub == "" {
		return name
	}
	return name + "." + sub
}

// describeSQL returns the output columns of a DuckDB query.
func (e *DuckDB) describeSQL(ctx context.Context, q string) ([]Field, error) {
	res, err := e.duckQuery(ctx, "DESCRIBE "+q)
	if err != nil {
		return nil, err
	}
	out := make([]Field, 0, len(res.Rows))
	for _, r := range res.Rows {
		name, _ := r[0].(string)
		typ, _ := r[1].(string)
		t, err := ParseDuckType(typ)
		if err != nil {
			return nil, err
		}
		out = append(out, Field{Name: name, Type: t, Nullable: true})
	}
	return out, nil
}

// fixInt96 marks top-level INT96 columns as timestamp: Spark reads INT96 as an instant,
// while DuckDB reports a timestamp without time zone.
func (e *DuckDB) fixInt96(ctx context.Context, local string, cols []Field) error {
	if !slices.ContainsFunc(cols, func(c Field) bool { return c.Type.Kind == KindTimestampNTZ }) {
		return nil // no column an INT96 can be
	}
	res, err := e.duckQuery(ctx, "SELECT name, type FROM parquet_schema("+duckString(local)+") WHERE type = 'INT96'")
	if err != nil {
		return nil // the schema was readable a moment ago; leave the types as they are
	}
	for _, r := range res.Rows {
		name, _ := r[0].(string)
		for i := range cols {
			if cols[i].Name == name && cols[i].Type.Kind == KindTimestampNTZ {
				cols[i].Type = Prim(KindTimestamp)
			}
		}
	}
	return nil
}

// validateCopy checks what COPY INTO would write without writing it: the schema (already
// checked by planning), NOT NULL columns and value conversions. It returns a preview of up
// to 50 rows in the table's schema.
func (e *DuckDB) validateCopy(ctx context.Context, t *tableMeta, plans []copyPlan, limitRows int) (*Result, error) {
	res := &Result{ModifiedRows: int64p(0)}
	for _, c := range t.cols {
		res.Columns = append(res.Columns, Column{Name: c.Name, Type: c.Type})
	}
	for _, plan := range plans {
		src := plan.selects
		if limitRows > 0 {
			src += " LIMIT " + strconv.Itoa(limitRows)
		}
		var checks []string
		for _, c := range t.cols {
			if !c.Nullable {
				checks = append(checks, fmt.Sprintf("count(*) FILTER (WHERE %s IS NULL)", duckIdent(c.Name)))
			}
		}
		checks = append(checks, "count(*)")
		r, err := e.duckQuery(ctx, fmt.Sprintf("SELECT %s FROM (%s) AS v", strings.Join(checks, ", "), src))
		if err != nil {
			return nil, err
		}
		ci := 0
		for _, c := range t.cols {
			if !c.Nullable {
				if n, _ := r.Rows[0][ci].(int64); n > 0 {
					return nil, &SQLError{Class: "DELTA_NOT_NULL_CONSTRAINT_VIOLATED", SQLState: "23502",
						Message: fmt.Sprintf("NOT NULL constraint violated for column: %s.", c.Name)}
				}
				ci++
			}
		}
		if err := e.constraintViolation(ctx, t, src); err != nil {
			return nil, err
		}
		if room := maxValidatePreview - len(res.Rows); room > 0 {
			if limitRows > 0 && limitRows < room {
				room = limitRows
			}
			prev, err := e.duckQuery(ctx, fmt.Sprintf("SELECT * FROM (%s) AS v LIMIT %d", src, room))
			if err != nil {
				return nil, err
			}
			for _, row := range prev.Rows {
				res.Rows = append(res.Rows, row)
			}
		}
	}
	return res, nil
}
