//go:build cgo

package cmd

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

// TestMessagesGolden pins what an operator reads after the usual mistakes, against a local
// workspace: each message says what happened, why, and what to do, with the names probably
// meant where there are some, and no Go error chain. testdata/golden/messages.txt holds them
// (go test -tags 'duckdb demo' ./cmd -run MessagesGolden -update rewrites it).
func TestMessagesGolden(t *testing.T) {
	ws, root := doctorWorkspace(t)
	allowPathAccess(ws)
	tmp := t.TempDir()
	t.Setenv("XDG_STATE_HOME", filepath.Join(tmp, "state"))
	// A second table whose producers still write customer_id, renamed customer_key in the
	// table: a rename the warehouse's DESCRIBE cannot prove.
	renamed := filepath.Join(tmp, "renamed")
	if _, err := deltatest.Write(renamed, deltatest.Table{Schema: sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer_key", sd.StringType)}); err != nil {
		t.Fatal(err)
	}
	old := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "customer_id", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	data, err := pqgen.Bytes(old, `[{"id":1,"customer_id":"a"}]`, pqgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pqgen.WriteFile(filepath.Join(renamed, filepath.FromSlash(fallback.Prefix+"2026/01/part-1.parquet")), data); err != nil {
		t.Fatal(err)
	}
	if err := ws.RegisterTable(context.Background(), "main.sales.renamed", renamed, true); err != nil {
		t.Fatal(err)
	}
	// A run in the journal, for the --run mistakes.
	if code, out, errOut := run(t, "reload", "main.sales.orders", "--yes", "--no-progress"); code != ExitOK {
		t.Fatalf("reload: exit %d\n%s\n%s", code, out, errOut)
	}
	cfg := filepath.Join(tmp, "databrickscfg")
	if err := os.WriteFile(cfg, []byte("[DEFAULT]\nhost = "+os.Getenv("DATABRICKS_HOST")+"\ntoken = t\n\n[prod]\nhost = https://prod.example.com\ntoken = t\n\n[staging]\nhost = https://staging.example.com\ntoken = t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(tmp)

	var got strings.Builder
	step := func(env map[string]string, args ...string) {
		t.Helper()
		for k, v := range env {
			old, had := os.LookupEnv(k)
			if v == "-" {
				os.Unsetenv(k)
			} else {
				os.Setenv(k, v)
			}
			defer func() {
				if had {
					os.Setenv(k, old)
				} else {
					os.Unsetenv(k)
				}
			}()
		}
		code, _, errOut := run(t, args...)
		got.WriteString("$ zbrecover " + strings.Join(args, " ") + "\n" + errOut + "[exit " + strconv.Itoa(code) + "]\n\n")
		for _, chain := range []string{"context canceled", "file does not exist", "no such file or directory", "object does not exist"} {
			if strings.Contains(errOut, chain) {
				t.Errorf("%v: a Go error chain reaches the operator (%q):\n%s", args, chain, errOut)
			}
		}
	}
	noHost := map[string]string{"DATABRICKS_HOST": "-", "DATABRICKS_TOKEN": "-", "DATABRICKS_CONFIG_FILE": cfg}
	step(noHost, "schema", "main.sales.orders", "-p", "prdo")
	step(map[string]string{"DATABRICKS_CONFIG_FILE": filepath.Join(tmp, "no-such-cfg")}, "schema", "main.sales.orders", "-p", "prod")
	step(nil, "inspect", "orders")
	step(nil, "inspect", "sales.orders")
	step(nil, "schema", "main.sales.ordres", "--from", "uc")
	step(nil, "schema", "main.salse.orders", "--from", "uc")
	step(nil, "verify", "main.sales.orders", "--run", "nope")
	step(nil, "history", "main.sales.orders", "--run", "nope")
	step(nil, "cleanup", "main.sales.orders", "--run", "nope", "--dry-run")
	step(nil, "reload", "main.sales.renamed", "--dry-run", "--no-progress")
	step(nil, "reload", "main.sales.orders", "--stage-to", "/Volumes/main/sales/stagin/x", "--yes", "--no-progress")
	step(map[string]string{"DATABRICKS_WAREHOUSE_ID": "lokal"}, "schema", "main.sales.orders", "--from", "warehouse")
	step(map[string]string{"DATABRICKS_WAREHOUSE_ID": "-"}, "schema", "main.sales.orders", "--from", "warehouse")
	step(nil, "inspect", root, "--schema-file", "orders.json")
	step(nil, "preview", "main.sales.orders", "--from-report", "inspect.json")
	step(nil, "preview", "main.sales.orders", "--file", "2026/01/part-9.parquet")
	step(nil, "inspect", "main.sales.orders", "--log-file", filepath.Join(tmp, "logs", "zbrecover.log"))

	out := got.String()
	for _, r := range []struct{ re, with string }{
		{regexp.QuoteMeta(tmp), "$TMP"},
		{regexp.QuoteMeta(root), "$ROOT"},
		{regexp.QuoteMeta(strings.TrimPrefix(os.Getenv("DATABRICKS_HOST"), "http://")), "$HOST"},
		{`\d{8}T\d{6}Z-[0-9a-f]{8}`, "$RUN"},
		{`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`, "$TIME"},
	} {
		out = regexp.MustCompile(r.re).ReplaceAllLiteralString(out, r.with)
	}
	t.Chdir(wd) // the golden file is under the package's directory
	golden(t, "messages.txt", []byte(out))
}
