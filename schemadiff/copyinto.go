package schemadiff

import "strings"

// MaxCopyFiles is the most names one COPY INTO … FILES = (…) may list.
const MaxCopyFiles = 1000

// CopyInto is one COPY INTO statement over an explicit list of files in one folder: the only
// form zbrecover suggests or runs, so that a statement never reads files it was not meant to
// (other schema groups, subfolders, files that arrived later).
type CopyInto struct {
	// Table is the target, already quoted for SQL (databricks.TableName.SQL()), or a
	// placeholder such as <table> in a suggestion.
	Table string
	// Folder is the source folder's URL, without secrets (storage.Location.URL()).
	Folder string
	// Select is the projection's select list (Suggestion.SelectList); empty reads the files
	// as they are.
	Select string
	// Files are the names of the files relative to Folder: bare names, no "/" (the folder
	// is not read recursively and FILES entries with subpaths are not relied upon).
	Files []string
	// Validate makes it COPY INTO … VALIDATE ALL: check everything, write nothing.
	Validate bool
	// FormatOptions are extra FORMAT_OPTIONS (key → value), rendered in key order.
	FormatOptions [][2]string
	// Force adds COPY_OPTIONS 'force' = 'true': the named files load even if the table
	// loaded them before (COPY INTO's idempotency off, for exactly these FILES).
	Force bool
}

// SQL renders the statement:
//
//	COPY INTO t FROM (SELECT … FROM 'folder') FILEFORMAT = PARQUET [VALIDATE ALL]
//	FILES = ('a.parquet', …) [FORMAT_OPTIONS (…)] COPY_OPTIONS ('mergeSchema' = 'false')
//
// mergeSchema is always false: loading never changes the table.
func (c CopyInto) SQL() string {
	var b strings.Builder
	b.WriteString("COPY INTO ")
	b.WriteString(c.Table)
	b.WriteString(" FROM ")
	if c.Select != "" {
		b.WriteString("(SELECT " + c.Select + " FROM " + QuoteString(c.Folder) + ")")
	} else {
		b.WriteString(QuoteString(c.Folder))
	}
	b.WriteString(" FILEFORMAT = PARQUET")
	if c.Validate {
		b.WriteString(" VALIDATE ALL")
	}
	b.WriteString(" FILES = (")
	for i, f := range c.Files {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(QuoteString(f))
	}
	b.WriteString(")")
	if len(c.FormatOptions) > 0 {
		b.WriteString(" FORMAT_OPTIONS (")
		for i, kv := range c.FormatOptions {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(QuoteString(kv[0]) + " = " + QuoteString(kv[1]))
		}
		b.WriteString(")")
	}
	if c.Force {
		b.WriteString(" COPY_OPTIONS ('force' = 'true', 'mergeSchema' = 'false')")
		return b.String()
	}
	b.WriteString(" COPY_OPTIONS ('mergeSchema' = 'false')")
	return b.String()
}

// JoinFolder returns the folder URL rel (a folder relative to base, "" or ending in "/")
// under base, the folder a statement reads.
func JoinFolder(base, rel string) string {
	if rel == "" {
		return base
	}
	return strings.TrimSuffix(base, "/") + "/" + rel
}
