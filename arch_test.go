package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportRules keeps the import graph reading as the architecture:
// cmd → reload, inspect → storage, schemadiff; domain packages never reach back up.
func TestImportRules(t *testing.T) {
	const mod = "github.com/zbrecover/zbrecover/"
	rules := []struct {
		dir       string
		forbidden []string
	}{
		{"schemadiff", []string{mod + "storage", "database/sql", "net/http", "os", mod + "cmd", "github.com/spf13/cobra"}},
		{"storage", []string{mod + "cmd", mod + "inspect", mod + "reload", mod + "databricks", "github.com/spf13/cobra"}},
		{"inspect", []string{mod + "cmd", "github.com/spf13/cobra"}},
		{"delta", []string{mod + "cmd", "github.com/spf13/cobra"}},
		{"databricks", []string{mod + "cmd", "github.com/spf13/cobra"}},
		{"reload", []string{mod + "cmd", "github.com/spf13/cobra"}},
		{"journal", []string{mod + "cmd", "github.com/spf13/cobra"}},
	}
	for _, r := range rules {
		_ = filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				return nil
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, bad := range r.forbidden {
					if path == bad || strings.HasPrefix(path, bad+"/") {
						t.Errorf("%s imports %s, which %s/ must not", p, path, r.dir)
					}
				}
			}
			return nil
		})
	}
}
