package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/memstat"
)

// largeSpec shapes a journal of a long recovery: many runs of one table on one root, most of
// them verified several times and cleaned, some re-run many times after failures, some with
// batches of 1,000 files, and at the end a run still failing and a verified one not yet
// cleaned.
type largeSpec struct {
	Records int // at least this many records
	TableID string
	Table   string
	Root    string // as the records show it (tableref.Ref.Display)
}

// largeStats is what writeLargeJournal wrote.
type largeStats struct {
	Runs, Records, Files, BigRuns int
	Newest                        string // the newest run (unfinished)
	Backlog                       string // the run of 200 batches of 1,000 files
}

// largeClock gives each record its own second.
type largeClock struct{ t time.Time }

func (c *largeClock) now() time.Time { c.t = c.t.Add(time.Second); return c.t }

// writeLargeJournal writes spec's journal into dir through the package's writers, with
// fsync off. First the load of a backlog: 200 batches of 1,000 files in ten processes,
// verified and cleaned. Then, until spec.Records, cycles of 100 runs: 74 runs of one batch
// of ten files, verified ten times and cleaned; 25 runs of two batches whose second fails
// 100 times before it loads, verified and cleaned; one run of three 1,000-file batches that
// all fail once, then load, verified and cleaned in 1,000-file chunks. Last a run left
// verified and a run left failing (the newest).
func writeLargeJournal(tb testing.TB, dir string, spec largeSpec) largeStats {
	tb.Helper()
	defer func(f func(*os.File) error) { syncFile = f }(syncFile)
	syncFile = func(*os.File) error { return nil }
	clock := &largeClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	defer func(f func() time.Time) { now = f }(now)
	now = clock.now
	g := &largeGen{tb: tb, dir: dir, spec: spec, tgt: Target{TableID: spec.TableID, Table: spec.Table, Root: spec.Root}}
	g.st.Backlog = g.backlogRun(200, 10)
	for cycle := 0; g.st.Records < spec.Records; cycle++ {
		for i := 0; i < 100 && g.st.Records < spec.Records; i++ {
			switch {
			case i == 50:
				g.bigRun()
			case i%4 == 1 && i < 100-1:
				g.retryRun(100, true)
			default:
				g.smallRun(10, true)
			}
		}
	}
	g.smallRun(10, false)
	g.st.Newest = g.retryRun(3, false)
	// The writers above write no snapshots (a snapshot at each end would replay each run
	// once per process): one read of the table writes them all, as it does for a journal
	// written by an earlier version.
	d, err := OpenDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	defer d.Close()
	if _, err := Runs(context.Background(), d, spec.TableID); err != nil {
		tb.Fatal(err)
	}
	return g.st
}

type largeGen struct {
	tb   testing.TB
	dir  string
	spec largeSpec
	tgt  Target
	st   largeStats
	d    *Dir
	w    *Writer
	file int // files named so far
	ver  int64
}

func (g *largeGen) begin(cmd string) string {
	d, err := OpenDir(g.dir)
	if err != nil {
		g.tb.Fatal(err)
	}
	g.d = d
	run := fmt.Sprintf("%s-%06d", now().UTC().Format("20060102T150405Z"), g.st.Runs)
	g.w, err = Start(context.Background(), plainStore{d}, g.tgt, run, g.header(cmd))
	if err != nil {
		g.tb.Fatal(err)
	}
	g.st.Runs++
	g.st.Records++
	return run
}

// source is the folder the runs' statements read: the fallback folder under the root.
func (g *largeGen) source() string {
	return strings.TrimSuffix(g.spec.Root, "/") + "/_zerobus/table_rejected_parquets/"
}

func (g *largeGen) header(cmd string) Header {
	return Header{User: "ops", Identity: "ops@example.com", Host: "etl-7", PID: 4242,
		Command: "zbrecover " + cmd + " " + g.spec.Table + " --root " + g.spec.Root, ToolVersion: "1.4.0"}
}

// process continues the current run as a new process would.
func (g *largeGen) process(cmd string) {
	var err error
	g.w, err = Continue(context.Background(), plainStore{g.d}, &State{Run: g.w.Run(), TableID: g.tgt.TableID, Table: g.tgt.Table, Root: g.tgt.Root, LastSeq: g.w.Seq()}, g.header(cmd))
	if err != nil {
		g.tb.Fatal(err)
	}
	g.st.Records++
}

func (g *largeGen) add(r Record) {
	if err := g.w.Append(context.Background(), r); err != nil {
		g.tb.Fatal(err)
	}
	g.st.Records++
}

func (g *largeGen) end() {
	if err := g.d.Close(); err != nil {
		g.tb.Fatal(err)
	}
}

func (g *largeGen) batch(n, files int) PlanBatch {
	pb := PlanBatch{Batch: n, Group: "g" + strconv.Itoa(n%3), Folder: "_zerobus/table_rejected_parquets/day=2024-05-06/"}
	names := make([]string, files)
	for i := range files {
		g.file++
		name := fmt.Sprintf("part-%07d-1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718.c000.snappy.parquet", g.file)
		pb.Files = append(pb.Files, File{Key: pb.Folder + name, Size: 1<<20 + int64(g.file%4096),
			ETag: fmt.Sprintf(`"%032x"`, g.file), ModTime: clock0.Add(time.Duration(g.file) * time.Second), Rows: 12345})
		pb.ExpectedRows += 12345
		names[i] = "'" + name + "'"
	}
	pb.SQL = "COPY INTO `main`.`sales`.`orders` FROM (SELECT * FROM 's3://lake/orders/" + pb.Folder + "') FILEFORMAT = PARQUET FILES = (" +
		strings.Join(names, ", ") + ") COPY_OPTIONS ('mergeSchema' = 'false')"
	g.st.Files += files
	return pb
}

var clock0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func (g *largeGen) intent(pb PlanBatch) {
	base := g.ver
	g.add(Record{Kind: KindIntent, Intent: &Intent{Batch: pb.Batch, Files: pb.Files, ExpectedRows: pb.ExpectedRows, SQL: pb.SQL,
		Started: now(), BaseVersion: &base, Tag: fmt.Sprintf("zbrecover:%s:%d:1", g.w.Run(), pb.Batch)}})
}

func (g *largeGen) loaded(pb PlanBatch) {
	g.ver++
	v := g.ver
	g.add(Record{Kind: KindResult, Result: &Result{Batch: pb.Batch, Inserted: Int64(pb.ExpectedRows), QueryID: "01ef-" + strconv.FormatInt(v, 16), Version: &v, Ended: now()}})
	g.add(Record{Kind: KindOutcome, Outcome: &Outcome{Batch: pb.Batch, Status: BatchVerified, Reason: "inserted rows = expected rows", Version: &v, Evidence: EvidenceAnswer}})
}

func (g *largeGen) failed(pb PlanBatch) {
	g.add(Record{Kind: KindResult, Result: &Result{Batch: pb.Batch, QueryID: "01ef-x", Ended: now(),
		Err: "[DELTA_CONCURRENT_APPEND] ConcurrentAppendException: Files were added to the root of the table by a concurrent update"}})
}

func (g *largeGen) verify(pbs []PlanBatch, times int) {
	for range times {
		g.process("verify")
		ok := true
		var checks []Check
		for _, pb := range pbs {
			checks = append(checks, Check{Batch: pb.Batch, Expected: pb.ExpectedRows, Inserted: Int64(pb.ExpectedRows), History: Int64(pb.ExpectedRows), OK: true, Evidence: EvidenceAnswer})
		}
		tv := g.ver
		g.add(Record{Kind: KindVerification, Verification: &Verification{Checks: checks, OK: &ok, By: "verify", TableVersion: &tv}})
		g.add(Record{Kind: KindEnd, End: &End{State: RunVerified}})
	}
}

func (g *largeGen) cleanup(pbs []PlanBatch) {
	g.process("cleanup --yes")
	ok := true
	var checks []Check
	for _, pb := range pbs {
		checks = append(checks, Check{Batch: pb.Batch, Expected: pb.ExpectedRows, Inserted: Int64(pb.ExpectedRows), History: Int64(pb.ExpectedRows), OK: true, Evidence: EvidenceAnswer})
	}
	g.add(Record{Kind: KindVerification, Verification: &Verification{Checks: checks, OK: &ok, By: "cleanup"}})
	var files []File
	for _, pb := range pbs {
		files = append(files, pb.Files...)
	}
	for lo := 0; lo < len(files); lo += 1000 {
		chunk := files[lo:min(lo+1000, len(files))]
		g.add(Record{Kind: KindDeleteIntent, Deletion: &Deletion{Files: chunk}})
		res := make([]DeletedResult, len(chunk))
		for i, f := range chunk {
			res[i] = DeletedResult{Key: f.Key, Status: Deleted}
		}
		g.add(Record{Kind: KindDeleted, Deletion: &Deletion{Results: res}})
	}
	g.add(Record{Kind: KindEnd, End: &End{State: RunCleaned}})
}

// smallRun: one batch of ten files, loaded, verified ten times, cleaned when clean is set.
func (g *largeGen) smallRun(files int, clean bool) string {
	run := g.begin("reload --yes")
	pb := g.batch(1, files)
	g.add(Record{Kind: KindPlan, Plan: &Plan{Batches: []PlanBatch{pb}, Source: g.source()}})
	g.intent(pb)
	g.loaded(pb)
	g.add(Record{Kind: KindEnd, End: &End{State: RunVerified}})
	g.verify([]PlanBatch{pb}, 10)
	if clean {
		g.cleanup([]PlanBatch{pb})
	}
	g.end()
	return run
}

// retryRun: two batches of ten files; the second fails, and fails again in each of reruns
// re-runs; when finish is set, a last re-run loads it, then the run is verified three times
// and cleaned.
func (g *largeGen) retryRun(reruns int, finish bool) string {
	run := g.begin("reload --yes")
	pbs := []PlanBatch{g.batch(1, 10), g.batch(2, 10)}
	g.add(Record{Kind: KindPlan, Plan: &Plan{Batches: pbs, Source: g.source()}})
	g.intent(pbs[0])
	g.loaded(pbs[0])
	g.intent(pbs[1])
	g.failed(pbs[1])
	g.add(Record{Kind: KindEnd, End: &End{State: RunFailed, Err: "batch 2 failed"}})
	for range reruns {
		g.process("reload --yes")
		g.add(Record{Kind: KindOutcome, Outcome: &Outcome{Batch: 2, Status: BatchFailed, Reason: "the statement failed and no commit in the history carries its tag"}})
		g.intent(pbs[1])
		g.failed(pbs[1])
		g.add(Record{Kind: KindEnd, End: &End{State: RunFailed, Err: "batch 2 failed"}})
	}
	if finish {
		g.process("reload --yes")
		g.add(Record{Kind: KindOutcome, Outcome: &Outcome{Batch: 2, Status: BatchFailed, Reason: "the statement failed and no commit in the history carries its tag"}})
		g.intent(pbs[1])
		g.loaded(pbs[1])
		g.add(Record{Kind: KindEnd, End: &End{State: RunVerified}})
		g.verify(pbs, 3)
		g.cleanup(pbs)
	}
	g.end()
	return run
}

// bigRun: three batches of 1,000 files that all fail once, then load in a re-run; verified
// five times and cleaned in 1,000-file chunks.
func (g *largeGen) bigRun() string {
	run := g.begin("reload --yes")
	g.st.BigRuns++
	pbs := []PlanBatch{g.batch(1, 1000), g.batch(2, 1000), g.batch(3, 1000)}
	g.add(Record{Kind: KindPlan, Plan: &Plan{Batches: pbs, Source: g.source()}})
	for _, pb := range pbs {
		g.intent(pb)
		g.failed(pb)
	}
	g.add(Record{Kind: KindEnd, End: &End{State: RunFailed, Err: "3 batches failed"}})
	g.process("reload --yes")
	for _, pb := range pbs {
		g.add(Record{Kind: KindOutcome, Outcome: &Outcome{Batch: pb.Batch, Status: BatchFailed, Reason: "the statement failed and no commit in the history carries its tag"}})
		g.intent(pb)
		g.loaded(pb)
	}
	g.add(Record{Kind: KindEnd, End: &End{State: RunVerified}})
	g.verify(pbs, 5)
	g.cleanup(pbs)
	g.end()
	return run
}

// backlogRun: one plan of batches batches of 1,000 files, loaded by processes processes
// (every other one killed before its end record), verified three times and cleaned in
// 1,000-file chunks.
func (g *largeGen) backlogRun(batches, processes int) string {
	run := g.begin("reload --yes")
	var pbs []PlanBatch
	for n := 1; n <= batches; n++ {
		pbs = append(pbs, g.batch(n, 1000))
	}
	g.add(Record{Kind: KindPlan, Plan: &Plan{Batches: pbs, Source: g.source()}})
	per := batches / processes
	for k := range processes {
		if k > 0 {
			g.process("reload --yes")
		}
		for _, pb := range pbs[k*per : (k+1)*per] {
			g.intent(pb)
			g.loaded(pb)
		}
		switch {
		case k == processes-1:
			g.add(Record{Kind: KindEnd, End: &End{State: RunVerified}})
		case k%2 == 1:
			g.add(Record{Kind: KindEnd, End: &End{State: RunFailed, Err: "interrupted"}})
		}
	}
	g.verify(pbs, 3)
	g.cleanup(pbs)
	g.end()
	return run
}

// TestWriteLargeJournal writes the journal of BenchmarkLargeJournal into the directory
// ZBRECOVER_LARGE_JOURNAL, for measuring the commands on it: ZBRECOVER_LARGE_TABLE_ID is the
// table id (the Delta metaData.id of the root), ZBRECOVER_LARGE_ROOT the root as the commands
// show it, ZBRECOVER_LARGE_RECORDS the number of records (10⁶ when unset).
func TestWriteLargeJournal(t *testing.T) {
	dir := os.Getenv("ZBRECOVER_LARGE_JOURNAL")
	if dir == "" {
		t.Skip("set ZBRECOVER_LARGE_JOURNAL to a directory to write the large journal into")
	}
	spec := largeSpec{Records: 1_000_000, TableID: os.Getenv("ZBRECOVER_LARGE_TABLE_ID"), Table: "main.sales.orders", Root: os.Getenv("ZBRECOVER_LARGE_ROOT")}
	if n, err := strconv.Atoi(os.Getenv("ZBRECOVER_LARGE_RECORDS")); err == nil {
		spec.Records = n
	}
	if spec.TableID == "" || spec.Root == "" {
		t.Fatal("set ZBRECOVER_LARGE_TABLE_ID and ZBRECOVER_LARGE_ROOT")
	}
	st := writeLargeJournal(t, dir, spec)
	t.Logf("%d runs (%d with 1,000-file batches), %d records, %d files; newest run %s", st.Runs, st.BigRuns, st.Records, st.Files, st.Newest)
}

// largeBenchJournal is the journal BenchmarkLargeJournal reads: written once per process
// into a temporary directory, or into (and then reused from) ZBRECOVER_BENCH_JOURNAL.
func largeBenchJournal(b *testing.B) (string, largeStats) {
	spec := largeSpec{Records: 1_000_000, TableID: target.TableID, Table: target.Table, Root: target.Root}
	if n, err := strconv.Atoi(os.Getenv("ZBRECOVER_BENCH_RECORDS")); err == nil {
		spec.Records = n
	}
	dir := os.Getenv("ZBRECOVER_BENCH_JOURNAL")
	if dir == "" {
		dir = b.TempDir()
	}
	stats := filepath.Join(dir, "stats.json")
	if data, err := os.ReadFile(stats); err == nil {
		var st largeStats
		if err := json.Unmarshal(data, &st); err == nil && st.Records >= spec.Records {
			return dir, st
		}
	}
	start := time.Now()
	st := writeLargeJournal(b, dir, spec)
	b.Logf("wrote %d runs (%d with 1,000-file batches), %d records, %d files in %s", st.Runs, st.BigRuns, st.Records, st.Files, time.Since(start).Round(time.Second))
	data, _ := json.Marshal(st)
	if err := os.WriteFile(stats, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return dir, st
}

// BenchmarkLargeJournal reads a journal of 10⁶ records (ZBRECOVER_BENCH_RECORDS to change
// it) the way the commands do, each iteration through a new Dir, as a new process would:
// history (Runs), reload's planning (FactsFor the files of a fallback folder, then
// LatestUnfinished, on one Dir), verify's choice of a run (Runs, then ReadState of the
// newest), Facts with every loaded file, and the replay of single runs (ReadState of the
// newest run, of a run re-run a hundred times, of a run of three 1,000-file batches and of
// the backlog run of 200). Runs/replayed is the first read of the journal as an earlier
// version wrote it (no snapshots): every run replayed, and its snapshot written. Each reports
// its heap peak (heap-MiB, live and not yet collected objects sampled every millisecond)
// besides time and allocations.
func BenchmarkLargeJournal(b *testing.B) {
	dir, st := largeBenchJournal(b)
	ctx := context.Background()
	d, err := OpenDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	ids, err := d.RunIDs(ctx, target.TableID)
	if err != nil {
		b.Fatal(err)
	}
	d.Close()
	sort.Strings(ids)
	// The backlog comes first; in every cycle of 100 runs after it, run 1 is re-run a hundred
	// times and run 50 has 1,000-file batches.
	retried, big := ids[2], ids[51]
	// The fallback folder of a reload: the newest runs' files and 100 new ones.
	listed := map[string]bool{}
	for i := range 100 {
		listed[fmt.Sprintf("_zerobus/table_rejected_parquets/day=2024-05-06/part-%07d-1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718.c000.snappy.parquet", st.Files-i)] = true
		listed[fmt.Sprintf("_zerobus/table_rejected_parquets/day=2024-05-07/new-%03d.parquet", i)] = true
	}
	cases := []struct {
		name  string
		setup func() // before each iteration, not timed
		fn    func(d *Dir) error
	}{
		{"Runs", nil, func(d *Dir) error {
			sums, err := Runs(ctx, d, target.TableID)
			if err == nil && len(sums) != st.Runs {
				err = fmt.Errorf("%d runs, want %d", len(sums), st.Runs)
			}
			return err
		}},
		{"Runs/replayed", func() {
			snaps, _ := filepath.Glob(filepath.Join(dir, target.TableID, "*.snapshot"))
			for _, p := range snaps {
				if err := os.Remove(p); err != nil {
					b.Fatal(err)
				}
			}
		}, func(d *Dir) error { _, err := Runs(ctx, d, target.TableID); return err }},
		{"Reload", nil, func(d *Dir) error {
			f, err := FactsFor(ctx, d, target.TableID, func(k string) bool { return listed[k] })
			if err != nil {
				return err
			}
			if len(f.Loaded) != 100 || len(f.Runs) != st.Runs {
				return fmt.Errorf("%d files loaded of the folder's, %d runs", len(f.Loaded), len(f.Runs))
			}
			s, err := LatestUnfinished(ctx, d, target.TableID, target.Root)
			if err == nil && (s == nil || s.Run != st.Newest) {
				err = fmt.Errorf("latest unfinished %v, want %s", s, st.Newest)
			}
			return err
		}},
		{"Verify", nil, func(d *Dir) error {
			sums, err := Runs(ctx, d, target.TableID)
			if err != nil {
				return err
			}
			_, err = ReadState(ctx, d, target.TableID, sums[0].Run)
			return err
		}},
		{"Facts", nil, func(d *Dir) error {
			f, err := Facts(ctx, d, target.TableID)
			if err == nil && len(f.Loaded) != st.Files {
				err = fmt.Errorf("%d files loaded, want %d", len(f.Loaded), st.Files)
			}
			return err
		}},
		{"LatestUnfinished", nil, func(d *Dir) error {
			s, err := LatestUnfinished(ctx, d, target.TableID, target.Root)
			if err == nil && (s == nil || s.Run != st.Newest) {
				err = fmt.Errorf("latest unfinished %v, want %s", s, st.Newest)
			}
			return err
		}},
		{"ReadState/newest", nil, func(d *Dir) error { _, err := ReadState(ctx, d, target.TableID, st.Newest); return err }},
		{"ReadState/rerun-100", nil, func(d *Dir) error { _, err := ReadState(ctx, d, target.TableID, retried); return err }},
		{"ReadState/batches-1000", nil, func(d *Dir) error { _, err := ReadState(ctx, d, target.TableID, big); return err }},
		{"ReadState/backlog", nil, func(d *Dir) error { _, err := ReadState(ctx, d, target.TableID, st.Backlog); return err }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			runtime.GC()
			var peak uint64
			for b.Loop() {
				b.StopTimer()
				if c.setup != nil {
					c.setup()
				}
				d, err := OpenDir(dir)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				h := memstat.StartHeapPeak()
				b.StartTimer()
				err = c.fn(d)
				b.StopTimer()
				peak = max(peak, h.Stop())
				d.Close()
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(peak)/(1<<20), "heap-MiB")
		})
	}
}
