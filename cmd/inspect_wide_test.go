package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/internal/memstat"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

// wideRoot writes under dir a table root of groups one-row fallback files, each its own
// schema group: the i-th file has the columns id (bigint NOT NULL) and c_i (string) and,
// with legacy, legacy_flag (boolean). The table (a Delta log) has id and c_0 … c_{groups-1},
// and no legacy_flag: every group lacks all the table's c_ columns but its own (nullable:
// ok), and with legacy every group blocks on the same column the table does not have.
func wideRoot(tb testing.TB, dir string, groups int, legacy bool) {
	tb.Helper()
	table := sd.NewSchema().Col("id", sd.LongType, sd.NotNull)
	for i := 0; i < groups; i++ {
		name := wideCol(i)
		table = table.Col(name, sd.StringType)
		fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: name, Type: arrow.BinaryTypes.String, Nullable: true}}
		row := fmt.Sprintf(`[{"id":%d,%q:"v"`, i, name)
		if legacy {
			fields = append(fields, arrow.Field{Name: "legacy_flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true})
			row += `,"legacy_flag":true`
		}
		data := pqgen.Must(pqgen.Bytes(arrow.NewSchema(fields, nil), row+"}]", pqgen.Options{}))
		if err := pqgen.WriteFile(filepath.Join(dir, filepath.FromSlash(fmt.Sprintf("%spart-%05d.parquet", fallbackDirName, i))), data); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := deltatest.Write(dir, deltatest.Table{Schema: table}); err != nil {
		tb.Fatal(err)
	}
}

func wideCol(i int) string { return fmt.Sprintf("c_%04d", i) }

// wideReport is the part of inspect's JSON report the wide-table tests read.
type wideReport struct {
	Groups []struct {
		SchemaID string `json:"schema_id"`
		Verdict  string `json:"verdict"`
		Columns  []struct {
			Name string `json:"name"`
		} `json:"columns"`
		Changes       *[]json.RawMessage `json:"changes"`
		SameChangesAs string             `json:"same_changes_as"`
		OKChanges     []struct {
			Kind     string `json:"kind"`
			Count    int    `json:"count"`
			Summary  string `json:"summary"`
			Examples []struct {
				Kind    string `json:"kind"`
				Path    string `json:"path"`
				Verdict string `json:"verdict"`
			} `json:"examples"`
		} `json:"ok_changes"`
		Suggestion *struct {
			DDL []string `json:"ddl"`
		} `json:"suggestion"`
	} `json:"groups"`
	ChangeTotals []wideTotal    `json:"change_totals"`
	Totals       inspect.Totals `json:"totals"`
}

type wideTotal struct {
	Kind, Verdict          string
	Changes, Groups, Files int
	Summary                string
}

// wideGroups is the number of groups (and one less than the table's columns) of the
// wide-table tests: the case that took 4.3 GB and wrote 1 GB of JSON when each group
// listed one change per table column it lacked.
const wideGroups = 2000

// checkWideOK checks the ok changes of every group of a wide-table report: each lacks the
// table's other wideGroups-1 columns, counted, with 3 examples that are not its own column.
func checkWideOK(t *testing.T, rep wideReport) {
	t.Helper()
	if len(rep.Groups) != wideGroups || rep.Totals.Groups != wideGroups || rep.Totals.Files != wideGroups {
		t.Fatalf("%d groups, totals %+v", len(rep.Groups), rep.Totals)
	}
	for _, g := range rep.Groups {
		if len(g.OKChanges) != 1 {
			t.Fatalf("group %s: ok changes %+v", g.SchemaID, g.OKChanges)
		}
		s := g.OKChanges[0]
		if s.Kind != "missing_in_file" || s.Count != wideGroups-1 || s.Summary != "1,999 table columns the files lack, filled with NULL" || len(s.Examples) != 3 {
			t.Fatalf("group %s: ok changes %+v", g.SchemaID, s)
		}
		own := g.Columns[1].Name
		for _, e := range s.Examples {
			if e.Kind != "missing_in_file" || e.Verdict != "ok" || !strings.HasPrefix(e.Path, "c_") || e.Path == own {
				t.Fatalf("group %s (column %s): example %+v", g.SchemaID, own, e)
			}
		}
	}
}

// wideJSON runs inspect -o json (and args) over root, checks the exit code and that the
// document is under 20 MiB, and decodes it.
func wideJSON(t *testing.T, root string, wantCode int, args ...string) wideReport {
	t.Helper()
	code, out, errOut := run(t, append([]string{"-o", "json", "inspect", root}, args...)...)
	if code != wantCode {
		t.Fatalf("exit %d, want %d: %s", code, wantCode, errOut)
	}
	if len(out) > 20<<20 {
		t.Fatalf("JSON report of %d bytes, want under 20 MiB", len(out))
	}
	var rep wideReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestInspectWideTableReportIsBounded: 2,000 one-file schema groups against a table of
// 2,001 columns, each group lacking 1,999 of them. The JSON report counts those changes per
// group and over all groups instead of listing 3,998,000 of them, and stays under 20 MB;
// the text report says the same in one line per group.
func TestInspectWideTableReportIsBounded(t *testing.T) {
	root := t.TempDir()
	wideRoot(t, root, wideGroups, false)

	rep := wideJSON(t, root, 0)
	checkWideOK(t, rep)
	for _, g := range rep.Groups {
		if g.Verdict != "ok" || g.Changes == nil || len(*g.Changes) != 0 || g.SameChangesAs != "" || g.Suggestion != nil {
			t.Fatalf("group %s: verdict %s, changes %v, same as %q, suggestion %v", g.SchemaID, g.Verdict, g.Changes, g.SameChangesAs, g.Suggestion)
		}
	}
	want := []wideTotal{{Kind: "missing_in_file", Verdict: "ok", Changes: wideGroups * (wideGroups - 1), Groups: wideGroups, Files: wideGroups,
		Summary: "3,998,000 table columns the files lack, filled with NULL"}}
	if fmt.Sprint(rep.ChangeTotals) != fmt.Sprint(want) {
		t.Errorf("change totals %+v, want %+v", rep.ChangeTotals, want)
	}

	code, out, errOut := run(t, "inspect", root)
	if code != 0 {
		t.Fatalf("text: exit %d: %s", code, errOut)
	}
	if len(out) > 2<<20 {
		t.Errorf("text report of %d bytes, want under 2 MiB", len(out))
	}
	if n := strings.Count(out, "\n    ok: 1,999 table columns the files lack, filled with NULL: c_"); n != wideGroups {
		t.Errorf("%d groups say what they lack, want %d", n, wideGroups)
	}
	if n := strings.Count(out, "COPY INTO fills it with NULL"); n != 0 {
		t.Errorf("%d changes listed one by one, want none", n)
	}
	if !strings.Contains(out, "\nChanges across the 2,000 schema groups:\n  ok: 3,998,000 table columns the files lack, filled with NULL, in 2,000 groups (2,000 files)\n") {
		t.Errorf("text lacks the changes across groups:\n%.3000s", out[strings.Index(out, "\nChanges across"):])
	}
}

// TestInspectWideTableSharedBlockingChange: the same 2,000 groups, each also holding a
// column the table does not have. The blocking change is listed by the first group and
// named by reference by the 1,999 others, counted over all groups, and shown once across
// groups in the text report with the table change that fixes it.
func TestInspectWideTableSharedBlockingChange(t *testing.T) {
	root := t.TempDir()
	wideRoot(t, root, wideGroups, true)

	rep := wideJSON(t, root, ExitSchema)
	checkWideOK(t, rep)
	first := rep.Groups[0]
	if first.Changes == nil || len(*first.Changes) != 1 || first.SameChangesAs != "" ||
		!strings.Contains(string((*first.Changes)[0]), `"kind": "extra_in_file",`) || !strings.Contains(string((*first.Changes)[0]), `"path": "legacy_flag",`) {
		t.Fatalf("first group: changes %s, same as %q", first.Changes, first.SameChangesAs)
	}
	for _, g := range rep.Groups {
		if g.Verdict != "blocks" || g.Suggestion == nil || fmt.Sprint(g.Suggestion.DDL) != "[ALTER TABLE <table> ADD COLUMNS (`legacy_flag` BOOLEAN)]" {
			t.Fatalf("group %s: verdict %s, suggestion %+v", g.SchemaID, g.Verdict, g.Suggestion)
		}
		if g.SchemaID != first.SchemaID && (g.Changes != nil || g.SameChangesAs != first.SchemaID) {
			t.Fatalf("group %s: changes %s, same as %q, want a reference to %s", g.SchemaID, g.Changes, g.SameChangesAs, first.SchemaID)
		}
	}
	want := []wideTotal{
		{Kind: "extra_in_file", Verdict: "blocks", Changes: wideGroups, Groups: wideGroups, Files: wideGroups, Summary: "2,000 file columns the table does not have"},
		{Kind: "missing_in_file", Verdict: "ok", Changes: wideGroups * (wideGroups - 1), Groups: wideGroups, Files: wideGroups, Summary: "3,998,000 table columns the files lack, filled with NULL"},
	}
	if fmt.Sprint(rep.ChangeTotals) != fmt.Sprint(want) {
		t.Errorf("change totals %+v, want %+v", rep.ChangeTotals, want)
	}

	code, out, _ := run(t, "inspect", root)
	if code != ExitSchema {
		t.Fatalf("text: exit %d", code)
	}
	across := "\nChanges across the 2,000 schema groups:\n" +
		"  legacy_flag: blocks: column legacy_flag (boolean) is in the file but not in the table: COPY INTO with mergeSchema = false rejects the file (DELTA_METADATA_MISMATCH)\n" +
		"    in 2,000 groups (2,000 files): " + rep.Groups[0].SchemaID + ", " + rep.Groups[1].SchemaID + ", " + rep.Groups[2].SchemaID + " and 1,997 more\n" +
		"  ok: 3,998,000 table columns the files lack, filled with NULL, in 2,000 groups (2,000 files)\n" +
		"  Table changes the groups' fixes suggest (each group's fix below says what else it needs):\n" +
		"    2,000 groups: ALTER TABLE <table> ADD COLUMNS (`legacy_flag` BOOLEAN);\n"
	if !strings.Contains(out, across) {
		i := max(strings.Index(out, "\nChanges across"), 0)
		t.Errorf("text lacks\n%s\ngot:\n%.1500s", across, out[i:])
	}
	if len(out) > 4<<20 {
		t.Errorf("text report of %d bytes, want under 4 MiB", len(out))
	}
}

// TestInspectAllChanges: --all-changes lists every change of every group, in text and
// JSON, ok ones included, each group its own list.
func TestInspectAllChanges(t *testing.T) {
	const groups = 30
	root := t.TempDir()
	wideRoot(t, root, groups, true)

	rep := wideJSON(t, root, ExitSchema, "--all-changes")
	for _, g := range rep.Groups {
		if g.Changes == nil || len(*g.Changes) != groups || g.SameChangesAs != "" || len(g.OKChanges) != 1 || g.OKChanges[0].Count != groups-1 {
			t.Fatalf("group %s: %v changes, same as %q, ok changes %+v", g.SchemaID, g.Changes, g.SameChangesAs, g.OKChanges)
		}
	}
	code, out, _ := run(t, "inspect", "--all-changes", root)
	if n := strings.Count(out, "is in the table but not in the file: COPY INTO fills it with NULL\n"); code != ExitSchema || n != groups*(groups-1) {
		t.Errorf("exit %d, %d ok changes listed, want %d", code, n, groups*(groups-1))
	}
	if strings.Contains(out, "--all-changes lists them") {
		t.Errorf("counted changes under --all-changes")
	}

	// Without the flag the other groups name the first's list.
	rep = wideJSON(t, root, ExitSchema)
	for _, g := range rep.Groups[1:] {
		if g.SameChangesAs != rep.Groups[0].SchemaID || g.Changes != nil {
			t.Fatalf("group %s: changes %v, same as %q", g.SchemaID, g.Changes, g.SameChangesAs)
		}
	}
}

// BenchmarkInspectWideTable runs `zbrecover inspect -o text|json|jsonl` (and json with
// --all-changes) in-process over the 2,000 × 2,001 wide-table root, under the soft memory
// limit the command line sets, and reports the peak of live heap objects (sampled every
// millisecond), the process's peak RSS (VmHWM, reset through /proc/self/clear_refs before
// each run) and the output's size. One mode per process gives its own peak RSS:
//
//	go test -tags 'duckdb demo' -run XXX -bench 'InspectWideTable/^json$' -benchtime 1x ./cmd
//
// ZBRECOVER_BENCH_DIR keeps the generated root between runs.
func BenchmarkInspectWideTable(b *testing.B) {
	root := os.Getenv("ZBRECOVER_BENCH_DIR")
	if root == "" {
		root = b.TempDir()
	}
	if _, err := os.Stat(filepath.Join(root, "_delta_log")); err != nil {
		wideRoot(b, root, wideGroups, false)
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(inspect.DefaultMemoryLimit))
	for _, mode := range []string{"text", "json", "jsonl", "json-all-changes"} {
		b.Run(mode, func(b *testing.B) {
			args := []string{"-o", strings.TrimSuffix(mode, "-all-changes"), "inspect", root}
			if strings.HasSuffix(mode, "-all-changes") {
				args = append(args, "--all-changes")
			}
			var heap uint64
			var rss, size int64
			for i := 0; i < b.N; i++ {
				out, err := os.Create(filepath.Join(b.TempDir(), "out"))
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				debug.FreeOSMemory()
				resetRSS := memstat.ResetPeakRSS() == nil
				io, _, _, errOut := iostreams.Test()
				io.Out = out
				h := memstat.StartHeapPeak()
				code := Run(context.Background(), NewFactory(io), args)
				heap = max(heap, h.Stop())
				if p, err := memstat.PeakRSS(); resetRSS && err == nil {
					rss = max(rss, p)
				}
				fi, _ := out.Stat()
				size = fi.Size()
				out.Close()
				if code != 0 {
					b.Fatalf("exit %d: %s", code, errOut)
				}
			}
			b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
			if rss > 0 {
				b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
			}
			b.ReportMetric(float64(size)/(1<<20), "output-MiB")
		})
	}
}
