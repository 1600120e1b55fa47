package cmd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/cleanup"
	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/doctor"
	"github.com/zbrecover/zbrecover/history"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/internal/jsonout"
	"github.com/zbrecover/zbrecover/journal"
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
	rep := &inspect.Report{Root: "s3://lake/orders", Prefix: fallback.Prefix,
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
	p, err := reload.NewPlan(rep, &sd.Table{Source: sd.SourceUC, Schema: cur}, name, loc.Join(fallback.Prefix),
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
	docs := []any{
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
		&doctor.Report{},
		LsReport{Objects: []LsObject{}},
		PreviewReport{},
		&schemaDoc{},
		readBuildInfo(),
	}
	listed := map[string]bool{}
	for _, doc := range docs {
		var b bytes.Buffer
		if err := jsonout.Encode(&b, doc); err != nil {
			t.Errorf("%T: %v", doc, err)
		} else if !strings.HasPrefix(b.String(), "{\n  \"schema_version\": ") {
			t.Errorf("%T: %s", doc, b.String())
		}
		rt := reflect.TypeOf(doc)
		for rt.Kind() == reflect.Pointer {
			rt = rt.Elem()
		}
		listed[rt.PkgPath()+"."+rt.Name()] = true
	}
	// Every document a command prints goes through printJSON: each of their types must be
	// in the list above, so that a new document cannot escape this test.
	printed, errs := printedDocuments(".", "github.com/zbrecover/zbrecover/cmd")
	for _, e := range errs {
		t.Error(e)
	}
	if len(printed) < 10 {
		t.Fatalf("found only %d document types passed to printJSON: %v", len(printed), printed)
	}
	for _, typ := range printed {
		if !listed[typ] {
			t.Errorf("printJSON prints %s, which this test does not encode: add it to the list", typ)
		}
	}
}

// printedDocuments type-checks the package in dir (against the export data of cmd's
// dependencies, as go list gives it) and returns the type of every document passed to
// printJSON, package-qualified and without pointers; a document of no named type is an error.
func printedDocuments(dir, pkgPath string) (docs, errs []string) {
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", ".").Output()
	if err != nil {
		return nil, []string{fmt.Sprintf("go list -export: %v", err)}
	}
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(line, "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			return nil, []string{err.Error()}
		}
		files = append(files, f)
	}
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	conf := types.Config{Importer: imp.(types.ImporterFrom), Error: func(error) {}}
	_, _ = conf.Check(pkgPath, fset, files, info) // errors of build-tagged files aside
	seen := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "printJSON" {
				return true
			}
			typ := info.Types[call.Args[1]].Type
			for {
				p, ok := typ.(*types.Pointer)
				if !ok {
					break
				}
				typ = p.Elem()
			}
			named, ok := typ.(*types.Named)
			if !ok {
				errs = append(errs, fmt.Sprintf("%s: printJSON of %v, not a named type", fset.Position(call.Pos()), typ))
				return true
			}
			name := named.Obj().Pkg().Path() + "." + named.Obj().Name()
			if !seen[name] {
				seen[name] = true
				docs = append(docs, name)
			}
			return true
		})
	}
	return docs, errs
}

// TestDocumentListCatches is a test of the test: a document type passed to printJSON, through
// a pointer or not, is found, and a document of no named type is reported.
func TestDocumentListCatches(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "io"

type Hidden struct{ A int }

type Other struct{}

func printJSON(w io.Writer, v any) error { return nil }

func run(w io.Writer) {
	_ = printJSON(w, &Hidden{})
	_ = printJSON(w, Other{})
	_ = printJSON(w, map[string]int{})
}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	docs, errs := printedDocuments(dir, "example.com/p")
	if !slices.Equal(docs, []string{"example.com/p.Hidden", "example.com/p.Other"}) {
		t.Errorf("documents %q", docs)
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "printJSON of map[string]int, not a named type") {
		t.Errorf("errors %q", errs)
	}
	if err := jsonout.Encode(io.Discard, map[string]int{}); err == nil {
		t.Error("a map encoded as a document")
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

// TestRecoverySummaryGolden: the whole recovery of a run as the journal tells it, replayed
// from the records reload, verify --key and cleanup write, rendered for an incident ticket.
func TestRecoverySummaryGolden(t *testing.T) {
	golden(t, "recovery_summary.md", []byte(recoveryMarkdownOf(t)))
}

// recoveryMarkdownOf writes a run's records as reload (two batches, one settled from its
// tagged commit, a file left behind), verify --key (keys twice in the table) and cleanup
// (deleted files, one kept, the staged copies removed) write them, replays the run and
// renders its whole recovery (times fixed for the golden).
func recoveryMarkdownOf(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	store, err := journal.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	w, err := journal.Start(ctx, store, journal.Target{TableID: "tid-1", Table: "main.sales.orders", Root: "s3://lake/orders"}, "20261201T101500Z-1a2b3c4d",
		journal.Header{User: "ana", Identity: "ana@example.com", Host: "ops-1", Command: "zbrecover reload main.sales.orders --stage-to /Volumes/main/sales/staging/r --key order_id --yes"})
	if err != nil {
		t.Fatal(err)
	}
	file := func(key string, rows int64) journal.File {
		return journal.File{Key: "_zerobus/table_rejected_parquets/" + key, Size: 1000 + rows, ETag: `"e-` + key + `"`, Rows: rows}
	}
	b1 := []journal.File{file("2026/01/01/a.parquet", 3), file("2026/01/01/b.parquet", 4)}
	b2 := []journal.File{file("2026/01/02/c.parquet", 5)}
	v8, v9, v10, zero, seven, five := int64(8), int64(9), int64(10), int64(0), int64(7), int64(5)
	ok := true
	staged := func(fs []journal.File) []journal.Staged {
		var out []journal.Staged
		for _, f := range fs {
			out = append(out, journal.Staged{Source: f.Key, Key: "tid-1/" + strings.TrimPrefix(f.Key, "_zerobus/table_rejected_parquets/"), Size: f.Size})
		}
		return out
	}
	recs := []journal.Record{
		{Kind: journal.KindPlan, Plan: &journal.Plan{Source: "/Volumes/main/sales/staging/r/", Batches: []journal.PlanBatch{
			{Batch: 1, Group: "aaa111", Folder: "_zerobus/table_rejected_parquets/2026/01/01/", Files: b1, ExpectedRows: 7, SQL: "COPY INTO 1",
				Select: "`order_id`, `customer_id` AS `customer_key`"},
			{Batch: 2, Group: "aaa111", Folder: "_zerobus/table_rejected_parquets/2026/01/02/", Files: b2, ExpectedRows: 5, SQL: "COPY INTO 2",
				Select: "`order_id`, `customer_id` AS `customer_key`"}},
			Left: []journal.LeftFile{{Key: "_zerobus/table_rejected_parquets/2026/01/02/broken.parquet", Reason: "unreadable: not a Parquet file: no PAR1 magic at the end"}}}},
		{Kind: journal.KindStaging, Staging: &journal.Staging{Location: "/Volumes/main/sales/staging/r", Files: staged(append(append([]journal.File{}, b1...), b2...))}},
		{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: 1, Files: b1, ExpectedRows: 7, SQL: "COPY INTO 1", BaseVersion: &seven, Tag: "zbrecover:r:1:1:x"}},
		{Kind: journal.KindResult, Result: &journal.Result{Batch: 1, Inserted: &seven}},
		{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: 1, Status: journal.BatchVerified, Reason: "inserted 7 rows", Version: &v8, Evidence: journal.EvidenceAnswer}},
		{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: 2, Files: b2, ExpectedRows: 5, SQL: "COPY INTO 2", BaseVersion: &v8, Tag: "zbrecover:r:2:1:y"}},
		{Kind: journal.KindResult, Result: &journal.Result{Batch: 2, Err: "connection reset"}},
		{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: 2, Files: b2, ExpectedRows: 5, SQL: "COPY INTO 2", BaseVersion: &v9, Tag: "zbrecover:r:2:2:y"}},
		{Kind: journal.KindResult, Result: &journal.Result{Batch: 2, Inserted: &zero}},
		{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: 2, Status: journal.BatchVerified, Reason: "0 rows now; an earlier send committed", Version: &v9, Evidence: journal.EvidenceTag}},
		{Kind: journal.KindEnd, End: &journal.End{State: journal.RunVerified}},
		{Kind: journal.KindRun, Header: &journal.Header{User: "ana", Identity: "ana@example.com", Host: "ops-1", Command: "zbrecover verify main.sales.orders --key order_id"}},
		{Kind: journal.KindVerification, Verification: &journal.Verification{By: "verify", OK: &ok, TableVersion: &v10,
			Keys: &journal.KeyResult{Key: []string{"order_id"}, Files: 3, Rows: 12, Keys: 12, OK: true, Batches: []int{1, 2}, Duplicated: 2, MaxRows: 2}}},
		{Kind: journal.KindEnd, End: &journal.End{State: journal.RunVerified}},
		{Kind: journal.KindRun, Header: &journal.Header{User: "ana", Host: "ops-1", Command: "zbrecover cleanup main.sales.orders --yes"}},
		{Kind: journal.KindDeleteIntent, Deletion: &journal.Deletion{Files: append(append([]journal.File{}, b1...), b2...)}},
		{Kind: journal.KindDeleted, Deletion: &journal.Deletion{Results: []journal.DeletedResult{{Key: b1[0].Key, Status: journal.Deleted},
			{Key: b1[1].Key, Status: journal.Deleted}, {Key: b2[0].Key, Status: journal.DeleteSkip, Reason: "changed since it was verified: kept"}}}},
		{Kind: journal.KindStaging, Staging: &journal.Staging{Location: "/Volumes/main/sales/staging/r", Files: staged(b1), Removing: true}},
		{Kind: journal.KindStaging, Staging: &journal.Staging{Location: "/Volumes/main/sales/staging/r", Files: staged(b1), Removed: true}},
		{Kind: journal.KindEnd, End: &journal.End{State: journal.RunPartiallyCleaned}},
	}
	for _, r := range recs {
		if err := w.Append(ctx, r); err != nil {
			t.Fatalf("%s: %v", r.Kind, err)
		}
	}
	st, err := journal.ReadState(ctx, store, "tid-1", "20261201T101500Z-1a2b3c4d")
	if err != nil {
		t.Fatal(err)
	}
	rec := history.RecoveryOf(st)
	at := time.Date(2026, 12, 1, 10, 15, 0, 0, time.UTC)
	rec.Started, rec.Ended = at, at.Add(25*time.Minute)
	for i := range rec.Commands {
		rec.Commands[i].Time = at.Add(time.Duration(i*10) * time.Minute)
	}
	_ = five
	var b strings.Builder
	recoveryMarkdown(&b, rec)
	return b.String()
}

// TestCleanupPlanAndReportGolden pins what an operator reads before and after files are
// deleted: the plan (short without -v: the files kept grouped by reason, the totals last)
// and the report.
func TestCleanupPlanAndReportGolden(t *testing.T) {
	plan := &cleanup.Plan{Run: "20261201T101500Z-1a2b3c4d", TableID: "tid-1", Table: "main.sales.orders", Root: "s3://lake/orders",
		Status: journal.RunVerified, Files: 6002, Bytes: 20971520, Removed: 2, Staged: 6000, Changed: 1}
	for i := 0; i < 6002; i++ {
		c := cleanup.Candidate{File: journal.File{Key: fmt.Sprintf("_zerobus/table_rejected_parquets/2026/01/%02d/part-%05d.parquet", 1+i%3, i), Size: 3495}, Batch: 1 + i/1000}
		if i == 17 {
			c.Changed = "changed since it was verified (ETag \"e2\", verified \"e1\"): the delete will keep it"
		}
		plan.Delete = append(plan.Delete, c)
	}
	for i := 0; i < 12; i++ {
		plan.Kept = append(plan.Kept, cleanup.Left{Key: fmt.Sprintf("_zerobus/table_rejected_parquets/2026/01/04/late-%02d.parquet", i), Batch: 7,
			Reason: "batch 7 is unknown: the table's history does not prove which commit loaded it; zbrecover verify --key COL settles it"})
	}
	plan.Untracked = []cleanup.Left{{Key: "_zerobus/table_rejected_parquets/2026/01/05/new.parquet", Reason: "not in this run's journal: never touched"}}
	var b bytes.Buffer
	for _, verbose := range []int{0, 1} {
		io, _, out, _ := iostreams.Test()
		f := NewFactory(io)
		f.Global.Verbose = verbose
		if err := printCleanupPlan(f, plan, true); err != nil {
			t.Fatal(err)
		}
		if verbose == 0 {
			b.Write(out.Bytes())
			continue
		}
		if n := strings.Count(out.String(), "\n  delete "); n != 6001 {
			t.Errorf("-v lists %d files to delete, want 6001", n)
		}
	}
	rep := &cleanup.Report{Plan: plan, Deleted: 5999, DeletedBytes: 20964530, Gone: 1, Skipped: 1, Failed: 1, After: journal.RunPartiallyCleaned,
		Problems: []cleanup.FileResult{{Key: plan.Delete[17].Key, Status: journal.DeleteSkip, Reason: "changed since it was verified: kept"},
			{Key: plan.Delete[18].Key, Status: journal.DeleteFailed, Reason: "AccessDenied: the identity may not delete"}}}
	io, _, out, _ := iostreams.Test()
	if err := printCleanupReport(NewFactory(io), rep); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\n")
	b.Write(out.Bytes())
	golden(t, "cleanup_plan_report.txt", b.Bytes())
}

// TestVerifyReportGolden pins verify's report: a batch proved by its answer, one settled
// from its tagged commit (its rows counted as loaded), one that fails, the key check.
func TestVerifyReportGolden(t *testing.T) {
	seven, five := int64(7), int64(5)
	rep := &reload.VerifyReport{Run: "20261201T101500Z-1a2b3c4d", Table: "main.sales.orders", Status: "unknown",
		Checks: []journal.Check{{Batch: 1, Expected: 7, Inserted: &seven, History: &seven, OK: true, Evidence: journal.EvidenceAnswer},
			{Batch: 2, Expected: 5, History: &five, OK: true, Evidence: journal.EvidenceTag, Note: "settled from its tagged commit"},
			{Batch: 3, Expected: 4, OK: false, Note: "batch is unknown: 0 rows inserted for files no journal record shows loading"}},
		Failed: 1, Expected: 16, Inserted: 12, AnsweredRows: 7, HistoryRows: 5,
		Checked:   []string{"the journal's records of run 20261201T101500Z-1a2b3c4d", "the table's history from its first version (9 commits, up to version 9)"},
		Guarantee: reload.Guarantee}
	io, _, out, _ := iostreams.Test()
	if err := printVerify(NewFactory(io), rep); err != nil {
		t.Fatal(err)
	}
	golden(t, "verify_report.txt", out.Bytes())
}
