package warehouse

import (
	"context"
	"fmt"
	"strings"
)

// The query rewriter turns Databricks SQL into DuckDB SQL token by token:
//   - `backtick` identifiers become "quoted" ones and Spark strings ('…' or "…") become '…';
//   - table names in table position (after FROM, JOIN, INTO, UPDATE, USING and commas of a
//     FROM list) become the engine's physical tables, aliased with the table's own name so
//     qualified column references keep working;
//   - parquet.`path` and read_files('path', …) become read_parquet over the resolved files;
//   - Spark type names in CAST(… AS type), TRY_CAST and x::type become DuckDB types;
//   - current_catalog(), current_schema() and current_database() become the session's values.

// rewriteOpts tune rewriting for the statement around a query.
type rewriteOpts struct {
	// noAliasFirst suppresses the alias for the first table reference (INSERT INTO target):
	// it is the target, named bare, and gets the column list when it has none (the DuckDB
	// table also holds the hidden columns, rowtracking.go).
	noAliasFirst bool
	// targetFirst makes the first table reference the statement's target (DELETE, UPDATE,
	// MERGE): the DuckDB table itself, whose _metadata fields the condition reads from the
	// hidden columns. deleteTarget says the statement is a DELETE.
	targetFirst, deleteTarget bool
	// bareTables names every table bare, hidden columns included (the engine's own
	// queries over a table's rows).
	bareTables bool
}

// tableRef is a resolved table reference in a rewritten statement.
type tableRef struct {
	t     *tableMeta
	alias string
}

var clauseEnd = map[string]bool{
	"WHERE": true, "GROUP": true, "HAVING": true, "ORDER": true, "LIMIT": true, "QUALIFY": true,
	"WINDOW": true, "UNION": true, "EXCEPT": true, "INTERSECT": true, "MINUS": true, "ON": true,
	"SELECT": true, "SET": true, "WHEN": true, "VALUES": true, "OFFSET": true, "CLUSTER": true,
	"DISTRIBUTE": true, "SORT": true, "PIVOT": true, "UNPIVOT": true,
}

// reserved words never taken as an implicit alias after a table name.
var reserved = map[string]bool{
	"WHERE": true, "GROUP": true, "HAVING": true, "ORDER": true, "LIMIT": true, "QUALIFY": true,
	"WINDOW": true, "UNION": true, "EXCEPT": true, "INTERSECT": true, "MINUS": true, "ON": true,
	"JOIN": true, "INNER": true, "LEFT": true, "RIGHT": true, "FULL": true, "CROSS": true,
	"NATURAL": true, "ANTI": true, "SEMI": true, "USING": true, "SET": true, "WHEN": true,
	"VALUES": true, "SELECT": true, "OFFSET": true, "LATERAL": true, "TABLESAMPLE": true,
	"PIVOT": true, "UNPIVOT": true, "AS": true, "FROM": true, "CLUSTER": true, "DISTRIBUTE": true,
	"SORT": true, "OUTER": true, "BY": true, "VERSION": true, "TIMESTAMP": true, "WITH": true,
}

type rewriter struct {
	e    *DuckDB
	ctx  context.Context
	sess *Session
	toks []token
	i    int
	out  strings.Builder
	opts rewriteOpts
	ctes map[string]bool
	refs []tableRef

	frames []rwFrame
	// expectTable is set after a keyword that introduces a table reference.
	expectTable bool
	afterInto   bool // the table position follows INTO: "t (" is a column list, not a call
	tablesSeen  int
	// target is the statement's target table (rewriteOpts.targetFirst) once read, and
	// targetAlias the name its columns are qualified with; metaFields are the _metadata
	// fields the statement names.
	target      *tableMeta
	targetAlias string
	metaFields  []string
}

type rwFrame struct {
	cast   bool // the parenthesis opened a CAST/TRY_CAST call
	fn     bool // the parenthesis opened a function call (EXTRACT(x FROM y) is no FROM list)
	inFrom bool // inside a FROM list at this depth
}

// notFunctions are words that may precede "(" without making it a function call.
var notFunctions = map[string]bool{
	"IN": true, "EXISTS": true, "FROM": true, "JOIN": true, "AS": true, "USING": true, "ON": true,
	"AND": true, "OR": true, "NOT": true, "SELECT": true, "WHERE": true, "VALUES": true, "INTO": true,
	"ALL": true, "ANY": true, "SOME": true, "LATERAL": true, "UNION": true, "EXCEPT": true,
	"INTERSECT": true, "THEN": true, "ELSE": true, "WHEN": true, "BY": true, "HAVING": true, "TABLE": true,
}

func (e *DuckDB) rewrite(ctx context.Context, sess *Session, toks []token, opts rewriteOpts) (string, []tableRef, error) {
	rw := &rewriter{e: e, ctx: ctx, sess: sess, toks: toks, opts: opts, ctes: map[string]bool{}, frames: []rwFrame{{}}}
	// Names defined by WITH … AS ( are not tables.
	for i := 0; i+2 < len(toks); i++ {
		if (toks[i].kind == tkIdent || toks[i].kind == tkQuoted) && toks[i+1].isKw("AS") && toks[i+2].isOp("(") {
			rw.ctes[strings.ToLower(toks[i].val)] = true
		}
		if isMetadataToken(toks[i]) && toks[i+1].isOp(".") && (toks[i+2].kind == tkIdent || toks[i+2].kind == tkQuoted) {
			rw.metaFields = append(rw.metaFields, strings.ToLower(toks[i+2].val))
		}
	}
	if err := rw.run(); err != nil {
		return "", nil, err
	}
	return strings.TrimSpace(rw.out.String()), rw.refs, nil
}

func (rw *rewriter) frame() *rwFrame { return &rw.frames[len(rw.frames)-1] }

func (rw *rewriter) peek(n int) token {
	if rw.i+n < len(rw.toks) {
		return rw.toks[rw.i+n]
	}
	return rw.toks[len(rw.toks)-1]
}

// emit writes a token in DuckDB form.
func (rw *rewriter) emit(t token) {
	rw.out.WriteString(t.pre)
	rw.out.WriteString(duckText(t))
}

func duckText(t token) string {
	switch t.kind {
	case tkQuoted:
		return duckIdent(t.val)
	case tkString:
		return duckString(t.val)
	case tkNumber:
		return t.val
	case tkEOF:
		return ""
	}
	if t.literal {
		return t.raw
	}
	return t.raw
}

func (rw *rewriter) run() error {
	for rw.i < len(rw.toks) {
		t := rw.toks[rw.i]
		if t.kind == tkEOF {
			rw.out.WriteString(t.pre)
			return nil
		}
		if t.isOp(";") && rw.peek(1).kind == tkEOF {
			rw.i++
			continue
		}
		if rw.expectTable && (t.kind == tkIdent || t.kind == tkQuoted) && !t.literal {
			rw.expectTable = false
			handled, err := rw.tableReference()
			rw.afterInto = false
			if err != nil {
				return err
			}
			if handled {
				continue
			}
		}
		rw.expectTable, rw.afterInto = false, false
		switch {
		case t.isOp("("):
			var prev token
			if rw.i > 0 {
				prev = rw.toks[rw.i-1]
			}
			cast := prev.isKw("CAST") || prev.isKw("TRY_CAST")
			fn := prev.kind == tkIdent && !notFunctions[strings.ToUpper(prev.val)]
			rw.frames = append(rw.frames, rwFrame{cast: cast, fn: fn})
			rw.emit(t)
			rw.i++
		case t.isOp(")"):
			if len(rw.frames) > 1 {
				rw.frames = rw.frames[:len(rw.frames)-1]
			}
			rw.emit(t)
			rw.i++
		case t.isOp(","):
			rw.emit(t)
			rw.i++
			if rw.frame().inFrom {
				rw.expectTable = true
			}
		case t.isOp("::"):
			rw.emit(t)
			rw.i++
			if err := rw.typeAfter(); err != nil {
				return err
			}
		case t.isKw("AS") && rw.frame().cast:
			rw.emit(t)
			rw.i++
			if err := rw.typeAfter(); err != nil {
				return err
			}
		case rw.target != nil && rw.metadataAt():
			if err := rw.metadataColumn(); err != nil {
				return err
			}
		case t.kind == tkIdent && !t.literal:
			up := strings.ToUpper(t.val)
			if rw.peek(1).isOp("(") && rw.peek(2).isOp(")") {
				switch up {
				case "CURRENT_CATALOG":
					rw.out.WriteString(t.pre + duckString(rw.sess.Catalog))
					rw.i += 3
					continue
				case "CURRENT_SCHEMA", "CURRENT_DATABASE":
					rw.out.WriteString(t.pre + duckString(rw.sess.Schema))
					rw.i += 3
					continue
				}
			}
			if handled, err := rw.sparkSpecial(t, up); err != nil {
				return err
			} else if handled {
				continue
			}
			switch up {
			case "FROM":
				// FROM after DELETE, or as a query clause: a table list follows; not in
				// `a IS [NOT] DISTINCT FROM b`.
				if !rw.frame().fn && !(rw.i > 0 && rw.toks[rw.i-1].isKw("DISTINCT") && rw.i > 1 && (rw.toks[rw.i-2].isKw("IS") || rw.toks[rw.i-2].isKw("NOT"))) {
					rw.frame().inFrom = true
					rw.expectTable = true
				}
			case "JOIN", "INTO", "UPDATE":
				rw.expectTable = true
				rw.afterInto = up == "INTO"
			case "USING":
				if !rw.peek(1).isOp("(") || rw.isMergeUsing() {
					rw.expectTable = true
				}
			case "TABLE":
				rw.expectTable = true
			default:
				if clauseEnd[up] {
					rw.frame().inFrom = false
				}
			}
			rw.emit(t)
			rw.i++
		default:
			rw.emit(t)
			rw.i++
		}
	}
	return nil
}

// isMergeUsing reports whether the USING at the current position is MERGE's source clause.
func (rw *rewriter) isMergeUsing() bool {
	for j := 0; j < rw.i; j++ {
		if rw.toks[j].isKw("MERGE") {
			return true
		}
	}
	return false
}

// typeAfter rewrites the Spark type at the current position into a DuckDB type.
func (rw *rewriter) typeAfter() error {
	start := rw.i
	p := &parser{toks: rw.toks, i: rw.i}
	typ, err := p.sparkType()
	if err != nil {
		return err
	}
	rw.out.WriteString(rw.toks[start].pre + typ.Duck())
	rw.i = p.i
	return nil
}

// tableReference handles a name in table position. It returns false when the tokens are not
// a table reference after all (a keyword, a function call the rewriter leaves alone).
func (rw *rewriter) tableReference() (bool, error) {
	start := rw.i
	first := rw.toks[start]
	if first.kind == tkIdent {
		switch up := strings.ToUpper(first.val); {
		case up == "UNNEST", up == "TABLE", reserved[up]:
			return false, nil
		}
	}
	// Read the dotted chain.
	parts := []string{first.val}
	j := start + 1
	for j+1 < len(rw.toks) && rw.toks[j].isOp(".") && (rw.toks[j+1].kind == tkIdent || rw.toks[j+1].kind == tkQuoted) {
		parts = append(parts, rw.toks[j+1].val)
		j += 2
	}
	// parquet.`path`
	if len(parts) == 2 && strings.EqualFold(parts[0], "parquet") && rw.toks[start+2].kind == tkQuoted {
		src, err := rw.e.pathSource(rw.ctx, parts[1])
		if err != nil {
			return false, err
		}
		rw.out.WriteString(first.pre + src)
		rw.i = j
		rw.aliasIfMissing("parquet")
		return true, nil
	}
	if j < len(rw.toks) && rw.toks[j].isOp("(") && !rw.afterInto {
		if len(parts) == 1 && strings.EqualFold(parts[0], "read_files") {
			return true, rw.readFiles(j)
		}
		return false, nil
	}
	if len(parts) == 1 && rw.ctes[strings.ToLower(parts[0])] {
		return false, nil
	}
	t, err := rw.e.table(rw.sess, parts)
	if err != nil {
		return false, err
	}
	target := rw.opts.bareTables || rw.tablesSeen == 0 && (rw.opts.noAliasFirst || rw.opts.targetFirst)
	if target {
		rw.out.WriteString(first.pre + duckIdent(t.phys))
	} else {
		// A read sees the table's columns, not the hidden ones, and _metadata when the
		// statement names it (rowtracking.go).
		sel := "SELECT * " + hiddenExclude()
		if len(rw.metaFields) > 0 && !rw.opts.targetFirst {
			for _, f := range rw.metaFields {
				if f != "file_path" && f != "file_name" && (!t.rowTracking() || f != "row_id" && f != "row_commit_version") {
					return false, fieldNotFound(t, f)
				}
			}
			sel += ", " + metadataStruct(t) + " AS " + duckIdent("_metadata")
		}
		rw.out.WriteString(first.pre + "(" + sel + " FROM " + duckIdent(t.phys) + ")")
	}
	rw.i = j
	rw.tablesSeen++
	alias := strings.ToLower(parts[len(parts)-1])
	if rw.opts.noAliasFirst && rw.tablesSeen == 1 {
		rw.refs = append(rw.refs, tableRef{t: t})
		rw.insertColumns(t)
		return true, nil
	}
	if a := rw.userAlias(); a != "" {
		alias = a
	} else {
		rw.out.WriteString(" AS " + duckIdent(alias))
	}
	if target && rw.target == nil && !rw.opts.bareTables {
		rw.target, rw.targetAlias = t, alias
	}
	rw.refs = append(rw.refs, tableRef{t: t, alias: alias})
	return true, nil
}

// insertColumns names the table's columns after an INSERT's target when the statement does
// not (VALUES or a query by position): the DuckDB table also holds the hidden columns.
func (rw *rewriter) insertColumns(t *tableMeta) {
	n := rw.peek(0)
	if n.isKw("BY") {
		return // BY NAME
	}
	if n.isOp("(") {
		after := rw.peek(1)
		if !(after.isKw("SELECT") || after.isKw("WITH") || after.isKw("VALUES") || after.isKw("FROM") || after.isOp("(")) {
			return // a column list
		}
	}
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = duckIdent(c.Name)
	}
	rw.out.WriteString(" (" + strings.Join(names, ", ") + ")")
}

// isMetadataToken reports whether t names the _metadata column.
func isMetadataToken(t token) bool {
	return (t.kind == tkIdent || t.kind == tkQuoted) && !t.literal && strings.EqualFold(t.val, "_metadata")
}

// metadataAt reports whether a _metadata field reference of the target starts at the current
// token: _metadata.field, or alias._metadata.field with the target's alias.
func (rw *rewriter) metadataAt() bool {
	t := rw.peek(0)
	field := func(k int) bool { f := rw.peek(k); return f.kind == tkIdent || f.kind == tkQuoted }
	if isMetadataToken(t) && rw.peek(1).isOp(".") && field(2) {
		return rw.i == 0 || !rw.toks[rw.i-1].isOp(".")
	}
	return (t.kind == tkIdent || t.kind == tkQuoted) && strings.EqualFold(t.val, rw.targetAlias) &&
		rw.peek(1).isOp(".") && isMetadataToken(rw.peek(2)) && rw.peek(3).isOp(".") && field(4)
}

// metadataColumn writes the target's hidden column for the _metadata field reference at the
// current token (metadataAt) and moves past it.
func (rw *rewriter) metadataColumn() error {
	t := rw.peek(0)
	qual, field := "", rw.peek(2).val
	n := 3
	if !isMetadataToken(t) {
		qual, field, n = duckIdent(t.val), rw.peek(4).val, 5
	}
	if rw.opts.deleteTarget && rw.e.Unknowns().RefuseMetadataInDelete {
		return metadataRefused(rw.target, field)
	}
	col, err := metadataColumn(rw.target, field, qual)
	if err != nil {
		return err
	}
	rw.out.WriteString(t.pre + col)
	rw.i += n
	return nil
}

// userAlias returns the alias written after a table reference, if any.
func (rw *rewriter) userAlias() string {
	n := rw.peek(0)
	if n.isKw("AS") {
		return rw.peek(1).val
	}
	if (n.kind == tkIdent && !reserved[strings.ToUpper(n.val)]) || n.kind == tkQuoted {
		return n.val
	}
	return ""
}

func (rw *rewriter) aliasIfMissing(alias string) {
	if rw.userAlias() == "" {
		rw.out.WriteString(" AS " + duckIdent(alias))
	}
}

// readFiles rewrites read_files('path', format => 'parquet', …) starting at the "(" at j.
func (rw *rewriter) readFiles(j int) error {
	first := rw.toks[rw.i]
	p := &parser{toks: rw.toks, i: j + 1}
	path, err := p.stringLit()
	if err != nil {
		return err
	}
	format := "parquet"
	for p.acceptOp(",") {
		name, err := p.ident()
		if err != nil {
			return err
		}
		if !p.acceptOp("=>") && !p.acceptOp("=") {
			return p.errorf("expected '=>'")
		}
		v := p.next()
		if !strings.EqualFold(name, "format") {
			return errUnsupported("read_files option " + name)
		}
		format = strings.ToLower(v.val)
	}
	if err := p.expectOp(")"); err != nil {
		return err
	}
	if format != "parquet" {
		return errUnsupported("read_files with format '" + format + "'")
	}
	src, err := rw.e.pathSource(rw.ctx, path)
	if err != nil {
		return err
	}
	rw.out.WriteString(first.pre + src)
	rw.i = p.i
	rw.aliasIfMissing("read_files")
	return nil
}

// renamedFunctions are Spark functions DuckDB knows under another name.
var renamedFunctions = map[string]string{
	"ARRAY":        "list_value",
	"COLLECT_LIST": "list",
	"SIZE":         "len",
	"ARRAY_JOIN":   "array_to_string",
}

// sparkSpecial rewrites Spark constructs DuckDB spells differently: typed literals
// (TIMESTAMP '…' is an instant in Spark), X'hex' binary literals, LEFT ANTI/SEMI JOIN, and a
// few functions (named_struct, map, array, collect_list, size, array_join).
func (rw *rewriter) sparkSpecial(t token, up string) (bool, error) {
	next := rw.peek(1)
	if next.kind == tkString && next.pre == "" || next.kind == tkString && up != "X" {
		lit := ""
		switch up {
		case "X":
			if next.pre == "" {
				lit = "from_hex(" + duckString(next.val) + ")"
			}
		case "DATE":
			lit = "DATE " + duckString(next.val)
		case "TIMESTAMP", "TIMESTAMP_LTZ":
			lit = "TIMESTAMPTZ " + duckString(next.val)
		case "TIMESTAMP_NTZ":
			lit = "TIMESTAMP " + duckString(next.val)
		}
		if lit != "" {
			rw.out.WriteString(t.pre + lit)
			rw.i += 2
			return true, nil
		}
	}
	if up == "LEFT" && (next.isKw("ANTI") || next.isKw("SEMI")) {
		rw.out.WriteString(t.pre + strings.ToUpper(next.val))
		rw.i += 2
		return true, nil
	}
	if !next.isOp("(") {
		return false, nil
	}
	if (up == "CURRENT_USER" || up == "SESSION_USER") && rw.peek(2).isOp(")") {
		// The identity statements run as, as DESCRIBE HISTORY records it (userName).
		rw.out.WriteString(t.pre + duckString(rw.e.userName()))
		rw.i += 3
		return true, nil
	}
	if name, ok := renamedFunctions[up]; ok {
		rw.out.WriteString(t.pre + name)
		rw.i++
		return true, nil
	}
	if up != "NAMED_STRUCT" && up != "MAP" {
		return false, nil
	}
	args, end, err := rw.splitArgs(rw.i + 1)
	if err != nil {
		return false, err
	}
	if len(args)%2 != 0 {
		return false, &SQLError{Class: "WRONG_NUM_ARGS.WITHOUT_SUGGESTION", SQLState: "42605",
			Message: fmt.Sprintf("The `%s` requires an even number of parameters, but the actual number is %d.", strings.ToLower(up), len(args))}
	}
	var a, b []string
	for k := 0; k < len(args); k += 2 {
		key, err := rw.sub(args[k])
		if err != nil {
			return false, err
		}
		val, err := rw.sub(args[k+1])
		if err != nil {
			return false, err
		}
		if up == "NAMED_STRUCT" {
			if len(args[k]) != 1 || args[k][0].kind != tkString {
				return false, &SQLError{Class: "DATATYPE_MISMATCH.CREATE_NAMED_STRUCT_WITHOUT_FOLDABLE_STRING", SQLState: "42K09",
					Message: "Only foldable `STRING` expressions are allowed to appear at odd position."}
			}
			key = duckIdent(args[k][0].val)
		}
		a, b = append(a, key), append(b, val)
	}
	if up == "NAMED_STRUCT" {
		parts := make([]string, len(a))
		for k := range a {
			parts[k] = a[k] + " := " + b[k]
		}
		rw.out.WriteString(t.pre + "struct_pack(" + strings.Join(parts, ", ") + ")")
	} else {
		rw.out.WriteString(t.pre + "map([" + strings.Join(a, ", ") + "], [" + strings.Join(b, ", ") + "])")
	}
	rw.i = end + 1
	return true, nil
}

// splitArgs splits the call arguments after the "(" at index open; it returns the token
// ranges of the arguments and the index of the closing ")".
func (rw *rewriter) splitArgs(open int) ([][]token, int, error) {
	var args [][]token
	depth, start := 0, open+1
	for j := open + 1; j < len(rw.toks); j++ {
		tk := rw.toks[j]
		switch {
		case tk.kind == tkEOF:
			return nil, 0, syntaxError("", 0, "unclosed parenthesis")
		case tk.isOp("("):
			depth++
		case tk.isOp(")") && depth > 0:
			depth--
		case tk.isOp(")"):
			if j > start {
				args = append(args, rw.toks[start:j])
			}
			return args, j, nil
		case tk.isOp(",") && depth == 0:
			args = append(args, rw.toks[start:j])
			start = j + 1
		}
	}
	return nil, 0, syntaxError("", 0, "unclosed parenthesis")
}

// sub rewrites a token range (an argument) on its own.
func (rw *rewriter) sub(toks []token) (string, error) {
	own := append(append([]token(nil), toks...), token{kind: tkEOF})
	if len(own) > 0 {
		own[0].pre = ""
	}
	sr := &rewriter{e: rw.e, ctx: rw.ctx, sess: rw.sess, toks: own, ctes: rw.ctes, frames: []rwFrame{{}},
		opts: rewriteOpts{bareTables: rw.opts.bareTables, deleteTarget: rw.opts.deleteTarget}, tablesSeen: 1,
		target: rw.target, targetAlias: rw.targetAlias, metaFields: rw.metaFields}
	if err := sr.run(); err != nil {
		return "", err
	}
	rw.refs = append(rw.refs, sr.refs...)
	return strings.TrimSpace(sr.out.String()), nil
}

// userName is the identity statements run as: current_user() and DESCRIBE HISTORY's userName.
func (e *DuckDB) userName() string { return e.opts.UserName }
