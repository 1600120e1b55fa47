package warehouse

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// emptyDDLResult is what a real warehouse returns for DDL: one STRING column "Result" with no
// rows (recorded in the driver's testdata).
func emptyDDLResult() *Result {
	return &Result{Columns: []Column{{Name: "Result", Type: Prim(KindString)}}}
}

func (e *DuckDB) create(ctx context.Context, sess *Session, p *parser) (*Result, error) {
	p.next() // CREATE
	orReplace := p.acceptKw("OR", "REPLACE")
	switch {
	case p.acceptKw("CATALOG"):
		return e.createCatalogStmt(p)
	case p.acceptKw("SCHEMA"), p.acceptKw("DATABASE"):
		return e.createSchemaStmt(sess, p)
	case p.acceptKw("EXTERNAL", "TABLE"):
		return e.createTable(ctx, sess, p, orReplace, true)
	case p.acceptKw("TABLE"):
		return e.createTable(ctx, sess, p, orReplace, false)
	case p.acceptKw("VOLUME"), p.acceptKw("EXTERNAL", "VOLUME"):
		if strings.EqualFold(p.toks[p.i-2].val, "EXTERNAL") {
			return nil, errUnsupported("external volumes")
		}
		return e.createVolumeStmt(sess, p)
	case p.acceptKw("VIEW"), p.acceptKw("TEMPORARY"), p.acceptKw("TEMP"), p.acceptKw("FUNCTION"):
		return nil, errUnsupported("CREATE " + strings.ToUpper(p.toks[p.i-1].val))
	}
	return nil, p.errorf("unsupported CREATE statement")
}

func (e *DuckDB) createCatalogStmt(p *parser) (*Result, error) {
	ifNot := p.acceptKw("IF", "NOT", "EXISTS")
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	comment, err := skipObjectOptions(p)
	if err != nil {
		return nil, err
	}
	if _, ok := e.catalogs[strings.ToLower(name)]; ok {
		if ifNot {
			return emptyDDLResult(), nil
		}
		return nil, &SQLError{Class: "CATALOG_ALREADY_EXISTS", SQLState: "42P04",
			Message: fmt.Sprintf("Cannot create catalog `%s` because it already exists.", strings.ToLower(name))}
	}
	e.createCatalog(name, comment)
	return emptyDDLResult(), nil
}

// skipObjectOptions reads the trailing options of CREATE CATALOG/SCHEMA (COMMENT, MANAGED
// LOCATION, WITH DBPROPERTIES, OPTIONS) and returns the comment.
func skipObjectOptions(p *parser) (string, error) {
	comment := ""
	for !p.atEnd() {
		switch {
		case p.acceptKw("COMMENT"):
			c, err := p.stringLit()
			if err != nil {
				return "", err
			}
			comment = c
		case p.acceptKw("MANAGED", "LOCATION"), p.acceptKw("LOCATION"):
			if _, err := p.stringLit(); err != nil {
				return "", err
			}
		case p.acceptKw("WITH", "DBPROPERTIES"), p.acceptKw("WITH", "PROPERTIES"), p.acceptKw("OPTIONS"), p.acceptKw("DEFAULT", "COLLATION"):
			if p.peek().isOp("(") {
				if err := skipParens(p); err != nil {
					return "", err
				}
			} else {
				p.next()
			}
		default:
			return "", p.errorf("unexpected clause")
		}
	}
	return comment, nil
}

func (e *DuckDB) createSchemaStmt(sess *Session, p *parser) (*Result, error) {
	ifNot := p.acceptKw("IF", "NOT", "EXISTS")
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	if len(parts) > 2 {
		return nil, p.errorf("a schema name has at most two parts")
	}
	cat, sch := strings.ToLower(sess.Catalog), strings.ToLower(parts[len(parts)-1])
	if len(parts) == 2 {
		cat = strings.ToLower(parts[0])
	}
	comment, err := skipObjectOptions(p)
	if err != nil {
		return nil, err
	}
	c, ok := e.catalogs[cat]
	if !ok {
		return nil, errCatalogNotFound(cat)
	}
	if _, ok := c.schemas[sch]; ok {
		if ifNot {
			return emptyDDLResult(), nil
		}
		return nil, &SQLError{Class: "SCHEMA_ALREADY_EXISTS", SQLState: "42P06",
			Message: fmt.Sprintf("Cannot create schema %s because it already exists.\nChoose a different name, drop the existing schema, or add the IF NOT EXISTS clause to tolerate pre-existing schema.", quoteName(cat, sch))}
	}
	c.schemas[sch] = &schemaMeta{name: sch, comment: comment, created: time.Now().UTC(), tables: map[string]*tableMeta{}}
	return emptyDDLResult(), nil
}

// columnDef parses "name type [NOT NULL] [COMMENT '…']".
func columnDef(p *parser) (Field, error) {
	name, err := p.ident()
	if err != nil {
		return Field{}, err
	}
	typ, err := p.sparkType()
	if err != nil {
		return Field{}, err
	}
	f := Field{Name: name, Type: typ, Nullable: true}
	for {
		switch {
		case p.acceptKw("NOT", "NULL"):
			f.Nullable = false
		case p.acceptKw("NULL"):
		case p.acceptKw("COMMENT"):
			c, err := p.stringLit()
			if err != nil {
				return Field{}, err
			}
			f.Comment = c
		case p.peek().isKw("DEFAULT"), p.peek().isKw("GENERATED"), p.peek().isKw("MASK"), p.peek().isKw("COLLATE"):
			return Field{}, errUnsupported("column " + strings.ToUpper(p.peek().val) + " clauses")
		case p.acceptKw("PRIMARY", "KEY"):
			// informational only in Unity Catalog
		default:
			return f, nil
		}
	}
}

func (e *DuckDB) createTable(ctx context.Context, sess *Session, p *parser, orReplace, external bool) (*Result, error) {
	ifNot := p.acceptKw("IF", "NOT", "EXISTS")
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	cat, sch, name := resolve(sess, parts)
	s, err := e.schemaOf(cat, sch)
	if err != nil {
		return nil, err
	}
	t := &tableMeta{id: newUUID(), catalog: cat, schema: sch, name: name, props: map[string]string{},
		created: time.Now().UTC(), loaded: map[string]loadedFile{}, managed: true}
	var cols []Field
	hasCols := false
	if p.acceptOp("(") {
		hasCols = true
		for {
			if p.peek().isKw("CONSTRAINT") || p.peek().isKw("PRIMARY") || p.peek().isKw("FOREIGN") {
				// Primary and foreign keys are informational in Unity Catalog; skip to the next
				// comma. A CHECK constraint is enforced, so it is refused here rather than
				// ignored: add it with ALTER TABLE … ADD CONSTRAINT.
				depth := 0
				for {
					tk := p.peek()
					if tk.kind == tkEOF || depth == 0 && (tk.isOp(",") || tk.isOp(")")) {
						break
					}
					if tk.isKw("CHECK") {
						return nil, errUnsupported("CHECK constraints in CREATE TABLE (use ALTER TABLE … ADD CONSTRAINT name CHECK (…))")
					}
					if tk.isOp("(") {
						depth++
					} else if tk.isOp(")") {
						depth--
					}
					p.next()
				}
			} else {
				f, err := columnDef(p)
				if err != nil {
					return nil, err
				}
				if containsField(cols, f.Name) {
					return nil, &SQLError{Class: "COLUMN_ALREADY_EXISTS", SQLState: "42711",
						Message: fmt.Sprintf("The column `%s` already exists. Choose another name or rename the existing column.", strings.ToLower(f.Name))}
				}
				cols = append(cols, f)
			}
			if p.acceptOp(",") {
				continue
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			break
		}
	}
	location := ""
	var asQuery []token
	for !p.atEnd() && asQuery == nil {
		switch {
		case p.acceptKw("USING"):
			f, err := p.ident()
			if err != nil {
				return nil, err
			}
			if !strings.EqualFold(f, "delta") {
				return nil, errUnsupported("tables USING " + strings.ToUpper(f) + " (only Delta tables)")
			}
		case p.acceptKw("PARTITIONED", "BY"), p.acceptKw("CLUSTER", "BY"):
			clustered := strings.EqualFold(p.toks[p.i-2].val, "CLUSTER")
			if err := p.expectOp("("); err != nil {
				return nil, err
			}
			for !p.acceptOp(")") {
				c, err := p.ident()
				if err != nil {
					return nil, err
				}
				if !clustered {
					t.partitionCols = append(t.partitionCols, c)
				}
				p.acceptOp(",")
			}
		case p.acceptKw("LOCATION"):
			l, err := p.stringLit()
			if err != nil {
				return nil, err
			}
			location = l
		case p.acceptKw("COMMENT"):
			c, err := p.stringLit()
			if err != nil {
				return nil, err
			}
			t.comment = c
		case p.acceptKw("TBLPROPERTIES"):
			if err := parseProps(p, t.props); err != nil {
				return nil, err
			}
		case p.acceptKw("OPTIONS"):
			if err := skipParens(p); err != nil {
				return nil, err
			}
		case p.acceptKw("AS"):
			asQuery = p.toks[p.i:]
		default:
			return nil, p.errorf("unexpected CREATE TABLE clause")
		}
	}
	if !hasCols && asQuery == nil {
		return nil, errUnsupported("CREATE TABLE without a column list or AS query")
	}
	var replaced []dataFile // the data files of the table a REPLACE replaces
	if old, exists := s.tables[name]; exists {
		if ifNot {
			return emptyDDLResult(), nil
		}
		if !orReplace {
			return nil, &SQLError{Class: "TABLE_OR_VIEW_ALREADY_EXISTS", SQLState: "42P07",
				Message: fmt.Sprintf("Cannot create table or view %s because it already exists.\nChoose a different name, drop or rename the existing object, add the IF NOT EXISTS clause to tolerate pre-existing objects, add the OR REPLACE clause to replace the existing materialized view, or add the OR REFRESH clause to refresh the existing streaming table.", t.quoted())}
		}
		// REPLACE keeps the table's identity, location and history, and removes its data files.
		t.id, t.location, t.managed, t.history, t.created = old.id, old.location, old.managed, old.history, old.created
		t.baseVersion, replaced = old.baseVersion, old.files
		t.foreignLog, t.lastProtocol, t.lastMetaData = old.foreignLog, old.lastProtocol, old.lastMetaData
		// The old data goes only once the new table is in place: a failed REPLACE keeps it.
		defer func(phys string) {
			if s.tables[name] == t {
				_, _ = e.duckExec(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+duckIdent(phys))
			}
		}(old.phys)
	}
	// A failed statement leaves no DuckDB table behind.
	defer func() {
		if t.phys != "" && s.tables[name] != t {
			_, _ = e.duckExec(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+duckIdent(t.phys))
		}
	}()
	for _, pc := range t.partitionCols {
		if !containsField(cols, pc) && asQuery == nil {
			return nil, &SQLError{Class: "DELTA_COLUMN_NOT_FOUND", SQLState: "42703",
				Message: fmt.Sprintf("Unable to find the column `%s` given [%s].", pc, fieldNames(cols))}
		}
	}
	if location != "" {
		u, err := canonicalURL(location)
		if err != nil {
			return nil, err
		}
		t.location, t.managed = u, false
	} else if t.location == "" || external {
		if external {
			return nil, &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023", Message: "CREATE EXTERNAL TABLE requires a LOCATION."}
		}
		t.location = fmt.Sprintf("%s/__unitystorage/catalogs/%s/tables/%s", e.opts.StorageRoot, e.catalogs[cat].id, t.id)
	}
	if len(t.history) == 0 {
		// A location that already holds a Delta log is not the engine's to write.
		t.foreignLog = hasDeltaLog(t.location)
	}
	ensureLocalDir(t.location)
	t.phys = e.newPhys()

	op := "CREATE TABLE"
	if orReplace && len(t.history) > 0 {
		op = "CREATE OR REPLACE TABLE"
	}
	metrics := map[string]string{}
	if asQuery != nil {
		q, _, err := e.rewrite(ctx, sess, asQuery, rewriteOpts{})
		if err != nil {
			return nil, err
		}
		n, err := e.duckExec(ctx, fmt.Sprintf("CREATE TABLE %s AS %s", duckIdent(t.phys), q))
		if err != nil {
			return nil, err
		}
		qcols, err := e.describeSQL(ctx, "SELECT * FROM "+duckIdent(t.phys))
		if err != nil {
			return nil, err
		}
		if err := e.addHiddenColumns(ctx, t.phys); err != nil {
			return nil, err
		}
		cols = qcols
		op += " AS SELECT"
		metrics = map[string]string{"numOutputRows": fmt.Sprint(n)}
	} else {
		defs := make([]string, len(cols))
		for i, c := range cols {
			defs[i] = duckIdent(c.Name) + " " + c.Type.Duck()
			if !c.Nullable {
				defs[i] += " NOT NULL"
			}
		}
		defs = append(defs, hiddenColumnDefs()...)
		if _, err := e.duckExec(ctx, fmt.Sprintf("CREATE TABLE %s (%s)", duckIdent(t.phys), strings.Join(defs, ", "))); err != nil {
			return nil, err
		}
	}
	initRowTracking(t)
	for k := range t.props {
		if strings.HasPrefix(k, constraintPrefix) {
			return nil, errUnsupported("CHECK constraints in TBLPROPERTIES (use ALTER TABLE … ADD CONSTRAINT)")
		}
	}
	t.cols = assignPhysical(t, cols)
	var w written
	if asQuery != nil {
		var err error
		if w, err = e.writeDataFiles(ctx, t, -1); err != nil {
			return nil, err
		}
		metrics["numFiles"], metrics["numOutputBytes"] = strconv.Itoa(w.files), strconv.FormatInt(w.bytes, 10)
	}
	partJSON, _ := json.Marshal(nonNil(t.partitionCols))
	propJSON, _ := json.Marshal(t.props)
	if _, err := e.addCommitSpec(t, commitSpec{op: op, params: map[string]string{
		"isManaged":   fmt.Sprint(t.managed),
		"description": t.comment,
		"partitionBy": string(partJSON),
		"properties":  string(propJSON),
	}, metrics: metrics, adds: w.adds, removes: replaced}); err != nil {
		return nil, err
	}
	s.tables[name] = t
	return emptyDDLResult(), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func fieldNames(fs []Field) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// parseProps reads ('k' = 'v', …) table properties.
func parseProps(p *parser, into map[string]string) error {
	if err := p.expectOp("("); err != nil {
		return err
	}
	for !p.acceptOp(")") {
		key, err := propKey(p)
		if err != nil {
			return err
		}
		p.acceptOp("=")
		v := p.next()
		if v.kind == tkEOF || v.kind == tkOp {
			return p.errorf("expected a property value")
		}
		into[key] = v.val
		if !p.acceptOp(",") {
			if err := p.expectOp(")"); err != nil {
				return err
			}
			break
		}
	}
	return nil
}

// propKey reads a property key: 'quoted' or a dotted identifier (delta.enableTypeWidening).
func propKey(p *parser) (string, error) {
	if p.peek().kind == tkString {
		return p.stringLit()
	}
	parts, err := dottedIdent(p)
	if err != nil {
		return "", err
	}
	return strings.Join(parts, "."), nil
}

func dottedIdent(p *parser) ([]string, error) {
	first, err := p.ident()
	if err != nil {
		return nil, err
	}
	parts := []string{first}
	for p.peek().isOp(".") {
		p.next()
		n, err := p.ident()
		if err != nil {
			return nil, err
		}
		parts = append(parts, n)
	}
	return parts, nil
}

func (e *DuckDB) drop(ctx context.Context, sess *Session, p *parser) (*Result, error) {
	p.next() // DROP
	switch {
	case p.acceptKw("VOLUME"):
		return e.dropVolumeStmt(sess, p)
	case p.acceptKw("TABLE"):
		ifExists := p.acceptKw("IF", "EXISTS")
		parts, err := p.qualifiedName()
		if err != nil {
			return nil, err
		}
		p.acceptKw("PURGE")
		t, err := e.table(sess, parts)
		if err != nil {
			if ifExists {
				return emptyDDLResult(), nil
			}
			return nil, err
		}
		if _, err := e.duckExec(ctx, "DROP TABLE "+duckIdent(t.phys)); err != nil {
			return nil, err
		}
		delete(e.catalogs[t.catalog].schemas[t.schema].tables, t.name)
		return emptyDDLResult(), nil
	case p.acceptKw("SCHEMA"), p.acceptKw("DATABASE"):
		ifExists := p.acceptKw("IF", "EXISTS")
		parts, err := p.qualifiedName()
		if err != nil {
			return nil, err
		}
		cascade := p.acceptKw("CASCADE")
		p.acceptKw("RESTRICT")
		cat, sch := strings.ToLower(sess.Catalog), strings.ToLower(parts[len(parts)-1])
		if len(parts) == 2 {
			cat = strings.ToLower(parts[0])
		}
		s, err := e.schemaOf(cat, sch)
		if err != nil {
			if ifExists {
				return emptyDDLResult(), nil
			}
			return nil, err
		}
		if len(s.tables) > 0 && !cascade {
			return nil, &SQLError{Class: "SCHEMA_NOT_EMPTY", SQLState: "2BP01",
				Message: fmt.Sprintf("Cannot drop a schema %s because it contains objects.\nUse DROP SCHEMA ... CASCADE to drop the schema and all its objects.", quoteName(cat, sch))}
		}
		for _, t := range s.tables {
			if _, err := e.duckExec(ctx, "DROP TABLE "+duckIdent(t.phys)); err != nil {
				return nil, err
			}
		}
		delete(e.catalogs[cat].schemas, sch)
		return emptyDDLResult(), nil
	case p.acceptKw("CATALOG"):
		ifExists := p.acceptKw("IF", "EXISTS")
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		cascade := p.acceptKw("CASCADE")
		c, ok := e.catalogs[strings.ToLower(name)]
		if !ok {
			if ifExists {
				return emptyDDLResult(), nil
			}
			return nil, errCatalogNotFound(strings.ToLower(name))
		}
		for _, s := range c.schemas {
			if len(s.tables) > 0 && !cascade {
				return nil, &SQLError{Class: "CATALOG_NOT_EMPTY", SQLState: "2BP01",
					Message: fmt.Sprintf("Cannot drop catalog `%s` because it contains objects. Use DROP CATALOG ... CASCADE.", c.name)}
			}
		}
		for _, s := range c.schemas {
			for _, t := range s.tables {
				if _, err := e.duckExec(ctx, "DROP TABLE "+duckIdent(t.phys)); err != nil {
					return nil, err
				}
			}
		}
		delete(e.catalogs, c.name)
		return emptyDDLResult(), nil
	}
	return nil, p.errorf("unsupported DROP statement")
}

// typeWidening reports whether Delta type widening allows changing a column from one type
// to another (docs: delta type widening).
func typeWidening(from, to *Type) bool {
	digits := map[Kind]int{KindByte: 3, KindShort: 5, KindInt: 10, KindLong: 20}
	switch from.Kind {
	case KindByte, KindShort, KindInt:
		switch to.Kind {
		case KindShort, KindInt, KindLong:
			return digits[to.Kind] > digits[from.Kind]
		case KindDouble:
			return true
		case KindDecimal:
			return to.Precision-to.Scale >= digits[from.Kind]
		}
	case KindLong:
		return to.Kind == KindDecimal && to.Precision-to.Scale >= digits[KindLong]
	case KindFloat:
		return to.Kind == KindDouble
	case KindDecimal:
		return to.Kind == KindDecimal && to.Scale >= from.Scale && to.Precision-to.Scale >= from.Precision-from.Scale &&
			(to.Precision > from.Precision || to.Scale > from.Scale)
	case KindDate:
		return to.Kind == KindTimestampNTZ
	}
	return false
}

func (e *DuckDB) alter(ctx context.Context, sess *Session, p *parser) (*Result, error) {
	p.next() // ALTER
	if !p.acceptKw("TABLE") {
		return nil, errUnsupported("ALTER " + strings.ToUpper(p.peek().val))
	}
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	t, err := e.table(sess, parts)
	if err != nil {
		return nil, err
	}
	switch {
	case p.acceptKw("ADD", "CONSTRAINT"):
		return e.addConstraint(ctx, t, p)
	case p.acceptKw("ADD", "COLUMNS"), p.acceptKw("ADD", "COLUMN"), p.acceptKw("ADD"):
		var defs []Field
		paren := p.acceptOp("(")
		for {
			f, err := columnDef(p)
			if err != nil {
				return nil, err
			}
			if strings.Contains(f.Name, ".") {
				return nil, errUnsupported("adding nested columns")
			}
			if t.col(f.Name) >= 0 || containsField(defs, f.Name) {
				return nil, &SQLError{Class: "FIELD_ALREADY_EXISTS", SQLState: "42710",
					Message: fmt.Sprintf("Cannot add column, because `%s` already exists in %s.", f.Name, t.quoted())}
			}
			defs = append(defs, f)
			if !p.acceptOp(",") {
				break
			}
		}
		if paren {
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
		}
		for _, f := range defs {
			q := fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", duckIdent(t.phys), duckIdent(f.Name), f.Type.Duck())
			if _, err := e.duckExec(ctx, q); err != nil {
				return nil, err
			}
			if !f.Nullable {
				if _, err := e.duckExec(ctx, fmt.Sprintf("ALTER TABLE %s ALTER %s SET NOT NULL", duckIdent(t.phys), duckIdent(f.Name))); err != nil {
					return nil, err
				}
			}
		}
		t.cols = assignPhysical(t, append(t.cols, defs...))
		colsJSON, _ := json.Marshal(defsJSON(defs))
		if _, err := e.addCommit(t, "ADD COLUMNS", map[string]string{"columns": string(colsJSON)}, nil, false); err != nil {
			return nil, err
		}
		return emptyDDLResult(), nil
	case p.acceptKw("ALTER", "COLUMN"), p.acceptKw("CHANGE", "COLUMN"), p.acceptKw("ALTER"), p.acceptKw("CHANGE"):
		return e.alterColumn(ctx, t, p)
	case p.acceptKw("DROP", "CONSTRAINT"):
		return e.dropConstraint(t, p)
	case p.acceptKw("SET", "TBLPROPERTIES"):
		wasMapped := t.columnMapping()
		set := map[string]string{}
		if err := parseProps(p, set); err != nil {
			return nil, err
		}
		for k, v := range set {
			if strings.HasPrefix(k, constraintPrefix) {
				return nil, errUnsupported("setting CHECK constraints as table properties (use ALTER TABLE … ADD CONSTRAINT)")
			}
			if strings.EqualFold(k, "delta.columnMapping.mode") && !strings.EqualFold(v, "name") && !strings.EqualFold(v, "none") {
				return nil, errUnsupported("column mapping mode " + v + " (only name)")
			}
			if strings.EqualFold(k, "delta.columnMapping.mode") && wasMapped && !strings.EqualFold(v, "name") {
				return nil, &SQLError{Class: "DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE", SQLState: "0AKDC",
					Message: fmt.Sprintf("Changing column mapping mode from 'name' to '%s' is not supported.", v)}
			}
		}
		wasTracked := t.rowTracking()
		for k, v := range set {
			t.props[k] = v
		}
		if !wasMapped && t.columnMapping() {
			upgradeColumnMapping(t)
		}
		// Enabling row tracking backfills row IDs for the rows already there, in the
		// same commit (rowtracking.go).
		var readds []dataFile
		if !wasTracked && t.rowTracking() {
			initRowTracking(t)
			var err error
			if readds, err = e.backfillRowIDs(ctx, t); err != nil {
				return nil, err
			}
		}
		propJSON, _ := json.Marshal(t.props)
		if _, err := e.addCommitSpec(t, commitSpec{op: "SET TBLPROPERTIES", params: map[string]string{"properties": string(propJSON)}, readds: readds}); err != nil {
			return nil, err
		}
		return emptyDDLResult(), nil
	case p.acceptKw("UNSET", "TBLPROPERTIES"):
		p.acceptKw("IF", "EXISTS")
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		for !p.acceptOp(")") {
			k, err := propKey(p)
			if err != nil {
				return nil, err
			}
			delete(t.props, k)
			p.acceptOp(",")
		}
		if _, err := e.addCommit(t, "UNSET TBLPROPERTIES", nil, nil, false); err != nil {
			return nil, err
		}
		return emptyDDLResult(), nil
	case p.acceptKw("RENAME", "COLUMN"), p.acceptKw("DROP", "COLUMN"), p.acceptKw("DROP", "COLUMNS"):
		op := "RENAME COLUMN"
		if strings.EqualFold(p.toks[p.i-2].val, "DROP") {
			op = "DROP COLUMN"
		}
		if t.columnMapping() {
			if op == "RENAME COLUMN" {
				return e.renameColumn(ctx, t, p)
			}
			return e.dropColumns(ctx, t, p)
		}
		{
			cls := "DELTA_UNSUPPORTED_RENAME_COLUMN"
			if op == "DROP COLUMN" {
				cls = "DELTA_UNSUPPORTED_DROP_COLUMN"
			}
			return nil, &SQLError{Class: cls, SQLState: "0AKDC", Message: fmt.Sprintf(
				"%s is not supported for your Delta table. Please upgrade your Delta table to support column mapping: "+
					"ALTER TABLE <table_name> SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name').", op)}
		}
	}
	return nil, errUnsupported("this ALTER TABLE form")
}

func defsJSON(defs []Field) []any {
	out := make([]any, len(defs))
	for i, d := range defs {
		out[i] = map[string]any{"column": map[string]any{"name": d.Name, "type": d.Type.Simple(), "nullable": d.Nullable}}
	}
	return out
}

// alterColumn handles ALTER COLUMN c TYPE t, DROP NOT NULL, SET NOT NULL and COMMENT.
func (e *DuckDB) alterColumn(ctx context.Context, t *tableMeta, p *parser) (*Result, error) {
	path, err := dottedIdent(p)
	if err != nil {
		return nil, err
	}
	ci := t.col(path[0])
	if ci < 0 {
		return nil, &SQLError{Class: "UNRESOLVED_COLUMN.WITH_SUGGESTION", SQLState: "42703",
			Message: fmt.Sprintf("A column, variable, or function parameter with name `%s` cannot be resolved. Did you mean one of the following? [%s].", path[0], fieldNames(t.cols))}
	}
	// Nested fields: locate the struct field the path names.
	target := &t.cols[ci]
	for _, name := range path[1:] {
		if target.Type.Kind != KindStruct {
			return nil, errUnsupported("altering fields inside arrays or maps")
		}
		found := false
		for i := range target.Type.Fields {
			if strings.EqualFold(target.Type.Fields[i].Name, name) {
				target, found = &target.Type.Fields[i], true
				break
			}
		}
		if !found {
			return nil, &SQLError{Class: "DELTA_COLUMN_NOT_FOUND", SQLState: "42703",
				Message: fmt.Sprintf("Unable to find the column `%s` given [%s].", strings.Join(path, "."), fieldNames(t.cols))}
		}
	}
	colName := strings.Join(path, ".")
	params := map[string]string{"column": colName}
	switch {
	case p.acceptKw("DROP", "NOT", "NULL"):
		if len(path) == 1 {
			if _, err := e.duckExec(ctx, fmt.Sprintf("ALTER TABLE %s ALTER %s DROP NOT NULL", duckIdent(t.phys), duckIdent(t.cols[ci].Name))); err != nil {
				return nil, err
			}
		}
		target.Nullable = true
	case p.acceptKw("SET", "NOT", "NULL"):
		if len(path) > 1 {
			return nil, errUnsupported("SET NOT NULL on nested fields")
		}
		if _, err := e.duckExec(ctx, fmt.Sprintf("ALTER TABLE %s ALTER %s SET NOT NULL", duckIdent(t.phys), duckIdent(t.cols[ci].Name))); err != nil {
			return nil, &SQLError{Class: "DELTA_NOT_NULL_CONSTRAINT_VIOLATED", SQLState: "23502",
				Message: fmt.Sprintf("NOT NULL constraint violated for column: %s.", colName)}
		}
		target.Nullable = false
	case p.acceptKw("COMMENT"):
		c, err := p.stringLit()
		if err != nil {
			return nil, err
		}
		target.Comment = c
	case p.acceptKw("TYPE"), p.acceptKw("SET", "DATA", "TYPE"):
		nt, err := p.sparkType()
		if err != nil {
			return nil, err
		}
		if nt.Equal(target.Type) {
			break
		}
		if len(path) > 1 {
			return nil, errUnsupported("changing the type of nested fields")
		}
		if !typeWidening(target.Type, nt) || !strings.EqualFold(t.props["delta.enableTypeWidening"], "true") {
			return nil, &SQLError{Class: "NOT_SUPPORTED_CHANGE_COLUMN", SQLState: "0A000", Message: fmt.Sprintf(
				"ALTER TABLE ALTER/CHANGE COLUMN is not supported for changing %s's column `%s` with type \"%s\" to `%s` with type \"%s\". "+
					"Type changes that widen a column need the table property delta.enableTypeWidening = true.",
				t.quoted(), target.Name, strings.ToUpper(target.Type.Simple()), target.Name, strings.ToUpper(nt.Simple()))}
		}
		if _, err := e.duckExec(ctx, fmt.Sprintf("ALTER TABLE %s ALTER %s TYPE %s", duckIdent(t.phys), duckIdent(target.Name), nt.Duck())); err != nil {
			return nil, err
		}
		params["newType"] = nt.Simple()
		target.Type = nt
	default:
		return nil, errUnsupported("this ALTER COLUMN form")
	}
	if _, err := e.addCommit(t, "CHANGE COLUMN", params, nil, false); err != nil {
		return nil, err
	}
	return emptyDDLResult(), nil
}

func (e *DuckDB) use(sess *Session, p *parser) (*Result, error) {
	p.next() // USE
	switch {
	case p.acceptKw("CATALOG"):
		name, err := p.ident()
		if err != nil {
			return nil, err
		}
		c, ok := e.catalogs[strings.ToLower(name)]
		if !ok {
			return nil, errCatalogNotFound(strings.ToLower(name))
		}
		sess.Catalog = c.name
		sess.Schema = "default"
		return emptyDDLResult(), nil
	case p.acceptKw("SCHEMA"), p.acceptKw("DATABASE"):
	}
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	cat, sch := strings.ToLower(sess.Catalog), strings.ToLower(parts[len(parts)-1])
	if len(parts) == 2 {
		cat = strings.ToLower(parts[0])
	}
	if _, err := e.schemaOf(cat, sch); err != nil {
		return nil, err
	}
	sess.Catalog, sess.Schema = cat, sch
	return emptyDDLResult(), nil
}

func (e *DuckDB) set(sess *Session, p *parser) (*Result, error) {
	p.next() // SET
	res := &Result{Columns: []Column{{Name: "key", Type: Prim(KindString)}, {Name: "value", Type: Prim(KindString)}}}
	if p.atEnd() {
		keys := make([]string, 0, len(sess.Conf))
		for k := range sess.Conf {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			res.Rows = append(res.Rows, []any{k, sess.Conf[k]})
		}
		return res, nil
	}
	var key strings.Builder
	for !p.atEnd() && !p.peek().isOp("=") {
		key.WriteString(p.next().val)
	}
	if err := e.checkConfAllowed(key.String()); err != nil {
		return nil, err
	}
	val := ""
	if p.acceptOp("=") {
		val = strings.TrimSpace(p.rest())
		if strings.HasPrefix(val, "'") || strings.HasPrefix(val, `"`) {
			if v, _, err := unquoteSpark(val); err == nil {
				val = v
			}
		}
	}
	if sess.Conf == nil {
		sess.Conf = map[string]string{}
	}
	sess.Conf[key.String()] = val
	res.Rows = [][]any{{key.String(), val}}
	return res, nil
}

// userMetadataKey is the session configuration whose value every commit of the session
// carries as commitInfo.userMetadata (DOC: "Enrich Delta Lake tables with custom metadata").
const userMetadataKey = "spark.databricks.delta.commitInfo.userMetadata"

// autoMergeKey is the session configuration that turns on schema evolution in MERGE (DOC:
// MERGE INTO, automatic schema evolution).
const autoMergeKey = "spark.databricks.delta.schema.autoMerge.enabled"

// sessionUserMetadata returns the session's commit metadata ("" when unset or empty).
func sessionUserMetadata(sess *Session) string { return sessionConf(sess, userMetadataKey) }

// sessionConf returns a session configuration value (keys case-insensitive), "" when unset.
func sessionConf(sess *Session, key string) string {
	for k, v := range sess.Conf {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return ""
}

// checkConfAllowed refuses a configuration the warehouse does not allow (see
// Unknowns.RefuseUserMetadata), as CONFIG_NOT_AVAILABLE (DOC: Databricks error conditions).
func (e *DuckDB) checkConfAllowed(key string) error {
	if strings.EqualFold(key, userMetadataKey) && e.Unknowns().RefuseUserMetadata {
		return &SQLError{Class: "CONFIG_NOT_AVAILABLE", SQLState: "42K0I", Message: fmt.Sprintf("Configuration %s is not available.", key)}
	}
	return nil
}

// reset implements RESET (every session configuration) and RESET key (one).
func (e *DuckDB) reset(sess *Session, p *parser) (*Result, error) {
	p.next() // RESET
	var key strings.Builder
	for !p.atEnd() {
		key.WriteString(p.next().val)
	}
	if key.Len() == 0 {
		sess.Conf = map[string]string{}
		return emptyDDLResult(), nil
	}
	if err := e.checkConfAllowed(key.String()); err != nil {
		return nil, err
	}
	for k := range sess.Conf {
		if strings.EqualFold(k, key.String()) {
			delete(sess.Conf, k)
		}
	}
	return emptyDDLResult(), nil
}

func (e *DuckDB) show(sess *Session, p *parser) (*Result, error) {
	p.next() // SHOW
	switch {
	case p.acceptKw("CATALOGS"):
		res := &Result{Columns: []Column{{Name: "catalog", Type: Prim(KindString)}}}
		for _, name := range sortedKeys(e.catalogs) {
			res.Rows = append(res.Rows, []any{name})
		}
		return res, nil
	case p.acceptKw("SCHEMAS"), p.acceptKw("DATABASES"):
		cat := sess.Catalog
		if p.acceptKw("IN") || p.acceptKw("FROM") {
			c, err := p.ident()
			if err != nil {
				return nil, err
			}
			cat = c
		}
		c, ok := e.catalogs[strings.ToLower(cat)]
		if !ok {
			return nil, errCatalogNotFound(strings.ToLower(cat))
		}
		res := &Result{Columns: []Column{{Name: "databaseName", Type: Prim(KindString)}}}
		for _, name := range sortedKeys(c.schemas) {
			res.Rows = append(res.Rows, []any{name})
		}
		return res, nil
	case p.acceptKw("TABLES"):
		parts := []string{sess.Catalog, sess.Schema}
		if p.acceptKw("IN") || p.acceptKw("FROM") {
			q, err := p.qualifiedName()
			if err != nil {
				return nil, err
			}
			if len(q) == 1 {
				parts = []string{sess.Catalog, q[0]}
			} else {
				parts = q
			}
		}
		s, err := e.schemaOf(strings.ToLower(parts[0]), strings.ToLower(parts[1]))
		if err != nil {
			return nil, err
		}
		res := &Result{Columns: []Column{{Name: "database", Type: Prim(KindString)}, {Name: "tableName", Type: Prim(KindString)}, {Name: "isTemporary", Type: Prim(KindBoolean)}}}
		for _, name := range sortedKeys(s.tables) {
			res.Rows = append(res.Rows, []any{s.name, name, false})
		}
		return res, nil
	case p.acceptKw("TBLPROPERTIES"):
		parts, err := p.qualifiedName()
		if err != nil {
			return nil, err
		}
		t, err := e.table(sess, parts)
		if err != nil {
			return nil, err
		}
		res := &Result{Columns: []Column{{Name: "key", Type: Prim(KindString)}, {Name: "value", Type: Prim(KindString)}}}
		for _, k := range sortedKeys(t.props) {
			res.Rows = append(res.Rows, []any{k, t.props[k]})
		}
		return res, nil
	}
	return nil, errUnsupported("SHOW " + strings.ToUpper(p.peek().val))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// list implements LIST 'path' [LIMIT n]: the files under a path, as Databricks lists cloud
// storage (path, name, size, modification_time in milliseconds).
func (e *DuckDB) list(ctx context.Context, p *parser) (*Result, error) {
	p.next() // LIST
	raw, err := p.stringLit()
	if err != nil {
		return nil, err
	}
	limit := -1
	if p.acceptKw("LIMIT") {
		fmt.Sscan(p.next().val, &limit)
	}
	url, err := e.canonical(raw)
	if err != nil {
		return nil, err
	}
	if err := e.checkOverlap(url, "ListFiles"); err != nil {
		return nil, err
	}
	sd, err := e.openSource(ctx, url)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: []Column{{Name: "path", Type: Prim(KindString)}, {Name: "name", Type: Prim(KindString)},
		{Name: "size", Type: Prim(KindLong)}, {Name: "modification_time", Type: Prim(KindLong)}}}
	files, exists, err := sd.listAll(ctx)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, errPathNotFound(url)
	}
	for _, f := range files {
		if limit >= 0 && len(res.Rows) >= limit {
			break
		}
		name := f.Rel
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		res.Rows = append(res.Rows, []any{f.URL, name, f.Size, f.ModTime.UnixMilli()})
	}
	return res, nil
}

// addConstraint implements ALTER TABLE … ADD CONSTRAINT name CHECK (expr): existing rows must
// satisfy it, and later writes are checked against it (DELTA_VIOLATE_CONSTRAINT_WITH_VALUES).
func (e *DuckDB) addConstraint(ctx context.Context, t *tableMeta, p *parser) (*Result, error) {
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	if !p.acceptKw("CHECK") {
		return nil, errUnsupported("ADD CONSTRAINT other than CHECK (PRIMARY KEY and FOREIGN KEY are informational)")
	}
	if !p.peek().isOp("(") {
		return nil, p.errorf("CHECK needs a parenthesised expression")
	}
	start := p.i
	if err := skipParens(p); err != nil {
		return nil, err
	}
	var b strings.Builder
	for _, tk := range p.toks[start+1 : p.i-1] {
		b.WriteString(tk.pre + tk.raw)
	}
	expr := strings.TrimSpace(b.String())
	if !p.atEnd() {
		return nil, p.errorf("unexpected text after the CHECK expression")
	}
	key := constraintPrefix + strings.ToLower(name)
	if _, ok := t.props[key]; ok {
		return nil, &SQLError{Class: "DELTA_CONSTRAINT_ALREADY_EXISTS", SQLState: "42710",
			Message: fmt.Sprintf("Constraint '%s' already exists. Please delete the old constraint first.\nOld constraint:\n%s", strings.ToLower(name), t.props[key])}
	}
	q, err := e.constraintQuery(ctx, t, expr, "SELECT * FROM "+duckIdent(t.phys), "count(*)")
	if err != nil {
		return nil, err
	}
	res, err := e.duckQuery(ctx, q)
	if err != nil {
		return nil, err
	}
	if n := res.Int(0, 0); n > 0 {
		return nil, &SQLError{Class: "DELTA_NEW_CHECK_CONSTRAINT_VIOLATION", SQLState: "23512",
			Message: fmt.Sprintf("%d rows in %s violate the new CHECK constraint (%s)", n, t.quoted(), expr)}
	}
	t.props[key] = expr
	if _, err := e.addCommit(t, "ADD CONSTRAINT", map[string]string{"name": strings.ToLower(name), "expr": expr}, nil, false); err != nil {
		delete(t.props, key)
		return nil, err
	}
	return emptyDDLResult(), nil
}

// dropConstraint implements ALTER TABLE … DROP CONSTRAINT [IF EXISTS] name.
func (e *DuckDB) dropConstraint(t *tableMeta, p *parser) (*Result, error) {
	ifExists := p.acceptKw("IF", "EXISTS")
	name, err := p.ident()
	if err != nil {
		return nil, err
	}
	key := constraintPrefix + strings.ToLower(name)
	expr, ok := t.props[key]
	if !ok {
		if ifExists {
			return emptyDDLResult(), nil
		}
		return nil, &SQLError{Class: "DELTA_CONSTRAINT_DOES_NOT_EXIST", SQLState: "42704",
			Message: fmt.Sprintf("Cannot drop nonexistent constraint %s from table %s. To avoid throwing an error, provide the parameter IF EXISTS or set the SQL session configuration spark.databricks.delta.constraints.allowUnenforcedNotNull.enabled to true.", strings.ToLower(name), t.quoted())}
	}
	delete(t.props, key)
	if _, err := e.addCommit(t, "DROP CONSTRAINT", map[string]string{"name": strings.ToLower(name), "expr": expr}, nil, false); err != nil {
		return nil, err
	}
	return emptyDDLResult(), nil
}

// renameColumn implements ALTER TABLE … RENAME COLUMN a TO b on a column-mapped table: the
// logical name changes, the physical name (and so the data files) stays.
func (e *DuckDB) renameColumn(ctx context.Context, t *tableMeta, p *parser) (*Result, error) {
	path, err := dottedIdent(p)
	if err != nil {
		return nil, err
	}
	if err := p.expectKw("TO"); err != nil {
		return nil, err
	}
	to, err := p.ident()
	if err != nil {
		return nil, err
	}
	if len(path) > 1 {
		return nil, errUnsupported("renaming nested fields")
	}
	ci := t.col(path[0])
	if ci < 0 {
		return nil, &SQLError{Class: "UNRESOLVED_COLUMN.WITH_SUGGESTION", SQLState: "42703",
			Message: fmt.Sprintf("A column, variable, or function parameter with name `%s` cannot be resolved. Did you mean one of the following? [%s].", path[0], fieldNames(t.cols))}
	}
	if j := t.col(to); j >= 0 && j != ci {
		return nil, &SQLError{Class: "COLUMN_ALREADY_EXISTS", SQLState: "42711",
			Message: fmt.Sprintf("The column `%s` already exists. Choose another name or rename the existing column.", strings.ToLower(to))}
	}
	if containsPartition(t, path[0]) {
		return nil, errUnsupported("renaming partition columns")
	}
	old := t.cols[ci].Name
	if _, err := e.duckExec(ctx, fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", duckIdent(t.phys), duckIdent(old), duckIdent(to))); err != nil {
		return nil, err
	}
	t.cols[ci].Name = to
	for k, v := range t.props {
		if strings.HasPrefix(k, constraintPrefix) && strings.Contains(strings.ToLower(v), strings.ToLower(old)) {
			// Delta refuses to rename a column a CHECK constraint uses.
			t.cols[ci].Name = old
			_, _ = e.duckExec(context.WithoutCancel(ctx), fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", duckIdent(t.phys), duckIdent(to), duckIdent(old)))
			return nil, &SQLError{Class: "DELTA_CONSTRAINT_DEPENDENT_COLUMN_CHANGE", SQLState: "42K09",
				Message: fmt.Sprintf("Cannot alter column %s because this column is referenced by the following check constraint(s):\n%s -> %s", old, strings.TrimPrefix(k, constraintPrefix), v)}
		}
	}
	if _, err := e.addCommit(t, "RENAME COLUMN", map[string]string{"oldColumnPath": old, "newColumnPath": to}, nil, false); err != nil {
		return nil, err
	}
	return emptyDDLResult(), nil
}

// dropColumns implements ALTER TABLE … DROP COLUMN[S] [IF EXISTS] a [, b] on a column-mapped
// table (the data files keep the column; the log no longer names it).
func (e *DuckDB) dropColumns(ctx context.Context, t *tableMeta, p *parser) (*Result, error) {
	ifExists := p.acceptKw("IF", "EXISTS")
	paren := p.acceptOp("(")
	var names []string
	for {
		path, err := dottedIdent(p)
		if err != nil {
			return nil, err
		}
		if len(path) > 1 {
			return nil, errUnsupported("dropping nested fields")
		}
		if t.col(path[0]) < 0 {
			if !ifExists {
				return nil, &SQLError{Class: "DELTA_COLUMN_NOT_FOUND", SQLState: "42703",
					Message: fmt.Sprintf("Unable to find the column `%s` given [%s].", path[0], fieldNames(t.cols))}
			}
		} else {
			names = append(names, t.cols[t.col(path[0])].Name)
		}
		if !p.acceptOp(",") {
			break
		}
	}
	if paren {
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		return emptyDDLResult(), nil
	}
	if len(names) >= len(t.cols) {
		return nil, &SQLError{Class: "DELTA_DROP_COLUMN_ON_SINGLE_FIELD_SCHEMA", SQLState: "0AKDC",
			Message: "Cannot drop column from a schema with a single column."}
	}
	for _, n := range names {
		if containsPartition(t, n) {
			return nil, errUnsupported("dropping partition columns")
		}
	}
	for _, n := range names {
		if _, err := e.duckExec(ctx, fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", duckIdent(t.phys), duckIdent(n))); err != nil {
			return nil, err
		}
		t.cols = append(t.cols[:t.col(n)], t.cols[t.col(n)+1:]...)
	}
	colsJSON, _ := json.Marshal(names)
	if _, err := e.addCommit(t, "DROP COLUMNS", map[string]string{"columns": string(colsJSON)}, nil, false); err != nil {
		return nil, err
	}
	return emptyDDLResult(), nil
}

func containsPartition(t *tableMeta, name string) bool {
	for _, c := range t.partitionCols {
		if strings.EqualFold(c, name) {
			return true
		}
	}
	return false
}
