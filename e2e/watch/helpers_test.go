//go:build demo && cgo

package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/journal"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// The tables' schema: the Zerobus writers' producers send these three columns; a break drops
// note, which their records still carry.
var (
	tableSchema = sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("customer", sd.StringType).Col("note", sd.StringType)
	fileSchema  = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
)

const stageTo = "/Volumes/main/sales/staging/watch"

// site is `zbrecover demo serve` with n managed tables main.sales.t00 … (Zerobus writers that
// park on some), a journal on the S3 emulator, and the release binary to run watchers with.
type site struct {
	t       *testing.T
	ctx     context.Context
	dir     string
	tables  []string
	roots   map[string]string
	ws      *e2etest.ServedWorkspace
	s       *e2etest.Served
	journal string
	s3URL   string
	global  []string // the storage flags that reach the journal
}

// newSite starts demo serve with n tables; writers lists the tables given a parking Zerobus
// writer flushing every interval.
func newSite(t *testing.T, timeout time.Duration, n int, writers []int, interval time.Duration) *site {
	t.Helper()
	demoBin, release := e2etest.Demo(t), e2etest.Release(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	dir := t.TempDir()
	s := &site{t: t, ctx: ctx, dir: dir, roots: map[string]string{}}
	for i := range n {
		name := fmt.Sprintf("t%02d", i)
		root := filepath.Join(dir, "tables", "main", "sales", name)
		if _, err := deltatest.Write(root, deltatest.Table{Schema: tableSchema, Time: time.Now().Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
		full := "main.sales." + name
		s.tables = append(s.tables, full)
		s.roots[full] = root
	}
	args := []string{"--tables-from", filepath.Join(dir, "tables"), "--zerobus-interval", interval.String()}
	for _, i := range writers {
		args = append(args, "--zerobus", s.tables[i])
	}
	s.ws = e2etest.StartDemoServe(ctx, t, demoBin, args...)
	srv := s3test.NewServer(t)
	env := map[string]string{"AWS_ACCESS_KEY_ID": s3test.AccessKeyID, "AWS_SECRET_ACCESS_KEY": s3test.SecretAccessKey, "AWS_REGION": s3test.Region}
	for k, v := range s.ws.Env {
		env[k] = v
	}
	s.s = e2etest.NewServed(ctx, t, release, env)
	s.journal, s.s3URL = srv.URLFor("zbrecover/journal"), srv.URL
	s.global = []string{"--s3-endpoint", srv.URL, "--s3-region", s3test.Region}
	return s
}

// writeFiles parks n one-row files in table (ids first+1 … first+n) over folders date folders:
// one batch per folder.
func (s *site) writeFiles(table string, first, n, folders int) {
	s.t.Helper()
	for i := range n {
		id := first + i + 1
		data, err := pqgen.Bytes(fileSchema, fmt.Sprintf(`[{"id":%d,"customer":"c%d","note":"n%d"}]`, id, id, id), pqgen.Options{})
		if err != nil {
			s.t.Fatal(err)
		}
		p := filepath.Join(s.roots[table], filepath.FromSlash(fallback.Prefix), fmt.Sprintf("2026-01-%02d", 1+i%folders), fmt.Sprintf("f%06d.parquet", id))
		if err := pqgen.WriteFile(p, data); err != nil {
			s.t.Fatal(err)
		}
	}
}

// parked counts the fallback files left in table's folder.
func (s *site) parked(table string) int {
	n := 0
	_ = filepath.WalkDir(filepath.Join(s.roots[table], filepath.FromSlash(fallback.Prefix)), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") && !strings.HasPrefix(d.Name(), "_") {
			n++
		}
		return nil
	})
	return n
}

// rows returns the table's rows, distinct ids and largest id.
func (s *site) rows(table string) (rows, distinct, maxID int64) {
	s.t.Helper()
	n := s.s.Numbers("SELECT count(*), count(DISTINCT id), coalesce(max(id), 0) FROM "+table, 3)
	return n[0], n[1], n[2]
}

// schema breaks or fixes a table's schema through the control endpoint.
func (s *site) schema(table, action string) {
	s.t.Helper()
	s.s.Control(http.MethodPost, "schema", map[string]any{"table": table, "action": action})
}

// writer is a Zerobus writer as the workspace reports it.
type writer struct {
	ID          int    `json:"id"`
	Table       string `json:"table"`
	Rows        int64  `json:"rows"`
	ParkedFiles int    `json:"parked_files"`
	ParkedRows  int64  `json:"parked_rows"`
	Running     bool   `json:"running"`
}

func (s *site) writers() []writer {
	s.t.Helper()
	var doc struct {
		Writers []writer `json:"writers"`
	}
	e2etest.DecodeInto(s.t, s.s.Control(http.MethodGet, "zerobus", nil), &doc)
	return doc.Writers
}

// stopWriters stops every writer and returns the rows each produced, by table.
func (s *site) stopWriters() map[string]int64 {
	s.t.Helper()
	out := map[string]int64{}
	for _, w := range s.writers() {
		var info writer
		e2etest.DecodeInto(s.t, s.s.Control(http.MethodDelete, fmt.Sprintf("zerobus/%d", w.ID), nil), &info)
		out[info.Table] = info.Rows
	}
	return out
}

// event is a watcher's JSON line, the members the tests read.
type event struct {
	SchemaVersion int       `json:"schema_version"`
	Time          time.Time `json:"time"`
	Event         string    `json:"event"`
	Cycle         int       `json:"cycle"`
	Table         string    `json:"table"`
	Run           string    `json:"run"`
	Alert         bool      `json:"alert"`
	Batch         int       `json:"batch"`
	Status        string    `json:"status"`
	Files         int       `json:"files"`
	InsertedRows  int64     `json:"inserted_rows"`
	Deleted       int       `json:"deleted"`
	Kind          string    `json:"kind"`
	Error         string    `json:"error"`
	Holder        string    `json:"holder"`
	Reason        string    `json:"reason"`
	Blocked       []struct {
		DDL []string `json:"ddl"`
	} `json:"blocked_groups"`
}

// watcher is a running `zbrecover watch` and what it printed.
type watcher struct {
	t      *testing.T
	cmd    *exec.Cmd
	mu     sync.Mutex
	events []event
	bad    []string // lines that are not events
	stderr *strings.Builder
	exited chan struct{}
}

// startWatch starts the release binary's watch on main.sales with the site's journal and args.
func (s *site) startWatch(args ...string) *watcher {
	s.t.Helper()
	full := append(append([]string(nil), s.global...), "watch", "main.sales", "--stage-to", stageTo, "--journal", s.journal, "--min-age", "0")
	cmd := s.s.Command(append(full, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	w := &watcher{t: s.t, cmd: cmd, stderr: &strings.Builder{}, exited: make(chan struct{})}
	cmd.Stderr = w.stderr
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-w.exited
		}
	})
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			var e event
			line := sc.Text()
			w.mu.Lock()
			if err := json.Unmarshal([]byte(line), &e); err != nil || e.Event == "" || e.SchemaVersion != 2 {
				w.bad = append(w.bad, line)
			} else {
				w.events = append(w.events, e)
			}
			w.mu.Unlock()
		}
	}()
	go func() {
		<-read
		_ = cmd.Wait()
		close(w.exited)
	}()
	return w
}

// all returns the events so far.
func (w *watcher) all() []event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]event(nil), w.events...)
}

// has reports whether an event of kind for table was printed after from (its index).
func (w *watcher) has(kind, table string, from int) bool {
	for _, e := range w.all()[from:] {
		if e.Event == kind && (table == "" || e.Table == table) {
			return true
		}
	}
	return false
}

// waitFor polls cond every 100 ms until it holds; the watcher exiting, or the deadline, fails
// the test.
func (w *watcher) waitFor(d time.Duration, what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		select {
		case <-w.exited:
			w.t.Fatalf("the watcher exited while waiting for %s: %v\nstderr: %s", what, w.cmd.ProcessState, w.stderr)
		default:
		}
		if time.Now().After(deadline) {
			events := w.all()
			var tail []string
			for _, e := range events[max(0, len(events)-15):] {
				tail = append(tail, fmt.Sprintf("%s %s %s %s %s", e.Event, e.Table, e.Status, e.Error, e.Reason))
			}
			w.t.Fatalf("waited %s for %s\nlast events:\n%s\nstderr: %.3000s", d, what, strings.Join(tail, "\n"), w.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// terminate sends SIGTERM and waits for the exit: it returns the exit code and how long the
// watcher took to stop.
func (w *watcher) terminate(limit time.Duration) (int, time.Duration) {
	w.t.Helper()
	start := time.Now()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		w.t.Fatal(err)
	}
	select {
	case <-w.exited:
	case <-time.After(limit):
		// Where it is stuck: SIGQUIT makes the Go runtime print every goroutine's stack.
		_ = w.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-w.exited:
		case <-time.After(10 * time.Second):
		}
		events := w.all()
		var tail []string
		for _, e := range events[max(0, len(events)-10):] {
			tail = append(tail, fmt.Sprintf("%s %s %s %s %s", e.Event, e.Table, e.Status, e.Error, e.Reason))
		}
		w.t.Fatalf("the watcher did not stop within %s of SIGTERM\nlast events:\n%s\nstderr and stacks: %s", limit, strings.Join(tail, "\n"), w.stderr)
	}
	return w.cmd.ProcessState.ExitCode(), time.Since(start)
}

// kill sends SIGKILL and waits for the exit.
func (w *watcher) kill() {
	w.t.Helper()
	_ = w.cmd.Process.Kill()
	<-w.exited
}

// checkLines fails the test for any stdout line that is not an event.
func (w *watcher) checkLines() {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.bad) > 0 {
		w.t.Errorf("stdout lines that are not events: %q", w.bad)
	}
}

// freeAddr returns a free 127.0.0.1 address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// scrape reads the metrics endpoint: each sample of name by its table label ("" without).
func scrape(ctx context.Context, addr, name string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		label := ""
		if i := strings.Index(series, `table="`); i >= 0 {
			label = series[i+len(`table="`):]
			label = label[:strings.IndexByte(label, '"')]
		}
		out[label] = v
	}
	return out, nil
}

// journalFiles reads every run of table through history -o json: each file's batch state and
// deletion, by run.
func (s *site) journalFiles(table string) map[string][]journalFile {
	s.t.Helper()
	with := func(args ...string) []string {
		return append(append(append([]string(nil), s.global...), args...), "--journal", s.journal)
	}
	code, out, errOut := s.s.Run(with("-o", "json", "history", table)...)
	if code != 0 {
		s.t.Fatalf("history %s: exit %d\n%s", table, code, errOut)
	}
	var list struct {
		Runs []struct {
			Run    string `json:"run"`
			Status string `json:"status"`
		} `json:"runs"`
	}
	e2etest.DecodeInto(s.t, out, &list)
	runs := map[string][]journalFile{}
	for _, r := range list.Runs {
		code, out, errOut := s.s.Run(with("-o", "json", "history", table, "--run", r.Run)...)
		if code != 0 {
			s.t.Fatalf("history --run %s: exit %d\n%s", r.Run, code, errOut)
		}
		var doc struct {
			Status string        `json:"status"`
			Files  []journalFile `json:"files"`
		}
		e2etest.DecodeInto(s.t, out, &doc)
		for i := range doc.Files {
			doc.Files[i].RunStatus = doc.Status
		}
		runs[r.Run] = doc.Files
	}
	return runs
}

// checkDeleteTimes reads every run of the journal (on the S3 emulator) record by record: every
// file a delete intent names belongs to a batch verified at least after before the intent
// was written, by the records' own times.
func (s *site) checkDeleteTimes(after time.Duration) (deleted int) {
	t := s.t
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretAccessKey)
	b, err := all.Registry().Open(s.ctx, s.journal, storage.Config{S3Endpoint: s.s3URL, S3Region: s3test.Region})
	if err != nil {
		t.Fatal(err)
	}
	store, err := journal.OpenRemote(b)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := store.Tables(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range tables {
		runs, err := store.RunIDs(s.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range runs {
			log, err := store.Read(s.ctx, id, run)
			if err != nil {
				t.Fatal(err)
			}
			batchOf := map[string]int{}
			verified := map[int]time.Time{}
			for _, r := range log.Records {
				switch {
				case r.Plan != nil:
					for _, pb := range r.Plan.Batches {
						for _, f := range pb.Files {
							batchOf[f.Key] = pb.Batch
						}
					}
				case r.Outcome != nil && r.Outcome.Status == journal.BatchVerified:
					if _, ok := verified[r.Outcome.Batch]; !ok {
						verified[r.Outcome.Batch] = r.Time
					}
				case r.Kind == journal.KindDeleteIntent && r.Deletion != nil:
					for _, f := range r.Deletion.Files {
						deleted++
						v, ok := verified[batchOf[f.Key]]
						switch {
						case !ok:
							t.Errorf("run %s: %s deleted, its batch %d never verified", run, f.Key, batchOf[f.Key])
						case r.Time.Sub(v) < after:
							t.Errorf("run %s: %s deleted %s after its batch was verified, sooner than %s", run, f.Key, r.Time.Sub(v), after)
						}
					}
				}
			}
		}
	}
	return deleted
}

type journalFile struct {
	Key       string `json:"key"`
	Batch     int    `json:"batch"`
	State     string `json:"state"`
	Deleted   string `json:"deleted"`
	RunStatus string `json:"-"`
}
