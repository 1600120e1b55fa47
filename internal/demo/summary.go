package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/textfmt"
)

// Summary is the digest of `zbrecover inspect -o json` the demo prints: totals, the schema
// groups with their diff against the table, and the unreadable files.
type Summary struct {
	Root       string
	Prefix     string
	Totals     inspect.Totals
	Groups     []GroupSummary
	Unreadable []inspect.File
	// TableVersion is the Delta version of the table schema the groups were compared with.
	TableVersion *int64
}

// GroupSummary is one schema group and what COPY INTO would make of it.
type GroupSummary struct {
	SchemaID  string
	Files     int
	Rows      int64
	FirstFile string
	Columns   []inspect.Column
	Verdict   string
	// Changes are the group's changes, those of kinds inspect counts (ok ones) included
	// when it gave them all as examples; OKCounts word the others' counts.
	Changes  []Change
	OKCounts []string
	// DDL are the suggested table changes; Projection the suggested COPY INTO source query
	// (empty when the files load as they are).
	DDL        []string
	Projection string
	// Confirm is set when the projection holds a guessed rename the operator must confirm.
	Confirm bool
}

// Change is one difference between a group's schema and the table's.
type Change struct {
	Path    string `json:"path"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
}

// inspectDoc is the part of the inspect JSON report the summary reads.
type inspectDoc struct {
	Root   string `json:"root"`
	Prefix string `json:"prefix"`
	Table  *struct {
		Version *int64 `json:"version"`
	} `json:"table"`
	Files  []inspect.File `json:"files"`
	Groups []struct {
		inspect.Group
		Verdict       string   `json:"verdict"`
		Changes       []Change `json:"changes"`
		SameChangesAs string   `json:"same_changes_as"`
		OKChanges     []struct {
			Count    int      `json:"count"`
			Summary  string   `json:"summary"`
			Examples []Change `json:"examples"`
		} `json:"ok_changes"`
		Suggestion *struct {
			DDL     []string `json:"ddl"`
			Select  string   `json:"select"`
			Source  string   `json:"source"`
			Confirm bool     `json:"confirm"`
		} `json:"suggestion"`
	} `json:"groups"`
	Totals inspect.Totals `json:"totals"`
}

// Summarize digests the JSON report of `inspect -o json`, which carries each group's diff
// against the table.
func Summarize(inspectJSON []byte) (*Summary, error) {
	var doc inspectDoc
	if err := json.Unmarshal(inspectJSON, &doc); err != nil {
		return nil, fmt.Errorf("read the inspect report: %w", err)
	}
	sum := &Summary{Root: doc.Root, Prefix: doc.Prefix, Totals: doc.Totals}
	if doc.Table != nil {
		sum.TableVersion = doc.Table.Version
	}
	for _, f := range doc.Files {
		if f.Unreadable() {
			sum.Unreadable = append(sum.Unreadable, f)
		}
	}
	listed := map[string][]Change{}
	for _, g := range doc.Groups {
		changes := g.Changes
		if g.SameChangesAs != "" {
			changes = listed[g.SameChangesAs]
		} else {
			listed[g.SchemaID] = changes
		}
		changes = append([]Change(nil), changes...)
		gs := GroupSummary{SchemaID: g.SchemaID, Files: g.Files, Rows: g.Rows, FirstFile: g.FirstFile,
			Columns: g.Columns, Verdict: g.Verdict}
		for _, s := range g.OKChanges {
			if s.Count <= len(s.Examples) {
				changes = append(changes, s.Examples...)
			} else {
				gs.OKCounts = append(gs.OKCounts, s.Summary)
			}
		}
		gs.Changes = changes
		if s := g.Suggestion; s != nil {
			gs.DDL, gs.Confirm = s.DDL, s.Confirm
			if s.Select != "" {
				gs.Projection = "SELECT " + s.Select + " FROM '" + s.Source + "'"
			}
		}
		sum.Groups = append(sum.Groups, gs)
	}
	return sum, nil
}

// DDL returns the table changes the groups suggest, each once, in the groups' order.
func (s *Summary) DDL() []string {
	var out []string
	seen := map[string]bool{}
	for _, g := range s.Groups {
		for _, d := range g.DDL {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// Blocking reports whether any group's verdict is "blocks".
func (s *Summary) Blocking() bool {
	for _, g := range s.Groups {
		if g.Verdict == "blocks" {
			return true
		}
	}
	return false
}

// WriteText writes the summary for a human.
func (s *Summary) WriteText(w io.Writer) error {
	ew := textfmt.NewWriter(w)
	t := s.Totals
	ew.Printf("totals: %s, %s, %s; %s unreadable; %s not read; %s\n",
		textfmt.Plural(t.Files, "Parquet file"), textfmt.Plural(t.Rows, "row"), textfmt.Bytes(t.Bytes), textfmt.Count(t.Unreadable),
		textfmt.Plural(t.OtherObjects, "hidden or other object"), textfmt.Plural(t.Groups, "schema group"))
	for _, f := range s.Unreadable {
		ew.Printf("unreadable: %s (%s): %s\n", f.Key, textfmt.Bytes(f.Size), f.Error)
	}
	if len(s.Groups) == 0 {
		return ew.Err()
	}
	v := ""
	if s.TableVersion != nil {
		v = fmt.Sprintf(" (version %d)", *s.TableVersion)
	}
	ew.Printf("\nEach group against the table%s, as inspect reports it (what COPY INTO with\nmergeSchema = false would do):\n", v)
	for _, g := range s.Groups {
		names := make([]string, len(g.Columns))
		for i, c := range g.Columns {
			names[i] = c.Name
		}
		ew.Printf("\ngroup %s: %s, %s, verdict %s\n", g.SchemaID, textfmt.Plural(g.Files, "file"), textfmt.Plural(g.Rows, "row"), strings.ToUpper(g.Verdict))
		ew.Printf("  columns: %s\n", strings.Join(names, ", "))
		for _, c := range g.Changes {
			ew.Printf("  - %s [%s] %s\n", c.Path, c.Verdict, c.Reason)
		}
		for _, s := range g.OKCounts {
			ew.Printf("  - [ok] %s\n", s)
		}
		if len(g.Changes) == 0 && len(g.OKCounts) == 0 {
			ew.Printf("  - no difference: the files load as they are\n")
		}
		if g.Projection != "" {
			ew.Printf("  load through: %s\n", g.Projection)
			if g.Confirm {
				ew.Printf("  (the projection holds a guessed rename: confirm it before loading)\n")
			}
		}
		for _, d := range g.DDL {
			ew.Printf("  or change the table: %s\n", d)
		}
	}
	return ew.Err()
}
