package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
)

// Links and special files in the tree are listed as special, never followed or opened, and a
// key through a linked folder is refused: nothing is read from outside the root.
func TestLinksAndSpecialFilesAreNotFollowed(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.parquet"), []byte("outside the root"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "f")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(dir, 0o755))
	must(os.WriteFile(filepath.Join(dir, "a.parquet"), []byte("inside"), 0o644))
	must(os.Symlink(filepath.Join(outside, "secret.parquet"), filepath.Join(dir, "link.parquet")))
	must(os.Symlink(outside, filepath.Join(dir, "linkdir")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo.parquet"), 0o644))
	must(os.Symlink(outside, filepath.Join(root, "g")))

	b := local.New(root)
	ctx := context.Background()
	got := map[string]string{}
	must(b.List(ctx, "", func(o storage.ObjectInfo) error {
		got[o.Key] = o.Special
		return nil
	}))
	want := map[string]string{"f/a.parquet": "", "f/fifo.parquet": "fifo", "f/link.parquet": "symlink", "f/linkdir": "symlink", "g": "symlink"}
	if len(got) != len(want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: special %q, want %q", k, got[k], v)
		}
	}
	for _, key := range []string{"f/link.parquet", "f/linkdir/secret.parquet", "g/secret.parquet", "f/fifo.parquet"} {
		if _, err := b.Stat(ctx, key); err == nil {
			t.Errorf("Stat(%s) succeeded", key)
		}
		rc, err := b.ReadRange(ctx, key, 0, -1)
		if err == nil {
			rc.Close()
			t.Errorf("ReadRange(%s) succeeded", key)
		} else if errors.Is(err, storage.ErrNotExist) || !strings.Contains(err.Error(), "not") {
			t.Errorf("ReadRange(%s): %v", key, err)
		}
	}
	if err := b.List(ctx, "g/", func(o storage.ObjectInfo) error {
		t.Errorf("listed %s through a link", o.Key)
		return nil
	}); err == nil || !strings.Contains(err.Error(), "symbolic link, not followed") {
		t.Errorf("List through a linked folder: %v", err)
	}
}
