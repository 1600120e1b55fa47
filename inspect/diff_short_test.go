package inspect

import "testing"

func TestShortFilesList(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"COPY INTO t FROM 'x' FILEFORMAT = PARQUET FILES = ('a', 'b', 'c', 'd') COPY_OPTIONS ('mergeSchema' = 'false')",
			"COPY INTO t FROM 'x' FILEFORMAT = PARQUET FILES = ('a', 'b', … 2 more) COPY_OPTIONS ('mergeSchema' = 'false')"},
		{"COPY INTO t FROM 'x' FILES = ('it''s, ok', 'b', 'c')", "COPY INTO t FROM 'x' FILES = ('it''s, ok', 'b', … 1 more)"},
		{"COPY INTO t FROM 'x' FILES = ('a', 'b')", "COPY INTO t FROM 'x' FILES = ('a', 'b')"},
		{"COPY INTO t FROM 'x' FILES = ('a')", "COPY INTO t FROM 'x' FILES = ('a')"},
		{"COPY INTO t FROM 'x' FILES = ('a', 'b', 'c", "COPY INTO t FROM 'x' FILES = ('a', 'b', 'c"},
		{"COPY INTO t FROM 'x'", "COPY INTO t FROM 'x'"},
	} {
		if got := shortFilesList(c.in, 2); got != c.want {
			t.Errorf("shortFilesList(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}
