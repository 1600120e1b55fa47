//go:build demo && cgo && linux

package golden

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// The recovery's fixture: 12 parked files of 3 rows each over four date folders, written by
// producers that still send customer_id (renamed customer_key in the table since) and
// DECIMAL(10,2) (widened to DECIMAL(18,4)), as the demo's generator makes them.
const (
	nFiles, rowsPerFile = 12, 3
	batchFiles          = 3 // 4 batches
	stageTo             = "/Volumes/main/sales/staging/"
)

// writeParked writes the managed table at root and its parked files.
func writeParked(t *testing.T, root string) {
	t.Helper()
	if _, err := deltatest.Write(root, deltatest.Table{Schema: e2etest.TableSchema}); err != nil {
		t.Fatal(err)
	}
	id := 0
	for i := 0; i < nFiles; i++ {
		var rows []string
		for k := 0; k < rowsPerFile; k++ {
			id++
			rows = append(rows, fmt.Sprintf(`{"id":%d,"customer_id":"c%d","amount":"%d.25"}`, id, id, id%100))
		}
		data, err := pqgen.Bytes(e2etest.OldFiles, "["+strings.Join(rows, ",")+"]", pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("2026-01-%02d/part-%05d.parquet", 1+i%4, i)
		if err := pqgen.WriteFile(filepath.Join(root, filepath.FromSlash(fallback.Prefix), filepath.FromSlash(key)), data); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecoveryGoldens walks the whole recovery of one managed table, staged, with the release
// binary against demo serve, once in text and once under -o json (each on a table of its
// own, the same files): scan, doctor, inspect, preview, reload --dry-run (blocked, then with
// the fix), a reload the warehouse interrupts at its third batch, the re-run's continued-run
// prompt (answered no) and its totals, verify, verify --key, undo carried out and the redo,
// the cleanup plan, cleanup, history, the whole recovery's summary, undo --dry-run after
// cleanup, and one watch cycle over files parked since. Each output is a golden file.
func TestRecoveryGoldens(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	demoBin, release := e2etest.Demo(t), e2etest.Release(t)
	tmp := t.TempDir()
	var args []string
	for _, f := range []string{"text", "json"} {
		writeParked(t, filepath.Join(tmp, "orders_"+f))
		args = append(args, "--table", "main.sales.orders_"+f+"="+filepath.Join(tmp, "orders_"+f))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	w := e2etest.StartDemoServe(ctx, t, demoBin, args...)
	gs := map[string]*goldens{}
	for _, f := range []string{"text", "json"} {
		gs[f] = newGoldens(ctx, t, release, w.Env, f, tmp)
	}
	// Both tables parked, before either walk.
	gs["text"].step("00-version", "version")
	gs["json"].step("00-version", "version")
	gs["text"].step("01-scan", "scan", "main")
	gs["json"].step("01-scan", "scan", "main")
	for _, f := range []string{"text", "json"} {
		t.Run(f, func(t *testing.T) {
			g := *gs[f]
			sub := *g.Served
			sub.T = t
			g.Served = &sub
			g.walk()
		})
	}
	t.Run("messages", func(t *testing.T) {
		g := *gs["text"]
		sub := *g.Served
		sub.T = t
		g.Served = &sub
		g.messages()
	})
}

// goldens runs the steps of one walk and compares what each printed with its golden file.
type goldens struct {
	*e2etest.Served
	format string // text or json
	table  string
	root   string            // the table's storage root
	tmp    string            // the folder of both tables' roots and of the files the commands write
	ids    map[string]string // run ids and UUIDs → <RUN1>, <ID1>, … in order of appearance
}

func newGoldens(ctx context.Context, t *testing.T, release string, env map[string]string, format, tmp string) *goldens {
	s := e2etest.NewServed(ctx, t, release, env)
	table := "main.sales.orders_" + format
	return &goldens{Served: s, format: format, table: table, root: filepath.Join(tmp, "orders_"+format), tmp: tmp, ids: map[string]string{}}
}

// step runs the release binary with args (under -o json in the JSON walk) and compares its
// output with testdata/<name>.<txt|json>; it returns the exit code and stdout.
func (g *goldens) step(name string, args ...string) (int, string) {
	g.T.Helper()
	if g.format == "json" {
		args = append([]string{"-o", "json"}, args...)
	}
	code, out, errOut := g.Run(args...)
	g.compare(name, args, code, out, errOut, false)
	return code, out
}

// stepTerminal runs the release binary as step does, with stdin and stderr on a terminal,
// answering answer to its question.
func (g *goldens) stepTerminal(name, answer string, args ...string) (int, string) {
	g.T.Helper()
	if g.format == "json" {
		args = append([]string{"-o", "json"}, args...)
	}
	code, out, errOut, err := runOnTerminal(g.Command(args...), answer)
	if err != nil {
		g.T.Fatalf("zbrecover %s: %v\nstdout: %s\nterminal: %s", strings.Join(args, " "), err, out, errOut)
	}
	g.compare(name, args, code, out, errOut, true)
	return code, out
}

// compare writes what one command printed as the operator reads it: in the text walk, and
// for a command on a terminal (its stderr holds the answer typed), a transcript of the
// command line, stdout, stderr and the exit code (<name>.txt, or <name>.json.txt in the
// JSON walk); otherwise the JSON document on stdout (or, when there is none, the error
// document on stderr), checked to be JSON, in <name>.json, and a failure's exit code in
// <name>.json.exit.
func (g *goldens) compare(name string, args []string, code int, out, errOut string, terminal bool) {
	g.T.Helper()
	var b strings.Builder
	if g.format == "text" || terminal {
		fmt.Fprintf(&b, "$ zbrecover %s\n", strings.Join(args, " "))
		if out != "" {
			b.WriteString("--- stdout\n" + out)
			if !strings.HasSuffix(out, "\n") {
				b.WriteString("\n")
			}
		}
		if errOut != "" {
			b.WriteString("--- stderr\n" + errOut)
			if !strings.HasSuffix(errOut, "\n") {
				b.WriteString("\n")
			}
		}
		fmt.Fprintf(&b, "--- exit %d\n", code)
		if g.format == "json" {
			name += ".json"
		}
		g.golden(name+".txt", b.String())
		return
	}
	doc := out
	if strings.TrimSpace(doc) == "" {
		doc = errOut
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() == "EOF" {
				break
			}
			g.T.Errorf("%s: zbrecover %s printed no JSON (exit %d): %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), code, err, out, errOut)
			break
		}
	}
	g.golden(name+".json", doc)
	exit := filepath.Join("testdata", name+".json.exit")
	switch _, err := os.Stat(exit); {
	case code != 0:
		g.golden(name+".json.exit", strconv.Itoa(code)+"\n")
	case *update:
		_ = os.Remove(exit)
	case err == nil:
		g.T.Errorf("%s: zbrecover %s exited 0, %s says it fails", name, strings.Join(args, " "), exit)
	}
}

// normalize replaces what differs between runs of the test by placeholders: the paths of
// the test's folders, the binary and the workspace, the Go release and platform the binary
// was built with and for, the machine's host and user names; run
// ids and UUIDs (table ids, query ids) numbered in order of appearance, so that the goldens
// still say which are the same; then replacements.
func (g *goldens) normalize(s string) string {
	host := g.Env["DATABRICKS_HOST"]
	pairs := []string{g.tmp, "<TMP>", g.State, "<STATE>", g.Home, "<HOME>", g.Release, "zbrecover",
		host, "<HOST>", strings.TrimPrefix(host, "http://"), "<HOST>",
		runtime.Version(), "<GO>", runtime.GOOS + "/" + runtime.GOARCH, "<PLATFORM>"}
	s = strings.NewReplacer(pairs...).Replace(s)
	// A keys file's name ends in when it was written and a random part, as a run id does.
	s = keysFileStamp.ReplaceAllString(s, "-<WRITTEN>.parquet")
	if h, err := os.Hostname(); err == nil && h != "" {
		s = strings.NewReplacer(" on "+h+" ", " on <MACHINE> ", `"host": "`+h+`"`, `"host": "<MACHINE>"`).Replace(s)
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		s = strings.NewReplacer("| "+u.Username+" (", "| <USER> (", "| "+u.Username+" on ", "| <USER> on ",
			`"user": "`+u.Username+`"`, `"user": "<USER>"`).Replace(s)
	}
	for _, n := range []struct {
		re     *regexp.Regexp
		prefix string
	}{{runID, "RUN"}, {uuid, "ID"}} {
		s = n.re.ReplaceAllStringFunc(s, func(id string) string {
			if _, ok := g.ids[id]; !ok {
				k := 1
				for _, v := range g.ids {
					if strings.HasPrefix(v, "<"+n.prefix) {
						k++
					}
				}
				g.ids[id] = fmt.Sprintf("<%s%d>", n.prefix, k)
			}
			return g.ids[id]
		})
	}
	for _, r := range replacements {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}

var (
	runID         = regexp.MustCompile(`\d{8}T\d{6}Z-[0-9a-f]{8}`)
	keysFileStamp = regexp.MustCompile(`-\d{8}T\d{6}Z-[0-9a-f]{8}\.parquet`)
	uuid          = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
)

// replacements are the other parts that differ between runs, each named by its placeholder.
var replacements = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`), "<TIME>"},
	{regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|us|ms|s|m\d+(\.\d+)?s|h\d+m\d+(\.\d+)?s)\b`), "<DUR>"},
	// A staged copy's name ends in a digest of the table id and the file's version (its
	// modification time here).
	{regexp.MustCompile(`~[0-9a-f]{16}\.parquet`), "~<FILEID>.parquet"},
	// doctor's probe object is named at random.
	{regexp.MustCompile(`zbrecover-doctor-probe-[0-9a-f]+`), "zbrecover-doctor-probe-<RANDOM>"},
	// Times the commands measure.
	{regexp.MustCompile(`\(\d+\.\d s\)`), "(<DUR>)"},
	{regexp.MustCompile(`"(elapsed_ms|duration_ms)":( ?)\d+`), `"$1":$2<MS>`},
}

// golden compares got, normalized, with testdata/name, or writes it under -update.
func (g *goldens) golden(name, got string) {
	g.T.Helper()
	got = g.normalize(got)
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			g.T.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			g.T.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		g.T.Fatalf("%v (go test -tags 'duckdb demo' ./e2e/golden -update writes it)", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		g.T.Errorf("%s differs from what the binary printed (-update rewrites it):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// walk is the whole recovery of the table.
func (g *goldens) walk() {
	t := g.T
	table := g.table
	stage := stageTo + strings.TrimPrefix(table, "main.sales.")
	fix := []string{"--rename", "customer_id=customer_key", "--stage-to", stage, "--batch-files", strconv.Itoa(batchFiles), "--key", "id", "--no-progress"}
	reload := func(extra ...string) []string { return append(append([]string{"reload", table}, fix...), extra...) }

	g.step("02-doctor", "doctor", table, "--stage-to", stage, "--no-progress")
	// A mistyped volume: doctor says it does not exist and names the schema's volumes.
	g.step("02a-doctor-mistyped-volume", "doctor", table, "--stage-to", "/Volumes/main/sales/stagin/x", "--no-progress")
	g.step("02b-schema", "schema", table)
	g.step("02c-schema-warehouse", "schema", table, "--from", "warehouse")
	g.step("02d-ls", "ls", "file://"+g.root+"/"+fallback.Prefix)
	g.step("03-inspect", "inspect", table, "--no-progress")
	g.step("04-preview", "preview", table, "-n", "3", "--no-progress")
	g.step("05-reload-blocked", "reload", table, "--stage-to", stage, "--dry-run", "--no-progress")
	g.step("06-reload-dry-run", reload("--dry-run")...)

	// The warehouse fails the third batch's COPY INTO: the run stops there.
	g.Apply(map[string]any{"faults": []map[string]any{{
		"match": "^COPY INTO `main`.`sales`.`" + strings.TrimPrefix(table, "main.sales.") + "` .*FILEFORMAT = PARQUET FILES",
		"skip":  2, "times": 1, "action": "error",
		"error": map[string]any{"class": "INTERNAL_ERROR", "sqlstate": "XX000", "message": "the warehouse lost its executor"}}}})
	if code, _ := g.step("07-reload-interrupted", reload("--yes")...); code == 0 {
		t.Fatal("the reload the warehouse interrupted exited 0")
	}
	g.ClearFaults()
	g.step("07b-reload-continue-dry-run", reload("--dry-run")...)
	g.stepTerminal("08-reload-continue-prompt", "n", reload()...)
	if code, _ := g.step("09-reload-resumed", reload("--yes")...); code != 0 {
		t.Fatalf("the resumed reload: exit %d", code)
	}
	g.step("10-reload-again", reload("--yes")...)
	// The staged copies, under the folder named by the table's id (the keys file beside it is
	// written with its own run's stamp: its size varies).
	g.step("10b-ls-staged", "ls", stage+"/"+g.tableID()+"/")

	g.step("11-verify", "verify", table, "--no-progress")
	g.step("12-verify-key", "verify", table, "--key", "id", "--no-progress")
	// Before cleanup, undo could take the run back by its files or its keys.
	g.step("12b-undo-dry-run", "undo", table, "--dry-run", "--no-progress")
	// Undo carried out: the run's rows deleted by the evidence its plan chose; then the same
	// fix loaded again (the redo, through fresh staged paths) and verified.
	if code, _ := g.step("12c-undo", "undo", table, "--yes", "--no-progress"); code != 0 {
		t.Fatalf("undo: exit %d", code)
	}
	if got := g.Count("SELECT count(*) FROM " + table); got != 0 {
		t.Errorf("after undo %s holds %d rows, want 0", table, got)
	}
	if code, _ := g.step("12d-reload-redo", reload("--yes")...); code != 0 {
		t.Fatalf("the redo: exit %d", code)
	}
	g.step("12e-verify-redo", "verify", table, "--key", "id", "--no-progress")
	g.step("13-cleanup-min-age", "cleanup", table, "--min-age", "3d", "--dry-run", "--no-progress")
	// Without --yes, on a terminal, cleanup prints the plan and asks nothing (were it to ask,
	// "n" would answer and the golden would show the question).
	g.stepTerminal("13-cleanup-plan-terminal", "n", "cleanup", table, "--no-progress")
	g.step("14-cleanup-dry-run", "cleanup", table, "--dry-run", "--no-progress")
	if code, _ := g.step("15-cleanup", "cleanup", table, "--yes", "--no-progress"); code != 0 {
		t.Fatalf("cleanup: exit %d", code)
	}
	_, out := g.step("16-history", "history", table)
	run := g.latestRun(out)
	g.step("17-history-run", "history", table, "--run", run)
	summary := filepath.Join(g.tmp, "incident_"+g.format+map[string]string{"text": ".md", "json": ".json"}[g.format])
	g.step("18-history-summary", "history", table, "--run", run, "--summary", summary)
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if g.format == "json" {
		g.golden("18-summary-file.json", string(b))
	} else {
		g.golden("18-summary-file.md", string(b))
	}
	g.step("19-undo-dry-run-after-cleanup", "undo", table, "--dry-run", "--no-progress")
	if n := e2etest.FallbackLeft(t, g.root); n != 0 {
		t.Errorf("%d parked files left after cleanup", n)
	}
	// watch, one cycle, over files parked since in the table's own schema: it loads them,
	// verifies the run and (--cleanup-after 1ns) deletes them. Its events are JSON lines in
	// either walk.
	g.parkMore()
	if code, _ := g.step("20-watch-once", "watch", "main.sales", "--table-pattern", strings.TrimPrefix(table, "main.sales."), "--once", "--single-host",
		"--stage-to", stage, "--min-age", "0", "--cleanup-after", "1ns"); code != 0 {
		t.Errorf("watch --once: exit %d", code)
	}
	if n := e2etest.FallbackLeft(t, g.root); n != 0 {
		t.Errorf("%d parked files left after watch", n)
	}
	if got, distinct := g.Count("SELECT count(*) FROM "+table), g.Count("SELECT count(DISTINCT id) FROM "+table); got != distinct || got != nFiles*rowsPerFile+laterFiles {
		t.Errorf("%s holds %d rows, %d distinct ids, want %d once each", table, got, distinct, nFiles*rowsPerFile+laterFiles)
	}
}

// laterFiles is how many one-row files parkMore parks, in the table's own schema.
const laterFiles = 3

// parkMore parks laterFiles one-row files written in the table's own schema (ids after the
// fixture's), in a date folder of their own.
func (g *goldens) parkMore() {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer_key", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 4}, Nullable: true}}, nil)
	for i := 0; i < laterFiles; i++ {
		id := nFiles*rowsPerFile + i + 1
		data, err := pqgen.Bytes(schema, fmt.Sprintf(`[{"id":%d,"customer_key":"c%d","amount":"%d.5000"}]`, id, id, id), pqgen.Options{})
		if err != nil {
			g.T.Fatal(err)
		}
		key := fmt.Sprintf("2026-02-01/part-%05d.parquet", 100+i)
		if err := pqgen.WriteFile(filepath.Join(g.root, filepath.FromSlash(fallback.Prefix), filepath.FromSlash(key)), data); err != nil {
			g.T.Fatal(err)
		}
	}
}

// tableID is the table's id, as scan reports it.
func (g *goldens) tableID() string {
	g.T.Helper()
	code, out, errOut := g.Run("-o", "json", "scan", "main")
	var doc struct {
		Tables []struct {
			Name string `json:"name"`
			ID   string `json:"table_id"`
		} `json:"tables"`
	}
	e2etest.DecodeInto(g.T, out, &doc)
	for _, t := range doc.Tables {
		if t.Name == g.table && t.ID != "" {
			return t.ID
		}
	}
	g.T.Fatalf("scan (exit %d) reports no id of %s\n%s\n%s", code, g.table, out, errOut)
	return ""
}

// latestRun is the run id history printed first.
func (g *goldens) latestRun(out string) string {
	g.T.Helper()
	id := runID.FindString(out)
	if id == "" {
		g.T.Fatalf("history printed no run:\n%s", out)
	}
	return id
}

// messages are what the binary prints after the usual mistakes: a profile's name mistyped;
// --profile with the workspace's variables set and no config file; a bare word for a table;
// a table's name mistyped; a run id that names no run; a reload staged to a mistyped volume
// (refused before anything is journaled). In messages.txt the transcript, in
// messages.jsonl the error document of each under -o json. (--min-age 3d, accepted, is
// step 13 of the walk.)
func (g *goldens) messages() {
	cfg := filepath.Join(g.tmp, "databrickscfg")
	if err := os.WriteFile(cfg, []byte("[DEFAULT]\nhost = "+g.Env["DATABRICKS_HOST"]+"\ntoken = "+g.Env["DATABRICKS_TOKEN"]+
		"\n\n[prod]\nhost = https://prod.example.com\ntoken = t\n\n[staging]\nhost = https://staging.example.com\ntoken = t\n"), 0o600); err != nil {
		g.T.Fatal(err)
	}
	var text, jsonl strings.Builder
	// step runs args in text and under -o json, with the workspace's settings changed by env
	// ("-" unsets a variable), in a folder with no file named like a table.
	step := func(env map[string]string, args ...string) {
		g.T.Helper()
		var vars []string
		for k, v := range env {
			vars = append(vars, k+"="+v)
		}
		sort.Strings(vars)
		if len(vars) > 0 {
			fmt.Fprintf(&text, "# %s\n", strings.ReplaceAll(strings.Join(vars, " "), "=-", " unset"))
		}
		for _, f := range []string{"text", "json"} {
			full := args
			if f == "json" {
				full = append([]string{"-o", "json"}, args...)
			}
			cmd := g.Command(full...)
			for k, v := range env {
				cmd.Env = slicesDelete(cmd.Env, k)
				if v != "-" {
					cmd.Env = append(cmd.Env, k+"="+v)
				}
			}
			cmd.Dir = g.tmp
			var out, errOut strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errOut
			code := 0
			if err := cmd.Run(); err != nil {
				if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
					g.T.Fatalf("zbrecover %s: %v\n%s", strings.Join(full, " "), err, errOut.String())
				}
				code = cmd.ProcessState.ExitCode()
			}
			if f == "text" {
				fmt.Fprintf(&text, "$ zbrecover %s\n%s%s[exit %d]\n\n", strings.Join(full, " "), out.String(), errOut.String(), code)
			} else if code != 0 {
				jsonl.WriteString(errOut.String())
			}
		}
	}
	none := map[string]string{"DATABRICKS_HOST": "-", "DATABRICKS_TOKEN": "-", "DATABRICKS_WAREHOUSE_ID": "-", "DATABRICKS_CONFIG_FILE": cfg}
	step(none, "schema", g.table, "-p", "prdo")
	step(map[string]string{"DATABRICKS_CONFIG_FILE": filepath.Join(g.tmp, "no-such-cfg")}, "schema", g.table, "-p", "prod")
	step(nil, "inspect", "orders")
	step(nil, "inspect", "main.sales.ordres_text")
	step(nil, "history", g.table, "--run", "nope")
	step(nil, "reload", g.table, "--rename", "customer_id=customer_key", "--stage-to", "/Volumes/main/sales/stagin/x", "--yes", "--no-progress")
	g.golden("messages.txt", text.String())
	g.golden("messages.jsonl", jsonl.String())
}

// slicesDelete removes the variable k from env.
func slicesDelete(env []string, k string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, k+"=") {
			out = append(out, kv)
		}
	}
	return out
}
