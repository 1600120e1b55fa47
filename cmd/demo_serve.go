//go:build demo

package cmd

import (
	"context"
	"fmt"
	"os"
	"strings"

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
	// Ready, when set, is called with the workspace once it serves (tests).
	Ready func(*workspace.Workspace)
}

// newCmdDemoServe returns `zbrecover demo serve`.
func newCmdDemoServe(f *Factory) *cobra.Command {
	o := &DemoServeOptions{F: f}
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve a local Databricks workspace (SQL warehouse, Unity Catalog, Files API) until Ctrl-C",
		Long: `Serve starts a local Databricks workspace on 127.0.0.1: a SQL warehouse (the Thrift
endpoint the SQL driver speaks, backed by DuckDB), the Unity Catalog tables and temporary
table credentials APIs, the Files API for volumes (/Volumes/<catalog>/<schema>/<volume>/…),
the SQL warehouses API (POST …/stop makes the warehouse refuse every statement, as one that
cannot start does, until POST …/start), SCIM Me and Unity Catalog's effective permissions (the
workspace user holds what a recovery needs on each registered table and volume), all on one
port. It prints the settings to export, so that every
zbrecover command (and the Databricks SDKs) can run against it, and serves until Ctrl-C or
SIGTERM, leaving nothing running.

--table c.s.t=ROOT registers the Delta table at ROOT (a local path or file:// URL) as a
MANAGED table: its schema comes from its Delta log, ROOT is its managed storage, so path
reads inside it are refused (LOCATION_OVERLAP) as Unity Catalog may refuse them, and the
warehouse's commits to it continue its Delta log. --external-table registers an EXTERNAL
table, whose root may be read by path. Each schema of a registered table gets the volume
<catalog>.<schema>.staging. The rows already in a registered table's data files are not
loaded: in the warehouse the table starts empty. --tables-from registers many tables at once
(a scan of hundreds can be tried): a directory whose <catalog>/<schema>/<table>/ folders are
table roots, or a file of c.s.t=ROOT lines. A ROOT may be a cloud URL, read with the
global storage flags (--s3-endpoint, …) and the store's own credentials.

--log FILE appends one JSON line per statement: its text, outcome, error class, SQLSTATE
and rows.

--faults FILE makes the workspace hostile from the start: a JSON document (every part
optional; unknown member names are errors, and nothing applies when a part is wrong):

  {
    "unknowns":   {"path_access": "allowed", "refuse_user_metadata": true,
                   "history_user_name": "0b5e…", "glob_paths": false, "schema_auto_merge": true},
    "faults":     [{"method": "ExecuteStatement", "match": "(?i)^COPY INTO", "skip": 0,
                    "times": 1, "percent": 0, "seed": 0, "action": "commit_then_error",
                    "error": {"class": "…", "sqlstate": "…", "message": "…"},
                    "http_status": 503, "retry_after": "1", "delay_ms": 0}],
    "api_faults": [{"method": "PUT", "path": "^/api/2.0/fs/files/", "percent": 20,
                    "times": -1, "action": "http", "http_status": 429, "retry_after": "1"}],
    "latency":    {"files_ms": 20, "unity_catalog_ms": 0},
    "zerobus":    [{"table": "main.sales.orders", "interval_ms": 1, "rows": 1}],
    "triggers":   [{"match": "(?i)^COPY INTO", "times": -1,
                    "lookalike": {"operation": "COPY INTO", "user_name": "", "user_metadata": ""}},
                   {"match": "(?i)^DESCRIBE HISTORY", "table": "main.sales.orders",
                    "zerobus_versions": 1000, "times": -1}]
  }

A fault's action is error, http, drop_request (cut before the warehouse: nothing runs),
drop_response (runs, the answer is lost), delay (answered pending, polled), commit_then_error
(commits, then DELTA_POST_COMMIT_HOOK_FAILED or the given error) or commit_then_bad_conn
(commits, then Invalid SessionHandle: the driver runs it again on a new session). "times" 0
fires once and a negative number always; "percent" (0–100, 0 every match) fires on a share
of the matches picked reproducibly from "seed". An API fault (the Files API, Unity Catalog,
the warehouses API) is http, delay, drop_request or drop_response.

While it serves, the same parts can be changed with the token, under /api/2.0/fake/:
GET|POST|DELETE faults, GET|POST|DELETE api-faults (lists show "fired" and "seen"), GET|PATCH
unknowns (a partial document), GET|PUT latency, GET|POST zerobus and DELETE zerobus/<id>,
POST lookalike ({"table": …, "operation": …, "rows": N, "user_name": …, "user_metadata": …},
committed now), GET|POST|DELETE triggers, and POST apply (a whole document).
` + exitHelp(),
		Example: `  zbrecover demo serve --table main.sales.orders=./orders
  eval "$(zbrecover demo serve --table main.sales.orders=./orders | head -3)"   # in another shell: copy the exports`,
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
	fl.StringVar(&o.Faults, "faults", "", "apply the JSON control document `FILE` (faults, unknowns, Zerobus writers, triggers) at start")
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
