package warehouse

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/zbrecover/zbrecover/storage"
)

// Row tracking and the _metadata column (CODE: Delta PROTOCOL.md "Row Tracking"; DOC:
// Databricks "Use row tracking for Delta tables", "File metadata column").
//
// Every DuckDB table behind a Delta table has three hidden columns the engine keeps beside
// the table's own: the data file a row is in (the add action's path), and, once row
// tracking is enabled, the row's stable row ID and stable row commit version. They never
// appear in SELECT * (table reads go through a projection that drops them, see rewrite.go)
// and are not written into data files; _metadata exposes them (as a column of the read,
// added only when the statement names _metadata).
//
//   - A data file written for an insert gets fresh row IDs for its new rows, in the order
//     they were inserted: its add action carries baseRowId (the first) and
//     defaultRowCommitVersion (the commit's version), so its rows' IDs are
//     [baseRowId, baseRowId + numRecords − 1], and the table's high-water mark (domain
//     metadata delta.rowTracking, rowIdHighWaterMark) grows by numRecords.
//   - A data file written by a rewrite (DELETE, UPDATE, MERGE, OPTIMIZE, an overwrite) gets
//     a fresh range of numRecords IDs too, as Delta assigns, but its copied rows keep their
//     stable IDs and commit versions (Delta materializes them in hidden columns of the file);
//     rows an UPDATE or MERGE changes keep their ID and take the commit's version; rows a
//     MERGE inserts take IDs from the file's range.
//   - Enabling row tracking on a table with rows (ALTER TABLE … SET TBLPROPERTIES
//     ('delta.enableRowTracking' = 'true')) backfills in the same commit: every live file is
//     committed again (dataChange false) with baseRowId and defaultRowCommitVersion, its rows
//     numbered in file order.
//   - The table property delta.enableRowTracking = true enables it; the writer features
//     rowTracking and domainMetadata join the protocol (and stay), and the configuration
//     names the materialized columns (delta.rowTracking.materializedRowIdColumnName, …).
//
// Known differences: the materialized row ID columns are not written into data files (the
// engine keeps stable IDs itself), so RESTORE of a table with row tracking is refused; row
// tracking is active exactly while the property is true.

// The hidden columns of every engine table.
const (
	hiddenRowID      = "__zb_row_id"
	hiddenRowVersion = "__zb_row_commit_version"
	hiddenFile       = "__zb_file"
)

// rowTrackingProp is the table property that enables row tracking.
const rowTrackingProp = "delta.enableRowTracking"

// hiddenColumnDefs are the hidden columns' DuckDB definitions, for CREATE TABLE.
func hiddenColumnDefs() []string {
	return []string{duckIdent(hiddenRowID) + " BIGINT", duckIdent(hiddenRowVersion) + " BIGINT", duckIdent(hiddenFile) + " VARCHAR"}
}

// hiddenExclude is the EXCLUDE list that drops the hidden columns from SELECT *.
func hiddenExclude() string {
	return "EXCLUDE (" + duckIdent(hiddenRowID) + ", " + duckIdent(hiddenRowVersion) + ", " + duckIdent(hiddenFile) + ")"
}

// addHiddenColumns adds the hidden columns to a DuckDB table made without them (CREATE
// TABLE AS SELECT).
func (e *DuckDB) addHiddenColumns(ctx context.Context, phys string) error {
	for _, def := range hiddenColumnDefs() {
		if _, err := e.duckExec(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s", duckIdent(phys), def)); err != nil {
			return err
		}
	}
	return nil
}

// rowTracking reports whether row tracking is enabled on t.
func (t *tableMeta) rowTracking() bool { return strings.EqualFold(t.props[rowTrackingProp], "true") }

// initRowTracking records that t's protocol supports row tracking once the property enables
// it, and names the materialized columns in its configuration, as Delta does.
func initRowTracking(t *tableMeta) {
	if !t.rowTracking() {
		return
	}
	t.rowTrackingFeature = true
	if t.props["delta.rowTracking.materializedRowIdColumnName"] == "" {
		t.props["delta.rowTracking.materializedRowIdColumnName"] = "_row-id-col-" + newUUID()
	}
	if t.props["delta.rowTracking.materializedRowCommitVersionColumnName"] == "" {
		t.props["delta.rowTracking.materializedRowCommitVersionColumnName"] = "_row-commit-version-col-" + newUUID()
	}
}

// fileURL is the location of one of t's data files, as _metadata.file_path gives it: the
// table's location and the add action's path.
func (t *tableMeta) fileURL() string { return strings.TrimRight(t.location, "/") + "/" }

// nextVersion is the version t's next commit gets.
func (t *tableMeta) nextVersion() int64 { return t.baseVersion + int64(len(t.history)) }

// trackRows assigns the rows where holds (a DuckDB condition) to the data file name about to
// be written with them, and, with row tracking, gives those without a row ID fresh
// IDs from the file's range (reserved here: rows IDs) with the next version as their commit
// version. The returned dataFile carries the add action's row tracking fields.
func (e *DuckDB) trackRows(ctx context.Context, t *tableMeta, where, name string, rows int64) (dataFile, error) {
	phys := duckIdent(t.phys)
	if !t.rowTracking() {
		_, err := e.duckExec(ctx, fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s", phys, duckIdent(hiddenFile), duckString(name), where))
		return dataFile{}, err
	}
	v := t.nextVersion()
	base := t.nextRowID
	t.nextRowID += rows
	// n counts, in rowid order, the rows still without an ID: the k-th gets base + k − 1.
	q := fmt.Sprintf(`UPDATE %[1]s SET %[2]s = %[3]s,
  %[4]s = CASE WHEN %[4]s IS NULL THEN %[5]d + s.n - 1 ELSE %[4]s END,
  %[6]s = CASE WHEN %[6]s IS NULL THEN %[7]d ELSE %[6]s END
FROM (SELECT rowid AS r, count(*) FILTER (WHERE %[4]s IS NULL) OVER (ORDER BY rowid ROWS UNBOUNDED PRECEDING) AS n
      FROM %[1]s WHERE %[8]s) AS s
WHERE %[1]s.rowid = s.r`, phys, duckIdent(hiddenFile), duckString(name), duckIdent(hiddenRowID), base, duckIdent(hiddenRowVersion), v, where)
	if _, err := e.duckExec(ctx, q); err != nil {
		return dataFile{}, err
	}
	return dataFile{tracked: true, baseRowID: base, rowVersion: v}, nil
}

// backfillRowIDs gives every row of t an ID, file by file (the live files in the order they
// were added, each file's rows in file order), and returns the live files as the commit
// that enables row tracking re-adds them: with baseRowId and defaultRowCommitVersion (the
// commit's version). Called once the property is set.
func (e *DuckDB) backfillRowIDs(ctx context.Context, t *tableMeta) ([]dataFile, error) {
	v := t.nextVersion()
	readds := make([]dataFile, 0, len(t.files))
	for _, f := range t.files {
		if f.tracked {
			readds = append(readds, f)
			continue
		}
		base := t.nextRowID
		t.nextRowID += f.rows
		phys := duckIdent(t.phys)
		q := fmt.Sprintf(`UPDATE %[1]s SET %[2]s = %[3]d + s.n - 1, %[4]s = %[5]d
FROM (SELECT rowid AS r, row_number() OVER (ORDER BY rowid) AS n FROM %[1]s WHERE %[6]s = %[7]s) AS s
WHERE %[1]s.rowid = s.r`, phys, duckIdent(hiddenRowID), base, duckIdent(hiddenRowVersion), v, duckIdent(hiddenFile), duckString(f.path))
		if _, err := e.duckExec(ctx, q); err != nil {
			return nil, err
		}
		f.tracked, f.baseRowID, f.rowVersion = true, base, v
		readds = append(readds, f)
	}
	return readds, nil
}

// rowTrackingDomain is the domain metadata action that records t's row ID high-water mark,
// in the form Databricks writes (the configuration also names its domain).
func rowTrackingDomain(hwm int64) (string, error) {
	conf, err := json.Marshal(orderedJSON{{"rowIdHighWaterMark", hwm}, {"domainName", "delta.rowTracking"}})
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(map[string]any{"domainMetadata": orderedJSON{
		{"domain", "delta.rowTracking"}, {"configuration", string(conf)}, {"removed", false}}})
	return string(b), err
}

// logHighWaterMark reads the highest rowIdHighWaterMark the Delta log under b records (-1
// for none): a table registered with row tracking continues its IDs above it.
func logHighWaterMark(ctx context.Context, b storage.Backend) (int64, error) {
	hwm := int64(-1)
	err := b.List(ctx, "_delta_log/", func(o storage.ObjectInfo) error {
		name := path.Base(o.Key)
		if !strings.HasSuffix(name, ".json") || strings.Contains(strings.TrimPrefix(o.Key, "_delta_log/"), "/") {
			return nil
		}
		rc, err := b.ReadRange(ctx, o.Key, 0, -1)
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			if !strings.Contains(line, `"delta.rowTracking"`) {
				continue
			}
			var a struct {
				DomainMetadata *struct {
					Domain        string `json:"domain"`
					Configuration string `json:"configuration"`
				} `json:"domainMetadata"`
			}
			if json.Unmarshal([]byte(line), &a) != nil || a.DomainMetadata == nil || a.DomainMetadata.Domain != "delta.rowTracking" {
				continue
			}
			var c struct {
				HWM int64 `json:"rowIdHighWaterMark"`
			}
			if json.Unmarshal([]byte(a.DomainMetadata.Configuration), &c) == nil && c.HWM > hwm {
				hwm = c.HWM
			}
		}
		return nil
	})
	return hwm, err
}

// metadataFields are the fields of _metadata the engine knows, in the order FIELD_NOT_FOUND
// lists them.
var metadataFields = []string{"file_path", "file_name", "row_id", "row_commit_version"}

// metadataStruct is the _metadata column of a read of t: the file path and name, and with
// row tracking the row's stable ID and commit version.
func metadataStruct(t *tableMeta) string {
	parts := []string{
		"file_path := " + duckString(t.fileURL()) + " || " + duckIdent(hiddenFile),
		"file_name := " + duckIdent(hiddenFile),
	}
	if t.rowTracking() {
		parts = append(parts, "row_id := "+duckIdent(hiddenRowID), "row_commit_version := "+duckIdent(hiddenRowVersion))
	}
	return "struct_pack(" + strings.Join(parts, ", ") + ")"
}

// metadataColumn is the hidden column (or expression over it) a DML statement's condition
// reads for _metadata.field of its target t; qual qualifies the column ("" for none).
func metadataColumn(t *tableMeta, field, qual string) (string, error) {
	col := func(c string) string {
		if qual == "" {
			return duckIdent(c)
		}
		return qual + "." + duckIdent(c)
	}
	switch strings.ToLower(field) {
	case "file_path":
		return "(" + duckString(t.fileURL()) + " || " + col(hiddenFile) + ")", nil
	case "file_name":
		return col(hiddenFile), nil
	case "row_id":
		if t.rowTracking() {
			return col(hiddenRowID), nil
		}
	case "row_commit_version":
		if t.rowTracking() {
			return col(hiddenRowVersion), nil
		}
	}
	return "", fieldNotFound(t, field)
}

// fieldNotFound is the error for a _metadata field t's reads do not have (row_id and
// row_commit_version without row tracking).
func fieldNotFound(t *tableMeta, field string) error {
	var have []string
	for _, f := range metadataFields {
		if (f == "row_id" || f == "row_commit_version") && !t.rowTracking() {
			continue
		}
		have = append(have, "`"+f+"`")
	}
	return &SQLError{Class: "FIELD_NOT_FOUND", SQLState: "42704",
		Message: fmt.Sprintf("No such struct field `%s` in %s.", field, strings.Join(have, ", "))}
}

// metadataRefused is the error a warehouse that does not take _metadata in a DELETE's
// condition gives (Unknowns.RefuseMetadataInDelete): the analyzer does not resolve the
// hidden column there.
func metadataRefused(t *tableMeta, field string) error {
	names := make([]string, 0, len(t.cols))
	for _, c := range t.cols {
		names = append(names, "`"+c.Name+"`")
	}
	return &SQLError{Class: "UNRESOLVED_COLUMN.WITH_SUGGESTION", SQLState: "42703", Message: fmt.Sprintf(
		"A column, variable, or function parameter with name `_metadata`.`%s` cannot be resolved. Did you mean one of the following? [%s].",
		field, strings.Join(names, ", "))}
}
