//go:build demo && cgo

package served

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	sd "github.com/zbrecover/zbrecover/schemadiff"
)

// TestDemoServeAsAWorkspace starts `zbrecover demo serve --table main.sales.orders=ROOT` as
// its own process, runs the release binary against it with only the settings it printed, and
// stops it with SIGINT: the warehouse and Unity Catalog give the schema the Delta log gives,
// and nothing is left listening.
func TestDemoServeAsAWorkspace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)

	root := filepath.Join(t.TempDir(), "orders")
	v0 := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer", sd.StringType).Col("amount", sd.DecimalType(12, 2)).
		Col("shipping", sd.StructType(sd.NewField("city", sd.StringType, func(f *sd.Field) { f.Nullable = true }), sd.NewField("zip", sd.StringType, func(f *sd.Field) { f.Nullable = true }))).
		Col("placed_at", sd.TimestampType)
	if _, err := deltatest.Write(root, deltatest.Table{Schema: v0, Later: []sd.Schema{v0.Col("channel", sd.StringType)}}); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "statements.jsonl")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	served := e2etest.StartDemoServe(ctx, t, demoBin, "--table", "main.sales.orders="+root, "--listen", "127.0.0.1:0", "--log", logFile)
	env := served.Env

	// Only the printed settings: no profile file, no other DATABRICKS_ variable.
	home := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, release, args...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("zbrecover %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String()
	}
	for _, format := range []string{"text", "ddl"} {
		fromDelta := run("schema", root, "--from", "delta", "-o", format)
		fromWarehouse := run("schema", "--table", "main.sales.orders", "--from", "warehouse", "-o", format)
		fromUC := run("schema", "--table", "main.sales.orders", "--from", "uc", "-o", format)
		if fromWarehouse != fromDelta || fromUC != fromDelta {
			t.Errorf("-o %s: schemas differ\ndelta:\n%s\nwarehouse:\n%s\nuc:\n%s", format, fromDelta, fromWarehouse, fromUC)
		}
		if format == "ddl" && !strings.Contains(fromDelta, "`shipping` STRUCT<`city`: STRING, `zip`: STRING>") {
			t.Errorf("unexpected DDL %s", fromDelta)
		}
	}
	// The statement log has the warehouse's DESCRIBE.
	logged, _ := os.ReadFile(logFile)
	if !strings.Contains(string(logged), `"statement":"DESCRIBE TABLE EXTENDED `+"`main`.`sales`.`orders`"+` AS JSON"`) ||
		!strings.Contains(string(logged), `"outcome":"FINISHED"`) {
		t.Errorf("statement log:\n%s", logged)
	}

	served.Stop()
}

// served is the release binary driven against `zbrecover demo serve`, with this package's
// checks as methods.
type served struct{ *e2etest.Served }
