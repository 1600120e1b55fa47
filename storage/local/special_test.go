package local_test

import (
	"context"
	"errors"
	"fmt"
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

// Delete, Put and Copy refuse keys that are, or run through, a symbolic link: a linked file
// and a linked folder that point outside the root leave everything outside untouched.
func TestWritesAndDeletesRefuseLinks(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.parquet")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	must(os.MkdirAll(filepath.Join(root, "f"), 0o755))
	must(os.WriteFile(filepath.Join(root, "f", "a.parquet"), []byte("inside"), 0o644))
	must(os.Symlink(secret, filepath.Join(root, "f", "link.parquet")))
	must(os.Symlink(outside, filepath.Join(root, "f", "linkdir")))
	must(os.Symlink(outside, filepath.Join(root, "g")))
	reset := func() {
		t.Helper()
		must(os.WriteFile(secret, []byte("outside the root"), 0o644))
	}
	intact := func(what string) {
		t.Helper()
		got, err := os.ReadFile(secret)
		if err != nil || string(got) != "outside the root" {
			t.Errorf("%s: the file outside the root reads %q, %v", what, got, err)
		}
		entries, _ := os.ReadDir(outside)
		if len(entries) != 1 {
			t.Errorf("%s: %d entries outside the root, want 1", what, len(entries))
		}
	}
	b := local.New(root)
	ctx := context.Background()
	refused := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "symbolic link, not followed") || errors.Is(err, storage.ErrNotExist) {
			t.Errorf("%s: %v, want a refusal naming the link", what, err)
		}
	}
	reset()
	for _, key := range []string{"f/link.parquet", "f/linkdir/secret.parquet", "g/secret.parquet"} {
		refused("Delete "+key, b.Delete(ctx, key, storage.Precondition{}))
		intact("Delete " + key)
		refused("conditional Delete "+key, b.Delete(ctx, key, storage.Precondition{Size: 16}))
		intact("conditional Delete " + key)
		for _, createOnly := range []bool{false, true} {
			_, err := b.Put(ctx, key, strings.NewReader("overwritten"), 11, storage.PutOptions{CreateOnly: createOnly})
			refused(fmt.Sprintf("Put %s (create-only %v)", key, createOnly), err)
			intact("Put " + key)
		}
		_, err := b.Copy(ctx, "f/a.parquet", key, storage.Precondition{}, storage.PutOptions{})
		refused("Copy to "+key, err)
		intact("Copy to " + key)
		_, err = b.Copy(ctx, key, "f/copied.parquet", storage.Precondition{}, storage.PutOptions{})
		refused("Copy from "+key, err)
		if _, err := os.Stat(filepath.Join(root, "f", "copied.parquet")); !os.IsNotExist(err) {
			t.Errorf("Copy from %s wrote the copy: %v", key, err)
		}
	}
	// A new folder under a linked one is not created outside either.
	_, err := b.Put(ctx, "g/new/x.parquet", strings.NewReader("x"), 1, storage.PutOptions{})
	refused("Put under a linked folder", err)
	intact("Put under a linked folder")
	// The links themselves are still there; the tree's own files still work.
	for _, l := range []string{"f/link.parquet", "f/linkdir", "g"} {
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(l))); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("link %s: %v", l, err)
		}
	}
	if _, err := b.Put(ctx, "f/new/b.parquet", strings.NewReader("new"), 3, storage.PutOptions{CreateOnly: true}); err != nil {
		t.Errorf("Put inside the root: %v", err)
	}
	if err := b.Delete(ctx, "f/a.parquet", storage.Precondition{}); err != nil {
		t.Errorf("Delete inside the root: %v", err)
	}
}
