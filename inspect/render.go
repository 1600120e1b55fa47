package inspect

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/internal/textsafe"
)

// JSONMember is a member WriteJSON writes after the report's own (the overlap by key, for
// example).
type JSONMember struct {
	Key   string
	Value any
}

// WriteJSON writes the report as indented JSON, the document json.Encoder would write for
// it followed by the extra members, one file entry and one group after the other: the
// document is never held in memory whole (a million files take a few hundred bytes each).
// Under DiffOptions.AllChanges each group's changes are all of them, computed as the group
// is written.
func (r *Report) WriteJSON(w io.Writer, extra ...JSONMember) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	jw := &jsonValueWriter{w: bw}
	bw.WriteString("{\n")
	jw.field("schema_version", jsonout.SchemaVersion, "  ", false)
	jw.field("root", r.Root, "  ", false)
	jw.field("prefix", r.Prefix, "  ", false)
	if r.Table != nil {
		jw.field("table", r.Table, "  ", false)
	}
	if r.Files == nil {
		jw.field("files", nil, "  ", false)
	} else {
		jw.array("files", len(r.Files), func(i int) any { return &r.Files[i] }, "  ")
	}
	if r.Groups == nil {
		jw.field("groups", nil, "  ", false)
	} else {
		jw.array("groups", len(r.Groups), func(i int) any { return r.writtenGroup(i) }, "  ")
	}
	if r.ChangeTotals != nil {
		jw.field("change_totals", r.ChangeTotals, "  ", false)
	}
	jw.field("totals", r.Totals, "  ", len(extra) == 0)
	for i, m := range extra {
		jw.field(m.Key, m.Value, "  ", i == len(extra)-1)
	}
	bw.WriteString("}\n")
	if jw.err != nil {
		return jw.err
	}
	return bw.Flush()
}

// writtenGroup is group i as the writers write it: under AllChanges a copy with every change.
func (r *Report) writtenGroup(i int) *Group {
	g := &r.Groups[i]
	if !r.allChanges || g.against == nil {
		return g
	}
	c := *g
	c.Changes, c.SameChangesAs = g.AllChanges(), ""
	return &c
}

// jsonValueWriter writes JSON values indented as they sit in an enclosing document.
type jsonValueWriter struct {
	w   *bufio.Writer
	buf bytes.Buffer
	err error
}

// value writes v as json.Encoder with two-space indents writes it at a depth whose lines
// start with prefix, HTML characters unescaped (SQL in suggestions holds < and >).
func (j *jsonValueWriter) value(v any, prefix string) {
	if j.err != nil {
		return
	}
	j.buf.Reset()
	enc := json.NewEncoder(&j.buf)
	enc.SetIndent(prefix, "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		j.err = err
		return
	}
	j.w.Write(bytes.TrimSuffix(j.buf.Bytes(), []byte("\n")))
}

// array writes `prefix"key": [` with the n elements elem returns, each encoded on its own,
// as json.Encoder writes a slice that is not the last member.
func (j *jsonValueWriter) array(key string, n int, elem func(i int) any, prefix string) {
	if n == 0 {
		j.w.WriteString(prefix + strconv.Quote(key) + ": [],\n")
		return
	}
	j.w.WriteString(prefix + strconv.Quote(key) + ": [\n")
	for i := 0; i < n; i++ {
		j.w.WriteString(prefix + "  ")
		j.value(elem(i), prefix+"  ")
		if i < n-1 {
			j.w.WriteString(",")
		}
		j.w.WriteString("\n")
	}
	j.w.WriteString(prefix + "],\n")
}

// field writes `prefix"key": value` and a comma unless last, then a newline.
func (j *jsonValueWriter) field(key string, v any, prefix string, last bool) {
	j.w.WriteString(prefix + strconv.Quote(key) + ": ")
	j.value(v, prefix)
	if !last {
		j.w.WriteString(",")
	}
	j.w.WriteString("\n")
}

// JSONLines writes a run as JSON lines: a header with the root and the fallback folder, one
// line per file as it is read, then the table, each schema group, the counts of their
// changes and the totals. Each line is an object with one key: "inspect", "file", "table",
// "group", "change_totals" or "totals".
type JSONLines struct {
	w   *bufio.Writer
	err error
}

// NewJSONLines returns a JSONLines writer on w; call Close at the end.
func NewJSONLines(w io.Writer) *JSONLines { return &JSONLines{w: bufio.NewWriterSize(w, 64<<10)} }

func (l *JSONLines) line(key string, v any) error {
	if l.err != nil {
		return l.err
	}
	b, err := marshalNoHTML(map[string]any{key: v})
	if err != nil {
		l.err = err
		return err
	}
	l.w.Write(b)
	_, l.err = l.w.Write([]byte("\n"))
	return l.err
}

// Header writes {"inspect":{"schema_version":N,"root":…,"prefix":…}}.
func (l *JSONLines) Header(root, prefix string) error {
	return l.line("inspect", struct {
		SchemaVersion int    `json:"schema_version"`
		Root          string `json:"root"`
		Prefix        string `json:"prefix"`
	}{jsonout.SchemaVersion, root, prefix})
}

// File writes {"file":{…}}, the file's entry as the JSON report has it.
func (l *JSONLines) File(f File) error { return l.line("file", f) }

// Summary writes the report's table (when compared with one), its groups, the counts of
// their changes (when compared) and its totals.
func (l *JSONLines) Summary(r *Report) error {
	if r.Table != nil {
		l.line("table", r.Table)
	}
	for i := range r.Groups {
		l.line("group", r.writtenGroup(i))
	}
	if r.ChangeTotals != nil {
		l.line("change_totals", r.ChangeTotals)
	}
	return l.line("totals", r.Totals)
}

// Extra writes one more line, {key: v}, after the summary (the overlap by key, for example).
func (l *JSONLines) Extra(key string, v any) error { return l.line(key, v) }

// Close flushes what is buffered.
func (l *JSONLines) Close() error {
	if l.err != nil {
		return l.err
	}
	return l.w.Flush()
}

func marshalNoHTML(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// WriteText writes the report for a human: totals, the table schema compared with, one line
// per schema group, the unreadable files with their errors, the changes across groups (when
// several were compared), and each group's columns followed by its changes against the table
// and the suggested fix. Changes that block or need a cast are listed one by one, ok ones
// counted by kind with a few examples (every change under DiffOptions.AllChanges). Times are
// RFC3339 in UTC.
func (r *Report) WriteText(w io.Writer) error {
	ew := textfmt.NewWriter(w)
	t := r.Totals
	ew.Printf("Root:    %s\n", r.Root)
	ew.Printf("Folder:  %s\n", r.Prefix)
	ew.Printf("Files:   %s, %s, %s", textfmt.Plural(t.Files, "Parquet file"), textfmt.Plural(t.Rows, "row"), textfmt.Bytes(t.Bytes))
	if t.Unreadable > 0 {
		ew.Printf(", %s unreadable", textfmt.Count(t.Unreadable))
	}
	ew.Printf("\n")
	if t.OtherObjects > 0 {
		ew.Printf("Other:   %s not read (hidden or not .parquet), %s\n", textfmt.Plural(t.OtherObjects, "object"), textfmt.Bytes(t.OtherBytes))
	}
	switch {
	case r.Table.Known():
		ew.Printf("Table:   %s\n", r.Table.describe())
	case r.Table != nil:
		ew.Printf("Table:   %s\n", r.Table.Note)
	}
	if t.Files == 0 {
		ew.Printf("\nNo fallback Parquet files: nothing to recover.\n")
		return ew.Err()
	}
	if len(r.Groups) > 0 {
		ew.Printf("\nSchema groups: %s\n", textfmt.Count(len(r.Groups)))
		tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		diffed := r.Table.Known()
		head := "  SCHEMA\tFILES\tROWS\tBYTES\tFIRST MODIFIED\tLAST MODIFIED"
		if diffed {
			head += "\tVERDICT"
		}
		fmt.Fprintln(tw, head)
		for _, g := range r.Groups {
			line := fmt.Sprintf("  %s\t%s\t%s\t%s\t%s\t%s", g.SchemaID, textfmt.Count(g.Files), textfmt.Count(g.Rows), textfmt.Bytes(g.Bytes),
				textfmt.Time(g.FirstModified), textfmt.Time(g.LastModified))
			if diffed && g.Verdict != nil {
				line += "\t" + g.Verdict.String()
			}
			fmt.Fprintln(tw, line)
		}
		tw.Flush()
	}
	if bad := r.Unreadable(); len(bad) > 0 {
		ew.Printf("\nUnreadable files: %s\n", textfmt.Count(len(bad)))
		for _, f := range bad {
			ew.Printf("  %s (%s): %s\n", textsafe.Quote(f.Key), textfmt.Bytes(f.Size), f.Error)
		}
	}
	byID := make(map[string]int, len(r.Groups))
	for i := range r.Groups {
		byID[r.Groups[i].SchemaID] = i
	}
	r.writeAcrossGroups(ew, byID)
	for _, g := range r.Groups {
		ew.Printf("\nSchema %s (%s, first: %s)\n", g.SchemaID, textfmt.Plural(g.Files, "file"), textsafe.Quote(g.FirstFile))
		tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
		for _, c := range g.Columns {
			null := "NOT NULL"
			if c.Nullable {
				null = "NULL"
				if c.NullCount != nil {
					null += " (" + textfmt.Plural(*c.NullCount, "null") + ")"
				} else {
					null += " (null count unknown)"
				}
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", textsafe.Quote(c.Name), textsafe.Escape(c.Type), null)
		}
		tw.Flush()
		r.writeGroupDiff(ew, &g, byID)
	}
	return ew.Err()
}
