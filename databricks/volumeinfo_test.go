package databricks

import (
	"context"
	"errors"
	"strings"
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

// TestVolumes: the volumes of a schema, every page; a schema Unity Catalog does not know is
// ErrNotFound.
func TestVolumes(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	srv.SetPageSize(2)
	srv.SetVolumeSource(func() []uctest.Volume {
		return []uctest.Volume{{Catalog: "main", Schema: "sales", Name: "staging"}, {Catalog: "main", Schema: "sales", Name: "landing"},
			{Catalog: "main", Schema: "sales", Name: "archive"}, {Catalog: "main", Schema: "ops", Name: "scratch"}}
	})
	ctx := context.Background()
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	c, err := NewClient(ctx, Options{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Volumes(ctx, "main", "sales")
	if err != nil || strings.Join(got, ",") != "archive,landing,staging" {
		t.Errorf("Volumes(main, sales) = %q, %v", got, err)
	}
	if _, err := c.Volumes(ctx, "main", "nothing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown schema: %v, want ErrNotFound", err)
	}
}

// TestCheckVolume: a volume Unity Catalog does not know is a *MissingVolumeError that lists
// the volumes of its schema with the one probably meant.
func TestCheckVolume(t *testing.T) {
	cleanEnv(t)
	srv := newFake(t)
	srv.SetVolumeSource(func() []uctest.Volume {
		return []uctest.Volume{{Catalog: "main", Schema: "sales", Name: "staging"}, {Catalog: "main", Schema: "sales", Name: "landing"}}
	})
	ctx := context.Background()
	t.Setenv("DATABRICKS_TOKEN", goodToken)
	c, err := NewClient(ctx, Options{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckVolume(ctx, "main", "sales", "staging"); err != nil {
		t.Errorf("an existing volume: %v", err)
	}
	err = c.CheckVolume(ctx, "main", "sales", "stagin")
	var me *MissingVolumeError
	want := "volume main.sales.stagin does not exist, or the identity may not see it; did you mean main.sales.staging? (the volumes of main.sales: landing, staging)"
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &me) || err.Error() != want || strings.Join(me.Closest(), ",") != "staging" {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	err = c.CheckVolume(ctx, "main", "salse", "staging")
	if !errors.As(err, &me) || !me.SchemaMissing || !strings.Contains(err.Error(), "the schema main.salse is not found either") {
		t.Errorf("a missing schema: %v", err)
	}
}
