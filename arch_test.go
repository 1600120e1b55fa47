package main

import (
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/recovery"
)

const mod = "github.com/zbrecover/zbrecover/"

// importRule says which packages of the module a package's non-test files may import (only;
// the standard library and third-party modules are always allowed). dir is the package's
// directory; sub, when set, applies the rule to every package below dir too.
type importRule struct {
	dir  string
	only []string
	sub  bool
}

// importRules are the architecture as the import graph states it: data flows one way,
// cmd → reload, cleanup, inspect, doctor → target, journal, keyfile, databricks, delta →
// storage, schemadiff. A journal depends only on storage and the redactor; cleanup can justify
// a delete only by a journal record and its injected check, so it sees nothing else of the
// tool; schemadiff is pure. Every package of the module has a rule (TestEveryPackageHasARule).
var importRules = []importRule{
	{dir: ".", only: []string{"cmd"}},
	{dir: "cmd", only: []string{"cleanup", "databricks", "delta", "doctor", "history", "inspect", "internal/fallback", "internal/iostreams",
		"internal/jsonout", "internal/redact", "internal/suggest", "internal/textfmt", "internal/textsafe", "journal", "place", "recovery", "reload", "scan", "schemadiff", "sqlstmt", "storage", "storage/all", "tableref", "undo", "watch",
		"internal/demo", "internal/fake/workspace", "internal/fake/warehouse"}},
	{dir: "schemadiff", only: []string{"internal/suggest"}},
	{dir: "sqlstmt", only: []string{"schemadiff"}},
	{dir: "internal/redact", only: []string{}},
	{dir: "internal/textsafe", only: []string{}},
	// textfmt writes numbers, sizes, plurals, times and shell words one way for every command.
	{dir: "internal/textfmt", only: []string{"internal/redact", "internal/textsafe"}},
	{dir: "internal/jsonout", only: []string{}},
	{dir: "internal/iostreams", only: []string{}},
	{dir: "internal/fallback", only: []string{}},
	{dir: "internal/suggest", only: []string{}},
	{dir: "internal/pqgen", only: []string{}},
	{dir: "internal/memstat", only: []string{}},
	{dir: "tools/gendocs", only: []string{"cmd"}},
	{dir: "storage", only: []string{"internal/redact"}},
	{dir: "storage/all", only: []string{"storage", "storage/azure", "storage/gcs", "storage/local", "storage/s3"}},
	{dir: "storage/azure", only: []string{"storage", "internal/redact"}},
	{dir: "storage/gcs", only: []string{"storage", "internal/redact"}},
	{dir: "storage/local", only: []string{"storage", "internal/redact"}},
	{dir: "storage/s3", only: []string{"storage", "internal/redact"}},
	{dir: "storage/mem", only: []string{"storage"}},
	{dir: "storage/mock", only: []string{"storage"}},
	{dir: "storage/storagetest", only: []string{"storage", "storage/mem"}},
	{dir: "storage/azure/azuretest", only: []string{"storage", "storage/storagetest"}},
	{dir: "storage/gcs/gcstest", only: []string{"storage", "storage/storagetest"}},
	{dir: "storage/s3/s3test", only: []string{"storage", "storage/storagetest"}},
	{dir: "inspect", only: []string{"schemadiff", "storage", "internal/jsonout", "internal/textfmt", "internal/textsafe", "internal/fallback"}},
	{dir: "delta", only: []string{"schemadiff", "storage"}},
	{dir: "delta/deltatest", only: []string{"schemadiff"}},
	{dir: "databricks", only: []string{"schemadiff", "sqlstmt", "storage", "internal/redact", "internal/suggest"}},
	{dir: "databricks/uctest", only: []string{"schemadiff"}},
	{dir: "databricks/filestest", only: []string{}},
	{dir: "keyfile", only: []string{"inspect", "schemadiff", "storage", "internal/textfmt"}},
	{dir: "journal", only: []string{"storage", "internal/redact"}},
	// place is the one rule every place written to passes: a leaf over storage.
	{dir: "place", only: []string{"storage", "internal/redact"}},
	{dir: "cleanup", only: []string{"journal", "place", "storage", "internal/redact", "internal/fallback", "internal/textfmt"}},
	{dir: "tableref", only: []string{"databricks", "delta", "schemadiff", "storage", "internal/redact"}},
	{dir: "reload", only: []string{"databricks", "inspect", "journal", "keyfile", "schemadiff", "sqlstmt", "storage", "tableref", "internal/fallback", "internal/redact"}},
	// recovery gathers one table's reload (the table, its lock, its files, its schema, its
	// places) and prepares its cleanup, for the commands and watch: it deletes nothing itself
	// (cleanup's Execute does, called by them).
	{dir: "recovery", only: []string{"cleanup", "databricks", "delta", "history", "inspect", "journal", "place", "reload", "schemadiff", "sqlstmt", "storage", "tableref", "internal/redact"}},
	// watch runs scan, recovery, verify and cleanup under a lease, cycle after cycle: what
	// reload and cleanup use, and scan.
	{dir: "watch", only: []string{"cleanup", "databricks", "journal", "recovery", "reload", "scan", "storage", "tableref", "internal/fallback", "internal/jsonout", "internal/redact"}},
	// scan lists catalogs and fallback folders: it reads no footer (inspect, keyfile) and never
	// reaches what loads, records or deletes.
	{dir: "scan", only: []string{"databricks", "storage", "tableref", "internal/fallback", "internal/jsonout", "internal/redact", "internal/textfmt", "internal/textsafe"}},
	// undo takes a run's batches back: it reads the table's log (delta), settles its DELETEs
	// by reload's rules, and journals like reload; it never reaches cleanup or the fallback files.
	{dir: "undo", only: []string{"databricks", "delta", "journal", "reload", "sqlstmt", "tableref", "internal/textfmt"}},
	// history reads the journal for zbrecover history, and writes nothing.
	{dir: "history", only: []string{"journal", "internal/suggest"}},
	{dir: "doctor", only: []string{"databricks", "inspect", "schemadiff", "sqlstmt", "storage", "tableref", "internal/jsonout", "internal/redact", "internal/fallback", "internal/suggest", "internal/textfmt"}},
	{dir: "internal/fake/warehouse", only: []string{"delta", "inspect", "schemadiff", "storage", "storage/local", "internal/fake/warehouse/tcli"}},
	{dir: "internal/fake/warehouse/tcli", only: []string{}},
	{dir: "internal/fake/workspace", only: []string{"internal/fake/warehouse", "databricks/uctest", "schemadiff"}},
	{dir: "internal/demo", only: []string{"delta/deltatest", "inspect", "internal/pqgen", "schemadiff", "internal/fallback", "internal/textfmt"}},
	// e2e holds only its package doc; its packages are tests.
	{dir: "e2e", only: []string{}},
	// The end-to-end tests' helpers drive built binaries and a served workspace from outside.
	{dir: "e2e/e2etest", only: []string{"databricks", "inspect", "schemadiff", "delta/deltatest", "internal/pqgen", "internal/fallback"}},
}

// testSupport are the packages that exist for tests and the demo: the local warehouse and
// workspace (DuckDB, cgo), emulators, fixtures. Only test files, demo builds and other
// test-support packages import them, so the release binary never contains them.
var testSupport = []string{"internal/fake/warehouse", "internal/fake/workspace", "internal/demo", "internal/pqgen", "internal/memstat",
	"delta/deltatest", "databricks/uctest", "databricks/filestest", "storage/storagetest", "storage/mock", "storage/mem",
	"storage/azure/azuretest", "storage/gcs/gcstest", "storage/s3/s3test", "e2e/e2etest"}

// TestImportRules checks every rule against the tree, and that test-support packages reach
// only tests and demo builds.
func TestImportRules(t *testing.T) {
	for _, v := range checkTree(".") {
		t.Error(v)
	}
}

// TestEveryPackageHasARule: a package without a rule would escape the fences.
func TestEveryPackageHasARule(t *testing.T) {
	for _, d := range packageDirs(t, ".") {
		if ruleFor(d) == nil {
			t.Errorf("package %s has no import rule in arch_test.go", d)
		}
	}
}

// checkTree returns the violations of every rule and of the test-support fence under base. A
// rule whose directory is missing is a violation (a renamed package would otherwise escape).
func checkTree(base string) []string {
	var out []string
	for _, r := range importRules {
		out = append(out, checkImports(base, r)...)
	}
	return append(out, checkTestSupport(base)...)
}

func ruleFor(dir string) *importRule {
	var best *importRule
	for i := range importRules {
		r := &importRules[i]
		if r.dir == dir || r.sub && strings.HasPrefix(dir, r.dir+"/") {
			if best == nil || len(r.dir) > len(best.dir) {
				best = r
			}
		}
	}
	return best
}

// goFile is one non-test Go file: its package directory, imports of the module, and whether
// it builds only with the demo tag.
type goFile struct {
	path, dir string
	imports   []string
	demoOnly  bool
}

// files returns the non-test Go files under base/dir (only dir itself unless sub).
func files(base, dir string, sub bool) ([]goFile, error) {
	root := filepath.Join(base, dir)
	if _, err := os.Stat(root); err != nil {
		return nil, err
	}
	var out []goFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (!sub || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return fmt.Errorf("%s: %v", p, err)
		}
		rel, _ := filepath.Rel(base, filepath.Dir(p))
		gf := goFile{path: filepath.ToSlash(p), dir: filepath.ToSlash(rel)}
		for _, cg := range f.Comments {
			for _, c := range cg.List {
				if expr, err := constraint.Parse(c.Text); err == nil {
					// Builds only with the demo tag: false whenever demo is unset.
					gf.demoOnly = gf.demoOnly || !expr.Eval(func(tag string) bool { return tag != "demo" })
				}
			}
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if rest, ok := strings.CutPrefix(path, mod); ok {
				gf.imports = append(gf.imports, rest)
			} else if path == strings.TrimSuffix(mod, "/") {
				gf.imports = append(gf.imports, ".")
			}
		}
		out = append(out, gf)
		return nil
	})
	return out, err
}

// checkImports returns the violations of r under base.
func checkImports(base string, r importRule) []string {
	fs, err := files(base, r.dir, r.sub)
	if err != nil {
		return []string{fmt.Sprintf("rule for %s/: %v (a rule must name an existing package)", r.dir, err)}
	}
	var out []string
	for _, f := range fs {
		for _, imp := range f.imports {
			if !slices.Contains(r.only, imp) && !(r.sub && strings.HasPrefix(imp, r.dir+"/")) {
				out = append(out, fmt.Sprintf("%s imports %s; %s/ may import only %v of this module", f.path, imp, r.dir, r.only))
			}
		}
	}
	return out
}

// checkTestSupport returns the non-test, non-demo files outside test-support packages that
// import one.
func checkTestSupport(base string) []string {
	all, err := files(base, ".", true)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, f := range all {
		if f.demoOnly || isTestSupport(f.dir) {
			continue
		}
		for _, imp := range f.imports {
			if isTestSupport(imp) {
				out = append(out, fmt.Sprintf("%s imports %s, which only tests and demo builds may import", f.path, imp))
			}
		}
	}
	return out
}

func isTestSupport(dir string) bool {
	for _, p := range testSupport {
		if dir == p || strings.HasPrefix(dir, p+"/") {
			return true
		}
	}
	return false
}

// packageDirs lists the directories under base that hold a non-test Go file.
func packageDirs(t *testing.T, base string) []string {
	t.Helper()
	all, err := files(base, ".", true)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, f := range all {
		if !seen[f.dir] {
			seen[f.dir] = true
			out = append(out, f.dir)
		}
	}
	return out
}

// TestImportRulesCatchViolations is a test of the test, on a copy of the tree: a lateral
// import (delta → inspect, databricks → journal, inspect → databricks), a test-support
// package imported by the release build, a cleanup that reaches for the warehouse, and a
// renamed rule directory are each reported; the tree as it is reports nothing.
func TestImportRulesCatchViolations(t *testing.T) {
	root := t.TempDir()
	copyTree(t, ".", root)
	if v := checkTree(root); len(v) != 0 {
		t.Fatalf("the copied tree has violations: %v", v)
	}
	write := func(rel, src string) {
		p := filepath.Join(root, rel)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("delta/zz_lateral.go", "package delta\nimport _ \""+mod+"inspect\"\n")
	write("databricks/zz_lateral.go", "package databricks\nimport _ \""+mod+"journal\"\n")
	write("inspect/zz_lateral.go", "package inspect\nimport _ \""+mod+"databricks\"\n")
	write("cmd/zz_fake.go", "package cmd\nimport _ \""+mod+"internal/fake/warehouse\"\n")
	write("cmd/zz_demo.go", "//go:build demo\n\npackage cmd\nimport _ \""+mod+"internal/fake/workspace\"\n") // allowed: a demo build
	write("cleanup/zz_wh.go", "package cleanup\nimport _ \""+mod+"reload\"\n")
	write("cleanup/zz_wh_test.go", "package cleanup\nimport _ \""+mod+"reload\"\n") // tests may import anything
	got := checkTree(root)
	for _, want := range []string{"delta/zz_lateral.go imports inspect", "databricks/zz_lateral.go imports journal",
		"inspect/zz_lateral.go imports databricks", "cmd/zz_fake.go imports internal/fake/warehouse, which only tests",
		"cleanup/zz_wh.go imports reload"} {
		if !slices.ContainsFunc(got, func(v string) bool { return strings.Contains(v, want) }) {
			t.Errorf("no violation %q in %v", want, got)
		}
	}
	for _, v := range got {
		if strings.Contains(v, "zz_demo.go") || strings.Contains(v, "zz_wh_test.go") {
			t.Errorf("reported an allowed import: %s", v)
		}
	}
	// A renamed package leaves its rule without a directory: reported, not skipped.
	if err := os.Rename(filepath.Join(root, "journal"), filepath.Join(root, "journals")); err != nil {
		t.Fatal(err)
	}
	if got := checkTree(root); !slices.ContainsFunc(got, func(v string) bool { return strings.Contains(v, "rule for journal/") }) {
		t.Errorf("a renamed rule directory was not reported: %v", got)
	}
}

// copyTree copies the Go files of the module under src to dst (tests and testdata left out).
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != src && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, p)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// maxCmdLines is the most lines a function of cmd may have: cmd parses, calls and renders,
// so that one command reads from its flags to its domain package in one place. The cobra
// command builders (their help text) and the demo, a script of the whole recovery, are the
// exceptions.
const maxCmdLines = 60

// productFiles parses the non-test Go files of dir, by file name.
func productFiles(dir string) (*token.FileSet, map[string]*ast.File, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		return nil, nil, err
	}
	files := map[string]*ast.File{}
	for _, p := range pkgs {
		maps.Copy(files, p.Files)
	}
	return fset, files, nil
}

// writeSources writes each named source into a new folder, for a test of a test, and returns
// the folder.
func writeSources(t *testing.T, sources map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range sources {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCmdFunctionsAreShort measures every function of cmd.
func TestCmdFunctionsAreShort(t *testing.T) {
	for _, v := range checkFunctionLengths("cmd", maxCmdLines) {
		t.Error(v)
	}
}

// exemptFromLength reports whether a function of cmd may be long: a command builder, or any
// function of the demo's files.
func exemptFromLength(file, name string) bool {
	base := filepath.Base(file)
	return strings.HasPrefix(name, "NewCmd") || strings.HasPrefix(name, "newCmd") || name == "NewRootCmd" || strings.HasPrefix(base, "demo")
}

// checkFunctionLengths returns a violation for each function (or method) of the package in
// dir longer than max lines, builders and the demo aside.
func checkFunctionLengths(dir string, max int) []string {
	fset, files, err := productFiles(dir)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for file, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || exemptFromLength(file, fd.Name.Name) {
				continue
			}
			if l := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; l > max {
				out = append(out, fmt.Sprintf("%s: %s has %d lines, more than %d: split what it gathers, decides and renders (decisions belong in the domain packages)",
					filepath.Base(file), fd.Name.Name, l, max))
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestFunctionLengthRuleCatches is a test of the test: a long function is reported, a long
// builder and a long function of a demo file are not.
func TestFunctionLengthRuleCatches(t *testing.T) {
	long := func(name string) string { return "func " + name + "() {\n" + strings.Repeat("\t_ = 1\n", 60) + "}\n" }
	dir := writeSources(t, map[string]string{
		"a.go":    "package cmd\n\nfunc short() {}\n\n" + long("long") + long("NewCmdThing"),
		"demo.go": "package cmd\n\n" + long("demoScript"),
	})
	got := checkFunctionLengths(dir, maxCmdLines)
	if len(got) != 1 || !strings.Contains(got[0], "long has 62 lines") {
		t.Errorf("violations %q", got)
	}
}

// TestCmdDecoratesNoStorage: no file of cmd calls a storage.With… decorator: every chain is
// built by storage.Opener from a policy value (storage.Policy), which cmd's factory gives.
func TestCmdDecoratesNoStorage(t *testing.T) {
	for _, v := range checkSelectorsIn("cmd", "storage", "With", "") {
		t.Error(v)
	}
}

// checkSelectorsIn returns a violation for each use of pkg.<prefix…> in a non-test file of
// dir other than allowed.
func checkSelectorsIn(dir, pkg, prefix, allowed string) []string {
	fset, files, err := productFiles(dir)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for file, f := range files {
		if filepath.Base(file) == allowed {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if se, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := se.X.(*ast.Ident); ok && id.Name == pkg && strings.HasPrefix(se.Sel.Name, prefix) {
					out = append(out, fmt.Sprintf("%s: %s.%s outside %s", fset.Position(se.Pos()), pkg, se.Sel.Name, allowed))
				}
			}
			return true
		})
	}
	sort.Strings(out)
	return out
}

// TestDecoratorRuleCatches is a test of the test.
func TestDecoratorRuleCatches(t *testing.T) {
	dir := writeSources(t, map[string]string{
		"factory.go": "package cmd\n\nimport \"x/storage\"\n\nvar _ = storage.WithRetry\n",
		"other.go":   "package cmd\n\nimport \"x/storage\"\n\nvar _ = storage.WithLimit\nvar _ = storage.Parse\n",
	})
	got := checkSelectorsIn(dir, "storage", "With", "factory.go")
	if len(got) != 1 || !strings.Contains(got[0], "storage.WithLimit outside factory.go") {
		t.Errorf("violations %q", got)
	}
}

// journalOpener is the one file of cmd that imports the journal, and what it may use of it:
// cmd names a store (recovery.Places opens it) and hands it to the domain packages, which read
// and write it.
const journalOpener = "journal.go"

// The break rules are the opener's too: it answers --break-lock about a lock it could not take.
var journalOpenerUses = []string{"Store", "Header", "LockedError", "BreakNever", "BreakIfConfirmed", "BreakWithYes"}

// TestCmdOpensTheJournalOnly: no other file of cmd imports package journal, and the opener
// uses of it only what opening a store takes.
func TestCmdOpensTheJournalOnly(t *testing.T) {
	for _, v := range checkJournalOpener("cmd") {
		t.Error(v)
	}
}

func checkJournalOpener(dir string) []string {
	fset, files, err := productFiles(dir)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for name, f := range files {
		local := ""
		for _, im := range f.Imports {
			if path, _ := strconv.Unquote(im.Path.Value); path == mod+"journal" {
				local = "journal"
				if im.Name != nil {
					local = im.Name.Name
				}
			}
		}
		if local == "" {
			continue
		}
		if filepath.Base(name) != journalOpener {
			out = append(out, fmt.Sprintf("%s imports the journal: only %s/%s may (hand the store to reload, cleanup or history)", name, dir, journalOpener))
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if se, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := se.X.(*ast.Ident); ok && id.Name == local && !slices.Contains(journalOpenerUses, se.Sel.Name) {
					out = append(out, fmt.Sprintf("%s uses journal.%s: the opener only opens a store", fset.Position(se.Pos()), se.Sel.Name))
				}
			}
			return true
		})
	}
	return out
}

// TestCmdJournalRuleCatches is a test of the test: a second importer and a use beyond opening
// are reported.
func TestCmdJournalRuleCatches(t *testing.T) {
	imp := "package cmd\n\nimport \"" + mod + "journal\"\n\n"
	dir := writeSources(t, map[string]string{
		journalOpener: imp + "func open() (journal.Store, error) { return nil, nil }\n\nfunc read() { _ = journal.ReadState }\n",
		"history.go":  imp + "var _ journal.Store\n",
	})
	got := checkJournalOpener(dir)
	if len(got) != 2 || !strings.Contains(strings.Join(got, "\n"), "uses journal.ReadState") || !strings.Contains(strings.Join(got, "\n"), "history.go imports the journal") {
		t.Errorf("violations %q", got)
	}
}

// TestCmdHasNoVolumeBranch: a /Volumes path is a storage scheme (storage.SchemeVolume), opened
// by the registry like any place; no file of cmd (or doctor) asks whether a string is a volume
// path.
func TestCmdHasNoVolumeBranch(t *testing.T) {
	for _, dir := range []string{"cmd", "doctor"} {
		for _, v := range volumeBranches(dir) {
			t.Error(v)
		}
	}
}

func volumeBranches(dir string) []string {
	fset, files, err := productFiles(dir)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if n.Sel.Name == "IsVolumePath" {
					out = append(out, fmt.Sprintf("%s calls IsVolumePath: parse the place (storage.Parse) and ask its Scheme", fset.Position(n.Pos())))
				}
			case *ast.CallExpr:
				if se, ok := n.Fun.(*ast.SelectorExpr); ok && (se.Sel.Name == "HasPrefix" || se.Sel.Name == "CutPrefix") && len(n.Args) == 2 {
					if lit, ok := n.Args[1].(*ast.BasicLit); ok && (strings.HasPrefix(lit.Value, `"/Volumes`) || strings.HasPrefix(lit.Value, `"dbfs:`)) {
						out = append(out, fmt.Sprintf("%s tests a string for %s: parse the place (storage.Parse) and ask its Scheme", fset.Position(n.Pos()), lit.Value))
					}
				}
			}
			return true
		})
	}
	return out
}

// TestVolumeBranchRuleCatches is a test of the test.
func TestVolumeBranchRuleCatches(t *testing.T) {
	src := "package cmd\n\nimport (\n\t\"strings\"\n\n\t\"" + mod + "databricks\"\n)\n\n" +
		"func a(s string) bool { return databricks.IsVolumePath(s) }\n\nfunc b(s string) bool { return strings.HasPrefix(s, \"/Volumes\") }\n"
	dir := writeSources(t, map[string]string{"x.go": src})
	if got := volumeBranches(dir); len(got) != 2 {
		t.Errorf("violations %q", got)
	}
}

// uiPorts are the only functions recovery's requests and environments carry: the operator's
// answer about a lock another process holds (a prompt), the footer reads' and key checks'
// progress, and the warehouse's sessions (built by recovery.WarehouseDeps). Everything else a
// run hands to recovery is a value: the table as asked, places as given, the schema's source,
// the opener of the run's places; so that following a command's options from its run
// function, control enters cmd once and never comes back to it.
var uiPorts = []string{"BreakLock", "Footers", "FootersDone", "KeyProgress", "Session"}

// TestRecoveryTakesValues: the types cmd hands to recovery have no function fields but the UI
// ports.
func TestRecoveryTakesValues(t *testing.T) {
	for _, v := range funcFields(recovery.Env{}, recovery.Request{}, recovery.Schema{}, recovery.CleanupEnv{}, recovery.CleanupRequest{},
		recovery.VerifyEnv{}, recovery.VerifyRequest{}, recovery.Places{}) {
		t.Error(v)
	}
}

// funcFields returns a violation for each function-typed field of the given structs that is not
// a UI port.
func funcFields(values ...any) []string {
	var out []string
	for _, v := range values {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			f := rt.Field(i)
			if f.Type.Kind() == reflect.Func && !slices.Contains(uiPorts, f.Name) {
				out = append(out, fmt.Sprintf("%s.%s is a function: pass a value (the function would call back into the command)", rt.Name(), f.Name))
			}
		}
	}
	return out
}

// TestFuncFieldRuleCatches is a test of the test.
func TestFuncFieldRuleCatches(t *testing.T) {
	type env struct {
		Places    *recovery.Places
		BreakLock func() bool
		OpenStage func() error
	}
	got := funcFields(env{})
	if len(got) != 1 || !strings.Contains(got[0], "env.OpenStage is a function") {
		t.Errorf("violations %q", got)
	}
}

// TestCmdPassesNoClosureToRecovery: no file of cmd writes a function literal into a
// recovery request or environment (a UI port is given by a call that returns it).
func TestCmdPassesNoClosureToRecovery(t *testing.T) {
	for _, v := range closuresInto("cmd", "recovery") {
		t.Error(v)
	}
}

// closuresInto returns a violation for each function literal that is a field value of a
// composite literal of a type of package pkg in the non-test files of dir.
func closuresInto(dir, pkg string) []string {
	fset, files, err := productFiles(dir)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			se, ok := cl.Type.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := se.X.(*ast.Ident); !ok || id.Name != pkg {
				return true
			}
			for _, e := range cl.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if _, ok := kv.Value.(*ast.FuncLit); ok {
						out = append(out, fmt.Sprintf("%s: a function literal as %s.%s's %s: pass a value", fset.Position(kv.Pos()), pkg, se.Sel.Name, kv.Key))
					}
				}
			}
			return true
		})
	}
	sort.Strings(out)
	return out
}

// TestClosureRuleCatches is a test of the test.
func TestClosureRuleCatches(t *testing.T) {
	src := "package cmd\n\nimport \"" + mod + "recovery\"\n\nvar _ = recovery.Env{Concurrency: 1, Log: nil}\n\n" +
		"var _ = recovery.Request{Prefix: \"x\", BreakLock: func(error) bool { return true }}\n"
	dir := writeSources(t, map[string]string{"x.go": src})
	got := closuresInto(dir, "recovery")
	if len(got) != 1 || !strings.Contains(got[0], "recovery.Request's BreakLock") {
		t.Errorf("violations %q", got)
	}
}
