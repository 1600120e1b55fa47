package cmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/doctor"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/textsafe"
	"github.com/zbrecover/zbrecover/place"
	"github.com/zbrecover/zbrecover/recovery"
)

// DoctorOptions are the inputs of `zbrecover doctor`.
type DoctorOptions struct {
	F            *Factory
	Target       TargetOptions
	Prefix       string
	StageTo      string
	NoWriteProbe bool
}

// NewCmdDoctor returns `zbrecover doctor`. runF replaces the run function in tests.
func NewCmdDoctor(f *Factory, runF func(context.Context, *DoctorOptions) error) *cobra.Command {
	o := &DoctorOptions{F: f}
	c := &cobra.Command{
		Use:   "doctor TARGET",
		Short: "Check, before a recovery, everything inspect, reload, verify and cleanup need",
		Long: `Doctor checks in one pass what a recovery of the table needs: the workspace identity, the SQL
warehouse, the table in Unity Catalog, its features (row tracking, which undo needs), your
privileges on it, the --stage-to volume, vended credentials, reading the fallback folder,
whether the warehouse may read it by path (LOCATION_OVERLAP), commit tags, and delete access.
Each check is ok, n/a (not needed, or not run), warn or fail, with what to do; then each step
(inspect, reload, verify, cleanup, undo) is ready, blocked or unknown. It writes one probe
object of its own under _zerobus/ and deletes it (--no-write-probe skips that); everything
else only reads.

Give the --stage-to reload will use, so that staging is checked too.

TARGET is catalog.schema.table, or the table's storage root (s3://, gs://, abfss://, wasbs://,
file:// or a local directory).

` + exitHelp(exitLine{ExitFailure, "a check failed (the report says what to do), or an error"}),
		Example: `  # Before a recovery
  $ zbrecover doctor main.sales.orders
  # With the volume reload will stage to
  $ zbrecover doctor main.sales.orders --stage-to /Volumes/main/sales/staging/orders
  # Read-only, as JSON: no delete probe
  $ zbrecover doctor main.sales.orders --no-write-probe -o json`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := parseTarget(&o.Target, args); err != nil {
				return err
			}
			if o.Target.Table == "" {
				return FlagErrorf("doctor needs the table's name: give catalog.schema.table, or --table with --root")
			}
			if o.StageTo != "" {
				if _, err := recovery.ParsePlace(place.Staging, o.StageTo); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(c.Context(), o)
			}
			return doctorRun(c.Context(), o)
		},
	}
	addTargetFlags(c, &o.Target)
	fl := c.Flags()
	fl.StringVar(&o.Prefix, "prefix", fallback.Prefix, "the fallback folder under the table root")
	fl.StringVar(&o.StageTo, "stage-to", "", "the --stage-to reload will use: check READ VOLUME and WRITE VOLUME on that volume")
	fl.BoolVar(&o.NoWriteProbe, "no-write-probe", false, "skip the delete check (it writes and deletes one probe object of its own under _zerobus/)")
	return c
}

func doctorRun(ctx context.Context, o *DoctorOptions) error {
	f := o.F
	r, err := f.resolver()
	if err != nil {
		return err
	}
	rep := doctor.Run(ctx, doctor.Options{Spec: o.Target, Prefix: o.Prefix, StageTo: o.StageTo, NoWriteProbe: o.NoWriteProbe, Resolver: r})
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.Global.JSON() {
		if err := printJSON(f, rep); err != nil {
			return err
		}
	} else if err := writeDoctorText(f.IO.Out, rep); err != nil {
		return err
	}
	if rep.OK {
		return nil
	}
	var blocked []string
	for _, s := range rep.Steps {
		if s.Status == "blocked" {
			blocked = append(blocked, s.Step)
		}
	}
	return WithCode(ExitFailure, fmt.Sprintf("doctor: failed: %s; not ready: %s",
		strings.Join(rep.Failed(), ", "), strings.Join(blocked, ", ")))
}

// writeDoctorText renders the report as aligned text, every value escaped.
func writeDoctorText(out io.Writer, rep *doctor.Report) error {
	fmt.Fprintf(out, "Doctor for %s\n", textsafe.Escape(rep.Table))
	if rep.Root != "" {
		fmt.Fprintf(out, "  root       %s\n", textsafe.Escape(rep.Root))
	}
	if rep.Host != "" {
		fmt.Fprintf(out, "  workspace  %s\n", textsafe.Escape(rep.Host))
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
	for _, c := range rep.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.ID, c.Status.Text(), textsafe.Escape(c.Detail))
		for i, line := range strings.Split(c.Fix, "\n") {
			if c.Fix == "" {
				break
			}
			label := "     "
			if i == 0 {
				label = "fix: "
			}
			fmt.Fprintf(tw, "\t\t%s%s\n", label, textsafe.Escape(line))
		}
	}
	fmt.Fprintln(tw) // a line without cells: the steps are aligned on their own
	fmt.Fprintln(tw, "STEP\tSTATUS\tNEEDS")
	for _, s := range rep.Steps {
		var notes []string
		if len(s.Failed) > 0 {
			notes = append(notes, "failed: "+strings.Join(s.Failed, ", "))
		}
		if len(s.Unknown) > 0 {
			notes = append(notes, "not checked: "+strings.Join(s.Unknown, ", "))
		}
		needs := strings.Join(s.Needs, ", ")
		if len(notes) > 0 {
			needs += " (" + strings.Join(notes, "; ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Step, s.Status, needs)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case !rep.OK:
	case slices.ContainsFunc(rep.Steps, func(s doctor.Step) bool { return !s.Ready }):
		_, err := fmt.Fprintln(out, "\nNo check failed; some were not run.")
		return err
	default:
		_, err := fmt.Fprintln(out, "\nEvery step's checks pass.")
		return err
	}
	return nil
}
