package demo

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/schemadiff"
)

// Summary is the digest of `zbrecover inspect -o json` the demo prints: totals, the schema
// groups with their diff against the table, and the unreadable files.
type Summary struct {
	Root       string
	Prefix     string
	Totals     inspect.Totals
	Groups     []GroupSummary
	Unreadable []inspect.File
	// DiffByInspect is true when the changes come from inspect's own report; otherwise they
	// are computed here with schemadiff from the group columns and the table schema.
	DiffByInspect bool
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
	Changes   []Change
	// DDL are the suggested table changes; SelectList the suggested COPY INTO projection
	// (empty when the files load as they are).
	DDL        []string
	SelectList string
	// Confirm is set when the projection holds a guessed rename the operator must confirm.
	Confirm bool
}

// Change is one difference between a group's schema and the table's.
type Change struct {
	Path    string `json:"path"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
}

// inspectDoc is the part of the inspect JSON report the summary reads. The per-group verdict,
// changes and suggestion are read when the report carries them.
type inspectDoc struct {
	Root   string         `json:"root"`
	Prefix string         `json:"prefix"`
	Files  []inspect.File `json:"files"`
	Groups []struct {
		inspect.Group
		Verdict    string   `json:"verdict"`
		Changes    []Change `json:"changes"`
		Suggestion *struct {
			DDL        []string                    `json:"ddl"`
			Projection []schemadiff.ProjectionItem `json:"projection"`
			Omit       []string                    `json:"omit"`
			Confirm    bool                        `json:"confirm"`
		} `json:"suggestion"`
	} `json:"groups"`
	Totals inspect.Totals `json:"totals"`
}

// schemaDoc is the part of the `schema -o json` report the summary reads.
type schemaDoc struct {
	Version *int64 `json:"version"`
	Delta   *struct {
		SchemaString string `json:"schema_string"`
	} `json:"delta"`
}

// Summarize digests the JSON reports of `inspect -o json` and `schema -o json` for table.
// When the inspect report has no diff of its own, each group's columns are diffed against
// the table schema with schemadiff.
func Summarize(inspectJSON, schemaJSON []byte, table string) (*Summary, error) {
	var doc inspectDoc
	if err := json.Unmarshal(inspectJSON, &doc); err != nil {
		return nil, fmt.Errorf("read the inspect report: %w", err)
	}
	sum := &Summary{Root: doc.Root, Prefix: doc.Prefix, Totals: doc.Totals}
	for _, f := range doc.Files {
		if f.Unreadable() {
			sum.Unreadable = append(sum.Unreadable, f)
		}
	}
	byInspect := len(doc.Groups) > 0
	for _, g := range doc.Groups {
		byInspect = byInspect && g.Verdict != ""
	}
	sum.DiffByInspect = byInspect

	var tableSchema schemadiff.Schema
	if !byInspect && len(doc.Groups) > 0 {
		var sd schemaDoc
		if err := json.Unmarshal(schemaJSON, &sd); err != nil {
			return nil, fmt.Errorf("read the schema report: %w", err)
		}
		if sd.Delta == nil || sd.Delta.SchemaString == "" {
			return nil, fmt.Errorf("the schema report has no Delta schema")
		}
		s, err := schemadiff.ParseDeltaSchema(sd.Delta.SchemaString)
		if err != nil {
			return nil, fmt.Errorf("read the table schema: %w", err)
		}
		tableSchema = s
		sum.TableVersion = sd.Version
	}

	for _, g := range doc.Groups {
		gs := GroupSummary{SchemaID: g.SchemaID, Files: g.Files, Rows: g.Rows, FirstFile: g.FirstFile, Columns: g.Columns}
		fileSchema, err := groupSchema(g.Columns)
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", g.SchemaID, err)
		}
		if byInspect {
			gs.Verdict, gs.Changes = g.Verdict, g.Changes
			if s := g.Suggestion; s != nil {
				gs.DDL, gs.Confirm = s.DDL, s.Confirm
				sg := schemadiff.Suggestion{Projection: s.Projection, Omit: s.Omit}
				if sg.NeedsProjection() {
					gs.SelectList = sg.SelectList(fileSchema)
				}
			}
		} else {
			changes := schemadiff.Diff(fileSchema, tableSchema)
			gs.Verdict = schemadiff.Worst(changes).String()
			for _, in := range schemadiff.Infos(changes) {
				gs.Changes = append(gs.Changes, Change{Path: in.Path.String(), Verdict: in.Verdict.String(), Reason: in.Reason})
			}
			sg := schemadiff.Suggest(changes, table)
			gs.DDL, gs.Confirm = sg.DDL, sg.Confirm
			if sg.NeedsProjection() {
				gs.SelectList = sg.SelectList(fileSchema)
			}
		}
		sum.Groups = append(sum.Groups, gs)
	}
	return sum, nil
}

// groupSchema rebuilds a group's Spark schema from the report's columns. Nested nullability
// is not in the report; nested members are taken as nullable, as Parquet writers make them.
func groupSchema(cols []inspect.Column) (schemadiff.Schema, error) {
	var s schemadiff.Schema
	for _, c := range cols {
		t, err := schemadiff.ParseType(c.Type)
		if err != nil {
			return schemadiff.Schema{}, fmt.Errorf("column %s: %w", c.Name, err)
		}
		var opts []schemadiff.FieldOption
		if !c.Nullable {
			opts = append(opts, schemadiff.NotNull)
		}
		if c.NullCount != nil {
			opts = append(opts, schemadiff.NullCount(*c.NullCount))
		}
		s = s.Col(c.Name, t, opts...)
	}
	return s, nil
}

// Blocking reports whether any group's verdict is "blocks".
func (s *Summary) Blocking() bool {
	for _, g := range s.Groups {
		if g.Verdict == schemadiff.Blocks.String() {
			return true
		}
	}
	return false
}

// WriteText writes the summary for a human.
func (s *Summary) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	t := s.Totals
	ew.printf("totals: %d Parquet files, %d rows, %s; %d unreadable; %d hidden or other objects not read; %d schema groups\n",
		t.Files, t.Rows, inspect.HumanBytes(t.Bytes), t.Unreadable, t.OtherObjects, t.Groups)
	for _, f := range s.Unreadable {
		ew.printf("unreadable: %s (%s): %s\n", f.Key, inspect.HumanBytes(f.Size), f.Error)
	}
	if len(s.Groups) == 0 {
		return ew.err
	}
	if s.DiffByInspect {
		ew.printf("\nEach group against the table (the verdicts inspect reports):\n")
	} else {
		v := ""
		if s.TableVersion != nil {
			v = fmt.Sprintf(" (version %d)", *s.TableVersion)
		}
		ew.printf("\nEach group against the table schema%s, diffed with schemadiff from the two JSON\nreports (what COPY INTO with mergeSchema = false would do):\n", v)
	}
	for _, g := range s.Groups {
		names := make([]string, len(g.Columns))
		for i, c := range g.Columns {
			names[i] = c.Name
		}
		ew.printf("\ngroup %s: %d files, %d rows, verdict %s\n", g.SchemaID, g.Files, g.Rows, strings.ToUpper(g.Verdict))
		ew.printf("  columns: %s\n", strings.Join(names, ", "))
		for _, c := range g.Changes {
			ew.printf("  - %s [%s] %s\n", c.Path, c.Verdict, c.Reason)
		}
		if len(g.Changes) == 0 {
			ew.printf("  - no difference: the files load as they are\n")
		}
		if g.SelectList != "" {
			ew.printf("  load through: SELECT %s\n", g.SelectList)
			if g.Confirm {
				ew.printf("  (the projection holds a guessed rename: confirm it before loading)\n")
			}
		}
		for _, d := range g.DDL {
			ew.printf("  or change the table: %s\n", d)
		}
	}
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
