package tableref

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/storage"
)

// Workspace is a run's Databricks connection, opened lazily and shared by the run's steps: the
// workspace client, the SQL warehouse sessions, each table's Unity Catalog entry (looked up
// once) and each table's vended credentials (vended once per table and access).
type Workspace struct {
	opts databricks.Options
	log  *slog.Logger

	mu     sync.Mutex
	client *databricks.Client
	wh     *databricks.Warehouse
	tables map[string]*databricks.TableInfo
	creds  map[string]storage.CredentialProvider
}

// NewWorkspace returns a Workspace that connects with opts on first use.
func NewWorkspace(opts databricks.Options) *Workspace {
	l := opts.Log
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	return &Workspace{opts: opts, log: l}
}

// Client returns the workspace client, creating it on first use.
func (w *Workspace) Client(ctx context.Context) (*databricks.Client, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.client != nil {
		return w.client, nil
	}
	c, err := databricks.NewClient(ctx, w.opts)
	if err != nil {
		return nil, err
	}
	w.log.Info("databricks workspace", "config", c.Describe(), "auth", c.AuthType())
	w.client = c
	return c, nil
}

// Table returns what Unity Catalog says about a table, looked up once per run.
func (w *Workspace) Table(ctx context.Context, name string) (*databricks.TableInfo, error) {
	c, err := w.Client(ctx)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	ti, ok := w.tables[name]
	w.mu.Unlock()
	if ok {
		return ti, nil
	}
	ti, err = c.Table(ctx, name)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	if w.tables == nil {
		w.tables = map[string]*databricks.TableInfo{}
	}
	w.tables[name] = ti
	w.mu.Unlock()
	return ti, nil
}

// Credentials returns the run's credential provider for the table and operation, creating it
// on first use, so that every open of the same table in a run shares what was vended.
func (w *Workspace) Credentials(ctx context.Context, tableID string, op databricks.Operation) (storage.CredentialProvider, error) {
	c, err := w.Client(ctx)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	key := tableID + "/" + string(op)
	if p, ok := w.creds[key]; ok {
		return p, nil
	}
	if w.creds == nil {
		w.creds = map[string]storage.CredentialProvider{}
	}
	p := c.CredentialProvider(tableID, op)
	w.creds[key] = p
	return p, nil
}

// Warehouse returns the SQL warehouse session pool, opening it on first use.
func (w *Workspace) Warehouse(ctx context.Context) (*databricks.Warehouse, error) {
	c, err := w.Client(ctx)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wh != nil {
		return w.wh, nil
	}
	wh, err := c.Warehouse(ctx)
	if err != nil {
		return nil, err
	}
	w.wh = wh
	return wh, nil
}

// SchemaTableRoots returns the storage roots of the other tables in name's schema, as Unity
// Catalog lists them.
func (w *Workspace) SchemaTableRoots(ctx context.Context, name databricks.TableName) ([]string, error) {
	c, err := w.Client(ctx)
	if err != nil {
		return nil, err
	}
	list, err := c.Tables(ctx, name.Catalog, name.Schema)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range list {
		if t.StorageLocation != "" && !strings.EqualFold(t.Name.String(), name.String()) {
			out = append(out, t.StorageLocation)
		}
	}
	return out, nil
}

// Close ends the warehouse sessions, if any were opened. A nil Workspace closes nothing.
func (w *Workspace) Close() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wh == nil {
		return nil
	}
	err := w.wh.Close()
	w.wh = nil
	return err
}
