package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// importRule says which imports of the module a package's non-test files may not have
// (forbidden), or the only ones they may have (only; standard library always allowed).
type importRule struct {
	dir       string
	forbidden []string
	only      []string
}

const mod = "github.com/zbrecover/zbrecover/"

// importRules keep the import graph reading as the architecture:
// cmd → reload, inspect → storage, schemadiff; domain packages never reach back up. A
// journal depends only on storage and the redactor; cleanup can justify a delete only by a
// journal record, so it sees nothing else of the tool; doctor sees neither.
var importRules = []importRule{
	{dir: "schemadiff", forbidden: []string{mod + "storage", "database/sql", "net/http", "os", mod + "cmd", "github.com/spf13/cobra"}},
	{dir: "storage", forbidden: []string{mod + "cmd", mod + "inspect", mod + "reload", mod + "databricks", mod + "target", mod + "journal", "github.com/spf13/cobra"}},
	{dir: "inspect", forbidden: []string{mod + "cmd", mod + "reload", mod + "target", "github.com/spf13/cobra"}},
	{dir: "delta", forbidden: []string{mod + "cmd", "github.com/spf13/cobra"}},
	{dir: "databricks", forbidden: []string{mod + "cmd", mod + "target", mod + "reload", "github.com/spf13/cobra"}},
	{dir: "target", forbidden: []string{mod + "cmd", mod + "inspect", mod + "reload", mod + "cleanup", mod + "journal", "github.com/spf13/cobra"}},
	// keyfile reads key columns through storage and writes keys files: the commands, the
	// warehouse and the journal are its callers' business.
	{dir: "keyfile", forbidden: []string{mod + "cmd", mod + "reload", mod + "cleanup", mod + "journal", mod + "databricks", mod + "target", "github.com/spf13/cobra"}},
	{dir: "reload", forbidden: []string{mod + "cmd", mod + "cleanup", "github.com/spf13/cobra"}},
	// scan lists catalogs and fallback folders: it reads no footer (inspect, keyfile) and never
	// reaches what loads, records or deletes.
	{dir: "scan", forbidden: []string{mod + "cmd", mod + "reload", mod + "cleanup", mod + "journal", mod + "inspect", mod + "keyfile", "github.com/spf13/cobra"}},
	{dir: "journal", only: []string{mod + "storage", mod + "internal/redact"}},
	{dir: "cleanup", only: []string{mod + "journal", mod + "storage", mod + "internal/redact", mod + "internal/fallback"}},
	{dir: "internal/redact", only: []string{}},
	// doctor reads, and writes only its own probe object: it never reaches the journal or
	// cleanup, whose deletes a journal record must justify.
	{dir: "doctor", forbidden: []string{mod + "cmd", mod + "cleanup", mod + "journal", "github.com/spf13/cobra"}},
}

// TestImportRules checks every rule against the tree.
func TestImportRules(t *testing.T) {
	for _, r := range importRules {
		for _, v := range checkImports(".", r) {
			t.Error(v)
		}
	}
}

// TestImportRulesCatchViolations is a test of the test: a package that breaks each kind of
// rule is reported.
func TestImportRulesCatchViolations(t *testing.T) {
	root := t.TempDir()
	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("journal/j.go", "package journal\nimport (\n\t\"fmt\"\n\t\""+mod+"storage\"\n\t\""+mod+"databricks\"\n)\n")
	write("cleanup/c.go", "package cleanup\nimport _ \""+mod+"inspect\"\n")
	write("cleanup/c_test.go", "package cleanup\nimport _ \""+mod+"reload\"\n") // tests may import anything
	write("target/t.go", "package target\nimport _ \""+mod+"inspect/sub\"\n")
	write("scan/s.go", "package scan\nimport (\n\t_ \""+mod+"target\"\n\t_ \""+mod+"journal\"\n)\n")
	for _, c := range []struct {
		dir  string
		want string
	}{
		{"journal", "journal/j.go imports " + mod + "databricks"},
		{"cleanup", "cleanup/c.go imports " + mod + "inspect"},
		{"target", "target/t.go imports " + mod + "inspect/sub"},
		{"scan", "scan/s.go imports " + mod + "journal"},
	} {
		var rule importRule
		for _, r := range importRules {
			if r.dir == c.dir {
				rule = r
			}
		}
		got := checkImports(root, rule)
		if len(got) != 1 || !strings.Contains(got[0], c.want) {
			t.Errorf("%s: violations %q, want one naming %q", c.dir, got, c.want)
		}
	}
}

// checkImports returns the violations of r under base.
func checkImports(base string, r importRule) []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(base, r.dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", p, err))
			return nil
		}
		rel, _ := filepath.Rel(base, p)
		rel = filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, bad := range r.forbidden {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					out = append(out, fmt.Sprintf("%s imports %s, which %s/ must not", rel, path, r.dir))
				}
			}
			if r.only != nil && strings.HasPrefix(path, mod) && !slices.Contains(r.only, path) {
				out = append(out, fmt.Sprintf("%s imports %s; %s/ may import only %v of this module", rel, path, r.dir, r.only))
			}
		}
		return nil
	})
	return out
}
