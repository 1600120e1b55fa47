//go:build demo && cgo

package served

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// scanFixture is the workspace TestScanDemoServe scans: 300 registered tables, 297 of them
// managed tables under tables/main/<schema>/<table>/, one managed table on S3 (t297) and two
// external tables, listed in more.txt.
type scanFixture struct {
	dir    string
	parked map[string]parkedWant // by table name
	broken map[string]string     // unreadable table → a phrase of its reason
	gate   *listGate
	s3     *s3test.Server
	s3URL  string // the gate in front of the emulator
}

type parkedWant struct {
	files, bytes, folders int64
	oldest, newest        time.Time // zero: not checked (S3 sets the times)
}

// listGate holds S3 list requests under one key prefix while closed.
type listGate struct {
	prefix string
	mu     sync.Mutex
	open   chan struct{}
	held   int
}

func (g *listGate) close() {
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
}

func (g *listGate) release() {
	g.mu.Lock()
	if g.open != nil {
		close(g.open)
		g.open = nil
	}
	g.mu.Unlock()
}

func (g *listGate) heldCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held
}

func (g *listGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Query().Get("prefix"), g.prefix) {
			g.mu.Lock()
			ch := g.open
			if ch != nil {
				g.held++
			}
			g.mu.Unlock()
			if ch != nil {
				select {
				case <-ch:
				case <-r.Context().Done():
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func writeScanFixture(t *testing.T) *scanFixture {
	t.Helper()
	fx := &scanFixture{dir: t.TempDir(), parked: map[string]parkedWant{}, broken: map[string]string{}}
	schema := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("payload", sd.StringType)
	schemaOf := func(i int) string { return []string{"sales", "ops", "hr"}[i/100] }
	rootOf := func(i int) string {
		return filepath.Join(fx.dir, "tables", "main", schemaOf(i), fmt.Sprintf("t%03d", i))
	}
	for i := range 297 {
		if _, err := deltatest.Write(rootOf(i), deltatest.Table{Schema: schema}); err != nil {
			t.Fatal(err)
		}
	}
	day := time.Date(2026, 2, 1, 8, 0, 0, 0, time.UTC)
	put := func(root, rel string, size int, mod time.Time) {
		p := filepath.Join(root, "_zerobus", "table_rejected_parquets", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte("z"), size), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	// Eleven local tables with parked files; t150 holds 10,000 of them over 10 date folders.
	for _, i := range []int{3, 17, 42, 64, 99, 120, 150, 188, 201, 230, 260} {
		n, folders := i%7+1, min(i%7+1, 3)
		if i == 150 {
			n, folders = 10000, 10
		}
		var w parkedWant
		for k := range n {
			mod := day.Add(time.Duration(k%folders)*24*time.Hour + time.Duration(k)*time.Second)
			size := 100 + k%50
			put(rootOf(i), fmt.Sprintf("2026-02-%02d/part-%05d-%d.c000.snappy.parquet", 1+k%folders, k, i), size, mod)
			w.files++
			w.bytes += int64(size)
			if w.oldest.IsZero() || mod.Before(w.oldest) {
				w.oldest = mod
			}
			if mod.After(w.newest) {
				w.newest = mod
			}
		}
		w.folders = int64(folders)
		fx.parked[fmt.Sprintf("main.%s.t%03d", schemaOf(i), i)] = w
	}
	// Clean tables with objects that are not fallback files: a job marker, a checksum, a
	// temporary folder.
	put(rootOf(5), "2026-02-01/_SUCCESS", 0, day)
	put(rootOf(6), "2026-02-01/.part-0.parquet.crc", 12, day)
	put(rootOf(7), "_temporary/part-0.parquet", 40, day)

	// The table on S3, behind a gate that can hold its fallback folder's listing.
	fx.s3 = s3test.NewServer(t)
	fx.gate = &listGate{prefix: "main/hr/t297/_zerobus/"}
	front := httptest.NewServer(fx.gate.wrap(fx.s3.Front))
	t.Cleanup(front.Close)
	fx.s3URL = front.URL
	logDir := filepath.Join(t.TempDir(), "t297")
	if _, err := deltatest.Write(logDir, deltatest.Table{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(logDir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(logDir, "_delta_log", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := fx.s3.Put("main/hr/t297/_delta_log/"+e.Name(), b); err != nil {
			t.Fatal(err)
		}
	}
	var s3bytes int64
	for k := range 3 {
		data := bytes.Repeat([]byte("s"), 300+k)
		s3bytes += int64(len(data))
		if err := fx.s3.Put(fmt.Sprintf("main/hr/t297/_zerobus/table_rejected_parquets/2026-02-0%d/part-%d.parquet", 1+k, k), data); err != nil {
			t.Fatal(err)
		}
	}
	fx.parked["main.hr.t297"] = parkedWant{files: 3, bytes: s3bytes, folders: 3}

	// Two external tables, listed with the S3 one in a file.
	for _, n := range []string{"e1", "e2"} {
		if _, err := deltatest.Write(filepath.Join(fx.dir, "ext", n), deltatest.Table{Schema: schema}); err != nil {
			t.Fatal(err)
		}
	}
	more := "# the S3 table and two external tables\nmain.hr.t297=s3://" + fx.s3.Bucket + "/main/hr/t297\n" +
		"external main.ext.e1=ext/e1\nexternal main.ext.e2=ext/e2\n"
	if err := os.WriteFile(filepath.Join(fx.dir, "more.txt"), []byte(more), 0o644); err != nil {
		t.Fatal(err)
	}
	return fx
}

// breakTables makes three registered tables unreadable in three ways: a root removed, a root
// replaced by a file, a fallback folder reached through a symbolic link out of the root.
func (fx *scanFixture) breakTables(t *testing.T) {
	t.Helper()
	root := func(schema string, i int) string {
		return filepath.Join(fx.dir, "tables", "main", schema, fmt.Sprintf("t%03d", i))
	}
	if err := os.RemoveAll(root("sales", 10)); err != nil {
		t.Fatal(err)
	}
	fx.broken["main.sales.t010"] = "does not exist"
	if err := os.RemoveAll(root("ops", 110)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root("ops", 110), []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	fx.broken["main.ops.t110"] = "is a file, not a directory"
	outside := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.MkdirAll(filepath.Join(outside, "table_rejected_parquets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root("hr", 210), "_zerobus")); err != nil {
		t.Fatal(err)
	}
	fx.broken["main.hr.t210"] = "symbolic link, not followed"
}

// TestScanDemoServe runs the release binary's scan against `zbrecover demo serve` with 300
// registered tables: 12 hold fallback files (one 10,000), 3 cannot be read, 2 are external.
// The scan names exactly the 12 with their files and bytes and the 3 with their reasons, and
// exits 0; with --exit-code it exits 6; -o jsonl writes each table as it completes (a table
// whose listing is held arrives after tables listed meanwhile, and before the totals);
// --summary writes the Markdown.
func TestScanDemoServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	fx := writeScanFixture(t)
	demoBin := e2etest.Demo(t)
	release := e2etest.Release(t)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretAccessKey)
	storageFlags := []string{"--s3-endpoint", fx.s3URL, "--s3-region", s3test.Region}
	served := e2etest.StartDemoServe(ctx, t, demoBin, append([]string{"--tables-from", filepath.Join(fx.dir, "tables"),
		"--tables-from", filepath.Join(fx.dir, "more.txt")}, storageFlags...)...)
	fx.breakTables(t)

	home := t.TempDir()
	command := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, release, append(args, storageFlags...)...)
		cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"),
			"AWS_ACCESS_KEY_ID=" + s3test.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + s3test.SecretAccessKey}
		for k, v := range served.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		return cmd
	}
	run := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := command(args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			return 0, out.String(), errb.String()
		case errors.As(err, &ee):
			return ee.ExitCode(), out.String(), errb.String()
		}
		t.Fatalf("zbrecover %s: %v", strings.Join(args, " "), err)
		return 0, "", ""
	}

	// JSON: exactly the 12, with their files and bytes; exactly the 3, with their reasons.
	code, out, errOut := run("scan", "main", "-o", "json")
	if code != 0 {
		t.Fatalf("scan -o json: exit %d\n%s", code, errOut)
	}
	var doc struct {
		Tables []struct {
			Name, Status, Error, Next string
			Files, Bytes              int64
			DateFolders               int64 `json:"date_folders"`
			Oldest, Newest            *time.Time
			OtherObjects              int64 `json:"other_objects"`
		}
		Totals    map[string]any
		ElapsedMS int64 `json:"elapsed_ms"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("scan of 298 tables (10,040 files): %d ms", doc.ElapsedMS)
	parked, broken := map[string]bool{}, map[string]bool{}
	for _, tb := range doc.Tables {
		switch tb.Status {
		case "parked":
			parked[tb.Name] = true
			w, ok := fx.parked[tb.Name]
			if !ok {
				t.Errorf("%s reported parked: %+v", tb.Name, tb)
				continue
			}
			if tb.Files != w.files || tb.Bytes != w.bytes || tb.DateFolders != w.folders ||
				!w.oldest.IsZero() && (!tb.Oldest.Equal(w.oldest) || !tb.Newest.Equal(w.newest)) {
				t.Errorf("%s: %d files, %d bytes, %d folders, %v – %v; want %+v", tb.Name, tb.Files, tb.Bytes, tb.DateFolders, tb.Oldest, tb.Newest, w)
			}
			if !strings.HasPrefix(tb.Next, "zbrecover inspect --table "+tb.Name+" --s3-region us-east-1 --s3-endpoint ") {
				t.Errorf("%s: next %q", tb.Name, tb.Next)
			}
		case "unreadable":
			broken[tb.Name] = true
			if want, ok := fx.broken[tb.Name]; !ok || !strings.Contains(tb.Error, want) {
				t.Errorf("%s unreadable: %q, want a reason with %q", tb.Name, tb.Error, fx.broken[tb.Name])
			}
			if !strings.HasPrefix(tb.Next, "zbrecover doctor --table "+tb.Name) {
				t.Errorf("%s: next %q", tb.Name, tb.Next)
			}
		case "clean":
			if tb.Files != 0 {
				t.Errorf("%s clean with %d files", tb.Name, tb.Files)
			}
		}
	}
	if len(parked) != 12 || len(broken) != 3 {
		t.Errorf("%d parked, %d unreadable; want 12 and 3", len(parked), len(broken))
	}
	tot := doc.Totals
	if tot["listed"] != 300.0 || tot["scanned"] != 298.0 || tot["skipped"] != 2.0 || tot["clean"] != 283.0 || tot["files"] != 10040.0 {
		t.Errorf("totals %v", tot)
	}

	// Text: the 12 first, each with its inspect command; the 3 with their reasons; exit 0.
	code, out, errOut = run("scan", "main")
	if code != 0 {
		t.Fatalf("scan: exit %d\n%s", code, errOut)
	}
	words := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"Tables: 298 tables scanned: 12 with parked files, 283 clean, 3 unreadable; 2 skipped, not managed Delta tables (2 external)",
		"Tables with parked files: 12 ", "Unreadable tables: 3 ",
		"main.ops.t150 10,000 1.2 MiB 2026-02-01T08:00:00Z 2026-02-10T10:46:39Z 10 ",
		"main.sales.t042 1 100 B 2026-02-01T08:00:00Z 2026-02-01T08:00:00Z 1 ",
		"283 tables clean (no parked files).",
	} {
		if !strings.Contains(words, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	parkedAt, unreadableAt := strings.Index(out, "Tables with parked files"), strings.Index(out, "Unreadable tables")
	for name := range fx.parked {
		if i := strings.Index(out, "  zbrecover inspect --table "+name+" "); i < parkedAt || i > unreadableAt {
			t.Errorf("no inspect command for %s among the parked tables", name)
		}
	}
	for name, why := range fx.broken {
		if i := strings.Index(out, "  "+name+": "); i < unreadableAt || !strings.Contains(out[i:], why) {
			t.Errorf("%s not listed as unreadable with %q", name, why)
		}
	}
	if !strings.Contains(errOut, "3 of 298 tables could not be read") {
		t.Errorf("stderr %q", errOut)
	}

	// As a monitor.
	if code, _, errOut = run("scan", "main", "--exit-code"); code != 6 || !strings.Contains(errOut, "12 of 298 tables hold parked fallback files (10,040 files in all)") {
		t.Errorf("--exit-code: exit %d, stderr %q", code, errOut)
	}
	if code, _, _ = run("scan", "main.sales", "--exit-code", "--table-pattern", "t00[4-9]"); code != 0 {
		t.Errorf("--exit-code on clean tables: exit %d", code)
	}

	// JSON lines, as the tables complete: the S3 table's listing is held until every other
	// table has been written; it arrives after them, before the totals. (Were the lines
	// written only at the end, none would arrive while the listing is held: the watchdog then
	// releases it and the test fails.)
	fx.gate.close()
	defer fx.gate.release()
	var (
		watchdogFired sync.Once
		fired         atomic.Bool
	)
	watchdog := time.AfterFunc(90*time.Second, func() { watchdogFired.Do(func() { fired.Store(true); fx.gate.release() }) })
	defer watchdog.Stop()
	summary := filepath.Join(t.TempDir(), "scan.md")
	cmd := command("scan", "main", "-o", "jsonl", "--summary", summary)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var jlErr bytes.Buffer
	cmd.Stderr = &jlErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	releasedAfter := -1
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || len(m) != 1 {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		for k, v := range m {
			if k == "table" {
				k += " " + v.Name
			}
			kinds = append(kinds, k)
		}
		if releasedAfter < 0 && len(kinds) == 298 {
			if fx.gate.heldCount() == 0 {
				t.Errorf("the S3 table's listing was not held")
			}
			releasedAfter = len(kinds)
			watchdogFired.Do(fx.gate.release)
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("scan -o jsonl: %v\n%s", err, jlErr.String())
	}
	s3At := slices.Index(kinds, "table main.hr.t297")
	if fired.Load() || len(kinds) != 300 || kinds[0] != "scan" || kinds[len(kinds)-1] != "totals" || releasedAfter != 298 || s3At != 298 {
		t.Errorf("%d lines, released after %d (by the watchdog: %v), the S3 table at line %d; first %q, last %q",
			len(kinds), releasedAfter, fired.Load(), s3At, kinds[0], kinds[len(kinds)-1])
	}
	md, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### zbrecover scan: catalog main\n", "**Tables with parked files (12):**", "**Unreadable tables (3):**",
		"| `main.ops.t150` | 10,000 | ", "`zbrecover inspect --table main.ops.t150 --s3-region us-east-1 --s3-endpoint "} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	served.Stop()
	if !strings.Contains(served.Stderr.String(), "registered 297 tables from ") || !strings.Contains(served.Stderr.String(), "registered 3 tables from ") {
		t.Errorf("demo serve stderr: %s", served.Stderr.String())
	}
}
