package cleanup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/zbrecover/zbrecover/journal"
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
		// The staging volume in other letter case, and through dbfs: in capitals.
		{"/Volumes/main/sales/STAGING/run1", true},
		{"DBFS:/Volumes/Main/Sales/Staging/run1/x", true},
		{"/Volumes/main/sales/staging/RUN1", false},
	} {
		err := CheckArchive(tc.archive, rootURL, staging, []string{"file://" + other})
		if got := errors.Is(err, ErrArchiveLocation); got != tc.refused {
			t.Errorf("CheckArchive(%s): %v, want refused %v", tc.archive, err, tc.refused)
		}
	}
}

// TestCheckArchiveAzureSpellings: an Azure table root is the same place through abfss:// and
// wasbs://, the dfs and the blob host, a host in capitals and with a SAS.
func TestCheckArchiveAzureSpellings(t *testing.T) {
	root := "abfss://lake@acct.dfs.core.windows.net/tables/orders?sv=2024&sig=REDACTED"
	for _, tc := range []struct {
		archive string
		refused bool
	}{
		{"wasbs://lake@acct.blob.core.windows.net/tables/orders", true},
		{"wasbs://lake@ACCT.BLOB.CORE.WINDOWS.NET/tables/orders/_zerobus/archive", true},
		{"abfs://lake@acct.dfs.core.windows.net/tables", true},
		{"wasbs://lake@acct.blob.core.windows.net/archive/orders", false},
	} {
		err := CheckArchive(tc.archive, root, nil, nil)
		if got := errors.Is(err, ErrArchiveLocation); got != tc.refused {
			t.Errorf("CheckArchive(%s): %v, want refused %v", tc.archive, err, tc.refused)
		}
	}
}

// TestConfinedComparesPlaces: a run whose staged copies are recorded inside the table's
// root, in another spelling of it, is refused.
func TestConfinedComparesPlaces(t *testing.T) {
	for _, tc := range []struct {
		staged, root string
		refused      bool
	}{
		{"wasbs://lake@ACCT.blob.core.windows.net/tables/orders/staged", "abfss://lake@acct.dfs.core.windows.net/tables/orders", true},
		{"s3a://lake/tables//orders/./staged", "s3://lake/tables/orders", true},
		{"s3://lake/tables/orders2", "s3://lake/tables/orders", false},
		{"/Volumes/main/sales/staging/run1", "s3://lake/tables/orders", false},
	} {
		st := &journal.State{Run: "r1", Staging: []journal.Staging{{Location: tc.staged}}}
		err := Confined(st, "_zerobus/table_rejected_parquets/", tc.root)
		if got := errors.Is(err, ErrOutside); got != tc.refused {
			t.Errorf("Confined(staged at %s, root %s): %v, want refused %v", tc.staged, tc.root, err, tc.refused)
		}
	}
}
