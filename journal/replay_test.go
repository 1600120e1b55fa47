package journal

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)

// runBuilder writes the records of one run the way a correct writer does, numbering them.
type runBuilder struct {
	run   string
	recs  []Record
	plans map[int]PlanBatch
}

func newRun(run string) *runBuilder {
	b := &runBuilder{run: run, plans: map[int]PlanBatch{}}
	return b.process("zbrecover reload t")
}

func (b *runBuilder) add(r Record) *runBuilder {
	r.V, r.Run, r.TableID, r.Table, r.Root = Version, b.run, "tbl-1", "main.s.t", "s3://bucket/t/_zerobus/table_rejected_parquets"
	r.Seq = len(b.recs) + 1
	r.Time = t0.Add(time.Duration(r.Seq) * time.Second)
	b.recs = append(b.recs, r)
	return b
}

func (b *runBuilder) process(cmd string) *runBuilder {
	return b.add(Record{Kind: KindRun, Header: &Header{User: "ops", Host: "h1", Command: cmd, ToolVersion: "1.0"}})
}

// batch plans batch n with the given file keys, 10 rows each.
func batch(n int, keys ...string) PlanBatch {
	pb := PlanBatch{Batch: n, Group: "g1", Folder: "", SQL: fmt.Sprintf("COPY INTO t /* %d */", n)}
	for i, k := range keys {
		pb.Files = append(pb.Files, File{Key: k, Size: int64(100 + i), ETag: `"e-` + k + `"`, Rows: 10})
		pb.ExpectedRows += 10
	}
	return pb
}

func (b *runBuilder) plan(pbs ...PlanBatch) *runBuilder {
	for _, pb := range pbs {
		b.plans[pb.Batch] = pb
	}
	return b.add(Record{Kind: KindPlan, Plan: &Plan{Batches: pbs}})
}

func (b *runBuilder) intent(n int) *runBuilder {
	pb := b.plans[n]
	return b.add(Record{Kind: KindIntent, Intent: &Intent{Batch: n, Files: pb.Files, ExpectedRows: pb.ExpectedRows, SQL: pb.SQL, Started: t0}})
}

func (b *runBuilder) result(n int, inserted *int64, errText string) *runBuilder {
	return b.add(Record{Kind: KindResult, Result: &Result{Batch: n, Inserted: inserted, QueryID: fmt.Sprintf("q%d", n), Ended: t0, Err: errText}})
}

func (b *runBuilder) outcome(n int, st BatchStatus) *runBuilder {
	return b.add(Record{Kind: KindOutcome, Outcome: &Outcome{Batch: n, Status: st}})
}

// load records a batch that loads its expected rows and is verified.
func (b *runBuilder) load(n int) *runBuilder {
	return b.intent(n).result(n, Int64(b.plans[n].ExpectedRows), "").outcome(n, BatchVerified)
}

func (b *runBuilder) deleteIntent(keys ...string) *runBuilder {
	var fs []File
	for _, pb := range b.plans {
		for _, f := range pb.Files {
			if slices.Contains(keys, f.Key) {
				fs = append(fs, f)
			}
		}
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].Key < fs[j].Key })
	return b.add(Record{Kind: KindDeleteIntent, Deletion: &Deletion{Files: fs}})
}

func (b *runBuilder) deleted(res ...DeletedResult) *runBuilder {
	return b.add(Record{Kind: KindDeleted, Deletion: &Deletion{Results: res}})
}

func (b *runBuilder) end(st RunStatus) *runBuilder {
	return b.add(Record{Kind: KindEnd, End: &End{State: st}})
}

func (b *runBuilder) records() []Record { return b.recs }

// edit returns the records with f applied to each; f returns false to drop one.
func (b *runBuilder) edit(f func(r *Record) bool) []Record {
	var out []Record
	for _, r := range b.recs {
		if f(&r) {
			out = append(out, r)
		}
	}
	return out
}

// jsonl encodes the records as a run file.
func (b *runBuilder) jsonl(t *testing.T) []byte {
	var buf bytes.Buffer
	for _, r := range b.recs {
		line, err := encode(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
	}
	return buf.Bytes()
}

func keys(fs []FileState) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Key)
	}
	sort.Strings(out)
	return out
}

func batchNums(bs []*BatchState) []int {
	var out []int
	for _, b := range bs {
		out = append(out, b.Batch)
	}
	return out
}

func TestReplay(t *testing.T) {
	type want struct {
		status     RunStatus
		batches    []BatchStatus // by batch number, from 1
		open       []int
		remaining  []int
		verified   []string
		loaded     []string
		deleted    map[string]DeleteStatus
		unfinished bool
		processes  int
		warnings   int
	}
	twoBatches := func() *runBuilder { return newRun("r1").plan(batch(1, "a", "b"), batch(2, "c")) }
	cases := []struct {
		name    string
		recs    func(t *testing.T) []Record
		wantErr string
		want    want
	}{
		{
			name: "clean run",
			recs: func(*testing.T) []Record { return twoBatches().load(1).load(2).end(RunVerified).records() },
			want: want{status: RunVerified, batches: []BatchStatus{BatchVerified, BatchVerified},
				verified: []string{"a", "b", "c"}, loaded: []string{"a", "b", "c"}, processes: 1},
		},
		{
			name: "planned only",
			recs: func(*testing.T) []Record { return twoBatches().records() },
			want: want{status: RunPlanned, batches: []BatchStatus{BatchPlanned, BatchPlanned},
				remaining: []int{1, 2}, unfinished: true, processes: 1},
		},
		{
			name: "crash after intent: the batch is open",
			recs: func(*testing.T) []Record { return twoBatches().load(1).intent(2).records() },
			want: want{status: RunLoading, batches: []BatchStatus{BatchVerified, BatchOpen}, open: []int{2},
				verified: []string{"a", "b"}, loaded: []string{"a", "b", "c"}, unfinished: true, processes: 1},
		},
		{
			name: "result without classification",
			recs: func(*testing.T) []Record {
				return twoBatches().load(1).intent(2).result(2, Int64(10), "").records()
			},
			want: want{status: RunLoading, batches: []BatchStatus{BatchVerified, BatchLoaded},
				verified: []string{"a", "b"}, loaded: []string{"a", "b", "c"}, unfinished: true, processes: 1},
		},
		{
			name: "result then classification",
			recs: func(*testing.T) []Record {
				return twoBatches().load(1).intent(2).result(2, Int64(10), "").outcome(2, BatchVerified).records()
			},
			want: want{status: RunVerified, batches: []BatchStatus{BatchVerified, BatchVerified},
				verified: []string{"a", "b", "c"}, loaded: []string{"a", "b", "c"}, processes: 1},
		},
		{
			name: "mismatch",
			recs: func(*testing.T) []Record {
				return twoBatches().load(1).intent(2).result(2, Int64(7), "").outcome(2, BatchMismatch).end(RunMismatch).records()
			},
			want: want{status: RunMismatch, batches: []BatchStatus{BatchVerified, BatchMismatch},
				verified: []string{"a", "b"}, loaded: []string{"a", "b", "c"}, processes: 1},
		},
		{
			name: "statement error without a count stays open until settled",
			recs: func(*testing.T) []Record {
				return twoBatches().load(1).intent(2).result(2, nil, "connection reset").end(RunUnknown).records()
			},
			want: want{status: RunUnknown, batches: []BatchStatus{BatchVerified, BatchOpen}, open: []int{2},
				verified: []string{"a", "b"}, loaded: []string{"a", "b", "c"}, unfinished: true, processes: 1},
		},
		{
			name: "failure on batch 2 of 3",
			recs: func(*testing.T) []Record {
				return newRun("r1").plan(batch(1, "a"), batch(2, "b"), batch(3, "c")).load(1).
					intent(2).result(2, nil, "[DELTA_FAILED_TO_MERGE_FIELDS]").outcome(2, BatchFailed).end(RunFailed).records()
			},
			want: want{status: RunFailed, batches: []BatchStatus{BatchVerified, BatchFailed, BatchPlanned},
				remaining: []int{2, 3}, verified: []string{"a"}, loaded: []string{"a", "b"}, unfinished: true, processes: 1},
		},
		{
			name: "run continued by a second process settles the open batch and finishes",
			recs: func(*testing.T) []Record {
				return newRun("r1").plan(batch(1, "a"), batch(2, "b"), batch(3, "c")).load(1).intent(2).
					process("zbrecover reload t").
					add(Record{Kind: KindOutcome, Outcome: &Outcome{Batch: 2, Status: BatchVerified, Reason: "COPY INTO commit at version 12, 10 rows", Version: Int64(12)}}).
					load(3).end(RunVerified).records()
			},
			want: want{status: RunVerified, batches: []BatchStatus{BatchVerified, BatchVerified, BatchVerified},
				verified: []string{"a", "b", "c"}, loaded: []string{"a", "b", "c"}, processes: 2},
		},
		{
			name: "failed batch sent again by a second process",
			recs: func(*testing.T) []Record {
				return newRun("r1").plan(batch(1, "a"), batch(2, "b")).load(1).
					intent(2).result(2, nil, "TRANSACTION_CONCURRENT_COPY_INTO").outcome(2, BatchFailed).end(RunFailed).
					process("zbrecover reload t").load(2).end(RunVerified).records()
			},
			want: want{status: RunVerified, batches: []BatchStatus{BatchVerified, BatchVerified},
				verified: []string{"a", "b"}, loaded: []string{"a", "b"}, processes: 2},
		},
		{
			name: "cleanup: one deleted, one skipped as changed, one already gone",
			recs: func(*testing.T) []Record {
				return twoBatches().load(1).load(2).end(RunVerified).
					process("zbrecover cleanup t --yes").deleteIntent("a", "b", "c").
					deleted(DeletedResult{Key: "a", Status: Deleted},
						DeletedResult{Key: "b", Status: DeleteSkip, Reason: "changed since verified"},
						DeletedResult{Key: "c", Status: DeleteGone}).end(RunPartiallyCleaned).records()
			},
			want: want{status: RunPartiallyCleaned, batches: []BatchStatus{BatchVerified, BatchVerified},
				verified: []string{"a", "b", "c"}, loaded: []string{"a", "b", "c"}, processes: 2,
				deleted: map[string]DeleteStatus{"a": Deleted, "b": DeleteSkip, "c": DeleteGone}},
		},
		{
			name: "cleanup crashed after its intent, then completed",
			recs: func(*testing.T) []Record {
				return twoBatches().load(1).load(2).end(RunVerified).
					process("zbrecover cleanup t --yes").deleteIntent("a", "b", "c").
					deleted(DeletedResult{Key: "a", Status: Deleted}).
					process("zbrecover cleanup t --yes").deleteIntent("b", "c").
					deleted(DeletedResult{Key: "b", Status: Deleted}, DeletedResult{Key: "c", Status: DeleteGone}).end(RunCleaned).records()
			},
			want: want{status: RunCleaned, batches: []BatchStatus{BatchVerified, BatchVerified},
				verified: []string{"a", "b", "c"}, loaded: []string{"a", "b", "c"}, processes: 3,
				deleted: map[string]DeleteStatus{"a": Deleted, "b": Deleted, "c": DeleteGone}},
		},
		{
			name: "unknown batch is not verified and not unfinished",
			recs: func(*testing.T) []Record {
				return twoBatches().load(1).intent(2).result(2, Int64(0), "").outcome(2, BatchUnknown).end(RunUnknown).records()
			},
			want: want{status: RunUnknown, batches: []BatchStatus{BatchVerified, BatchUnknown},
				verified: []string{"a", "b"}, loaded: []string{"a", "b", "c"}, processes: 1},
		},
		{
			name: "torn last line is left out with a warning",
			recs: func(t *testing.T) []Record {
				data := twoBatches().load(1).intent(2).jsonl(t)
				data = append(data, []byte(`{"v":1,"run":"r1","seq":9,"kind":"res`)...)
				recs, _, warns, err := parseLines(data, "r1")
				if err != nil || len(warns) != 1 {
					t.Fatalf("parseLines: %v, warnings %q", err, warns)
				}
				return recs
			},
			want: want{status: RunLoading, batches: []BatchStatus{BatchVerified, BatchOpen}, open: []int{2},
				verified: []string{"a", "b"}, loaded: []string{"a", "b", "c"}, unfinished: true, processes: 1},
		},
		{
			name: "record of an unknown kind is kept and reported",
			recs: func(*testing.T) []Record {
				b := twoBatches().load(1)
				b.add(Record{V: 2, Kind: "archive", Raw: []byte(`{"v":2,"kind":"archive"}`)})
				b.recs[len(b.recs)-1].V = 2
				return b.load(2).end(RunVerified).records()
			},
			want: want{status: RunVerified, batches: []BatchStatus{BatchVerified, BatchVerified},
				verified: []string{"a", "b", "c"}, loaded: []string{"a", "b", "c"}, processes: 1, warnings: 1},
		},
		{
			name: "records out of order are sorted by seq",
			recs: func(*testing.T) []Record {
				rs := twoBatches().load(1).load(2).records()
				slices.Reverse(rs)
				return rs
			},
			want: want{status: RunVerified, batches: []BatchStatus{BatchVerified, BatchVerified},
				verified: []string{"a", "b", "c"}, loaded: []string{"a", "b", "c"}, processes: 1},
		},
		{
			name: "gap in seq",
			recs: func(*testing.T) []Record {
				return twoBatches().load(1).load(2).edit(func(r *Record) bool { return r.Seq != 4 })
			},
			wantErr: "run r1: seq 5 follows seq 3 (records 4 to 4 are missing)",
		},
		{
			name: "missing first records",
			recs: func(*testing.T) []Record {
				return twoBatches().load(1).edit(func(r *Record) bool { return r.Seq > 2 })
			},
			wantErr: "run r1: seq 3 follows seq 0",
		},
		{
			name:    "classification without an intent",
			recs:    func(*testing.T) []Record { return twoBatches().outcome(1, BatchVerified).records() },
			wantErr: "run r1 seq 3 (outcome): classification of batch 1 without an intent",
		},
		{
			name:    "result without an intent",
			recs:    func(*testing.T) []Record { return twoBatches().result(1, Int64(20), "").records() },
			wantErr: "result for batch 1, which has no intent",
		},
		{
			name: "second result for one intent",
			recs: func(*testing.T) []Record {
				return twoBatches().intent(1).result(1, Int64(20), "").result(1, Int64(20), "").records()
			},
			wantErr: "result for batch 1, which is loaded after its intent (seq 3)",
		},
		{
			name: "intent for a batch no plan names",
			recs: func(*testing.T) []Record {
				return twoBatches().add(Record{Kind: KindIntent, Intent: &Intent{Batch: 7}}).records()
			},
			wantErr: "intent for batch 7, which no plan names",
		},
		{
			name:    "intent for a verified batch",
			recs:    func(*testing.T) []Record { return twoBatches().load(1).intent(1).records() },
			wantErr: "intent for batch 1, which is verified",
		},
		{
			name:    "intent while the batch is open",
			recs:    func(*testing.T) []Record { return twoBatches().intent(1).intent(1).records() },
			wantErr: "intent for batch 1, which is open",
		},
		{
			name: "intent naming a file of another batch",
			recs: func(*testing.T) []Record {
				return twoBatches().add(Record{Kind: KindIntent, Intent: &Intent{Batch: 1, Files: []File{{Key: "c"}}}}).records()
			},
			wantErr: "intent for batch 1 names c, which its plan does not",
		},
		{
			name:    "batch planned twice",
			recs:    func(*testing.T) []Record { return twoBatches().plan(batch(2, "d")).records() },
			wantErr: "batch 2 is planned twice",
		},
		{
			name:    "file in two batches",
			recs:    func(*testing.T) []Record { return twoBatches().plan(batch(3, "a")).records() },
			wantErr: "file a is in batch 1 and batch 3",
		},
		{
			name: "delete intent for a file of an unverified batch",
			recs: func(*testing.T) []Record {
				return twoBatches().load(1).intent(2).result(2, Int64(0), "").outcome(2, BatchUnknown).deleteIntent("c").records()
			},
			wantErr: "delete intent for c, which no verified batch holds",
		},
		{
			name: "delete intent with another version than verified",
			recs: func(*testing.T) []Record {
				b := twoBatches().load(1)
				return b.add(Record{Kind: KindDeleteIntent, Deletion: &Deletion{Files: []File{{Key: "a", Size: 100, ETag: `"other"`}}}}).records()
			},
			wantErr: "delete intent for a with another version than the verified one",
		},
		{
			name: "deletion without a delete intent",
			recs: func(*testing.T) []Record {
				return twoBatches().load(1).deleted(DeletedResult{Key: "a", Status: Deleted}).records()
			},
			wantErr: "deletion of a without a delete intent",
		},
		{
			name: "first record is not a run record",
			recs: func(*testing.T) []Record {
				rs := twoBatches().records()
				rs[0].Kind, rs[0].Header, rs[0].Plan = KindPlan, nil, &Plan{}
				return rs
			},
			wantErr: "run r1: first record is plan, not run",
		},
		{
			name: "records of two runs",
			recs: func(*testing.T) []Record {
				return append(twoBatches().records(), newRun("r2").records()...)
			},
			wantErr: "run r1: seq 1 belongs to run r2",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := Replay(c.recs(t))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Replay error = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Replay: %v", err)
			}
			w := c.want
			if st.Status != w.status {
				t.Errorf("status = %s, want %s", st.Status, w.status)
			}
			var got []BatchStatus
			for _, b := range st.Batches {
				got = append(got, b.Status)
			}
			if !slices.Equal(got, w.batches) {
				t.Errorf("batches = %v, want %v", got, w.batches)
			}
			if g := batchNums(st.OpenBatches()); !slices.Equal(g, w.open) {
				t.Errorf("open batches = %v, want %v", g, w.open)
			}
			if g := batchNums(st.Remaining()); !slices.Equal(g, w.remaining) {
				t.Errorf("remaining batches = %v, want %v", g, w.remaining)
			}
			if g := keys(st.VerifiedFiles()); !slices.Equal(g, w.verified) {
				t.Errorf("verified files = %v, want %v", g, w.verified)
			}
			var loaded []string
			for k := range st.LoadedKeys() {
				loaded = append(loaded, k)
			}
			sort.Strings(loaded)
			if !slices.Equal(loaded, w.loaded) {
				t.Errorf("loaded keys = %v, want %v", loaded, w.loaded)
			}
			gotDel := map[string]DeleteStatus{}
			for _, f := range st.Deleted() {
				gotDel[f.Key] = f.Delete
			}
			if len(gotDel) != len(w.deleted) {
				t.Errorf("deleted = %v, want %v", gotDel, w.deleted)
			}
			for k, v := range w.deleted {
				if gotDel[k] != v {
					t.Errorf("deleted[%s] = %q, want %q", k, gotDel[k], v)
				}
			}
			if st.Unfinished() != w.unfinished {
				t.Errorf("unfinished = %v, want %v", st.Unfinished(), w.unfinished)
			}
			if len(st.Processes) != w.processes {
				t.Errorf("processes = %d, want %d", len(st.Processes), w.processes)
			}
			if len(st.Warnings) != w.warnings || len(st.Unknown) != w.warnings {
				t.Errorf("warnings = %q, unknown records %d, want %d", st.Warnings, len(st.Unknown), w.warnings)
			}
		})
	}
}

func TestReplayDetails(t *testing.T) {
	b := newRun("r1").plan(batch(1, "a", "b"), batch(2, "c")).load(1).intent(2)
	// The second attempt of batch 2 saw file c with a new ETag (the caller re-listed it).
	b.result(2, nil, "503 Service Unavailable").outcome(2, BatchFailed)
	in := *b.recs[len(b.recs)-3].Intent
	in.Files = []File{{Key: "c", Size: 100, ETag: `"e-c-2"`, Rows: 10}}
	b.add(Record{Kind: KindIntent, Intent: &in}).result(2, Int64(10), "").outcome(2, BatchVerified)
	st, err := Replay(b.records())
	if err != nil {
		t.Fatal(err)
	}
	b2 := st.Batch(2)
	if b2.Attempts != 2 || b2.Result.Err != "" || *b2.Result.Inserted != 10 || b2.IntentSeq != 9 {
		t.Errorf("batch 2 = %+v", b2)
	}
	f, ok := st.File("c")
	if !ok || f.ETag != `"e-c-2"` || f.Precondition().ETag != `"e-c-2"` || f.Batch != 2 || f.Status != BatchVerified {
		t.Errorf("file c = %+v", f)
	}
	if st.Started != t0.Add(time.Second) || st.Table != "main.s.t" || st.LastSeq != 11 {
		t.Errorf("state header = %v %q %d", st.Started, st.Table, st.LastSeq)
	}
	if st.ExpectedRows() != 30 || st.InsertedRows() != 30 {
		t.Errorf("rows = %d expected, %d inserted", st.ExpectedRows(), st.InsertedRows())
	}
	// Every batch verified: the run is verified, end record or not.
	if st.Status != RunVerified || st.End != nil {
		t.Errorf("status %s, end %v", st.Status, st.End)
	}
	if _, ok := st.File("zz"); ok || st.Batch(9) != nil {
		t.Error("unknown file or batch found")
	}
}
