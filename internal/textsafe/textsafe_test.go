package textsafe

import (
	"strconv"
	"testing"
)

func TestQuoteAndEscape(t *testing.T) {
	cases := []struct{ in, quote, escape string }{
		{"part-1.parquet", "part-1.parquet", "part-1.parquet"},
		{"dé jà vu.parquet", "dé jà vu.parquet", "dé jà vu.parquet"},
		{"a\x1b[2Jb", `"a\x1b[2Jb"`, `a\x1b[2Jb`},
		{"a\nb", `"a\nb"`, `a\nb`},
		{"a\tb", `"a\tb"`, `a\tb`},
		{"a\rb", `"a\rb"`, `a\rb`},
		{"\x7f", `"\x7f"`, `\x7f`},
		{"c1\u009b31m", `"c1\u009b31m"`, `c1\u009b31m`},
		{"\u202egpj.exe", `"\u202egpj.exe"`, `\u202egpj.exe`},
		{"zero\u200bwidth", `"zero\u200bwidth"`, `zero\u200bwidth`},
		{"bom\ufeff", `"bom\ufeff"`, `bom\ufeff`},
		{"line\u2028sep", `"line\u2028sep"`, `line\u2028sep`},
		{"bad\xffutf8", `"bad\xffutf8"`, `bad\xffutf8`},
		{"\ufffd literal", "\ufffd literal", "\ufffd literal"},
		{`"quoted"`, `"\"quoted\""`, `"quoted"`},
	}
	for _, c := range cases {
		if got := Quote(c.in); got != c.quote {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.quote)
		}
		if got := Escape(c.in); got != c.escape {
			t.Errorf("Escape(%q) = %s, want %s", c.in, got, c.escape)
		}
		if q := Quote(c.in); q != c.in {
			if back, err := strconv.Unquote(q); err != nil || back != c.in {
				t.Errorf("Quote(%q) does not round-trip: %q, %v", c.in, back, err)
			}
		}
	}
}
