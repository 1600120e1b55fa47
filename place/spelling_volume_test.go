//go:build cgo

package place_test

import (
	"context"
	"errors"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/place"
	"github.com/zbrecover/zbrecover/storage"
)

// volumeWorkspace starts the local workspace with the volumes main.sales.staging and
// main.sales.other, and a client of it.
func volumeWorkspace(t *testing.T) (*databricks.Client, *workspace.Workspace) {
	t.Helper()
	ws, err := workspace.Start(workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	if _, err := ws.Warehouse().Engine().Exec(context.Background(), "CREATE SCHEMA IF NOT EXISTS main.sales"); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"main.sales.staging", "main.sales.other"} {
		if _, err := ws.CreateVolume(v); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("DATABRICKS_TOKEN", ws.Token())
	t.Setenv("DATABRICKS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	c, err := databricks.NewClient(context.Background(), databricks.Options{Host: ws.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return c, ws
}

// TestSpellingsVolume: volume places spelt /Volumes/… and dbfs:/Volumes/… with the catalog,
// schema and volume names in any case (Unity Catalog identifiers are case-insensitive, and
// the local workspace's Files API agrees), doubled slashes, "./" and trailing slashes, in two
// volumes; the folders below a volume keep their case.
func TestSpellingsVolume(t *testing.T) {
	c, _ := volumeWorkspace(t)
	volumes := []string{"staging", "other"}
	factory := databricks.VolumeFactory(func(context.Context) (*databricks.Client, error) { return c, nil })
	checkSpellings(t, spellings{
		stores: volumes,
		spell: func(r *rand.Rand, i int, els []string) string {
			prefix := []string{"/Volumes", "dbfs:/Volumes", "DBFS:/Volumes"}[r.Intn(3)]
			return prefix + "/" + randomCase(r, "main") + "/" + randomCase(r, "sales") + "/" + randomCase(r, volumes[i]) + joinHostile(r, els)
		},
		open: func(ctx context.Context, loc storage.Location) (storage.Backend, error) {
			return factory.Open(ctx, loc, storage.Config{})
		},
	})
}

// TestCheckVolumeThroughItsStorage: with the volume's storage location as Unity Catalog (the
// local workspace) records it, the local folder of the staging volume is the staging location.
func TestCheckVolumeThroughItsStorage(t *testing.T) {
	c, ws := volumeWorkspace(t)
	dir, err := ws.Warehouse().Engine().VolumeFile("/Volumes/main/sales/staging")
	if err != nil {
		t.Fatal(err)
	}
	resolve := func(ctx context.Context, l storage.Location) (storage.Location, bool, error) {
		raw, err := c.VolumeStorageLocation(ctx, l.Catalog+"."+l.Schema+"."+l.Volume)
		if err != nil {
			return storage.Location{}, false, err
		}
		root, err := storage.Parse(raw)
		return root.Join(l.Path), err == nil, err
	}
	facts := place.Facts{Table: mustParse(t, "s3://lake/tables/orders"),
		Staging: []storage.Location{mustParse(t, "/Volumes/MAIN/sales/Staging/run1")}, Resolve: resolve}
	err = place.Check(context.Background(), place.Archive, mustParse(t, "file://"+filepath.Join(dir, "run1")), facts)
	if !errors.Is(err, place.ErrRefused) || !strings.Contains(err.Error(), "is the run's staging location (through its volume's storage location") {
		t.Fatalf("the staging volume's folder as a local path: %v", err)
	}
	if err := place.Check(context.Background(), place.Archive, mustParse(t, "file://"+filepath.Join(dir, "run2")), facts); err != nil {
		t.Errorf("another folder of the volume: %v", err)
	}
}
