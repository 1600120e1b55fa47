package tableref

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

func TestIsTableName(t *testing.T) {
	for s, want := range map[string]bool{
		"main.sales.orders":         true,
		"main.ventes.commandes_été": true,
		"main.`my-sales`.orders":    true,
		"main.`a``b`.c":             true,
		"main.`my sales`.orders":    false, // Unity Catalog names hold no space
		"main.sales":                false,
		"./a.b.c":                   false,
		"s3://bucket/a.b.c":         false,
		"main.sales.orders; DROP x": false,
		"main.sales.`orders`; --`":  false,
	} {
		if got := IsTableName(s); got != want {
			t.Errorf("IsTableName(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestSpecParse(t *testing.T) {
	s := Spec{}
	if err := s.Parse([]string{"main.`my sales`.orders"}); !IsUsage(err) {
		t.Errorf("a quoted name Unity Catalog cannot hold: %v", err)
	}
	s = Spec{Table: "a.b.c"}
	if err := s.Parse([]string{"s3://x/y"}); !IsUsage(err) {
		t.Errorf("TARGET with --table: %v", err)
	}
	s = Spec{}
	if err := s.Parse(nil); !IsUsage(err) {
		t.Errorf("no target: %v", err)
	}
}

// TestBareWordTarget: a word that is neither catalog.schema.table nor an existing path is a
// usage error that says both, instead of a file system error about a path nobody meant.
func TestBareWordTarget(t *testing.T) {
	t.Chdir(t.TempDir())
	s := Spec{}
	err := s.Parse([]string{"orders"})
	want := "TARGET orders is neither a table name nor a local path: a table name has three parts, catalog.schema.table " +
		"(such as main.sales.orders); and no file or directory orders exists in the current directory. Give the table's full " +
		"name, or its storage root (s3://, gs://, abfss://, wasbs://, file:// or an existing local directory)"
	if !IsUsage(err) || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	s = Spec{}
	if err := s.Parse([]string{"sales.orders"}); !IsUsage(err) || !strings.Contains(err.Error(), "catalog.schema.table, where sales.orders has 2; and no file") {
		t.Errorf("two parts: %v", err)
	}
	// An existing directory of that name is a local root.
	if err := os.Mkdir("orders", 0o755); err != nil {
		t.Fatal(err)
	}
	s = Spec{}
	if err := s.Parse([]string{"orders"}); err != nil || s.Root != "orders" {
		t.Errorf("existing directory: %v, root %q", err, s.Root)
	}
	// A path with a separator is left to the storage check.
	s = Spec{}
	if err := s.Parse([]string{"./nothing"}); err != nil || s.Root != "./nothing" {
		t.Errorf("a path: %v", err)
	}
}

func TestResolveRootAndNeedsDatabricks(t *testing.T) {
	b := mem.New()
	r := &Resolver{Open: func(context.Context, storage.Location, storage.Config) (storage.Backend, error) { return b, nil }}
	tgt, err := r.Resolve(context.Background(), Spec{Root: "s3://lake/orders"}, Read)
	if err != nil || tgt.HasName || tgt.Loc.URL() != "s3://lake/orders" || tgt.Root != b {
		t.Fatalf("root target %+v, %v", tgt, err)
	}
	if _, err := r.Resolve(context.Background(), Spec{Table: "main.sales.orders"}, Read); !errors.Is(err, ErrNeedsDatabricks) {
		t.Errorf("a table name without a workspace: %v", err)
	}
}
