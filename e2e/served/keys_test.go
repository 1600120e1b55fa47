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

// keysRecovery is a managed table whose producers still write customer_id (renamed since)
// and DECIMAL(10,2): files of group "old" (nOld files of per rows each), a NULL customer_id
// on every seventh record.
func writeKeysRecovery(t *testing.T, root string, nOld, per int) []int64 {
	t.Helper()
	if _, err := deltatest.Write(root, deltatest.Table{Schema: e2etest.TableSchema}); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	id := int64(0)
	for i := 0; i < nOld; i++ {
		var rows []string
		for k := 0; k < per; k++ {
			id++
			ids = append(ids, id)
			cust := fmt.Sprintf(`"c%d"`, id%9)
			if id%7 == 0 {
				cust = "null"
			}
			rows = append(rows, fmt.Sprintf(`{"id":%d,"customer_id":%s,"amount":"%d.25"}`, id, cust, id%100))
		}
		data, err := pqgen.Bytes(e2etest.OldFiles, "["+strings.Join(rows, ",")+"]", pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.FromSlash(fallback.Prefix), fmt.Sprintf("2026/01/%02d/old-%05d.parquet", 1+i%2, i))
		if err := pqgen.WriteFile(p, data); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

type overlapDoc struct {
	Keys struct {
		Groups []struct {
			Group    string `json:"group"`
			Records  int64  `json:"records"`
			Keys     int64  `json:"keys"`
			InTable  int64  `json:"records_key_in_table"`
			New      int64  `json:"records_new"`
			NullRecs int64  `json:"records_null_key"`
		} `json:"groups"`
		Total struct {
			Records int64 `json:"records"`
			InTable int64 `json:"records_key_in_table"`
			New     int64 `json:"records_new"`
			DupKeys int64 `json:"keys_duplicated_in_files"`
		} `json:"total"`
	} `json:"keys"`
}

// TestDemoServeKeysOnAManagedTable drives the release binary against `demo serve` with its
// default managed table, whose storage the warehouse may not read by path: inspect --key says
// which flag it needs before reading anything, and with --stage-to measures exactly the 30%
// of the records already in the table, from a keys file it writes and removes; reload --key
// records a keys file of the loaded files; verify --key uses it, also after cleanup deleted
// every file.
func TestDemoServeKeysOnAManagedTable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)
	root := filepath.Join(t.TempDir(), "orders")
	const nFiles, per = 20, 5
	ids := writeKeysRecovery(t, root, nFiles, per)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	const table = "main.sales.orders"
	const vol = "/Volumes/main/sales/staging"

	// 30% of the records were published by Zerobus too (at-least-once delivery).
	published := len(ids) * 3 / 10
	var values []string
	for _, id := range ids[:published] {
		values = append(values, fmt.Sprintf("(%d, 'published', 1.0)", id))
	}
	s.SQL("INSERT INTO main.sales.orders VALUES " + strings.Join(values, ", "))

	// (1) Without --stage-to, the managed table's folder cannot be read by the warehouse:
	// the flag is named, exit 2, and no footer was read (no report).
	code, out, errOut := s.Run("inspect", table, "--from", "warehouse", "--key", "id")
	if code != 2 || !strings.Contains(errOut, "--stage-to") || !strings.Contains(errOut, "nothing was read") || strings.Contains(out, "schema group") {
		t.Fatalf("inspect --key without --stage-to: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	// (2) With --stage-to: the exact overlap, from a keys file removed afterwards.
	code, out, errOut = s.Run("-o", "json", "inspect", table, "--from", "warehouse", "--key", "id", "--stage-to", vol+"/keys")
	if code != 3 { // the group still blocks (a rename): exit 3, the measure is made
		t.Fatalf("inspect --key --stage-to: exit %d\nstdout: %.2000s\nstderr: %s", code, out, errOut)
	}
	var ov overlapDoc
	e2etest.DecodeInto(t, out, &ov)
	if len(ov.Keys.Groups) != 1 || ov.Keys.Groups[0].InTable != int64(published) || ov.Keys.Total.InTable != int64(published) ||
		ov.Keys.Total.Records != int64(len(ids)) || ov.Keys.Total.New != int64(len(ids)-published) {
		t.Errorf("overlap %+v, want %d of %d records in the table", ov.Keys, published, len(ids))
	}
	host, token := w.Env["DATABRICKS_HOST"], w.Env["DATABRICKS_TOKEN"]
	for k := range e2etest.ListVolume(t, host, token, vol+"/keys") {
		t.Errorf("inspect left %s in the volume", k)
	}

	// (3) A staged reload with --key records a keys file beside the copies.
	stage := vol + "/run1"
	code, out, errOut = s.Run("-o", "json", "reload", table, "--rename", "customer_id=customer_key", "--stage-to", stage, "--key", "id", "--yes")
	if code != 0 {
		t.Fatalf("reload --key: exit %d\nstdout: %.3000s\nstderr: %s", code, out, errOut)
	}
	keysFiles := 0
	for k := range e2etest.ListVolume(t, host, token, stage) {
		if strings.HasPrefix(k, "_zbrecover/keys/") && strings.HasSuffix(k, ".parquet") {
			keysFiles++
		}
	}
	if keysFiles != 1 {
		t.Errorf("%d keys files beside the staged copies, want 1", keysFiles)
	}

	// (4) verify --key: every key in the table, the published ones twice.
	type verifyDoc struct {
		OK   bool `json:"ok"`
		Keys struct {
			Keys       int64 `json:"keys"`
			Missing    int64 `json:"missing"`
			Duplicated int64 `json:"duplicated_keys"`
			OK         bool  `json:"ok"`
		} `json:"keys"`
	}
	check := func(when string) {
		t.Helper()
		code, out, errOut := s.Run("-o", "json", "verify", table, "--key", "id")
		var v verifyDoc
		if code != 0 {
			t.Fatalf("verify --key %s: exit %d\nstdout: %.3000s\nstderr: %s", when, code, out, errOut)
		}
		e2etest.DecodeInto(t, out, &v)
		if !v.OK || !v.Keys.OK || v.Keys.Missing != 0 || v.Keys.Keys != int64(len(ids)) || v.Keys.Duplicated != int64(published) {
			t.Errorf("verify --key %s: %+v, want %d keys, 0 missing, %d duplicated", when, v, len(ids), published)
		}
	}
	check("before cleanup")

	// (5) cleanup deletes every file and copy; the keys file stays.
	if code, out, errOut := s.Run("cleanup", table, "--yes"); code != 0 {
		t.Fatalf("cleanup: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	left := 0
	_ = filepath.WalkDir(filepath.Join(root, filepath.FromSlash(fallback.Prefix)), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left++
		}
		return nil
	})
	if left != 0 {
		t.Errorf("%d fallback files left after cleanup", left)
	}
	// (6) verify --key after cleanup: from the keys file.
	check("after cleanup")

	w.Stop()
}

// TestDemoServeCompositeKeyWithNulls: a composite key (customer_key, id) whose first column
// the files hold under its old name (customer_id, renamed since) and which is NULL on some
// records: inspect --key counts, through the rename, a key with a NULL column as no key: such a
// record is never in the table by key (not even when the table holds the same NULL-keyed row),
// and a load by key would insert it.
func TestDemoServeCompositeKeyWithNulls(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)
	root := filepath.Join(t.TempDir(), "orders")
	ids := writeKeysRecovery(t, root, 6, 7)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	// Published: ids 1..10 with the same customer (NULL where the file has NULL), and id 11
	// with another customer (not the same composite key).
	var values []string
	nulls := 0
	for _, id := range ids[:10] {
		cust := fmt.Sprintf("'c%d'", id%9)
		if id%7 == 0 {
			cust = "NULL"
			nulls++
		}
		values = append(values, fmt.Sprintf("(%d, %s, 1.0)", id, cust))
	}
	values = append(values, "(11, 'other', 1.0)")
	s.SQL("INSERT INTO main.sales.orders VALUES " + strings.Join(values, ", "))
	code, out, errOut := s.Run("-o", "json", "inspect", "main.sales.orders", "--from", "warehouse", "--key", "customer_key,id",
		"--rename", "customer_id=customer_key", "--stage-to", "/Volumes/main/sales/staging/keys")
	if code != 3 {
		t.Fatalf("inspect: exit %d\nstdout: %.2000s\nstderr: %s", code, out, errOut)
	}
	var ov overlapDoc
	e2etest.DecodeInto(t, out, &ov)
	wantNull := int64(0)
	for _, id := range ids {
		if id%7 == 0 {
			wantNull++
		}
	}
	if ov.Keys.Total.InTable != int64(10-nulls) || ov.Keys.Total.Records != int64(len(ids)) || len(ov.Keys.Groups) != 1 || ov.Keys.Groups[0].NullRecs != wantNull ||
		ov.Keys.Total.New != int64(len(ids)-10+nulls) {
		t.Errorf("overlap %+v: want %d records with their key in the table (the 10 published, less the %d with a NULL customer), %d NULL-key records, all new",
			ov.Keys, 10-nulls, nulls, wantNull)
	}
	w.Stop()
}
