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

// keyMatch is the null-safe equality of the key columns of two relations: a NULL key is one
// key value, as ROW_NUMBER's PARTITION BY groups it.
func keyMatch(a, b string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%s.k%d IS NOT DISTINCT FROM %s.k%d", a, i, b, i)
	}
	return strings.Join(parts, " AND ")
}

func anyNull(prefix string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%sk%d IS NULL", prefix, i)
	}
	return strings.Join(parts, " OR ")
}

func tableKeys(table Table, keys []string) string {
	cols := make([]string, len(keys))
	for i, k := range keys {
		cols[i] = fmt.Sprintf("%s AS k%d", schemadiff.QuoteIdent(k), i)
	}
	return "SELECT " + strings.Join(cols, ", ") + ", 1 AS m FROM " + table.SQL()
}

func unionSources(srcs []KeySource) string {
	parts := make([]string, len(srcs))
	for i, s := range srcs {
		parts[i] = s.SQL()
	}
	return strings.Join(parts, " UNION ALL ")
}

// Overlap is the one statement that measures, per schema group and in total (g = ”),
// what the fallback files hold by key against the table: keys, records, records whose key
// the table holds, keys the files hold more than once and their extra records, keys the
// table lacks (the records a load by key inserts), and records with a NULL key column.
func Overlap(table Table, keys []string, srcs []KeySource) string {
	n := len(keys)
	k := keyList("", n)
	b := func(e string) string { return "CAST(" + e + " AS BIGINT)" }
	return "WITH f AS (" + unionSources(srcs) + "), " +
		"fk AS (SELECT g, " + k + ", count(*) AS n FROM f GROUP BY g, " + k + "), " +
		"ak AS (SELECT " + k + ", sum(n) AS n FROM fk GROUP BY " + k + "), " +
		"tk AS (SELECT DISTINCT * FROM (" + tableKeys(table, keys) + ") AS t), " +
		"hk AS (SELECT " + keyList("ak.", n) + ", ak.n AS n, CASE WHEN tk.m IS NULL THEN 0 ELSE 1 END AS hit FROM ak LEFT JOIN tk ON " + keyMatch("ak", "tk", n) + ") " +
		"SELECT fk.g AS g, " + b("count(*)") + " AS keys, " + b("sum(fk.n)") + " AS records, " +
		b("sum(CASE WHEN hk.hit = 1 THEN fk.n ELSE 0 END)") + " AS in_table, " +
		b("sum(CASE WHEN fk.n > 1 THEN 1 ELSE 0 END)") + " AS dup_keys, " + b("sum(fk.n - 1)") + " AS dup_records, " +
		b("sum(1 - hk.hit)") + " AS new_keys, " + b("sum(CASE WHEN "+anyNull("fk.", n)+" THEN fk.n ELSE 0 END)") + " AS null_records " +
		"FROM fk JOIN hk ON " + keyMatch("fk", "hk", n) + " GROUP BY fk.g " +
		"UNION ALL SELECT '' AS g, " + b("count(*)") + ", " + b("sum(n)") + ", " + b("sum(CASE WHEN hit = 1 THEN n ELSE 0 END)") + ", " +
		b("sum(CASE WHEN n > 1 THEN 1 ELSE 0 END)") + ", " + b("sum(n - 1)") + ", " + b("sum(1 - hit)") + ", " +
		b("sum(CASE WHEN "+anyNull("", n)+" THEN n ELSE 0 END)") + " FROM hk"
}

// SourceRows counts the rows the sources read per label (g): what a key check read of each
// batch, to compare with its files' footers.
func SourceRows(srcs []KeySource) string {
	return "SELECT g, CAST(count(*) AS BIGINT) AS n FROM (" + unionSources(srcs) + ") GROUP BY g"
}

// Reconcile is the one statement that counts, for every distinct key of the sources, the
// table's rows with that key: keys with 0 (missing), 1, 2 and 3 or more rows, the most rows
// one key has, and the distinct keys with a NULL column.
func Reconcile(table Table, keys []string, srcs []KeySource) string {
	n := len(keys)
	b := func(e string) string { return "CAST(" + e + " AS BIGINT)" }
	return "WITH f AS (" + unionSources(srcs) + "), " +
		"fk AS (SELECT DISTINCT " + keyList("", n) + " FROM f), " +
		"tk AS (" + tableKeys(table, keys) + "), " +
		"c AS (SELECT " + keyList("fk.", n) + ", count(tk.m) AS n FROM fk LEFT JOIN tk ON " + keyMatch("fk", "tk", n) + " GROUP BY " + keyList("fk.", n) + ") " +
		"SELECT " + b("count(*)") + " AS keys, " +
		b("sum(CASE WHEN n = 0 THEN 1 ELSE 0 END)") + " AS missing, " +
		b("sum(CASE WHEN n = 1 THEN 1 ELSE 0 END)") + " AS once, " +
		b("sum(CASE WHEN n = 2 THEN 1 ELSE 0 END)") + " AS twice, " +
		b("sum(CASE WHEN n >= 3 THEN 1 ELSE 0 END)") + " AS more, " +
		b("coalesce(max(n), 0)") + " AS max_rows, " +
		b("sum(CASE WHEN "+anyNull("", n)+" THEN 1 ELSE 0 END)") + " AS null_keys FROM c"
}

// ReconcileByLabel is Reconcile counted per label (the sources' g: a keys file's
// batch numbers) and in total (g = ”): for each distinct key, the table's rows with it.
func ReconcileByLabel(table Table, keys []string, srcs []KeySource) string {
	n := len(keys)
	b := func(e string) string { return "CAST(" + e + " AS BIGINT)" }
	agg := func(g string) string {
		return "SELECT " + g + " AS g, " + b("count(*)") + " AS keys, " +
			b("sum(CASE WHEN n = 0 THEN 1 ELSE 0 END)") + " AS missing, " +
			b("sum(CASE WHEN n = 1 THEN 1 ELSE 0 END)") + " AS once, " +
			b("sum(CASE WHEN n = 2 THEN 1 ELSE 0 END)") + " AS twice, " +
			b("sum(CASE WHEN n >= 3 THEN 1 ELSE 0 END)") + " AS more, " +
			b("coalesce(max(n), 0)") + " AS max_rows, " +
			b("sum(CASE WHEN "+anyNull("", n)+" THEN 1 ELSE 0 END)") + " AS null_keys"
	}
	return "WITH f AS (" + unionSources(srcs) + "), " +
		"fk AS (SELECT DISTINCT g, " + keyList("", n) + " FROM f), " +
		"tk AS (" + tableKeys(table, keys) + "), " +
		"c AS (SELECT fk.g AS g, " + keyList("fk.", n) + ", count(tk.m) AS n FROM fk LEFT JOIN tk ON " + keyMatch("fk", "tk", n) +
		" GROUP BY fk.g, " + keyList("fk.", n) + "), " +
		"a AS (SELECT " + keyList("", n) + ", max(n) AS n FROM c GROUP BY " + keyList("", n) + ") " +
		agg("g") + " FROM c GROUP BY g UNION ALL " + agg("''") + " FROM a"
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
// row with that key. The insert names the table's columns (INSERT (c, …) VALUES
// (zb_source.c, …)): with schema auto-merge on, INSERT * would add the source's helper
// columns to the table.
func Merge(target, staging Table, m MergeSpec) string {
	part := make([]string, len(m.Key))
	on := make([]string, len(m.Key))
	for i, k := range m.Key {
		q := schemadiff.QuoteIdent(k)
		part[i] = q
		on[i] = "zb_target." + q + " IS NOT DISTINCT FROM zb_source." + q
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
		") AS zb_ranked WHERE " + schemadiff.QuoteIdent(RankColumn) + " = 1) AS zb_source ON " + strings.Join(on, " AND ") +
		" WHEN NOT MATCHED THEN INSERT (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(vals, ", ") + ")"
}
