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
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/textsafe"
	"github.com/zbrecover/zbrecover/place"
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
		Long: `Doctor checks in one pass what a recovery of the table needs, and reports each check as
ok, warn or fail, with what to do for a failure:

  identity            who the credentials are (SCIM Me), on which host, with which
                      authentication type and profile
  warehouse           the SQL warehouse: its state in the SQL warehouses API, and that a
                      trivial query (SELECT current_user()) answers
  table               the table exists in Unity Catalog and is a managed Delta table
  table_features      row tracking, deletion vectors and change data feed on the table; with
                      row tracking off, a warning: what undo then cannot do, and the cost of
                      enabling it on a table Zerobus writes to (zbrecover never enables it)
  privileges          Unity Catalog's effective permissions: USE CATALOG, USE SCHEMA, SELECT
                      and MODIFY on the table (reload, verify), and with --stage-to a volume,
                      READ VOLUME and WRITE VOLUME on it; privileges held directly, through a
                      group or through account users count, and owning the table covers it;
                      when the permissions cannot be read, what is knowable is reported
  vended_credentials  whether Unity Catalog vends temporary credentials for the table's
                      storage, and whether they are read-only (as it documents for managed
                      tables); a failure only when the storage is read with them
  fallback_read       the fallback folder lists, and one footer reads
  path_access         whether the warehouse may read the fallback folder by path: one
                      COPY INTO … VALIDATE ALL of one file, which writes nothing; Unity Catalog
                      refuses paths inside a managed table's storage (LOCATION_OVERLAP), and
                      reload then needs --stage-to /Volumes/…: doctor prints the command
  delete              whether cleanup may delete in the table's storage

The delete check writes one object of its own, <root>/_zerobus/.zbrecover-doctor-probe-<random>
(create-only: it never replaces an object), and deletes exactly that object, at the version the
write returned; no fallback file or other object is written or deleted. --no-write-probe skips
it (whether cleanup may delete is then unknown). Every other check only reads.

Then it says, for each step (inspect, reload, verify, cleanup, undo), which checks it needs and
whether they passed. Give the same --stage-to as the reload will, so that staging is checked.

` + targetHelp + `
` + exitHelp(exitLine{ExitFailure, "a check failed (each failed check says what to do), or an error"}) + `

Doctor exits 0 when no check failed (warnings allowed; a check that was not run, such as the
delete check under --no-write-probe, leaves its step "unknown"), 1 when a check failed (the
report is printed first, the failed checks named on stderr), 2 on a usage error.`,
		Example: `  zbrecover doctor main.sales.orders
  zbrecover doctor main.sales.orders --stage-to /Volumes/main/sales/staging/zbrecover-orders
  zbrecover doctor --table main.sales.orders --root s3://lake/orders --no-write-probe -o json`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := parseTarget(&o.Target, args); err != nil {
				return err
			}
			if o.Target.Table == "" {
				return FlagErrorf("doctor needs the table's name: give catalog.schema.table, or --table with --root")
			}
			if o.StageTo != "" {
				if _, err := parsePlace(place.Staging, o.StageTo); err != nil {
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
	fl.StringVar(&o.Prefix, "prefix", inspect.FallbackPrefix, "the fallback folder under the table root")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.ID, c.Status, textsafe.Escape(c.Detail))
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
