// Package sqlstmt renders every SQL statement zbrecover sends to a warehouse: the loads (COPY
// INTO, its VALIDATE form, the load by key's staging table and MERGE), the history and
// property reads, the commit tag, the identity, DESCRIBE, and the key measurements. It is
// pure: no I/O, no state; names are quoted with schemadiff's rules (identifiers in
// backquotes, strings as escaped literals) and never spliced. Golden files in testdata/sql
// hold one rendering of each statement shape (go test -update rewrites them).
package sqlstmt

import (
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// Table is a table name that renders itself quoted for SQL (databricks.TableName).
type Table interface{ SQL() string }

// CopyInto is the load of one batch: the files (bare names, relative to folder) read from
// folder, a folder URL, through the projection sel ("" for none). validate gives its VALIDATE
// ALL form, which checks everything and writes nothing.
//
//	COPY INTO t FROM (SELECT … FROM 'folder') FILEFORMAT = PARQUET [VALIDATE ALL]
//	FILES = ('a.parquet', …) COPY_OPTIONS ('mergeSchema' = 'false')
func CopyInto(t Table, folder, sel string, names []string, validate bool) string {
	return schemadiff.CopyInto{Table: t.SQL(), Folder: folder, Select: sel, Files: names, Validate: validate}.SQL()
}

// StagingColumn is the column a load by key adds to its staging table: the batch each record
// was loaded by.
const StagingColumn = "__zbrecover_batch"

// CopyIntoStaging is a batch's load into a load by key's staging table: CopyInto with the
// batch number as one more column.
func CopyIntoStaging(staging Table, batch int, folder, sel string, names []string, validate bool) string {
	if sel == "" {
		sel = "*"
	}
	sel = fmt.Sprintf("CAST(%d AS BIGINT) AS %s, %s", batch, schemadiff.QuoteIdent(StagingColumn), sel)
	return CopyInto(staging, folder, sel, names, validate)
}

// History reads the table's newest limit commits.
func History(t Table, limit int64) string {
	return fmt.Sprintf("DESCRIBE HISTORY %s LIMIT %d", t.SQL(), limit)
}

// Properties reads the table's properties.
func Properties(t Table) string { return "SHOW TBLPROPERTIES " + t.SQL() }

// CurrentUser asks the warehouse who statements run as.
func CurrentUser() string { return "SELECT current_user()" }

// TagKey is the session configuration Delta copies into each commit's userMetadata.
const TagKey = "spark.databricks.delta.commitInfo.userMetadata"

// SetTag sets the commit tag of the session's next commits ("" clears it).
func SetTag(tag string) string { return "SET " + TagKey + " = " + schemadiff.QuoteString(tag) }

// DescribeJSON reads the table's schema and properties as one JSON document.
func DescribeJSON(t Table) string { return "DESCRIBE TABLE EXTENDED " + t.SQL() + " AS JSON" }

// Claim is an insert of no row into t, whose only effect is a commit: carrying the session's
// commit tag, it records in the table's history, where every writer of the table reads it,
// that a run is about to load the table. It names every column with a typed NULL, reads no
// table (a blind append, which conflicts with no concurrent writer) and selects nothing.
//
//	INSERT INTO t (`a`, `b`) SELECT CAST(NULL AS BIGINT) AS `a`, CAST(NULL AS STRING) AS `b` WHERE false
func Claim(t Table, cols []schemadiff.Field) string {
	names := make([]string, len(cols))
	vals := make([]string, len(cols))
	for i, c := range cols {
		names[i] = schemadiff.QuoteIdent(c.Name)
		vals[i] = "CAST(NULL AS " + c.Type.SQL() + ") AS " + names[i]
	}
	return "INSERT INTO " + t.SQL() + " (" + strings.Join(names, ", ") + ") SELECT " + strings.Join(vals, ", ") + " WHERE false"
}
