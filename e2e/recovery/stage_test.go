//go:build cgo

package recovery

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

const stageVolume = "/Volumes/main/sales/staging/run1"

// managedRecovery is a recovery on a managed table whose storage Unity Catalog refuses to
// read by path (the local warehouse's default).
func managedRecovery(t *testing.T) *recovery {
	r := newRecovery(t, 30, 0)
	u := r.ws.Warehouse().Unknowns()
	u.PathAccess = warehouse.OverlapPlain // the form without a [CLASS] prefix
	r.ws.Warehouse().SetUnknowns(u)
	return r
}

func stagedArgs(r *recovery, extra ...string) []string {
	return append(reloadArgs(r, "--stage-to", stageVolume), extra...)
}

// stagedCopies lists the objects in the staging volume: a copy of a fallback file by the
// original's key under the fallback folder (e2etest.StagedOriginal), anything else by its key
// under the volume.
func stagedCopies(t *testing.T, r *recovery) map[string]int64 {
	t.Helper()
	dir, err := r.ws.Warehouse().Engine().VolumeFile(stageVolume)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			key := filepath.ToSlash(rel)
			if orig, ok := e2etest.StagedOriginal(key); ok {
				key = orig
			}
			out[key] = fi.Size()
		}
		return nil
	})
	return out
}

// TestStageWhenTheManagedPathIsRefused: a plain reload of a managed table stops with a clear
// message and exit 1, changing nothing; the same reload with --stage-to a volume succeeds
// and verifies.
func TestStageWhenTheManagedPathIsRefused(t *testing.T) {
	r := managedRecovery(t)
	before := len(r.ws.Statements())
	code, out, errOut := runZbrecover(t, reloadArgs(r)...)
	if code != 1 || r.copyStatements(before) != 0 || !strings.Contains(errOut, "LOCATION_OVERLAP") ||
		!strings.Contains(errOut, "--stage-to /Volumes/main/sales/") || !strings.Contains(errOut, "--rename customer_id=customer_key") {
		t.Fatalf("plain reload: exit %d, %d COPY INTO\n%s%s", code, r.copyStatements(before), out, errOut)
	}
	if rows, _, _ := r.check(t); rows != 0 {
		t.Fatalf("%d rows loaded", rows)
	}
	code, out, errOut = runZbrecover(t, stagedArgs(r)...)
	if code != 0 {
		t.Fatalf("staged reload: exit %d\n%s%s", code, out, errOut)
	}
	rep := decodeReload(t, out)
	if rep.Verified != 3 || len(stagedCopies(t, r)) != 30 {
		t.Errorf("report %+v, %d copies", rep, len(stagedCopies(t, r)))
	}
	for _, s := range r.ws.Statements()[before:] {
		if strings.HasPrefix(s.SQL, "COPY INTO") && s.State == "FINISHED" && !strings.Contains(s.SQL, "FROM '"+stageVolume+"/") {
			t.Errorf("a statement read elsewhere than the staged copies: %.200s", s.SQL)
		}
	}
	if rows, distinct, missing := r.check(t); rows != r.rows || distinct != r.rows || missing != 0 {
		t.Errorf("table: %d rows, %d distinct, %d missing", rows, distinct, missing)
	}
	if code, out, errOut := runZbrecover(t, "verify", r.table); code != 0 {
		t.Errorf("verify: exit %d\n%s%s", code, out, errOut)
	}
	// Key reconciliation reads the staged copies too, as the statements did.
	if code, out, errOut := runZbrecover(t, "verify", r.table, "--key", "id"); code != 0 {
		t.Errorf("verify --key: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runZbrecover(t, "history", r.table, "--run", rep.Run)
	if code != 0 || strings.Count(out, "verified") < 30 {
		t.Errorf("history: exit %d\n%s", code, out)
	}
}

// TestStageCrashAfterHalf: copies left by a crashed run that the journal does not record
// (half of them, some cut short) are taken when they hold the originals' bytes and replaced
// otherwise; copies the journal records are reused; no file is loaded twice.
func TestStageCrashAfterHalf(t *testing.T) {
	r := managedRecovery(t)
	dir, err := r.ws.Warehouse().Engine().VolumeFile(stageVolume)
	if err != nil {
		t.Fatal(err)
	}
	// Half of the copies of a crashed run, at the paths the plan names: damaged ones among
	// them.
	code, out, errOut := runZbrecover(t, stagedArgs(r, "--dry-run")...)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	paths := e2etest.StagedPaths(t, out, stageVolume)
	src := filepath.Join(r.root, "_zerobus", "table_rejected_parquets")
	n := 0
	_ = filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || n >= 15 {
			return nil
		}
		rel, _ := filepath.Rel(src, p)
		data, _ := os.ReadFile(p)
		if n%2 == 0 {
			data = data[:len(data)/2] // torn copy
		}
		dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(paths[filepath.ToSlash(rel)], stageVolume+"/")))
		_ = os.MkdirAll(filepath.Dir(dst), 0o755)
		_ = os.WriteFile(dst, data, 0o644)
		n++
		return nil
	})
	// The first load fails after the staging: the re-run must reuse the recorded copies.
	r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`,
		Error: &warehouse.SQLError{Class: "INTERNAL_ERROR", SQLState: "XX000", Message: "injected"}})
	code, out, errOut = runZbrecover(t, stagedArgs(r)...)
	if code != 1 {
		t.Fatalf("first staged reload: exit %d\n%s%s", code, out, errOut)
	}
	for key, size := range stagedCopies(t, r) {
		orig, err := os.Stat(filepath.Join(src, filepath.FromSlash(key)))
		if err != nil || orig.Size() != size {
			t.Errorf("copy %s: %d bytes, original %v", key, size, orig)
		}
	}
	code, out, errOut = runZbrecover(t, stagedArgs(r)...)
	if code != 0 {
		t.Fatalf("re-run: exit %d\n%s%s", code, out, errOut)
	}
	var rep struct {
		Resumed      bool `json:"resumed"`
		Staged       int  `json:"staged_files"`
		StagedReused int  `json:"staged_reused"`
	}
	e2etest.DecodeInto(t, out, &rep)
	if !rep.Resumed || rep.Staged != 0 {
		t.Errorf("re-run staged %d copies again (resumed %v)", rep.Staged, rep.Resumed)
	}
	if rows, distinct, missing := r.check(t); rows != r.rows || distinct != r.rows || missing != 0 {
		t.Errorf("table: %d rows, %d distinct, %d missing", rows, distinct, missing)
	}
}

// TestStageRefusesASecondPath: files loaded through the fallback folder are not loaded again
// through copies, and a run planned through the fallback folder is not continued through a
// staging location.
func TestStageRefusesASecondPath(t *testing.T) {
	r := newRecovery(t, 30, 0) // path access allowed
	// Batch 2 fails: the run stays unfinished, planned through the fallback folder.
	r.ws.Warehouse().Inject(warehouse.Fault{Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Skip: 1,
		Error: &warehouse.SQLError{Class: "INTERNAL_ERROR", SQLState: "XX000", Message: "injected"}})
	if code, out, errOut := runZbrecover(t, reloadArgs(r)...); code != 1 {
		t.Fatalf("first reload: exit %d\n%s%s", code, out, errOut)
	}
	before := len(r.ws.Statements())
	code, out, errOut := runZbrecover(t, stagedArgs(r)...)
	if code != 1 || !strings.Contains(errOut, "second path") || r.copyStatements(before) != 0 {
		t.Fatalf("continuing through a staging location: exit %d, %d COPY INTO\n%s%s", code, r.copyStatements(before), out, errOut)
	}
	converge(t, r) // through the fallback folder, as planned
	before = len(r.ws.Statements())
	code, out, errOut = runZbrecover(t, stagedArgs(r)...)
	if code != 0 || r.copyStatements(before) != 0 || !strings.Contains(errOut, "Refused through "+stageVolume) || len(stagedCopies(t, r)) != 0 {
		t.Errorf("loaded files through copies: exit %d, %d COPY INTO, %d copies\n%s%s", code, r.copyStatements(before), len(stagedCopies(t, r)), out, errOut)
	}
	if rows, distinct, missing := r.check(t); rows != r.rows || distinct != r.rows || missing != 0 {
		t.Errorf("table: %d rows, %d distinct, %d missing", rows, distinct, missing)
	}
}

// TestStageCleanup: cleanup after a staged reload deletes the staged copies and the
// originals of the verified files, and nothing else.
func TestStageCleanup(t *testing.T) {
	r := managedRecovery(t)
	if code, out, errOut := runZbrecover(t, stagedArgs(r)...); code != 0 {
		t.Fatalf("staged reload: exit %d\n%s%s", code, out, errOut)
	}
	// Objects that are none of the run's: a hidden marker, a file that arrived later, and a
	// stray file in the volume.
	base := filepath.Join(r.root, "_zerobus", "table_rejected_parquets")
	for _, p := range []string{filepath.Join(base, "_SUCCESS"), filepath.Join(base, "2026/01/01/late.parquet")} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	vdir, _ := r.ws.Warehouse().Engine().VolumeFile(stageVolume)
	if err := os.WriteFile(filepath.Join(vdir, "stray.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runZbrecover(t, "cleanup", r.table, "--yes")
	if code != 0 || !strings.Contains(errOut, "Deleted 30 staged copies at "+stageVolume) {
		t.Fatalf("cleanup: exit %d\n%s%s", code, out, errOut)
	}
	left := r.fallbackFiles(t)
	if len(left) != 2 || !left["_zerobus/table_rejected_parquets/_SUCCESS"] || !left["_zerobus/table_rejected_parquets/2026/01/01/late.parquet"] {
		t.Errorf("fallback folder after cleanup: %v", left)
	}
	copies := stagedCopies(t, r)
	if len(copies) != 1 || copies["stray.txt"] == 0 {
		t.Errorf("staging volume after cleanup: %v", copies)
	}
	code, out, _ = runZbrecover(t, "history", r.table)
	if code != 0 || !strings.Contains(out, "cleaned") {
		t.Errorf("history: exit %d\n%s", code, out)
	}
}
