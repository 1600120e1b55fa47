package place_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/place"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

func mustParse(t *testing.T, s string) storage.Location {
	t.Helper()
	l, err := storage.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestCheckRules: a candidate that is, lies inside or contains the table's root, another
// table's root or (for an archive or keys place) the run's staging location, in any spelling,
// is refused by the rule that names it, with both places and what to use instead; a place of
// its own is not. Staging and journal places are not compared with the staging location.
func TestCheckRules(t *testing.T) {
	const sas = "?sv=2024-05-04&sp=rl&sig=c2VjcmV0c2lnbmF0dXJl"
	facts := place.Facts{
		Table: mustParse(t, "abfss://lake@acct.dfs.core.windows.net/tables/orders"+sas),
		Others: []storage.Location{mustParse(t, "s3://lake/tables/returns"),
			mustParse(t, "abfss://lake@acct.dfs.core.windows.net/tables/customers")},
		Staging: []storage.Location{mustParse(t, "/Volumes/main/sales/staging/run1")},
	}
	cases := []struct {
		role place.Role
		cand string
		rule place.Rule // "" for accepted
		says string
	}{
		{place.Archive, "wasbs://lake@ACCT.BLOB.CORE.WINDOWS.NET/tables/orders/", place.RuleTableRoot, "is the table's root"},
		{place.Staging, "wasbs://lake@acct.blob.core.windows.net/tables/orders/_zerobus/table_rejected_parquets/x", place.RuleTableRoot, "lies inside the table's root"},
		{place.Journal, "abfs://lake@acct.dfs.core.windows.net/tables", place.RuleTableRoot, "contains the table's root"},
		{place.Keys, "abfss://LAKE@acct.dfs.core.windows.net//tables/./orders2", "", ""},
		{place.Staging, "s3a://lake/tables/returns/_zerobus/table_rejected_parquets/x", place.RuleOtherTable, "lies inside another table's root"},
		{place.Archive, "s3://LAKE/tables/returns/", place.RuleOtherTable, "is another table's root"},
		{place.Archive, "/Volumes/main/sales/STAGING/run1", place.RuleStaging, "is the run's staging location"},
		{place.Archive, "dbfs:/Volumes/Main/Sales/Staging/run1/archive", place.RuleStaging, "lies inside the run's staging location"},
		{place.Keys, "/Volumes/main/sales/staging", place.RuleStaging, "contains the run's staging location"},
		{place.Archive, "/Volumes/main/sales/staging/run10", "", ""},
		{place.Archive, "/Volumes/main/sales/staging/Run1", "", ""},
		{place.Staging, "/Volumes/main/sales/staging/run1", "", ""},
		{place.Journal, "/Volumes/main/sales/staging/run1/journal", "", ""},
		{place.Staging, "s3://other/x/_zerobus/y", place.RuleFallback, "_zerobus/ folder"},
		{place.Journal, "gs://b/t/_delta_log", place.RuleDeltaLog, "_delta_log/ folder"},
		{place.Archive, "s3://lake/x/../tables/orders", place.RulePath, `".." element`},
	}
	for _, c := range cases {
		err := place.Check(context.Background(), c.role, mustParse(t, c.cand), facts)
		if c.rule == "" {
			if err != nil {
				t.Errorf("%s %s: %v, want accepted", c.role.Flag(), c.cand, err)
			}
			continue
		}
		var re *place.RefusedError
		if !errors.As(err, &re) || !errors.Is(err, place.ErrRefused) || re.Rule != c.rule {
			t.Errorf("%s %s: %v, want refused by %s", c.role.Flag(), c.cand, err, c.rule)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.says) || strings.Contains(msg, "c2VjcmV0") {
			t.Errorf("%s %s: %q does not say %q, or shows the SAS", c.role.Flag(), c.cand, msg, c.says)
		}
		if re.Other != "" && !strings.Contains(msg, re.Other) {
			t.Errorf("%s %s: %q does not name the other place %s", c.role.Flag(), c.cand, msg, re.Other)
		}
		if !strings.Contains(msg, "outside") && !strings.Contains(msg, "leave") {
			t.Errorf("%s %s: %q does not say what to use instead", c.role.Flag(), c.cand, msg)
		}
	}
}

// TestCheckLocal: local places are compared as written and through their symbolic links, and
// a folder holding a _delta_log folder (itself, an ancestor, a descendant) is a table's root
// even when no fact names it.
func TestCheckLocal(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "orders")
	unregistered := filepath.Join(dir, "lake", "unregistered")
	for _, d := range []string{filepath.Join(root, "_delta_log"), filepath.Join(root, "_zerobus", "table_rejected_parquets"),
		filepath.Join(unregistered, "_delta_log"), filepath.Join(dir, "archive")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(root, "_zerobus"), link); err != nil {
		t.Fatal(err)
	}
	facts := place.Facts{Table: mustParse(t, "file://"+root)}
	for _, c := range []struct {
		cand, says string
		rule       place.Rule
	}{
		{root, "is the table's root", place.RuleTableRoot},
		{"file://" + dir + "//orders/./", "is the table's root", place.RuleTableRoot},
		{dir, "contains the table's root", place.RuleTableRoot},
		{link, "lies inside the table's root (through a symbolic link)", place.RuleTableRoot},
		{link + "/new/folder", "lies inside the table's root (through a symbolic link)", place.RuleTableRoot},
		{unregistered, "holds a _delta_log folder: it is a table's root", place.RuleDeltaLog},
		{filepath.Join(unregistered, "sub", "dir"), "lies inside a table's root", place.RuleDeltaLog},
		{filepath.Join(dir, "lake"), "contains a table's root", place.RuleDeltaLog},
		{filepath.Join(dir, "archive"), "", ""},
		{filepath.Join(dir, "new", "archive"), "", ""},
	} {
		err := place.Check(context.Background(), place.Archive, mustParse(t, c.cand), facts)
		var re *place.RefusedError
		switch {
		case c.rule == "" && err != nil:
			t.Errorf("%s: %v, want accepted", c.cand, err)
		case c.rule != "" && (!errors.As(err, &re) || re.Rule != c.rule || !strings.Contains(err.Error(), c.says)):
			t.Errorf("%s: %v, want %s: %q", c.cand, err, c.rule, c.says)
		}
	}
}

// TestCheckProbes: on an object store, the candidate, its ancestors and the first page of its
// listing are probed for a _delta_log folder with one listing each, through Facts.Open at the
// store's root; without Open nothing is probed.
func TestCheckProbes(t *testing.T) {
	store := mem.New(mem.WithPageSize(1000)) // lists in pages, as the cloud stores do
	now := time.Now()
	store.Set("tables/loose/_delta_log/00000000000000000000.json", []byte("{}"), now)
	store.Set("lake/nested/t/_delta_log/00000000000000000000.json", []byte("{}"), now)
	store.Set("archive/old/file.parquet", []byte("x"), now)
	var opened []string
	facts := place.Facts{
		Table: mustParse(t, "s3://lake/tables/orders"),
		Open: func(_ context.Context, l storage.Location) (storage.Backend, error) {
			opened = append(opened, l.String())
			return store, nil
		},
	}
	for _, c := range []struct {
		cand, says string
	}{
		{"s3://lake/tables/loose", "holds a _delta_log folder: it is a table's root"},
		{"s3://lake/tables/loose/x/y", "lies inside a table's root (s3://lake/tables/loose holds a _delta_log folder)"},
		{"s3://lake/lake", "contains a table's root (s3://lake/lake/nested/t holds a _delta_log folder)"},
		{"s3://lake/archive", ""},
	} {
		err := place.Check(context.Background(), place.Archive, mustParse(t, c.cand), facts)
		if c.says == "" {
			if err != nil {
				t.Errorf("%s: %v", c.cand, err)
			}
			continue
		}
		if !errors.Is(err, place.ErrRefused) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %q", c.cand, err, c.says)
		}
	}
	for _, o := range opened {
		if o != "s3://lake/" {
			t.Errorf("opened %s, want the bucket's root only", o)
		}
	}
	facts.Open = nil
	if err := place.Check(context.Background(), place.Archive, mustParse(t, "s3://lake/tables/loose"), facts); err != nil {
		t.Errorf("without Open: %v", err)
	}
}

// TestCheckResolvesVolumes: a volume is compared through its storage location too, when
// Resolve knows it: a cloud URL naming the staging volume's folder is the staging location,
// and a volume whose storage lies in the table's root is inside it.
func TestCheckResolvesVolumes(t *testing.T) {
	facts := place.Facts{
		Table:   mustParse(t, "s3://lake/tables/orders"),
		Staging: []storage.Location{mustParse(t, "/Volumes/main/sales/staging/run1")},
		Resolve: func(_ context.Context, l storage.Location) (storage.Location, bool, error) {
			switch l.Volume {
			case "staging":
				loc := mustParse(t, "s3://meta/volumes/4f1c")
				return loc.Join(l.Path), true, nil
			case "odd":
				loc := mustParse(t, "s3://lake/tables/orders/odd")
				return loc.Join(l.Path), true, nil
			}
			return storage.Location{}, false, nil
		},
	}
	for _, c := range []struct {
		role       place.Role
		cand, says string
	}{
		{place.Archive, "s3://meta/volumes/4f1c/run1", "is the run's staging location (through its volume's storage location s3://meta/volumes/4f1c/run1)"},
		{place.Archive, "/Volumes/main/sales/odd/x", "lies inside the table's root (through the volume's storage location s3://lake/tables/orders/odd/x)"},
		{place.Archive, "/Volumes/main/sales/other/x", ""},
	} {
		err := place.Check(context.Background(), c.role, mustParse(t, c.cand), facts)
		if c.says == "" {
			if err != nil {
				t.Errorf("%s: %v", c.cand, err)
			}
			continue
		}
		if !errors.Is(err, place.ErrRefused) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %q", c.cand, err, c.says)
		}
	}
}
