package sqlstmt

import (
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// KeySource is a set of fallback files the key queries read: files of one folder that share
// a schema, and the SQL expression of each key column in them.
type KeySource struct {
	Label  string   // the schema group (overlap) or the batch (reconciliation)
	Folder string   // the folder's URL
	Files  []string // bare names in Folder
	Exprs  []string // one per key column
	// File, when set, is the URL of a keys file (BuildKeys) read instead: its group column g
	// labels the rows, its k0, k1, … are the keys, cast already.
	File string
}

// globChunk is the most names one glob of a key query lists.
const globChunk = 1000

// GlobEscape escapes the characters a Hadoop path glob gives a meaning to.
func GlobEscape(name string) string {
	var b strings.Builder
	for _, c := range name {
		if strings.ContainsRune(`\*?[]{},`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// SQL reads the key columns (k0, k1, …) of exactly the source's files, with the label
// as column g: one read_files over a glob {name,…} per chunk of names, so that no other file
// of the folder (later arrivals, other groups, subfolders) is read.
func (s KeySource) SQL() string {
	if s.File != "" {
		return "SELECT g, " + keyList("", len(s.Exprs)) + " FROM read_files(" + schemadiff.QuoteString(GlobEscape(s.File)) + ", format => 'parquet')"
	}
	var parts []string
	for i := 0; i < len(s.Files); i += globChunk {
		names := s.Files[i:min(i+globChunk, len(s.Files))]
		esc := make([]string, len(names))
		for j, n := range names {
			esc[j] = GlobEscape(n)
		}
		path := strings.TrimSuffix(s.Folder, "/") + "/{" + strings.Join(esc, ",") + "}"
		cols := []string{schemadiff.QuoteString(s.Label) + " AS g"}
		for j, e := range s.Exprs {
			cols = append(cols, fmt.Sprintf("%s AS k%d", e, j))
		}
		parts = append(parts, "SELECT "+strings.Join(cols, ", ")+" FROM read_files("+schemadiff.QuoteString(path)+", format => 'parquet')")
	}
	return strings.Join(parts, " UNION ALL ")
}

func keyList(prefix string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%sk%d", prefix, i)
	}
	return strings.Join(parts, ", ")
}

// keyMatch is the equality of the key columns of two relations, in SQL's own sense: a NULL
// equals nothing, not even another NULL, so a key with a NULL column matches no row. (A NULL
// key identifies nothing: it never proves that a record is in the table.) Databricks and the
// local warehouse (DuckDB) give = the same meaning.
func keyMatch(a, b string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%s.k%d = %s.k%d", a, i, b, i)
	}
	return strings.Join(parts, " AND ")
}

// anyNull is true for a key with a NULL column.
func anyNull(prefix string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%sk%d IS NULL", prefix, i)
	}
	return strings.Join(parts, " OR ")
}

// noNull is true for a key without a NULL column.
func noNull(prefix string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%sk%d IS NOT NULL", prefix, i)
	}
	return strings.Join(parts, " AND ")
}

// tableKeys are the table's keys without a NULL column (k0, k1, …), each row with m = 1.
func tableKeys(table Table, keys []string) string {
	cols := make([]string, len(keys))
	for i, k := range keys {
		cols[i] = fmt.Sprintf("%s AS k%d", schemadiff.QuoteIdent(k), i)
	}
	return "SELECT * FROM (SELECT " + strings.Join(cols, ", ") + ", 1 AS m FROM " + table.SQL() + ") AS t WHERE " + noNull("", len(keys))
}

func unionSources(srcs []KeySource) string {
	parts := make([]string, len(srcs))
	for i, s := range srcs {
		parts[i] = s.SQL()
	}
	return strings.Join(parts, " UNION ALL ")
}

// bigint casts a count to BIGINT, 0 when it is NULL (an aggregate over no rows).
func bigint(e string) string { return "CAST(coalesce(" + e + ", 0) AS BIGINT)" }

// Overlap is the one statement that measures, per schema group and in total (g = ”),
// what the fallback files hold by key against the table: records, keys, records whose key the
// table holds, keys the files hold more than once and their extra records, the records a load
// by key inserts (one per key the table lacks, and every record with a NULL key column), and
// those records with a NULL key column. A key with a NULL column is no key: such a record is
// never in the table by key, never a duplicate of another, and is counted in records and
// new_keys but not in keys.
func Overlap(table Table, keys []string, srcs []KeySource) string {
	n := len(keys)
	k := keyList("", n)
	return "WITH f AS (" + unionSources(srcs) + "), " +
		"fk AS (SELECT g, " + k + ", count(*) AS n FROM f WHERE " + noNull("", n) + " GROUP BY g, " + k + "), " +
		"fn AS (SELECT g, count(*) AS n FROM f WHERE " + anyNull("", n) + " GROUP BY g), " +
		"ak AS (SELECT " + k + ", sum(n) AS n FROM fk GROUP BY " + k + "), " +
		"tk AS (SELECT DISTINCT * FROM (" + tableKeys(table, keys) + ") AS u), " +
		"hk AS (SELECT " + keyList("ak.", n) + ", ak.n AS n, CASE WHEN tk.m IS NULL THEN 0 ELSE 1 END AS hit FROM ak LEFT JOIN tk ON " + keyMatch("ak", "tk", n) + "), " +
		"gk AS (SELECT fk.g AS g, count(*) AS keys, sum(fk.n) AS records, sum(CASE WHEN hk.hit = 1 THEN fk.n ELSE 0 END) AS in_table, " +
		"sum(CASE WHEN fk.n > 1 THEN 1 ELSE 0 END) AS dup_keys, sum(fk.n - 1) AS dup_records, sum(1 - hk.hit) AS new_keys " +
		"FROM fk JOIN hk ON " + keyMatch("fk", "hk", n) + " GROUP BY fk.g), " +
		"gs AS (SELECT DISTINCT g FROM f), " +
		"tf AS (SELECT count(*) AS keys, sum(n) AS records, sum(CASE WHEN hit = 1 THEN n ELSE 0 END) AS in_table, " +
		"sum(CASE WHEN n > 1 THEN 1 ELSE 0 END) AS dup_keys, sum(n - 1) AS dup_records, sum(1 - hit) AS new_keys FROM hk), " +
		"tn AS (SELECT count(*) AS n FROM f WHERE " + anyNull("", n) + ") " +
		"SELECT gs.g AS g, " + bigint("gk.keys") + " AS keys, CAST(coalesce(gk.records, 0) + coalesce(fn.n, 0) AS BIGINT) AS records, " +
		bigint("gk.in_table") + " AS in_table, " + bigint("gk.dup_keys") + " AS dup_keys, " + bigint("gk.dup_records") + " AS dup_records, " +
		"CAST(coalesce(gk.new_keys, 0) + coalesce(fn.n, 0) AS BIGINT) AS new_keys, " + bigint("fn.n") + " AS null_records " +
		"FROM gs LEFT JOIN gk ON gk.g = gs.g LEFT JOIN fn ON fn.g = gs.g " +
		"UNION ALL SELECT '' AS g, " + bigint("tf.keys") + ", CAST(coalesce(tf.records, 0) + tn.n AS BIGINT), " + bigint("tf.in_table") + ", " +
		bigint("tf.dup_keys") + ", " + bigint("tf.dup_records") + ", CAST(coalesce(tf.new_keys, 0) + tn.n AS BIGINT), " + bigint("tn.n") +
		" FROM tf CROSS JOIN tn"
}

// ReconcileByLabel is the one statement that checks every key of the sources against the
// table, per label (the sources' g: batch numbers) and in total (g = ”): the rows read
// (nrows), those with a NULL key column (null_rows) and their distinct keys (null_keys), the
// distinct keys without a NULL column (keys), and for those the table's rows per key: keys
// with 0 (missing), 1, 2 and 3 or more rows, and the most rows one key has. A key with a NULL
// column is never looked up: it matches no row, so it is counted apart and never as present.
// Every label that read a row has a row of its own; the total counts each key once.
func ReconcileByLabel(table Table, keys []string, srcs []KeySource) string {
	n := len(keys)
	k := keyList("", n)
	hist := func() string {
		return "count(*) AS keys, " +
			"sum(CASE WHEN n = 0 THEN 1 ELSE 0 END) AS missing, " +
			"sum(CASE WHEN n = 1 THEN 1 ELSE 0 END) AS once, " +
			"sum(CASE WHEN n = 2 THEN 1 ELSE 0 END) AS twice, " +
			"sum(CASE WHEN n >= 3 THEN 1 ELSE 0 END) AS more, " +
			"max(n) AS max_rows"
	}
	cols := func(r, nk, h string) string {
		return bigint(r+".nrows") + " AS nrows, " + bigint(r+".null_rows") + " AS null_rows, " + bigint(nk+".null_keys") + " AS null_keys, " +
			bigint(h+".keys") + " AS keys, " + bigint(h+".missing") + " AS missing, " + bigint(h+".once") + " AS once, " +
			bigint(h+".twice") + " AS twice, " + bigint(h+".more") + " AS more, " + bigint(h+".max_rows") + " AS max_rows"
	}
	return "WITH f AS (" + unionSources(srcs) + "), " +
		"fr AS (SELECT g, count(*) AS nrows, sum(CASE WHEN " + anyNull("", n) + " THEN 1 ELSE 0 END) AS null_rows FROM f GROUP BY g), " +
		"fnk AS (SELECT g, count(*) AS null_keys FROM (SELECT DISTINCT g, " + k + " FROM f WHERE " + anyNull("", n) + ") AS d GROUP BY g), " +
		"fk AS (SELECT DISTINCT g, " + k + " FROM f WHERE " + noNull("", n) + "), " +
		"tk AS (" + tableKeys(table, keys) + "), " +
		"c AS (SELECT fk.g AS g, " + keyList("fk.", n) + ", count(tk.m) AS n FROM fk LEFT JOIN tk ON " + keyMatch("fk", "tk", n) +
		" GROUP BY fk.g, " + keyList("fk.", n) + "), " +
		"ck AS (SELECT g, " + hist() + " FROM c GROUP BY g), " +
		"a AS (SELECT " + k + ", max(n) AS n FROM c GROUP BY " + k + "), " +
		"ta AS (SELECT count(*) AS nrows, sum(CASE WHEN " + anyNull("", n) + " THEN 1 ELSE 0 END) AS null_rows FROM f), " +
		"tn AS (SELECT count(*) AS null_keys FROM (SELECT DISTINCT " + k + " FROM f WHERE " + anyNull("", n) + ") AS d), " +
		"tc AS (SELECT " + hist() + " FROM a) " +
		"SELECT fr.g AS g, " + cols("fr", "fnk", "ck") + " FROM fr LEFT JOIN fnk ON fnk.g = fr.g LEFT JOIN ck ON ck.g = fr.g " +
		"UNION ALL SELECT '' AS g, " + cols("ta", "tn", "tc") + " FROM ta CROSS JOIN tn CROSS JOIN tc"
}

// MergeSpec is a load by key's MERGE: the key columns, the column whose highest (lowest with
// Ascending) value wins among records of one key ("" keeps the first by batch), and the
// table's columns, which the insert names.
type MergeSpec struct {
	Key       []string
	Order     string
	Ascending bool
	Columns   []string
}

// Columns a load by key adds to its staging table and its MERGE source.
const (
	RankColumn = "__zbrecover_rn"
)

// StagingCreate creates the staging table, if missing, with the table's columns (as CTAS
// gives them: no constraints, all nullable) and the batch number.
func StagingCreate(target, staging Table) string {
	return "CREATE TABLE IF NOT EXISTS " + staging.SQL() + " AS SELECT *, CAST(NULL AS BIGINT) AS " + schemadiff.QuoteIdent(StagingColumn) +
		" FROM " + target.SQL() + " WHERE 1 = 0"
}

// StagingDrop drops the staging table.
func StagingDrop(staging Table) string {
	return "DROP TABLE IF EXISTS " + staging.SQL()
}

// Merge is the one statement that moves the staged records into the table: the staging
// rows ranked per key by the rule (ROW_NUMBER, since an insert-only MERGE inserts every
// source row of a key it does not match), the first of each inserted when the table holds no
// row with that key. A key with a NULL column identifies nothing: it matches no row of the
// table (the ON condition is =, not null-safe) and no other record, so every record with one
// is inserted. The insert names the table's columns (INSERT (c, …) VALUES (zb_source.c, …)):
// with schema auto-merge on, INSERT * would add the source's helper columns to the table.
func Merge(target, staging Table, m MergeSpec) string {
	part := make([]string, len(m.Key))
	on := make([]string, len(m.Key))
	keep := []string{schemadiff.QuoteIdent(RankColumn) + " = 1"}
	for i, k := range m.Key {
		q := schemadiff.QuoteIdent(k)
		part[i] = q
		on[i] = "zb_target." + q + " = zb_source." + q
		keep = append(keep, q+" IS NULL")
	}
	order := ""
	if m.Order != "" {
		dir := " DESC NULLS LAST, "
		if m.Ascending {
			dir = " ASC NULLS LAST, "
		}
		order = schemadiff.QuoteIdent(m.Order) + dir
	}
	order += schemadiff.QuoteIdent(StagingColumn)
	cols := make([]string, len(m.Columns))
	vals := make([]string, len(m.Columns))
	for i, c := range m.Columns {
		cols[i] = schemadiff.QuoteIdent(c)
		vals[i] = "zb_source." + cols[i]
	}
	return "MERGE INTO " + target.SQL() + " AS zb_target USING (SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY " +
		strings.Join(part, ", ") + " ORDER BY " + order + ") AS " + schemadiff.QuoteIdent(RankColumn) + " FROM " + staging.SQL() +
		") AS zb_ranked WHERE " + strings.Join(keep, " OR ") + ") AS zb_source ON " + strings.Join(on, " AND ") +
		" WHEN NOT MATCHED THEN INSERT (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(vals, ", ") + ")"
}
