package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/zbrecover/zbrecover/storage"
)

// TargetOptions name the table whose fallback files a command works on: a storage root, a
// Unity Catalog table name, or both.
type TargetOptions struct {
	Arg   string // the positional TARGET, if given
	Table string // --table catalog.schema.table
	Root  string // --root URL
}

// addTargetFlags adds --table and --root to c.
func addTargetFlags(c *cobra.Command, t *TargetOptions) {
	c.Flags().StringVar(&t.Table, "table", "", "the target table as catalog.schema.table (resolved through Unity Catalog)")
	c.Flags().StringVar(&t.Root, "root", "", "the table's storage root URL (overrides the location Unity Catalog reports)")
}

const targetHelp = `TARGET is the table's storage root (s3://, gs://, abfss://, wasbs://, file:// or a local path),
whose fallback files are under <root>/_zerobus/table_rejected_parquets/, or a table name
catalog.schema.table resolved through Unity Catalog. --table and --root name them explicitly.`

// tableNameRE matches catalog.schema.table with plain or backquoted parts.
var tableNameRE = regexp.MustCompile("^(`[^`]+`|[A-Za-z0-9_\\-]+)\\.(`[^`]+`|[A-Za-z0-9_\\-]+)\\.(`[^`]+`|[A-Za-z0-9_\\-]+)$")

// IsTableName reports whether s reads as a three-part table name rather than a path: it has
// no "/" or "://", and is not an existing local path.
func IsTableName(s string) bool {
	if strings.Contains(s, "/") || strings.Contains(s, `\`) || strings.Contains(s, "://") {
		return false
	}
	if _, err := os.Stat(s); err == nil {
		return false
	}
	return tableNameRE.MatchString(s)
}

// resolve fills Table and Root from the positional argument and validates the combination.
func (t *TargetOptions) resolve(args []string) error {
	if len(args) > 0 {
		t.Arg = args[0]
	}
	if t.Arg != "" {
		if t.Table != "" || t.Root != "" {
			return FlagErrorf("give TARGET or --table/--root, not both")
		}
		if IsTableName(t.Arg) {
			t.Table = t.Arg
		} else {
			t.Root = t.Arg
		}
	}
	if t.Table == "" && t.Root == "" {
		return FlagErrorf("name the target: a storage root URL, or --table catalog.schema.table")
	}
	if t.Table != "" && !tableNameRE.MatchString(t.Table) {
		return FlagErrorf("--table %q is not catalog.schema.table", t.Table)
	}
	return nil
}

// ErrNeedsDatabricks is returned where a table name must be resolved but this build or
// configuration has no Databricks connection.
var ErrNeedsDatabricks = errors.New("resolving a table name needs a Databricks workspace connection")

// ResolvedTarget is what a command works on: the table root's storage and, when known, the
// table name.
type ResolvedTarget struct {
	Table   string
	Root    storage.Backend
	RootURL string // redacted
}

// TableResolver turns a table name into a storage root (and credentials); the Databricks
// connection provides it.
type TableResolver func(ctx context.Context, f *Factory, t *TargetOptions, access string) (*ResolvedTarget, error)

// openTarget opens the storage root of the target. access is "READ" or "READ_WRITE", the
// access a command needs (for vended credentials).
func (f *Factory) openTarget(ctx context.Context, t *TargetOptions, access string) (*ResolvedTarget, error) {
	if t.Table != "" {
		if f.ResolveTable == nil {
			return nil, fmt.Errorf("table %s: %w", t.Table, ErrNeedsDatabricks)
		}
		return f.ResolveTable(ctx, f, t, access)
	}
	b, err := f.OpenStorage(ctx, t.Root)
	if err != nil {
		return nil, err
	}
	return &ResolvedTarget{Root: b, RootURL: b.Location()}, nil
}
