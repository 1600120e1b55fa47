//go:build cgo

package recovery

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
)

// BenchmarkStage10kToVolume copies 10,000 small fallback files from a local root to a
// volume of the local workspace through the Files API, 16 at a time (reload --stage-to's
// default), each copy read, written create-free and checked by size.
func BenchmarkStage10kToVolume(b *testing.B) {
	ctx := context.Background()
	root := b.TempDir()
	data, err := pqgen.Bytes(e2etest.OldFiles, `[{"id":1,"customer_id":"c","amount":"1.00"}]`, pqgen.Options{})
	if err != nil {
		b.Fatal(err)
	}
	n := benchFiles(10_000)
	for i := 0; i < n; i++ {
		if err := pqgen.WriteFile(filepath.Join(root, fmt.Sprintf("d%02d", i%10), fmt.Sprintf("f%05d.parquet", i)), data); err != nil {
			b.Fatal(err)
		}
	}
	src := local.New(root)
	ws, err := workspace.Start(workspace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	if _, err := ws.Warehouse().Engine().Exec(ctx, "CREATE SCHEMA IF NOT EXISTS main.sales"); err != nil {
		b.Fatal(err)
	}
	if _, err := ws.CreateVolume("main.sales.staging"); err != nil {
		b.Fatal(err)
	}
	b.Setenv("DATABRICKS_TOKEN", ws.Token())
	b.Setenv("DATABRICKS_CONFIG_FILE", filepath.Join(b.TempDir(), "none"))
	c, err := databricks.NewClient(ctx, databricks.Options{Host: ws.URL()})
	if err != nil {
		b.Fatal(err)
	}
	var keys []storage.ObjectInfo
	_ = src.List(ctx, "", func(o storage.ObjectInfo) error { keys = append(keys, o); return nil })
	for i := 0; i < b.N; i++ {
		v, err := c.Volume(fmt.Sprintf("/Volumes/main/sales/staging/run%d", i))
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		sem := make(chan struct{}, 16)
		errs := make(chan error, len(keys))
		for _, o := range keys {
			sem <- struct{}{}
			go func() {
				defer func() { <-sem }()
				_, err := storage.CopyObject(ctx, src, o.Key, v, o.Key, o.Version(), storage.PutOptions{})
				errs <- err
			}()
		}
		for range keys {
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
		}
		el := time.Since(start)
		b.ReportMetric(float64(el.Milliseconds()), "ms")
		b.ReportMetric(float64(len(keys))/el.Seconds(), "files/s")
		if !strings.HasPrefix(v.Location(), "/Volumes/") {
			b.Fatal(v.Location())
		}
	}
}

// benchFiles is ZBRECOVER_BENCH_FILES, or def.
func benchFiles(def int) int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("ZBRECOVER_BENCH_FILES"), &n); err == nil && n > 0 {
		return n
	}
	return def
}
