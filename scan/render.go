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
	"github.com/zbrecover/zbrecover/internal/textfmt"
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
	s := fmt.Sprintf("%s scanned: %s with parked files, %s clean, %s unreadable", textfmt.Plural(t.Scanned, "table"), textfmt.Count(t.Parked),
		textfmt.Count(t.Clean), textfmt.Count(t.Unreadable))
	if t.Skipped > 0 {
		kinds := make([]string, 0, len(t.SkippedKinds))
		for k := range t.SkippedKinds {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			parts[i] = textfmt.Count(t.SkippedKinds[k]) + " " + k
		}
		s += fmt.Sprintf("; %s skipped, not %s (%s)", textfmt.Count(t.Skipped), textfmt.Either(t.Skipped, "a managed Delta table", "managed Delta tables"), strings.Join(parts, ", "))
	}
	if t.NotMatched > 0 {
		s += fmt.Sprintf("; %s not matching the table pattern", textfmt.Count(t.NotMatched))
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
	ew := textfmt.NewWriter(w)
	t := r.Totals
	ew.Printf("Scope:   %s\n", r.ScopeText())
	ew.Printf("Folder:  %s\n", r.Prefix)
	ew.Printf("Tables:  %s (%.1f s)\n", r.CountsText(), float64(r.ElapsedMS)/1000)
	files := fmt.Sprintf("%s, %s in fallback folders", textfmt.Plural(t.Files, "fallback file"), textfmt.Bytes(t.Bytes))
	if r.MinAge != "" {
		age := r.MinAge
		if d, err := time.ParseDuration(age); err == nil {
			age = textfmt.FormatDuration(d) // as --min-age reads it: 3d, not 72h0m0s
		}
		files += fmt.Sprintf(" (%s younger than %s left out)", textfmt.Plural(t.YoungFiles, "file"), age)
	}
	ew.Printf("Files:   %s\n", files)
	for _, c := range r.SkippedCatalogs {
		ew.Printf("Skipped: catalog %s (%s)\n", textsafe.Quote(c.Name), c.Reason)
	}

	if parked := r.With(Parked); len(parked) > 0 {
		ew.Printf("\nTables with parked files: %s\n", textfmt.Count(len(parked)))
		tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  TABLE\tFILES\tSIZE\tOLDEST\tNEWEST\tDATE FOLDERS")
		for _, p := range parked {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", textsafe.Quote(p.Name), textfmt.Count(p.Files), textfmt.Bytes(p.Bytes), textfmt.Time(p.Oldest),
				textfmt.Time(p.Newest), textfmt.Count(p.DateFolders))
		}
		tw.Flush()
		ew.Printf("\nNext: what is parked in each, and what blocks its load:\n")
		for _, p := range parked {
			ew.Printf("  %s\n", p.Next)
		}
	}
	if bad := r.With(Unreadable); len(bad) > 0 {
		ew.Printf("\nUnreadable tables: %s\n", textfmt.Count(len(bad)))
		for _, u := range bad {
			ew.Printf("  %s: %s\n", textsafe.Quote(u.Name), u.Error)
			ew.Printf("    %s\n", u.Next)
		}
	}
	if len(r.Unlisted) > 0 {
		ew.Printf("\nNot listed: %s\n", textfmt.Count(len(r.Unlisted)))
		for _, u := range r.Unlisted {
			ew.Printf("  %s: %s\n", textsafe.Quote(u.where()), u.Error)
		}
	}
	switch {
	case t.Scanned == 0:
		ew.Printf("\nNo managed Delta table in %s.\n", r.ScopeText())
	case t.Parked == 0 && t.Unreadable == 0:
		ew.Printf("\nNo parked files: all %s clean.\n", textfmt.Plural(t.Clean, "table"))
	default:
		ew.Printf("\n%s clean (no parked files).\n", textfmt.Plural(t.Clean, "table"))
	}
	return ew.Err()
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
	ew := textfmt.NewWriter(w)
	if parked := r.With(Parked); len(parked) > 0 {
		ew.Raw(fmt.Sprintf("**Tables with parked files (%s):**\n\n", textfmt.Count(len(parked))))
		ew.Raw("| table | files | size | oldest | newest | date folders | next |\n|---|---:|---:|---|---|---:|---|\n")
		for _, p := range parked {
			ew.Raw(fmt.Sprintf("| %s | %s | %s | %s | %s | %s | %s |\n", mdCode(p.Name), textfmt.Count(p.Files), textfmt.Bytes(p.Bytes),
				textfmt.Time(p.Oldest), textfmt.Time(p.Newest), textfmt.Count(p.DateFolders), mdCode(p.Next)))
		}
		ew.Raw("\n")
	}
	if bad := r.With(Unreadable); len(bad) > 0 {
		ew.Raw(fmt.Sprintf("**Unreadable tables (%s):**\n\n", textfmt.Count(len(bad))))
		ew.Raw("| table | reason | next |\n|---|---|---|\n")
		for _, u := range bad {
			ew.Raw(fmt.Sprintf("| %s | %s | %s |\n", mdCode(u.Name), mdCell(u.Error), mdCode(u.Next)))
		}
		ew.Raw("\n")
	}
	if len(r.Unlisted) > 0 {
		ew.Raw(fmt.Sprintf("**Not listed (%s):**\n\n", textfmt.Count(len(r.Unlisted))))
		ew.Raw("| catalog or schema | reason |\n|---|---|\n")
		for _, u := range r.Unlisted {
			ew.Raw(fmt.Sprintf("| %s | %s |\n", mdCode(u.where()), mdCell(u.Error)))
		}
		ew.Raw("\n")
	}
	return ew.Err()
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
