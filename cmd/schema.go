package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/zbrecover/zbrecover/delta"
	"github.com/zbrecover/zbrecover/schemadiff"
)

// SchemaSource reads a table's current schema from one of its three sources: the Delta log in
// storage, the SQL warehouse (DESCRIBE TABLE EXTENDED … AS JSON) or Unity Catalog (columns'
// type_json). All three produce the same schemadiff.Schema.
type SchemaSource interface {
	// Name is the --from value: "delta", "warehouse" or "uc".
	Name() string
	// TableSchema reads the schema of the target.
	TableSchema(ctx context.Context, t *TargetOptions) (*TableSchema, error)
}

// TableSchema is a table's schema as `zbrecover schema` reports it, and what inspect and
// reload diff fallback files against.
type TableSchema struct {
	Source string `json:"source"`
	Table  string `json:"table,omitempty"`
	Root   string `json:"root,omitempty"` // redacted
	// Version is the Delta table version the schema is from, when the source knows it.
	Version           *int64            `json:"version,omitempty"`
	Schema            schemadiff.Schema `json:"-"`
	Columns           []SchemaColumn    `json:"columns"`
	PartitionColumns  []string          `json:"partition_columns"`
	ColumnMappingMode string            `json:"column_mapping_mode,omitempty"`
	// Delta holds the log details when the source is the Delta log.
	Delta *DeltaDetails `json:"delta,omitempty"`
}

// SchemaColumn is one top-level column in JSON output. Type is the Spark simpleString form;
// DeltaType is the Delta log's JSON form (nested types in full).
type SchemaColumn struct {
	Name         string          `json:"name"`
	Type         string          `json:"type"`
	Nullable     bool            `json:"nullable"`
	Comment      string          `json:"comment,omitempty"`
	PhysicalName string          `json:"physical_name,omitempty"`
	ID           int64           `json:"id,omitempty"`
	DeltaType    json.RawMessage `json:"delta_type"`
}

// DeltaDetails are the Delta log facts behind a schema read from storage.
type DeltaDetails struct {
	CheckpointVersion *int64            `json:"checkpoint_version"`
	MetaDataFile      string            `json:"metadata_file"`
	MinReaderVersion  int               `json:"min_reader_version"`
	MinWriterVersion  int               `json:"min_writer_version"`
	ReaderFeatures    []string          `json:"reader_features"`
	WriterFeatures    []string          `json:"writer_features"`
	Configuration     map[string]string `json:"configuration"`
	SchemaString      string            `json:"schema_string"`
}

// SchemaOptions are the inputs of `zbrecover schema`.
type SchemaOptions struct {
	F      *Factory
	Target TargetOptions
	From   string
	Output string // text, json or ddl
	// Source returns the schema source named by --from; nil uses schemaSource.
	Source func(name string) (SchemaSource, error)
}

// schemaSourceNames are the --from values, in help order.
var schemaSourceNames = []string{"delta", "warehouse", "uc"}

// schemaSource returns the schema source for name.
func schemaSource(f *Factory, name string) (SchemaSource, error) {
	switch name {
	case "delta":
		return &DeltaSchemaSource{F: f}, nil
	case "warehouse", "uc":
		s, _ := databricksSchemaSource(f, name)
		return s, nil
	}
	return nil, FlagErrorf("--from must be one of %s, not %q", strings.Join(schemaSourceNames, ", "), name)
}

// NewCmdSchema returns `zbrecover schema`. runF replaces the run function in tests.
func NewCmdSchema(f *Factory, runF func(context.Context, *SchemaOptions) error) *cobra.Command {
	o := &SchemaOptions{F: f}
	c := &cobra.Command{
		Use:   "schema TARGET",
		Short: "Print the table's current schema",
		Long: `Print the target table's current schema: the schema fallback files are compared with.

--from delta (the default) reads it from the table's Delta transaction log in storage
(_delta_log/: the newest version checksum, or the newest checkpoint and the commits after it),
with no warehouse and no Databricks workspace. --from warehouse (DESCRIBE TABLE EXTENDED … AS
JSON) and --from uc (Unity Catalog column type_json) need a Databricks connection.

` + targetHelp + `

--output text lists the columns (name, Spark type, nullability, and the physical name under
column mapping); --output ddl prints a Spark column list; --output json prints the columns,
the Delta schema JSON and the log details. Both are usable with inspect --schema-file, but
only the JSON keeps column-mapping physical names, which fallback files may carry.
` + exitCodesHelp,
		Example: `  zbrecover schema s3://bucket/tables/orders
  zbrecover schema ./orders --output ddl > orders.ddl
  zbrecover schema abfss://lake@acct.dfs.core.windows.net/orders -o json`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.Target.resolve(args); err != nil {
				return err
			}
			switch o.Output {
			case "text", "json", "ddl":
			default:
				return FlagErrorf("--output must be text, json or ddl, not %q", o.Output)
			}
			if o.Output == "json" {
				f.Global.Output = "json" // errors are printed as JSON too
			}
			if !contains(schemaSourceNames, o.From) {
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func schemaRun(ctx context.Context, o *SchemaOptions) error {
	f := o.F
	get := o.Source
	if get == nil {
		get = func(name string) (SchemaSource, error) { return schemaSource(f, name) }
	}
	src, err := get(o.From)
	if err != nil {
		return err
	}
	ts, err := src.TableSchema(ctx, &o.Target)
	if err != nil {
		return err
	}
	if ts.Columns == nil {
		ts.Columns = schemaColumns(ts.Schema)
	}
	if ts.PartitionColumns == nil {
		ts.PartitionColumns = []string{}
	}
	switch o.Output {
	case "json":
		return printJSON(f, ts)
	case "ddl":
		if _, err := fmt.Fprintln(f.IO.Out, ts.Schema.DDL()); err != nil {
			return err
		}
		if ts.Schema.HasColumnMapping() {
			fmt.Fprintln(f.IO.ErrOut, "note: DDL has no column-mapping physical names; for inspect --schema-file, "+
				"use --output json, which keeps them")
		}
		return nil
	}
	return printSchemaText(f, ts)
}

func schemaColumns(s schemadiff.Schema) []SchemaColumn {
	cols := make([]SchemaColumn, len(s.Fields))
	for i, fl := range s.Fields {
		cols[i] = SchemaColumn{Name: fl.Name, Type: fl.Type.String(), Nullable: fl.Nullable, Comment: fl.Comment,
			PhysicalName: fl.PhysicalName, ID: fl.ID, DeltaType: json.RawMessage(fl.Type.DeltaJSON())}
	}
	return cols
}

func printSchemaText(f *Factory, ts *TableSchema) error {
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
	var b strings.Builder
	fmt.Fprintf(&b, "%d columns from the %s", len(ts.Columns), sourceDesc(ts))
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
	fmt.Fprintln(f.IO.ErrOut, b.String())
	return nil
}

func sourceDesc(ts *TableSchema) string {
	switch ts.Source {
	case "delta":
		return "Delta log at " + ts.Root
	case "warehouse":
		return "warehouse (DESCRIBE TABLE EXTENDED " + ts.Table + " AS JSON)"
	case "uc":
		return "Unity Catalog entry of " + ts.Table
	}
	return ts.Source
}

// DeltaSchemaSource reads the schema from the table's Delta log in storage.
type DeltaSchemaSource struct {
	F    *Factory
	Opts []delta.Option
}

// Name implements SchemaSource.
func (s *DeltaSchemaSource) Name() string { return "delta" }

// TableSchema implements SchemaSource. With a table name, the root comes from the table
// resolver (Unity Catalog).
func (s *DeltaSchemaSource) TableSchema(ctx context.Context, t *TargetOptions) (*TableSchema, error) {
	rt, err := s.F.openTarget(ctx, t, "READ")
	if err != nil {
		return nil, err
	}
	snap, err := delta.Read(ctx, rt.Root, s.Opts...)
	if err != nil {
		return nil, err
	}
	v := snap.Version
	return &TableSchema{
		Source:            "delta",
		Table:             rt.Table,
		Root:              rt.RootURL,
		Version:           &v,
		Schema:            snap.Schema,
		PartitionColumns:  snap.PartitionColumns,
		ColumnMappingMode: snap.ColumnMappingMode,
		Delta: &DeltaDetails{
			CheckpointVersion: snap.CheckpointVersion,
			MetaDataFile:      snap.MetaDataFile,
			MinReaderVersion:  snap.MinReaderVersion,
			MinWriterVersion:  snap.MinWriterVersion,
			ReaderFeatures:    snap.ReaderFeatures,
			WriterFeatures:    snap.WriterFeatures,
			Configuration:     snap.Configuration,
			SchemaString:      snap.SchemaString,
		},
	}, nil
}
