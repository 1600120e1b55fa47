package all_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/azure/azuretest"
	"github.com/zbrecover/zbrecover/storage/gcs/gcstest"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

func TestMain(m *testing.M) { azuretest.Main(m) }

func TestSchemes(t *testing.T) {
	if got := all.Registry().Schemes(); !slices.Equal(got, []string{"az", "file", "gs", "s3"}) {
		t.Errorf("Schemes() = %q", got)
	}
	_, err := all.Registry().Open(context.Background(), "ftp://host/x", storage.Config{})
	if err == nil || !strings.Contains(err.Error(), "s3://") {
		t.Errorf("Open(ftp://...) = %v, want an error naming the supported schemes", err)
	}
}

// TestOpenEveryScheme opens one object through the registry on each backend.
func TestOpenEveryScheme(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p", "k"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	s3srv := s3test.NewServer(t)
	gcssrv := gcstest.NewServer(t)
	cases := []struct {
		name string
		url  string
		cfg  storage.Config
		put  func(string, []byte) error
	}{
		{"local path", filepath.Join(dir, "p"), storage.Config{}, nil},
		{"file URL", "file://" + filepath.ToSlash(filepath.Join(dir, "p")), storage.Config{}, nil},
		{"s3", s3srv.URLFor("p"), s3srv.Config(), s3srv.Put},
		{"gs", gcssrv.URLFor("p"), gcssrv.Config(), gcssrv.Put},
		{"azure", "", storage.Config{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "azure" {
				srv := azuretest.NewServer(t)
				c.url, c.cfg, c.put = srv.URLFor("p"), srv.Config(), srv.Put
			}
			if c.put != nil {
				if err := c.put("p/k", []byte("data")); err != nil {
					t.Fatal(err)
				}
			}
			b, err := all.Registry().Open(ctx, c.url, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := storage.ReadAll(ctx, b, "k", 0, -1)
			if err != nil || string(got) != "data" {
				t.Errorf("read %s/k = %q, %v", b.Location(), got, err)
			}
		})
	}
}
