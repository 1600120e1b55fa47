//go:build demo && cgo

package served

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
)

// placesBed is demo serve with the managed tables main.sales.orders and main.sales.returns
// (fallback files of their own in each) and the release binary driven against it.
type placesBed struct {
	*e2etest.Served
	orders, returns string // the tables' roots
	host, token     string
}

func newPlacesBed(t *testing.T, ctx context.Context) *placesBed {
	t.Helper()
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := e2etest.Demo(t), e2etest.Release(t)
	dir := t.TempDir()
	b := &placesBed{orders: filepath.Join(dir, "orders"), returns: filepath.Join(dir, "returns")}
	e2etest.WriteOneRowFiles(t, b.orders, 0, 6)
	e2etest.WriteOneRowFiles(t, b.returns, 100, 2)
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+b.orders, "--table", "main.sales.returns="+b.returns)
	b.Served = e2etest.NewServed(ctx, t, release, w.Env)
	b.host, b.token = w.Env["DATABRICKS_HOST"], w.Env["DATABRICKS_TOKEN"]
	return b
}

// files lists the files under dir on disk, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// volumeStorage asks the served Unity Catalog where a volume's files are, as an operator
// would (GET /api/2.1/unity-catalog/volumes/<name>).
func (b *placesBed) volumeStorage(name string) string {
	b.T.Helper()
	req, _ := http.NewRequestWithContext(b.Ctx, http.MethodGet, b.host+"/api/2.1/unity-catalog/volumes/"+name, nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.T.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v struct {
		StorageLocation string `json:"storage_location"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &v) != nil || v.StorageLocation == "" {
		b.T.Fatalf("volume %s: %s %s", name, resp.Status, raw)
	}
	return v.StorageLocation
}

// TestPlacesArchiveToTheStagingVolumeInOtherCase: cleanup --archive-to naming the run's
// staging location in other letter case (Unity Catalog names are case-insensitive: it is the
// same folder), through dbfs:, or through the volume's storage location, is refused as a
// usage error before anything is written or deleted: every fallback file and staged copy
// stays, nothing is archived, the run is not cleaned. An archive of its own then works.
func TestPlacesArchiveToTheStagingVolumeInOtherCase(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := newPlacesBed(t, ctx)
	const table, stage = "main.sales.orders", "/Volumes/main/sales/staging/run1"
	if code, out, errOut := b.Run("reload", table, "--rename", "customer_id=customer_key", "--stage-to", stage, "--yes"); code != 0 {
		t.Fatalf("reload: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if code, out, errOut := b.Run("verify", table); code != 0 {
		t.Fatalf("verify: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	fallbackDir := filepath.Join(b.orders, filepath.FromSlash(fallback.Prefix))
	before, staged := files(t, fallbackDir), e2etest.ListVolume(t, b.host, b.token, stage)
	if len(before) != 6 || len(staged) < 6 {
		t.Fatalf("before cleanup: %d fallback files, %d staged files", len(before), len(staged))
	}
	type refusal struct{ to, why string }
	refusals := []refusal{
		{"/Volumes/main/sales/STAGING/run1", "is the run's staging location"},
		{"/Volumes/Main/Sales/Staging/run1/archive", "lies inside the run's staging location"},
		{"dbfs:/Volumes/MAIN/sales/staging/run1/", "is the run's staging location"},
		{"volume's storage location", "is the run's staging location (through its volume's storage location"},
	}
	for _, tc := range refusals {
		if tc.to == "volume's storage location" {
			// The staging volume's folder, where Unity Catalog says its files are.
			tc.to = b.volumeStorage("main.sales.staging") + "/run1"
		}
		code, out, errOut := b.Run("cleanup", table, "--archive-to", tc.to, "--yes")
		if code != 2 || !strings.Contains(errOut, tc.why) || !strings.Contains(errOut, "nothing was deleted") ||
			!strings.Contains(errOut, stage) || !strings.Contains(errOut, "archive to a folder outside") || strings.Contains(out+errOut, "archived to") {
			t.Errorf("cleanup --archive-to %s: exit %d, want 2 and %q\nstdout: %s\nstderr: %s", tc.to, code, tc.why, out, errOut)
		}
		if got := files(t, fallbackDir); strings.Join(got, " ") != strings.Join(before, " ") {
			t.Fatalf("cleanup --archive-to %s deleted fallback files: %v left of %v", tc.to, got, before)
		}
		if got := e2etest.ListVolume(t, b.host, b.token, stage); len(got) != len(staged) {
			t.Fatalf("cleanup --archive-to %s changed the staged copies: %d files, had %d", tc.to, len(got), len(staged))
		}
	}
	if code, out, errOut := b.Run("history", table); code != 0 || strings.Contains(out, "cleaned") {
		t.Errorf("history after the refusals: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// An archive of its own: every file archived with its bytes, then deleted.
	const archive = "/Volumes/main/sales/staging/archive"
	code, out, errOut := b.Run("cleanup", table, "--archive-to", archive, "--yes")
	if code != 0 || !strings.Contains(out, "6 deleted") {
		t.Fatalf("cleanup --archive-to %s: exit %d\nstdout: %s\nstderr: %s", archive, code, out, errOut)
	}
	archived := e2etest.ListVolume(t, b.host, b.token, archive)
	for _, k := range before {
		if _, ok := archived[fallback.Prefix+k]; !ok {
			t.Errorf("%s is not in the archive: %v", k, archived)
		}
	}
	if got := files(t, fallbackDir); len(got) != 0 {
		t.Errorf("fallback files left: %v", got)
	}
}

// TestPlacesStageIntoAnotherTablesFallbackFolder: reload --stage-to a folder in another
// managed table's fallback folder (as a path, a file://localhost URL with a trailing slash),
// inside the table's own root, or a folder holding both tables, is refused as a usage error
// before anything is copied: the other table's fallback folder holds only its own files, and
// its next reload loads only them. A keys place inside the staging location (in other letter
// case) and a journal inside a table's storage are refused the same way, before any folder is
// made there.
func TestPlacesStageIntoAnotherTablesFallbackFolder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := newPlacesBed(t, ctx)
	const table = "main.sales.orders"
	returnsFallback := filepath.Join(b.returns, filepath.FromSlash(fallback.Prefix))
	returnsBefore, rootBefore := files(t, returnsFallback), files(t, b.orders)
	for _, tc := range []struct {
		args []string
		why  string
	}{
		{[]string{"--stage-to", filepath.Join(returnsFallback, "staged")}, "lies inside another table's root"},
		{[]string{"--stage-to", "file://localhost" + returnsFallback + "/"}, "lies inside another table's root"},
		{[]string{"--stage-to", filepath.Join(b.orders, "_zerobus", "staged")}, "lies inside the table's root"},
		{[]string{"--stage-to", filepath.Dir(b.orders)}, "contains the table's root"},
		{[]string{"--stage-to", "/Volumes/main/sales/staging/run1", "--key", "id", "--keys-to", "/Volumes/main/sales/STAGING/run1/keys"},
			"lies inside the run's staging location"},
		{[]string{"--stage-to", "/Volumes/main/sales/staging/run1", "--journal", "file://" + filepath.Join(b.orders, "journal")}, "lies inside a table's root"},
		{[]string{"--stage-to", "/Volumes/main/sales/staging/run1", "--journal", filepath.Join(b.returns, "journal")}, "lies inside a table's root"},
	} {
		args := append([]string{"reload", table, "--rename", "customer_id=customer_key", "--yes"}, tc.args...)
		code, out, errOut := b.Run(args...)
		if code != 2 || !strings.Contains(errOut, tc.why) || !strings.Contains(errOut, "outside every table's storage") {
			t.Errorf("reload %s: exit %d, want 2 and %q\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), code, tc.why, out, errOut)
		}
		if got := files(t, returnsFallback); strings.Join(got, " ") != strings.Join(returnsBefore, " ") {
			t.Fatalf("reload %s wrote into returns' fallback folder: %v, had %v", strings.Join(tc.args, " "), got, returnsBefore)
		}
		if got := files(t, b.orders); strings.Join(got, " ") != strings.Join(rootBefore, " ") {
			t.Fatalf("reload %s wrote into the table's root: %v, had %v", strings.Join(tc.args, " "), got, rootBefore)
		}
		for _, dir := range []string{filepath.Join(b.orders, "journal"), filepath.Join(b.returns, "journal")} {
			if _, err := os.Stat(dir); err == nil {
				t.Fatalf("reload %s made the folder %s", strings.Join(tc.args, " "), dir)
			}
		}
	}
	if n := b.Count("SELECT count(*) FROM main.sales.orders"); n != 0 {
		t.Errorf("the refused reloads loaded %d rows", n)
	}

	// The other table's next reload loads its own two files, nothing of orders.
	if code, out, errOut := b.Run("reload", "main.sales.returns", "--rename", "customer_id=customer_key",
		"--stage-to", "/Volumes/main/sales/staging/returns", "--yes"); code != 0 {
		t.Fatalf("reload returns: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if rows, distinct := b.FileRows("main.sales.returns"); rows != 2 || distinct != 2 {
		t.Errorf("returns holds %d rows (%d ids), want its own 2", rows, distinct)
	}
	if n := b.Count("SELECT count(*) FROM main.sales.returns WHERE id <= 100"); n != 0 {
		t.Errorf("returns holds %d rows of orders' files", n)
	}
}
