// Package suggest finds the names an operator probably meant when a name they typed does not
// exist: a profile of the config file, a table or volume of a schema, a SQL warehouse. It is a
// leaf: no I/O, no dependency on the rest of the tool.
package suggest

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Distance is the edit distance between a and b: insertions, deletions, substitutions and
// swaps of two adjacent runes, one edit each (the optimal string alignment distance), compared
// without regard to case. A swap is the commonest typo (prdo for prod), so it counts as one.
func Distance(a, b string) int {
	ra, rb := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Closest returns the candidates close enough to name to be what was meant, the closest first
// (ties in the candidates' order): those within a third of name's length in edits (at least
// 1, at most 3 edits), and those that contain name or that name contains when both are at
// least 3 runes long (orders for sales_orders). A candidate equal to name (ignoring case) is
// not a suggestion: the caller looked it up and did not find it. At most most are returned
// (most <= 0: all).
func Closest(name string, candidates []string, most int) []string {
	type scored struct {
		s    string
		d, i int
	}
	limit := min(max(utf8.RuneCountInString(name)/3, 1), 3)
	lname := strings.ToLower(name)
	var out []scored
	seen := map[string]bool{}
	for i, c := range candidates {
		lc := strings.ToLower(c)
		if lc == lname || seen[c] {
			continue
		}
		d := Distance(name, c)
		sub := utf8.RuneCountInString(lname) >= 3 && utf8.RuneCountInString(lc) >= 3 &&
			(strings.Contains(lc, lname) || strings.Contains(lname, lc))
		if d <= limit || sub {
			seen[c] = true
			out = append(out, scored{c, d, i})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].d != out[j].d {
			return out[i].d < out[j].d
		}
		return out[i].i < out[j].i
	})
	if most > 0 && len(out) > most {
		out = out[:most]
	}
	names := make([]string, len(out))
	for i, s := range out {
		names[i] = s.s
	}
	return names
}

// Phrase is the did-you-mean clause for name among candidates: `did you mean "b"?` for one
// close name, `did you mean "b" or "c"?` for two or more (at most three), "" for none.
// quote renders a name (for example strconv.Quote, or a function adding backquotes).
func Phrase(name string, candidates []string, quote func(string) string) string {
	close := Closest(name, candidates, 3)
	if len(close) == 0 {
		return ""
	}
	q := make([]string, len(close))
	for i, c := range close {
		q[i] = quote(c)
	}
	if len(q) == 1 {
		return "did you mean " + q[0] + "?"
	}
	return "did you mean " + strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1] + "?"
}

// List renders up to most names (most <= 0: all), joined with ", ", and "and N more" for the
// rest; "none" for an empty list.
func List(names []string, most int) string {
	if len(names) == 0 {
		return "none"
	}
	if most <= 0 || len(names) <= most {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:most], ", ") + ", and " + strconv.Itoa(len(names)-most) + " more"
}
