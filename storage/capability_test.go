package storage_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mock"
)

func TestCapabilitiesOf(t *testing.T) {
	if c := storage.CapabilitiesOf(&mock.Backend{}); c != 0 || c.String() != "none" {
		t.Errorf("plain mock: %s", c)
	}
	c := storage.CapabilitiesOf(&mock.BatchBackend{Backend: mock.Backend{PutFn: nil}})
	if c != storage.CanBatchDelete {
		t.Errorf("batch mock: %s", c)
	}
	all := storage.CanBatchDelete | storage.CanListPages | storage.CanPut | storage.CanCopy | storage.CanCopyFrom
	if all.String() != "batch-delete,list-pages,put,copy,copy-from" || !all.Has(storage.CanPut|storage.CanCopy) || c.Has(all) {
		t.Errorf("String/Has: %s", all)
	}
}

// bareAssertion matches a type assertion to an optional storage interface. Decorators carry
// every optional method, so such an assertion answers yes whatever they wrap: callers use
// storage.AsBatchDeleter, AsPager, AsPutter and AsCopier instead.
var bareAssertion = regexp.MustCompile(`\.\((storage\.)?(BatchDeleter|Pager|Putter|Copier|CopierFrom)\)`)

// TestNoBareCapabilityAssertions keeps the rule of capability.go for the whole module: the
// only bare assertions are in the helpers themselves and in the test that checks what a
// decorator's unsupported method returns.
func TestNoBareCapabilityAssertions(t *testing.T) {
	allowed := map[string]bool{"storage/capability.go": true, "storage/decorate_test.go": true}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Skipf("module root not found: %v", err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if allowed[rel] {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			if bareAssertion.MatchString(line) {
				t.Errorf("%s:%d: %s: use storage.As… (a decorator implements every optional interface)", rel, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
