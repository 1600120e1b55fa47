//go:build demo && cgo

package served

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
)

// writeIDFiles writes a managed table at root (if missing) with n fallback files of rows
// rows each, ids first+1 … first+n·rows, the files named alike whatever first is (so that
// two tables' files have the same relative names), over two date folders.
func writeIDFiles(t *testing.T, root string, first, n, rows int) {
	t.Helper()
	if _, err := deltatest.Write(root, deltatest.Table{Schema: e2etest.TableSchema}); err != nil {
		t.Fatal(err)
	}
	id := first
	for i := 0; i < n; i++ {
		var rs []string
		for k := 0; k < rows; k++ {
			id++
			rs = append(rs, fmt.Sprintf(`{"id":%d,"customer_id":"c%d","amount":"%d.25"}`, id, id, id%100))
		}
		data, err := pqgen.Bytes(e2etest.OldFiles, "["+strings.Join(rs, ",")+"]", pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, filepath.FromSlash(fallback.Prefix), fmt.Sprintf("2026/01/%02d/part-%05d.parquet", 1+i%2, i))
		if err := pqgen.WriteFile(p, data); err != nil {
			t.Fatal(err)
		}
	}
}

// idsOnce checks that table holds each id of first+1 … first+n exactly once and nothing else.
func (s *served) idsOnce(table string, first, n int) {
	s.T.Helper()
	got := s.Numbers(fmt.Sprintf("SELECT count(*), count(DISTINCT id), count(CASE WHEN id BETWEEN %d AND %d THEN 1 END) FROM %s", first+1, first+n, table), 3)
	if got[0] != int64(n) || got[1] != int64(n) || got[2] != int64(n) {
		s.T.Errorf("%s: %d rows, %d distinct ids, %d of ids %d…%d; want each once", table, got[0], got[1], got[2], first+1, first+n)
	}
}

// TestIdentityTwoTablesOneStagingFolder is case 1: two managed tables whose fallback files
// have the same relative names, staged to one folder while the first table's COPY INTO is
// held by the warehouse. Each table loads its own rows only, exactly once; verify --key
// passes for each; cleanup deletes both tables' files, every record being in its table.
func TestIdentityTwoTablesOneStagingFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := e2etest.Demo(t), e2etest.Release(t)
	const n, rows = 6, 3
	rootA, rootB := filepath.Join(t.TempDir(), "ta"), filepath.Join(t.TempDir(), "tb")
	writeIDFiles(t, rootA, 0, n, rows)
	writeIDFiles(t, rootB, 1000, n, rows)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.ta="+rootA, "--table", "main.sales.tb="+rootB)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	s.Apply(map[string]any{"faults": []map[string]any{
		{"match": "^COPY INTO `main`.`sales`.`ta` .*FILEFORMAT = PARQUET FILES", "times": 1, "action": "delay", "delay_ms": 3000}}})
	reload := func(table string) []string {
		return []string{"reload", table, "--rename", "customer_id=customer_key", "--key", "id",
			"--stage-to", "/Volumes/main/sales/staging/shared", "--yes"}
	}
	var wg sync.WaitGroup
	var codeA int
	var outA string
	wg.Add(1)
	go func() {
		defer wg.Done()
		codeA, _, outA = s.Within(2*time.Minute, reload("main.sales.ta")...)
	}()
	time.Sleep(1500 * time.Millisecond) // ta's first COPY INTO is held now
	if code, _, errOut := s.Within(2*time.Minute, reload("main.sales.tb")...); code != 0 {
		t.Fatalf("reload tb: exit %d\n%s", code, errOut)
	}
	wg.Wait()
	if codeA != 0 {
		t.Fatalf("reload ta: exit %d\n%s", codeA, outA)
	}
	s.idsOnce("main.sales.ta", 0, n*rows)
	s.idsOnce("main.sales.tb", 1000, n*rows)
	for _, table := range []string{"main.sales.ta", "main.sales.tb"} {
		if code, out, errOut := s.Within(time.Minute, "verify", table, "--key", "id"); code != 0 {
			t.Errorf("verify --key %s: exit %d\n%s%s", table, code, out, errOut)
		}
		if code, _, errOut := s.Within(time.Minute, "cleanup", table, "--yes"); code != 0 {
			t.Errorf("cleanup %s: exit %d\n%s", table, code, errOut)
		}
	}
	// Every record is in its own table, exactly once, after the files are gone.
	s.idsOnce("main.sales.ta", 0, n*rows)
	s.idsOnce("main.sales.tb", 1000, n*rows)
}

// place is where one operator stages: the folder and, optionally, a narrower --prefix.
type place struct{ stageTo, prefix string }

// TestIdentityTwoJournals is cases 3 and 4 and must-show 2: two operators (two journals)
// staging one table, one after another and at the same time, to one folder, two folders of
// one volume, two volumes, and one folder with a narrower --prefix. Whatever each says, no
// row is ever in the table twice, the one that does not load says why, and once both are run
// again every record is in the table exactly once.
func TestIdentityTwoJournals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := e2etest.Demo(t), e2etest.Release(t)
	const vol, vol2 = "/Volumes/main/sales/staging", "/Volumes/main/sales/staging2"
	layouts := []struct {
		name string
		a, b place
	}{
		{"one folder", place{vol + "/shared", ""}, place{vol + "/shared", ""}},
		{"two folders", place{vol + "/a", ""}, place{vol + "/b", ""}},
		{"two volumes", place{vol + "/a", ""}, place{vol2 + "/b", ""}},
		{"one folder, a narrower prefix", place{vol + "/shared", ""}, place{vol + "/shared", fallback.Prefix + "2026/01/01"}},
	}
	const n, rows = 8, 2
	for _, l := range layouts {
		for _, together := range []bool{false, true} {
			name := l.name + map[bool]string{false: ", one after another", true: ", at the same time"}[together]
			t.Run(name, func(t *testing.T) {
				root := filepath.Join(t.TempDir(), "orders")
				writeIDFiles(t, root, 0, n, rows)
				ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
				defer cancel()
				w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root, "--volume", "main.sales.staging2")
				a := &served{e2etest.NewServed(ctx, t, release, w.Env)}
				b := &served{e2etest.NewServed(ctx, t, release, w.Env)}
				reload := func(p place) []string {
					args := []string{"-o", "json", "reload", "main.sales.orders", "--rename", "customer_id=customer_key", "--stage-to", p.stageTo, "--yes"}
					if p.prefix != "" {
						args = append(args, "--prefix", p.prefix)
					}
					return args
				}
				type result struct {
					code   int
					errOut string
				}
				var ra, rb result
				if together {
					// Each load is held a second, so that both runs are in flight at once.
					a.Apply(map[string]any{"faults": []map[string]any{{"match": "^COPY INTO .*FILEFORMAT = PARQUET FILES", "times": -1, "action": "delay", "delay_ms": 1000}}})
					var wg sync.WaitGroup
					wg.Add(2)
					go func() { defer wg.Done(); ra.code, _, ra.errOut = a.Within(3*time.Minute, reload(l.a)...) }()
					go func() { defer wg.Done(); rb.code, _, rb.errOut = b.Within(3*time.Minute, reload(l.b)...) }()
					wg.Wait()
					a.ClearFaults()
				} else {
					ra.code, _, ra.errOut = a.Within(2*time.Minute, reload(l.a)...)
					rb.code, _, rb.errOut = b.Within(2*time.Minute, reload(l.b)...)
				}
				t.Logf("A: exit %d; B: exit %d\nA: %.1500s\nB: %.1500s", ra.code, rb.code, ra.errOut, rb.errOut)
				if got := a.Count("SELECT count(*) - count(DISTINCT id) FROM main.sales.orders"); got != 0 {
					t.Fatalf("%d rows are in the table twice (A exit %d, B exit %d)", got, ra.code, rb.code)
				}
				// The one that did not load everything says why: a run of another journal,
				// or a claim naming another copy.
				for _, r := range []result{ra, rb} {
					if r.code != 0 && !strings.Contains(r.errOut, "another journal") && !strings.Contains(r.errOut, "claimed by run") &&
						!strings.Contains(r.errOut, "unknown") {
						t.Errorf("exit %d without naming the other run:\n%s", r.code, r.errOut)
					}
				}
				// The journal that loaded finishes the recovery, over the whole fallback folder
				// (the one that was refused is told to); then the other runs again and loads
				// nothing twice. Every record ends in the table exactly once.
				finisher, fp, other, op := a, l.a, b, l.b
				if ra.code != 0 && rb.code == 0 {
					finisher, fp, other, op = b, l.b, a, l.a
				}
				fp.prefix = ""
				if code, _, errOut := finisher.Within(2*time.Minute, reload(fp)...); code != 0 {
					t.Errorf("the journal that loaded, over the whole folder: exit %d\n%.2000s", code, errOut)
				}
				other.Within(2*time.Minute, reload(op)...)
				a.idsOnce("main.sales.orders", 0, n*rows)
			})
		}
	}
}

// TestIdentityStagedCopyReplaced is case 2's first half: a staged copy replaced between
// staging and the statement that reads it (here while the first batch's COPY INTO is held)
// stops that batch before its statement, saying which copy changed; nothing of it is
// loaded, cleanup deletes only the files of the batch that loaded, and a re-run copies the
// file again and loads it: every record ends in the table exactly once.
func TestIdentityStagedCopyReplaced(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := e2etest.Demo(t), e2etest.Release(t)
	const n, rows = 2, 4
	root := filepath.Join(t.TempDir(), "orders")
	writeIDFiles(t, root, 0, n, rows) // one file in each date folder: two batches
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	const stageTo = "/Volumes/main/sales/staging/replaced"
	reload := []string{"-o", "json", "reload", "main.sales.orders", "--rename", "customer_id=customer_key", "--stage-to", stageTo, "--yes"}
	code, out, errOut := s.Run(append(append([]string(nil), reload...), "--dry-run")...)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	paths := e2etest.StagedPaths(t, out, stageTo)
	second := paths["2026/01/02/part-00001.parquet"]
	if second == "" {
		t.Fatalf("no staged path for the second batch's file: %v", paths)
	}
	// Another file's bytes under the copy's name: what the warehouse would read instead.
	other := filepath.Join(t.TempDir(), "other")
	writeIDFiles(t, other, 5000, 2, rows)
	data, err := os.ReadFile(filepath.Join(other, filepath.FromSlash(fallback.Prefix), "2026/01/02/part-00001.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	s.Apply(map[string]any{"faults": []map[string]any{{"match": "^COPY INTO .*FILEFORMAT = PARQUET FILES", "times": 1, "action": "delay", "delay_ms": 2000}}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, out, errOut = s.Within(2*time.Minute, reload...)
	}()
	time.Sleep(1200 * time.Millisecond) // batch 1 is held; batch 2's copy is staged
	e2etest.PutVolumeFile(t, s.Env["DATABRICKS_HOST"], s.Env["DATABRICKS_TOKEN"], second, data)
	<-done
	if code != 1 || !strings.Contains(errOut, "changed since it was staged") || !strings.Contains(errOut, "nothing was sent") {
		t.Fatalf("reload with a copy replaced before its statement: exit %d\n%s%s", code, out, errOut)
	}
	if got := s.Count("SELECT count(*) FROM main.sales.orders WHERE id > 5000"); got != 0 {
		t.Fatalf("%d rows of the replacing bytes loaded", got)
	}
	s.idsOnce("main.sales.orders", 0, rows) // batch 1 only
	if code, _, errOut := s.Within(time.Minute, "cleanup", "main.sales.orders", "--yes"); code != 4 && code != 0 {
		t.Errorf("cleanup of the stopped run: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(fallback.Prefix), "2026/01/02/part-00001.parquet")); err != nil {
		t.Fatalf("the file whose copy was replaced is gone: %v", err)
	}
	// The re-run copies the file again over the replacing bytes and loads it.
	if code, out, errOut := s.Within(2*time.Minute, reload...); code != 0 {
		t.Fatalf("re-run: exit %d\n%s%s", code, out, errOut)
	}
	s.idsOnce("main.sales.orders", 0, n*rows)
	if code, _, errOut := s.Within(time.Minute, "cleanup", "main.sales.orders", "--yes"); code != 0 {
		t.Errorf("cleanup: exit %d\n%s", code, errOut)
	}
	s.idsOnce("main.sales.orders", 0, n*rows)
}

// TestIdentityUnknownBatchSettledByKey is case 7's second part: a run with one batch whose
// files were loaded by hand, through the staged paths, before the reload (which then says so
// and, told with --ignore-foreign-runs, sends it: 0 rows, unknown). verify fails that batch
// only; cleanup deletes the batches proved by their own answer and keeps it, saying what
// settles it; verify --key finds every key of its files and settles it; cleanup then deletes
// it too. Every record is in the table exactly once throughout.
func TestIdentityUnknownBatchSettledByKey(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := e2etest.Demo(t), e2etest.Release(t)
	const n, rows = 4, 3
	root := filepath.Join(t.TempDir(), "orders")
	writeIDFiles(t, root, 0, n, rows) // two batches: one per date folder
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	const stageTo = "/Volumes/main/sales/staging/byhand"
	reload := []string{"-o", "json", "reload", "main.sales.orders", "--rename", "customer_id=customer_key", "--key", "id", "--stage-to", stageTo, "--yes"}
	code, out, errOut := s.Run(append(append([]string(nil), reload...), "--dry-run")...)
	if code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", code, out, errOut)
	}
	var plan struct {
		Batches []struct {
			Folder string `json:"folder"`
			SQL    string `json:"sql"`
		} `json:"batches"`
	}
	e2etest.DecodeInto(t, out, &plan)
	if len(plan.Batches) != 2 {
		t.Fatalf("plan of %d batches", len(plan.Batches))
	}
	// The operator stages and loads the first folder by hand, exactly as the plan says.
	paths := e2etest.StagedPaths(t, out, stageTo)
	for k, p := range paths {
		if strings.HasPrefix(k, "2026/01/01/") {
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(fallback.Prefix), filepath.FromSlash(k)))
			if err != nil {
				t.Fatal(err)
			}
			e2etest.PutVolumeFile(t, s.Env["DATABRICKS_HOST"], s.Env["DATABRICKS_TOKEN"], p, data)
		}
	}
	byHand := plan.Batches[0].SQL
	if plan.Batches[0].Folder != "2026/01/01/" {
		byHand = plan.Batches[1].SQL
	}
	s.SQL(byHand)
	code, _, errOut = s.Within(2*time.Minute, reload...)
	if code != 5 || !strings.Contains(errOut, "a COPY INTO without a zbrecover tag") {
		t.Fatalf("reload after a load by hand: exit %d, want 5 (its files refused)\n%s", code, errOut)
	}
	code, _, errOut = s.Within(2*time.Minute, append(reload, "--ignore-foreign-runs", "the load by hand read the very staged paths")...)
	if code != 5 || !strings.Contains(errOut, "unknown") {
		t.Fatalf("reload: exit %d, want 5 (one batch unknown)\n%s", code, errOut)
	}
	s.idsOnce("main.sales.orders", 0, n*rows)
	if code, out, errOut := s.Within(time.Minute, "verify", "main.sales.orders"); code != 4 {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	fallbackDir := filepath.Join(root, filepath.FromSlash(fallback.Prefix))
	code, out, errOut = s.Within(time.Minute, "cleanup", "main.sales.orders", "--yes")
	if left := e2etest.FallbackLeft(t, root); left != n/2 || !strings.Contains(out+errOut, "verify --key") {
		t.Fatalf("cleanup after a verify that failed the unknown batch: exit %d, %d files left in %s, want the %d of the unknown batch\n%s%s", code, left, fallbackDir, n/2, out, errOut)
	}
	if code, out, errOut := s.Within(time.Minute, "verify", "main.sales.orders", "--key", "id"); code != 0 {
		t.Fatalf("verify --key: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := s.Within(time.Minute, "cleanup", "main.sales.orders", "--yes"); code != 0 || e2etest.FallbackLeft(t, root) != 0 {
		t.Fatalf("cleanup after verify --key: exit %d, %d files left\n%s", code, e2etest.FallbackLeft(t, root), errOut)
	}
	s.idsOnce("main.sales.orders", 0, n*rows)
}

// TestIdentityCleanupWhileMergePending is case 7's last part: a load by key whose MERGE failed
// holds its rows in the staging table only; cleanup exits 4 and says so, deleting nothing;
// once reload sends the MERGE, cleanup deletes the files.
func TestIdentityCleanupWhileMergePending(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := e2etest.Demo(t), e2etest.Release(t)
	const n, rows = 2, 3
	root := filepath.Join(t.TempDir(), "orders")
	writeIDFiles(t, root, 0, n, rows)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	reload := []string{"reload", "main.sales.orders", "--rename", "customer_id=customer_key", "--dedupe-key", "id",
		"--stage-to", "/Volumes/main/sales/staging/merge", "--yes"}
	s.Apply(map[string]any{"faults": []map[string]any{{"match": "^MERGE INTO", "times": -1, "action": "error",
		"error": map[string]any{"class": "DELTA_MERGE_UNRESOLVED_EXPRESSION", "sqlstate": "42601", "message": "refused"}}}})
	if code, _, errOut := s.Within(2*time.Minute, reload...); code == 0 {
		t.Fatalf("reload with the MERGE refused: exit 0\n%s", errOut)
	}
	code, out, errOut := s.Within(time.Minute, "cleanup", "main.sales.orders", "--yes")
	if code != 4 || !strings.Contains(out+errOut, "MERGE has not committed") || e2etest.FallbackLeft(t, root) != n {
		t.Fatalf("cleanup while the MERGE is pending: exit %d, %d files left\n%s%s", code, e2etest.FallbackLeft(t, root), out, errOut)
	}
	s.ClearFaults()
	if code, _, errOut := s.Within(2*time.Minute, reload...); code != 0 {
		t.Fatalf("reload sending the MERGE: exit %d\n%s", code, errOut)
	}
	s.idsOnce("main.sales.orders", 0, n*rows)
	if code, _, errOut := s.Within(time.Minute, "cleanup", "main.sales.orders", "--yes"); code != 0 || e2etest.FallbackLeft(t, root) != 0 {
		t.Fatalf("cleanup after the MERGE: exit %d, %d files left\n%s", code, e2etest.FallbackLeft(t, root), errOut)
	}
}
