package warehouse

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// query runs a SELECT (or VALUES, TABLE, WITH …) through the rewriter.
func (e *DuckDB) query(ctx context.Context, sess *Session, p *parser) (*Result, error) {
	q, _, err := e.rewrite(ctx, sess, p.toks[p.i:], rewriteOpts{})
	if err != nil {
		return nil, err
	}
	return e.duckQuery(ctx, q)
}

// insert handles INSERT INTO / INSERT OVERWRITE; the result has num_affected_rows and
// num_inserted_rows, as a warehouse returns them.
func (e *DuckDB) insert(ctx context.Context, sess *Session, p *parser) (*Result, error) {
	toks := append([]token(nil), p.toks...)
	overwrite := false
	if toks[1].isKw("OVERWRITE") {
		overwrite = true
		toks[1] = token{kind: tkIdent, val: "INTO", raw: "INTO", pre: toks[1].pre, pos: toks[1].pos}
		if toks[2].isKw("TABLE") {
			toks = append(toks[:2], toks[3:]...)
		}
	} else if toks[1].isKw("INTO") && toks[2].isKw("TABLE") {
		toks = append(toks[:2], toks[3:]...)
	}
	q, refs, err := e.rewrite(ctx, sess, toks, rewriteOpts{noAliasFirst: true})
	if err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		return nil, p.errorf("INSERT needs a target table")
	}
	t := refs[0].t
	if _, err := e.duckExec(ctx, "BEGIN TRANSACTION"); err != nil {
		return nil, err
	}
	fail := func(err error) (*Result, error) {
		_, _ = e.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return nil, err
	}
	if overwrite {
		if _, err = e.duckExec(ctx, "DELETE FROM "+duckIdent(t.phys)); err != nil {
			return fail(err)
		}
	}
	mark, err := e.rowMark(ctx, t)
	if err != nil {
		return fail(err)
	}
	n, err := e.duckExec(ctx, q)
	if err != nil {
		return fail(err)
	}
	if err := e.checkConstraints(ctx, t, mark); err != nil {
		return fail(err)
	}
	if _, err := e.duckExec(ctx, "COMMIT"); err != nil {
		return fail(err)
	}
	w, err := e.writeDataFiles(ctx, t, mark)
	if err != nil {
		return nil, err
	}
	// An overwrite removes every data file and adds the new rows' file; its metrics are those
	// of any WRITE (CODE: Delta DeltaOperationMetrics.WRITE, no predicate).
	mode := "Append"
	var removes []dataFile
	if overwrite {
		mode, removes = "Overwrite", t.files
	}
	metrics := map[string]string{"numFiles": strconv.Itoa(w.files), "numOutputRows": strconv.FormatInt(n, 10), "numOutputBytes": strconv.FormatInt(w.bytes, 10)}
	if n == 0 && !overwrite && e.Unknowns().SkipEmptyCommits {
		return &Result{
			Columns:      []Column{{Name: "num_affected_rows", Type: Prim(KindLong)}, {Name: "num_inserted_rows", Type: Prim(KindLong)}},
			Rows:         [][]any{{n, n}},
			ModifiedRows: int64p(n),
		}, nil
	}
	if _, err := e.addCommitSpec(t, commitSpec{op: "WRITE", params: map[string]string{"mode": mode, "partitionBy": "[]"}, metrics: metrics,
		blind: !overwrite, adds: w.adds, removes: removes}); err != nil {
		return nil, err
	}
	return &Result{
		Columns:      []Column{{Name: "num_affected_rows", Type: Prim(KindLong)}, {Name: "num_inserted_rows", Type: Prim(KindLong)}},
		Rows:         [][]any{{n, n}},
		ModifiedRows: int64p(n),
	}, nil
}

// merge handles MERGE INTO … USING … ON … WHEN …: INSERT * and UPDATE SET * are expanded by
// name over the target's columns (Delta semantics), and the action of every row is counted.
func (e *DuckDB) merge(ctx context.Context, sess *Session, p *parser) (*Result, error) {
	// MERGE WITH SCHEMA EVOLUTION INTO evolves the target's schema for this statement (DOC:
	// MERGE INTO); the clause is not passed on to DuckDB.
	evolveClause := len(p.toks) > 4 && p.toks[1].isKw("WITH") && p.toks[2].isKw("SCHEMA") && p.toks[3].isKw("EVOLUTION")
	if evolveClause {
		p.toks = append(append([]token(nil), p.toks[:1]...), p.toks[4:]...)
	}
	if err := p.expectKw("MERGE", "INTO"); err != nil {
		return nil, err
	}
	evolve := evolveClause || e.Unknowns().SchemaAutoMerge || strings.EqualFold(sessionConf(sess, autoMergeKey), "true")
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	t, err := e.table(sess, parts)
	if err != nil {
		return nil, err
	}
	// Skip the target alias, find USING and the source alias.
	for !p.atEnd() && !p.peek().isKw("USING") {
		p.next()
	}
	if err := p.expectKw("USING"); err != nil {
		return nil, err
	}
	srcAlias := ""
	var srcToks []token // the source: a parenthesised query or a table name
	if p.peek().isOp("(") {
		start := p.i
		if err := skipParens(p); err != nil {
			return nil, err
		}
		srcToks = append(append([]token(nil), p.toks[start+1:p.i-1]...), token{kind: tkEOF})
	} else {
		start := p.i
		src, err := p.qualifiedName()
		if err != nil {
			return nil, err
		}
		srcAlias = src[len(src)-1]
		text := "SELECT * FROM"
		srcToks = append([]token{{kind: tkIdent, raw: text, val: text, literal: true}}, p.toks[start:p.i]...)
		srcToks = append(srcToks, token{kind: tkEOF})
	}
	if p.acceptKw("AS") || (p.peek().kind == tkIdent && !p.peek().isKw("ON")) || p.peek().kind == tkQuoted {
		a, err := p.ident()
		if err != nil {
			return nil, err
		}
		srcAlias = a
	}
	if srcAlias == "" {
		return nil, p.errorf("the MERGE source needs an alias")
	}
	src := duckIdent(srcAlias)
	srcSQL, _, err := e.rewrite(ctx, sess, srcToks, rewriteOpts{})
	if err != nil {
		return nil, err
	}
	srcCols, err := e.describeSQL(ctx, srcSQL)
	if err != nil {
		return nil, err
	}
	srcCount, err := e.duckQuery(ctx, "SELECT count(*) FROM ("+srcSQL+") AS s")
	if err != nil {
		return nil, err
	}
	// Expand INSERT * and UPDATE SET *: every target column must come from the source, unless
	// the schema evolves: then source columns the target lacks are added to it, and target
	// columns the source lacks are left alone (NULL in inserted rows).
	var newCols []Field
	stars := false
	for i := p.i; i+1 < len(p.toks); i++ {
		star := p.toks[i].isKw("INSERT") && p.toks[i+1].isOp("*") ||
			p.toks[i].isKw("UPDATE") && i+2 < len(p.toks) && p.toks[i+1].isKw("SET") && p.toks[i+2].isOp("*")
		if !star {
			continue
		}
		stars = true
		if evolve {
			continue
		}
		clause := "INSERT"
		if p.toks[i].isKw("UPDATE") {
			clause = "UPDATE"
		}
		for _, c := range t.cols {
			if !containsField(srcCols, c.Name) {
				return nil, &SQLError{Class: "DELTA_MERGE_UNRESOLVED_EXPRESSION", SQLState: "42601", Message: fmt.Sprintf(
					"Cannot resolve %s.%s in %s clause given columns %s.", srcAlias, c.Name, clause, qualifiedNames(srcAlias, srcCols))}
			}
		}
	}
	if evolve && stars {
		for _, c := range srcCols {
			if !containsField(t.cols, c.Name) {
				c.Nullable, c.Comment = true, ""
				newCols = append(newCols, c)
			}
		}
	}
	allCols := append(append([]Field(nil), t.cols...), newCols...)
	// fromSource are the target columns a star clause sets: those the source has.
	var fromSource []Field
	for _, c := range allCols {
		if containsField(srcCols, c.Name) {
			fromSource = append(fromSource, c)
		}
	}
	toks := append([]token(nil), p.toks[:p.i]...)
	for i := p.i; i < len(p.toks); i++ {
		tk := p.toks[i]
		if tk.isKw("INSERT") && p.toks[i+1].isOp("*") {
			cols, vals := make([]string, len(fromSource)), make([]string, len(fromSource))
			for ci, c := range fromSource {
				cols[ci] = duckIdent(c.Name)
				vals[ci] = src + "." + duckIdent(c.Name)
			}
			text := fmt.Sprintf("INSERT (%s) VALUES (%s)", strings.Join(cols, ", "), strings.Join(vals, ", "))
			toks = append(toks, token{kind: tkIdent, raw: text, val: text, pre: tk.pre, pos: tk.pos, literal: true})
			i++
			continue
		}
		if tk.isKw("UPDATE") && p.toks[i+1].isKw("SET") && p.toks[i+2].isOp("*") {
			sets := make([]string, len(fromSource))
			for ci, c := range fromSource {
				sets[ci] = duckIdent(c.Name) + " = " + src + "." + duckIdent(c.Name)
			}
			text := "UPDATE SET " + strings.Join(sets, ", ")
			toks = append(toks, token{kind: tkIdent, raw: text, val: text, pre: tk.pre, pos: tk.pos, literal: true})
			i += 2
			continue
		}
		toks = append(toks, tk)
	}
	toks = withChangedMark(toks, t)
	q, _, err := e.rewrite(ctx, sess, toks, rewriteOpts{targetFirst: true})
	if err != nil {
		return nil, err
	}
	if _, err := e.duckExec(ctx, "BEGIN TRANSACTION"); err != nil {
		return nil, err
	}
	fail := func(err error) (*Result, error) {
		_, _ = e.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return nil, err
	}
	for _, c := range newCols {
		if _, err := e.duckExec(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", duckIdent(t.phys), duckIdent(c.Name), c.Type.Duck())); err != nil {
			return fail(err)
		}
	}
	mark, err := e.rowMark(ctx, t)
	if err != nil {
		return fail(err)
	}
	res, err := e.duckQuery(ctx, q+" RETURNING merge_action")
	if err != nil {
		return fail(err)
	}
	if err := e.checkConstraints(ctx, t, -1); err != nil {
		return fail(err)
	}
	if _, err := e.duckExec(ctx, "COMMIT"); err != nil {
		return fail(err)
	}
	if len(newCols) > 0 {
		t.cols = assignPhysical(t, allCols)
	}
	var ins, upd, del int64
	for _, r := range res.Rows {
		switch r[0] {
		case "INSERT":
			ins++
		case "UPDATE":
			upd++
		case "DELETE":
			del++
		}
	}
	affected := ins + upd + del
	// Inserted and updated rows, and the rows left in the files it touched, go to one new
	// data file; the touched files are removed (copy-on-write, as Delta rewrites).
	_ = mark
	w, removes, copied, err := e.rewriteTouched(ctx, t)
	if err != nil {
		return nil, err
	}
	if _, err := e.addCommitSpec(t, commitSpec{op: "MERGE", params: mergeParams(p.toks[p.i:]), adds: w.adds, removes: removes, metrics: map[string]string{
		"numSourceRows":                          strconv.FormatInt(srcCount.Int(0, 0), 10),
		"numTargetRowsInserted":                  strconv.FormatInt(ins, 10),
		"numTargetRowsUpdated":                   strconv.FormatInt(upd, 10),
		"numTargetRowsMatchedUpdated":            strconv.FormatInt(upd, 10),
		"numTargetRowsMatchedDeleted":            strconv.FormatInt(del, 10),
		"numTargetRowsNotMatchedBySourceUpdated": "0",
		"numTargetRowsNotMatchedBySourceDeleted": "0",
		"numTargetRowsDeleted":                   strconv.FormatInt(del, 10),
		"numTargetRowsCopied":                    strconv.FormatInt(copied, 10),
		"numTargetFilesAdded":                    strconv.Itoa(w.files),
		"numTargetFilesRemoved":                  strconv.Itoa(len(removes)),
		"numTargetChangeFilesAdded":              "0",
		"numTargetBytesAdded":                    strconv.FormatInt(w.bytes, 10),
		"numTargetBytesRemoved":                  strconv.FormatInt(filesSize(removes), 10),
		"numOutputRows":                          strconv.FormatInt(ins+upd+copied, 10),
		"executionTimeMs":                        "0",
		"materializeSourceTimeMs":                "0",
		"scanTimeMs":                             "0",
		"rewriteTimeMs":                          "0",
	}}); err != nil {
		return nil, err
	}
	return &Result{
		Columns: []Column{
			{Name: "num_affected_rows", Type: Prim(KindLong)}, {Name: "num_updated_rows", Type: Prim(KindLong)},
			{Name: "num_deleted_rows", Type: Prim(KindLong)}, {Name: "num_inserted_rows", Type: Prim(KindLong)},
		},
		Rows:         [][]any{{affected, upd, del, ins}},
		ModifiedRows: int64p(affected),
	}, nil
}

// deleteUpdate handles DELETE FROM and UPDATE.
func (e *DuckDB) deleteUpdate(ctx context.Context, sess *Session, p *parser) (*Result, error) {
	op := strings.ToUpper(p.peek().val)
	opts := rewriteOpts{targetFirst: true, deleteTarget: op == "DELETE"}
	q, refs, err := e.rewrite(ctx, sess, p.toks, opts)
	if err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		return nil, p.errorf("%s needs a target table", op)
	}
	if t := refs[0].t; op == "UPDATE" {
		// Updated rows leave their file (and with row tracking keep their row IDs and take
		// the commit's version): rowtracking.go.
		if q, _, err = e.rewrite(ctx, sess, withChangedMark(p.toks, t), opts); err != nil {
			return nil, err
		}
	}
	if _, err := e.duckExec(ctx, "BEGIN TRANSACTION"); err != nil {
		return nil, err
	}
	n, err := e.duckExec(ctx, q)
	if err == nil && op == "UPDATE" {
		err = e.checkConstraints(ctx, refs[0].t, -1)
	}
	if err == nil {
		_, err = e.duckExec(ctx, "COMMIT")
	}
	if err != nil {
		_, _ = e.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return nil, err
	}
	// The rewrite removes the files that held deleted or updated rows and adds one file of
	// their remaining rows and the updated ones (Delta's copy-on-write DELETE and UPDATE).
	t := refs[0].t
	var (
		w       written
		removes []dataFile
		copied  int64
	)
	if n > 0 {
		if w, removes, copied, err = e.rewriteTouched(ctx, t); err != nil {
			return nil, err
		}
	}
	metrics := map[string]string{
		"numAddedFiles": strconv.Itoa(w.files), "numRemovedFiles": strconv.Itoa(len(removes)),
		"numAddedBytes": strconv.FormatInt(w.bytes, 10), "numRemovedBytes": strconv.FormatInt(filesSize(removes), 10),
		"numAddedChangeFiles": "0", "numDeletionVectorsAdded": "0", "numDeletionVectorsRemoved": "0", "numDeletionVectorsUpdated": "0",
		"executionTimeMs": "0", "scanTimeMs": "0", "rewriteTimeMs": "0",
	}
	if op == "UPDATE" {
		metrics["numUpdatedRows"] = strconv.FormatInt(n, 10)
	} else {
		metrics["numDeletedRows"] = strconv.FormatInt(n, 10)
	}
	metrics["numCopiedRows"] = strconv.FormatInt(copied, 10)
	if _, err := e.addCommitSpec(t, commitSpec{op: op, params: map[string]string{"predicate": wherePredicate(p.toks)}, metrics: metrics,
		adds: w.adds, removes: removes}); err != nil {
		return nil, err
	}
	return &Result{
		Columns:      []Column{{Name: "num_affected_rows", Type: Prim(KindLong)}},
		Rows:         [][]any{{n}},
		ModifiedRows: int64p(n),
	}, nil
}

func (e *DuckDB) truncate(ctx context.Context, sess *Session, p *parser) (*Result, error) {
	if err := p.expectKw("TRUNCATE", "TABLE"); err != nil {
		return nil, err
	}
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	t, err := e.table(sess, parts)
	if err != nil {
		return nil, err
	}
	if _, err := e.duckExec(ctx, "DELETE FROM "+duckIdent(t.phys)); err != nil {
		return nil, err
	}
	// TRUNCATE removes every data file; its metrics are numRemovedFiles and executionTimeMs
	// (CODE: Delta DeltaOperationMetrics.TRUNCATE).
	if _, err := e.addCommitSpec(t, commitSpec{op: "TRUNCATE", removes: t.files,
		metrics: map[string]string{"numRemovedFiles": strconv.Itoa(len(t.files)), "executionTimeMs": "0"}}); err != nil {
		return nil, err
	}
	return emptyDDLResult(), nil
}

func qualifiedNames(alias string, cols []Field) string {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = alias + "." + c.Name
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// wherePredicate renders a DELETE or UPDATE's WHERE clause as Delta's operationParameters
// predicate: a JSON array of the condition's text, "[]" without one.
func wherePredicate(toks []token) string {
	for i, t := range toks {
		if t.isKw("WHERE") {
			var b strings.Builder
			for _, x := range toks[i+1:] {
				if x.kind == tkEOF || x.isOp(";") {
					break
				}
				b.WriteString(x.pre + x.raw)
			}
			return plainJSON([]string{strings.TrimSpace(b.String())})
		}
	}
	return "[]"
}

// mergeClause is one WHEN clause of a MERGE, as Delta records it in matchedPredicates and
// notMatchedPredicates.
type mergeClause struct {
	matched    bool
	actionType string // insert, update, delete
	predicate  string // the AND condition, "" for none
}

// mergeClauses reads the WHEN clauses of a MERGE from the tokens after its ON condition.
func mergeClauses(toks []token) []mergeClause {
	var out []mergeClause
	for i := 0; i < len(toks); i++ {
		if !toks[i].isKw("WHEN") {
			continue
		}
		c := mergeClause{matched: true}
		j := i + 1
		if j < len(toks) && toks[j].isKw("NOT") {
			c.matched = false
			j++
		}
		for j < len(toks) && !toks[j].isKw("THEN") && !toks[j].isKw("AND") {
			j++
		}
		if j < len(toks) && toks[j].isKw("AND") {
			var b strings.Builder
			for j++; j < len(toks) && !toks[j].isKw("THEN"); j++ {
				b.WriteString(toks[j].pre + toks[j].raw)
			}
			c.predicate = strings.TrimSpace(b.String())
		}
		if j+1 < len(toks) {
			c.actionType = strings.ToLower(toks[j+1].val)
		}
		out = append(out, c)
	}
	return out
}

// mergeParams are a MERGE's operationParameters (CODE: Delta DeltaOperations.Merge) from the
// tokens from its ON condition on.
func mergeParams(toks []token) map[string]string {
	on := ""
	for i, t := range toks {
		if t.isKw("ON") {
			var b strings.Builder
			for _, x := range toks[i+1:] {
				if x.isKw("WHEN") || x.kind == tkEOF {
					break
				}
				b.WriteString(x.pre + x.raw)
			}
			on = strings.TrimSpace(b.String())
			break
		}
	}
	clauses := mergeClauses(toks)
	type pred struct {
		Predicate  *string `json:"predicate,omitempty"`
		ActionType string  `json:"actionType"`
	}
	matched, notMatched := []pred{}, []pred{}
	for _, c := range clauses {
		p := pred{ActionType: c.actionType}
		if c.predicate != "" {
			s := c.predicate
			p.Predicate = &s
		}
		if c.matched {
			matched = append(matched, p)
		} else {
			notMatched = append(notMatched, p)
		}
	}
	return map[string]string{"predicate": plainJSON([]string{on}), "matchedPredicates": plainJSON(matched),
		"notMatchedPredicates": plainJSON(notMatched), "notMatchedBySourcePredicates": "[]"}
}

// plainJSON renders v as JSON without HTML escaping ("a >= 1" stays as written), as Delta's
// JSON encoder writes operationParameters.
func plainJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// withChangedMark returns the tokens of an UPDATE, or of a MERGE's UPDATE SET clauses, with
// the hidden columns of every updated row set in every SET list: its data file cleared (it
// leaves its file, which rewriteTouched then rewrites) and, with row tracking, its row commit
// version the commit's, as row tracking requires (rowtracking.go). A SET list ends at the next
// WHERE or FROM (UPDATE) or WHEN (MERGE) outside parentheses and CASE, or at the end.
func withChangedMark(toks []token, t *tableMeta) []token {
	text := fmt.Sprintf(", %s = NULL", duckIdent(hiddenFile))
	if t.rowTracking() {
		text += fmt.Sprintf(", %s = %d", duckIdent(hiddenRowVersion), t.nextVersion())
	}
	set := token{kind: tkIdent, val: text, raw: text, literal: true}
	out := make([]token, 0, len(toks)+2)
	update := len(toks) > 0 && toks[0].isKw("UPDATE")
	inSet, seenSet, depth, cases := false, false, 0, 0
	for i, t := range toks {
		switch {
		case t.isOp("("):
			depth++
		case t.isOp(")"):
			depth--
		case t.isKw("CASE"):
			cases++
		case t.isKw("END") && cases > 0:
			cases--
		}
		top := depth == 0 && cases == 0
		end := t.kind == tkEOF || t.isOp(";") || top && (t.isKw("WHERE") || t.isKw("FROM") || t.isKw("WHEN"))
		if inSet && end {
			out = append(out, set)
			inSet = false
		}
		out = append(out, t)
		starts := top && t.isKw("SET") && (i > 0 && toks[i-1].isKw("UPDATE") || update && !seenSet) ||
			top && t.literal && strings.HasPrefix(t.val, "UPDATE SET ")
		if starts {
			inSet, seenSet = true, true
		}
	}
	return out
}
