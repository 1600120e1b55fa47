package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/tableref"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

var (
	ordersV1 = arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	}, nil)
	ordersV2 = arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
)

const fallbackDirName = "_zerobus/table_rejected_parquets/"

// tableRoot writes a table root with two schema groups, a hidden file and, if bad, a
// truncated file.
func tableRoot(t *testing.T, bad bool) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel string, data []byte) {
		if err := pqgen.WriteFile(filepath.Join(root, filepath.FromSlash(fallbackDirName+rel)), data); err != nil {
			t.Fatal(err)
		}
	}
	v1 := pqgen.Must(pqgen.Bytes(ordersV1, `[{"id":1,"customer":"ann","amount":"10.50"},{"id":2,"customer":null,"amount":"0.01"}]`, pqgen.Options{}))
	v2 := pqgen.Must(pqgen.Bytes(ordersV2, `[{"id":3,"customer":"bo","tags":["a","b"]}]`, pqgen.Options{}))
	write("2024/05/01/part-1.parquet", v1)
	write("2024/05/01/part-2.parquet", v1)
	write("2024/05/02/part-3.parquet", v2)
	write("_tmp/part-9.parquet", v1)
	if bad {
		write("2024/05/02/part-4.parquet", pqgen.Truncate(v2, 50))
	}
	return root
}

func TestInspectFlags(t *testing.T) {
	cases := []struct {
		args      []string
		want      InspectOptions
		wantUsage string
	}{
		{args: []string{"s3://b/t"}, want: InspectOptions{Target: TargetOptions{Arg: "s3://b/t", Root: "s3://b/t"}, Prefix: fallback.Prefix, From: "delta"}},
		{args: []string{"--root", "gs://b/t", "--prefix", "other/"}, want: InspectOptions{Target: TargetOptions{Root: "gs://b/t"}, Prefix: "other/", From: "delta"}},
		{args: []string{"--root", "./t", "--table", "main.sales.orders", "--from", "warehouse"}, want: InspectOptions{Target: TargetOptions{Root: "./t", Table: "main.sales.orders"}, Prefix: fallback.Prefix, From: "warehouse"}},
		{args: []string{"main.sales.orders", "--from", "uc"}, want: InspectOptions{Target: TargetOptions{Arg: "main.sales.orders", Table: "main.sales.orders"}, Prefix: fallback.Prefix, From: "uc"}},
		{args: []string{"./t", "--schema-file", "orders.ddl"}, want: InspectOptions{Target: TargetOptions{Arg: "./t", Root: "./t"}, Prefix: fallback.Prefix, From: "delta", SchemaFile: "orders.ddl"}},
		{args: []string{"./t", "--all-changes"}, want: InspectOptions{Target: TargetOptions{Arg: "./t", Root: "./t"}, Prefix: fallback.Prefix, From: "delta", AllChanges: true}},
		{args: []string{}, wantUsage: "name the target"},
		{args: []string{"a", "b"}, wantUsage: "accepts at most 1 arg"},
		{args: []string{"./t", "--from", "hive"}, wantUsage: "--from must be one of delta, warehouse, uc"},
		{args: []string{"./t", "--from", "delta", "--schema-file", "x.ddl"}, wantUsage: "not both"},
		{args: []string{"./t", "--from", "warehouse"}, wantUsage: "--from warehouse needs a table name"},
	}
	for _, c := range cases {
		io, _, _, _ := iostreams.Test()
		f := NewFactory(io)
		var got *InspectOptions
		cmd := NewCmdInspect(f, func(_ context.Context, o *InspectOptions) error { got = o; return nil })
		cmd.SetArgs(c.args)
		cmd.SetOut(io.Out)
		cmd.SetErr(io.ErrOut)
		err := cmd.Execute()
		if c.wantUsage != "" {
			if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), c.wantUsage) {
				t.Errorf("%v: error %v, want a usage error mentioning %q", c.args, err, c.wantUsage)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		got.F = nil
		if !reflect.DeepEqual(*got, c.want) {
			t.Errorf("%v: options %+v, want %+v", c.args, *got, c.want)
		}
	}
}

func TestInspectText(t *testing.T) {
	root := tableRoot(t, false)
	code, out, errOut := run(t, "inspect", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Files:   3 Parquet files, 5 rows",
		"Other:   1 object not read",
		"Schema groups: 2",
		"customer  string         NULL (2 nulls)",
		"amount    decimal(10,2)",
		"tags      array<string>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if errOut != "" {
		t.Errorf("stderr without a terminal should be empty, got %q", errOut)
	}
}

func TestInspectJSONAndPartialExit(t *testing.T) {
	root := tableRoot(t, true)
	code, out, errOut := run(t, "--output", "json", "inspect", "file://"+filepath.ToSlash(root))
	if code != ExitPartial {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitPartial, errOut)
	}
	var rep inspect.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, out)
	}
	if rep.Totals.Files != 4 || rep.Totals.Unreadable != 1 || rep.Totals.Rows != 5 || len(rep.Groups) != 2 {
		t.Errorf("totals %+v", rep.Totals)
	}
	if bad := rep.Unreadable(); len(bad) != 1 || bad[0].Key != "2024/05/02/part-4.parquet" {
		t.Errorf("unreadable %+v", bad)
	}
	var e struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.Code != ExitPartial || !strings.Contains(e.Error, "1 of 4") {
		t.Errorf("stderr %q", errOut)
	}

	code, out, _ = run(t, "inspect", root)
	if code != ExitPartial || !strings.Contains(out, "Unreadable files: 1") || !strings.Contains(out, "part-4.parquet") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
}

// A table root with nothing in its fallback folder: nothing to recover, exit 0.
func TestInspectEmptyRootIsOK(t *testing.T) {
	root := t.TempDir()
	writeLog(t, root, ordersTable)
	code, out, _ := run(t, "inspect", root)
	if code != 0 || !strings.Contains(out, "nothing to recover") {
		t.Errorf("exit %d: %s", code, out)
	}
}

// With no fallback files, a root that has no Delta log either (a prefix that is not the table's
// root, say) is an error (exit 1) that names it, so that "nothing to recover" is not taken for
// a clean table; the fallback folder given as the root gets its table root as a suggestion. A
// local path that does not exist is an error.
func TestInspectNothingToRecoverChecksTheRoot(t *testing.T) {
	notRoot := filepath.Join(t.TempDir(), "ordres")
	if err := os.Mkdir(notRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, errOut0 := run(t, "inspect", notRoot)
	if code != ExitFailure || !strings.Contains(errOut0, "give the folder that holds _delta_log/") ||
		!strings.Contains(out, "file://"+filepath.ToSlash(notRoot)+" has no Delta log (_delta_log/) either: check that it is the table's storage root") {
		t.Errorf("not a table root: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, "-o", "json", "inspect", notRoot)
	rep := decodeReport(t, out)
	if code != ExitFailure || rep.Table == nil || rep.Table.Source != "none" || !strings.Contains(rep.Table.Note, "storage root") {
		t.Errorf("not a table root, json: exit %d, table %+v", code, rep.Table)
	}
	fallbackDir := filepath.Join(t.TempDir(), "orders", "_zerobus", "table_rejected_parquets")
	if err := os.MkdirAll(fallbackDir, 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errOut1 := run(t, "inspect", fallbackDir)
	if code != ExitFailure || !strings.Contains(errOut1, "is the fallback folder, not the table's root: did you mean file://"+filepath.ToSlash(filepath.Dir(filepath.Dir(fallbackDir)))+" ?") {
		t.Errorf("fallback folder as the root: exit %d: %s", code, errOut1)
	}

	missing := filepath.Join(t.TempDir(), "missing")
	code, out, errOut := run(t, "inspect", missing)
	if code != ExitFailure || out != "" || !strings.Contains(errOut, "local path "+missing+" does not exist (a table's storage root is the directory that holds _delta_log/ and _zerobus/)") {
		t.Errorf("missing local root: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// A table root with its Delta log and no fallback files: nothing to recover, no warning.
	root := t.TempDir()
	writeLog(t, root, ordersTable)
	code, out, _ = run(t, "inspect", root)
	if code != 0 || !strings.Contains(out, "nothing to recover") || strings.Contains(out, "no Delta log") {
		t.Errorf("table root: exit %d\n%s", code, out)
	}
}

func TestInspectProgressOnlyOnTerminal(t *testing.T) {
	root := tableRoot(t, false)
	for _, c := range []struct {
		tty, noProgress bool
		want            bool
	}{{false, false, false}, {true, true, false}, {true, false, true}} {
		io, _, out, errOut := iostreams.Test()
		io.SetStderrTTY(c.tty)
		args := []string{"inspect", root}
		if c.noProgress {
			args = append(args, "--no-progress")
		}
		if code := Run(context.Background(), NewFactory(io), args); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if got := strings.Contains(errOut.String(), "3 / 3 files"); got != c.want {
			t.Errorf("tty=%v no-progress=%v: progress shown %v, stderr %q", c.tty, c.noProgress, got, errOut.String())
		}
		if strings.Contains(out.String(), "files") && strings.Contains(out.String(), "footers") {
			t.Errorf("progress leaked to stdout")
		}
	}
}

func TestInspectS3(t *testing.T) {
	srv := s3test.NewServer(t)
	data := pqgen.Must(pqgen.Bytes(ordersV1, `[{"id":1,"customer":"ann","amount":"10.50"}]`, pqgen.Options{}))
	for _, k := range []string{"a.parquet", "b.parquet"} {
		if err := srv.Put("tables/orders/"+fallbackDirName+k, data); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretAccessKey)
	srv.ResetCounts()
	code, out, errOut := run(t, "--s3-endpoint", srv.URL, "--s3-region", s3test.Region, "--output", "json",
		"inspect", srv.URLFor("tables/orders"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep inspect.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Totals.Files != 2 || rep.Totals.Rows != 2 {
		t.Fatalf("report %+v (%v)", rep.Totals, err)
	}
	if c := srv.Counts(); c.Gets != 2 || c.Heads != 0 {
		t.Errorf("requests %s, want 2 GETs and no HEAD", c)
	}
}

// reportJSON is the part of inspect's JSON report the diff tests read.
type reportJSON struct {
	Table *struct {
		Source            string `json:"source"`
		Name              string `json:"name"`
		Version           *int64 `json:"version"`
		ColumnMappingMode string `json:"column_mapping_mode"`
		Columns           []struct {
			Name         string `json:"name"`
			Type         string `json:"type"`
			PhysicalName string `json:"physical_name"`
		} `json:"columns"`
		Note string `json:"note"`
	} `json:"table"`
	Groups []struct {
		SchemaID string `json:"schema_id"`
		Verdict  string `json:"verdict"`
		Columns  []struct {
			Name string `json:"name"`
		} `json:"columns"`
		Changes []struct {
			Kind      string `json:"kind"`
			Path      string `json:"path"`
			FilePath  string `json:"file_path"`
			Verdict   string `json:"verdict"`
			FileType  string `json:"file_type"`
			TableType string `json:"table_type"`
			Reason    string `json:"reason"`
		} `json:"changes"`
		OKChanges []struct {
			Kind     string `json:"kind"`
			Count    int    `json:"count"`
			Examples []struct {
				Path    string `json:"path"`
				Verdict string `json:"verdict"`
			} `json:"examples"`
		} `json:"ok_changes"`
		Suggestion *struct {
			DDL        []string `json:"ddl"`
			Select     string   `json:"select"`
			Source     string   `json:"source"`
			Statements []string `json:"statements"`
			Omit       []string `json:"omit"`
			Confirm    bool     `json:"confirm"`
			Complete   bool     `json:"complete"`
		} `json:"suggestion"`
	} `json:"groups"`
	Totals inspect.Totals `json:"totals"`
}

func decodeReport(t *testing.T, out string) reportJSON {
	t.Helper()
	var rep reportJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, out)
	}
	return rep
}

// groupWith returns the group of rep whose columns include name.
func groupWith(t *testing.T, rep reportJSON, name string) int {
	t.Helper()
	for i, g := range rep.Groups {
		for _, c := range g.Columns {
			if c.Name == name {
				return i
			}
		}
	}
	t.Fatalf("no group with column %s", name)
	return -1
}

// writeLog writes a Delta log under root whose versions have the given schemas.
func writeLog(t *testing.T, root string, v0 sd.Schema, later ...sd.Schema) {
	t.Helper()
	if _, err := deltatest.Write(root, deltatest.Table{Schema: v0, Later: later}); err != nil {
		t.Fatal(err)
	}
}

var ordersTable = sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer", sd.StringType).
	Col("amount", sd.DecimalType(10, 2))

func TestInspectDiffNeedsCastIsNotBlocking(t *testing.T) {
	root := tableRoot(t, false)
	// The table widened amount and added tags: v1 files need a CAST, v2 files load as they are.
	latest := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer", sd.StringType).
		Col("amount", sd.DecimalType(12, 2)).Col("tags", sd.ArrayType(sd.StringType, true))
	writeLog(t, root, ordersTable, latest)

	code, out, errOut := run(t, "-o", "json", "inspect", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rep := decodeReport(t, out)
	if rep.Table == nil || rep.Table.Source != "delta" || rep.Table.Version == nil || *rep.Table.Version != 1 || len(rep.Table.Columns) != 4 {
		t.Fatalf("table %+v", rep.Table)
	}
	v1 := rep.Groups[groupWith(t, rep, "amount")]
	if v1.Verdict != "needs_cast" || v1.Suggestion == nil {
		t.Fatalf("v1 group: verdict %q suggestion %+v", v1.Verdict, v1.Suggestion)
	}
	want := "`id`, `customer`, CAST(`amount` AS DECIMAL(12,2)) AS `amount`"
	wantSrc := "file://" + filepath.ToSlash(root) + "/" + fallbackDirName
	if v1.Suggestion.Select != want || v1.Suggestion.Source != wantSrc || len(v1.Suggestion.DDL) != 0 || !v1.Suggestion.Complete {
		t.Errorf("v1 suggestion %+v, want select %s from %s", v1.Suggestion, want, wantSrc)
	}
	if len(v1.Suggestion.Statements) != 1 || !strings.HasPrefix(v1.Suggestion.Statements[0], "COPY INTO <table> FROM (SELECT "+want+" FROM '"+wantSrc) ||
		!strings.Contains(v1.Suggestion.Statements[0], "FILES = (") {
		t.Errorf("v1 statements %q", v1.Suggestion.Statements)
	}
	// The cast is listed; the column the files lack, filled with NULL, is counted.
	kinds := map[string]string{}
	for _, c := range v1.Changes {
		kinds[c.Path] = c.Kind + " " + c.Verdict
	}
	if kinds["amount"] != "type_changed needs_cast" || len(kinds) != 1 {
		t.Errorf("v1 changes %v", kinds)
	}
	if ok := v1.OKChanges; len(ok) != 1 || ok[0].Kind != "missing_in_file" || ok[0].Count != 1 || len(ok[0].Examples) != 1 || ok[0].Examples[0].Path != "tags" {
		t.Errorf("v1 ok changes %+v", ok)
	}
	v2 := rep.Groups[groupWith(t, rep, "tags")]
	if v2.Verdict != "ok" || v2.Suggestion != nil || len(v2.Changes) != 0 || len(v2.OKChanges) != 1 ||
		v2.OKChanges[0].Examples[0].Path != "amount" || v2.OKChanges[0].Examples[0].Verdict != "ok" {
		t.Errorf("v2 group: verdict %q changes %+v ok changes %+v suggestion %+v", v2.Verdict, v2.Changes, v2.OKChanges, v2.Suggestion)
	}

	code, out, _ = run(t, "inspect", root)
	for _, want := range []string{
		"Table:   Delta log at file://",
		", version 1 (4 columns)",
		"  Against the table: needs-cast",
		"    amount: needs-cast: column amount is decimal(10,2) in the file and decimal(12,2) in the table",
		"    tags: ok: column tags (array<string>) is in the table but not in the file: COPY INTO fills it with NULL",
		"  Against the table: ok",
		"    Projection, for COPY INTO … FROM (SELECT … FROM '<folder>'):\n      SELECT `id`, `customer`, CAST(`amount` AS DECIMAL(12,2)) AS `amount`\n",
		"    To load this group's files, and only them (FILES lists cut here; -o json has them whole):\n      COPY INTO <table> FROM (SELECT `id`, `customer`, CAST(`amount` AS DECIMAL(12,2)) AS `amount` FROM 'file://",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, text lacks %q:\n%s", code, want, out)
		}
	}
}

func TestInspectDiffBlocksExit3WinsOver5(t *testing.T) {
	root := tableRoot(t, true)
	// customer was dropped; amount changed to an int.
	latest := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("amount", sd.IntegerType)
	writeLog(t, root, ordersTable, latest)

	code, out, errOut := run(t, "-o", "json", "inspect", root)
	if code != ExitSchema {
		t.Fatalf("exit %d, want %d: %s", code, ExitSchema, errOut)
	}
	rep := decodeReport(t, out)
	if rep.Totals.Unreadable != 1 || len(rep.Groups) != 2 {
		t.Fatalf("totals %+v", rep.Totals)
	}
	for _, g := range rep.Groups {
		if g.Verdict != "blocks" {
			t.Errorf("group %s verdict %q", g.SchemaID, g.Verdict)
		}
		var extra bool
		for _, c := range g.Changes {
			if c.Path == "customer" && c.Kind == "extra_in_file" && c.Verdict == "blocks" && c.FileType == "string" &&
				strings.Contains(c.Reason, "DELTA_METADATA_MISMATCH") {
				extra = true
			}
		}
		if !extra || g.Suggestion == nil || !slices.Contains(g.Suggestion.Omit, "customer") || len(g.Suggestion.DDL) != 1 ||
			!strings.HasPrefix(g.Suggestion.DDL[0], "ALTER TABLE <table> ADD COLUMNS (`customer` STRING") {
			t.Errorf("group %s: changes %+v suggestion %+v", g.SchemaID, g.Changes, g.Suggestion)
		}
	}
	v1 := rep.Groups[groupWith(t, rep, "amount")]
	var amount bool
	for _, c := range v1.Changes {
		amount = amount || c.Path == "amount" && c.Kind == "type_changed" && c.Verdict == "blocks" && c.FileType == "decimal(10,2)" && c.TableType == "int"
	}
	if !amount || v1.Suggestion.Complete {
		t.Errorf("v1 changes %+v, suggestion %+v", v1.Changes, v1.Suggestion)
	}
	var e struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.Code != ExitSchema ||
		!strings.Contains(e.Error, "2 of 2 schema groups block") || !strings.Contains(e.Error, "1 of 4 fallback files is unreadable") {
		t.Errorf("stderr %q", errOut)
	}

	code, out, errOut = run(t, "inspect", root)
	if code != ExitSchema || !strings.Contains(out, "Unreadable files: 1") || strings.Count(out, "Against the table: blocks") != 2 ||
		!strings.Contains(out, "  Suggested fix:\n    Table changes:\n      ALTER TABLE <table> ADD COLUMNS (`customer` STRING);") {
		t.Errorf("text: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestInspectNoDeltaLogIsANote(t *testing.T) {
	root := tableRoot(t, false)
	code, out, errOut := run(t, "inspect", root)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.Contains(out, "Table:   no table schema: file://"+filepath.ToSlash(root)+" has no Delta log (_delta_log/); pass --schema-file") ||
		strings.Contains(out, "Against the table") || strings.Contains(out, "VERDICT") {
		t.Errorf("text:\n%s", out)
	}
	code, out, _ = run(t, "-o", "json", "inspect", root)
	rep := decodeReport(t, out)
	if code != 0 || rep.Table == nil || rep.Table.Source != "none" || !strings.Contains(rep.Table.Note, "--schema-file") {
		t.Fatalf("exit %d, table %+v", code, rep.Table)
	}
	for _, g := range rep.Groups {
		if g.Verdict != "" || g.Changes != nil || g.Suggestion != nil {
			t.Errorf("group %s diffed without a table: %+v", g.SchemaID, g)
		}
	}
}

func TestInspectSchemaFile(t *testing.T) {
	root := tableRoot(t, false)
	// The Delta log says the files are fine; the schema file, which wins, says otherwise.
	writeLog(t, root, ordersTable.Col("tags", sd.ArrayType(sd.StringType, true)))
	dir := t.TempDir()
	ddl := filepath.Join(dir, "orders.ddl")
	if err := os.WriteFile(ddl, []byte("id BIGINT NOT NULL, customer STRING, amount DECIMAL(10,2), tags ARRAY<STRING>, region STRING NOT NULL"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "-o", "json", "inspect", "--schema-file", ddl, root)
	if code != ExitSchema {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rep := decodeReport(t, out)
	if rep.Table.Source != "schema_file" || rep.Table.Version != nil || len(rep.Table.Columns) != 5 {
		t.Errorf("table %+v", rep.Table)
	}
	for _, g := range rep.Groups {
		if g.Verdict != "blocks" || g.Suggestion == nil || !slices.Contains(g.Suggestion.DDL, "ALTER TABLE <table> ALTER COLUMN `region` DROP NOT NULL") {
			t.Errorf("group %s: verdict %q suggestion %+v", g.SchemaID, g.Verdict, g.Suggestion)
		}
	}

	// A Delta schema JSON on stdin, with which both groups load.
	io, in, stdout, stderr := iostreams.Test()
	in.WriteString(ordersTable.Col("tags", sd.ArrayType(sd.StringType, true)).DeltaJSON())
	code = Run(context.Background(), NewFactory(io), []string{"inspect", "--schema-file", "-", root})
	if code != 0 || !strings.Contains(stdout.String(), "Table:   schema file (stdin) (4 columns)") {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}

	// A broken schema file fails before anything is listed.
	bad := filepath.Join(dir, "bad.ddl")
	if err := os.WriteFile(bad, []byte("id BIGINT NOT NULL,, amount"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "inspect", "--schema-file", bad, root)
	if code != ExitFailure || out != "" || !strings.Contains(errOut, "--schema-file "+bad) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = run(t, "inspect", "--schema-file", filepath.Join(dir, "missing.ddl"), root)
	if code != ExitFailure || !strings.Contains(errOut, "missing.ddl") {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
}

func TestInspectColumnMappingComparesPhysicalNames(t *testing.T) {
	root := t.TempDir()
	// The files carry physical names; the table renamed customer to customer_name, which keeps
	// its physical name under column mapping, and dropped note (col-3).
	files := arrow.NewSchema([]arrow.Field{
		{Name: "col-1", Type: arrow.PrimitiveTypes.Int64},
		{Name: "col-2", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "col-3", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	data := pqgen.Must(pqgen.Bytes(files, `[{"col-1":1,"col-2":"ann","col-3":null}]`, pqgen.Options{}))
	if err := pqgen.WriteFile(filepath.Join(root, filepath.FromSlash(fallbackDirName+"part-1.parquet")), data); err != nil {
		t.Fatal(err)
	}
	v0 := sd.NewSchema().Col("id", sd.LongType, sd.NotNull, sd.Physical("col-1", 1)).
		Col("customer", sd.StringType, sd.Physical("col-2", 2)).Col("note", sd.StringType, sd.Physical("col-3", 3))
	v1 := sd.NewSchema().Col("id", sd.LongType, sd.NotNull, sd.Physical("col-1", 1)).
		Col("customer_name", sd.StringType, sd.Physical("col-2", 2))
	writeLog(t, root, v0, v1)

	code, out, errOut := run(t, "-o", "json", "inspect", root)
	if code != ExitSchema {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rep := decodeReport(t, out)
	if rep.Table.ColumnMappingMode != "name" || rep.Table.Columns[1].PhysicalName != "col-2" {
		t.Errorf("table %+v", rep.Table)
	}
	g := rep.Groups[0]
	got := map[string]string{}
	for _, c := range g.Changes {
		got[c.Path] = c.Kind + " " + c.FilePath + " " + c.Verdict
	}
	want := map[string]string{"id": "renamed `col-1` needs_cast", "customer_name": "renamed `col-2` needs_cast", "`col-3`": "extra_in_file  blocks"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	if g.Suggestion == nil || !strings.HasPrefix(g.Suggestion.Select, "`col-1` AS `id`, `col-2` AS `customer_name`") {
		t.Errorf("suggestion %+v", g.Suggestion)
	}
	_, out, _ = run(t, "inspect", root)
	if !strings.Contains(out, "column mapping name: files compared through physical names") {
		t.Errorf("text:\n%s", out)
	}
}

// fakeSource is a tableref.Source with a canned answer.
type fakeSource struct {
	name sd.Source
	ts   *sd.Table
	err  error
	t    *tableref.Ref
}

func (s *fakeSource) Name() sd.Source { return s.name }
func (s *fakeSource) Table(_ context.Context, t *tableref.Ref) (*sd.Table, error) {
	s.t = t
	return s.ts, s.err
}

func TestInspectTakesTheSchemaFromTheSource(t *testing.T) {
	root := tableRoot(t, false)
	src := &fakeSource{name: "warehouse", ts: &sd.Table{Source: "warehouse", Name: "main.sales.orders",
		Schema: sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("amount", sd.DecimalType(10, 2)).Col("tags", sd.ArrayType(sd.StringType, true))}}
	io, _, out, errOut := iostreams.Test()
	f := NewFactory(io)
	f.Global.Output = "json"
	o := &InspectOptions{F: f, Target: TargetOptions{Root: root}, From: "warehouse", Source: func(name string) (tableref.Source, error) {
		if name != "warehouse" {
			t.Errorf("source %q asked for", name)
		}
		return src, nil
	}}
	err := inspectRun(context.Background(), o)
	if ExitCode(err) != ExitSchema || src.t == nil || src.t.Root == nil {
		t.Fatalf("err %v, target passed %v", err, src.t)
	}
	rep := decodeReport(t, out.String())
	if rep.Table.Source != "warehouse" || rep.Table.Name != "main.sales.orders" {
		t.Errorf("table %+v", rep.Table)
	}
	for _, g := range rep.Groups {
		if g.Suggestion == nil || !slices.Contains(g.Suggestion.DDL, "ALTER TABLE `main`.`sales`.`orders` ADD COLUMNS (`customer` STRING)") {
			t.Errorf("suggestion %+v", g.Suggestion)
		}
	}

	// A source that fails: the files are still reported, the note says why, the exit is 1.
	out.Reset()
	errOut.Reset()
	src.ts, src.err = nil, errors.New("warehouse unreachable")
	err = inspectRun(context.Background(), o)
	if ExitCode(err) != ExitFailure || !strings.Contains(err.Error(), "warehouse unreachable") {
		t.Fatalf("err %v", err)
	}
	rep = decodeReport(t, out.String())
	if rep.Totals.Files != 3 || rep.Table.Source != "none" || !strings.Contains(rep.Table.Note, "warehouse unreachable") {
		t.Errorf("report %+v table %+v", rep.Totals, rep.Table)
	}

	// The warehouse and Unity Catalog sources read a table by name: a bare root is a usage
	// error, before anything is listed.
	code, stdout, stderr := run(t, "inspect", "--from", "uc", root)
	if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "--from uc needs a table name") {
		t.Errorf("--from uc: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// Ctrl-C (the root context cancelled) mid-inspect stops the run promptly with exit 130 and
// says it was interrupted, in text and in JSON mode.
func TestInspectInterrupted(t *testing.T) {
	srv := s3test.NewServer(t, s3test.WithLatency(20*time.Millisecond))
	data := pqgen.Must(pqgen.Bytes(ordersV1, `[{"id":1,"customer":"ann","amount":"10.50"}]`, pqgen.Options{}))
	for i := 0; i < 400; i++ {
		if err := srv.Put(fmt.Sprintf("orders/%spart-%03d.parquet", fallbackDirName, i), data); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretAccessKey)
	for _, output := range []string{"text", "json"} {
		ctx, cancel := context.WithCancel(context.Background())
		io, _, _, errOut := iostreams.Test()
		time.AfterFunc(150*time.Millisecond, cancel)
		code := Run(ctx, NewFactory(io), []string{"inspect", "-o", output, "--concurrency", "2",
			"--s3-endpoint", srv.Config().S3Endpoint, "--s3-region", s3test.Region, srv.URLFor("orders")})
		cancel()
		if code != ExitInterrupted || !strings.Contains(errOut.String(), "interrupted") {
			t.Errorf("%s: exit %d, stderr %q", output, code, errOut.String())
		}
	}
}
