//go:build demo && cgo

package served

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
)

// TestDemoServeStaged drives the release binary against `zbrecover demo serve`, whose managed
// table refuses path reads in its storage (LOCATION_OVERLAP): a plain reload stops before
// loading and says how to stage; a reload staged to a volume loads and verifies; cleanup
// removes the staged copies and the originals and nothing else; a second staged reload loads
// nothing. SIGINT stops the workspace with nothing left listening.
func TestDemoServeStaged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)

	// A table whose producers still write customer_id and DECIMAL(10,2): 30 fallback files of
	// 2 rows each over three date folders.
	root := filepath.Join(t.TempDir(), "orders")
	if _, err := deltatest.Write(root, deltatest.Table{Schema: e2etest.TableSchema}); err != nil {
		t.Fatal(err)
	}
	fallbackDir := filepath.Join(root, filepath.FromSlash(fallback.Prefix))
	const nFiles = 30
	originals := map[string]int64{} // key under the fallback folder → size
	for i, id := 0, int64(0); i < nFiles; i++ {
		var rows []string
		for k := 0; k < 2; k++ {
			id++
			rows = append(rows, fmt.Sprintf(`{"id":%d,"customer_id":"c%d","amount":"%d.25"}`, id, id, id%100))
		}
		data, err := pqgen.Bytes(e2etest.OldFiles, "["+strings.Join(rows, ",")+"]", pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("2026/01/%02d/old-%05d.parquet", 1+i%3, i)
		if err := pqgen.WriteFile(filepath.Join(fallbackDir, filepath.FromSlash(key)), data); err != nil {
			t.Fatal(err)
		}
		originals[key] = int64(len(data))
	}
	logFile := filepath.Join(t.TempDir(), "statements.jsonl")

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	served := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root, "--log", logFile)
	env := served.Env
	host, token := env["DATABRICKS_HOST"], env["DATABRICKS_TOKEN"]

	// Only the printed settings, and a journal of its own.
	run := e2etest.NewServed(ctx, t, release, env).Run
	const table = "main.sales.orders"
	reloadCmd := []string{"-o", "json", "reload", table, "--rename", "customer_id=customer_key", "--yes"}
	const stageTo = "/Volumes/main/sales/staging/run1"
	staged := append(append([]string(nil), reloadCmd...), "--stage-to", stageTo)

	// (1) A plain reload meets LOCATION_OVERLAP: exit 1, a ready --stage-to command, nothing
	// loaded.
	from := e2etest.StatementLogLen(t, logFile)
	code, out, errOut := run(reloadCmd...)
	if code != 1 || !strings.Contains(errOut, "LOCATION_OVERLAP") || !strings.Contains(errOut, "--stage-to /Volumes/main/sales/") ||
		!strings.Contains(errOut, "--rename customer_id=customer_key") {
		t.Fatalf("plain reload: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	sts := e2etest.ReadStatementLog(t, logFile, from)
	overlap := false
	for _, s := range sts {
		overlap = overlap || strings.Contains(s.ErrorClass, "LOCATION_OVERLAP")
	}
	if copies, inserted := e2etest.Loads(sts); inserted != 0 || !overlap {
		t.Fatalf("plain reload: %d rows inserted by %d COPY INTO, LOCATION_OVERLAP logged %v\n%+v", inserted, len(copies), overlap, sts)
	}
	if got := e2etest.ListVolume(t, host, token, stageTo); len(got) != 0 {
		t.Fatalf("plain reload staged %v", got)
	}

	// A crashed staging run left copies of half the files cut short at their paths, which no
	// journal records: they are replaced.
	code, out, errOut = run(append(append([]string(nil), staged...), "--dry-run")...)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	paths := e2etest.StagedPaths(t, out, stageTo)
	if len(paths) != nFiles {
		t.Fatalf("the plan names %d copies, want %d: %v", len(paths), nFiles, paths)
	}
	torn := 0
	for key := range originals {
		if torn == nFiles/2 {
			break
		}
		e2etest.PutVolumeFile(t, host, token, paths[key], []byte("torn"))
		torn++
	}

	// (2) Staged to the volume: every file copied with its key and size, loaded from the copies
	// only, verified.
	from = e2etest.StatementLogLen(t, logFile)
	code, out, errOut = run(staged...)
	if code != 0 {
		t.Fatalf("staged reload: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var rep struct {
		Status   string `json:"status"`
		Verified int    `json:"verified_batches"`
		Staged   int    `json:"staged_files"`
		Replaced int    `json:"staged_replaced"`
	}
	e2etest.DecodeInto(t, out, &rep)
	if rep.Status != "verified" || rep.Verified == 0 || rep.Staged != nFiles || rep.Replaced != nFiles/2 {
		t.Errorf("staged reload report %+v\n%s", rep, out)
	}
	copiesAt := map[string]int64{} // by the original's key
	for p, size := range e2etest.ListVolume(t, host, token, stageTo) {
		if orig, ok := e2etest.StagedOriginal(p); ok && stageTo+"/"+p == paths[orig] {
			copiesAt[orig] = size
		} else if !strings.HasPrefix(p, "_zbrecover/") {
			t.Errorf("%s/%s is no copy of a planned file", stageTo, p)
		}
	}
	if len(copiesAt) != nFiles {
		t.Errorf("%d copies in %s, want %d: %v", len(copiesAt), stageTo, nFiles, copiesAt)
	}
	for key, size := range originals {
		if copiesAt[key] != size {
			t.Errorf("copy of %s: %d bytes, original %d", key, copiesAt[key], size)
		}
	}
	copies, inserted := e2etest.Loads(e2etest.ReadStatementLog(t, logFile, from))
	if inserted != 2*nFiles || len(copies) == 0 {
		t.Errorf("staged reload: %d rows inserted by %d COPY INTO, want %d", inserted, len(copies), 2*nFiles)
	}
	for _, s := range copies {
		if !strings.Contains(s.Statement, "FROM '"+stageTo+"/") {
			t.Errorf("a load read elsewhere than the staged copies: %.300s", s.Statement)
		}
	}
	if code, out, errOut := run("verify", table); code != 0 {
		t.Errorf("verify: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// A second staged reload, before cleanup, loads nothing and stages nothing again; through
	// the same path nothing is refused, only already loaded.
	from = e2etest.StatementLogLen(t, logFile)
	code, out, errOut = run(staged...)
	if copies, inserted := e2etest.Loads(e2etest.ReadStatementLog(t, logFile, from)); code != 0 || len(copies) != 0 || inserted != 0 ||
		strings.Contains(errOut, "Refused through") || !strings.Contains(errOut, "Nothing to load") {
		t.Errorf("second staged reload: exit %d, %d COPY INTO, %d rows\nstdout: %s\nstderr: %s", code, len(copies), inserted, out, errOut)
	}
	if n := len(e2etest.ListVolume(t, host, token, stageTo)); n != nFiles {
		t.Errorf("%d copies after the second staged reload, want %d", n, nFiles)
	}
	// Through another staging path, the loaded originals are refused: no copy, no load.
	const other = "/Volumes/main/sales/staging/run2"
	from = e2etest.StatementLogLen(t, logFile)
	code, out, errOut = run(append(append([]string(nil), reloadCmd...), "--stage-to", other)...)
	if copies, inserted := e2etest.Loads(e2etest.ReadStatementLog(t, logFile, from)); code != 0 || len(copies) != 0 || inserted != 0 ||
		!strings.Contains(errOut, "Refused through "+other) || len(e2etest.ListVolume(t, host, token, other)) != 0 {
		t.Errorf("reload through a second staging path: exit %d, %d COPY INTO, %d rows\nstdout: %s\nstderr: %s", code, len(copies), inserted, out, errOut)
	}

	// (3) Cleanup deletes the staged copies and the originals, and nothing else: not a marker
	// in the fallback folder, not another file in the volume.
	marker := filepath.Join(fallbackDir, "_SUCCESS")
	if err := os.WriteFile(marker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	e2etest.PutVolumeFile(t, host, token, stageTo+"/notes.txt", []byte("kept"))
	code, out, errOut = run("cleanup", table, "--yes")
	if code != 0 || !strings.Contains(errOut, fmt.Sprintf("Deleted %d staged copies at %s", nFiles, stageTo)) {
		t.Fatalf("cleanup: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var left []string
	_ = filepath.WalkDir(fallbackDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(fallbackDir, p)
			left = append(left, filepath.ToSlash(rel))
		}
		return nil
	})
	if len(left) != 1 || left[0] != "_SUCCESS" {
		t.Errorf("fallback folder after cleanup: %v", left)
	}
	if _, err := os.Stat(filepath.Join(root, "_delta_log")); err != nil {
		t.Errorf("the Delta log after cleanup: %v", err)
	}
	if got := e2etest.ListVolume(t, host, token, stageTo); len(got) != 1 || got["notes.txt"] != 4 {
		t.Errorf("%s after cleanup: %v", stageTo, got)
	}
	if code, out, errOut := run("history", table); code != 0 || !strings.Contains(out, "cleaned") {
		t.Errorf("history: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// (4) A staged reload after cleanup loads nothing.
	from = e2etest.StatementLogLen(t, logFile)
	code, out, errOut = run(staged...)
	if copies, inserted := e2etest.Loads(e2etest.ReadStatementLog(t, logFile, from)); code != 0 || len(copies) != 0 || inserted != 0 ||
		!strings.Contains(errOut, "Nothing to load: no fallback files") {
		t.Errorf("staged reload after cleanup: exit %d, %d COPY INTO, %d rows\nstdout: %s\nstderr: %s", code, len(copies), inserted, out, errOut)
	}
	if got := e2etest.ListVolume(t, host, token, stageTo); len(got) != 1 {
		t.Errorf("%s after the last reload: %v", stageTo, got)
	}

	served.Stop()
}
