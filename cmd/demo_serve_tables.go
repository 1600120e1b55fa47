//go:build demo

package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/zbrecover/zbrecover/internal/textfmt"
	"github.com/zbrecover/zbrecover/storage"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
)

// demoServeStorage opens the tables whose root is a cloud URL for the local warehouse, with
// the global storage flags and the store's own credentials.
func demoServeStorage(f *Factory) warehouse.StorageOpener {
	return func(ctx context.Context, url string) (storage.Backend, error) {
		return f.Registry().Open(ctx, url, f.Global.StorageConfig())
	}
}

// tablesFromHelp is the help of --tables-from.
const tablesFromHelp = "register the tables `PATH` names: a directory of <catalog>/<schema>/<table>/ roots (managed), " +
	"or a file of c.s.t=ROOT lines (\"external c.s.t=ROOT\" for an external table) (repeatable)"

// registerTablesFrom registers the tables each path names (workspace.ReadTableSpecs) and
// writes one line per path to errOut.
func registerTablesFrom(ctx context.Context, ws *workspace.Workspace, paths []string, errOut io.Writer) error {
	for _, p := range paths {
		specs, err := workspace.ReadTableSpecs(p)
		if err != nil {
			return FlagErrorf("--tables-from: %v", err)
		}
		if err := ws.RegisterTables(ctx, specs); err != nil {
			return fmt.Errorf("--tables-from %s: %w", p, err)
		}
		fmt.Fprintf(errOut, "registered %s from %s\n", textfmt.Plural(len(specs), "table"), p)
	}
	return nil
}
