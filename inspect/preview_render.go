package inspect

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/internal/textsafe"
)

// MarshalJSON writes the rows as objects keyed by column name, in column order.
func (p *PreviewResult) MarshalJSON() ([]byte, error) {
	rows := make([]Object, len(p.Rows))
	for i, r := range p.Rows {
		obj := make(Object, len(r))
		for c, v := range r {
			name := ""
			if c < len(p.Columns) {
				name = p.Columns[c].Name
			}
			obj[c] = Member{Key: name, Value: v}
		}
		rows[i] = obj
	}
	type plain PreviewResult
	return marshal(struct {
		*plain
		Rows []Object `json:"rows"`
	}{(*plain)(p), rows})
}

// WriteJSON writes the preview as indented JSON: root, schema_id, files, columns and rows.
func (p *PreviewResult) WriteJSON(w io.Writer) error {
	b, err := p.MarshalJSON()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// WriteCSV writes a header of column names and one record per row; null is an empty field.
func (p *PreviewResult) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	header := make([]string, len(p.Columns))
	for i, c := range p.Columns {
		header[i] = c.Name
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, r := range p.Rows {
		rec := make([]string, len(r))
		for i, v := range r {
			if v != nil {
				rec[i] = Text(v)
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// maxCell is the widest a table cell gets before it is cut with "…".
const maxCell = 60

// WriteTable writes an aligned table: a header of column names and types, then the rows.
// Names and values holding control or format characters are Go-quoted (textsafe.Quote);
// long values are cut and end with "…".
func (p *PreviewResult) WriteTable(w io.Writer) error {
	ew := textfmt.NewWriter(w)
	tw := tabwriter.NewWriter(ew, 0, 4, 2, ' ', 0)
	names := make([]string, len(p.Columns))
	types := make([]string, len(p.Columns))
	for i, c := range p.Columns {
		names[i] = cell(textsafe.Quote(c.Name))
		types[i] = cell(textsafe.Escape(c.Type))
	}
	fmt.Fprintln(tw, strings.Join(names, "\t"))
	fmt.Fprintln(tw, strings.Join(types, "\t"))
	for _, r := range p.Rows {
		cells := make([]string, len(r))
		for i, v := range r {
			cells[i] = cell(textsafe.Quote(Text(v)))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	files := make([]string, 0, len(p.Files))
	for _, f := range p.Files {
		key := textsafe.Quote(f.Key)
		s := fmt.Sprintf("%s (%s of %s)", key, textfmt.Count(f.Shown), textfmt.Plural(f.Rows, "row"))
		if f.Error != "" {
			s = fmt.Sprintf("%s (unreadable: %s)", key, textsafe.Escape(f.Error))
		}
		files = append(files, s)
	}
	if len(files) == 0 {
		files = append(files, "no file")
	}
	ew.Printf("(%s from %s)\n", textfmt.Plural(len(p.Rows), "row"), strings.Join(files, ", "))
	return ew.Err()
}

// cell cuts an already escaped value to maxCell runes.
func cell(s string) string {
	if utf8.RuneCountInString(s) > maxCell {
		r := []rune(s)
		s = string(r[:maxCell-1]) + "…"
	}
	return s
}
