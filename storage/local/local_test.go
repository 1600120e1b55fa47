package local_test

import (
	"os"
	"path/filepath"
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
