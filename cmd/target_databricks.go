package cmd

import (
	"github.com/spf13/cobra"
	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/tableref"
)

// DatabricksOptions are the global flags of the Databricks workspace connection, and the
// connection itself once a command needs it (created lazily, shared by the command's steps).
type DatabricksOptions struct {
	Profile     string
	WarehouseID string
	HTTPPath    string
	StorageAuth string

	ws *tableref.Workspace
}

// Databricks returns f's Databricks connection options. The first call (when the command tree
// is built) creates them.
func (f *Factory) Databricks() *DatabricksOptions {
	if f.databricks == nil {
		f.databricks = &DatabricksOptions{}
	}
	return f.databricks
}

// wireDatabricks adds the Databricks global flags to root and installs the table resolver in f.
func wireDatabricks(f *Factory, root *cobra.Command) {
	d := f.Databricks()
	pf := root.PersistentFlags()
	pf.StringVarP(&d.Profile, "profile", "p", "", "~/.databrickscfg profile for the Databricks workspace (default: DATABRICKS_CONFIG_PROFILE, or DEFAULT)")
	pf.StringVar(&d.WarehouseID, "warehouse-id", "", "SQL warehouse id (default: DATABRICKS_WAREHOUSE_ID)")
	pf.StringVar(&d.HTTPPath, "http-path", "", "SQL warehouse HTTP path, instead of --warehouse-id (default: DATABRICKS_HTTP_PATH)")
	pf.StringVar(&d.StorageAuth, "storage-auth", "auto", "storage credentials for a --table target: auto, vended (Unity Catalog) or default (the store's chain)")
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(c, args); err != nil {
				return err
			}
		}
		return d.checkStorageAuth(c, args)
	}
}

// checkStorageAuth validates --storage-auth before any work starts, whatever the target: an
// unknown value is a usage error, and so is vended where no table is named (a storage URL,
// or ls), since Unity Catalog vends credentials per table.
func (d *DatabricksOptions) checkStorageAuth(c *cobra.Command, args []string) error {
	mode, err := databricks.ParseStorageAuth(d.StorageAuth)
	if err != nil {
		return FlagErrorf("%v", err)
	}
	if mode != databricks.StorageAuthVended {
		return nil
	}
	table := c.Flags().Lookup("table")
	if table == nil && c.Name() != "ls" {
		return nil // the command reads no storage
	}
	if table != nil && table.Value.String() != "" || len(args) > 0 && IsTableName(args[0]) {
		return nil
	}
	return FlagErrorf("--storage-auth vended needs a table name (catalog.schema.table): Unity Catalog vends " +
		"credentials per table, and a storage URL is read with the store's own credentials")
}

// workspace returns the run's Databricks connection, nil when f has none (NoDatabricks).
func (f *Factory) workspace() *tableref.Workspace {
	if f.NoDatabricks {
		return nil
	}
	d := f.Databricks()
	if d.ws == nil {
		d.ws = tableref.NewWorkspace(databricks.Options{
			Profile:     d.Profile,
			WarehouseID: d.WarehouseID,
			HTTPPath:    d.HTTPPath,
			Version:     Version,
			Log:         f.Logger,
			// Files API requests start at --concurrency in flight; the adaptive limit follows
			// the workspace's throttling from there.
			FilesConcurrency: f.Global.Concurrency,
		})
	}
	return d.ws
}

// Close ends the warehouse sessions, if any were opened.
func (d *DatabricksOptions) Close() error { return d.ws.Close() }
