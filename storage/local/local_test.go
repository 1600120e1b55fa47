package local_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

func TestConformance(t *testing.T) {
	dir := t.TempDir()
	storagetest.Run(t, "local", func(t *testing.T, root string) (storage.Backend, storagetest.Put) {
		rootDir := filepath.Join(dir, filepath.FromSlash(root))
		put := func(key string, data []byte) error {
			p := filepath.Join(rootDir, filepath.FromSlash(key))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			return os.WriteFile(p, data, 0o644)
		}
		return local.New(rootDir), put
	})
}

// A root reached through a symbolic link (as /tmp and /var are on macOS, or a table folder
// linked into place) lists the files of the directory it points to.
func TestListSymlinkedRoot(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	for _, k := range []string{"a.parquet", "sub/b.parquet"} {
		p := filepath.Join(real, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	var got []string
	err := local.New(link).List(context.Background(), "", func(o storage.ObjectInfo) error {
		got = append(got, o.Key)
		return nil
	})
	if err != nil || !slices.Equal(got, []string{"a.parquet", "sub/b.parquet"}) {
		t.Fatalf("List through a linked root = %q, %v; want both files", got, err)
	}
}
