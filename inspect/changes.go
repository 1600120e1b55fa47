package inspect

import (
	"cmp"
	"crypto/sha256"
	"slices"
	"strconv"
	"strings"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// MaxChangeExamples is how many of a group's ok changes of one kind its ChangeSummary keeps.
const MaxChangeExamples = 3

// ChangeSummary counts a group's ok changes of one kind (table columns the files lack,
// filled with NULL; names that differ only by case; NOT NULL columns whose statistics show
// no NULLs), which a report counts instead of listing one by one.
type ChangeSummary struct {
	Kind  schemadiff.ChangeKind `json:"kind"`
	Count int                   `json:"count"`
	// Summary words the count for a human: "1,999 table columns the files lack, filled with
	// NULL".
	Summary string `json:"summary"`
	// Examples are the first MaxChangeExamples of the changes, in Diff order: all of them
	// when Count is not larger.
	Examples []schemadiff.ChangeInfo `json:"examples"`

	nested int // changes below the top level (struct members, elements, values)
}

// ChangeTotal counts the changes of one kind and verdict over all the report's groups.
type ChangeTotal struct {
	Kind    schemadiff.ChangeKind `json:"kind"`
	Verdict schemadiff.Verdict    `json:"verdict"`
	// Changes is their number over all groups; Groups the groups with at least one, and Files
	// the files of those groups.
	Changes int `json:"changes"`
	Groups  int `json:"groups"`
	Files   int `json:"files"`
	// Summary words the count for a human, as ChangeSummary.Summary does.
	Summary string `json:"summary"`

	nested int
}

// listed reports whether a report lists the change one by one: every change that blocks the
// load or needs the projection. Ok changes are counted (ChangeSummary).
func listed(c schemadiff.Change) bool { return c.Verdict() != schemadiff.OK }

// summarize splits a group's changes into those a report lists (their flat form) and the
// ok ones, counted by kind in order of first appearance. Only the listed changes and the
// examples are turned into their flat form: a table thousands of columns wider than the
// files costs a count, not a reason string per column.
func summarize(changes []schemadiff.Change) ([]schemadiff.ChangeInfo, []ChangeSummary) {
	list := []schemadiff.ChangeInfo{}
	var sums []ChangeSummary
	for _, c := range changes {
		if listed(c) {
			list = append(list, schemadiff.Info(c))
			continue
		}
		i := 0
		for i < len(sums) && sums[i].Kind != c.Kind() {
			i++
		}
		if i == len(sums) {
			sums = append(sums, ChangeSummary{Kind: c.Kind()})
		}
		s := &sums[i]
		s.Count++
		if len(c.Where()) > 1 {
			s.nested++
		}
		if len(s.Examples) < MaxChangeExamples {
			s.Examples = append(s.Examples, schemadiff.Info(c))
		}
	}
	for i := range sums {
		sums[i].Summary = describeCount(sums[i].Kind, schemadiff.OK, sums[i].Count, sums[i].nested)
	}
	return list, sums
}

// listKey identifies a list of changes: equal keys, equal lists.
func listKey(list []schemadiff.ChangeInfo) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range list {
		for _, s := range []string{c.Kind.String(), c.Path.String(), c.FilePath.String(), c.Verdict.String(), c.FileType, c.TableType, c.Reason} {
			h.Write([]byte(strconv.Itoa(len(s))))
			h.Write([]byte{':'})
			h.Write([]byte(s))
		}
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// changeTotals accumulates ChangeTotals group by group.
type changeTotals struct {
	order []ChangeTotal
}

func (t *changeTotals) add(changes []schemadiff.Change, files int) {
	seen := map[int]bool{}
	for _, c := range changes {
		i := 0
		for i < len(t.order) && (t.order[i].Kind != c.Kind() || t.order[i].Verdict != c.Verdict()) {
			i++
		}
		if i == len(t.order) {
			t.order = append(t.order, ChangeTotal{Kind: c.Kind(), Verdict: c.Verdict()})
		}
		ct := &t.order[i]
		ct.Changes++
		if len(c.Where()) > 1 {
			ct.nested++
		}
		if !seen[i] {
			seen[i] = true
			ct.Groups++
			ct.Files += files
		}
	}
}

// list returns the totals, worst verdict first, then by kind.
func (t *changeTotals) list() []ChangeTotal {
	out := make([]ChangeTotal, len(t.order))
	copy(out, t.order)
	for i := range out {
		out[i].Summary = describeCount(out[i].Kind, out[i].Verdict, out[i].Changes, out[i].nested)
	}
	slices.SortStableFunc(out, func(a, b ChangeTotal) int {
		if a.Verdict != b.Verdict {
			return cmp.Compare(b.Verdict, a.Verdict)
		}
		return cmp.Compare(a.Kind, b.Kind)
	})
	return out
}

// describeCount words n changes of one kind and verdict, nested of them below the top level
// (struct members, array elements, map values): "1,999 table columns the files lack, filled
// with NULL".
func describeCount(k schemadiff.ChangeKind, v schemadiff.Verdict, n, nested int) string {
	noun := func(column string) string {
		switch {
		case nested == 0:
			return countOf(n, column)
		case nested == n:
			return countOf(n, "nested field")
		}
		return countOf(n, column+" or nested field")
	}
	switch k {
	case schemadiff.KindMissingInFile:
		if v == schemadiff.OK {
			return noun("table column") + " the files lack, filled with NULL"
		}
		return noun("NOT NULL table column") + " the files lack"
	case schemadiff.KindExtraInFile:
		return noun("file column") + " the table does not have"
	case schemadiff.KindTypeChanged:
		if v == schemadiff.NeedsCast {
			return noun("column") + " whose values fit the table's type through a lossless CAST"
		}
		return noun("column") + " of a type the table's cannot hold"
	case schemadiff.KindNullabilityChanged:
		if v == schemadiff.OK {
			return noun("NOT NULL column") + " whose statistics show no NULLs in the files"
		}
		return noun("NOT NULL column") + " that may be NULL in the files"
	case schemadiff.KindLikelyRename:
		return noun("likely rename") + " to confirm"
	case schemadiff.KindRenamed:
		return noun("column") + " the files store under another name, loaded through old AS new"
	case schemadiff.KindCaseDiffers:
		return noun("column name") + " matched case-insensitively"
	case schemadiff.KindUnsupportedType:
		return noun("file column") + " of a type Databricks cannot read"
	}
	return countOf(n, k.String()+" change")
}

// countOf is n and the noun, plural unless n is 1, with thousands separated: "1,999 table
// columns".
func countOf(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	parts := strings.Split(noun, " or ")
	for i := range parts {
		parts[i] += "s"
	}
	return thousands(n) + " " + strings.Join(parts, " or ")
}

// thousands formats n with commas between groups of three digits: 3,998,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
