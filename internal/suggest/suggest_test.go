package suggest

import (
	"strconv"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"prod", "prod", 0}, {"prdo", "prod", 1}, {"prod", "PROD", 0},
		{"staging", "stagin", 1}, {"orders", "ordres", 1}, {"été", "ete", 2}, {"", "abc", 3},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	for _, c := range []struct {
		name  string
		cands []string
		want  []string
	}{
		// A swap of two letters is one edit.
		{"ordres", []string{"customers", "orders", "order_items"}, []string{"orders"}},
		{"stagin", []string{"staging", "landing", "raw"}, []string{"staging"}},
		// Containment: the short name of a longer one.
		{"orders", []string{"sales_orders", "customers"}, []string{"sales_orders"}},
		// The closest first, at most 3 edits.
		{"prodution", []string{"dev", "production", "prod"}, []string{"production", "prod"}},
		// Nothing close.
		{"xyz", []string{"orders", "customers"}, nil},
		// The name itself (another case) is not a suggestion.
		{"Orders", []string{"orders"}, nil},
		// A short name: one edit.
		{"dv", []string{"dev", "prod"}, []string{"dev"}},
	} {
		got := Closest(c.name, c.cands, 0)
		if strconv.Quote(join(got)) != strconv.Quote(join(c.want)) {
			t.Errorf("Closest(%q, %q) = %q, want %q", c.name, c.cands, got, c.want)
		}
	}
}

func TestPhrase(t *testing.T) {
	if got := Phrase("prdo", []string{"DEFAULT", "prod", "staging"}, strconv.Quote); got != `did you mean "prod"?` {
		t.Errorf("one: %q", got)
	}
	if got := Phrase("ord", []string{"orders", "order_items", "x"}, strconv.Quote); got != `did you mean "orders" or "order_items"?` {
		t.Errorf("two: %q", got)
	}
	if got := Phrase("zzz", []string{"orders"}, strconv.Quote); got != "" {
		t.Errorf("none: %q", got)
	}
}

func TestList(t *testing.T) {
	if got := List(nil, 3); got != "none" {
		t.Error(got)
	}
	if got := List([]string{"a", "b", "c", "d", "e"}, 3); got != "a, b, c, and 2 more" {
		t.Error(got)
	}
	if got := List([]string{"a", "b"}, 3); got != "a, b" {
		t.Error(got)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}
