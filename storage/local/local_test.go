package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// A folder is not an object: deleting its name removes nothing, as on an object store.
func TestDeleteFolderKeepsIt(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"empty", "full"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "full", "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := local.New(dir)
	ctx := context.Background()
	for _, key := range []string{"empty", "full"} {
		if err := b.Delete(ctx, key, storage.Precondition{}); err != nil {
			t.Errorf("Delete(%q), a folder: %v, want nil (no such object)", key, err)
		}
		if fi, err := os.Stat(filepath.Join(dir, key)); err != nil || !fi.IsDir() {
			t.Errorf("folder %q after Delete: %v", key, err)
		}
		cond := storage.Precondition{Size: 1, ModTime: time.Now()}
		if err := b.Delete(ctx, key, cond); !errors.Is(err, storage.ErrNotExist) {
			t.Errorf("conditional Delete(%q), a folder: %v, want ErrNotExist", key, err)
		}
	}
}

// A failed or refused Put leaves no temporary file behind, and the temporary names are not
// keys.
func TestPutLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	b := local.New(dir)
	ctx := context.Background()
	if _, err := b.Put(ctx, "d/k", strings.NewReader("abc"), 3, storage.PutOptions{CreateOnly: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "d/k", strings.NewReader("abcd"), 4, storage.PutOptions{CreateOnly: true}); !errors.Is(err, storage.ErrExist) {
		t.Fatalf("second create-only Put: %v", err)
	}
	if _, err := b.Put(ctx, "d/short", strings.NewReader("ab"), 3, storage.PutOptions{}); err == nil {
		t.Fatal("short Put succeeded")
	}
	if _, err := b.Put(ctx, "d/k/under-a-file", strings.NewReader("x"), 1, storage.PutOptions{}); err == nil {
		t.Fatal("Put under a file succeeded")
	}
	entries, err := os.ReadDir(filepath.Join(dir, "d"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "k" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("folder holds %q, want only k", names)
	}
	if _, err := b.Put(ctx, "d/.zbrecover-put-1", strings.NewReader("x"), 1, storage.PutOptions{}); err == nil {
		t.Error("Put of a temporary file's name succeeded")
	}
}
