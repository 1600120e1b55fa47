//go:build demo && cgo

package served

import (
	"context"
	"encoding/json"
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

// proofTable writes a managed table's root with n fallback files of rows rows each (every file
// the same row count, as Zerobus files of a fixed size have), ids 1…n·rows.
func proofTable(t *testing.T, n, rows int) (root string, total int) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "orders")
	if _, err := deltatest.Write(root, deltatest.Table{Schema: e2etest.TableSchema}); err != nil {
		t.Fatal(err)
	}
	id := 0
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
		p := filepath.Join(root, filepath.FromSlash(fallback.Prefix), fmt.Sprintf("2026/01/01/old-%05d.parquet", i))
		if err := pqgen.WriteFile(p, data); err != nil {
			t.Fatal(err)
		}
	}
	return root, id
}

// runFiles is `history --run RUN -o json`: each file's state and deletion.
func (s *served) runFiles(run string) map[string]string {
	s.T.Helper()
	code, out, errOut := s.Run("-o", "json", "history", "--run", run)
	if code != 0 {
		s.T.Fatalf("history --run %s: exit %d\n%s%s", run, code, out, errOut)
	}
	var doc struct {
		Files []struct {
			Key     string `json:"key"`
			State   string `json:"state"`
			Deleted string `json:"deleted"`
		} `json:"files"`
	}
	e2etest.DecodeInto(s.T, out, &doc)
	m := map[string]string{}
	for _, f := range doc.Files {
		m[f.Key] = strings.TrimSpace(f.State + " " + f.Deleted)
	}
	return m
}

// checkTable reads the table: every id 1…total exactly once (and nothing else).
func (s *served) checkTable(total int) {
	s.T.Helper()
	rows := s.Count("SELECT count(*) FROM main.sales.orders")
	distinct := s.Count("SELECT count(DISTINCT id) FROM main.sales.orders")
	inRange := s.Count(fmt.Sprintf("SELECT count(DISTINCT id) FROM main.sales.orders WHERE id BETWEEN 1 AND %d", total))
	if rows != int64(total) || distinct != int64(total) || inRange != int64(total) {
		s.T.Errorf("table: %d rows, %d distinct ids, %d of ids 1…%d; want each once", rows, distinct, inRange, total)
	}
}

// TestProofLostStatementAmongEqualNeighbours is the case of two neighbouring batches with the
// same row count (one file each), on the managed table of demo serve, staged: the newest
// version read before batch 4 fails once, and every send of batch 4's COPY INTO is cut before
// it reaches the warehouse. Batch 3's commit never settles batch 4: it stays open, verify
// fails and cleanup deletes nothing, however often reload runs while the sends are cut; once
// they get through, batch 4 is loaded by its own statement and cleanup deletes every file,
// each of whose rows is then in the table exactly once. With commit tags and without.
func TestProofLostStatementAmongEqualNeighbours(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)
	for _, tagged := range []bool{true, false} {
		t.Run(map[bool]string{true: "tagged", false: "untagged"}[tagged], func(t *testing.T) {
			const nFiles, rows = 6, 4
			root, total := proofTable(t, nFiles, rows)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root)
			s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
			if !tagged {
				s.Control("PATCH", "unknowns", map[string]any{"refuse_user_metadata": true})
			}
			s.Apply(map[string]any{"faults": []map[string]any{
				{"match": `FILEFORMAT = PARQUET FILES = \('old-00003~[0-9a-f]+\.parquet'\)`, "times": -1, "action": "drop_request"},
				{"match": `^DESCRIBE HISTORY .* LIMIT 1$`, "skip": 3, "times": 1, "action": "error",
					"error": map[string]any{"class": "INTERNAL_ERROR", "sqlstate": "XX000", "message": "history read failed"}},
			}})
			reload := []string{"-o", "json", "reload", "main.sales.orders", "--rename", "customer_id=customer_key",
				"--stage-to", "/Volumes/main/sales/staging/proof", "--batch-files", "1", "--yes"}
			batch4 := fallback.Prefix + "2026/01/01/old-00003.parquet"
			var run string
			for i := 0; i < 3; i++ {
				code, out, errOut := s.Run(reload...)
				if code == 0 {
					t.Fatalf("reload %d succeeded while batch 4's sends are cut\n%.3000s\n%s", i+1, out, errOut)
				}
				var rep struct {
					Run string `json:"run"`
				}
				_ = json.Unmarshal([]byte(out), &rep)
				if rep.Run != "" {
					run = rep.Run
				}
				if run == "" {
					t.Fatalf("reload %d wrote no run: exit %d\n%s\n%s", i+1, code, out, errOut)
				}
				if st := s.runFiles(run)[batch4]; strings.HasPrefix(st, "verified") {
					t.Fatalf("reload %d: batch 4, never sent, is %q", i+1, st)
				}
				if code, out, errOut := s.Run("verify", "main.sales.orders"); code != 4 {
					t.Errorf("verify with batch 4 open: exit %d\n%s%s", code, out, errOut)
				}
				if code, out, errOut := s.Run("cleanup", "main.sales.orders", "--yes"); code == 0 || e2etest.FallbackLeft(t, root) != nFiles {
					t.Errorf("cleanup with batch 4 open: exit %d, %d files left\n%s%s", code, e2etest.FallbackLeft(t, root), out, errOut)
				}
			}
			if n := s.Count("SELECT count(*) FROM main.sales.orders WHERE id BETWEEN 13 AND 16"); n != 0 {
				t.Fatalf("batch 4's rows are in the table %d times though it was never sent", n)
			}
			s.ClearFaults()
			code, out, errOut := s.Run(reload...)
			if code != 0 {
				t.Fatalf("reload once the sends get through: exit %d\n%.3000s\n%s", code, out, errOut)
			}
			if code, out, errOut := s.Run("verify", "main.sales.orders"); code != 0 {
				t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
			}
			if code, out, errOut := s.Run("cleanup", "main.sales.orders", "--yes"); code != 0 {
				t.Fatalf("cleanup: exit %d\n%s%s", code, out, errOut)
			}
			if n := e2etest.FallbackLeft(t, root); n != 0 {
				t.Errorf("%d fallback files left", n)
			}
			s.checkTable(total)
			w.Stop()
		})
	}
}

// TestProofNoBaseNoLoad: when the table's newest version cannot be read at all (every
// DESCRIBE HISTORY fails), reload sends no load, journals no intent, and says why; once the
// history reads again, it loads.
func TestProofNoBaseNoLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)
	root, total := proofTable(t, 3, 2)
	logFile := filepath.Join(t.TempDir(), "statements.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root, "--log", logFile)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	s.Apply(map[string]any{"faults": []map[string]any{{"match": `^DESCRIBE HISTORY`, "times": -1, "action": "error",
		"error": map[string]any{"class": "INTERNAL_ERROR", "sqlstate": "XX000", "message": "history read failed"}}}})
	reload := []string{"reload", "main.sales.orders", "--rename", "customer_id=customer_key",
		"--stage-to", "/Volumes/main/sales/staging/nobase", "--batch-files", "1", "--yes"}
	from := e2etest.StatementLogLen(t, logFile)
	code, out, errOut := s.Run(reload...)
	if code == 0 || !strings.Contains(errOut, "newest version cannot be read") || !strings.Contains(errOut, "nothing was sent") {
		t.Fatalf("reload without history: exit %d\n%s%s", code, out, errOut)
	}
	if copies, _ := e2etest.Loads(e2etest.ReadStatementLog(t, logFile, from)); len(copies) != 0 {
		t.Errorf("%d COPY INTO sent without a base version", len(copies))
	}
	s.ClearFaults()
	if code, out, errOut := s.Run(reload...); code != 0 {
		t.Fatalf("reload: exit %d\n%s%s", code, out, errOut)
	}
	s.checkTable(total)
	w.Stop()
}

// TestProofTwoJournalsTwoPaths: two operators (two journals) staging the same table to two
// folders of the volume: the second is refused before it loads anything, naming the first
// run; no row is loaded twice.
func TestProofTwoJournalsTwoPaths(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)
	root, total := proofTable(t, 4, 3)
	logFile := filepath.Join(t.TempDir(), "statements.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root, "--log", logFile)
	alice := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	bob := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	args := func(dir string) []string {
		return []string{"reload", "main.sales.orders", "--rename", "customer_id=customer_key", "--stage-to", "/Volumes/main/sales/staging/" + dir, "--yes"}
	}
	if code, out, errOut := alice.Run(args("alice")...); code != 0 {
		t.Fatalf("first journal: exit %d\n%s%s", code, out, errOut)
	}
	from := e2etest.StatementLogLen(t, logFile)
	code, out, errOut := bob.Run(args("bob")...)
	// The table's history names alice's run: bob's plan leaves every file behind.
	if code != 5 || !strings.Contains(errOut, "of another journal loaded this table") || !strings.Contains(errOut, "--ignore-foreign-runs") {
		t.Fatalf("second journal through another path: exit %d\n%s%s", code, out, errOut)
	}
	if copies, _ := e2etest.Loads(e2etest.ReadStatementLog(t, logFile, from)); len(copies) != 0 {
		t.Errorf("the second journal sent %d COPY INTO", len(copies))
	}
	alice.checkTable(total)
	w.Stop()
}

// TestProofHostileWarehouse drives reloads of the managed table of demo serve, staged, through
// the ways a Databricks warehouse can make a statement's outcome unclear, with commit tags and
// without: whatever happens, the re-runs end with every row in the table exactly once, and a
// batch the tool cannot prove is never deleted.
func TestProofHostileWarehouse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)
	copy2 := `FILEFORMAT = PARQUET FILES = \('old-00001~[0-9a-f]+\.parquet'\)`
	for _, c := range []struct {
		name     string
		unknowns map[string]any
		control  map[string]any
		// proved says whether the batch whose answer was lost ends proved (its files deleted
		// by cleanup); otherwise it is kept.
		proved bool
	}{
		{"lost answer, look-alike commits by the same identity, tagged", nil, map[string]any{
			"faults":   []map[string]any{{"match": copy2, "times": 1, "action": "drop_response"}},
			"triggers": []map[string]any{{"match": `^COPY INTO`, "times": -1, "lookalike": map[string]any{"operation": "COPY INTO"}}}}, true},
		{"lost answer, look-alike commits by the same identity, untagged", map[string]any{"refuse_user_metadata": true}, map[string]any{
			"faults":   []map[string]any{{"match": copy2, "times": 1, "action": "drop_response"}},
			"triggers": []map[string]any{{"match": `^COPY INTO`, "times": -1, "lookalike": map[string]any{"operation": "COPY INTO"}}}}, false},
		{"commit then DELTA_POST_COMMIT_HOOK_FAILED, tagged", nil, map[string]any{
			"faults": []map[string]any{{"match": copy2, "times": 1, "action": "commit_then_error"}}}, true},
		{"commit then DELTA_POST_COMMIT_HOOK_FAILED, untagged", map[string]any{"refuse_user_metadata": true}, map[string]any{
			"faults": []map[string]any{{"match": copy2, "times": 1, "action": "commit_then_error"}}}, false},
		{"committed, then a broken session (re-executed by the driver), tagged", nil, map[string]any{
			"faults": []map[string]any{{"match": copy2, "times": 1, "action": "commit_then_bad_conn"}}}, true},
		{"committed, then a broken session (re-executed by the driver), untagged", map[string]any{"refuse_user_metadata": true}, map[string]any{
			"faults": []map[string]any{{"match": copy2, "times": 1, "action": "commit_then_bad_conn"}}}, false},
		{"lost answer, a service principal's history name, untagged", map[string]any{"refuse_user_metadata": true, "history_user_name": "7f3a0c2e-app-id"}, map[string]any{
			"faults": []map[string]any{{"match": copy2, "times": 1, "action": "drop_response"}}}, false},
		{"lost answer, a service principal's history name, tagged", map[string]any{"history_user_name": "7f3a0c2e-app-id"}, map[string]any{
			"faults": []map[string]any{{"match": copy2, "times": 1, "action": "drop_response"}}}, true},
		{"answered late through lost polls, tagged", nil, map[string]any{
			"faults": []map[string]any{{"match": copy2, "times": 1, "action": "delay", "delay_ms": 300},
				{"method": "GetOperationStatus", "times": 3, "action": "drop_response"}}}, true},
		{"thousands of Zerobus commits before every statement, lost answer, tagged", nil, map[string]any{
			"faults":   []map[string]any{{"match": copy2, "times": 1, "action": "drop_response"}},
			"triggers": []map[string]any{{"match": `^(COPY INTO|DESCRIBE HISTORY)`, "table": "main.sales.orders", "zerobus_versions": 300, "times": -1}}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			const nFiles, rows = 3, 4
			root, total := proofTable(t, nFiles, rows)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root)
			s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
			if c.unknowns != nil {
				s.Control("PATCH", "unknowns", c.unknowns)
			}
			s.Apply(c.control)
			reload := []string{"reload", "main.sales.orders", "--rename", "customer_id=customer_key",
				"--stage-to", "/Volumes/main/sales/staging/hostile", "--batch-files", "1", "--yes"}
			var last int
			for i := 0; i < 4; i++ {
				code, _, _ := s.Run(reload...)
				last = code
				if code == 0 || code == 5 {
					break
				}
			}
			// Our batches' rows: each once (look-alike and Zerobus writers add other rows).
			ours := fmt.Sprintf("SELECT count(*) FROM main.sales.orders WHERE id BETWEEN 1 AND %d AND customer_key LIKE 'c%%'", total)
			if n := s.Count(ours); n != int64(total) {
				t.Errorf("after the re-runs (last exit %d) the table holds %d rows of ids 1…%d", last, n, total)
			}
			_, _, _ = s.Run("verify", "main.sales.orders")
			code, out, errOut := s.Run("cleanup", "main.sales.orders", "--yes")
			left := e2etest.FallbackLeft(t, root)
			batch2 := filepath.Join(root, filepath.FromSlash(fallback.Prefix), "2026/01/01/old-00001.parquet")
			_, statErr := os.Stat(batch2)
			switch {
			case c.proved && (left != 0 || code != 0):
				t.Errorf("cleanup: exit %d, %d files left, want every file deleted\n%s%s", code, left, out, errOut)
			case !c.proved && statErr != nil:
				t.Errorf("cleanup deleted batch 2's file, which only weaker evidence settles (exit %d)\n%s%s", code, out, errOut)
			}
			if n := s.Count(ours); n != int64(total) {
				t.Errorf("after cleanup the table holds %d rows of ids 1…%d", n, total)
			}
			w.Stop()
		})
	}
}

// TestProofLoadByKeyMerge: a load by key whose MERGE answer is lost is sent again, never taken
// from the table's history (a look-alike MERGE by the same identity commits after each); the
// table ends with each key once. With the warehouse's schema auto-merge on, the MERGE adds no
// column of its source (the batch number, the rank) to the table.
func TestProofLoadByKeyMerge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)
	root, total := proofTable(t, 4, 3)
	logFile := filepath.Join(t.TempDir(), "statements.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root, "--log", logFile)
	s := &served{e2etest.NewServed(ctx, t, release, w.Env)}
	s.Control("PATCH", "unknowns", map[string]any{"schema_auto_merge": true})
	s.Apply(map[string]any{
		"faults":   []map[string]any{{"match": `^MERGE INTO`, "times": 1, "action": "drop_response"}},
		"triggers": []map[string]any{{"match": `^MERGE INTO`, "table": "main.sales.orders", "times": -1, "lookalike": map[string]any{"operation": "MERGE", "rows": 1}}},
	})
	reload := []string{"reload", "main.sales.orders", "--rename", "customer_id=customer_key",
		"--stage-to", "/Volumes/main/sales/staging/merge", "--dedupe-key", "id", "--yes"}
	if code, _, _ := s.Run(reload...); code == 0 {
		t.Fatal("a lost MERGE answer was not reported")
	}
	code, out, errOut := s.Run(reload...)
	if code != 0 {
		t.Fatalf("re-run: exit %d\n%s%s", code, out, errOut)
	}
	merges := 0
	for _, st := range e2etest.ReadStatementLog(t, logFile, 0) {
		if strings.HasPrefix(st.Statement, "MERGE INTO") {
			merges++
		}
	}
	if merges != 2 {
		t.Errorf("%d MERGE statements, want 2 (the lost one sent again, not settled from the history)", merges)
	}
	ours := fmt.Sprintf("SELECT count(*) FROM main.sales.orders WHERE id BETWEEN 1 AND %d AND customer_key LIKE 'c%%'", total)
	if n := s.Count(ours); n != int64(total) {
		t.Errorf("the table holds %d of the %d records", n, total)
	}
	res := s.SQL("SELECT * FROM main.sales.orders LIMIT 1")
	for _, c := range res.Columns {
		if strings.HasPrefix(c, "__zbrecover") {
			t.Errorf("the MERGE added column %s to the table", c)
		}
	}
	if len(res.Columns) != 3 {
		t.Errorf("columns %v, want the table's 3", res.Columns)
	}
	w.Stop()
}
