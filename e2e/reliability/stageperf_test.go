//go:build demo && cgo

package reliability

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// stagePerfFiles is how many files the staging measures copy: ZBRECOVER_PERF_FILES, else
// 10,000.
func stagePerfFiles(t *testing.T) int {
	if v := os.Getenv("ZBRECOVER_PERF_FILES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("ZBRECOVER_PERF_FILES=%q", v)
		}
		return n
	}
	return 10_000
}

// stagedLine reads reload's "staged" line (-v under -o json): the files staged and the time
// the staging step took, claims included.
func stagedLine(t *testing.T, stderr string) (files int, elapsed, claims time.Duration) {
	t.Helper()
	for _, l := range logLines(stderr) {
		if l["msg"] != "staged" {
			continue
		}
		copied, _ := strconv.Atoi(l["copied"])
		reused, _ := strconv.Atoi(l["reused"])
		e, err1 := time.ParseDuration(l["elapsed"])
		c, err2 := time.ParseDuration(l["claims"])
		if err1 != nil || err2 != nil {
			t.Fatalf("staged line %v", l)
		}
		return copied + reused, e, c
	}
	t.Fatalf("no staged line at -v:\n%.3000s", stderr)
	return 0, 0, 0
}

// TestReliabStagePerformance measures reload --stage-to through the release binary: 10,000
// one-row files staged to a volume of `demo serve` whose Files API takes 20 ms a request,
// and to an external location on the S3 emulator in the bucket of the table's root (one
// server-side copy a file). It reports files per second of the staging step and of the whole
// reload, and asserts only that every file arrived and every row is in the table once. Run
// with ZBRECOVER_PERF=1 (ZBRECOVER_PERF_FILES=N for another count, ZBRECOVER_PERF_CONCURRENCY
// for --concurrency, default 64).
func TestReliabStagePerformance(t *testing.T) {
	if os.Getenv("ZBRECOVER_PERF") == "" {
		t.Skip("a measure, not a check: ZBRECOVER_PERF=1 runs it")
	}
	n := stagePerfFiles(t)
	conc := os.Getenv("ZBRECOVER_PERF_CONCURRENCY")
	if conc == "" {
		conc = "64"
	}
	demoBin, release := reliabBinaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	t.Run("volume-20ms", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "orders")
		e2etest.WriteOneRowFiles(t, root, 0, n)
		w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root)
		s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
		s.Apply(map[string]any{"latency": map[string]any{"files_ms": 20}})
		start := time.Now()
		code, out, errOut := s.Within(8*time.Minute, "-v", "--no-progress", "--concurrency", conc, "-o", "json", "reload", "main.sales.orders",
			"--rename", "customer_id=customer_key", "--stage-to", "/Volumes/main/sales/staging/perf", "--yes")
		whole := time.Since(start)
		if r := decodeStatus(t, out); code != 0 || r.Status != "verified" || r.Staged != n {
			t.Fatalf("reload: exit %d %+v\nstderr: %.3000s", code, r, errOut)
		}
		files, elapsed, claims := stagedLine(t, errOut)
		t.Logf("volume, Files API +20 ms, --concurrency %s: %d files staged in %s (claims %s, copies %s): %.0f files/s, copies alone %.0f files/s; whole reload %s: %.0f files/s",
			conc, files, elapsed, claims, elapsed-claims, float64(files)/elapsed.Seconds(), float64(files)/(elapsed-claims).Seconds(), whole.Round(time.Millisecond), float64(n)/whole.Seconds())
		if rows, distinct := s.FileRows("main.sales.orders"); rows != int64(n) || distinct != int64(n) {
			t.Errorf("%d rows (%d distinct ids), want %d once each", rows, distinct, n)
		}
		w.Stop()
	})

	t.Run("s3-server-side", func(t *testing.T) {
		srv := s3test.NewServer(t)
		dir := t.TempDir()
		if _, err := deltatest.Write(dir, deltatest.Table{Schema: e2etest.TableSchema}); err != nil {
			t.Fatal(err)
		}
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			return srv.Put("orders/"+filepath.ToSlash(rel), data)
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			data, err := pqgen.Bytes(e2etest.OldFiles, fmt.Sprintf(`[{"id":%d,"customer_id":"c%d","amount":"1.25"}]`, i+1, i+1), pqgen.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Put(fmt.Sprintf("orders/%s2026/01/%02d/f-%06d.parquet", fallback.Prefix, 1+i%4, i+1), data); err != nil {
				t.Fatal(err)
			}
		}
		ws, err := workspace.Start(workspace.Options{Storage: warehouse.RegistryOpener(all.Registry(), srv.Config())})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		if err := ws.RegisterTable(ctx, "main.sales.orders", srv.URLFor("orders"), true); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"AWS_ACCESS_KEY_ID": s3test.AccessKeyID, "AWS_SECRET_ACCESS_KEY": s3test.SecretAccessKey, "AWS_REGION": s3test.Region,
			"AWS_EC2_METADATA_DISABLED": "true", "DATABRICKS_CONFIG_FILE": filepath.Join(t.TempDir(), "none")}
		for _, kv := range ws.Env() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		s := &served{e2etest.NewServed(ctx, t, release, env)}
		srv.ResetCounts()
		start := time.Now()
		code, out, errOut := s.Within(8*time.Minute, "-v", "--no-progress", "--concurrency", conc, "--storage-auth", "default",
			"--s3-endpoint", srv.URL, "--s3-region", s3test.Region, "-o", "json", "reload", "main.sales.orders",
			"--rename", "customer_id=customer_key", "--stage-to", srv.URLFor("staging/perf"), "--yes")
		whole := time.Since(start)
		if r := decodeStatus(t, out); code != 0 || r.Status != "verified" || r.Staged != n {
			t.Fatalf("reload: exit %d %+v\nstderr: %.3000s", code, r, errOut)
		}
		files, elapsed, claims := stagedLine(t, errOut)
		t.Logf("S3 emulator, same bucket, --concurrency %s: %d files staged in %s (claims %s, copies %s): %.0f files/s, copies alone %.0f files/s; whole reload %s: %.0f files/s; emulator: %s",
			conc, files, elapsed, claims, elapsed-claims, float64(files)/elapsed.Seconds(), float64(files)/(elapsed-claims).Seconds(), whole.Round(time.Millisecond), float64(n)/whole.Seconds(), srv.Counts())
		if rows, distinct := s.FileRows("main.sales.orders"); rows != int64(n) || distinct != int64(n) {
			t.Errorf("%d rows (%d distinct ids), want %d once each", rows, distinct, n)
		}
	})
}
