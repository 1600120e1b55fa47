//go:build cgo

package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/azure/azuretest"
	"github.com/zbrecover/zbrecover/storage/gcs/gcstest"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// remoteRoot is a table root on a store emulator.
type remoteRoot struct {
	url   string                              // the table's root URL
	put   func(key string, data []byte) error // writes key (relative to the root) on the emulator
	cfg   storage.Config                      // what the warehouse opens the root with
	flags []string                            // the CLI's global flags for the emulator
}

const emulatorTablePrefix = "tables/orders"

// emulatorRoots start each store's emulator and point the CLI's credentials at it (the store's
// own chain: --storage-auth default, as cleanup needs).
var emulatorRoots = []struct {
	name  string
	start func(t *testing.T) remoteRoot
}{
	{"s3", func(t *testing.T) remoteRoot {
		srv := s3test.NewServer(t)
		t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretAccessKey)
		t.Setenv("AWS_SESSION_TOKEN", "")
		t.Setenv("AWS_REGION", s3test.Region)
		t.Setenv("AWS_PROFILE", "")
		t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
		t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
		return remoteRoot{url: srv.URLFor(emulatorTablePrefix), cfg: srv.Config(),
			put:   func(k string, data []byte) error { return srv.Put(emulatorTablePrefix+"/"+k, data) },
			flags: []string{"--s3-endpoint", srv.URL, "--s3-region", s3test.Region}}
	}},
	{"gcs", func(t *testing.T) remoteRoot {
		srv := gcstest.NewServer(t)
		return remoteRoot{url: srv.URLFor(emulatorTablePrefix), cfg: srv.Config(),
			put:   func(k string, data []byte) error { return srv.Put(emulatorTablePrefix+"/"+k, data) },
			flags: []string{"--gcs-endpoint", srv.URL}}
	}},
	{"azure", func(t *testing.T) remoteRoot {
		srv := azuretest.NewServer(t) // skips without Azurite, fails under CI=true
		t.Setenv("AZURE_STORAGE_CONNECTION_STRING", "")
		t.Setenv("AZURE_STORAGE_SAS_TOKEN", "")
		t.Setenv("AZURE_STORAGE_ACCOUNT", azuretest.Account)
		t.Setenv("AZURE_STORAGE_KEY", azuretest.AccountKey)
		// Databricks names Azure table roots with abfss:// on the dfs host.
		root := "abfss://" + srv.Container + "@" + azuretest.Account + ".dfs.core.windows.net/" + emulatorTablePrefix
		return remoteRoot{url: root, cfg: srv.Config(),
			put:   func(k string, data []byte) error { return srv.Put(emulatorTablePrefix+"/"+k, data) },
			flags: []string{"--azure-endpoint", srv.Endpoint}}
	}},
}

// newRemoteRecovery is newRecovery's 30 old-schema files (2 rows each, three date folders of
// 10) under the root of a managed table on an emulator, registered in a new local workspace
// whose warehouse reads the store through the project's backends.
func newRemoteRecovery(t *testing.T, root remoteRoot) *recovery {
	t.Helper()
	dir := t.TempDir()
	if _, err := deltatest.Write(dir, deltatest.Table{Schema: e2etest.TableSchema, ID: "0b6c1c8e-0000-4000-8000-00000000e2e7",
		Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		return root.put(filepath.ToSlash(rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	r := &recovery{root: root.url, table: "main.sales.orders", ids: map[int64]bool{}, files: map[string]int{}}
	id := int64(0)
	for i := 0; i < 30; i++ {
		var rows []string
		for k := 0; k < 2; k++ {
			id++
			r.ids[id] = true
			rows = append(rows, fmt.Sprintf(`{"id":%d,"customer_id":"c%d","amount":"%d.25"}`, id, id, id%100))
		}
		data, err := pqgen.Bytes(e2etest.OldFiles, "["+strings.Join(rows, ",")+"]", pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%s2026/01/%02d/old-%05d.parquet", fallback.Prefix, 1+i%3, i)
		if err := root.put(key, data); err != nil {
			t.Fatal(err)
		}
		r.rows += 2
		r.files["old"]++
	}
	ws := startWorkspace(t, workspace.Options{Storage: warehouse.RegistryOpener(all.Registry(), root.cfg)}, r.table, root.url)
	r.ws = ws
	return r
}

// listFallback lists the fallback folder on the emulator, keys relative to the root.
func listFallback(t *testing.T, root remoteRoot) map[string]bool {
	t.Helper()
	ctx := context.Background()
	b, err := all.Registry().Open(ctx, root.url, root.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := b.(io.Closer); ok {
		defer c.Close()
	}
	out := map[string]bool{}
	if err := b.List(ctx, fallback.Prefix, func(o storage.ObjectInfo) error {
		out[o.Key] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCleanupOnEmulators: on each store emulator, a reload of 30 files in batches of 10 with
// the batch of folder 01 loaded by hand before (so unknown); then a file is added to the
// fallback folder and a verified file overwritten. cleanup --yes deletes exactly the 19
// verified, unchanged files, keeps the rest with their reasons, and exits 5.
func TestCleanupOnEmulators(t *testing.T) {
	for _, store := range emulatorRoots {
		t.Run(store.name, func(t *testing.T) {
			root := store.start(t)
			r := newRemoteRecovery(t, root)
			cli := func(args ...string) (int, string, string) {
				t.Helper()
				full := append(append([]string{"--storage-auth", "default"}, root.flags...), args...)
				return runZbrecover(t, full...)
			}

			code, out, errOut := cli(append(reloadArgs(r), "--dry-run")...)
			if code != 0 {
				t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
			}
			var plan struct {
				Batches []struct {
					Folder string `json:"folder"`
					SQL    string `json:"sql"`
				} `json:"batches"`
			}
			if err := json.Unmarshal([]byte(out), &plan); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			byHand := 0
			for _, b := range plan.Batches {
				if strings.HasSuffix(strings.TrimSuffix(b.Folder, "/"), "2026/01/01") {
					if !strings.Contains(b.SQL, root.url) {
						t.Fatalf("batch SQL does not read the emulator root %s: %s", root.url, b.SQL)
					}
					r.exec(t, b.SQL)
					byHand++
				}
			}
			if len(plan.Batches) != 3 || byHand != 1 {
				t.Fatalf("plan of %d batches, %d for folder 2026/01/01:\n%s", len(plan.Batches), byHand, out)
			}
			code, out, errOut = cli(reloadArgs(r)...)
			if code != 5 {
				t.Fatalf("reload: exit %d, want 5 (one batch unknown)\n%s%s", code, out, errOut)
			}
			if rep := decodeReload(t, out); rep.Verified != 2 || rep.Unknown != 1 {
				t.Fatalf("reload report %+v", rep)
			}
			if rows, distinct, missing := r.check(t); rows != r.rows || distinct != r.rows || missing != 0 {
				t.Fatalf("table: %d rows, %d distinct ids, %d missing; want %d", rows, distinct, missing, r.rows)
			}
			var verified, unknown []string
			for _, f := range runState(t).Files() {
				switch f.Status {
				case journal.BatchVerified:
					verified = append(verified, f.Key)
				case journal.BatchUnknown:
					unknown = append(unknown, f.Key)
				}
			}
			if len(verified) != 20 || len(unknown) != 10 {
				t.Fatalf("%d verified, %d unknown files", len(verified), len(unknown))
			}
			sort.Strings(verified)

			// After verification: a new file arrives, a verified one is overwritten.
			late := fallback.Prefix + "2026/01/02/late-00001.parquet"
			if err := root.put(late, []byte("arrived after verification")); err != nil {
				t.Fatal(err)
			}
			changed := verified[3]
			if err := root.put(changed, []byte("overwritten after verification")); err != nil {
				t.Fatal(err)
			}
			if before := listFallback(t, root); len(before) != 31 {
				t.Fatalf("%d files on the emulator before cleanup, want 31", len(before))
			}

			code, out, errOut = cli("-o", "json", "cleanup", r.table, "--yes")
			if code != 5 {
				t.Fatalf("cleanup: exit %d, want 5\n%s%s", code, out, errOut)
			}
			after := listFallback(t, root)
			want := checkPartialCleanup(t, out, after, changed, late, unknown)
			for k := range after {
				if !want[k] {
					t.Errorf("%s is still there", k)
				}
			}
			st := runState(t)
			if st.Status != journal.RunPartiallyCleaned {
				t.Errorf("run status %s", st.Status)
			}
			if f, _ := st.File(changed); f.Delete != journal.DeleteSkip {
				t.Errorf("journal: %s is %q", changed, f.Delete)
			}
			for _, k := range verified {
				if f, _ := st.File(k); k != changed && f.Delete != journal.Deleted {
					t.Errorf("journal: %s is %q", k, f.Delete)
				}
			}
		})
	}
}
