// Package textsafe makes untrusted strings (object keys, column names, cell values, messages
// that quote them) safe to print on a terminal. A name that could move the cursor, clear the
// screen, set the window title, forge a line of output or reorder what the reader sees is
// shown escaped instead.
//
// Unsafe are: invalid UTF-8, C0 controls (ESC, newline, tab, …), DEL, C1 controls, Unicode
// format characters (bidirectional overrides such as U+202E, zero-width characters, the BOM),
// line and paragraph separators, and every other rune Go does not count as printable.
package textsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// unsafeRune reports whether r must not reach a terminal as it is.
func unsafeRune(r rune) bool {
	return r == utf8.RuneError || (r != ' ' && !unicode.IsPrint(r)) || unicode.Is(unicode.Cf, r)
}

// Safe reports whether s can be printed as it is: valid UTF-8 without unsafe runes.
func Safe(s string) bool {
	for i, r := range s {
		if unsafeRune(r) {
			if r == utf8.RuneError {
				if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
					return false
				}
				continue // a literal U+FFFD is printable
			}
			return false
		}
	}
	return true
}

// Quote returns a name as text output prints it: as it is when Safe and not starting with a
// double quote, else Go-quoted ("a\nb", "\x1b[2J", "\u202egpj.exe"), which is unambiguous and
// keeps the original recoverable.
func Quote(s string) string {
	if Safe(s) && !strings.HasPrefix(s, `"`) {
		return s
	}
	return strconv.Quote(s)
}

// Escape returns free text (a message, a type, a SQL suggestion) with each unsafe rune or
// invalid byte replaced by its Go escape (\n, \x1b, \u202e), and everything else unchanged.
func Escape(s string) string {
	if Safe(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case r != utf8.RuneError && unsafeRune(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
