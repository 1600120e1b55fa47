package cleanup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckArchive: an archive location equal to, inside or containing the table's root, a
// staging location or another table's root is refused, however it is written (a path or a
// file:// URL, "dbfs:", a trailing or doubled "/", a query, a symbolic link to it); a
// separate place is not.
func TestCheckArchive(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "orders")
	other := filepath.Join(dir, "returns")
	archive := filepath.Join(dir, "archive")
	for _, d := range []string{filepath.Join(root, "_zerobus", "table_rejected_parquets"), other, archive} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(root, "_zerobus"), link); err != nil {
		t.Fatal(err)
	}
	rootURL := "file://" + root
	staging := []string{"/Volumes/main/sales/staging/run1"}
	for _, tc := range []struct {
		archive string
		refused bool
	}{
		{rootURL, true},
		{root, true},
		{rootURL + "/", true},
		{"file://" + dir + "//orders/./", true},
		{rootURL + "/_zerobus/table_rejected_parquets", true},
		{dir, true},
		{link, true},
		{link + "/new/folder", true},
		{"/Volumes/main/sales/staging/run1", true},
		{"dbfs:/Volumes/main/sales/staging/run1/", true},
		{"/Volumes/main/sales/staging", true},
		{"/Volumes/main/sales/staging/run1/archive", true},
		{"file://" + other + "?x=1", true},
		{archive, false},
		{"file://" + archive + "/2026", false},
		{"/Volumes/main/sales/staging/run10", false},
		{"/Volumes/main/sales/archive", false},
		{"s3://bucket/orders", false},
	} {
		err := CheckArchive(tc.archive, rootURL, staging, []string{"file://" + other})
		if got := errors.Is(err, ErrArchiveLocation); got != tc.refused {
			t.Errorf("CheckArchive(%s): %v, want refused %v", tc.archive, err, tc.refused)
		}
	}
}
