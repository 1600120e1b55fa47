package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/tableref"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/place"
	"github.com/zbrecover/zbrecover/recovery"
	"github.com/zbrecover/zbrecover/reload"
)

// InspectOptions are the inputs of `zbrecover inspect`.
type InspectOptions struct {
	F      *Factory
	Target TargetOptions
	// Prefix is the fallback folder under the table root.
	Prefix string
	// From names the source of the table schema the groups are diffed against: delta,
	// warehouse or uc.
	From string
	// SchemaFile, when set, is a file holding the table schema (Delta schema JSON, a JSON
	// array of fields, or a DDL column list; "-" reads stdin). It replaces From.
	SchemaFile string
	// Source returns the schema source named by From; nil uses schemaSource.
	Source func(name string) (tableref.Source, error)
	// Key, when set, measures the fallback records by key against the table (keys.go).
	Key string
	// StageTo is where the keys file of --key goes: a location the warehouse may read.
	StageTo string
	// Renames are confirmed renames (OLD=NEW): a key column renamed since the files were
	// written is read under its old name.
	Renames []string
	// stage is --stage-to, opened and checked before anything is read.
	stage *reload.Stage
	// AllChanges lists every change of every group, the ok ones too, instead of counting
	// the ok ones by kind.
	AllChanges bool
}

// NewCmdInspect returns `zbrecover inspect`. runF replaces the run function in tests.
func NewCmdInspect(f *Factory, runF func(context.Context, *InspectOptions) error) *cobra.Command {
	o := &InspectOptions{F: f}
	c := &cobra.Command{
		Use:   "inspect [TARGET]",
		Short: "List the fallback files, group them by schema and diff each group against the table",
		Long: `Inspect lists the fallback files parked under the table's root, reads each one's footer (one
ranged request, no download), groups the files by schema and compares each group with the
table's current schema as COPY INTO (mergeSchema = false) will meet it: every change is ok,
needs-cast (the load casts), rename (the load maps the old name) or blocks, and each group
gets its fix (ALTER TABLE statements, a projection, the COPY INTO of its files). It changes
nothing.

It needs read access to the table's storage (yours, or credentials Unity Catalog vends). The
table's schema comes from its Delta log (--from delta, the default), the SQL warehouse
(--from warehouse), Unity Catalog (--from uc) or --schema-file.

TARGET is catalog.schema.table, or the table's storage root (s3://, gs://, abfss://, wasbs://,
file:// or a local directory).

` + exitHelp(exitLine{ExitSchema, "some group blocks the load (wins over 5)"}, exitLine{ExitPartial, "some files are unreadable"}),
		Example: `  # What is parked in a table, and what blocks its load
  $ zbrecover inspect main.sales.orders
  # Save the report, for preview --from-report and scripts
  $ zbrecover inspect main.sales.orders -o json > inspect.json
  # Also count the records whose key the table already holds
  $ zbrecover inspect main.sales.orders --key order_id
  # A storage root, against a schema saved with zbrecover schema
  $ zbrecover inspect s3://lake/tables/orders --schema-file orders.json
  # A million files: one JSON line per file as its footer is read
  $ zbrecover inspect main.sales.orders -o jsonl > inspect.jsonl`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := parseTarget(&o.Target, args); err != nil {
				return err
			}
			if !slices.Contains(schemaSourceNames, o.From) {
				return FlagErrorf("--from must be one of %s, not %q", strings.Join(schemaSourceNames, ", "), o.From)
			}
			if o.SchemaFile != "" && c.Flags().Changed("from") {
				return FlagErrorf("give --schema-file or --from, not both")
			}
			if o.Key != "" && o.Target.Table == "" {
				return FlagErrorf("--key needs a table name: give catalog.schema.table or --table")
			}
			if _, err := parseKeyFlag("key", o.Key); err != nil {
				return err
			}
			if o.Key == "" && (o.StageTo != "" || len(o.Renames) > 0) {
				return FlagErrorf("--stage-to and --rename go with --key")
			}
			if _, err := parseRenames(o.Renames); err != nil {
				return err
			}
			if (o.From == "warehouse" || o.From == "uc") && o.Target.Table == "" {
				return FlagErrorf("--from %s needs a table name: give catalog.schema.table or --table", o.From)
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return inspectRun(c.Context(), o)
		},
	}
	addTargetFlags(c, &o.Target)
	c.Flags().StringVar(&o.Prefix, "prefix", fallback.Prefix, "the fallback folder under the table root")
	c.Flags().StringVar(&o.From, "from", "delta", "where to read the table schema: delta (the log at the root), warehouse or uc")
	c.Flags().StringVar(&o.Key, "key", "", "measure the records already in the table and the duplicates by these key columns (COL[,COL]; needs a warehouse)")
	c.Flags().StringVar(&o.StageTo, "stage-to", "", "with --key: put the keys file here, where the warehouse may read it (/Volumes/<catalog>/<schema>/<volume>/<dir> or an external location); needed on a managed table")
	c.Flags().StringArrayVar(&o.Renames, "rename", nil, "with --key: a key column the files hold under another name (OLD=NEW; repeatable)")
	c.Flags().StringVar(&o.SchemaFile, "schema-file", "", "read the table schema from this file (Delta schema JSON or DDL; - for stdin) instead")
	c.Flags().BoolVar(&o.AllChanges, "all-changes", false, "list every change of every group, the ok ones too (a nullable column the files lack, …), instead of counting them")
	return c
}

// runInspect opens the target and inspects it, with a progress bar on a terminal.
func runInspect(ctx context.Context, f *Factory, t *TargetOptions, prefix string) (*tableref.Ref, *inspect.Report, error) {
	return streamInspect(ctx, f, t, prefix, true, nil, nil)
}

// streamInspect is runInspect with the report's files kept only when keepFiles is set (see
// inspect.StreamReport), opened (when not nil) once the target is open, and each (when not
// nil) given every file as it is read.
func streamInspect(ctx context.Context, f *Factory, t *TargetOptions, prefix string, keepFiles bool,
	opened func(*tableref.Ref) error, each func(inspect.FileResult) error) (*tableref.Ref, *inspect.Report, error) {
	tgt, err := f.openTarget(ctx, t, tableref.Read)
	if err != nil {
		return nil, nil, err
	}
	if opened != nil {
		if err := opened(tgt); err != nil {
			return nil, nil, err
		}
	}
	bar := newFooterProgress(f, "footers")
	rep, err := inspect.StreamReport(ctx, tgt.Root, inspect.Options{
		Concurrency: f.Global.Concurrency,
		Prefix:      prefix,
		Progress:    bar.update,
	}, keepFiles, each)
	bar.done(err == nil)
	if err != nil {
		return nil, nil, fmt.Errorf("inspect %s: %w", tgt.Display(), err)
	}
	f.Logger.Info("inspected", "root", tgt.Display(), "files", rep.Totals.Files, "unreadable", rep.Totals.Unreadable,
		"groups", rep.Totals.Groups)
	return tgt, rep, nil
}

func inspectRun(ctx context.Context, o *InspectOptions) error {
	f := o.F
	// A bad schema file or an unavailable source fails before anything is listed.
	fileTable, src, err := inspectSchemaInput(o)
	if err != nil {
		return err
	}
	jl, opened, each := inspectStreaming(ctx, o)
	tgt, rep, err := streamInspect(ctx, f, &o.Target, o.Prefix, f.Global.JSON(), opened, each)
	if jl != nil {
		if cerr := jl.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	table, notRoot, tableErr := inspectTable(ctx, o, tgt, rep, fileTable, src)
	if tableErr != nil && ctx.Err() != nil {
		return tableErr
	}
	ov, keysErr := inspectKeys(ctx, o, tgt, rep, table)
	if err := renderInspect(f, jl, rep, ov); err != nil {
		return err
	}
	switch {
	case keysErr != nil:
		return keysErr
	case notRoot != "":
		return errors.New(notRoot)
	case tableErr != nil:
		return fmt.Errorf("read the table schema (--from %s): %w", src.Name(), tableErr)
	}
	return inspectExit(rep)
}

// inspectSchemaInput reads --schema-file, or finds the --from source, before anything is
// listed.
func inspectSchemaInput(o *InspectOptions) (*inspect.Table, tableref.Source, error) {
	if o.SchemaFile != "" {
		t, err := readSchemaFile(o.F, o.SchemaFile)
		return t, nil, err
	}
	get := o.Source
	if get == nil {
		get = func(name string) (tableref.Source, error) { return schemaSource(o.F, name) }
	}
	src, err := get(o.From)
	return nil, src, err
}

// inspectStreaming returns what inspect does as the target opens and each file is read: JSON
// lines written as they come (text and JSON lines keep no record per file, so memory stays
// flat in the number of files), and for --key the checks that must pass before anything is
// read.
func inspectStreaming(ctx context.Context, o *InspectOptions) (*inspect.JSONLines, func(*tableref.Ref) error, func(inspect.FileResult) error) {
	f := o.F
	var (
		jl     *inspect.JSONLines
		opened func(*tableref.Ref) error
		each   func(inspect.FileResult) error
	)
	if f.Global.Output == "jsonl" {
		jl = inspect.NewJSONLines(f.IO.Out)
		opened = func(tgt *tableref.Ref) error {
			return jl.Header(tgt.Root.Location(), strings.TrimPrefix(ensureSlash(o.Prefix), "/"))
		}
		each = func(r inspect.FileResult) error { return jl.File(r.File) }
	}
	if o.Key == "" {
		return jl, opened, each
	}
	open := opened
	return jl, func(tgt *tableref.Ref) error {
		if err := inspectKeyPlace(ctx, o, tgt); err != nil {
			return err
		}
		if open != nil {
			return open(tgt)
		}
		return nil
	}, each
}

// inspectKeyPlace checks, before anything is read, that --key has a place for its keys file:
// on a managed table the warehouse may not read the fallback folder by path, so --stage-to is
// needed, and it must be usable.
func inspectKeyPlace(ctx context.Context, o *InspectOptions, tgt *tableref.Ref) error {
	if o.StageTo == "" && tgt.Info != nil && strings.EqualFold(tgt.Info.TableType, "MANAGED") {
		return WithCode(ExitUsage, fmt.Sprintf("--key on the managed table %s needs --stage-to %s: the warehouse may not read the fallback "+
			"folder by path (LOCATION_OVERLAP), so zbrecover reads the key columns itself and puts one keys file where the warehouse "+
			"may read it; nothing was read", tgt.TableName(), databricks.StageToSuggestion(tgt.Name)))
	}
	if o.StageTo == "" {
		return nil
	}
	stage, err := o.F.places().OpenStage(ctx, place.Staging, o.StageTo, tgt)
	if err != nil {
		return err
	}
	if err := stage.Check(ctx); err != nil {
		return fmt.Errorf("--stage-to: %w; nothing was read", err)
	}
	o.stage = stage
	return nil
}

// inspectTable finds the table's schema (and history) and diffs every group against it. It
// returns the note of a root that holds neither fallback files nor a Delta log, and the error
// of a schema that could not be read (the report still goes out).
func inspectTable(ctx context.Context, o *InspectOptions, tgt *tableref.Ref, rep *inspect.Report, table *inspect.Table, src tableref.Source) (*inspect.Table, string, error) {
	f := o.F
	var tableErr error
	notRoot := ""
	switch {
	case table == nil && len(rep.Groups) > 0:
		table, tableErr = tableFromSource(ctx, src, tgt)
		if tableErr != nil && ctx.Err() != nil {
			return nil, "", tableErr
		}
	case table == nil && rep.Totals.Files == 0 && rep.Totals.OtherObjects == 0:
		// Nothing to recover: make sure that is not because the root is wrong.
		note, err := tableref.CheckRoot(ctx, tgt)
		if err != nil {
			return nil, "", err
		}
		if note != "" {
			table = inspect.MissingTable(note)
			notRoot = mistypedRoot(tgt.Display(), note)
		}
	}
	if table.Known() {
		if err := recovery.ReadHistory(ctx, f.Logger, tgt, &table.Table); err != nil {
			return nil, "", err
		}
	}
	if table != nil {
		name := tgt.TableName()
		if name == "" {
			name = table.Name
		}
		rep.Diff(table, inspect.DiffOptions{TableName: name, Dir: tgt.Loc.Join(rep.Prefix), AllChanges: o.AllChanges})
		f.Logger.Info("diffed", "table", table.Source, "blocking_groups", len(rep.Blocking()))
	}
	return table, notRoot, tableErr
}

// renderInspect writes the report (and the overlap by key) as the output format asks.
func renderInspect(f *Factory, jl *inspect.JSONLines, rep *inspect.Report, ov *reload.OverlapReport) error {
	switch {
	case jl != nil:
		err := jl.Summary(rep)
		if err == nil && ov != nil {
			err = jl.Extra("keys", ov)
		}
		if err == nil {
			err = jl.Close()
		}
		return err
	case f.Global.JSON():
		return writeInspectJSON(f.IO.Out, rep, ov)
	}
	if err := rep.WriteText(f.IO.Out); err != nil {
		return err
	}
	return writeOverlapText(f.IO.Out, ov)
}

// inspectExit maps the report to the exit code: 3 when a group blocks the load, 5 when files
// are unreadable, the most urgent first.
func inspectExit(rep *inspect.Report) error {
	var (
		codes []int
		msgs  []string
	)
	if n := len(rep.Blocking()); n > 0 {
		codes = append(codes, ExitSchema)
		msgs = append(msgs, fmt.Sprintf("%s of %s %s the load into the table as it is (the report lists the changes and the suggested fixes)",
			textfmt.Count(n), textfmt.Plural(len(rep.Groups), "schema group"), textfmt.Either(n, "blocks", "block")))
	}
	if n := rep.Totals.Unreadable; n > 0 {
		codes = append(codes, ExitPartial)
		msgs = append(msgs, fmt.Sprintf("%s of %s %s unreadable (listed in the report)", textfmt.Count(n), textfmt.Plural(rep.Totals.Files, "fallback file"), textfmt.Are(n)))
	}
	if len(codes) > 0 {
		return WithCode(MostUrgent(codes...), strings.Join(msgs, "; "))
	}
	return nil
}

// tableFromSource reads the table schema from src for the report: a missing schema is a
// table whose note says why (the files are still listed), and an error is returned too when
// reading failed.
func tableFromSource(ctx context.Context, src tableref.Source, tgt *tableref.Ref) (*inspect.Table, error) {
	st, note, err := tableref.TableFor(ctx, src, tgt)
	if st == nil {
		return inspect.MissingTable(note), err
	}
	return inspect.NewTable(st), nil
}

// readSchemaFile reads --schema-file: a local path, or "-" for stdin.
func readSchemaFile(f *Factory, path string) (*inspect.Table, error) {
	var (
		data []byte
		err  error
	)
	if path == "-" {
		data, err = io.ReadAll(f.IO.In)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fileError("--schema-file", path, err, "save one with zbrecover schema TARGET -o json > FILE")
	}
	name := path
	if path == "-" {
		name = "(stdin)"
	}
	st, err := tableref.ReadSchemaFile(name, data)
	if err != nil {
		return nil, err
	}
	return inspect.NewTable(st), nil
}

func ensureSlash(p string) string {
	if p == "" {
		p = fallback.Prefix
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// mistypedRoot words the error for a root with neither fallback files nor a Delta log: the
// fallback folder itself given as the root gets the root it lies in as a suggestion.
func mistypedRoot(root, note string) string {
	trimmed := strings.TrimSuffix(root, "/")
	for _, tail := range []string{"/" + strings.TrimSuffix(fallback.Prefix, "/"), "/_zerobus"} {
		if strings.HasSuffix(trimmed, tail) {
			return fmt.Sprintf("%s is the fallback folder, not the table's root: did you mean %s ?",
				root, strings.TrimSuffix(trimmed, tail))
		}
	}
	return note + " (give the folder that holds _delta_log/ and _zerobus/)"
}
