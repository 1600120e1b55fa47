package inspect_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/storage/local"
)

// Symbolic links and FIFOs in a local fallback folder are other objects, not files; preview of
// a link out of the root is refused.
func TestLinksAreOtherObjects(t *testing.T) {
	f := newFixture(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.parquet")
	if err := os.WriteFile(secret, f.a1, 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, filepath.FromSlash(prefix))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.parquet"), f.a1, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "link.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.parquet"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := local.New(root)
	rep, err := inspect.Run(context.Background(), b, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Files != 1 || rep.Totals.OtherObjects != 2 || rep.Totals.Unreadable != 0 {
		t.Errorf("totals %+v, want 1 file and 2 other objects", rep.Totals)
	}
	if _, err := inspect.Preview(context.Background(), b, "link.parquet", inspect.PreviewOptions{}); err == nil {
		t.Error("preview followed a link out of the root")
	}
}
