package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/tableref"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/textsafe"
	"github.com/zbrecover/zbrecover/storage"
)

// PreviewOptions are the inputs of `zbrecover preview`.
type PreviewOptions struct {
	F        *Factory
	Target   TargetOptions
	Prefix   string
	File     string   // --file KEY
	Group    string   // --group ID
	Rows     int      // -n
	Columns  []string // --columns
	Format   string   // --format table|json|csv ("" follows --output)
	MaxBytes int64    // --max-bytes
	// FromReport is a saved `inspect -o json` report to take the files from (--from-report)
	// instead of listing and reading every footer again.
	FromReport string
}

// PreviewReport is the JSON output of `zbrecover preview`: one preview per file or group.
type PreviewReport struct {
	Previews []*inspect.PreviewResult `json:"previews"`
}

// NewCmdPreview returns `zbrecover preview`. runF replaces the run function in tests.
func NewCmdPreview(f *Factory, runF func(context.Context, *PreviewOptions) error) *cobra.Command {
	o := &PreviewOptions{F: f}
	var maxBytes string
	c := &cobra.Command{
		Use:   "preview [TARGET]",
		Short: "Show the first rows of a fallback file or of each schema group",
		Long: `Preview shows the first rows of the fallback files: of one file (--file KEY, as inspect lists
it), of one schema group (--group ID, or a unique prefix), or of every group, as Spark reads
them (nested values as JSON, exact decimals, UTC timestamps). It reads only the footer and
the first row group of the columns shown, 2 requests per file. It changes nothing.

It needs read access to the table's storage. Without --from-report it first reads every
footer, as inspect does; with a saved inspect -o json report it reads only the files it
shows, each checked unchanged first.

TARGET is catalog.schema.table, or the table's storage root (s3://, gs://, abfss://, wasbs://,
file:// or a local directory).

` + exitHelp(exitLine{ExitPartial, "some files could not be previewed (the others are shown)"}),
		Example: `  # The first 5 rows of one schema group
  $ zbrecover preview main.sales.orders --group 2bc2e22c98c1 -n 5
  # One file, as CSV
  $ zbrecover preview main.sales.orders --file 2025-06-02/part-00000.c000.snappy.parquet --format csv
  # Without re-reading every footer: the groups of a saved report, two columns
  $ zbrecover inspect main.sales.orders -o json > inspect.json
  $ zbrecover preview main.sales.orders --from-report inspect.json --group 2bc2 --columns order_id,amount`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := parseTarget(&o.Target, args); err != nil {
				return err
			}
			if o.File != "" && o.Group != "" {
				return FlagErrorf("--file and --group are exclusive")
			}
			if o.Rows < 1 {
				return FlagErrorf("-n must be at least 1, not %d", o.Rows)
			}
			switch o.Format {
			case "", "table", "json", "csv":
			default:
				return FlagErrorf("--format must be table, json or csv, not %q", o.Format)
			}
			n, err := parseSize(maxBytes)
			if err != nil || n < 1 {
				return FlagErrorf("--max-bytes %q is not a size such as 64MiB or 1048576", maxBytes)
			}
			o.MaxBytes = n
			var cols []string
			for _, col := range o.Columns {
				if col = strings.TrimSpace(col); col != "" {
					cols = append(cols, col)
				}
			}
			o.Columns = cols
			if runF != nil {
				return runF(c.Context(), o)
			}
			return previewRun(c.Context(), o)
		},
	}
	addTargetFlags(c, &o.Target)
	fl := c.Flags()
	fl.StringVar(&o.Prefix, "prefix", fallback.Prefix, "the fallback folder under the table root")
	fl.StringVar(&o.File, "file", "", "preview this file (key under the fallback folder)")
	fl.StringVar(&o.Group, "group", "", "preview this schema group (schema id or a unique prefix; shell completion offers the ids of --from-report)")
	fl.IntVarP(&o.Rows, "rows", "n", inspect.DefaultPreviewRows, "rows to show per file or group")
	fl.StringSliceVar(&o.Columns, "columns", nil, "show only these top-level columns (comma-separated)")
	fl.StringVar(&o.Format, "format", "", "table, json or csv (default: table, or json with --output json)")
	fl.StringVar(&maxBytes, "max-bytes", "64MiB", "refuse to read a row group span larger than this")
	fl.StringVar(&o.FromReport, "from-report", "", "take the files and groups from this saved inspect -o json report (- for stdin)")
	return c
}

func previewRun(ctx context.Context, o *PreviewOptions) error {
	previews, err := gatherPreviews(ctx, o)
	if err != nil {
		return err
	}
	if err := printPreviews(o, previews); err != nil {
		return err
	}
	return previewExit(o.F, previews)
}

// gatherPreviews reads the previews asked for: of the files a saved report names, of one
// file, or of every schema group (or one, --group) of the fallback folder.
func gatherPreviews(ctx context.Context, o *PreviewOptions) ([]*inspect.PreviewResult, error) {
	f := o.F
	popts := inspect.PreviewOptions{Rows: o.Rows, Columns: o.Columns, MaxBytes: o.MaxBytes, Prefix: o.Prefix}
	switch {
	case o.FromReport != "":
		return previewFromReport(ctx, o, popts)
	case o.File != "":
		tgt, err := f.openTarget(ctx, &o.Target, tableref.Read)
		if err != nil {
			return nil, err
		}
		res, err := inspect.Preview(ctx, tgt.Root, o.File, popts)
		if errors.Is(err, storage.ErrNotExist) {
			return nil, fmt.Errorf("--file %s: the fallback folder %s holds no such file (give its key under the folder as "+
				"zbrecover inspect lists it, such as 2025-06-02/part-00000.c000.snappy.parquet)", o.File, tgt.Display()+"/"+o.Prefix)
		}
		if err != nil {
			return nil, err
		}
		return []*inspect.PreviewResult{res}, nil
	}
	tgt, rep, err := runInspect(ctx, f, &o.Target, o.Prefix)
	if err != nil {
		return nil, err
	}
	return previewGroups(ctx, f, tgt, rep, o.Group, popts, "under")
}

// printPreviews renders the previews in the --format asked for (json under -o json).
func printPreviews(o *PreviewOptions, previews []*inspect.PreviewResult) error {
	f := o.F
	format := o.Format
	if format == "" {
		format = "table"
		if f.Global.JSON() {
			format = "json"
		}
	}
	switch format {
	case "json":
		return printJSON(f, PreviewReport{Previews: nonNil(previews)})
	case "csv":
		if len(previews) > 1 {
			return FlagErrorf("--format csv shows one file or group: choose one with --group (groups: %s)", groupList(previews))
		}
		for _, p := range previews {
			if err := p.WriteCSV(f.IO.Out); err != nil {
				return err
			}
		}
		return nil
	}
	for i, p := range previews {
		if i > 0 {
			fmt.Fprintln(f.IO.Out)
		}
		if p.SchemaID != "" && o.File == "" {
			fmt.Fprintf(f.IO.Out, "Schema %s\n", p.SchemaID)
		}
		if err := p.WriteTable(f.IO.Out); err != nil {
			return err
		}
	}
	return nil
}

// previewExit names the files that could not be previewed: exit 5 when there are any.
func previewExit(f *Factory, previews []*inspect.PreviewResult) error {
	failed := 0
	for _, p := range previews {
		for _, pf := range p.Files {
			if pf.Error != "" {
				failed++
				fmt.Fprintf(f.IO.ErrOut, "unreadable: %s: %s\n", textsafe.Quote(pf.Key), textsafe.Escape(pf.Error))
			}
		}
	}
	if failed > 0 {
		return WithCode(ExitPartial, fmt.Sprintf("%s could not be previewed", textfmt.Plural(failed, "file")))
	}
	return nil
}

func nonNil(p []*inspect.PreviewResult) []*inspect.PreviewResult {
	if p == nil {
		return []*inspect.PreviewResult{}
	}
	return p
}

func groupList(previews []*inspect.PreviewResult) string {
	ids := make([]string, len(previews))
	for i, p := range previews {
		ids[i] = p.SchemaID
	}
	return strings.Join(ids, ", ")
}

// parseSize reads a byte count with an optional unit: 1048576, 512KiB, 64MiB, 1GiB, 10MB.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1},
	}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(s), strings.ToUpper(u.suffix)) {
			s, mult = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size too large")
	}
	return n * mult, nil
}

// previewFromReport previews the files of a saved inspect report: no listing, and only the
// files shown are read, each checked unchanged first.
func previewFromReport(ctx context.Context, o *PreviewOptions, popts inspect.PreviewOptions) ([]*inspect.PreviewResult, error) {
	f := o.F
	var (
		data []byte
		err  error
	)
	if o.FromReport == "-" {
		data, err = io.ReadAll(f.IO.In)
	} else {
		data, err = os.ReadFile(o.FromReport)
	}
	if err != nil {
		return nil, fileError("--from-report", o.FromReport, err, "save one with zbrecover inspect TARGET -o json > FILE")
	}
	rep, err := inspect.LoadReport(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("--from-report %s: %w", o.FromReport, err)
	}
	tgt, err := f.openTarget(ctx, &o.Target, tableref.Read)
	if err != nil {
		return nil, err
	}
	if rep.Root != tgt.Root.Location() {
		return nil, fmt.Errorf("--from-report %s is a report on %s, not on %s", o.FromReport, rep.Root, tgt.Root.Location())
	}
	popts.Prefix = rep.Prefix
	if o.File != "" {
		file, ok := rep.FindFile(o.File)
		if !ok {
			return nil, fmt.Errorf("--file %s is not in the report %s", textsafe.Quote(o.File), o.FromReport)
		}
		obj, err := inspect.CheckUnchanged(ctx, tgt.Root, rep.Prefix, *file)
		if err != nil {
			return nil, fmt.Errorf("preview %s: %w", textsafe.Quote(file.Key), err)
		}
		res, err := inspect.PreviewObject(ctx, tgt.Root, obj, popts)
		if err != nil {
			return nil, err
		}
		return []*inspect.PreviewResult{res}, nil
	}
	return previewGroups(ctx, f, tgt, rep, o.Group, popts, "in the report on")
}

// previewGroups previews one schema group of rep (group), or every group.
func previewGroups(ctx context.Context, f *Factory, tgt *tableref.Ref, rep *inspect.Report, group string, popts inspect.PreviewOptions, where string) ([]*inspect.PreviewResult, error) {
	ids := []string{group}
	if group == "" {
		ids = ids[:0]
		for _, g := range rep.Groups {
			ids = append(ids, g.SchemaID)
		}
	}
	if len(ids) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "No readable fallback files %s %s: nothing to preview.\n", where, tgt.Display())
	}
	var out []*inspect.PreviewResult
	for _, id := range ids {
		res, err := inspect.PreviewGroup(ctx, tgt.Root, rep, id, popts)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}
