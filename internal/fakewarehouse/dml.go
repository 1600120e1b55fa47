package fakewarehouse

import (
	"context"
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
	var removed int64
	if overwrite {
		if removed, err = e.duckExec(ctx, "DELETE FROM "+duckIdent(t.phys)); err != nil {
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
	mode := "Append"
	metrics := map[string]string{"numFiles": strconv.Itoa(w.files), "numOutputRows": strconv.FormatInt(n, 10), "numOutputBytes": strconv.FormatInt(w.bytes, 10)}
	if overwrite {
		mode = "Overwrite"
		metrics["numRemovedFiles"] = "1"
		metrics["numRemovedRows"] = strconv.FormatInt(removed, 10)
	}
	if _, err := e.addCommitSpec(t, commitSpec{op: "WRITE", params: map[string]string{"mode": mode, "partitionBy": "[]"}, metrics: metrics,
		blind: !overwrite, actions: w.actions}); err != nil {
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
	if err := p.expectKw("MERGE", "INTO"); err != nil {
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
	// Expand INSERT * and UPDATE SET *: every target column must come from the source.
	for i := p.i; i+1 < len(p.toks); i++ {
		star := p.toks[i].isKw("INSERT") && p.toks[i+1].isOp("*") ||
			p.toks[i].isKw("UPDATE") && i+2 < len(p.toks) && p.toks[i+1].isKw("SET") && p.toks[i+2].isOp("*")
		if !star {
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
	toks := append([]token(nil), p.toks[:p.i]...)
	for i := p.i; i < len(p.toks); i++ {
		tk := p.toks[i]
		if tk.isKw("INSERT") && p.toks[i+1].isOp("*") {
			cols, vals := make([]string, len(t.cols)), make([]string, len(t.cols))
			for ci, c := range t.cols {
				cols[ci] = duckIdent(c.Name)
				vals[ci] = src + "." + duckIdent(c.Name)
			}
			text := fmt.Sprintf("INSERT (%s) VALUES (%s)", strings.Join(cols, ", "), strings.Join(vals, ", "))
			toks = append(toks, token{kind: tkIdent, raw: text, val: text, pre: tk.pre, pos: tk.pos, literal: true})
			i++
			continue
		}
		if tk.isKw("UPDATE") && p.toks[i+1].isKw("SET") && p.toks[i+2].isOp("*") {
			sets := make([]string, len(t.cols))
			for ci, c := range t.cols {
				sets[ci] = duckIdent(c.Name) + " = " + src + "." + duckIdent(c.Name)
			}
			text := "UPDATE SET " + strings.Join(sets, ", ")
			toks = append(toks, token{kind: tkIdent, raw: text, val: text, pre: tk.pre, pos: tk.pos, literal: true})
			i += 2
			continue
		}
		toks = append(toks, tk)
	}
	q, _, err := e.rewrite(ctx, sess, toks, rewriteOpts{})
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
	// The inserted rows go to a new data file (updated and deleted rows would rewrite files;
	// the local warehouse does not write those).
	w, err := e.writeDataFiles(ctx, t, mark)
	if err != nil {
		return nil, err
	}
	filesAdded := strconv.Itoa(w.files)
	if _, err := e.addCommitSpec(t, commitSpec{op: "MERGE", params: map[string]string{"predicate": "[]", "matchedPredicates": "[]", "notMatchedPredicates": "[]"}, actions: w.actions, metrics: map[string]string{
		"numSourceRows":                          strconv.FormatInt(srcCount.Int(0, 0), 10),
		"numTargetRowsInserted":                  strconv.FormatInt(ins, 10),
		"numTargetRowsUpdated":                   strconv.FormatInt(upd, 10),
		"numTargetRowsMatchedUpdated":            strconv.FormatInt(upd, 10),
		"numTargetRowsMatchedDeleted":            strconv.FormatInt(del, 10),
		"numTargetRowsNotMatchedBySourceUpdated": "0",
		"numTargetRowsNotMatchedBySourceDeleted": "0",
		"numTargetRowsDeleted":                   strconv.FormatInt(del, 10),
		"numTargetRowsCopied":                    "0",
		"numTargetFilesAdded":                    filesAdded,
		"numTargetFilesRemoved":                  "0",
		"numTargetChangeFilesAdded":              "0",
		"numTargetBytesAdded":                    strconv.FormatInt(w.bytes, 10),
		"numTargetBytesRemoved":                  "0",
		"numOutputRows":                          strconv.FormatInt(ins+upd, 10),
		"executionTimeMs":                        "0",
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
	q, refs, err := e.rewrite(ctx, sess, p.toks, rewriteOpts{})
	if err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		return nil, p.errorf("%s needs a target table", op)
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
	metric := "numDeletedRows"
	if op == "UPDATE" {
		metric = "numUpdatedRows"
	}
	if _, err := e.addCommit(refs[0].t, op, map[string]string{"predicate": "[]"}, map[string]string{metric: strconv.FormatInt(n, 10)}, false); err != nil {
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
	n, err := e.duckExec(ctx, "DELETE FROM "+duckIdent(t.phys))
	if err != nil {
		return nil, err
	}
	if _, err := e.addCommit(t, "TRUNCATE", nil, map[string]string{"numRemovedFiles": "1", "numDeletedRows": strconv.FormatInt(n, 10)}, false); err != nil {
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
