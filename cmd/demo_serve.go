//go:build demo

package cmd

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/internal/fake/workspace"
)

// DemoServeOptions are the inputs of `zbrecover demo serve`.
type DemoServeOptions struct {
	F              *Factory
	Tables         []string // c.s.t=ROOT, managed
	ExternalTables []string // c.s.t=ROOT, external
	TablesFrom     []string // directories or files of tables (workspace.ReadTableSpecs)
	Volumes        []string // c.s.v
	Listen         string
	Log            string
	Token          string
	WarehouseID    string
	Faults         string // a control document (workspace.Control) applied at start
	// Zerobus are tables given a parking Zerobus writer at start (--zerobus), each flushing
	// every ZerobusInterval.
	Zerobus         []string
	ZerobusInterval time.Duration
	// Ready, when set, is called with the workspace once it serves (tests).
	Ready func(*workspace.Workspace)
}

// newCmdDemoServe returns `zbrecover demo serve`.
func newCmdDemoServe(f *Factory) *cobra.Command {
	o := &DemoServeOptions{F: f}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve a local Databricks workspace (SQL warehouse, Unity Catalog, Files API) until Ctrl-C",
		Long: `Serve starts a local Databricks workspace on 127.0.0.1 and prints the settings to export: a
SQL warehouse backed by DuckDB, Unity Catalog (tables, volumes, permissions, temporary
credentials), the Files API and the SQL warehouses API. Every zbrecover command, and the
Databricks SDKs, can run against it. It serves until Ctrl-C, leaving nothing running.

--table c.s.t=ROOT registers the Delta table at ROOT as a MANAGED table (path reads inside it
are refused: LOCATION_OVERLAP), --external-table as an EXTERNAL one; each schema gets the
volume <catalog>.<schema>.staging. --zerobus c.s.t keeps a Zerobus writer committing to a
table, parking its records as fallback files while the table's schema is broken (a control
call or a schedule breaks and fixes it). --faults FILE makes it hostile from the start; the
document and the control endpoints are in docs/runbook.md ("zbrecover demo serve").

` + exitHelp(),
		Example: `  # Serve one table; export the printed settings in another terminal
  $ zbrecover demo serve --table main.sales.orders=./orders
  # Many tables (<catalog>/<schema>/<table>/ folders), with a statement log
  $ zbrecover demo serve --tables-from ./tables --log statements.jsonl
  # A hostile workspace, faults from the start
  $ zbrecover demo serve --table main.sales.orders=./orders --faults faults.json
  # Zerobus writing; break the schema from another terminal, and let zbrecover watch recover
  $ zbrecover demo serve --table main.sales.orders=./orders --zerobus main.sales.orders
  $ curl -H "Authorization: Bearer $DATABRICKS_TOKEN" -d '{"table":"main.sales.orders","action":"break"}' $DATABRICKS_HOST/api/2.0/fake/schema`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, _ []string) error { return demoServe(c.Context(), o) },
	}
	fl := c.Flags()
	fl.StringArrayVar(&o.Tables, "table", nil, "register the Delta table at ROOT as the managed table `c.s.t=ROOT` (repeatable)")
	fl.StringArrayVar(&o.ExternalTables, "external-table", nil, "register the Delta table at ROOT as the external table `c.s.t=ROOT` (repeatable)")
	fl.StringArrayVar(&o.TablesFrom, "tables-from", nil, tablesFromHelp)
	fl.StringArrayVar(&o.Volumes, "volume", nil, "create the volume `c.s.v` (repeatable)")
	fl.StringVar(&o.Listen, "listen", "127.0.0.1:0", "address to listen on")
	fl.StringVar(&o.Log, "log", "", "append one JSON line per statement to `FILE`")
	fl.StringVar(&o.Token, "token", "", "personal access token to accept (default: a new random one)")
	fl.StringVar(&o.WarehouseID, "warehouse-id", "local", "SQL warehouse id")
	fl.StringVar(&o.Faults, "faults", "", "apply the JSON control document `FILE` (faults, unknowns, Zerobus writers, schema changes, triggers) at start")
	fl.StringArrayVar(&o.Zerobus, "zerobus", nil, "keep a Zerobus writer committing to the table `c.s.t`, parking its records while the table's schema is broken (repeatable)")
	durationVar(fl, &o.ZerobusInterval, "zerobus-interval", 100*time.Millisecond, "with --zerobus: flush every `DURATION`")
	return c
}

func demoServe(ctx context.Context, o *DemoServeOptions) error {
	if !strings.HasPrefix(o.Listen, "127.0.0.1:") && !strings.HasPrefix(o.Listen, "localhost:") {
		return FlagErrorf("--listen must be a 127.0.0.1 address, not %q: the local workspace has no TLS", o.Listen)
	}
	type reg struct {
		name, root string
		managed    bool
	}
	var regs []reg
	for i, spec := range append(append([]string(nil), o.Tables...), o.ExternalTables...) {
		name, root, ok := strings.Cut(spec, "=")
		if !ok || strings.Count(name, ".") != 2 || root == "" {
			return FlagErrorf("a table is catalog.schema.table=ROOT, not %q", spec)
		}
		regs = append(regs, reg{name, root, i < len(o.Tables)})
	}
	var control *workspace.Control
	if o.Faults != "" {
		b, err := os.ReadFile(o.Faults)
		if err != nil {
			return err
		}
		c, err := workspace.DecodeControl(b)
		if err != nil {
			return fmt.Errorf("--faults %s: %w", o.Faults, err)
		}
		control = &c
	}
	opts := workspace.Options{Addr: o.Listen, Token: o.Token, WarehouseID: o.WarehouseID, Storage: demoServeStorage(o.F)}
	var logFile *os.File
	if o.Log != "" {
		var err error
		if logFile, err = os.OpenFile(o.Log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
			return err
		}
		defer logFile.Close()
		opts.StatementLog = logFile
	}
	ws, err := workspace.Start(opts)
	if err != nil {
		return err
	}
	defer ws.Close()
	for _, r := range regs {
		if err := ws.RegisterTable(ctx, r.name, r.root, r.managed); err != nil {
			return err
		}
	}
	if err := registerTablesFrom(ctx, ws, o.TablesFrom, o.F.IO.ErrOut); err != nil {
		return err
	}
	for _, v := range o.Volumes {
		if _, err := ws.CreateVolume(v); err != nil {
			return err
		}
	}
	if control != nil {
		if err := ws.Apply(ctx, *control); err != nil {
			return fmt.Errorf("--faults %s: %w", o.Faults, err)
		}
	}
	for _, table := range o.Zerobus {
		if _, err := ws.StartZerobus(workspace.ZerobusSpec{Table: table, IntervalMS: max(o.ZerobusInterval.Milliseconds(), 1), Park: true}); err != nil {
			return fmt.Errorf("--zerobus %s: %w", table, err)
		}
	}
	out := o.F.IO.Out
	for _, kv := range ws.Env() {
		fmt.Fprintf(out, "export %s\n", kv)
	}
	if fl, ok := out.(interface{ Sync() error }); ok {
		_ = fl.Sync()
	}
	errOut := o.F.IO.ErrOut
	fmt.Fprintf(errOut, "local workspace serving on %s (SQL warehouse %s at %s)\n", ws.URL(), ws.WarehouseID(), ws.HTTPPath())
	for _, r := range regs {
		kind := "managed"
		if !r.managed {
			kind = "external"
		}
		fmt.Fprintf(errOut, "  table %s (%s) at %s\n", r.name, kind, r.root)
	}
	if control != nil {
		fmt.Fprintf(errOut, "  applied %s: %d faults, %d API faults, %d triggers, %d Zerobus writers\n", o.Faults,
			len(control.Faults), len(control.APIFaults), len(control.Triggers), len(control.Zerobus))
	}
	fmt.Fprintln(errOut, "press Ctrl-C to stop")
	if o.Ready != nil {
		o.Ready(ws)
	}
	<-ctx.Done()
	if err := ws.Close(); err != nil {
		fmt.Fprintf(errOut, "closing the workspace: %v\n", err)
	}
	fmt.Fprintln(errOut, "local workspace stopped")
	return nil
}
