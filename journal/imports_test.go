package journal

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports keeps the package's dependencies to the standard library, storage and
// internal/redact, so that everything it records is justified by its own records.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/zbrecover/zbrecover/storage":         true,
		"github.com/zbrecover/zbrecover/internal/redact": true,
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(p, "/")
			if !allowed[p] && strings.Contains(first, ".") {
				t.Errorf("%s imports %s: journal may import only the standard library, storage and internal/redact", name, p)
			}
		}
	}
}
