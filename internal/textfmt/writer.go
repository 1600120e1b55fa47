package textfmt

import (
	"fmt"
	"io"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/internal/textsafe"
)

// Writer writes a text report: Printf escapes each string, error and fmt.Stringer argument
// for the terminal (textsafe.Escape) and removes secrets from it (internal/redact), since
// names and messages in reports come from files, stores and catalogs an attacker may
// control. The first write error is kept, and every later write does nothing.
type Writer struct {
	w   io.Writer
	err error
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p as it is (already escaped), unless an earlier write failed.
func (e *Writer) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// Printf writes formatted text with its string, error and Stringer arguments escaped and
// redacted; numbers and other values are formatted as they are.
func (e *Writer) Printf(format string, args ...any) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = safe(v)
		case error:
			args[i] = safe(v.Error())
		case fmt.Stringer:
			args[i] = safe(v.String())
		}
	}
	_, _ = fmt.Fprintf(e, format, args...)
}

// Raw writes s as it is (already escaped).
func (e *Writer) Raw(s string) { _, _ = io.WriteString(e, s) }

// Err returns the first write error, nil when every write succeeded.
func (e *Writer) Err() error { return e.err }

func safe(s string) string { return textsafe.Escape(redact.String(s)) }
