package databricks

import (
	"context"
	"errors"
	"testing"

	"github.com/zbrecover/zbrecover/databricks/uctest"
)

// TestVolumeStorageLocation: Unity Catalog answers a volume's storage location whatever the
// letter case of its names; an unknown volume is ErrNotFound.
func TestVolumeStorageLocation(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	srv.SetVolumeSource(func() []uctest.Volume {
		return []uctest.Volume{{Catalog: "main", Schema: "sales", Name: "staging", StorageLocation: "s3://meta/volumes/4f1c"}}
	})
	ctx := context.Background()
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	c, err := NewClient(ctx, Options{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"main.sales.staging", "Main.SALES.Staging"} {
		got, err := c.VolumeStorageLocation(ctx, name)
		if err != nil || got != "s3://meta/volumes/4f1c" {
			t.Errorf("VolumeStorageLocation(%s) = %q, %v", name, got, err)
		}
	}
	if _, err := c.VolumeStorageLocation(ctx, "main.sales.nothing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown volume: %v, want ErrNotFound", err)
	}
}
