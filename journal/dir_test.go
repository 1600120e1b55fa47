package journal

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func runPathIn(dir, run string) string { return filepath.Join(dir, target.TableID, run+".jsonl") }

func TestDirDurability(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	must(t, err)
	defer d.Close()
	var synced []string
	defer func(f func(*os.File) error) { syncFile = f }(syncFile)
	syncFile = func(f *os.File) error {
		synced = append(synced, f.Name())
		return f.Sync()
	}
	ctx := context.Background()
	w, err := Start(ctx, d, target, "run-1", Header{User: "ops"})
	must(t, err)
	// A new run fsyncs the journal directory (new table folder), the table folder (new file)
	// and the file.
	want := []string{dir, filepath.Join(dir, target.TableID), runPathIn(dir, "run-1")}
	if strings.Join(synced, " ") != strings.Join(want, " ") {
		t.Errorf("synced %q, want %q", synced, want)
	}
	synced = nil
	pb := batch(1, "a.parquet")
	must(t, w.Append(ctx, Record{Kind: KindPlan, Plan: &Plan{Batches: []PlanBatch{pb}}}))
	must(t, w.Append(ctx, Record{Kind: KindIntent, Intent: &Intent{Batch: 1, Files: pb.Files, SQL: pb.SQL}}))
	if len(synced) != 2 || synced[0] != runPathIn(dir, "run-1") {
		t.Errorf("synced %q, want the run file once per record", synced)
	}
	// Without Close, the records are in the file, whole lines.
	data, err := os.ReadFile(runPathIn(dir, "run-1"))
	must(t, err)
	if n := bytes.Count(data, []byte("\n")); n != 3 || !bytes.HasSuffix(data, []byte("\n")) || !bytes.Contains(data, []byte(`"kind":"intent"`)) {
		t.Errorf("file after 3 appends without Close:\n%s", data)
	}
	if fi, err := os.Stat(runPathIn(dir, "run-1")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("run file mode: %v %v", fi.Mode(), err)
	}
	// A failed fsync fails Append, takes the line back and keeps the numbering.
	syncFile = func(*os.File) error { return errors.New("disk gone") }
	if err := w.Append(ctx, Record{Kind: KindEnd, End: &End{}}); err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("append with a failing fsync: %v", err)
	}
	if again, _ := os.ReadFile(runPathIn(dir, "run-1")); !bytes.Equal(again, data) {
		t.Errorf("a failed append left bytes behind:\n%s", again)
	}
	syncFile = func(f *os.File) error { return f.Sync() }
	// The writer stops; a new process continues the run from what is stored.
	if err := w.Append(ctx, Record{Kind: KindEnd, End: &End{State: RunPlanned}}); err == nil || !strings.Contains(err.Error(), "continue the run in a new process") {
		t.Fatalf("append after a failed append: %v", err)
	}
	st, err := ReadState(ctx, d, target.TableID, "run-1")
	must(t, err)
	w2, err := Continue(ctx, d, st, Header{Command: "re-run"})
	must(t, err)
	must(t, w2.Append(ctx, Record{Kind: KindEnd, End: &End{State: RunPlanned}}))
	st, err = ReadState(ctx, d, target.TableID, "run-1")
	must(t, err)
	if st.LastSeq != 5 || st.End == nil || len(st.Processes) != 2 {
		t.Errorf("after recovery: last seq %d, end %v", st.LastSeq, st.End)
	}
}

func TestDirTornLastLine(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	must(t, err)
	ctx := context.Background()
	w := writeRun(t, d, target, "run-1", t0, [][]string{{"a"}, {"b"}}, 1)
	must(t, d.Close())
	// A crash in the middle of the next record's write.
	f, err := os.OpenFile(runPathIn(dir, "run-1"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString(`{"v":1,"run":"run-1","seq":6,"time":"2025-03-04T05:06:07Z","kind":"inte`)
	must(t, err)
	must(t, f.Close())

	d2, err := OpenDir(dir)
	must(t, err)
	defer d2.Close()
	log, err := d2.Read(ctx, target.TableID, "run-1")
	must(t, err)
	if len(log.Records) != w.Seq() || len(log.Warnings) != 1 || !strings.Contains(log.Warnings[0], "line 6 is incomplete") {
		t.Fatalf("read %d records (want %d), warnings %q", len(log.Records), w.Seq(), log.Warnings)
	}
	st, err := ReadState(ctx, d2, target.TableID, "run-1")
	must(t, err)
	if len(st.Warnings) != 1 || st.Status != RunLoading {
		t.Errorf("state %s, warnings %q", st.Status, st.Warnings)
	}
	// The next process continues the run: the torn line is cut, the new record starts a line.
	w2, err := Continue(ctx, d2, st, Header{Command: "re-run"})
	must(t, err)
	must(t, w2.Append(ctx, Record{Kind: KindEnd, End: &End{State: RunFailed}}))
	log, err = d2.Read(ctx, target.TableID, "run-1")
	must(t, err)
	if len(log.Warnings) != 0 || len(log.Records) != 7 || log.Records[5].Header.Command != "re-run" {
		t.Errorf("after the re-run: %d records, warnings %q", len(log.Records), log.Warnings)
	}
	if _, err := Replay(log.Records); err != nil {
		t.Error(err)
	}
}

func TestDirDamageInTheMiddle(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	must(t, err)
	defer d.Close()
	writeRun(t, d, target, "run-1", t0, [][]string{{"a"}}, 1)
	data, err := os.ReadFile(runPathIn(dir, "run-1"))
	must(t, err)
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines[2] = []byte("{\"v\":1,\"ru\n")
	must(t, os.WriteFile(runPathIn(dir, "run-1"), bytes.Join(lines, nil), 0o600))
	if _, err := d.Read(context.Background(), target.TableID, "run-1"); err == nil || !strings.Contains(err.Error(), "run run-1 line 3") {
		t.Errorf("read of a damaged run: %v", err)
	}
	if _, err := ReadState(context.Background(), d, target.TableID, "run-1"); err == nil || !strings.Contains(err.Error(), "run run-1 line 3") {
		t.Errorf("replay of a damaged run: %v", err)
	}
	d2, err := OpenDir(dir)
	must(t, err)
	defer d2.Close()
	err = d2.Append(context.Background(), Record{V: 1, Run: "run-1", Seq: 7, TableID: target.TableID, Kind: KindEnd, End: &End{}})
	if err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("append to a damaged run: %v", err)
	}
}

// TestDirLockDiesWithItsProcess takes the lock in a child process, then kills it: the lock
// is free again without any force.
func TestDirLockDiesWithItsProcess(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("flock is a Unix lock")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHolderProcess$")
	cmd.Env = append(os.Environ(), "JOURNAL_LOCK_HOLDER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	d, err := OpenDir(dir)
	must(t, err)
	_, err = d.Lock(context.Background(), target.TableID, LockOptions{})
	var le *LockedError
	if !errors.As(err, &le) || le.Holder.PID != cmd.Process.Pid || le.Holder.Command != "child" {
		t.Fatalf("lock held by the child: %v (holder %+v)", err, le)
	}
	must(t, cmd.Process.Kill())
	_ = cmd.Wait()
	l, err := d.Lock(context.Background(), target.TableID, LockOptions{})
	must(t, err)
	must(t, l.Close())
}

// TestLockHolderProcess is the child of TestDirLockDiesWithItsProcess.
func TestLockHolderProcess(t *testing.T) {
	dir := os.Getenv("JOURNAL_LOCK_HOLDER_DIR")
	if dir == "" {
		t.Skip("run as a child process only")
	}
	d, err := OpenDir(dir)
	must(t, err)
	if _, err := d.Lock(context.Background(), target.TableID, LockOptions{Owner: Holder{Command: "child"}}); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	time.Sleep(time.Minute)
}

// TestDirSnapshotTornLine: a torn line after the records a snapshot summarises leaves the
// snapshot current (the line is no record); the replay still warns of it.
func TestDirSnapshotTornLine(t *testing.T) {
	ts := dirOpener(t)
	ctx := context.Background()
	writeRun(t, ts.a, target, "run-1", t0, [][]string{{"a"}, {"b"}}, 2)
	craftSnapshot(t, ts, target.TableID, "run-1", markCrafted)
	path := filepath.Join(ts.a.Location(), target.TableID, "run-1.jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString(`{"v":1,"run":"run-1","seq":10,"kind":"ver`)
	must(t, err)
	must(t, f.Close())
	sums, facts := readBoth(t, ts, target.TableID)
	if s, fs := fromSnapshot(sums, facts); !s || !fs {
		t.Errorf("a torn line made the snapshot stale: %+v", sums[0])
	}
	st, err := ReadState(ctx, ts.fresh(), target.TableID, "run-1")
	must(t, err)
	if len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "line 10 is incomplete") || st.LastSeq != 9 {
		t.Errorf("replay: last seq %d, warnings %q", st.LastSeq, st.Warnings)
	}
	// A record after the torn line (which no writer leaves: the next append cuts it) makes
	// the file other records than the snapshot's.
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString("\n")
	must(t, err)
	must(t, f.Close())
	if sums, err := Runs(ctx, ts.fresh(), target.TableID); err != nil || sums[0].Command == crafted || sums[0].Problem == "" {
		t.Errorf("a damaged line after the snapshot's records: %+v, %v", sums, err)
	}
}

// Two processes that both passed their own check append one record number at the same moment
// (two handles on one run file, racing): one record is written, the other append fails with
// ErrRunConflict, every round.
func TestDirAppendsOfOneNumberRace(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	rounds := 300
	if testing.Short() {
		rounds = 30
	}
	for i := 0; i < rounds; i++ {
		run := fmt.Sprintf("run-%d", i)
		a, err := OpenDir(dir)
		must(t, err)
		b, err := OpenDir(dir)
		must(t, err)
		_, err = Start(ctx, a, target, run, Header{})
		must(t, err)
		// b opens the run file and learns its next number (2) from a refused append.
		if err := b.Append(ctx, Record{V: 1, Run: run, Seq: 9, TableID: target.TableID, Kind: KindEnd, End: &End{}}); !errors.Is(err, ErrRunConflict) {
			t.Fatalf("append of number 9: %v", err)
		}
		recs := []Record{
			{V: 1, Run: run, Seq: 2, TableID: target.TableID, Kind: KindEnd, End: &End{State: RunPlanned}},
			{V: 1, Run: run, Seq: 2, TableID: target.TableID, Kind: KindRun, Header: &Header{Command: "second"}},
		}
		var errs [2]error
		var wg sync.WaitGroup
		start := make(chan struct{})
		for k, s := range []*Dir{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[k] = s.Append(ctx, recs[k])
			}()
		}
		close(start)
		wg.Wait()
		a.Close()
		b.Close()
		log, err := a.Read(ctx, target.TableID, run)
		must(t, err)
		if len(log.Records) != 2 || (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("round %d: %d records, append errors %v", i, len(log.Records), errs)
		}
		for _, err := range errs {
			if err != nil && !errors.Is(err, ErrRunConflict) {
				t.Fatalf("round %d: %v, want ErrRunConflict", i, err)
			}
		}
	}
}
