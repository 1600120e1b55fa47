package cmd

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/iostreams"
)

func TestPreviewFlags(t *testing.T) {
	base := PreviewOptions{Target: TargetOptions{Arg: "./r", Root: "./r"}, Prefix: fallback.Prefix, Rows: 20, MaxBytes: 64 << 20}
	with := func(mut func(*PreviewOptions)) PreviewOptions { o := base; mut(&o); return o }
	cases := []struct {
		args []string
		want PreviewOptions
	}{
		{[]string{"./r"}, base},
		{[]string{"./r", "--file", "a/b.parquet", "-n", "5"}, with(func(o *PreviewOptions) { o.File, o.Rows = "a/b.parquet", 5 })},
		{[]string{"./r", "--group", "3f2a", "--columns", "id, name", "--format", "csv"}, with(func(o *PreviewOptions) {
			o.Group, o.Columns, o.Format = "3f2a", []string{"id", "name"}, "csv"
		})},
		{[]string{"./r", "--max-bytes", "1KiB"}, with(func(o *PreviewOptions) { o.MaxBytes = 1024 })},
		{[]string{"./r", "--max-bytes", "2000"}, with(func(o *PreviewOptions) { o.MaxBytes = 2000 })},
	}
	for _, c := range cases {
		io, _, _, _ := iostreams.Test()
		var got *PreviewOptions
		cmd := NewCmdPreview(NewFactory(io), func(_ context.Context, o *PreviewOptions) error { got = o; return nil })
		cmd.SetArgs(c.args)
		if err := cmd.Execute(); err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		got.F = nil
		if !reflect.DeepEqual(*got, c.want) {
			t.Errorf("%v:\n got %+v\nwant %+v", c.args, *got, c.want)
		}
	}
	for _, bad := range [][]string{
		{"r", "--file", "x", "--group", "y"},
		{"r", "-n", "0"},
		{"r", "--format", "xml"},
		{"r", "--max-bytes", "lots"},
		{},
	} {
		io, _, _, _ := iostreams.Test()
		cmd := NewCmdPreview(NewFactory(io), func(context.Context, *PreviewOptions) error { return nil })
		cmd.SetArgs(bad)
		cmd.SetOut(io.Out)
		cmd.SetErr(io.ErrOut)
		if err := cmd.Execute(); ExitCode(err) != ExitUsage {
			t.Errorf("%v: error %v, want a usage error", bad, err)
		}
	}
}

func TestPreviewFileFormats(t *testing.T) {
	root := tableRoot(t, false)
	code, out, errOut := run(t, "preview", root, "--file", "2024/05/01/part-1.parquet", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "id,customer,amount\n1,ann,10.50\n2,,0.01\n"; out != want {
		t.Errorf("csv %q, want %q", out, want)
	}

	code, out, _ = run(t, "preview", root, "--file", "2024/05/02/part-3.parquet")
	if code != 0 || !strings.Contains(out, `["a","b"]`) || !strings.Contains(out, "array<string>") {
		t.Errorf("table: exit %d\n%s", code, out)
	}

	code, out, _ = run(t, "--output", "json", "preview", root, "--file", "2024/05/01/part-1.parquet", "--columns", "amount", "-n", "1")
	var rep struct {
		Previews []struct {
			Columns []struct{ Name, Type string }
			Rows    []map[string]json.RawMessage
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Previews) != 1 {
		t.Fatalf("json: exit %d\n%s", code, out)
	}
	p := rep.Previews[0]
	if len(p.Columns) != 1 || p.Columns[0].Type != "decimal(10,2)" || len(p.Rows) != 1 || string(p.Rows[0]["amount"]) != "10.50" {
		t.Errorf("json preview %+v", p)
	}
}

func TestPreviewGroups(t *testing.T) {
	root := tableRoot(t, false)
	code, out, errOut := run(t, "preview", root)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Count(out, "Schema ") != 2 || !strings.Contains(out, "ann") || !strings.Contains(out, `["a","b"]`) {
		t.Errorf("all groups:\n%s", out)
	}

	// A group by id prefix: its rows only, across its files.
	code, out, _ = run(t, "--output", "json", "inspect", root)
	var rep inspect.Report
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatal("inspect json")
	}
	var v1 string
	for _, g := range rep.Groups {
		if g.Files == 2 {
			v1 = g.SchemaID
		}
	}
	code, out, _ = run(t, "preview", root, "--group", v1[:6], "--format", "csv", "--columns", "id")
	if code != 0 || out != "id\n1\n2\n1\n2\n" {
		t.Errorf("group csv: exit %d %q", code, out)
	}

	code, _, errOut = run(t, "preview", root, "--format", "csv")
	if code != ExitUsage || !strings.Contains(errOut, "--group") {
		t.Errorf("csv over several groups: exit %d %s", code, errOut)
	}
	code, _, errOut = run(t, "preview", root, "--group", "ffffffff")
	if code != ExitFailure || !strings.Contains(errOut, "no schema group") {
		t.Errorf("unknown group: exit %d %s", code, errOut)
	}
}

func TestPreviewUnreadableFile(t *testing.T) {
	root := tableRoot(t, true)
	code, _, errOut := run(t, "preview", root, "--file", "2024/05/02/part-4.parquet")
	if code != ExitFailure || !strings.Contains(errOut, "part-4.parquet") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	code, _, errOut = run(t, "preview", root, "--file", "nope.parquet")
	if code != ExitFailure || !strings.Contains(errOut, "--file nope.parquet: the fallback folder ") || !strings.Contains(errOut, " holds no such file") {
		t.Errorf("missing file: exit %d: %s", code, errOut)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "10B": 10, "2KiB": 2048, "64MiB": 64 << 20, "1GiB": 1 << 30, "3MB": 3e6, "5k": 5120} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "x", "1.5MiB", "-"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) accepted", bad)
		}
	}
}
