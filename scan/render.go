package scan

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/internal/textsafe"
)

// ScopeText describes the scope in words: "catalog main", "schema main.sales", "every
// catalog".
func (r *Report) ScopeText() string {
	s := "every catalog"
	if sc, err := ParseScope(r.Scope); err == nil && sc.Catalog != "" {
		if sc.Schema != "" {
			s = "schema " + r.Scope
		} else {
			s = "catalog " + r.Scope
		}
	}
	if r.TablePattern != "" {
		s += " (tables matching " + r.TablePattern + ")"
	}
	return s
}

// CountsText is the report's counts in one line: "300 tables scanned: 12 with parked files,
// 285 clean, 3 unreadable; 2 skipped (1 view, 1 external)".
func (r *Report) CountsText() string {
	t := r.Totals
	s := fmt.Sprintf("%s scanned: %d with parked files, %d clean, %d unreadable", plural(t.Scanned, "table"), t.Parked, t.Clean, t.Unreadable)
	if t.Skipped > 0 {
		kinds := make([]string, 0, len(t.SkippedKinds))
		for k := range t.SkippedKinds {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			parts[i] = fmt.Sprintf("%d %s", t.SkippedKinds[k], k)
		}
		s += fmt.Sprintf("; %d skipped, not managed Delta tables (%s)", t.Skipped, strings.Join(parts, ", "))
	}
	if t.NotMatched > 0 {
		s += fmt.Sprintf("; %d not matching the table pattern", t.NotMatched)
	}
	if t.Unlisted > 0 {
		s += "; " + unlistedText(t.Unlisted) + " not listed"
	}
	return s
}

// WriteText writes the report for a human: the scope and counts, the tables with parked
// files (files, size, oldest and newest file, date folders) with the inspect command of
// each, the unreadable tables with the reason and the doctor command of each, the catalogs
// and schemas that could not be listed, and the count of clean tables. Names and messages
// are escaped for the terminal; times are RFC 3339 in UTC.
func (r *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	t := r.Totals
	ew.printf("Scope:   %s\n", r.ScopeText())
	ew.printf("Folder:  %s\n", r.Prefix)
	ew.printf("Tables:  %s (%.1f s)\n", r.CountsText(), float64(r.ElapsedMS)/1000)
	files := fmt.Sprintf("%s, %s in fallback folders", plural64(t.Files, "fallback file"), HumanBytes(t.Bytes))
	if r.MinAge != "" {
		files += fmt.Sprintf(" (%s younger than %s left out)", plural64(t.YoungFiles, "file"), r.MinAge)
	}
	ew.printf("Files:   %s\n", files)
	for _, c := range r.SkippedCatalogs {
		ew.printf("Skipped: catalog %s (%s)\n", textsafe.Quote(c.Name), c.Reason)
	}

	if parked := r.With(Parked); len(parked) > 0 {
		ew.printf("\nTables with parked files: %d\n", len(parked))
		tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  TABLE\tFILES\tSIZE\tOLDEST\tNEWEST\tDATE FOLDERS")
		for _, p := range parked {
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%d\n", textsafe.Quote(p.Name), p.Files, HumanBytes(p.Bytes), rfc3339(p.Oldest), rfc3339(p.Newest), p.DateFolders)
		}
		tw.Flush()
		ew.printf("\nNext: what is parked in each, and what blocks its load:\n")
		for _, p := range parked {
			ew.printf("  %s\n", p.Next)
		}
	}
	if bad := r.With(Unreadable); len(bad) > 0 {
		ew.printf("\nUnreadable tables: %d\n", len(bad))
		for _, u := range bad {
			ew.printf("  %s: %s\n", textsafe.Quote(u.Name), u.Error)
			ew.printf("    %s\n", u.Next)
		}
	}
	if len(r.Unlisted) > 0 {
		ew.printf("\nNot listed: %d\n", len(r.Unlisted))
		for _, u := range r.Unlisted {
			ew.printf("  %s: %s\n", textsafe.Quote(u.where()), u.Error)
		}
	}
	switch {
	case t.Scanned == 0:
		ew.printf("\nNo managed Delta table in %s.\n", r.ScopeText())
	case t.Parked == 0 && t.Unreadable == 0:
		ew.printf("\nNo parked files: all %s clean.\n", plural(t.Clean, "table"))
	default:
		ew.printf("\n%s clean (no parked files).\n", plural(t.Clean, "table"))
	}
	return ew.err
}

// unlistedText is "1 catalog or schema", "2 catalogs or schemas".
func unlistedText(n int) string {
	if n == 1 {
		return "1 catalog or schema"
	}
	return strconv.Itoa(n) + " catalogs or schemas"
}

func (u Unlisted) where() string {
	if u.Schema == "" {
		return u.Catalog
	}
	return u.Catalog + "." + u.Schema
}

// WriteJSON writes the report as one JSON document with schema_version first.
func (r *Report) WriteJSON(w io.Writer) error { return jsonout.Encode(w, r) }

// JSONLines writes a scan as JSON lines, one object with one member per line: {"scan": …}
// first, then {"table": …} for each table as its scan completes and {"unlisted": …} for each
// listing that failed, in the order they happen, and {"totals": …} last (with
// {"skipped_catalogs": […]} before it when some were).
type JSONLines struct {
	w   *bufio.Writer
	err error
}

// NewJSONLines returns a JSONLines on w. Every line is flushed as it is written, so that a
// reader sees each table when it completes.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: bufio.NewWriter(w)} }

func (l *JSONLines) line(key string, v any) error {
	if l.err != nil {
		return l.err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if l.err = enc.Encode(map[string]any{key: v}); l.err != nil {
		return l.err
	}
	if _, l.err = l.w.Write(b.Bytes()); l.err != nil {
		return l.err
	}
	l.err = l.w.Flush()
	return l.err
}

// Header writes {"scan": {schema_version, scope, table_pattern, prefix, min_age, started}}.
func (l *JSONLines) Header(o Options, started time.Time) error {
	prefix := o.Prefix
	if prefix == "" {
		prefix = fallback.Prefix
	}
	h := struct {
		SchemaVersion int       `json:"schema_version"`
		Scope         string    `json:"scope"`
		TablePattern  string    `json:"table_pattern,omitempty"`
		Prefix        string    `json:"prefix"`
		MinAge        string    `json:"min_age,omitempty"`
		Started       time.Time `json:"started"`
	}{jsonout.SchemaVersion, o.Scope.String(), o.TablePattern, strings.TrimSuffix(prefix, "/") + "/", "", started.UTC()}
	if o.MinAge > 0 {
		h.MinAge = o.MinAge.String()
	}
	return l.line("scan", h)
}

// Table writes {"table": …}, the table as the document has it.
func (l *JSONLines) Table(t Table) error { return l.line("table", t) }

// Unlisted writes {"unlisted": …}.
func (l *JSONLines) Unlisted(u Unlisted) error { return l.line("unlisted", u) }

// Totals writes {"skipped_catalogs": […]} when some were, then {"totals": …} with the
// elapsed time.
func (l *JSONLines) Totals(r *Report) error {
	if len(r.SkippedCatalogs) > 0 {
		l.line("skipped_catalogs", r.SkippedCatalogs)
	}
	return l.line("totals", struct {
		Totals
		ElapsedMS int64 `json:"elapsed_ms"`
	}{r.Totals, r.ElapsedMS})
}

// WriteMarkdown writes the tables with parked files and the unreadable tables (and the
// listings that failed) as Markdown tables, each row with its next command, for an incident
// ticket. Names and messages are on one line, redacted, with the table's separator escaped.
func (r *Report) WriteMarkdown(w io.Writer) error {
	ew := &errWriter{w: w}
	if parked := r.With(Parked); len(parked) > 0 {
		ew.raw(fmt.Sprintf("**Tables with parked files (%d):**\n\n", len(parked)))
		ew.raw("| table | files | bytes | oldest | newest | date folders | next |\n|---|---:|---:|---|---|---:|---|\n")
		for _, p := range parked {
			ew.raw(fmt.Sprintf("| %s | %d | %d | %s | %s | %d | %s |\n", mdCode(p.Name), p.Files, p.Bytes,
				rfc3339(p.Oldest), rfc3339(p.Newest), p.DateFolders, mdCode(p.Next)))
		}
		ew.raw("\n")
	}
	if bad := r.With(Unreadable); len(bad) > 0 {
		ew.raw(fmt.Sprintf("**Unreadable tables (%d):**\n\n", len(bad)))
		ew.raw("| table | reason | next |\n|---|---|---|\n")
		for _, u := range bad {
			ew.raw(fmt.Sprintf("| %s | %s | %s |\n", mdCode(u.Name), mdCell(u.Error), mdCode(u.Next)))
		}
		ew.raw("\n")
	}
	if len(r.Unlisted) > 0 {
		ew.raw(fmt.Sprintf("**Not listed (%d):**\n\n", len(r.Unlisted)))
		ew.raw("| catalog or schema | reason |\n|---|---|\n")
		for _, u := range r.Unlisted {
			ew.raw(fmt.Sprintf("| %s | %s |\n", mdCode(u.where()), mdCell(u.Error)))
		}
		ew.raw("\n")
	}
	return ew.err
}

// mdCell is s (redacted, escaped for the terminal) on one line, with the table's column
// separator escaped.
func mdCell(s string) string {
	s = textsafe.Escape(redact.String(s))
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

// mdCode is s as Markdown inline code in a table cell: delimited by more backquotes than it
// holds in a row, with the column separator escaped.
func mdCode(s string) string {
	s = mdCell(s)
	if s == "" {
		return ""
	}
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

func plural(n int, word string) string { return plural64(int64(n), word) }

func plural64(n int64, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.FormatInt(n, 10) + " " + word + "s"
}

func rfc3339(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// HumanBytes formats a size with binary units: "812 B", "1.5 KiB", "3.2 GiB".
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// printf writes formatted text with every string argument escaped for the terminal
// (textsafe.Escape) and redacted: names and messages come from stores and catalogs.
func (e *errWriter) printf(format string, args ...any) {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = textsafe.Escape(redact.String(s))
		}
	}
	fmt.Fprintf(e, format, args...)
}

// raw writes s as it is (already escaped).
func (e *errWriter) raw(s string) { _, _ = io.WriteString(e, s) }
