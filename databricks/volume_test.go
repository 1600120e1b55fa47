//go:build cgo

package databricks_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

func volumeClient(t *testing.T) (*databricks.Client, *workspace.Workspace) {
	t.Helper()
	ws, err := workspace.Start(workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	if _, err := ws.Warehouse().Engine().Exec(context.Background(), "CREATE SCHEMA IF NOT EXISTS main.sales"); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.CreateVolume("main.sales.recovery"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABRICKS_TOKEN", ws.Token())
	t.Setenv("DATABRICKS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	c, err := databricks.NewClient(context.Background(), databricks.Options{Host: ws.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return c, ws
}

// TestVolumeConformance: the Files API backend passes the storage conformance suite against
// the local workspace's Files API.
func TestVolumeConformance(t *testing.T) {
	c, _ := volumeClient(t)
	storagetest.Run(t, "volume", func(t *testing.T, root string) (storage.Backend, storagetest.Put) {
		v, err := c.Volume("/Volumes/main/sales/recovery/" + root)
		if err != nil {
			t.Fatal(err)
		}
		return v, func(key string, data []byte) error {
			_, err := v.Put(context.Background(), key, bytes.NewReader(data), int64(len(data)), storage.PutOptions{})
			return err
		}
	})
}

func TestVolumeCreateOnlyAndPaths(t *testing.T) {
	c, _ := volumeClient(t)
	if _, err := c.Volume("/tmp/x"); err == nil {
		t.Error("a non-volume path was accepted")
	}
	v, err := c.Volume("/Volumes/main/sales/recovery/run1")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := v.Put(ctx, "a/b.parquet", strings.NewReader("one"), 3, storage.PutOptions{CreateOnly: true}); err != nil {
		t.Fatal(err)
	}
	_, err = v.Put(ctx, "a/b.parquet", strings.NewReader("two!"), 4, storage.PutOptions{CreateOnly: true})
	if !errors.Is(err, storage.ErrExist) {
		t.Fatalf("second create-only put: %v", err)
	}
	got, err := storage.ReadAll(ctx, v, "a/b.parquet", 0, -1)
	if err != nil || string(got) != "one" {
		t.Errorf("content %q, %v", got, err)
	}
	if v.Location() != "/Volumes/main/sales/recovery/run1" {
		t.Errorf("location %s", v.Location())
	}
}
