package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// complete runs cobra's hidden __complete command and returns the candidates (without their
// descriptions) and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	code, out, errOut := run(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %v: exit %d\n%s%s", args, code, out, errOut)
	}
	var vals []string
	directive := ""
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, ":") {
			directive = l
			continue
		}
		v, _, _ := strings.Cut(l, "\t")
		vals = append(vals, v)
	}
	return vals, directive
}

// TestCompletionOfFlagValues: enum flags complete their values, --profile/-p the profiles of
// DATABRICKS_CONFIG_FILE, and none of them falls back to file names.
func TestCompletionOfFlagValues(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "databrickscfg")
	if err := os.WriteFile(cfg, []byte("[DEFAULT]\nhost = https://a.example\n\n[prod]\nhost = https://p.example\ntoken = dapi0123456789abcdef0123456789abcdef\n[ prod-eu ]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABRICKS_CONFIG_FILE", cfg)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", "--profile", ""}, "DEFAULT prod prod-eu"},
		{[]string{"reload", "-p", "pr"}, "prod prod-eu"},
		{[]string{"ls", "--output", ""}, "text json jsonl"},
		{[]string{"-o", "j"}, "json jsonl"},
		{[]string{"schema", "-o", ""}, "text json ddl"},
		{[]string{"preview", "--format", ""}, "table json csv"},
		{[]string{"reload", "--from", ""}, "delta warehouse uc"},
		{[]string{"inspect", "--from", "w"}, "warehouse"},
		{[]string{"cleanup", "--storage-auth", ""}, "auto vended default"},
	} {
		vals, directive := complete(t, c.args...)
		if got := strings.Join(vals, " "); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
		if directive != ":4" { // ShellCompDirectiveNoFileComp
			t.Errorf("%v: directive %s, want :4", c.args, directive)
		}
	}
	t.Setenv("DATABRICKS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	if vals, _ := complete(t, "inspect", "--profile", ""); len(vals) != 0 {
		t.Errorf("no config file: %v", vals)
	}
}

// TestCompletionOfGroupsFromReport: preview --group completes the schema ids of the
// --from-report file, with no storage read; without a report it completes nothing.
func TestCompletionOfGroupsFromReport(t *testing.T) {
	root := tableRoot(t, false)
	_, out, errOut := run(t, "inspect", "-o", "json", "--schema-file", writeTemp(t, "id BIGINT NOT NULL, customer STRING, amount DECIMAL(10,2)"), root)
	var rep struct {
		Groups []struct {
			SchemaID string `json:"schema_id"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || len(rep.Groups) == 0 {
		t.Fatalf("inspect: %v\n%s", err, errOut)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(report, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	// The root is gone: completion must not read it.
	gone := filepath.Join(t.TempDir(), "gone")
	vals, directive := complete(t, "preview", gone, "--from-report", report, "--group", "")
	if len(vals) != len(rep.Groups) || vals[0] != rep.Groups[0].SchemaID || directive != ":4" {
		t.Errorf("--group: %v %s, want the %d ids of %+v", vals, directive, len(rep.Groups), rep.Groups)
	}
	vals, _ = complete(t, "preview", gone, "--from-report", report, "--group", rep.Groups[0].SchemaID[:4])
	if len(vals) == 0 || !strings.HasPrefix(vals[0], rep.Groups[0].SchemaID[:4]) {
		t.Errorf("--group by prefix: %v", vals)
	}
	vals, _ = complete(t, "preview", gone, "--from-report", report, "--file", "2024/05/02/")
	if len(vals) == 0 || !strings.HasPrefix(vals[0], "2024/05/02/part-") {
		t.Errorf("--file: %v", vals)
	}
	if vals, directive := complete(t, "preview", root, "--group", ""); len(vals) != 0 || directive != ":4" {
		t.Errorf("without --from-report: %v %s", vals, directive)
	}
}
