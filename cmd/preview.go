package cmd

import (
	"context"
	"fmt"
	"github.com/zbrecover/zbrecover/target"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/textsafe"
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
		Long: `Preview shows the first rows of the fallback Parquet files: of one file (--file, its key
under the fallback folder as inspect prints it), of one schema group (--group, a schema id or a
unique prefix of one, as inspect prints it), or of every schema group.

Only the footer and the first row group's byte span of the selected columns are read: 2
requests per file (plus one to learn the size with --file). --max-bytes caps the bytes read
for a row group. Values are shown as Spark reads them: nested values as JSON, decimals exactly,
binary as base64, timestamps in RFC3339 (UTC with "Z"; timestamp_ntz without a zone).

` + targetHelp + `
` + exitCodesHelp,
		Example: `  zbrecover preview s3://bucket/tables/orders
  zbrecover preview s3://bucket/tables/orders --group 3f2a -n 5 --columns id,payload
  zbrecover preview ./table --file 2024/05/part-0001.parquet --format csv`,
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
	fl.StringVar(&o.Prefix, "prefix", inspect.FallbackPrefix, "the fallback folder under the table root")
	fl.StringVar(&o.File, "file", "", "preview this file (key under the fallback folder)")
	fl.StringVar(&o.Group, "group", "", "preview this schema group (schema id or a unique prefix)")
	fl.IntVarP(&o.Rows, "rows", "n", inspect.DefaultPreviewRows, "rows to show per file or group")
	fl.StringSliceVar(&o.Columns, "columns", nil, "show only these top-level columns (comma-separated)")
	fl.StringVar(&o.Format, "format", "", "table, json or csv (default: table, or json with --output json)")
	fl.StringVar(&maxBytes, "max-bytes", "64MiB", "refuse to read a row group span larger than this")
	return c
}

func previewRun(ctx context.Context, o *PreviewOptions) error {
	f := o.F
	popts := inspect.PreviewOptions{Rows: o.Rows, Columns: o.Columns, MaxBytes: o.MaxBytes, Prefix: o.Prefix}
	var previews []*inspect.PreviewResult
	if o.File != "" {
		tgt, err := f.openTarget(ctx, &o.Target, target.Read)
		if err != nil {
			return err
		}
		res, err := inspect.Preview(ctx, tgt.Root, o.File, popts)
		if err != nil {
			return err
		}
		previews = append(previews, res)
	} else {
		tgt, rep, err := runInspect(ctx, f, &o.Target, o.Prefix)
		if err != nil {
			return err
		}
		ids := []string{o.Group}
		if o.Group == "" {
			ids = ids[:0]
			for _, g := range rep.Groups {
				ids = append(ids, g.SchemaID)
			}
		}
		if len(ids) == 0 {
			fmt.Fprintf(f.IO.ErrOut, "No readable fallback files under %s: nothing to preview.\n", tgt.Display())
		}
		for _, id := range ids {
			res, err := inspect.PreviewGroup(ctx, tgt.Root, rep, id, popts)
			if err != nil {
				return err
			}
			previews = append(previews, res)
		}
	}

	format := o.Format
	if format == "" {
		format = "table"
		if f.Global.JSON() {
			format = "json"
		}
	}
	switch format {
	case "json":
		if err := printJSON(f, PreviewReport{Previews: nonNil(previews)}); err != nil {
			return err
		}
	case "csv":
		if len(previews) > 1 {
			return FlagErrorf("--format csv shows one file or group: choose one with --group (groups: %s)", groupList(previews))
		}
		for _, p := range previews {
			if err := p.WriteCSV(f.IO.Out); err != nil {
				return err
			}
		}
	default:
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
	}
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
		return WithCode(ExitPartial, fmt.Sprintf("%d files could not be previewed", failed))
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
