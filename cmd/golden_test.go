package cmd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/cleanup"
	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/history"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/reload"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/undo"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares got with testdata/golden/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd -run Golden -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// TestPlanTextGolden pins reload's plan as --dry-run prints it: files earlier runs loaded,
// an unreadable file, a file no statement may name, a group that blocks the load with its
// fix, and the statements of the groups that load.
func TestPlanTextGolden(t *testing.T) {
	cur := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.LongType)
	narrow := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("qty", sd.IntegerType)
	extra := cur.Col("gift", sd.BooleanType)
	rep := &inspect.Report{Root: "s3://lake/orders", Prefix: inspect.FallbackPrefix,
		Groups: []inspect.Group{{SchemaID: "aaa111", Schema: cur}, {SchemaID: "bbb222", Schema: narrow}, {SchemaID: "ccc333", Schema: extra}}}
	for _, f := range [][2]string{{"2024/05/01/a.parquet", "aaa111"}, {"2024/05/01/b.parquet", "aaa111"}, {"2024/05/02/c.parquet", "aaa111"},
		{"2024/05/01/n.parquet", "bbb222"}, {"2024/05/01/part-[1].parquet", "aaa111"}, {"2024/05/03/x.parquet", "ccc333"}, {"old.parquet", "aaa111"}} {
		rep.Files = append(rep.Files, inspect.File{Key: f[0], SchemaID: f[1], Rows: 2, Size: 100})
	}
	rep.Files = append(rep.Files, inspect.File{Key: "2024/05/02/broken.parquet", Error: "not a Parquet file: no PAR1 magic at the end"})
	loc, err := storage.Parse("s3://lake/orders")
	if err != nil {
		t.Fatal(err)
	}
	name := databricks.TableName{Catalog: "main", Schema: "sales", Table: "orders"}
	p, err := reload.NewPlan(rep, &sd.Table{Source: sd.SourceUC, Schema: cur}, name, loc.Join(inspect.FallbackPrefix),
		reload.PlanOptions{Skip: map[string]string{"old.parquet": "loaded by run r-1"}})
	if !errors.Is(err, reload.ErrBlocked) {
		t.Fatalf("plan: %v", err)
	}
	io, _, out, errOut := iostreams.Test()
	f := NewFactory(io)
	if err := printPlan(f, p, p.Work(p.Table.String()), skipped{earlier: len(p.Skipped)}, []string{"2024/05/01/z.parquet (its size or ETag changed)"}, true); err != nil {
		t.Fatal(err)
	}
	if errOut.Len() != 0 {
		t.Errorf("the plan with its statements went to stderr: %q", errOut)
	}
	golden(t, "plan.txt", out.Bytes())
}

// TestSummaryGolden pins the --summary Markdown of a reload that stopped on a batch whose
// outcome is unknown: the table of facts, the error (secrets redacted), the notes and what to
// run next.
func TestSummaryGolden(t *testing.T) {
	started := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	s := &runSummary{Command: "reload", CommandLine: "zbrecover reload main.sales.orders --yes", Version: "v1.2.3", OSUser: "ann",
		Identity: "ann@example.com", Machine: "ops-1", Workspace: "https://adb-1.azuredatabricks.net", Started: started,
		Finished: started.Add(4 * time.Minute), Table: "main.sales.orders", Root: "abfss://lake@acct.dfs.core.windows.net/orders",
		Run: "r-20261201-0930", Journal: "file:///home/ann/.local/state/zbrecover/journal", Files: 1200, Bytes: 734003200,
		Rows: 5_000_000, Inserted: 4_100_000, Batches: map[string]int{"verified": 4, "unknown": 1},
		Staged: "/Volumes/main/sales/staging/run", RunStatus: "stopped", Notes: []string{"batch 5: the warehouse connection was lost after the statement was sent"}}
	io, _, _, _ := iostreams.Test()
	f := NewFactory(io)
	err := errors.New("batch 5: outcome unknown (sig=abc&sv=2024-01-01)")
	var b strings.Builder
	code := exitStatus(context.Background(), f, nil, err)
	s.markdown(&b, code, err, []string{"`zbrecover reload main.sales.orders` settles batch 5 from the table's history"})
	golden(t, "summary.md", []byte(b.String()))
}

// TestEveryDocumentEncodes: each type cmd writes with -o json is a document jsonout encodes
// (an embedded type with methods, as cleanup.Plan in cleanup's documents, included).
func TestEveryDocumentEncodes(t *testing.T) {
	for _, doc := range []any{
		cleanupPlanDoc{Plan: &cleanup.Plan{}, Keys: []string{}},
		&cleanup.Report{Plan: &cleanup.Plan{}},
		cleanupNothingDoc{},
		planJSON(&reload.Plan{}, reload.Work{}),
		&reload.Report{},
		&reload.VerifyReport{},
		&history.Runs{},
		&history.Run{},
		undoPlanDoc{Plan: &undo.Plan{}},
		&undo.Report{},
		undoNothingDoc{},
	} {
		var b bytes.Buffer
		if err := jsonout.Encode(&b, doc); err != nil {
			t.Errorf("%T: %v", doc, err)
		} else if !strings.HasPrefix(b.String(), "{\n  \"schema_version\": ") {
			t.Errorf("%T: %s", doc, b.String())
		}
	}
}

// TestContinuedRunPromptGolden: the question before a reload that continues a run names all
// the work, the continued run's batches included, and the plan ends with the totals.
func TestContinuedRunPromptGolden(t *testing.T) {
	w := reload.Work{Table: "main.sales.orders", Continues: "20261201T101500Z-1a2b3c4d", Settle: 1, Validate: true,
		StageTo: "/Volumes/main/sales/staging/orders", Stage: 5999,
		Batches: []reload.WorkBatch{{N: 2, Continued: true, Files: make([]string, 999), Rows: 23898},
			{N: 3, Continued: true, Files: make([]string, 1000), Rows: 24002}, {N: 11, Files: make([]string, 4000), Rows: 95487}}}
	golden(t, "continued_run_prompt.txt", []byte(workQuestion(w)+"\n"+workTotals(w)+"\n"))
}
