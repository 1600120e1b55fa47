package warehouse

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// restore implements RESTORE [TABLE] t [TO] VERSION AS OF n | TIMESTAMP AS OF 'ts' (CODE:
// Delta RestoreTableCommand): the table's rows, schema and properties become those of the
// version, read back from the data files that were live at it; the commit (operation
// RESTORE) removes the files added since and adds back the files removed since. It is
// refused with UNSUPPORTED_FEATURE when the engine does not keep the table's data files
// (remote locations, a log the engine did not write) or the version is older than the
// engine's first (a registered table's earlier versions).
func (e *DuckDB) restore(ctx context.Context, sess *Session, p *parser) (*Result, error) {
	p.next() // RESTORE
	p.acceptKw("TABLE")
	parts, err := p.qualifiedName()
	if err != nil {
		return nil, err
	}
	t, err := e.table(sess, parts)
	if err != nil {
		return nil, err
	}
	p.acceptKw("TO")
	params := map[string]string{}
	var target int64 = -1
	switch {
	case p.acceptKw("VERSION", "AS", "OF"):
		n, err := strconv.ParseInt(p.next().val, 10, 64)
		if err != nil || n < 0 {
			return nil, p.errorf("VERSION AS OF takes a version number")
		}
		target = n
		params["version"] = strconv.FormatInt(n, 10)
	case p.acceptKw("TIMESTAMP", "AS", "OF"):
		raw, err := p.stringLit()
		if err != nil {
			return nil, err
		}
		ts, err := parseTimestampLiteral(raw)
		if err != nil {
			return nil, &SQLError{Class: "INVALID_PARAMETER_VALUE", SQLState: "22023", Message: fmt.Sprintf("The timestamp '%s' is not valid.", raw)}
		}
		for _, c := range t.history {
			if !c.Timestamp.After(ts) {
				target = c.Version
			}
		}
		if target < 0 {
			return nil, &SQLError{Class: "DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION", SQLState: "42816", Message: fmt.Sprintf(
				"The provided timestamp (%s) is before the earliest version available to this table (%s).", raw, t.history[0].Timestamp.Format(time.RFC3339))}
		}
		params["timestamp"] = raw
	default:
		return nil, p.errorf("RESTORE takes VERSION AS OF n or TIMESTAMP AS OF 'timestamp'")
	}
	if !p.atEnd() {
		return nil, p.errorf("unexpected text after RESTORE")
	}
	latest := t.baseVersion + int64(len(t.history)) - 1
	if target > latest {
		return nil, &SQLError{Class: "DELTA_CANNOT_RESTORE_TABLE_VERSION", SQLState: "22003", Message: fmt.Sprintf(
			"Cannot restore table to version %d. Available versions: [%d, %d].", target, t.baseVersion, latest)}
	}
	if _, local := localPath(t.location); !local || t.foreignLog {
		return nil, errUnsupported("RESTORE of a table whose data files the local warehouse does not keep (a remote location or a Delta log it did not write)")
	}
	if t.rowTracking() {
		// The stable row IDs of rewritten rows live only in the engine (rowtracking.go).
		return nil, errUnsupported("RESTORE of a table with row tracking (the local warehouse does not write the materialized row ID columns it would restore)")
	}
	if target < t.baseVersion {
		return nil, errUnsupported(fmt.Sprintf("RESTORE to version %d, older than the local warehouse's first version %d of this registered table", target, t.baseVersion))
	}

	// The files live at the target version, and the schema and properties it had.
	var live []dataFile
	for _, c := range t.history[:target-t.baseVersion+1] {
		live = applyFiles(live, c.removes, c.adds)
	}
	at := t.history[target-t.baseVersion]
	inLive, inNow := map[string]bool{}, map[string]bool{}
	for _, f := range live {
		inLive[f.path] = true
		if f.local() == "" {
			return nil, errUnsupported("RESTORE of a version whose data files the local warehouse did not keep")
		}
		if _, err := os.Stat(f.local()); err != nil {
			return nil, &SQLError{Class: "DELTA_FILE_NOT_FOUND_DETAILED", SQLState: "42K03", Message: fmt.Sprintf(
				"File %s referenced in the transaction log cannot be found. This occurs when data has been manually deleted from the file system rather than using the table `DELETE` statement.", f.path)}
		}
	}
	var removes, restored []dataFile
	for _, f := range t.files {
		inNow[f.path] = true
		if !inLive[f.path] {
			removes = append(removes, f)
		}
	}
	for _, f := range live {
		if !inNow[f.path] {
			restored = append(restored, f)
		}
	}

	cols := cloneFields(at.cols)
	phys := e.newPhys()
	defs := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = duckIdent(c.Name) + " " + c.Type.Duck()
		if !c.Nullable {
			defs[i] += " NOT NULL"
		}
	}
	defs = append(defs, hiddenColumnDefs()...)
	if _, err := e.duckExec(ctx, "BEGIN TRANSACTION"); err != nil {
		return nil, err
	}
	fail := func(err error) (*Result, error) {
		_, _ = e.conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return nil, err
	}
	if _, err := e.duckExec(ctx, fmt.Sprintf("CREATE TABLE %s (%s)", duckIdent(phys), strings.Join(defs, ", "))); err != nil {
		return fail(err)
	}
	for _, f := range live {
		local, err := e.literalLocal(f.local())
		if err != nil {
			return fail(err)
		}
		fileCols, err := e.describeSQL(ctx, "SELECT * FROM read_parquet("+duckString(local)+", hive_partitioning = false)")
		if err != nil {
			return fail(err)
		}
		exprs := make([]string, len(cols))
		for i, c := range cols {
			if containsField(fileCols, c.physical()) {
				exprs[i] = fmt.Sprintf("CAST(%s AS %s)", logicalExpr(duckIdent(c.physical()), c.Type), c.Type.Duck())
			} else {
				exprs[i] = "CAST(NULL AS " + c.Type.Duck() + ")"
			}
		}
		if _, err := e.duckExec(ctx, fmt.Sprintf("INSERT INTO %s SELECT %s, NULL, NULL, %s FROM read_parquet(%s, hive_partitioning = false)",
			duckIdent(phys), strings.Join(exprs, ", "), duckString(f.path), duckString(local))); err != nil {
			return fail(err)
		}
	}
	if _, err := e.duckExec(ctx, "DROP TABLE "+duckIdent(t.phys)); err != nil {
		return fail(err)
	}
	if _, err := e.duckExec(ctx, "COMMIT"); err != nil {
		return fail(err)
	}
	t.phys, t.cols = phys, cols
	t.props = map[string]string{}
	for k, v := range at.props {
		t.props[k] = v
	}
	size, restoredSize, removedSize := filesSize(live), filesSize(restored), filesSize(removes)
	metrics := map[string]string{
		"tableSizeAfterRestore":  strconv.FormatInt(size, 10),
		"numOfFilesAfterRestore": strconv.Itoa(len(live)),
		"numRemovedFiles":        strconv.Itoa(len(removes)),
		"numRestoredFiles":       strconv.Itoa(len(restored)),
		"removedFilesSize":       strconv.FormatInt(removedSize, 10),
		"restoredFilesSize":      strconv.FormatInt(restoredSize, 10),
	}
	if _, err := e.addCommitSpec(t, commitSpec{op: "RESTORE", params: params, metrics: metrics, adds: restored, removes: removes}); err != nil {
		return nil, err
	}
	return &Result{
		Columns: []Column{
			{Name: "table_size_after_restore", Type: Prim(KindLong)}, {Name: "num_of_files_after_restore", Type: Prim(KindLong)},
			{Name: "num_removed_files", Type: Prim(KindLong)}, {Name: "num_restored_files", Type: Prim(KindLong)},
			{Name: "removed_files_size", Type: Prim(KindLong)}, {Name: "restored_files_size", Type: Prim(KindLong)},
		},
		Rows: [][]any{{size, int64(len(live)), int64(len(removes)), int64(len(restored)), removedSize, restoredSize}},
	}, nil
}

// logicalExpr reads a column written with physical struct member names (see physicalExpr)
// back with its logical member names.
func logicalExpr(expr string, t *Type) string {
	if t.Kind != KindStruct || !hasPhysicalMembers(t) {
		return expr
	}
	parts := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		parts[i] = duckIdent(f.Name) + " := " + logicalExpr(expr+"."+duckIdent(f.physical()), f.Type)
	}
	return fmt.Sprintf("CASE WHEN %s IS NULL THEN NULL ELSE struct_pack(%s) END", expr, strings.Join(parts, ", "))
}

// parseTimestampLiteral parses the timestamps RESTORE … TIMESTAMP AS OF accepts (UTC when
// no zone is given).
func parseTimestampLiteral(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("invalid timestamp %q", s)
}
