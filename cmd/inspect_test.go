package cmd

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/internal/pqgen"
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

const fallback = "_zerobus/table_rejected_parquets/"

// tableRoot writes a table root with two schema groups, a hidden file and, if bad, a
// truncated file.
func tableRoot(t *testing.T, bad bool) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel string, data []byte) {
		if err := pqgen.WriteFile(filepath.Join(root, filepath.FromSlash(fallback+rel)), data); err != nil {
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
		args    []string
		want    InspectOptions
		wantErr bool
	}{
		{args: []string{"s3://b/t"}, want: InspectOptions{Target: TargetOptions{Arg: "s3://b/t", Root: "s3://b/t"}, Prefix: inspect.FallbackPrefix}},
		{args: []string{"--root", "gs://b/t", "--prefix", "other/"}, want: InspectOptions{Target: TargetOptions{Root: "gs://b/t"}, Prefix: "other/"}},
		{args: []string{}, wantErr: true},
		{args: []string{"a", "b"}, wantErr: true},
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
		if c.wantErr {
			if err == nil || ExitCode(err) != ExitUsage {
				t.Errorf("%v: error %v, want a usage error", c.args, err)
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

func TestInspectEmptyRootIsOK(t *testing.T) {
	code, out, _ := run(t, "inspect", t.TempDir())
	if code != 0 || !strings.Contains(out, "nothing to recover") {
		t.Errorf("exit %d: %s", code, out)
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
		if err := srv.Put("tables/orders/"+fallback+k, data); err != nil {
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
