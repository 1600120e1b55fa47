//go:build demo && cgo

package servedcleanup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/keyfile"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

var (
	// The orders table after the breaking change, and the fallback files of producers still
	// writing customer_id (renamed since) and DECIMAL(10,2).
	ordersSchema = sd.NewSchema().Col("order_id", sd.LongType, sd.NotNull).
			Col("customer_key", sd.StringType).Col("amount", sd.DecimalType(18, 4))
	ordersFiles = arrow.NewSchema([]arrow.Field{{Name: "order_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true}}, nil)
)

const (
	ordersTable = "main.sales.orders"
	stagingVol  = "/Volumes/main/sales/staging"
)

// cleanupBins are the two binaries a cleanup test drives: demo serve and the release build.
type cleanupBins struct{ demo, release string }

func buildCleanupBins(t *testing.T) cleanupBins {
	t.Helper()
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	return cleanupBins{demo: e2etest.Demo(t), release: e2etest.Release(t)}
}

// cleanupBed is the managed table main.sales.orders served by `zbrecover demo serve`, with
// fallback files, and the release binary driven against it.
type cleanupBed struct {
	*e2etest.Served
	w        *e2etest.ServedWorkspace
	root     string
	fallback string            // the fallback folder on disk
	data     map[string][]byte // each fallback file written, by its key under the fallback folder
	ids      map[string][]int64
	host     string
	token    string
}

// newCleanupBed writes the table at a new root with one fallback file per key of layout
// (a key under the fallback folder → its number of rows; order ids are unique over all
// files), starts demo serve with it as main.sales.orders (and serveArgs) and returns the bed.
func newCleanupBed(ctx context.Context, t *testing.T, bins cleanupBins, layout map[string]int, serveArgs ...string) *cleanupBed {
	t.Helper()
	root := filepath.Join(t.TempDir(), "orders")
	if _, err := deltatest.Write(root, deltatest.Table{Schema: ordersSchema}); err != nil {
		t.Fatal(err)
	}
	b := &cleanupBed{root: root, fallback: filepath.Join(root, filepath.FromSlash(fallback.Prefix)),
		data: map[string][]byte{}, ids: map[string][]int64{}}
	keys := make([]string, 0, len(layout))
	for k := range layout {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	id := int64(0)
	for _, k := range keys {
		var rows []string
		for i := 0; i < layout[k]; i++ {
			id++
			b.ids[k] = append(b.ids[k], id)
			rows = append(rows, fmt.Sprintf(`{"order_id":%d,"customer_id":"c%d","amount":"%d.25"}`, id, id%7, id%100))
		}
		data, err := pqgen.Bytes(ordersFiles, "["+strings.Join(rows, ",")+"]", pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := pqgen.WriteFile(filepath.Join(b.fallback, filepath.FromSlash(k)), data); err != nil {
			t.Fatal(err)
		}
		b.data[k] = data
	}
	b.w = e2etest.StartDemoServe(ctx, t, bins.demo, append([]string{"--table", ordersTable + "=" + root}, serveArgs...)...)
	b.Served = e2etest.NewServed(ctx, t, bins.release, b.w.Env)
	b.host, b.token = b.w.Env["DATABRICKS_HOST"], b.w.Env["DATABRICKS_TOKEN"]
	return b
}

// must runs the release binary and fails the test unless it exits with want.
func (b *cleanupBed) must(want int, args ...string) (string, string) {
	b.T.Helper()
	code, out, errOut := b.Run(args...)
	if code != want {
		b.T.Fatalf("zbrecover %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out, errOut
}

// reload reloads every fallback file, staged to the volume folder dir, and fails the test
// unless it verified.
func (b *cleanupBed) reload(dir string, extra ...string) {
	b.T.Helper()
	args := append([]string{"reload", ordersTable, "--rename", "customer_id=customer_key", "--stage-to", stagingVol + "/" + dir, "--yes"}, extra...)
	b.must(0, args...)
}

// fallbackLeft lists the files under the fallback folder on disk (by key under it), with
// their sizes.
func (b *cleanupBed) fallbackLeft() map[string]int64 {
	b.T.Helper()
	return listLocal(b.T, b.fallback)
}

// listLocal lists the regular files under dir (by slash path under it) with their sizes; a
// missing dir lists nothing. Links are listed, not followed.
func listLocal(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// staged lists the files under a folder of the staging volume.
func (b *cleanupBed) staged(dir string) map[string]int64 {
	b.T.Helper()
	return e2etest.ListVolume(b.T, b.host, b.token, stagingVol+"/"+dir)
}

// volumeFile downloads a file of a volume through the Files API.
func (b *cleanupBed) volumeFile(vpath string) []byte {
	b.T.Helper()
	req, _ := http.NewRequestWithContext(b.Ctx, http.MethodGet, b.host+"/api/2.0/fs/files"+vpath, nil)
	req.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.T.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.T.Fatalf("GET %s: %s %v", vpath, resp.Status, err)
	}
	return data
}

// tableIDs returns the order ids in the table, with the rows each has.
func (b *cleanupBed) tableIDs() map[int64]int {
	b.T.Helper()
	out := map[int64]int{}
	for _, r := range b.SQL("SELECT order_id FROM " + ordersTable).Rows {
		switch v := r[0].(type) {
		case int64:
			out[v]++
		case int32:
			out[int64(v)]++
		default:
			b.T.Fatalf("order_id %v (%T)", r[0], r[0])
		}
	}
	return out
}

// everyRecordKept checks that every record written to a fallback file is in the table, or
// in a file holding the same bytes as the one written: in the fallback folder, in one of the
// staging volume's folders stages, or in one of the local folders archives. It returns the
// keys of the fallback files whose bytes are nowhere.
func (b *cleanupBed) everyRecordKept(stages []string, archives []string) []string {
	b.T.Helper()
	var copies [][]byte
	for k := range b.fallbackLeft() {
		if data, err := os.ReadFile(filepath.Join(b.fallback, filepath.FromSlash(k))); err == nil {
			copies = append(copies, data)
		}
	}
	for _, dir := range stages {
		for k := range b.staged(dir) {
			copies = append(copies, b.volumeFile(stagingVol+"/"+dir+"/"+k))
		}
	}
	for _, dir := range archives {
		for k := range listLocal(b.T, dir) {
			if data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(k))); err == nil {
				copies = append(copies, data)
			}
		}
	}
	inTable := b.tableIDs()
	var gone []string
	for k, data := range b.data {
		kept := false
		for _, c := range copies {
			if bytes.Equal(c, data) {
				kept = true
				break
			}
		}
		if kept {
			continue
		}
		gone = append(gone, k)
		for _, id := range b.ids[k] {
			if inTable[id] == 0 {
				b.T.Errorf("order %d (of %s) is in no file and not in the table", id, k)
			}
		}
	}
	sort.Strings(gone)
	return gone
}

// historyVersions returns the versions of the table's commits of an operation, oldest first.
func (b *cleanupBed) historyVersions(operation string) []int64 {
	b.T.Helper()
	res := b.SQL("DESCRIBE HISTORY " + ordersTable)
	vi, oi := -1, -1
	for i, c := range res.Columns {
		switch c {
		case "version":
			vi = i
		case "operation":
			oi = i
		}
	}
	if vi < 0 || oi < 0 {
		b.T.Fatalf("DESCRIBE HISTORY columns %v", res.Columns)
	}
	var out []int64
	for _, r := range res.Rows {
		if fmt.Sprint(r[oi]) == operation {
			v, ok := r[vi].(int64)
			if !ok {
				b.T.Fatalf("version %v (%T)", r[vi], r[vi])
			}
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// threeFolders is a layout of 6 files in three date folders, 3 rows each.
func threeFolders() map[string]int {
	out := map[string]int{}
	for i := 0; i < 6; i++ {
		out[fmt.Sprintf("2026/01/%02d/part-%05d.parquet", 1+i%3, i)] = 3
	}
	return out
}

// TestCleanupSafetyRowsLeftTheTable: after recovered rows left the table by a TRUNCATE, a
// DELETE of one order or a RESTORE to the version before the load (each by the table's owner,
// the identity that reloaded), cleanup run straight after re-checks the table, keeps every
// file and staged copy and exits 4 naming the commit; verify fails naming it, verify --key
// fails on the missing keys, and cleanup then refuses the run. Every record is still in a
// file. A DELETE of one order keeps the files of every batch: the keys file of the run does
// not hold every key in the table, and a commit that removed rows undoes the history's proof
// of every batch before it.
func TestCleanupSafetyRowsLeftTheTable(t *testing.T) {
	bins := buildCleanupBins(t)
	for _, tc := range []struct {
		name string
		// remove removes rows as another client and returns the operation the history
		// records and the orders removed.
		remove  func(b *cleanupBed) string
		missing int
	}{
		{"truncate", func(b *cleanupBed) string {
			b.SQL("TRUNCATE TABLE " + ordersTable)
			return "TRUNCATE"
		}, 18},
		{"delete", func(b *cleanupBed) string {
			b.SQL("DELETE FROM " + ordersTable + " WHERE order_id = 4")
			return "DELETE"
		}, 1},
		{"restore", func(b *cleanupBed) string {
			// To the owner's own commit before the load (an order placed since).
			loads := b.historyVersions("COPY INTO")
			if len(loads) == 0 {
				b.T.Fatal("no COPY INTO in the table's history")
			}
			b.SQL(fmt.Sprintf("RESTORE TABLE %s TO VERSION AS OF %d", ordersTable, loads[0]-1))
			return "RESTORE"
		}, 18},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			b := newCleanupBed(ctx, t, bins, threeFolders())
			b.SQL("INSERT INTO " + ordersTable + " VALUES (1000, 'c1', 1.0)")
			b.reload("run1", "--key", "order_id")
			b.must(0, "verify", ordersTable)
			before, stagedBefore := b.fallbackLeft(), b.staged("run1")
			if len(before) != 6 || len(stagedBefore) != 7 { // 6 copies and the keys file
				t.Fatalf("before: %d fallback files, %d staged: %v", len(before), len(stagedBefore), stagedBefore)
			}
			op := tc.remove(b)
			removal := b.historyVersions(op)
			if len(removal) != 1 {
				t.Fatalf("%s commits: %v", op, removal)
			}
			commit := fmt.Sprintf("version %d (%s by ", removal[0], op)
			nothingDeleted := func(when string) {
				t.Helper()
				if got := b.fallbackLeft(); len(got) != len(before) {
					t.Errorf("%s: %d fallback files left of %d", when, len(got), len(before))
				}
				if got := b.staged("run1"); len(got) != len(stagedBefore) {
					t.Errorf("%s: %d staged files left of %d", when, len(got), len(stagedBefore))
				}
			}

			// Cleanup straight after, with no verify between: its own re-check keeps all.
			out, errOut := b.must(4, "cleanup", ordersTable, "--yes")
			if !strings.Contains(errOut, "batch 1 does not check: "+commit) || !strings.Contains(errOut, "batches 1, 2, 3 of run") ||
				!strings.Contains(errOut, "do not check against the table now") || !strings.Contains(errOut, "Nothing to delete.") {
				t.Errorf("cleanup after the %s:\nstdout: %s\nstderr: %s", op, out, errOut)
			}
			nothingDeleted("cleanup after the " + op)

			out, errOut = b.must(4, "verify", ordersTable)
			if strings.Count(out, commit) != 3 || !strings.Contains(out, "3 batches, 3 failed") {
				t.Errorf("verify does not name %s for every batch:\nstdout: %s\nstderr: %s", commit, out, errOut)
			}
			out, errOut = b.must(4, "verify", ordersTable, "--key", "order_id")
			if !strings.Contains(out, fmt.Sprintf("18 keys, %d missing from the table  FAIL", tc.missing)) {
				t.Errorf("verify --key:\nstdout: %s\nstderr: %s", out, errOut)
			}

			out, errOut = b.must(4, "cleanup", ordersTable, "--yes")
			if !strings.Contains(errOut, "the run's latest verification failed for batches 1, 2, 3") || !strings.Contains(errOut, "nothing of them is deleted") {
				t.Errorf("cleanup after a failed verify:\nstdout: %s\nstderr: %s", out, errOut)
			}
			nothingDeleted("cleanup after verify")
			if gone := b.everyRecordKept([]string{"run1"}, nil); len(gone) > 0 {
				t.Errorf("files gone: %v", gone)
			}
		})
	}
}

// TestCleanupSafetyArchiveLocations: cleanup --archive-to a place that is not a second
// place for the files is refused as a usage error before anything is written or deleted:
// the table's root (as a path, a file:// URL, through a symbolic link), its fallback folder
// and a folder inside it, a folder containing the root, the run's staging location (as a
// volume path, with dbfs:, the volume holding it), the root of another table of the schema
// (demo serve --table twice) and a folder holding a Delta table. Then an archive folder that
// already holds other bytes of the same size under two of the files' names: those two files
// are kept (exit 5) and the archive's objects are not overwritten; the others are archived
// with their bytes and deleted; a second cleanup archives the two kept files to a volume
// folder and deletes them.
func TestCleanupSafetyArchiveLocations(t *testing.T) {
	bins := buildCleanupBins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	returns := filepath.Join(dir, "returns")
	if _, err := deltatest.Write(returns, deltatest.Table{Schema: ordersSchema}); err != nil {
		t.Fatal(err)
	}
	unregistered := filepath.Join(dir, "unregistered")
	if _, err := deltatest.Write(unregistered, deltatest.Table{Schema: ordersSchema}); err != nil {
		t.Fatal(err)
	}
	b := newCleanupBed(ctx, t, bins, threeFolders(), "--table", "main.sales.returns="+returns)
	b.reload("run1")
	b.must(0, "verify", ordersTable)
	before, stagedBefore := b.fallbackLeft(), b.staged("run1")
	if len(before) != 6 || len(stagedBefore) != 6 {
		t.Fatalf("before: %d fallback files, %d staged", len(before), len(stagedBefore))
	}
	linkToRoot := filepath.Join(dir, "link-to-root")
	linkToFallback := filepath.Join(dir, "link-to-fallback")
	if err := os.Symlink(b.root, linkToRoot); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(b.fallback, linkToFallback); err != nil {
		t.Fatal(err)
	}
	rootEntries := func() []string {
		var out []string
		for k := range listLocal(t, b.root) {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	rootBefore := rootEntries()
	for _, tc := range []struct{ to, why string }{
		{b.root, "is the table's root"},
		{"file://" + b.root + "/", "is the table's root"},
		{b.fallback, "lies inside the table's root"},
		{filepath.Join(b.fallback, "archive"), "lies inside the table's root"},
		{filepath.Dir(b.root), "contains the table's root"},
		{linkToRoot, "is the table's root (through a symbolic link)"},
		{linkToFallback, "lies inside the table's root"},
		{stagingVol + "/run1", "is the run's staging location"},
		{"dbfs:" + stagingVol + "/run1/", "is the run's staging location"},
		{stagingVol, "contains the run's staging location"},
		{returns, "is another table's root"},
		{filepath.Join(returns, "_zerobus/table_rejected_parquets"), "lies inside another table's root"},
		{unregistered, "holds a _delta_log folder: it is a table's root"},
		{b.root + "/x/..", `the path has a ".." element`},
	} {
		code, out, errOut := b.Run("cleanup", ordersTable, "--archive-to", tc.to, "--yes")
		if code != 2 || !strings.Contains(errOut, tc.why) || !strings.Contains(errOut, "nothing was deleted") {
			t.Errorf("cleanup --archive-to %s: exit %d, want 2 and %q\nstdout: %s\nstderr: %s", tc.to, code, tc.why, out, errOut)
		}
		if got := b.fallbackLeft(); len(got) != len(before) {
			t.Fatalf("cleanup --archive-to %s deleted fallback files: %d left of %d", tc.to, len(got), len(before))
		}
		if got := b.staged("run1"); len(got) != len(stagedBefore) {
			t.Fatalf("cleanup --archive-to %s deleted staged copies: %d left of %d", tc.to, len(got), len(stagedBefore))
		}
	}
	if got := rootEntries(); strings.Join(got, "\n") != strings.Join(rootBefore, "\n") {
		t.Errorf("the refused archives wrote into the table's root:\nbefore %v\nafter  %v", rootBefore, got)
	}
	if got := listLocal(t, returns); len(got) != 1 {
		t.Errorf("the other table's root after the refusals: %v", got)
	}

	// An archive folder holding, under the names of two files, other bytes of the same size,
	// and under a third the same bytes (a copy an interrupted cleanup made).
	archive := filepath.Join(dir, "archive")
	prefix := filepath.FromSlash(fallback.Prefix)
	keys := make([]string, 0, len(b.data))
	for k := range b.data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	other := map[string][]byte{}
	for _, k := range keys[:2] {
		o := bytes.Clone(b.data[k])
		o[len(o)/2] ^= 0xff
		other[k] = o
		if err := pqgen.WriteFile(filepath.Join(archive, prefix, filepath.FromSlash(k)), o); err != nil {
			t.Fatal(err)
		}
	}
	if err := pqgen.WriteFile(filepath.Join(archive, prefix, filepath.FromSlash(keys[2])), b.data[keys[2]]); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := b.Run("cleanup", ordersTable, "--archive-to", archive, "--yes")
	if code != 5 || strings.Count(out, "holds another object under this name (other bytes): not deleted") != 2 {
		t.Errorf("cleanup --archive-to a folder holding other bytes: exit %d, want 5\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	left := b.fallbackLeft()
	for i, k := range keys {
		arch, err := os.ReadFile(filepath.Join(archive, prefix, filepath.FromSlash(k)))
		if err != nil {
			t.Fatal(err)
		}
		_, kept := left[k]
		switch {
		case i < 2 && (!kept || !bytes.Equal(arch, other[k])):
			t.Errorf("%s: kept %v, the archive's other bytes kept %v", k, kept, bytes.Equal(arch, other[k]))
		case i >= 2 && (kept || !bytes.Equal(arch, b.data[k])):
			t.Errorf("%s: kept %v, archived with its bytes %v", k, kept, bytes.Equal(arch, b.data[k]))
		}
	}
	if gone := b.everyRecordKept(nil, []string{archive}); len(gone) > 0 {
		t.Errorf("files in no place: %v", gone)
	}

	// The two kept files, archived to a volume folder.
	code, out, errOut = b.Run("cleanup", ordersTable, "--archive-to", stagingVol+"/archive", "--yes")
	if code != 0 || !strings.Contains(out, "2 deleted") {
		t.Errorf("cleanup --archive-to a volume folder: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if got := b.fallbackLeft(); len(got) != 0 {
		t.Errorf("fallback files left: %v", got)
	}
	for _, k := range keys[:2] {
		if got := b.volumeFile(stagingVol + "/archive/" + fallback.Prefix + k); !bytes.Equal(got, b.data[k]) {
			t.Errorf("the volume's archive of %s holds other bytes", k)
		}
	}
	if gone := b.everyRecordKept([]string{"archive"}, []string{archive}); len(gone) > 0 {
		t.Errorf("files in no place: %v", gone)
	}
}

// journalFile returns the path of the one run file of the bed's journal.
func (b *cleanupBed) journalFile() string {
	b.T.Helper()
	runs, err := filepath.Glob(filepath.Join(b.State, "zbrecover", "*", "*.jsonl"))
	if err != nil || len(runs) != 1 {
		b.T.Fatalf("journal runs %v (%v)", runs, err)
	}
	return runs[0]
}

// TestCleanupSafetyPrefixAndEditedJournal: reload --prefix naming anything but a folder under
// _zerobus/ ("/", "..", an absolute path, "", "_delta_log/", …) is a usage error before
// anything is read, sent, staged or journaled; cleanup --prefix too. A journal edited so that
// one file of the run is a Delta log entry, a data file of the table, a file of another folder
// (each present with the same size) or a hidden or ".." key makes cleanup delete nothing of
// the run: no fallback file, no staged copy, not the file named.
func TestCleanupSafetyPrefixAndEditedJournal(t *testing.T) {
	bins := buildCleanupBins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	logFile := filepath.Join(t.TempDir(), "statements.jsonl")
	b := newCleanupBed(ctx, t, bins, threeFolders(), "--log", logFile)

	for _, p := range []string{"/", "..", b.fallback, "", "_delta_log/", "_zerobus/", "_zerobus", "_zerobus/../_delta_log/",
		"./_zerobus/table_rejected_parquets/", "_zerobus//table_rejected_parquets/", "file://" + b.fallback, `_zerobus\table_rejected_parquets`} {
		from := 0
		if _, err := os.Stat(logFile); err == nil {
			from = e2etest.StatementLogLen(t, logFile)
		}
		code, out, errOut := b.Run("reload", ordersTable, "--rename", "customer_id=customer_key", "--stage-to", stagingVol+"/run1", "--prefix", p, "--yes")
		if code != 2 || !strings.Contains(errOut, "--prefix") {
			t.Errorf("reload --prefix %q: exit %d, want 2\nstdout: %s\nstderr: %s", p, code, out, errOut)
		}
		if _, err := os.Stat(logFile); err == nil {
			if sts := e2etest.ReadStatementLog(t, logFile, from); len(sts) > 0 {
				t.Errorf("reload --prefix %q sent %d statements: %+v", p, len(sts), sts)
			}
		}
		code, out, errOut = b.Run("cleanup", ordersTable, "--prefix", p, "--yes")
		if code != 2 || !strings.Contains(errOut, "--prefix") {
			t.Errorf("cleanup --prefix %q: exit %d, want 2\nstdout: %s\nstderr: %s", p, code, out, errOut)
		}
	}
	if got := b.staged("run1"); len(got) != 0 {
		t.Errorf("the refused reloads staged %v", got)
	}
	if out, _ := b.must(0, "history", ordersTable); strings.TrimSpace(out) != "" {
		t.Errorf("the refused reloads journaled runs:\n%s", out)
	}

	b.reload("run1")
	b.must(0, "verify", ordersTable)
	jf := b.journalFile()
	pristine, err := os.ReadFile(jf)
	if err != nil {
		t.Fatal(err)
	}
	before, stagedBefore := b.fallbackLeft(), b.staged("run1")
	const victim = "2026/01/01/part-00000.parquet"
	victimKey := fallback.Prefix + victim
	deltaLog, err := filepath.Glob(filepath.Join(b.root, "_delta_log", "*.json"))
	if err != nil || len(deltaLog) == 0 {
		t.Fatalf("Delta log %v (%v)", deltaLog, err)
	}
	logEntry, _ := filepath.Rel(b.root, deltaLog[0])
	type edit struct{ old, new, decoy string }
	fileKey := func(key string) edit {
		// The file the edited journal names, present with the victim's size unless it is
		// the Delta log's or cannot be a file.
		e := edit{old: `"` + victimKey + `"`, new: `"` + key + `"`}
		if !strings.Contains(key, "..") {
			e.decoy = filepath.Join(b.root, filepath.FromSlash(key))
		}
		return e
	}
	if !strings.Contains(string(pristine), `"location":"`+stagingVol+`/run1"`) || !strings.Contains(string(pristine), `"source":"`+victimKey+`"`) {
		t.Fatalf("the journal does not record the staged copies as expected:\n%s", pristine)
	}
	// The victim's staged copy, as the journal records it (<table id>/<folders>/<name>~<identity>.parquet).
	m := regexp.MustCompile(`"source":"` + regexp.QuoteMeta(victimKey) + `","key":"([^"]+)"`).FindStringSubmatch(string(pristine))
	if m == nil {
		t.Fatalf("the journal records no staged copy of %s", victimKey)
	}
	stagedVictim := m[1]
	for _, e := range []edit{
		fileKey(filepath.ToSlash(logEntry)),
		fileKey("part-00000-data.snappy.parquet"),
		fileKey("_zerobus/other_folder/2026/01/01/part-00000.parquet"),
		fileKey(fallback.Prefix + "_tmp/part-00000.parquet"),
		fileKey(fallback.Prefix + ".hidden/part-00000.parquet"),
		fileKey(fallback.Prefix + "2026/../../../_delta_log/x.json"),
		fileKey(fallback.Prefix + "2026/01/_delta_log/00000000000000000000.json"),
		// The staged copies at the table's root, or a copy's key out of its folder.
		{old: `"location":"` + stagingVol + `/run1"`, new: `"location":"file://` + filepath.ToSlash(b.root) + `"`},
		{old: `"key":"` + stagedVictim + `"`, new: `"key":"../run2/` + victim + `"`},
		{old: `"key":"` + stagedVictim + `"`, new: `"key":"_zbrecover/` + victim + `"`},
	} {
		var want []byte
		created := false
		if e.decoy != "" {
			if _, err := os.Stat(e.decoy); os.IsNotExist(err) {
				if err := pqgen.WriteFile(e.decoy, b.data[victim]); err != nil {
					t.Fatal(err)
				}
				created = true
			}
			if want, err = os.ReadFile(e.decoy); err != nil {
				t.Fatal(err)
			}
		}
		edited := strings.ReplaceAll(string(pristine), e.old, e.new)
		if edited == string(pristine) {
			t.Fatalf("the journal does not hold %s", e.old)
		}
		if err := os.WriteFile(jf, []byte(edited), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := b.Run("cleanup", ordersTable, "--yes")
		if code != 4 || !strings.Contains(errOut, "outside the fallback folder") || !strings.Contains(errOut, "nothing of it is deleted") {
			t.Errorf("cleanup of a journal with %s for %s: exit %d, want 4\nstdout: %s\nstderr: %s", e.new, e.old, code, out, errOut)
		}
		inFallback := boolInt(created && strings.HasPrefix(e.decoy, b.fallback))
		if got := b.fallbackLeft(); len(got) != len(before)+inFallback {
			t.Errorf("journal with %s: %d fallback files left of %d", e.new, len(got), len(before)+inFallback)
		}
		if got := b.staged("run1"); len(got) != len(stagedBefore) {
			t.Errorf("journal with %s: %d staged copies left of %d", e.new, len(got), len(stagedBefore))
		}
		if e.decoy != "" {
			if got, err := os.ReadFile(e.decoy); err != nil || !bytes.Equal(got, want) {
				t.Errorf("journal with %s: the file it names: %v", e.new, err)
			}
		}
		if created {
			if err := os.Remove(e.decoy); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(jf, pristine, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if gone := b.everyRecordKept([]string{"run1"}, nil); len(gone) > 0 {
		t.Errorf("files gone: %v", gone)
	}
	// The journal as reload wrote it: cleanup deletes every file and copy.
	b.must(0, "cleanup", ordersTable, "--yes")
	if got := b.fallbackLeft(); len(got) != 0 {
		t.Errorf("fallback files left: %v", got)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestCleanupSafetySymlinkedFolder: after a reload, a date folder of the fallback folder is
// replaced by a symbolic link to a folder outside the table's root holding files of the same
// names, sizes and modification times (the very files, moved there), and one file of another
// folder by a link to that file moved out. Cleanup deletes the other files and nothing outside
// the root: the files behind the links are kept, each listed with the reason, and cleanup
// exits 5.
func TestCleanupSafetySymlinkedFolder(t *testing.T) {
	bins := buildCleanupBins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b := newCleanupBed(ctx, t, bins, threeFolders())
	b.reload("run1")
	b.must(0, "verify", ordersTable)

	linked := filepath.Join(b.fallback, "2026", "01", "02")
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.Rename(linked, outside); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, linked); err != nil {
		t.Fatal(err)
	}
	// And one file of another folder, a link to the file moved out.
	const linkedFile = "2026/01/03/part-00002.parquet"
	if err := os.Rename(filepath.Join(b.fallback, linkedFile), filepath.Join(outside, "file-part-00002.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "file-part-00002.parquet"), filepath.Join(b.fallback, linkedFile)); err != nil {
		t.Fatal(err)
	}
	outsideBefore := listLocal(t, outside)
	if len(outsideBefore) != 3 {
		t.Fatalf("outside: %v", outsideBefore)
	}
	code, out, errOut := b.Run("cleanup", ordersTable, "--yes")
	if code != 5 || !strings.Contains(out, "3 deleted") || strings.Count(out, "failed _zerobus/table_rejected_parquets/2026/01/02/") != 2 ||
		!strings.Contains(out, "failed _zerobus/table_rejected_parquets/"+linkedFile) {
		t.Errorf("cleanup through a linked folder: exit %d, want 5\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if got := listLocal(t, outside); len(got) != len(outsideBefore) {
		t.Errorf("cleanup deleted files outside the root: %v left of %v", got, outsideBefore)
	}
	for k, size := range outsideBefore {
		orig := "2026/01/02/" + k
		if k == "file-part-00002.parquet" {
			orig = linkedFile
		}
		data, err := os.ReadFile(filepath.Join(outside, k))
		if err != nil || int64(len(data)) != size || !bytes.Equal(data, b.data[orig]) {
			t.Errorf("outside/%s after cleanup: %v", k, err)
		}
	}
	for _, l := range []string{linked, filepath.Join(b.fallback, linkedFile)} {
		if fi, err := os.Lstat(l); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link %s after cleanup: %v %v", l, fi, err)
		}
	}
	if got := b.fallbackLeft(); len(got) != 2 { // the links
		t.Errorf("fallback folder after cleanup: %v", got)
	}
}

// writeFaults writes a control document for demo serve --faults and returns its path.
func writeFaults(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "faults.json")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCleanupSafetyGlobFolders: folders [b]/ and b/ holding files of the same names, and a
// file named part-[1].parquet, on a warehouse that reads COPY INTO paths literally and on one
// that globs them. A staged reload loads each file once with its own rows (the [b] folder and
// the [1] file under safe staged names, no statement naming a glob); each batch verifies by
// its own commit of its own rows (the statement's answer, and the history), and by key; cleanup deletes every file and copy.
// Without a keys file, verify --key reads the staged copies through the warehouse: after a
// DELETE of the orders of part-[1].parquet, it fails (it reads fewer rows than the footers
// hold, so it proves nothing) and cleanup deletes nothing.
func TestCleanupSafetyGlobFolders(t *testing.T) {
	bins := buildCleanupBins(t)
	layout := map[string]int{"[b]/part-00000.parquet": 3, "b/part-00000.parquet": 3, "b/part-[1].parquet": 2}
	for _, glob := range []bool{false, true} {
		t.Run(fmt.Sprintf("glob_paths=%v", glob), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			logFile := filepath.Join(t.TempDir(), "statements.jsonl")
			faults := writeFaults(t, fmt.Sprintf(`{"unknowns": {"glob_paths": %v}}`, glob))
			b := newCleanupBed(ctx, t, bins, layout, "--log", logFile, "--faults", faults)
			b.reload("run1", "--key", "order_id")
			for _, s := range e2etest.ReadStatementLog(t, logFile, 0) {
				q := strings.ToUpper(s.Statement)
				if strings.HasPrefix(q, "COPY INTO") && strings.ContainsAny(s.Statement, "[]") {
					t.Errorf("a load names a glob: %s", s.Statement)
				}
			}
			ids := b.tableIDs()
			for k, want := range b.ids {
				for _, id := range want {
					if ids[id] != 1 {
						t.Errorf("order %d of %s is in the table %d times", id, k, ids[id])
					}
				}
			}
			if len(ids) != 8 {
				t.Errorf("%d orders in the table, want 8: %v", len(ids), ids)
			}
			staged := b.staged("run1")
			plain := false
			for k := range staged {
				plain = plain || strings.Contains(k, "/b/part-00000~") // <table id>/<folders>/<name>~<identity>.parquet
			}
			if !plain || len(staged) != 4 { // 3 copies and the keys file
				t.Errorf("staged: %v", staged)
			}
			for k := range staged {
				if strings.ContainsAny(k, "[]") {
					t.Errorf("staged under a glob name: %s", k)
				}
			}
			// Each batch by its own commit: [b]'s 3 rows, b's 5, two versions.
			out, errOut := b.must(0, "verify", ordersTable)
			if !strings.Contains(out, "batch 1  ok      expected 3, inserted 3, history 3 by answer") ||
				!strings.Contains(out, "batch 2  ok      expected 5, inserted 5, history 5 by answer") {
				t.Errorf("verify:\nstdout: %s\nstderr: %s", out, errOut)
			}
			out, _ = b.must(0, "-o", "json", "history", ordersTable, "--run", b.runID())
			var hist struct {
				Files []struct {
					Key     string `json:"key"`
					Batch   int    `json:"batch"`
					Version *int64 `json:"history_version"`
				} `json:"files"`
			}
			e2etest.DecodeInto(t, out, &hist)
			versions := map[int64]int{}
			for _, f := range hist.Files {
				want := 2
				if strings.Contains(f.Key, "[b]/") {
					want = 1
				}
				if f.Batch != want || f.Version == nil {
					t.Errorf("history: %s in batch %d (version %v), want batch %d", f.Key, f.Batch, f.Version, want)
					continue
				}
				versions[*f.Version] = f.Batch
			}
			if len(hist.Files) != 3 || len(versions) != 2 {
				t.Errorf("history: %d files, commits %v", len(hist.Files), versions)
			}
			b.must(0, "verify", ordersTable, "--key", "order_id")
			out, errOut = b.must(0, "cleanup", ordersTable, "--yes")
			if !strings.Contains(out, "3 deleted") || !strings.Contains(errOut, "Deleted 3 staged copies") {
				t.Errorf("cleanup:\nstdout: %s\nstderr: %s", out, errOut)
			}
			if got := b.fallbackLeft(); len(got) != 0 {
				t.Errorf("fallback files left: %v", got)
			}
			if got := b.staged("run1"); len(got) != 1 {
				t.Errorf("staged left: %v", got)
			}
			b.must(0, "verify", ordersTable, "--key", "order_id")

			// No keys file: verify --key reads the staged copies, by their staged names (no
			// glob in them), and finds the deleted orders missing.
			b = newCleanupBed(ctx, t, bins, layout, "--faults", faults)
			b.reload("run1")
			b.SQL("DELETE FROM " + ordersTable + " WHERE order_id IN (7, 8)") // part-[1].parquet's
			out, errOut = b.must(4, "verify", ordersTable, "--key", "order_id")
			if !strings.Contains(out, "8 keys, 2 missing from the table  FAIL") {
				t.Errorf("verify --key without a keys file:\nstdout: %s\nstderr: %s", out, errOut)
			}
			out, errOut = b.must(4, "cleanup", ordersTable, "--yes")
			if got := b.fallbackLeft(); len(got) != 3 {
				t.Errorf("cleanup after a DELETE: %d fallback files left of 3\nstdout: %s\nstderr: %s", len(got), out, errOut)
			}
			if gone := b.everyRecordKept([]string{"run1"}, nil); len(gone) > 0 {
				t.Errorf("files gone: %v", gone)
			}
		})
	}
}

// runID returns the id of the bed's one run.
func (b *cleanupBed) runID() string {
	b.T.Helper()
	return strings.TrimSuffix(filepath.Base(b.journalFile()), ".jsonl")
}

// TestCleanupSafetySecretLikeNames: fallback folders and files named like the parts of a
// signed URL or a connection string (sig=1, token=…, password=…, AccountKey=…,
// X-Amz-Signature=…) are names, not secrets: reload, verify, history and cleanup name them
// exactly, the journal keeps them verbatim, and cleanup deletes them.
func TestCleanupSafetySecretLikeNames(t *testing.T) {
	bins := buildCleanupBins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	layout := map[string]int{
		"sig=1/part-00000.parquet":                             2,
		"token=dapi0123456789abcdef/part-00001.parquet":        2,
		"password=hunter2/part-00002.parquet":                  2,
		"2026/01/01/AccountKey=c2VjcmV0.parquet":               2,
		"2026/01/01/X-Amz-Signature=0a1b2c3d4e5f.parquet":      2,
		"2026/01/02/sv=2024-01-01&se=2030-01-01&sig=x.parquet": 2,
	}
	b := newCleanupBed(ctx, t, bins, layout)
	names := make([]string, 0, len(layout))
	for k := range layout {
		names = append(names, k)
	}
	sort.Strings(names)
	// In JSON (the journal, -o json), a name is its JSON string.
	jsonName := func(k string) string {
		b, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Trim(string(b), `"`)
	}
	exactly := func(what, text string, names ...string) {
		t.Helper()
		for _, k := range names {
			if !strings.Contains(text, k) && !strings.Contains(text, jsonName(k)) {
				t.Errorf("%s does not name %s:\n%s", what, k, text)
			}
		}
		for _, w := range []string{"REDACTED", "***", "[redacted]"} {
			if strings.Contains(text, w) {
				t.Errorf("%s redacts a name (%s):\n%s", what, w, text)
			}
		}
	}
	folders := map[string]bool{}
	for _, k := range names {
		folders[fallback.Prefix+k[:strings.LastIndex(k, "/")+1]] = true
	}
	var batchFolders []string
	for f := range folders {
		batchFolders = append(batchFolders, f)
	}
	out, errOut := b.must(0, "-o", "json", "reload", ordersTable, "--rename", "customer_id=customer_key", "--stage-to", stagingVol+"/run1", "--yes")
	exactly("reload", out+errOut, batchFolders...)
	out, errOut = b.must(0, "verify", ordersTable, "--key", "order_id")
	exactly("verify", out+errOut)
	if !strings.Contains(out, "12 keys, 0 missing") {
		t.Errorf("verify --key:\n%s", out)
	}
	out, _ = b.must(0, "history", ordersTable, "--run", b.runID())
	exactly("history --run", out, names...)
	journal, err := os.ReadFile(b.journalFile())
	if err != nil {
		t.Fatal(err)
	}
	exactly("the journal", string(journal), names...)
	out, _ = b.must(0, "cleanup", ordersTable, "--dry-run")
	exactly("cleanup --dry-run", out, names...)
	out, errOut = b.must(0, "-o", "json", "cleanup", ordersTable, "--yes")
	exactly("cleanup", out, names...)
	if !strings.Contains(errOut, "Deleted 6 staged copies") {
		t.Errorf("cleanup: %s", errOut)
	}
	if got := b.fallbackLeft(); len(got) != 0 {
		t.Errorf("fallback files left: %v", got)
	}
	out, _ = b.must(0, "history", ordersTable, "--run", b.runID())
	exactly("history --run after cleanup", out, names...)
	if strings.Count(out, "deleted") != len(names) {
		t.Errorf("history --run after cleanup:\n%s", out)
	}
}

// TestCleanupSafetyCraftedNames: fallback files whose names hold terminal escapes (clear the
// screen, set the title) and a newline followed by a forged "keep …" line are printed
// escaped, on one line each, in the cleanup plan and report: no ESC byte reaches the output
// and no forged line appears; the files themselves are deleted like any other.
func TestCleanupSafetyCraftedNames(t *testing.T) {
	bins := buildCleanupBins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const forged = "keep _zerobus/table_rejected_parquets/2026/01/01/part-00000.parquet: forged"
	layout := map[string]int{
		"2026/01/01/part-00000.parquet":                    2,
		"2026/01/01/clear\x1b[2J\x1b]0;owned\x07.parquet":  2,
		"2026/01/01/x.parquet\n    " + forged + ".parquet": 2,
	}
	b := newCleanupBed(ctx, t, bins, layout)
	code, out, errOut := b.Run("reload", ordersTable, "--rename", "customer_id=customer_key", "--stage-to", stagingVol+"/run1", "--yes")
	t.Logf("reload: exit %d\n%s\n%s", code, out, errOut)
	// An untracked crafted file, arrived after the reload: listed as kept.
	late := "2026/01/02/late\x1b[31m\n    delete everything.parquet"
	if err := pqgen.WriteFile(filepath.Join(b.fallback, filepath.FromSlash(late)), b.data["2026/01/01/part-00000.parquet"]); err != nil {
		t.Fatal(err)
	}
	clean := func(what, text string) {
		t.Helper()
		if strings.ContainsAny(text, "\x1b\x07") {
			t.Errorf("%s holds an escape byte:\n%q", what, text)
		}
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "keep _zerobus/table_rejected_parquets/2026/01/01/part-00000.parquet: forged") ||
				strings.HasPrefix(strings.TrimSpace(line), "delete everything") {
				t.Errorf("%s has a forged line: %q", what, line)
			}
		}
	}
	out, errOut = b.must(0, "cleanup", ordersTable, "--dry-run")
	clean("cleanup --dry-run", out+errOut)
	code, out, errOut = b.Run("cleanup", ordersTable, "-v") // -v lists each file to delete
	clean("the plan", out+errOut)
	for _, k := range []string{"clear\\x1b[2J\\x1b]0;owned\\a.parquet", `x.parquet\n    keep`, `late\x1b[31m\n    delete everything.parquet`} {
		if !strings.Contains(out+errOut, k) {
			t.Errorf("the plan does not show %q escaped:\n%s\n%s", k, out, errOut)
		}
	}
	code, out, errOut = b.Run("cleanup", ordersTable, "--yes")
	clean("cleanup", out+errOut)
	if code != 0 || !strings.Contains(out, "kept 1 file: not in this run's journal") ||
		!strings.Contains(out, `    "_zerobus/table_rejected_parquets/2026/01/02/late\x1b[31m\n    delete everything.parquet"`) {
		t.Errorf("cleanup: exit %d\nstdout: %q\nstderr: %q", code, out, errOut)
	}
	if got := b.fallbackLeft(); len(got) != 1 {
		t.Errorf("fallback files left: %v", got)
	}
}

// TestCleanupSafetyTamperedKeysFile: the keys file reload --key recorded is replaced, through
// the Files API, by one written with package keyfile that lacks the rows of one file, whose
// orders are then deleted from the table. Every key the tampered file holds is in the table,
// so only its recorded SHA-256 (and behind it the per-file count, each file's rows in the keys
// files against its footer) can tell: cleanup run straight after keeps every file, verify
// --key fails naming the keys file, and cleanup then keeps every batch.
func TestCleanupSafetyTamperedKeysFile(t *testing.T) {
	bins := buildCleanupBins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b := newCleanupBed(ctx, t, bins, threeFolders())
	b.reload("run1", "--key", "order_id")
	b.must(0, "verify", ordersTable, "--key", "order_id")
	var keysPath string
	for k := range b.staged("run1") {
		if strings.HasPrefix(k, "_zbrecover/keys/") {
			keysPath = stagingVol + "/run1/" + k
		}
	}
	if keysPath == "" {
		t.Fatalf("no keys file in %v", b.staged("run1"))
	}
	orig := b.volumeFile(keysPath)
	kr, err := keyfile.Open(bytes.NewReader(orig), int64(len(orig)))
	if err != nil {
		t.Fatal(err)
	}
	const dropped = "2026/01/02/part-00001.parquet"
	var buf bytes.Buffer
	kw, err := keyfile.NewWriter(&buf, kr.Columns(), keyfile.Options{RowOrdinals: kr.Meta().RowOrdinals})
	if err != nil {
		t.Fatal(err)
	}
	kept, skipped := 0, 0
	err = kr.Scan(ctx, func(r keyfile.Row) error {
		if r.File == fallback.Prefix+dropped {
			skipped++
			return nil
		}
		n, err := r.Keys[0].(json.Number).Int64()
		if err != nil {
			return err
		}
		ib := array.NewInt64Builder(memory.DefaultAllocator)
		defer ib.Release()
		ib.Append(n)
		a := ib.NewArray()
		defer a.Release()
		kept++
		return kw.Add(r.Group, r.File, max(r.Ordinal, 0), []arrow.Array{a})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := kw.Close(); err != nil {
		t.Fatal(err)
	}
	if skipped != 3 || kept != 15 {
		t.Fatalf("keys file: %d rows of %s, %d others", skipped, dropped, kept)
	}
	e2etest.PutVolumeFile(t, b.host, b.token, keysPath, buf.Bytes())
	if got := b.volumeFile(keysPath); !bytes.Equal(got, buf.Bytes()) {
		t.Fatal("the keys file was not replaced")
	}
	var gone []string
	for _, id := range b.ids[dropped] {
		gone = append(gone, fmt.Sprint(id))
	}
	b.SQL("DELETE FROM " + ordersTable + " WHERE order_id IN (" + strings.Join(gone, ", ") + ")")
	before, stagedBefore := b.fallbackLeft(), b.staged("run1")

	out, errOut := b.must(4, "cleanup", ordersTable, "--yes")
	if !strings.Contains(errOut, "do not check against the table now") {
		t.Errorf("cleanup with a tampered keys file:\nstdout: %s\nstderr: %s", out, errOut)
	}
	out, errOut = b.must(4, "verify", ordersTable, "--key", "order_id")
	if !strings.Contains(out, keysPath+" is not the one reload recorded") || !strings.Contains(out, "3 batches, 3 failed") {
		t.Errorf("verify --key with a tampered keys file:\nstdout: %s\nstderr: %s", out, errOut)
	}
	b.must(4, "cleanup", ordersTable, "--yes")
	if got := b.fallbackLeft(); len(got) != len(before) {
		t.Errorf("%d fallback files left of %d", len(got), len(before))
	}
	if got := b.staged("run1"); len(got) != len(stagedBefore) {
		t.Errorf("%d staged files left of %d", len(got), len(stagedBefore))
	}
	if gone := b.everyRecordKept([]string{"run1"}, nil); len(gone) > 0 {
		t.Errorf("files gone: %v", gone)
	}
}

// TestCleanupSafetyStagedCopiesInterrupted: the Files API refuses some deletes of staged
// copies (403 on a reproducible half of them): cleanup deletes the originals and the other
// copies, keeps the copies it could not delete, names them and exits 5. Once the Files API
// answers again, cleanup run again deletes the copies left ("Deleted 2 staged copies") and
// nothing else (a file of the staging folder the run does not hold stays); a third run has
// nothing to clean up.
func TestCleanupSafetyStagedCopiesInterrupted(t *testing.T) {
	bins := buildCleanupBins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b := newCleanupBed(ctx, t, bins, threeFolders())
	b.reload("run1")
	b.must(0, "verify", ordersTable)
	e2etest.PutVolumeFile(t, b.host, b.token, stagingVol+"/run1/notes.txt", []byte("kept"))
	b.Apply(map[string]any{"api_faults": []map[string]any{
		{"method": "DELETE", "path": "^/api/2.0/fs/files/Volumes/main/sales/staging/run1/", "percent": 50, "seed": 7, "times": -1,
			"action": "http", "http_status": 403},
	}})
	code, out, errOut := b.Run("cleanup", ordersTable, "--yes")
	left := b.staged("run1")
	if code != 5 || !strings.Contains(errOut, "Deleted 4 staged copies at "+stagingVol+"/run1") ||
		!strings.Contains(errOut, "2 staged copies at "+stagingVol+"/run1 were not deleted") || !strings.Contains(errOut, "run cleanup again") ||
		len(left) != 3 || len(b.fallbackLeft()) != 0 {
		t.Errorf("cleanup with deletes of copies refused: exit %d, want 5; copies left %v\nstdout: %s\nstderr: %s", code, left, out, errOut)
	}
	b.ClearFaults()
	code, out, errOut = b.Run("cleanup", ordersTable, "--yes")
	if code != 0 || !strings.Contains(errOut, "Deleted 2 staged copies at "+stagingVol+"/run1") || !strings.Contains(out, "0 deleted") {
		t.Errorf("cleanup again: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if got := b.staged("run1"); len(got) != 1 || got["notes.txt"] != 4 {
		t.Errorf("staging folder after cleanup: %v", got)
	}
	// Nothing left to do.
	out, errOut = b.must(0, "cleanup", ordersTable, "--yes")
	if !strings.Contains(errOut, "Nothing to clean up") {
		t.Errorf("third cleanup:\nstdout: %s\nstderr: %s", out, errOut)
	}
}

// TestCleanupSafetyDeleteNotPermitted: the file system refuses to delete the files of one
// date folder (made immutable, or read-only when not run as root): cleanup deletes the others,
// keeps those with the system's reason, exits 5 and says what a delete needs there (the
// operating system user's write permission on the folder), not cloud credentials.
func TestCleanupSafetyDeleteNotPermitted(t *testing.T) {
	bins := buildCleanupBins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	b := newCleanupBed(ctx, t, bins, threeFolders())
	b.reload("run1")
	b.must(0, "verify", ordersTable)
	locked := filepath.Join(b.fallback, "2026", "01", "02")
	if os.Geteuid() == 0 {
		// Root deletes in a read-only folder: an immutable one refuses it.
		if out, err := exec.Command("chattr", "+i", locked).CombinedOutput(); err != nil {
			t.Skipf("chattr +i: %v %s", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("chattr", "-i", locked).Run() })
	} else {
		if err := os.Chmod(locked, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
	}
	code, out, errOut := b.Run("cleanup", ordersTable, "--yes")
	if code != 5 || !strings.Contains(out, "4 deleted") || strings.Count(out, "failed _zerobus/table_rejected_parquets/2026/01/02/") != 2 {
		t.Errorf("cleanup: exit %d, want 5\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "The file system refused the delete to the user running zbrecover") ||
		!strings.Contains(errOut, "write and search permission on its folder") || !strings.Contains(errOut, "not immutable") ||
		strings.Contains(errOut, "credentials") {
		t.Errorf("cleanup's hint:\n%s", errOut)
	}
	if got := b.fallbackLeft(); len(got) != 2 {
		t.Errorf("fallback files left: %v", got)
	}
}

// TestCleanupSafetyNeedsReview: on a warehouse that refuses commit tags, a batch whose answer
// was lost is settled from the table's history without a tag (another writer with the same
// identity could have made that commit), so cleanup keeps its files and staged copies (exit 5,
// "needs review", naming verify --key) and deletes the other batches'. verify --key then
// proves it by key, and cleanup deletes it.
func TestCleanupSafetyNeedsReview(t *testing.T) {
	bins := buildCleanupBins(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	faults := writeFaults(t, `{"unknowns": {"refuse_user_metadata": true}}`)
	b := newCleanupBed(ctx, t, bins, threeFolders(), "--faults", faults)
	// The second load's answer is lost (it commits); the reload stops there, and the next
	// one settles the batch from the history.
	b.Apply(map[string]any{"faults": []map[string]any{
		{"method": "ExecuteStatement", "match": `(?i)^COPY INTO .*/run1/[^/']+/2026/01/02/'\) FILEFORMAT = PARQUET FILES`, "times": 0, "action": "drop_response"},
	}})
	reload := []string{"reload", ordersTable, "--rename", "customer_id=customer_key", "--stage-to", stagingVol + "/run1", "--yes"}
	b.must(1, reload...)
	b.ClearFaults()
	b.must(0, reload...)
	out, errOut := b.must(0, "verify", ordersTable)
	if !strings.Contains(out, "batch 2  review") || !strings.Contains(out, "1 needs review") {
		t.Errorf("verify:\nstdout: %s\nstderr: %s", out, errOut)
	}
	out, errOut = b.must(5, "cleanup", ordersTable, "--yes")
	if strings.Count(out, "\n    _zerobus/table_rejected_parquets/2026/01/02/") != 2 || !strings.Contains(out, "kept 2 files: batch 2 needs review") ||
		!strings.Contains(errOut, "batch 2 of run") || !strings.Contains(errOut, "zbrecover verify main.sales.orders --key COL") ||
		!strings.Contains(errOut, "Deleted 4 staged copies") {
		t.Errorf("cleanup:\nstdout: %s\nstderr: %s", out, errOut)
	}
	left := b.fallbackLeft()
	if len(left) != 2 || len(b.staged("run1")) != 2 {
		t.Errorf("after cleanup: fallback %v, staged %v", left, b.staged("run1"))
	}
	for k := range left {
		if !strings.HasPrefix(k, "2026/01/02/") {
			t.Errorf("kept %s", k)
		}
	}
	out, errOut = b.must(0, "verify", ordersTable, "--key", "order_id")
	if !strings.Contains(out, "batch 2  ok") || !strings.Contains(out, "by key") {
		t.Errorf("verify --key:\nstdout: %s\nstderr: %s", out, errOut)
	}
	out, errOut = b.must(0, "cleanup", ordersTable, "--yes")
	if !strings.Contains(out, "2 deleted") || !strings.Contains(errOut, "Deleted 2 staged copies") {
		t.Errorf("cleanup after verify --key:\nstdout: %s\nstderr: %s", out, errOut)
	}
	if got := b.fallbackLeft(); len(got) != 0 {
		t.Errorf("fallback files left: %v", got)
	}
}
