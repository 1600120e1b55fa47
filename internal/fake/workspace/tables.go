package workspace

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// TableSpec is a table to register: catalog.schema.table, the Delta table root (a local path
// or URL), and whether it is managed (else external).
type TableSpec struct {
	Name    string
	Root    string
	Managed bool
}

// ReadTableSpecs reads the tables path names, for registering many at once:
//
//   - a directory: each folder DIR/<catalog>/<schema>/<table>/ that holds a _delta_log/ is
//     the managed table catalog.schema.table (folders without a _delta_log/ are ignored);
//   - a file: one table a line, "catalog.schema.table=ROOT" (managed) or
//     "external catalog.schema.table=ROOT"; blank lines and lines starting with # are
//     ignored, and a relative ROOT is relative to the file's folder.
//
// The tables are returned in name order for a directory, in line order for a file.
func ReadTableSpecs(path string) ([]TableSpec, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return tablesInDir(path)
	}
	return tablesInFile(path)
}

func tablesInDir(dir string) ([]TableSpec, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "*", "*", "*", "_delta_log"))
	if err != nil {
		return nil, err
	}
	var out []TableSpec
	for _, l := range logs {
		if fi, err := os.Stat(l); err != nil || !fi.IsDir() {
			continue
		}
		root := filepath.Dir(l)
		rel, err := filepath.Rel(dir, root)
		if err != nil {
			return nil, err
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		for _, p := range parts {
			if strings.ContainsAny(p, ". /`") {
				return nil, fmt.Errorf("%s: folder %q cannot be a catalog, schema or table name", dir, p)
			}
		}
		abs, err := filepath.Abs(root)
		if err != nil {
			return nil, err
		}
		out = append(out, TableSpec{Name: strings.Join(parts, "."), Root: abs, Managed: true})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no table: want folders <catalog>/<schema>/<table>/ with a _delta_log/ each", dir)
	}
	return out, nil
}

func tablesInFile(path string) ([]TableSpec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	var out []TableSpec
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		spec := TableSpec{Managed: true}
		if rest, ok := strings.CutPrefix(line, "external "); ok {
			spec.Managed, line = false, strings.TrimSpace(rest)
		}
		name, root, ok := strings.Cut(line, "=")
		name, root = strings.TrimSpace(name), strings.TrimSpace(root)
		if !ok || strings.Count(name, ".") != 2 || root == "" {
			return nil, fmt.Errorf("%s:%d: want [external ]catalog.schema.table=ROOT, not %q", path, n, sc.Text())
		}
		if !strings.Contains(root, "://") && !filepath.IsAbs(root) {
			root = filepath.Join(base, root)
		}
		spec.Name, spec.Root = name, root
		out = append(out, spec)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// RegisterTables registers each table (RegisterTable), in order, stopping at the first that
// fails.
func (w *Workspace) RegisterTables(ctx context.Context, specs []TableSpec) error {
	for _, s := range specs {
		if err := w.RegisterTable(ctx, s.Name, s.Root, s.Managed); err != nil {
			return fmt.Errorf("register %s: %w", s.Name, err)
		}
	}
	return nil
}
