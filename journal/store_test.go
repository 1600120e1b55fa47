package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/redact"
)

// testStore is two handles on one empty journal, as two processes would have them, with
// access to what is stored underneath.
type testStore struct {
	a, b  Store
	raw   func() []byte        // every byte the journal has stored
	plant func(r Record) error // stores r as it is, past every check
	// fresh opens another handle on the journal, as a new process would.
	fresh func() Store
	// snapshot returns the stored snapshot of a run (nil when none); setSnapshot stores one.
	snapshot    func(tableID, run string) []byte
	setSnapshot func(tableID, run string, data []byte)
	// editRecord replaces the stored bytes of record seq of a run with edit's result.
	editRecord func(tableID, run string, seq int, edit func([]byte) []byte)
}

type openStore func(t *testing.T) testStore

func dirOpener(t *testing.T) testStore {
	dir := t.TempDir()
	a, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	plant := func(r Record) error {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, r.TableID), 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(dir, r.TableID, r.Run+".jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Write(append(line, '\n'))
		return err
	}
	fresh := func() Store {
		d, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	snapshot := func(tableID, run string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, tableID, run+".snapshot"))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		must(t, err)
		return data
	}
	setSnapshot := func(tableID, run string, data []byte) {
		must(t, os.WriteFile(filepath.Join(dir, tableID, run+".snapshot"), data, 0o600))
	}
	editRecord := func(tableID, run string, seq int, edit func([]byte) []byte) {
		p := filepath.Join(dir, tableID, run+".jsonl")
		data, err := os.ReadFile(p)
		must(t, err)
		lines := strings.SplitAfter(string(data), "\n")
		lines[seq-1] = string(edit([]byte(lines[seq-1])))
		must(t, os.WriteFile(p, []byte(strings.Join(lines, "")), 0o600))
	}
	return testStore{a: a, b: b, raw: func() []byte { return dirBytes(t, dir) }, plant: plant,
		fresh: fresh, snapshot: snapshot, setSnapshot: setSnapshot, editRecord: editRecord}
}

func dirBytes(t *testing.T, dir string) []byte {
	var all []byte
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		all = append(all, b...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

var target = Target{TableID: "0f1e2d3c-aaaa-bbbb-cccc-000000000001", Table: "main.sales.orders", Root: "s3://lake/orders/_zerobus/table_rejected_parquets"}

// writeRun writes a run on tgt: header, a plan of the batches, and per batch an intent,
// a result and a verified outcome for the first `done` batches, then an end if all are done.
func writeRun(t *testing.T, s Store, tgt Target, run string, start time.Time, batches [][]string, done int) *Writer {
	t.Helper()
	ctx := context.Background()
	defer func(f func() time.Time) { now = f }(now)
	now = func() time.Time { return start }
	w, err := Start(ctx, s, tgt, run, Header{User: "ops", Host: "h", Command: "zbrecover reload " + tgt.Table})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(ctx, Record{}) // rejected: no kind; the writer's numbering must not move
	var plan Plan
	for i, ks := range batches {
		pb := batch(i+1, ks...)
		plan.Batches = append(plan.Batches, pb)
	}
	must(t, w.Append(ctx, Record{Kind: KindPlan, Plan: &plan}))
	for _, pb := range plan.Batches[:done] {
		must(t, w.Append(ctx, Record{Kind: KindIntent, Intent: &Intent{Batch: pb.Batch, Files: pb.Files, ExpectedRows: pb.ExpectedRows, SQL: pb.SQL, Started: start}}))
		must(t, w.Append(ctx, Record{Kind: KindResult, Result: &Result{Batch: pb.Batch, Inserted: Int64(pb.ExpectedRows), QueryID: "q", Ended: start}}))
		must(t, w.Append(ctx, Record{Kind: KindOutcome, Outcome: &Outcome{Batch: pb.Batch, Status: BatchVerified}}))
	}
	if done == len(batches) {
		must(t, w.Append(ctx, Record{Kind: KindEnd, End: &End{State: RunVerified}}))
	}
	return w
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func runStoreSuite(t *testing.T, open openStore) {
	ctx := context.Background()

	t.Run("append and read back", func(t *testing.T) {
		ts := open(t)
		a, b := ts.a, ts.b
		w := writeRun(t, a, target, "run-1", t0, [][]string{{"f/a.parquet", "f/b.parquet"}, {"g/c.parquet"}}, 2)
		if w.Seq() != 9 {
			t.Errorf("writer seq = %d, want 9", w.Seq())
		}
		log, err := b.Read(ctx, target.TableID, "run-1")
		must(t, err)
		if len(log.Records) != 9 || len(log.Warnings) != 0 {
			t.Fatalf("read %d records, warnings %q", len(log.Records), log.Warnings)
		}
		for i, r := range log.Records {
			if r.Seq != i+1 || r.V != Version || r.Run != "run-1" || r.TableID != target.TableID || r.Table != target.Table || r.Root != target.Root {
				t.Errorf("record %d header = %+v", i, r)
			}
		}
		if r := log.Records[2]; r.Kind != KindIntent || len(r.Intent.Files) != 2 || r.Intent.Files[1].ETag != `"e-f/b.parquet"` || !r.Intent.Started.Equal(t0) {
			t.Errorf("intent = %+v", r.Intent)
		}
		if r := log.Records[3]; *r.Result.Inserted != 20 || !r.Time.Equal(t0) {
			t.Errorf("result = %+v at %v", r.Result, r.Time)
		}
		st, err := ReadState(ctx, b, target.TableID, "run-1")
		must(t, err)
		if st.Status != RunVerified || len(st.VerifiedFiles()) != 3 {
			t.Errorf("state %s, %d verified files", st.Status, len(st.VerifiedFiles()))
		}
		ids, err := b.RunIDs(ctx, target.TableID)
		must(t, err)
		tables, err := b.Tables(ctx)
		must(t, err)
		if len(ids) != 1 || ids[0] != "run-1" || len(tables) != 1 || tables[0] != target.TableID {
			t.Errorf("run ids %q, tables %q", ids, tables)
		}
		if _, err := b.Read(ctx, target.TableID, "run-2"); err == nil {
			t.Error("read of a missing run succeeded")
		}
		if ids, err := b.RunIDs(ctx, "other-table"); err != nil || len(ids) != 0 {
			t.Errorf("runs of an unknown table: %q, %v", ids, err)
		}
	})

	t.Run("two writers on one run: the second fails and nothing is overwritten", func(t *testing.T) {
		ts := open(t)
		a, b := ts.a, ts.b
		writeRun(t, a, target, "run-1", t0, [][]string{{"a"}}, 0)
		stA, err := ReadState(ctx, a, target.TableID, "run-1")
		must(t, err)
		stB, err := ReadState(ctx, b, target.TableID, "run-1")
		must(t, err)
		wa, err := Continue(ctx, a, stA, Header{Command: "process A"})
		must(t, err)
		_, err = Continue(ctx, b, stB, Header{Command: "process B"})
		if !errors.Is(err, ErrRunConflict) || !strings.Contains(err.Error(), "another process is writing this run") {
			t.Fatalf("second writer: %v, want ErrRunConflict", err)
		}
		// The first writer goes on; the second, having read before it, still cannot write.
		must(t, wa.Append(ctx, Record{Kind: KindEnd, End: &End{State: RunPlanned}}))
		if err := b.Append(ctx, Record{V: 1, Run: "run-1", Seq: 4, TableID: target.TableID, Kind: KindEnd, End: &End{State: RunFailed}}); !errors.Is(err, ErrRunConflict) {
			t.Errorf("stale append: %v, want ErrRunConflict", err)
		}
		log, err := b.Read(ctx, target.TableID, "run-1")
		must(t, err)
		if len(log.Records) != 4 || log.Records[2].Header.Command != "process A" || log.Records[3].End.State != RunPlanned {
			t.Errorf("records after the conflict: %d, %+v", len(log.Records), log.Records[2])
		}
		if _, err := Replay(log.Records); err != nil {
			t.Errorf("replay after the conflict: %v", err)
		}
	})

	t.Run("two writers of one record number conflict, whatever they write", func(t *testing.T) {
		ts := open(t)
		w := writeRun(t, ts.a, target, "run-1", t0, [][]string{{"a"}}, 0)
		stB, err := ReadState(ctx, ts.b, target.TableID, "run-1")
		must(t, err)
		// The holder sends batch 1 (record 3, an intent); a second process that read the run
		// before it continues the run (its record 3, a run record): it must fail.
		pb := batch(1, "a")
		must(t, w.Append(ctx, Record{Kind: KindIntent, Intent: &Intent{Batch: 1, Files: pb.Files, ExpectedRows: 10, SQL: pb.SQL}}))
		if _, err := Continue(ctx, ts.b, stB, Header{Command: "process B"}); !errors.Is(err, ErrRunConflict) {
			t.Fatalf("a run record under the holder's intent's number: %v, want ErrRunConflict", err)
		}
		// Nor may any other kind take a number the holder wrote.
		for _, r := range []Record{
			{V: 1, Run: "run-1", Seq: 3, TableID: target.TableID, Kind: KindResult, Result: &Result{Batch: 1, Inserted: Int64(10)}},
			{V: 1, Run: "run-1", Seq: 3, TableID: target.TableID, Kind: KindEnd, End: &End{State: RunFailed}},
		} {
			if err := ts.fresh().Append(ctx, r); !errors.Is(err, ErrRunConflict) {
				t.Errorf("a %s record under the holder's intent's number: %v, want ErrRunConflict", r.Kind, err)
			}
		}
		st, err := ReadState(ctx, ts.fresh(), target.TableID, "run-1")
		must(t, err)
		if st.Wedge != nil || st.LastSeq != 3 || len(st.Processes) != 1 || st.Batch(1).Status != BatchOpen {
			t.Errorf("run after the refused writers: wedge %v, last seq %d, %d processes, batch 1 %s", st.Wedge, st.LastSeq, len(st.Processes), st.Batch(1).Status)
		}
	})

	t.Run("a run two processes wrote at once is read by the wedge rule, and goes on", func(t *testing.T) {
		ts := open(t)
		const root = "s3://bucket/t/_zerobus/table_rejected_parquets"
		// Record 4 is held twice: the holder's result of batch 1 and the run record of a
		// process that broke its lock (whose next record, an outcome, met the holder's).
		recs := forkRun(newRun("r1").plan(batch(1, "a", "b"), batch(2, "c")).intent(1),
			func(a *runBuilder) { a.result(1, nil, "connection reset").proved(1, BatchVerified, EvidenceHistory, 7) },
			func(b *runBuilder) { b.process("zbrecover reload t --break-lock --yes") }, nil)
		for _, r := range recs {
			must(t, ts.plant(r))
		}
		b := ts.fresh()
		if w := Wedges(b, "tbl-1"); len(w) != 0 {
			t.Errorf("wedges before any read: %q", w)
		}
		sums, err := Runs(ctx, b, "tbl-1")
		must(t, err)
		if len(sums) != 1 || sums[0].Problem != "" || sums[0].Status != RunLoading || !strings.Contains(sums[0].Wedged, "written by two processes at once") {
			t.Fatalf("history of the wedged run: %+v", sums)
		}
		if w := Wedges(b, "tbl-1"); len(w) != 1 || w[0] != sums[0].Wedged || len(Wedges(b, "tbl-2")) != 0 {
			t.Errorf("wedges the reads found: %q", w)
		}
		facts, err := Facts(ctx, b, "tbl-1")
		must(t, err)
		var loaded []string
		for _, f := range facts.Loaded {
			loaded = append(loaded, f.Key+":"+string(f.Status))
		}
		if strings.Join(loaded, " ") != "a:unknown b:unknown" || facts.Claimed[7].Batch != 1 {
			t.Errorf("facts of the wedged run: loaded %v, claimed %v", loaded, facts.Claimed)
		}
		st, err := LatestUnfinished(ctx, b, "tbl-1", root)
		must(t, err)
		if st == nil || st.Wedge == nil || st.LastSeq != 5 || batchNums(st.Remaining()) == nil || batchNums(st.Remaining())[0] != 2 {
			t.Fatalf("latest unfinished: %+v", st)
		}
		// A re-run continues after the last record; its records are read as always.
		w, err := Continue(ctx, b, st, Header{Command: "zbrecover reload t"})
		must(t, err)
		pb := batch(2, "c")
		must(t, w.Append(ctx, Record{Kind: KindIntent, Intent: &Intent{Batch: 2, Files: pb.Files, ExpectedRows: 10, SQL: pb.SQL}}))
		must(t, w.Append(ctx, Record{Kind: KindResult, Result: &Result{Batch: 2, Inserted: Int64(10)}}))
		must(t, w.Append(ctx, Record{Kind: KindOutcome, Outcome: &Outcome{Batch: 2, Status: BatchVerified, Evidence: EvidenceAnswer}}))
		must(t, w.Append(ctx, Record{Kind: KindEnd, End: &End{State: RunUnknown}}))
		st, err = ReadState(ctx, ts.fresh(), "tbl-1", "r1")
		must(t, err)
		if st.Wedge == nil || st.Wedge.To != 5 || st.LastSeq != 10 || st.Batch(1).Status != BatchUnknown || st.Batch(2).Status != BatchVerified || st.Status != RunUnknown {
			t.Errorf("after the re-run: wedge %+v, last seq %d, batches %s %s, run %s", st.Wedge, st.LastSeq, st.Batch(1).Status, st.Batch(2).Status, st.Status)
		}
		if f := keys(st.VerifiedFiles()); strings.Join(f, " ") != "c" {
			t.Errorf("verified files after the re-run: %v", f)
		}
	})

	t.Run("lock held, then released", func(t *testing.T) {
		ts := open(t)
		a, b := ts.a, ts.b
		owner := Holder{User: "alice", Command: "zbrecover reload main.sales.orders"}
		l, err := a.Lock(ctx, target.TableID, LockOptions{Owner: owner})
		must(t, err)
		_, err = b.Lock(ctx, target.TableID, LockOptions{Owner: Holder{User: "bob"}})
		var le *LockedError
		if !errors.As(err, &le) || !errors.Is(err, ErrLocked) {
			t.Fatalf("second lock: %v, want a LockedError", err)
		}
		host, _ := os.Hostname()
		msg := err.Error()
		for _, want := range []string{"alice@" + host, fmt.Sprintf("pid %d", os.Getpid()), "zbrecover reload main.sales.orders", "since " + le.Holder.Since.Format("2006-01-02T"), target.TableID} {
			if !strings.Contains(msg, want) {
				t.Errorf("lock error %q lacks %q", msg, want)
			}
		}
		if time.Since(le.Holder.Since) > time.Minute || le.Stale {
			t.Errorf("holder since %v, stale %v", le.Holder.Since, le.Stale)
		}
		// Another table is not locked.
		l2, err := b.Lock(ctx, "another-table", LockOptions{})
		must(t, err)
		must(t, l2.Close())
		must(t, l.Close())
		must(t, l.Close()) // a second Close does nothing
		l3, err := b.Lock(ctx, target.TableID, LockOptions{Owner: Holder{User: "bob"}})
		must(t, err)
		_, err = a.Lock(ctx, target.TableID, LockOptions{})
		if !errors.As(err, &le) || le.Holder.User != "bob" {
			t.Errorf("lock after handover: %v", err)
		}
		must(t, l3.Close())
	})

	t.Run("secrets are redacted, names are kept verbatim", func(t *testing.T) {
		ts := open(t)
		a, b, raw := ts.a, ts.b, ts.raw
		const secret = "registered-secret-8f3a2b"
		redact.Register(secret)
		tgt := target
		tgt.Root = "abfss://c@acct.dfs.core.windows.net/t?sig=ROOTSIG987"
		w, err := Start(ctx, a, tgt, "run-s", Header{User: "ops", Command: "zbrecover reload --token " + secret})
		must(t, err)
		// Folders and files named like secrets are names: they come back exactly.
		pb := batch(1, "sig=1/token=abc.parquet", "password=x/f.parquet")
		pb.SQL = "COPY INTO t FROM 'abfss://c@acct.dfs.core.windows.net/t/sig=1/' FILEFORMAT = PARQUET FILES = ('token=abc.parquet')"
		must(t, w.Append(ctx, Record{Kind: KindPlan, Plan: &Plan{Batches: []PlanBatch{pb}}}))
		must(t, w.Append(ctx, Record{Kind: KindIntent, Intent: &Intent{Batch: 1, Files: pb.Files, SQL: pb.SQL}}))
		must(t, w.Append(ctx, Record{Kind: KindResult, Result: &Result{Batch: 1, Err: "403 for ?sv=2024&sig=ERRSIG123 with " + secret}}))
		stored := string(raw())
		for _, leak := range []string{secret, "ROOTSIG987", "ERRSIG123"} {
			if strings.Contains(stored, leak) {
				t.Errorf("stored journal holds %q", leak)
			}
		}
		st, err := ReadState(ctx, b, tgt.TableID, "run-s")
		must(t, err)
		if st.Root != redact.String(tgt.Root) || st.Batch(1).SQL != pb.SQL {
			t.Errorf("read back root %q, sql %q", st.Root, st.Batch(1).SQL)
		}
		for _, k := range []string{"sig=1/token=abc.parquet", "password=x/f.parquet"} {
			if _, ok := st.File(k); !ok {
				t.Errorf("file %q not read back verbatim: %+v", k, st.Files())
			}
		}
		// A registered secret in a field stored verbatim is refused, not written.
		leaky := batch(2, "y.parquet")
		leaky.SQL = "COPY INTO t FROM 's3://b/" + secret + "/'"
		if err := w.Append(ctx, Record{Kind: KindPlan, Plan: &Plan{Batches: []PlanBatch{leaky}}}); err == nil || !strings.Contains(err.Error(), "secret") {
			t.Errorf("a plan holding a registered secret: %v", err)
		}
		if strings.Contains(string(raw()), secret) {
			t.Error("the refused record was written")
		}
		// The root a caller passes is compared without its query: a new SAS finds the run.
		got, err := LatestUnfinished(ctx, b, tgt.TableID, "abfss://c@acct.dfs.core.windows.net/t?se=2030&sig=NEWSIG")
		must(t, err)
		if got == nil || got.Run != "run-s" {
			t.Errorf("latest unfinished on the root with a new SAS: %+v", got)
		}
	})

	t.Run("runs, latest unfinished, loaded keys", func(t *testing.T) {
		ts := open(t)
		a, b := ts.a, ts.b
		other := target
		other.Root = "s3://lake/elsewhere"
		writeRun(t, a, target, "r-old", t0, [][]string{{"a"}, {"b"}}, 1)                 // unfinished
		writeRun(t, a, target, "r-mid", t0.Add(time.Hour), [][]string{{"c"}}, 1)         // verified
		writeRun(t, a, other, "r-new", t0.Add(2*time.Hour), [][]string{{"d"}, {"e"}}, 0) // other root
		writeRun(t, a, target, "r-newest", t0.Add(3*time.Hour), [][]string{{"f"}}, 0)    // unfinished, newest
		sums, err := Runs(ctx, b, target.TableID)
		must(t, err)
		var order []string
		for _, s := range sums {
			order = append(order, s.Run+":"+string(s.Status))
		}
		if got := strings.Join(order, " "); got != "r-newest:planned r-new:planned r-mid:verified r-old:loading" {
			t.Errorf("runs = %s", got)
		}
		if s := sums[3]; s.Files != 2 || s.Batches != 2 || s.ExpectedRows != 20 || s.InsertedRows != 10 || s.Command != "zbrecover reload main.sales.orders" || s.User != "ops" || !s.Started.Equal(t0) {
			t.Errorf("summary = %+v", s)
		}
		st, err := LatestUnfinished(ctx, b, target.TableID, target.Root)
		must(t, err)
		if st == nil || st.Run != "r-newest" {
			t.Fatalf("latest unfinished = %+v", st)
		}
		st, err = LatestUnfinished(ctx, b, target.TableID, other.Root)
		must(t, err)
		if st == nil || st.Run != "r-new" {
			t.Fatalf("latest unfinished on the other root = %+v", st)
		}
		if st, err := LatestUnfinished(ctx, b, "no-such-table", target.Root); st != nil || err != nil {
			t.Errorf("latest unfinished of an empty table = %v, %v", st, err)
		}
		loaded, err := LoadedKeys(ctx, b, target.TableID)
		must(t, err)
		var ks []string
		for _, f := range loaded {
			ks = append(ks, f.Run+"/"+f.Key+":"+string(f.Status))
		}
		if got := strings.Join(ks, " "); got != "r-mid/c:verified r-old/a:verified" {
			t.Errorf("loaded keys = %s", got)
		}
		// A run that cannot be replayed is listed with its problem, and blocks the others.
		must(t, ts.plant(Record{V: 1, Run: "r-broken", Seq: 2, TableID: target.TableID, Kind: KindEnd, End: &End{}}))
		sums, err = Runs(ctx, b, target.TableID)
		must(t, err)
		if len(sums) != 5 || sums[4].Run != "r-broken" || !strings.Contains(sums[4].Problem, "run r-broken") {
			t.Errorf("broken run summary = %+v", sums[len(sums)-1])
		}
		if _, err := LatestUnfinished(ctx, b, target.TableID, target.Root); err == nil || !strings.Contains(err.Error(), "r-broken") {
			t.Errorf("latest unfinished with a broken run: %v", err)
		}
		if _, err := LoadedKeys(ctx, b, target.TableID); err == nil || !strings.Contains(err.Error(), "r-broken") {
			t.Errorf("loaded keys with a broken run: %v", err)
		}
	})

	t.Run("concurrent appends of one writer are numbered without gaps", func(t *testing.T) {
		ts := open(t)
		a, b := ts.a, ts.b
		w := writeRun(t, a, target, "run-c", t0, [][]string{{"a"}}, 0)
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := w.Append(ctx, Record{Kind: KindVerification, Verification: &Verification{Checks: []Check{{Batch: 1}}}}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		log, err := b.Read(ctx, target.TableID, "run-c")
		must(t, err)
		if _, err := Replay(log.Records); err != nil || len(log.Records) != 10 {
			t.Errorf("%d records, replay: %v", len(log.Records), err)
		}
	})

	t.Run("invalid records and names are refused", func(t *testing.T) {
		a := open(t).a
		for _, r := range []Record{
			{V: 1, Run: "../x", Seq: 1, TableID: target.TableID, Kind: KindEnd, End: &End{}},
			{V: 1, Run: "r", Seq: 1, TableID: "a/b", Kind: KindEnd, End: &End{}},
			{V: 1, Run: "r", Seq: 0, TableID: target.TableID, Kind: KindEnd, End: &End{}},
			{V: 1, Run: "r", Seq: 1, TableID: target.TableID, Kind: KindEnd},
			{V: 1, Run: "r", Seq: 1, TableID: target.TableID, Kind: KindEnd, End: &End{}, Plan: &Plan{}},
			{V: 1, Run: "r", Seq: 1, TableID: target.TableID, Kind: "future", Raw: json.RawMessage(`{}`)},
		} {
			if err := a.Append(ctx, r); err == nil {
				t.Errorf("Append(%+v) succeeded", r)
			}
		}
		if _, err := a.Read(ctx, target.TableID, "../../etc"); err == nil {
			t.Error("Read with a path in the run id succeeded")
		}
		if _, err := a.Lock(ctx, "../t", LockOptions{}); err == nil {
			t.Error("Lock with a path in the table id succeeded")
		}
	})

	snapshotSuite(t, open)
}

func TestDirStore(t *testing.T) { runStoreSuite(t, dirOpener) }

func TestNewRunID(t *testing.T) {
	a, b := NewRunID(t0), NewRunID(t0)
	if a == b || !strings.HasPrefix(a, "20250304T050607Z-") || checkName("run id", a) != nil {
		t.Errorf("run ids %q %q", a, b)
	}
	if NewRunID(t0.Add(time.Second)) < a {
		t.Error("run ids do not sort by time")
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/state")
	if d, err := DefaultDir(); err != nil || d != "/var/state/zbrecover" {
		t.Errorf("DefaultDir = %q, %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative/ignored")
	t.Setenv("HOME", "/home/ops")
	if d, err := DefaultDir(); err != nil || d != "/home/ops/.local/state/zbrecover" {
		t.Errorf("DefaultDir with a relative XDG_STATE_HOME = %q, %v", d, err)
	}
	t.Setenv("XDG_STATE_HOME", "")
	if d, err := DefaultDir(); err != nil || d != "/home/ops/.local/state/zbrecover" {
		t.Errorf("DefaultDir without XDG_STATE_HOME = %q, %v", d, err)
	}
}
