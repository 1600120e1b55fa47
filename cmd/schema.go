package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/tableref"

	"github.com/spf13/cobra"
	"github.com/zbrecover/zbrecover/schemadiff"
)

// schemaDoc is `zbrecover schema -o json`: a table's schema with its columns spelled out.
type schemaDoc struct {
	Source  schemadiff.Source `json:"source"`
	Table   string            `json:"table,omitempty"`
	TableID string            `json:"table_id,omitempty"`
	Root    string            `json:"root,omitempty"` // redacted
	// Version is the Delta table version the schema is from, when the source knows it.
	Version           *int64                 `json:"version,omitempty"`
	Columns           []schemadiff.Column    `json:"columns"`
	PartitionColumns  []string               `json:"partition_columns"`
	ColumnMappingMode string                 `json:"column_mapping_mode,omitempty"`
	Delta             *schemadiff.LogDetails `json:"delta,omitempty"`
}

// SchemaColumn is one top-level column in JSON output. Type is the Spark simpleString form;
func newSchemaDoc(t *schemadiff.Table) *schemaDoc {
	d := &schemaDoc{Source: t.Source, Table: t.Name, TableID: t.TableID, Root: t.Location, Version: t.Version,
		Columns: schemadiff.Columns(t.Schema, true), PartitionColumns: t.PartitionColumns, ColumnMappingMode: t.ColumnMappingMode, Delta: t.Log}
	if d.PartitionColumns == nil {
		d.PartitionColumns = []string{}
	}
	return d
}

// SchemaOptions are the inputs of `zbrecover schema`.
type SchemaOptions struct {
	F      *Factory
	Target TargetOptions
	From   string
	Output string // text, json or ddl
	// Source returns the schema source named by --from; nil uses schemaSource.
	Source func(name string) (tableref.Source, error)
}

// schemaSourceNames are the --from values, in help order.
var schemaSourceNames = func() []string {
	out := make([]string, len(schemadiff.Sources))
	for i, s := range schemadiff.Sources {
		out[i] = string(s)
	}
	return out
}()

// schemaSource returns the schema source for name.
func schemaSource(f *Factory, name string) (tableref.Source, error) {
	return tableref.NewSource(name, f.workspace())
}

// tableForSource returns the target a source reads: the resolved storage root for the Delta
// log, the table name alone for the warehouse and Unity Catalog (no storage is opened).
func (f *Factory) tableForSource(ctx context.Context, src tableref.Source, t *TargetOptions) (*tableref.Ref, error) {
	if tableref.NeedsStorage(src) {
		return f.openTarget(ctx, t, tableref.Read)
	}
	if t.Table == "" {
		return &tableref.Ref{}, nil // the source says what it needs
	}
	return tableref.Named(*t)
}

// NewCmdSchema returns `zbrecover schema`. runF replaces the run function in tests.
func NewCmdSchema(f *Factory, runF func(context.Context, *SchemaOptions) error) *cobra.Command {
	o := &SchemaOptions{F: f}
	c := &cobra.Command{
		Use:   "schema TARGET",
		Short: "Print the table's current schema",
		Long: `Schema prints the table's current schema, the one inspect compares the fallback files with:
from its Delta log (--from delta, the default: storage access only, no workspace), from the
SQL warehouse (--from warehouse: DESCRIBE TABLE EXTENDED … AS JSON) or from Unity Catalog
(--from uc). It changes nothing.

-o text lists the columns (name, type, nullability, column-mapping physical name); -o ddl
prints a Spark column list and -o json the columns with the Delta schema JSON, either one
usable as inspect --schema-file (only the JSON keeps physical names).

TARGET is catalog.schema.table, or the table's storage root (s3://, gs://, abfss://, wasbs://,
file:// or a local directory).

` + exitHelp(),
		Example: `  # The table's schema, from its Delta log
  $ zbrecover schema main.sales.orders
  # As the SQL warehouse describes it
  $ zbrecover schema main.sales.orders --from warehouse
  # Saved for inspect --schema-file
  $ zbrecover schema s3://lake/tables/orders -o json > orders.json`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := parseTarget(&o.Target, args); err != nil {
				return err
			}
			switch o.Output {
			case "text", "json", "ddl":
			default:
				return FlagErrorf("--output must be text, json or ddl, not %q", o.Output)
			}
			if o.Output == "json" {
				f.Global.Output = "json" // errors are printed as JSON too
				f.setJSONStderr(true)
			}
			if !slices.Contains(schemaSourceNames, o.From) {
				return FlagErrorf("--from must be one of %s, not %q", strings.Join(schemaSourceNames, ", "), o.From)
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return schemaRun(c.Context(), o)
		},
	}
	addTargetFlags(c, &o.Target)
	c.Flags().StringVar(&o.From, "from", "delta", "where to read the schema: delta (the log in storage), warehouse or uc")
	// A local --output shadows the global one: this command also prints DDL.
	c.Flags().StringVarP(&o.Output, "output", "o", "text", "output format: text, json or ddl")
	return c
}

func schemaRun(ctx context.Context, o *SchemaOptions) error {
	f := o.F
	get := o.Source
	if get == nil {
		get = func(name string) (tableref.Source, error) { return schemaSource(f, name) }
	}
	src, err := get(o.From)
	if err != nil {
		return err
	}
	tgt, err := f.tableForSource(ctx, src, &o.Target)
	if err != nil {
		return err
	}
	table, err := src.Table(ctx, tgt)
	if err != nil {
		return err
	}
	ts := newSchemaDoc(table)
	switch o.Output {
	case "json":
		return printJSON(f, ts)
	case "ddl":
		if _, err := fmt.Fprintln(f.IO.Out, table.Schema.DDL()); err != nil {
			return err
		}
		if table.Schema.HasColumnMapping() {
			fmt.Fprintln(f.IO.ErrOut, "note: DDL has no column-mapping physical names; for inspect --schema-file, "+
				"use --output json, which keeps them")
		}
		return nil
	}
	return printSchemaText(f, table, ts)
}

func printSchemaText(f *Factory, table *schemadiff.Table, ts *schemaDoc) error {
	mapping, comments := false, false
	for _, c := range ts.Columns {
		mapping = mapping || c.PhysicalName != ""
		comments = comments || c.Comment != ""
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	if f.IO.IsStdoutTTY() {
		h := "COLUMN\tTYPE\tNULLABLE"
		if mapping {
			h += "\tPHYSICAL NAME"
		}
		if comments {
			h += "\tCOMMENT"
		}
		fmt.Fprintln(tw, h)
	}
	for _, c := range ts.Columns {
		null := "NOT NULL"
		if c.Nullable {
			null = "nullable"
		}
		line := c.Name + "\t" + c.Type + "\t" + null
		if mapping {
			line += "\t" + c.PhysicalName
		}
		if comments {
			line += "\t" + c.Comment
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line == "" {
			continue
		}
		if _, err := io.WriteString(f.IO.Out, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	fmt.Fprintln(f.IO.ErrOut, schemaFooter(table, ts))
	return nil
}

// schemaFooter is the line under the schema: how many columns, from where, which version.
func schemaFooter(table *schemadiff.Table, ts *schemaDoc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s from the %s", textfmt.Plural(len(ts.Columns), "column"), sourceDesc(table))
	if ts.Version != nil {
		fmt.Fprintf(&b, ", table version %d", *ts.Version)
	}
	if ts.Delta != nil {
		if ts.Delta.CheckpointVersion != nil {
			fmt.Fprintf(&b, " (checkpoint %d, metadata in %s)", *ts.Delta.CheckpointVersion, ts.Delta.MetaDataFile)
		} else {
			fmt.Fprintf(&b, " (metadata in %s)", ts.Delta.MetaDataFile)
		}
	}
	if len(ts.PartitionColumns) > 0 {
		fmt.Fprintf(&b, "; partitioned by %s", strings.Join(ts.PartitionColumns, ", "))
	}
	if ts.ColumnMappingMode != "" && ts.ColumnMappingMode != "none" {
		fmt.Fprintf(&b, "; column mapping mode %s: data files use the physical names", ts.ColumnMappingMode)
	}
	return b.String()
}

// sourceDesc names where the schema came from, without the version (printed after it).
func sourceDesc(t *schemadiff.Table) string {
	c := *t
	c.Version = nil
	return c.Describe()
}
