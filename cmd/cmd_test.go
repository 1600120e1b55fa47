package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// run executes the command line in-process and returns exit code, stdout and stderr.
func run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	io, _, out, errOut := iostreams.Test()
	code := Run(context.Background(), NewFactory(io), args)
	return code, out.String(), errOut.String()
}

func TestRootHelpAndVersion(t *testing.T) {
	code, out, _ := run(t, "--help")
	if code != 0 || !strings.Contains(out, "Exit status:") || !strings.Contains(out, "_zerobus/table_rejected_parquets/") {
		t.Fatalf("help: code %d, out:\n%s", code, out)
	}
	code, out, _ = run(t, "version")
	if code != 0 || !strings.HasPrefix(out, "zbrecover ") {
		t.Fatalf("version: code %d, out %q", code, out)
	}
	code, out, _ = run(t, "--output", "json", "version")
	var v map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["version"] == "" || v["schema_version"] != float64(2) {
		t.Fatalf("version json: code %d, out %q", code, out)
	}
	code, out, _ = run(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Fatalf("completion: code %d", code)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--bogus"},
		{"ls"},
		{"ls", "a", "b"},
		{"--output", "yaml", "version"},
		{"--concurrency", "0", "version"},
		{"ls", "--limit", "-1", "."},
	} {
		code, _, errOut := run(t, args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want %d; stderr %q", args, code, ExitUsage, errOut)
		}
	}
}

func TestLsUnknownSchemeNamesSupported(t *testing.T) {
	code, _, errOut := run(t, "ls", "ftp://host/path")
	if code != ExitFailure {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{`unknown scheme "ftp"`, "s3://", "gs://", "abfss://", "wasbs://", "file://"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("error %q does not mention %q", errOut, want)
		}
	}
}

func TestLsLocal(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{"a.parquet": "12345", "sub/b c.parquet": "xy", "sub/deeper/#x?.txt": ""} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, "ls", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "a.parquet") || !strings.Contains(out, "sub/b c.parquet") ||
		!strings.Contains(out, "sub/deeper/#x?.txt") {
		t.Fatalf("unexpected listing:\n%s", out)
	}
	if !strings.Contains(errOut, "3 objects, 7 B") {
		t.Errorf("summary: %q", errOut)
	}

	code, out, _ = run(t, "ls", "--output", "json", "file://"+filepath.ToSlash(dir))
	var rep LsReport
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("json: exit %d, %q", code, out)
	}
	if rep.Count != 3 || rep.Bytes != 7 || len(rep.Objects) != 3 || rep.Objects[0].Key != "a.parquet" || rep.Objects[0].Size != 5 {
		t.Fatalf("json report: %+v", rep)
	}

	code, out, _ = run(t, "ls", "--limit", "1", "--prefix", "sub/", dir)
	if code != 0 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, "sub/") {
		t.Fatalf("limit/prefix: exit %d, %q", code, out)
	}
}

func TestJSONErrorOnStderr(t *testing.T) {
	code, out, errOut := run(t, "--output", "json", "ls", "ftp://h/p?sig=topsecret")
	if code != ExitFailure || out != "" {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	var e struct {
		Error string `json:"error"`
		Code  int    `json:"code"`
	}
	if err := json.Unmarshal([]byte(errOut), &e); err != nil || e.Code != ExitFailure || e.Error == "" {
		t.Fatalf("stderr %q: %v", errOut, err)
	}
	if strings.Contains(errOut, "topsecret") {
		t.Fatalf("secret leaked: %s", errOut)
	}
}

func TestMostUrgent(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want int
	}{
		{[]int{ExitPartial, ExitSchema}, ExitSchema},
		{[]int{ExitSchema, ExitVerify, ExitPartial}, ExitVerify},
		{[]int{ExitOK, ExitPartial}, ExitPartial},
		{nil, ExitOK},
	} {
		if got := MostUrgent(c.in...); got != c.want {
			t.Errorf("MostUrgent(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestTargetResolution(t *testing.T) {
	for _, c := range []struct {
		args        []string
		table, root string
		wantUsage   bool
	}{
		{[]string{"main.sales.orders"}, "main.sales.orders", "", false},
		{[]string{"main.`my-sales`.orders"}, "main.`my-sales`.orders", "", false},
		{[]string{"main.ventes.commandes_été"}, "main.ventes.commandes_été", "", false},
		{[]string{"main.`a``b`.orders"}, "main.`a``b`.orders", "", false},
		// Unity Catalog names cannot hold a space: a quoted name with one is refused as a name.
		{[]string{"main.`my sales`.orders"}, "", "", true},
		{[]string{"s3://b/tables/orders"}, "", "s3://b/tables/orders", false},
		{[]string{"./a.b.c"}, "", "./a.b.c", false},
		// Two parts are neither a table name nor (not existing) a local path.
		{[]string{"a.b"}, "", "", true},
		{nil, "", "", true},
	} {
		o := &TargetOptions{}
		err := parseTarget(o, c.args)
		if c.wantUsage {
			if ExitCode(err) != ExitUsage {
				t.Errorf("%v: want usage error, got %v", c.args, err)
			}
			continue
		}
		if err != nil || o.Table != c.table || o.Root != c.root {
			t.Errorf("%v: table %q root %q err %v", c.args, o.Table, o.Root, err)
		}
	}
	o := &TargetOptions{Table: "a.b.c"}
	if err := parseTarget(o, []string{"s3://x/y"}); ExitCode(err) != ExitUsage {
		t.Errorf("TARGET with --table: %v", err)
	}
}

func TestLsS3Emulator(t *testing.T) {
	srv := s3test.NewServer(t)
	for _, k := range []string{"tables/orders/_zerobus/table_rejected_parquets/a.parquet", "tables/orders/_zerobus/table_rejected_parquets/sub/b #1.parquet", "other/x"} {
		if err := srv.Put(k, []byte("data")); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretAccessKey)
	t.Setenv("AWS_REGION", s3test.Region)
	code, out, errOut := run(t, "ls", "--s3-endpoint", srv.Config().S3Endpoint, "-o", "json", srv.URLFor("tables/orders"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep LsReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Count != 2 || rep.Objects[0].Key != "_zerobus/table_rejected_parquets/a.parquet" ||
		rep.Objects[1].Key != "_zerobus/table_rejected_parquets/sub/b #1.parquet" || rep.Objects[0].ETag == "" {
		t.Fatalf("listing: %+v", rep)
	}
	if strings.Contains(out+errOut, s3test.SecretAccessKey) {
		t.Fatal("secret printed")
	}
}

// Piped, ls prints one object per line as tab-separated fields (key, size, RFC 3339 time,
// version) that a script can cut, keys with spaces included; on a terminal it is an aligned
// table under a header.
func TestLsPipedIsTabSeparated(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"a.parquet": "12345", "sub/b c.parquet": "xy", "sub/tab\there": "z"}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := run(t, "ls", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	wantKeys := []string{"a.parquet", "sub/b c.parquet", `"sub/tab\there"`}
	wantSizes := []string{"5", "2", "1"}
	if len(lines) != len(wantKeys) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(wantKeys), out)
	}
	for i, line := range lines {
		fields := strings.Split(line, "\t")
		if len(fields) != 4 {
			t.Errorf("line %q has %d tab-separated fields, want 4", line, len(fields))
			continue
		}
		if fields[0] != wantKeys[i] || fields[1] != wantSizes[i] {
			t.Errorf("line %d: key %q size %s, want %q size %s", i, fields[0], fields[1], wantKeys[i], wantSizes[i])
		}
		if _, err := time.Parse(time.RFC3339, fields[2]); err != nil {
			t.Errorf("line %q: time %q is not RFC 3339", line, fields[2])
		}
		if fields[3] != "-" {
			t.Errorf("line %q: version %q, want - for a local file", line, fields[3])
		}
	}

	io, _, tout, _ := iostreams.Test()
	io.SetStdoutTTY(true)
	if code := Run(context.Background(), NewFactory(io), []string{"ls", dir}); code != 0 {
		t.Fatalf("tty: exit %d", code)
	}
	tty := tout.String()
	if !strings.HasPrefix(tty, "KEY ") || strings.Contains(tty, "\t") || !strings.Contains(tty, "sub/b c.parquet  ") {
		t.Errorf("terminal output is not an aligned table:\n%s", tty)
	}
}
