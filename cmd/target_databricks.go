package cmd

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/spf13/cobra"
	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/storage"
)

// DatabricksOptions are the global flags of the Databricks workspace connection, and the
// connection itself once a command needs it (created lazily, shared by the command's steps).
type DatabricksOptions struct {
	Profile     string
	WarehouseID string
	HTTPPath    string
	StorageAuth string

	mu     sync.Mutex
	client *databricks.Client
	wh     *databricks.Warehouse
	tables map[string]*databricks.TableInfo
	// creds holds one vending provider per table id and operation, so that every open of
	// the same target in a run shares the credentials already vended.
	creds map[string]storage.CredentialProvider
}

// Databricks returns f's Databricks connection options. The first call (when the command tree
// is built) creates them.
func (f *Factory) Databricks() *DatabricksOptions {
	if f.databricks == nil {
		f.databricks = &DatabricksOptions{}
	}
	return f.databricks
}

const databricksFlagsHelp = `Databricks: the workspace and identity follow the Databricks unified authentication
(DATABRICKS_HOST with DATABRICKS_TOKEN, DATABRICKS_CLIENT_ID/DATABRICKS_CLIENT_SECRET, ARM_* for
Azure service principals, or a ~/.databrickscfg profile chosen with --profile or
DATABRICKS_CONFIG_PROFILE). The SQL warehouse is --warehouse-id, --http-path,
DATABRICKS_WAREHOUSE_ID or DATABRICKS_HTTP_PATH.

--storage-auth decides how a table's storage is reached: "vended" uses the temporary
credentials Unity Catalog issues for the table (READ for inspect and preview, READ_WRITE for
cleanup), "default" the store's own credential chain, and "auto" (the default) vended
credentials when a table name is given and the environment has no credentials for the table's
store (AWS_ACCESS_KEY_ID, AWS_PROFILE, AWS web identity or container credentials, or
~/.aws/credentials for s3; GOOGLE_APPLICATION_CREDENTIALS or gcloud application default
credentials for gs; AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_KEY, AZURE_STORAGE_CONNECTION_STRING,
AZURE_CLIENT_ID or a SAS in the URL for Azure).`

// wireDatabricks adds the Databricks global flags to root and installs the table resolver in f.
func wireDatabricks(f *Factory, root *cobra.Command) {
	d := f.Databricks()
	pf := root.PersistentFlags()
	pf.StringVar(&d.Profile, "profile", "", "~/.databrickscfg profile for the Databricks workspace (default: DATABRICKS_CONFIG_PROFILE, or DEFAULT)")
	pf.StringVar(&d.WarehouseID, "warehouse-id", "", "SQL warehouse id (default: DATABRICKS_WAREHOUSE_ID)")
	pf.StringVar(&d.HTTPPath, "http-path", "", "SQL warehouse HTTP path, instead of --warehouse-id (default: DATABRICKS_HTTP_PATH)")
	pf.StringVar(&d.StorageAuth, "storage-auth", "auto", "storage credentials for a --table target: auto, vended (Unity Catalog) or default (the store's chain)")
	f.ResolveTable = resolveDatabricksTable
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

// Client returns the workspace client, creating it on first use.
func (d *DatabricksOptions) Client(ctx context.Context, f *Factory) (*databricks.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.client != nil {
		return d.client, nil
	}
	c, err := databricks.NewClient(ctx, databricks.Options{
		Profile:     d.Profile,
		WarehouseID: d.WarehouseID,
		HTTPPath:    d.HTTPPath,
		Version:     Version,
		Log:         f.Logger,
	})
	if err != nil {
		return nil, err
	}
	f.Logger.Info("databricks workspace", "config", c.Describe(), "auth", c.AuthType())
	d.client = c
	return c, nil
}

// Table returns what Unity Catalog says about a table, looked up once per run.
func (d *DatabricksOptions) Table(ctx context.Context, f *Factory, name string) (*databricks.TableInfo, error) {
	c, err := d.Client(ctx, f)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	ti, ok := d.tables[name]
	d.mu.Unlock()
	if ok {
		return ti, nil
	}
	ti, err = c.Table(ctx, name)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.tables == nil {
		d.tables = map[string]*databricks.TableInfo{}
	}
	d.tables[name] = ti
	d.mu.Unlock()
	return ti, nil
}

// credentials returns the run's credential provider for the table and operation, creating it
// on first use.
func (d *DatabricksOptions) credentials(c *databricks.Client, tableID string, op databricks.Operation) storage.CredentialProvider {
	d.mu.Lock()
	defer d.mu.Unlock()
	key := tableID + "/" + string(op)
	if p, ok := d.creds[key]; ok {
		return p
	}
	if d.creds == nil {
		d.creds = map[string]storage.CredentialProvider{}
	}
	p := c.CredentialProvider(tableID, op)
	d.creds[key] = p
	return p
}

// Warehouse returns the SQL warehouse session pool, opening it on first use.
func (d *DatabricksOptions) Warehouse(ctx context.Context, f *Factory) (*databricks.Warehouse, error) {
	c, err := d.Client(ctx, f)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wh != nil {
		return d.wh, nil
	}
	w, err := c.Warehouse(ctx)
	if err != nil {
		return nil, err
	}
	d.wh = w
	return w, nil
}

// Close ends the warehouse sessions, if any were opened.
func (d *DatabricksOptions) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wh == nil {
		return nil
	}
	err := d.wh.Close()
	d.wh = nil
	return err
}

// resolveDatabricksTable is the Factory's TableResolver: it looks the table up in Unity
// Catalog, takes its storage location (or --root), chooses the storage credentials by
// --storage-auth, and opens the root. access is "READ" or "READ_WRITE".
func resolveDatabricksTable(ctx context.Context, f *Factory, t *TargetOptions, access string) (*ResolvedTarget, error) {
	d := f.Databricks()
	mode, err := databricks.ParseStorageAuth(d.StorageAuth)
	if err != nil {
		return nil, FlagErrorf("%v", err)
	}
	op := databricks.OperationRead
	switch access {
	case "", "READ":
	case "READ_WRITE":
		op = databricks.OperationReadWrite
	default:
		return nil, fmt.Errorf("table %s: unknown access %q", t.Table, access)
	}
	ti, err := d.Table(ctx, f, t.Table)
	if err != nil {
		return nil, err
	}
	if err := ti.CheckRecoverable(); err != nil {
		return nil, err
	}
	rootURL := ti.StorageLocation
	if t.Root != "" {
		rootURL = t.Root
	}
	loc, err := storage.Parse(rootURL)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", ti.Name, err)
	}
	vend, why, err := databricks.ChooseStorageAuth(mode, true, loc, databricks.OSEnv())
	if err != nil {
		return nil, FlagErrorf("%v", err)
	}
	f.Logger.Info("storage credentials", "table", ti.Name.String(), "root", loc.String(), "choice", why)
	cfg := f.Global.StorageConfig()
	if vend {
		if err := databricks.CheckRootInside(ti.StorageLocation, loc); err != nil {
			return nil, fmt.Errorf("table %s: %w", ti.Name, err)
		}
		c, err := d.Client(ctx, f)
		if err != nil {
			return nil, err
		}
		// Vend once now, so that a refusal is reported before any listing starts.
		get := d.credentials(c, ti.TableID, op)
		if _, err := get(ctx); err != nil {
			if errors.Is(err, databricks.ErrPermissionDenied) && mode == databricks.StorageAuthAuto {
				return nil, fmt.Errorf("table %s: %w (no %s credentials were found in the environment, so Unity Catalog vending was tried)", ti.Name, err, loc.Scheme)
			}
			return nil, fmt.Errorf("table %s: %w", ti.Name, err)
		}
		cfg.Credentials = get
	}
	b, err := f.OpenStorageWith(ctx, rootURL, cfg)
	if err != nil {
		return nil, err
	}
	return &ResolvedTarget{Table: ti.Name.String(), Root: b, RootURL: b.Location()}, nil
}
