package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/tableref"
)

// TargetOptions name the table whose fallback files a command works on: a storage root, a
// Unity Catalog table name, or both.
type TargetOptions = tableref.Spec

// addTargetFlags adds --table and --root to c.
func addTargetFlags(c *cobra.Command, t *TargetOptions) {
	c.Flags().StringVar(&t.Table, "table", "", "the target table as catalog.schema.table (resolved through Unity Catalog)")
	c.Flags().StringVar(&t.Root, "root", "", "the table's storage root URL (overrides the location Unity Catalog reports)")
}

// IsTableName reports whether s reads as a three-part table name rather than a path.
func IsTableName(s string) bool { return tableref.IsTableName(s) }

// parseTarget fills t from the positional arguments and checks the combination.
func parseTarget(t *TargetOptions, args []string) error { return t.Parse(args) }

// ErrNeedsDatabricks is returned where a table name must be resolved but this build or
// configuration has no Databricks connection.
var ErrNeedsDatabricks = tableref.ErrNeedsDatabricks

// resolver returns the run's target resolver: storage opened with the global settings and
// decorators, table names through the Databricks workspace.
func (f *Factory) resolver() (*tableref.Resolver, error) {
	d := f.Databricks()
	mode, err := databricks.ParseStorageAuth(d.StorageAuth)
	if err != nil {
		return nil, FlagErrorf("%v", err)
	}
	return &tableref.Resolver{
		Open:        f.opener(f.defaultPolicy()).Open,
		Config:      f.Global.StorageConfig,
		Workspace:   f.workspace(),
		StorageAuth: mode,
		Env:         databricks.OSEnv(),
		Log:         f.Logger,
	}, nil
}

// openTarget opens the storage root of the target with the access a command needs (for
// vended credentials).
func (f *Factory) openTarget(ctx context.Context, t *TargetOptions, access tableref.Access) (*tableref.Ref, error) {
	r, err := f.resolver()
	if err != nil {
		return nil, err
	}
	return r.Resolve(ctx, *t, access)
}

// fileError words the failure to open the file a flag names without the Go error chain: the
// file (or, to write one, its folder) does not exist, may not be read or written, or is a
// folder; hint says where such a file comes from ("" for none).
func fileError(flag, path string, err error, hint string) error {
	var msg string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		msg = fmt.Sprintf("%s %s does not exist", flag, path)
		if dir := filepath.Dir(path); dir != "." {
			if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
				msg = fmt.Sprintf("%s %s: its folder %s does not exist", flag, path, dir)
				hint = "create the folder, or name a file in one that exists"
			}
		}
	case errors.Is(err, fs.ErrPermission):
		msg = fmt.Sprintf("%s %s: the operating system user may not open it (permission denied)", flag, path)
		hint = "check the file's and its folder's permissions"
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		msg = fmt.Sprintf("%s %s: %v", flag, path, err)
	}
	if hint != "" {
		msg += ": " + hint
	}
	return errors.New(msg)
}
