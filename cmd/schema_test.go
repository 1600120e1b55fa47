package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/tableref"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

func TestNewCmdSchemaFlags(t *testing.T) {
	cases := []struct {
		args      string
		want      SchemaOptions
		wantUsage string
	}{
		{args: "s3://b/t", want: SchemaOptions{From: "delta", Output: "text", Target: TargetOptions{Arg: "s3://b/t", Root: "s3://b/t"}}},
		{args: "./t --from delta -o ddl", want: SchemaOptions{From: "delta", Output: "ddl", Target: TargetOptions{Arg: "./t", Root: "./t"}}},
		{args: "main.sales.orders --from warehouse --output json", want: SchemaOptions{From: "warehouse", Output: "json", Target: TargetOptions{Arg: "main.sales.orders", Table: "main.sales.orders"}}},
		{args: "--table main.sales.orders --from uc", want: SchemaOptions{From: "uc", Output: "text", Target: TargetOptions{Table: "main.sales.orders"}}},
		{args: "--root gs://b/t", want: SchemaOptions{From: "delta", Output: "text", Target: TargetOptions{Root: "gs://b/t"}}},
		{args: "", wantUsage: "name the target"},
		{args: "a b", wantUsage: "accepts at most 1 arg"},
		{args: "./t --from hive", wantUsage: "--from must be one of delta, warehouse, uc"},
		{args: "./t -o yaml", wantUsage: "--output must be text, json or ddl"},
		{args: "./t --table a.b.c", wantUsage: "not both"},
	}
	for _, tc := range cases {
		t.Run(tc.args, func(t *testing.T) {
			io, _, _, _ := iostreams.Test()
			f := NewFactory(io)
			var got *SchemaOptions
			c := NewCmdSchema(f, func(_ context.Context, o *SchemaOptions) error { got = o; return nil })
			args := strings.Fields(tc.args)
			if args == nil {
				args = []string{}
			}
			c.SetArgs(args)
			c.SetOut(io.Out)
			c.SetErr(io.ErrOut)
			err := c.Execute()
			if tc.wantUsage != "" {
				if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), tc.wantUsage) {
					t.Fatalf("err = %v (exit %d), want a usage error mentioning %q", err, ExitCode(err), tc.wantUsage)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.From != tc.want.From || got.Output != tc.want.Output || got.Target != tc.want.Target {
				t.Errorf("options = from %q output %q target %+v, want from %q output %q target %+v",
					got.From, got.Output, got.Target, tc.want.From, tc.want.Output, tc.want.Target)
			}
			if tc.want.Output == "json" && !f.Global.JSON() {
				t.Error("-o json does not make errors JSON")
			}
		})
	}
}

// writeTable writes a Delta log with a schema change and column mapping into a temp dir.
func writeTable(t *testing.T) (string, sd.Schema) {
	t.Helper()
	dir := t.TempDir()
	v0 := sd.NewSchema().Col("id", sd.LongType, sd.NotNull, sd.Physical("col-1", 1)).
		Col("amount", sd.DecimalType(10, 2), sd.Physical("col-2", 2))
	v1 := v0.Col("items", sd.ArrayType(sd.StructType(sd.NewField("sku", sd.StringType, sd.Physical("col-4", 4))), true),
		sd.Physical("col-3", 3), sd.Comment("line items"))
	if _, err := deltatest.Write(dir, deltatest.Table{Schema: v0, Later: []sd.Schema{v1}, PartitionColumns: []string{"amount"}}); err != nil {
		t.Fatal(err)
	}
	return dir, v1
}

func TestSchemaFromDelta(t *testing.T) {
	dir, want := writeTable(t)

	code, out, errOut := run(t, "schema", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "id ") || !strings.Contains(lines[0], "bigint") ||
		!strings.Contains(lines[0], "NOT NULL") || !strings.Contains(lines[0], "col-1") ||
		!strings.Contains(lines[2], "array<struct<sku:string>>") || !strings.HasSuffix(lines[2], "line items") {
		t.Errorf("text output:\n%s", out)
	}
	for _, w := range []string{"3 columns from the Delta log at file://", "table version 1", "metadata in 00000000000000000001.json",
		"partitioned by amount", "column mapping mode name"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr lacks %q: %s", w, errOut)
		}
	}

	code, out, _ = run(t, "schema", "--output", "ddl", "file://"+filepath.ToSlash(dir))
	if code != 0 {
		t.Fatalf("ddl: exit %d", code)
	}
	got, err := sd.ParseDDL(out)
	if err != nil || !got.Equal(want) {
		t.Errorf("ddl output %q parses to %v (%v), want %s", out, got, err, want.DDL())
	}

	code, out, _ = run(t, "schema", dir, "-o", "json")
	if code != 0 {
		t.Fatalf("json: exit %d", code)
	}
	var rep struct {
		Source  string `json:"source"`
		Version int64  `json:"version"`
		Columns []struct {
			Name, Type, PhysicalName string
			Nullable                 bool
			DeltaType                json.RawMessage `json:"delta_type"`
		} `json:"columns"`
		PartitionColumns []string `json:"partition_columns"`
		Delta            struct {
			SchemaString string `json:"schema_string"`
			MetaDataFile string `json:"metadata_file"`
		} `json:"delta"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("json output %q: %v", out, err)
	}
	if rep.Source != "delta" || rep.Version != 1 || len(rep.Columns) != 3 || rep.Columns[0].Type != "bigint" ||
		rep.Columns[0].Nullable || strings.Join(rep.PartitionColumns, ",") != "amount" {
		t.Errorf("json report: %+v", rep)
	}
	fromJSON, err := sd.ParseDeltaSchema(rep.Delta.SchemaString)
	if err != nil || !fromJSON.Equal(want) {
		t.Errorf("schema_string %s parses to %v (%v)", rep.Delta.SchemaString, fromJSON, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, rep.Columns[2].DeltaType); err != nil || compact.String() != want.Fields[2].Type.DeltaJSON() {
		t.Errorf("delta_type = %s, want %s", rep.Columns[2].DeltaType, want.Fields[2].Type.DeltaJSON())
	}
}

// TestSchemaOutputFeedsSchemaFile: what schema prints is a schema file for inspect
// --schema-file; the JSON keeps column-mapping physical names, and the DDL, which cannot, says
// so.
func TestSchemaOutputFeedsSchemaFile(t *testing.T) {
	dir, want := writeTable(t)

	code, out, errOut := run(t, "schema", "-o", "json", dir)
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errOut)
	}
	got, err := sd.ParseSchemaFile([]byte(out))
	if err != nil || !got.Equal(want) || !got.PhysicalView().Equal(want.PhysicalView()) {
		t.Errorf("schema -o json read back as a schema file: %v (%v), want %s with physical names %s",
			got, err, want.DDL(), want.PhysicalView().DDL())
	}

	code, out, errOut = run(t, "schema", "-o", "ddl", dir)
	if code != 0 {
		t.Fatalf("ddl: exit %d: %s", code, errOut)
	}
	if got, err := sd.ParseSchemaFile([]byte(out)); err != nil || !got.Equal(want) {
		t.Errorf("schema -o ddl read back: %v (%v)", got, err)
	}
	if !strings.Contains(errOut, "no column-mapping physical names") || !strings.Contains(errOut, "--output json") {
		t.Errorf("ddl of a column-mapped table: stderr %q, want a note that physical names are lost", errOut)
	}
}

// TestSchemaRealTable reads a checkpointed table from the shared testdata.
func TestSchemaRealTable(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "testdata", "delta", "checkpoint-v2-table")
	if _, err := os.Stat(dir); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Delta test tables missing (CI=true): %v", err)
		}
		t.Skip("Delta test tables missing")
	}
	code, out, errOut := run(t, "schema", "-o", "ddl", dir)
	if code != 0 || out != "`id` BIGINT, `name` STRING, `created_at` TIMESTAMP\n" {
		t.Errorf("exit %d, out %q, err %q", code, out, errOut)
	}
}

func TestSchemaErrors(t *testing.T) {
	dir, _ := writeTable(t)
	databricksEnv(t)
	t.Setenv("DATABRICKS_HOST", "")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"schema", "--from", "warehouse", dir}, ExitUsage, "--from warehouse needs a table name"},
		{[]string{"schema", "--from", "uc", "main.sales.orders"}, ExitFailure, "no Databricks workspace host"},
		{[]string{"schema", "main.sales.orders"}, ExitFailure, "no Databricks workspace host"},
		{[]string{"schema", t.TempDir()}, ExitFailure, "no Delta transaction log"},
		{[]string{"schema", "ftp://x/y"}, ExitFailure, `unknown scheme "ftp"`},
	} {
		code, out, errOut := run(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out, errOut, tc.code, tc.want)
		}
	}
	// Under -o json the error is JSON on stderr.
	code, _, errOut := run(t, "schema", "-o", "json", "--from", "uc", "main.sales.orders")
	var e struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if code != ExitFailure || json.Unmarshal([]byte(errOut), &e) != nil || !strings.Contains(e.Error, "DATABRICKS_HOST") {
		t.Errorf("json error: exit %d, stderr %q", code, errOut)
	}
}

// describeSource stands in for the warehouse source: it shows that a source plugs in through
// tableref.Source and renders like the Delta one.
type describeSource struct{ doc string }

func (describeSource) Name() sd.Source { return sd.SourceWarehouse }

func (s describeSource) Table(_ context.Context, t *tableref.Ref) (*sd.Table, error) {
	schema, err := sd.ParseDescribeJSON([]byte(s.doc))
	if err != nil {
		return nil, err
	}
	return &sd.Table{Source: "warehouse", Name: t.TableName(), Schema: schema}, nil
}

func TestSchemaPluggableSource(t *testing.T) {
	io, _, out, errOut := iostreams.Test()
	io.SetStdoutTTY(true)
	f := NewFactory(io)
	o := &SchemaOptions{F: f, From: "warehouse", Output: "text", Target: TargetOptions{Table: "main.sales.orders"},
		Source: func(name string) (tableref.Source, error) {
			return describeSource{doc: `{"columns":[{"name":"id","type":{"name":"bigint"},"nullable":false},` +
				`{"name":"note","type":{"name":"varchar","length":20},"nullable":true,"comment":"free text"}]}`}, nil
		}}
	if err := schemaRun(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	want := "COLUMN  TYPE    NULLABLE  COMMENT\n" +
		"id      bigint  NOT NULL\n" +
		"note    string  nullable  free text\n"
	if out.String() != want {
		t.Errorf("stdout:\n%q\nwant\n%q", out.String(), want)
	}
	if !strings.Contains(errOut.String(), "2 columns from the warehouse (DESCRIBE TABLE EXTENDED main.sales.orders AS JSON)") {
		t.Errorf("stderr: %s", errOut.String())
	}
}
