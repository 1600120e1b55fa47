package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/inspect"
)

// InspectOptions are the inputs of `zbrecover inspect`.
type InspectOptions struct {
	F      *Factory
	Target TargetOptions
	// Prefix is the fallback folder under the table root.
	Prefix string
}

// NewCmdInspect returns `zbrecover inspect`. runF replaces the run function in tests.
func NewCmdInspect(f *Factory, runF func(context.Context, *InspectOptions) error) *cobra.Command {
	o := &InspectOptions{F: f}
	c := &cobra.Command{
		Use:   "inspect [TARGET]",
		Short: "List the fallback files, read their footers and group them by schema",
		Long: `Inspect lists the Parquet files Zerobus parked under the table root's fallback folder
(` + inspect.FallbackPrefix + `), reads each file's footer with one ranged
request (no download), and reports files, rows and bytes, the schema groups (files that share
a schema, with their Spark types), and the files that cannot be read.

Names and folders starting with "_" or "." are hidden (as Spark treats them) and, like other
non-Parquet objects, are counted but not read. Inspect changes nothing.

` + targetHelp + `

With --output json the report is a JSON document: root, files, groups, totals.
` + exitCodesHelp + `

Inspect exits with 5 when some files are unreadable (the report lists them with the reason).`,
		Example: `  zbrecover inspect s3://bucket/tables/orders
  zbrecover inspect abfss://lake@acct.dfs.core.windows.net/orders --output json
  zbrecover inspect ./local/table --concurrency 16`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.Target.resolve(args); err != nil {
				return err
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return inspectRun(c.Context(), o)
		},
	}
	addTargetFlags(c, &o.Target)
	c.Flags().StringVar(&o.Prefix, "prefix", inspect.FallbackPrefix, "the fallback folder under the table root")
	return c
}

// runInspect opens the target and inspects it, with a progress bar on a terminal.
func runInspect(ctx context.Context, f *Factory, t *TargetOptions, prefix string) (*ResolvedTarget, *inspect.Report, error) {
	tgt, err := f.openTarget(ctx, t, "READ")
	if err != nil {
		return nil, nil, err
	}
	bar := newFooterProgress(f, "footers")
	rep, err := inspect.Run(ctx, tgt.Root, inspect.Options{
		Concurrency: f.Global.Concurrency,
		Prefix:      prefix,
		Progress:    bar.update,
	})
	bar.done(err == nil)
	if err != nil {
		return nil, nil, fmt.Errorf("inspect %s: %w", tgt.RootURL, err)
	}
	f.Logger.Info("inspected", "root", tgt.RootURL, "files", rep.Totals.Files, "unreadable", rep.Totals.Unreadable,
		"groups", rep.Totals.Groups)
	return tgt, rep, nil
}

func inspectRun(ctx context.Context, o *InspectOptions) error {
	f := o.F
	_, rep, err := runInspect(ctx, f, &o.Target, o.Prefix)
	if err != nil {
		return err
	}
	if f.Global.JSON() {
		err = rep.WriteJSON(f.IO.Out)
	} else {
		err = rep.WriteText(f.IO.Out)
	}
	if err != nil {
		return err
	}
	if n := rep.Totals.Unreadable; n > 0 {
		return WithCode(ExitPartial, fmt.Sprintf("%d of %d fallback files are unreadable (listed in the report)", n, rep.Totals.Files))
	}
	return nil
}
