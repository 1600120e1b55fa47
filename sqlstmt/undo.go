package sqlstmt

import (
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// CopyIntoForced is CopyInto with COPY INTO's idempotency off for exactly the named files
// ('force' = 'true'): the load of a redo, files whose rows an undo proved gone from the
// table, read from the path an earlier load read them by (COPY INTO would skip them there).
//
//	COPY INTO t FROM 'folder' FILEFORMAT = PARQUET FILES = ('a.parquet', …)
//	COPY_OPTIONS ('force' = 'true', 'mergeSchema' = 'false')
func CopyIntoForced(t Table, folder, sel string, names []string, validate bool) string {
	return schemadiff.CopyInto{Table: t.SQL(), Folder: folder, Select: sel, Files: names, Validate: validate, Force: true}.SQL()
}

// Forced reports whether a COPY INTO statement CopyIntoForced rendered turns COPY INTO's
// idempotency off.
func Forced(stmt string) bool { return strings.Contains(stmt, "COPY_OPTIONS ('force' = 'true'") }

// RowIDRange is a closed range of stable row IDs (row tracking's _metadata.row_id).
type RowIDRange struct{ First, Last int64 }

// RowIDCondition names the rows whose stable row ID is in one of the ranges:
//
//	_metadata.row_id BETWEEN 0 AND 99 OR _metadata.row_id BETWEEN 200 AND 249
func RowIDCondition(rs []RowIDRange) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		if r.First == r.Last {
			parts[i] = fmt.Sprintf("_metadata.row_id = %d", r.First)
		} else {
			parts[i] = fmt.Sprintf("_metadata.row_id BETWEEN %d AND %d", r.First, r.Last)
		}
	}
	return strings.Join(parts, " OR ")
}

// FileCondition names the rows of the given data files (their full paths, as
// _metadata.file_path gives them):
//
//	_metadata.file_path IN ('s3://…/part-0.parquet', …)
func FileCondition(paths []string) string {
	q := make([]string, len(paths))
	for i, p := range paths {
		q[i] = schemadiff.QuoteString(p)
	}
	return "_metadata.file_path IN (" + strings.Join(q, ", ") + ")"
}

// KeyCondition names the rows whose key (the table's columns keys) is among the keys of
// batch batch in a keys file (reload's BuildKeys: group column g, key columns k0, k1, …).
// A NULL key names nothing (IN never matches it):
//
//	(`a`, `b`) IN (SELECT k0, k1 FROM read_files('…', format => 'parquet') WHERE g = '3')
func KeyCondition(keys []string, keysFile string, batch int) string {
	cols := make([]string, len(keys))
	for i, k := range keys {
		cols[i] = schemadiff.QuoteIdent(k)
	}
	left := cols[0]
	if len(cols) > 1 {
		left = "(" + strings.Join(cols, ", ") + ")"
	}
	return left + " IN (SELECT " + keyList("", len(keys)) + " FROM read_files(" + schemadiff.QuoteString(GlobEscape(keysFile)) +
		", format => 'parquet') WHERE g = " + schemadiff.QuoteString(fmt.Sprint(batch)) + ")"
}

// UndoCount counts what an undo's DELETE condition matches, before the DELETE is sent:
// matched, and, with the load's commit version (row IDs only: nil otherwise), modified, the
// rows an UPDATE or MERGE changed since (their row commit version is no longer the load's).
//
//	SELECT count(*) AS matched, count(CASE WHEN _metadata.row_commit_version <> 12 THEN 1 END) AS modified
//	FROM t WHERE <cond>
func UndoCount(t Table, cond string, loadVersion *int64) string {
	modified := "0"
	if loadVersion != nil {
		modified = fmt.Sprintf("count(CASE WHEN _metadata.row_commit_version <> %d THEN 1 END)", *loadVersion)
	}
	return "SELECT count(*) AS matched, " + modified + " AS modified FROM " + t.SQL() + " WHERE " + cond
}

// UndoDelete deletes the rows an undo's condition names.
//
//	DELETE FROM t WHERE <cond>
func UndoDelete(t Table, cond string) string { return "DELETE FROM " + t.SQL() + " WHERE " + cond }

// KeysOfBatch counts the keys file's rows of batch batch, and those with a NULL in a key
// column (n key columns): a key with a NULL names no row.
//
//	SELECT count(*) AS records, count(CASE WHEN k0 IS NULL OR k1 IS NULL THEN 1 END) AS null_keys
//	FROM read_files('…', format => 'parquet') WHERE g = '3'
func KeysOfBatch(keysFile string, batch, n int) string {
	return "SELECT count(*) AS records, count(CASE WHEN " + anyNull("", n) + " THEN 1 END) AS null_keys FROM read_files(" +
		schemadiff.QuoteString(GlobEscape(keysFile)) + ", format => 'parquet') WHERE g = " + schemadiff.QuoteString(fmt.Sprint(batch))
}
