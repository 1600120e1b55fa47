//go:build demo && cgo

package served

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/schemadiff"
)

// strictSchema is a managed table keyed by a nullable customer_id, as Zerobus targets
// usually are; its files (e2etest.OldFiles) have the same names, a narrower decimal.
var strictSchema = schemadiff.NewSchema().Col("id", schemadiff.LongType, schemadiff.NotNull).
	Col("customer_id", schemadiff.StringType).Col("amount", schemadiff.DecimalType(18, 4))

// strictRecord is one fallback record: its id and customer ("" for NULL).
type strictRecord struct {
	id   int64
	cust string
}

// strictBed is demo serve with one managed table, main.sales.orders at root, whose fallback
// files are given by their key under the fallback folder.
type strictBed struct {
	*served
	w        *e2etest.ServedWorkspace
	root     string
	fallback string
	data     map[string][]byte
}

const strictTable = "main.sales.orders"

func newStrictBed(t *testing.T, ctx context.Context, files map[string][]strictRecord) *strictBed {
	t.Helper()
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)
	root := filepath.Join(t.TempDir(), "orders")
	if _, err := deltatest.Write(root, deltatest.Table{Schema: strictSchema}); err != nil {
		t.Fatal(err)
	}
	b := &strictBed{root: root, fallback: filepath.Join(root, filepath.FromSlash(fallback.Prefix)), data: map[string][]byte{}}
	for key, recs := range files {
		b.data[key] = strictFile(t, recs)
		if err := pqgen.WriteFile(filepath.Join(b.fallback, filepath.FromSlash(key)), b.data[key]); err != nil {
			t.Fatal(err)
		}
	}
	b.w = e2etest.StartDemoServe(ctx, t, demoBin, "--table", strictTable+"="+root)
	b.served = &served{e2etest.NewServed(ctx, t, release, b.w.Env)}
	return b
}

// strictFile is a fallback file of the records (none: a file of 0 rows, its footer only).
func strictFile(t *testing.T, recs []strictRecord) []byte {
	t.Helper()
	rows := make([]string, len(recs))
	for i, r := range recs {
		cust := "null"
		if r.cust != "" {
			cust = fmt.Sprintf("%q", r.cust)
		}
		rows[i] = fmt.Sprintf(`{"id":%d,"customer_id":%s,"amount":"%d.25"}`, r.id, cust, r.id%100)
	}
	data, err := pqgen.Bytes(e2etest.OldFiles, "["+strings.Join(rows, ",")+"]", pqgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// must runs the release binary and fails the test unless it exits with code.
func (b *strictBed) must(code int, args ...string) (string, string) {
	b.T.Helper()
	got, out, errOut := b.Run(args...)
	if got != code {
		b.T.Fatalf("zbrecover %s: exit %d, want %d\nstdout: %.4000s\nstderr: %.4000s", strings.Join(args, " "), got, code, out, errOut)
	}
	return out, errOut
}

// left returns the fallback files still there, by their key under the fallback folder.
func (b *strictBed) left() map[string]bool {
	out := map[string]bool{}
	_ = filepath.WalkDir(b.fallback, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(b.fallback, p)
			out[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	return out
}

// ids returns the table's rows per id.
func (b *strictBed) ids() map[int64]int {
	b.T.Helper()
	out := map[int64]int{}
	for _, r := range b.SQL("SELECT id FROM " + strictTable).Rows {
		switch v := r[0].(type) {
		case int64:
			out[v]++
		case int32:
			out[int64(v)]++
		}
	}
	return out
}

// wantLeft fails the test unless exactly keys are left in the fallback folder.
func (b *strictBed) wantLeft(when string, keys ...string) {
	b.T.Helper()
	got := b.left()
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	if len(got) != len(want) {
		b.T.Errorf("%s: fallback files left %v, want %v", when, got, keys)
		return
	}
	for k := range want {
		if !got[k] {
			b.T.Errorf("%s: fallback files left %v, want %v", when, got, keys)
			return
		}
	}
}

// keysDoc is verify -o json with its key check.
type keysDoc struct {
	OK     bool `json:"ok"`
	Checks []struct {
		Batch    int    `json:"batch"`
		OK       bool   `json:"ok"`
		Evidence string `json:"evidence"`
		Note     string `json:"note"`
	} `json:"checks"`
	Keys *struct {
		Rows     int64 `json:"rows"`
		NullRows int64 `json:"null_rows"`
		Keys     int64 `json:"keys"`
		Missing  int64 `json:"missing"`
		OK       bool  `json:"ok"`
		Batches  []struct {
			Batch    int    `json:"batch"`
			NullRows int64  `json:"null_rows"`
			Missing  int64  `json:"missing"`
			Verdict  string `json:"verdict"`
			Note     string `json:"note"`
		} `json:"batches"`
	} `json:"keys"`
}

func (d keysDoc) check(batch int) (ok bool, evidence, note string) {
	for _, c := range d.Checks {
		if c.Batch == batch {
			return c.OK, c.Evidence, c.Note
		}
	}
	return false, "", "no check of batch " + fmt.Sprint(batch)
}

func (b *strictBed) verifyKey(code int, key string) keysDoc {
	b.T.Helper()
	out, _ := b.must(code, "-o", "json", "verify", strictTable, "--key", key)
	var d keysDoc
	e2etest.DecodeInto(b.T, out, &d)
	if d.Keys == nil {
		b.T.Fatalf("verify --key printed no key check:\n%s", out)
	}
	return d
}

// TestKeysStrictNullKeys (case 5): a file holds records whose customer_id is NULL. After the
// load, the table's owner deletes the rows with a NULL customer_id and inserts one unrelated
// row with a NULL customer_id. verify --key customer_id reports the NULL-keyed rows, proves
// only the batch without one (by key: every key of it is in the table after the DELETE), and
// does not say ok; cleanup keeps the file whose NULL-keyed record left the table (its record
// is then still in a file) and deletes the other.
func TestKeysStrictNullKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const withNull, without = "2026/01/01/part-00000.parquet", "2026/01/02/part-00001.parquet"
	b := newStrictBed(t, ctx, map[string][]strictRecord{
		withNull: {{1, "c1"}, {2, "c2"}, {3, ""}, {4, "c4"}},
		without:  {{5, "c5"}, {6, "c6"}, {7, "c7"}, {8, "c8"}},
	})
	b.must(0, "reload", strictTable, "--stage-to", "/Volumes/main/sales/staging/strict", "--key", "customer_id", "--yes")
	b.SQL("DELETE FROM " + strictTable + " WHERE customer_id IS NULL")
	b.SQL("INSERT INTO " + strictTable + " VALUES (999, NULL, 1.0)")

	d := b.verifyKey(4, "customer_id")
	if d.OK || d.Keys.NullRows != 1 || d.Keys.Rows != 8 || d.Keys.Keys != 7 || d.Keys.Missing != 0 {
		t.Errorf("verify --key: ok %v, key check %+v; want not ok, 1 NULL-keyed row of 8, 7 keys, none missing", d.OK, *d.Keys)
	}
	if ok, ev, note := d.check(1); ok || ev != "" || !strings.Contains(note, "DELETE") || !strings.Contains(note, "not proved by key: 1 of its 4 rows have a NULL key column") {
		t.Errorf("batch 1 (a NULL-keyed record): ok %v by %q: %s", ok, ev, note)
	}
	if ok, ev, note := d.check(2); !ok || ev != "key" {
		t.Errorf("batch 2 (no NULL key): ok %v by %q: %s", ok, ev, note)
	}
	_, out, _ := b.Run("verify", strictTable, "--key", "customer_id")
	if !strings.Contains(out, "1 of 8 rows read has a NULL key column") || !strings.Contains(out, "batch 1  not proved by key") {
		t.Errorf("verify --key does not report the NULL key:\n%s", out)
	}

	out, errOut := b.must(4, "cleanup", strictTable, "--yes")
	b.wantLeft("cleanup", withNull)
	if !strings.Contains(out+errOut, "batch 1") {
		t.Errorf("cleanup does not say which batch it kept:\nstdout: %s\nstderr: %s", out, errOut)
	}
	// Every record is in the table or still in a file: id 3 (NULL customer) is in the file kept.
	ids := b.ids()
	for _, id := range []int64{1, 2, 4, 5, 6, 7, 8} {
		if ids[id] != 1 {
			t.Errorf("id %d is in the table %d times", id, ids[id])
		}
	}
	if ids[3] != 0 {
		t.Errorf("id 3 is in the table %d times (deleted by the owner)", ids[3])
	}
	b.w.Stop()
}

// TestKeysStrictEmptyFile (case 8): the folder holds a file of 0 rows (a footer only, as
// writers produce): a load by key of it and verify --key pass (the file is covered by its 0
// rows), and cleanup deletes every file.
func TestKeysStrictEmptyFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := newStrictBed(t, ctx, map[string][]strictRecord{
		"2026/01/01/part-00000.parquet": {{1, "c1"}, {2, "c2"}},
		"2026/01/01/part-00001.parquet": nil,
		"2026/01/01/part-00002.parquet": {{3, "c3"}},
	})
	b.must(0, "reload", strictTable, "--stage-to", "/Volumes/main/sales/staging/empty", "--dedupe-key", "id", "--yes")
	d := b.verifyKey(0, "id")
	if !d.OK || !d.Keys.OK || d.Keys.Keys != 3 || d.Keys.Missing != 0 || d.Keys.Rows != 3 {
		t.Errorf("verify --key: %+v %+v", d.OK, *d.Keys)
	}
	b.must(0, "cleanup", strictTable, "--yes")
	b.wantLeft("cleanup")
	if ids := b.ids(); len(ids) != 3 || ids[1] != 1 || ids[2] != 1 || ids[3] != 1 {
		t.Errorf("table ids %v", ids)
	}
	b.w.Stop()
}

// TestKeysStrictReplacedCopy (case 2): the warehouse reads other bytes than the originals.
// Batch 2's load is held by the warehouse for a few seconds (after every check before it);
// meanwhile its staged copy is replaced by a file of as many rows with other ids. The
// statement answers with the batch's row count, so its answer "verifies" it, but the keys
// file reload wrote from the originals finds none of its keys in the table: cleanup's
// re-check keeps everything of batch 2 (deleting batch 1's), verify --key fails it, a plain
// verify after that does not lift it, nor does a verify --key while some keys are still
// missing; once the owner inserts every missing record, verify --key passes and cleanup
// deletes the file (and keeps the replaced copy: it is not the bytes staged).
func TestKeysStrictReplacedCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const first, second = "2026/01/01/part-00000.parquet", "2026/01/02/part-00001.parquet"
	b := newStrictBed(t, ctx, map[string][]strictRecord{
		first:  {{1, "c1"}, {2, "c2"}, {3, "c3"}, {4, "c4"}},
		second: {{5, "c5"}, {6, "c6"}, {7, "c7"}, {8, "c8"}},
	})
	const vol = "/Volumes/main/sales/staging/replaced"
	host, token := b.Env["DATABRICKS_HOST"], b.Env["DATABRICKS_TOKEN"]
	// The second load (batch 2's) is held 4 s once it reached the warehouse.
	b.Apply(map[string]any{"faults": []map[string]any{
		{"method": "ExecuteStatement", "match": `(?i)^COPY INTO .* FILEFORMAT = PARQUET FILES = `, "skip": 1, "action": "delay", "delay_ms": 4000},
	}})
	type result struct {
		code        int
		out, errOut string
		err         error
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut, err := b.RunErr("reload", strictTable, "--stage-to", vol, "--key", "id", "--batch-files", "1", "--yes")
		done <- result{code, out, errOut, err}
	}()
	replaced := false
	for !replaced {
		select {
		case r := <-done:
			t.Fatalf("reload ended before its second load was held: exit %d %v\n%s%s", r.code, r.err, r.out, r.errOut)
		case <-time.After(50 * time.Millisecond):
		}
		var faults struct {
			Faults []struct {
				Fired int `json:"fired"`
			} `json:"faults"`
		}
		if err := json.Unmarshal([]byte(b.Control(http.MethodGet, "faults", nil)), &faults); err != nil {
			t.Fatal(err)
		}
		if len(faults.Faults) != 1 || faults.Faults[0].Fired == 0 {
			continue
		}
		// The staged copy of the second file, found by its bytes (whatever it is named).
		var copyKey string
		for k := range e2etest.ListVolume(t, host, token, vol) {
			if strings.HasPrefix(k, "_zbrecover/") {
				continue
			}
			if bytes.Equal(volumeGet(t, host, token, vol+"/"+k), b.data[second]) {
				copyKey = k
			}
		}
		if copyKey == "" {
			t.Fatalf("no staged copy of %s in %v", second, e2etest.ListVolume(t, host, token, vol))
		}
		other := strictFile(t, []strictRecord{{105, "x"}, {106, "x"}, {107, "x"}, {108, "x"}})
		volumeOverwrite(t, host, token, vol+"/"+copyKey, other)
		replaced = true
	}
	r := <-done
	if r.err != nil || r.code != 0 {
		t.Fatalf("reload: exit %d %v\n%s%s", r.code, r.err, r.out, r.errOut)
	}
	if ids := b.ids(); ids[5] != 0 || ids[105] != 1 {
		t.Fatalf("the held load did not read the replaced copy: table ids %v", ids)
	}

	// cleanup straight after: its re-check fails batch 2 by key and keeps it whole.
	out, errOut := b.must(4, "cleanup", strictTable, "--yes")
	b.wantLeft("cleanup after the load", second)
	if !strings.Contains(out+errOut, "4 of its 4 keys are missing from the table") {
		t.Errorf("cleanup does not say why it kept batch 2:\nstdout: %s\nstderr: %s", out, errOut)
	}
	d := b.verifyKey(4, "id")
	if ok, _, note := d.check(2); ok || !strings.Contains(note, "failed it (4 of its 4 keys are missing") {
		t.Errorf("verify --key, batch 2: ok %v: %s", ok, note)
	}
	// A plain verify does not lift it, and cleanup keeps the file.
	out, errOut = b.must(4, "verify", strictTable)
	if !strings.Contains(out, "batch 2  FAIL") {
		t.Errorf("plain verify after a failed verify --key:\nstdout: %s\nstderr: %s", out, errOut)
	}
	b.must(4, "cleanup", strictTable, "--yes")
	b.wantLeft("cleanup after a plain verify", second)

	// Some of the records inserted by the owner: still failing.
	b.SQL("INSERT INTO " + strictTable + " VALUES (5, 'c5', 5.25), (6, 'c6', 6.25)")
	d = b.verifyKey(4, "id")
	if ok, _, note := d.check(2); ok || !strings.Contains(note, "2 of its 4 keys are missing") {
		t.Errorf("verify --key with 2 keys back, batch 2: ok %v: %s", ok, note)
	}
	b.must(4, "cleanup", strictTable, "--yes")
	b.wantLeft("cleanup with 2 keys back", second)

	// Every record back: verify --key passes and lifts the block.
	b.SQL("INSERT INTO " + strictTable + " VALUES (7, 'c7', 7.25), (8, 'c8', 8.25)")
	d = b.verifyKey(0, "id")
	if ok, ev, note := d.check(2); !ok || ev != "key" {
		t.Errorf("verify --key with every key back, batch 2: ok %v by %q: %s", ok, ev, note)
	}
	// The original is deleted; the staged copy, no longer the bytes staged, is kept (exit 5).
	out, errOut = b.must(5, "cleanup", strictTable, "--yes")
	b.wantLeft("cleanup after a passing verify --key")
	if !strings.Contains(errOut, "1 staged copies at "+vol+" were not deleted") || !strings.Contains(errOut, "changed") {
		t.Errorf("cleanup after a passing verify --key:\nstdout: %s\nstderr: %s", out, errOut)
	}
	ids := b.ids()
	var got []int64
	for id, n := range ids {
		if n != 1 {
			t.Errorf("id %d is in the table %d times", id, n)
		}
		got = append(got, id)
	}
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	if fmt.Sprint(got) != "[1 2 3 4 5 6 7 8 105 106 107 108]" {
		t.Errorf("table ids %v", got)
	}
	b.w.Stop()
}

// volumeGet reads a volume file through the Files API.
func volumeGet(t *testing.T, host, token, vpath string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, host+"/api/2.0/fs/files"+vpath, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", vpath, resp.Status, err)
	}
	return data
}

// volumeOverwrite replaces a volume file through the Files API (overwrite=true).
func volumeOverwrite(t *testing.T, host, token, vpath string, data []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, host+"/api/2.0/fs/files"+vpath+"?overwrite=true", bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT %s: %s", vpath, resp.Status)
	}
}
