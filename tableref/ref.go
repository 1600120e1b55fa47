package tableref

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/storage"
)

// Access is what a command does with the table's storage, for vended credentials.
type Access string

const (
	// Read is enough to list and read fallback files (inspect, preview, reload).
	Read Access = "READ"
	// ReadWrite is needed to delete them (cleanup).
	ReadWrite Access = "READ_WRITE"
)

// ErrNeedsDatabricks is returned where a table name must be resolved but this build or
// configuration has no Databricks connection.
var ErrNeedsDatabricks = errors.New("resolving a table name needs a Databricks workspace connection")

// Ref is the table a command works on: its name, identity and storage root.
type Ref struct {
	// Name is the table's name; HasName is false when only a storage root was given.
	Name    databricks.TableName
	HasName bool
	// TableID is the Unity Catalog table_id when the table was resolved through Unity
	// Catalog; Identify fills in the Delta log's metaData.id otherwise.
	TableID string
	// Info is the table's Unity Catalog entry, nil when the target is only a root.
	Info *databricks.TableInfo
	// Loc is the storage root, structured and with its secrets (a SAS query) kept: SQL and
	// storage calls are built from it. Loc.String() redacts; Loc.URL() drops the query.
	Loc storage.Location
	// Root is the decorated backend rooted at Loc. Root.Location() is for display only.
	Root storage.Backend
	// Vended is true when Root reads with credentials Unity Catalog vended for the table.
	Vended bool
}

// TableName returns catalog.schema.table, or "" when only a root was given.
func (t *Ref) TableName() string {
	if !t.HasName {
		return ""
	}
	return t.Name.String()
}

// Display returns the root as printed: the URL with secrets redacted.
func (t *Ref) Display() string { return t.Root.Location() }

// Opener opens a backend for a location with the given settings, decorated as the run wants
// (retry, concurrency limit).
type Opener func(ctx context.Context, loc storage.Location, cfg storage.Config) (storage.Backend, error)

// Resolver turns a Spec into a Target.
type Resolver struct {
	// Open opens storage.
	Open Opener
	// Config returns the base storage settings (endpoints, region, user agent).
	Config func() storage.Config
	// Workspace is the Databricks connection; nil when this build or run has none, and
	// table names then fail with ErrNeedsDatabricks.
	Workspace *Workspace
	// StorageAuth chooses between vended and the store's own credentials for a table.
	StorageAuth databricks.StorageAuth
	// Env is the environment ChooseStorageAuth looks at (databricks.OSEnv() in production).
	Env databricks.Env
	// Log receives the choices made, at info level.
	Log *slog.Logger
}

func (r *Resolver) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

func (r *Resolver) config() storage.Config {
	if r.Config == nil {
		return storage.Config{}
	}
	return r.Config()
}

// Resolve opens the target's storage root: for a table name, the location Unity Catalog
// reports (or s.Root), with credentials chosen by StorageAuth and access; for a root alone,
// the root with the store's own credentials.
func (r *Resolver) Resolve(ctx context.Context, s Spec, access Access) (*Ref, error) {
	if s.Table != "" {
		return r.resolveTable(ctx, s, access)
	}
	loc, err := storage.Parse(s.Root)
	if err != nil {
		return nil, err
	}
	b, err := r.Open(ctx, loc, r.config())
	if err != nil {
		return nil, err
	}
	return &Ref{Loc: loc, Root: b}, nil
}

func (r *Resolver) resolveTable(ctx context.Context, s Spec, access Access) (*Ref, error) {
	name, ok := s.Name()
	if !ok {
		return nil, usagef("--table %q is not catalog.schema.table", s.Table)
	}
	if r.Workspace == nil {
		return nil, fmt.Errorf("table %s: %w", name, ErrNeedsDatabricks)
	}
	op, err := operation(name, access)
	if err != nil {
		return nil, err
	}
	ti, err := r.Workspace.Table(ctx, s.Table)
	if err != nil {
		return nil, err
	}
	if err := ti.CheckRecoverable(); err != nil {
		return nil, err
	}
	t, err := r.openTable(ctx, ti.Name, ti.TableID, ti.StorageLocation, s.Root, op, r.StorageAuth)
	if err != nil {
		return nil, err
	}
	t.Info = ti
	return t, nil
}

// ResolveListed opens the storage root of a table as Unity Catalog listed it (a scan), with
// no further lookup: its location and id are the listing's, its credentials chosen as for a
// table name (StorageAuth, access). A table that cannot hold fallback files is refused with
// an error wrapping databricks.ErrUnsupported. Target.Info is nil.
func (r *Resolver) ResolveListed(ctx context.Context, e databricks.TableEntry, access Access) (*Ref, error) {
	if r.Workspace == nil {
		return nil, fmt.Errorf("table %s: %w", e.Name, ErrNeedsDatabricks)
	}
	op, err := operation(e.Name, access)
	if err != nil {
		return nil, err
	}
	if err := e.CheckRecoverable(); err != nil {
		return nil, err
	}
	return r.openTable(ctx, e.Name, e.TableID, e.StorageLocation, "", op, r.StorageAuth)
}

func operation(name databricks.TableName, access Access) (databricks.Operation, error) {
	switch access {
	case "", Read:
		return databricks.OperationRead, nil
	case ReadWrite:
		return databricks.OperationReadWrite, nil
	}
	return "", fmt.Errorf("table %s: unknown access %q", name, access)
}

// openTable opens the storage root of the table name (id tableID) whose Unity Catalog
// location is location, or root when given, with the credentials mode chooses.
func (r *Resolver) openTable(ctx context.Context, name databricks.TableName, tableID, location, root string,
	op databricks.Operation, mode databricks.StorageAuth) (*Ref, error) {
	rootURL := location
	if root != "" {
		rootURL = root
	}
	loc, err := storage.Parse(rootURL)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	if mode == "" {
		mode = databricks.StorageAuthAuto
	}
	vend, why, err := databricks.ChooseStorageAuth(mode, true, loc, r.Env)
	if err != nil {
		return nil, usagef("%v", err)
	}
	r.log().Info("storage credentials", "table", name.String(), "root", loc.String(), "choice", why)
	cfg := r.config()
	if vend {
		// Vended credentials go only to the location Unity Catalog returned for the table.
		if err := databricks.CheckRootInside(location, loc); err != nil {
			return nil, fmt.Errorf("table %s: %w", name, err)
		}
		get, err := r.Workspace.Credentials(ctx, tableID, op)
		if err != nil {
			return nil, err
		}
		// Vend once now, so that a refusal is reported before any listing starts.
		if _, err := get(ctx); err != nil {
			if errors.Is(err, databricks.ErrPermissionDenied) && mode == databricks.StorageAuthAuto {
				return nil, fmt.Errorf("table %s: %w (no %s credentials were found in the environment, so Unity Catalog vending was tried)", name, err, loc.Scheme)
			}
			return nil, fmt.Errorf("table %s: %w", name, err)
		}
		cfg.Credentials = get
	}
	b, err := r.Open(ctx, loc, cfg)
	if err != nil {
		return nil, err
	}
	return &Ref{Name: name, HasName: true, TableID: tableID, Loc: loc, Root: b, Vended: vend}, nil
}
