package cleanup

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// randomChecker answers a re-check with a verdict per batch drawn once per batch.
type randomChecker struct {
	verdict map[int]journal.Check
}

func (c *randomChecker) Check(_ context.Context, st *journal.State) (*journal.Verification, error) {
	v := &journal.Verification{By: "cleanup"}
	ok := true
	for _, b := range st.Batches {
		ch, found := c.verdict[b.Batch]
		if !found {
			ch = journal.Check{Batch: b.Batch}
		}
		ok = ok && ch.OK
		v.Checks = append(v.Checks, ch)
	}
	v.OK = &ok
	return v, nil
}

// TestPropertyCleanupStaysInside writes random journals (keys anywhere under the root: in
// the fallback folder, in the Delta log, in hidden folders, with ".." and empty elements;
// batches in every state; then edited, truncated, or joined by a foreign run) over a store
// holding an object at every key, and runs cleanup with random re-check verdicts. Whatever
// it does, it never deletes outside the fallback folder, never a file whose batch the
// re-check did not prove, and nothing at all of a run whose journal names a key outside.
func TestPropertyCleanupStaysInside(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 30
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { cleanupProperty(t, seed) })
	}
}

var keyShapes = []func(r *rand.Rand, i int) string{
	func(r *rand.Rand, i int) string {
		return fmt.Sprintf("%s2026/01/%02d/f-%d.parquet", prefix, 1+r.Intn(3), i)
	},
	func(r *rand.Rand, i int) string { return fmt.Sprintf("%sf-%d.parquet", prefix, i) },
	func(r *rand.Rand, i int) string { return fmt.Sprintf("%ssig=1/token=%d.parquet", prefix, i) },
	func(r *rand.Rand, i int) string { return fmt.Sprintf("_delta_log/%020d.json", i) },
	func(r *rand.Rand, i int) string { return fmt.Sprintf("part-%05d.snappy.parquet", i) },
	func(r *rand.Rand, i int) string { return fmt.Sprintf("%s_hidden/f-%d.parquet", prefix, i) },
	func(r *rand.Rand, i int) string { return fmt.Sprintf("%s../f-%d.parquet", prefix, i) },
	func(r *rand.Rand, i int) string { return fmt.Sprintf("%sa//f-%d.parquet", prefix, i) },
	func(r *rand.Rand, i int) string { return fmt.Sprintf("_zerobus/other/f-%d.parquet", i) },
	func(r *rand.Rand, i int) string { return fmt.Sprintf("%s_delta_log/%d.json", prefix, i) },
}

func cleanupProperty(t *testing.T, seed int64) {
	r := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	b := mem.New()
	fx := newFixture(t)
	outsideShare := []int{0, 0, 1, 3}[r.Intn(4)] // how many of the shapes to draw outside keys from
	nFiles := 3 + r.Intn(15)
	var keys []string
	for i := 0; i < nFiles; i++ {
		shape := r.Intn(3)
		if outsideShare > 0 && r.Intn(4) == 0 {
			shape = 3 + r.Intn(len(keyShapes)-3)
		}
		k := keyShapes[shape](r, i)
		b.Set(k, []byte("bytes of "+k), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		keys = append(keys, k)
	}
	// Objects the journal does not name, in and around the fallback folder.
	for _, k := range []string{prefix + "later.parquet", "_delta_log/00000000000000000000.json", prefix + "_SUCCESS"} {
		b.Set(k, []byte("other"), time.Now())
	}
	// Batches of 1–3 files in random states.
	w, err := journal.Start(ctx, fx.store, journal.Target{TableID: fx.table, Table: "main.s.t", Root: b.Location()}, "", journal.Header{Command: "reload"})
	if err != nil {
		t.Fatal(err)
	}
	var batches []journal.PlanBatch
	for i, n := 0, 1; i < len(keys); n++ {
		size := min(1+r.Intn(3), len(keys)-i)
		pb := journal.PlanBatch{Batch: n, Group: "g", Folder: prefix, SQL: fmt.Sprintf("COPY INTO %d", n)}
		for _, k := range keys[i : i+size] {
			o, _ := b.Stat(ctx, k)
			pb.Files = append(pb.Files, journal.FileOf(o, 2))
			pb.ExpectedRows += 2
		}
		batches = append(batches, pb)
		i += size
	}
	must(t, w.Append(ctx, journal.Record{Kind: journal.KindPlan, Plan: &journal.Plan{Batches: batches}}))
	statuses := []journal.BatchStatus{journal.BatchVerified, journal.BatchVerified, journal.BatchVerified, journal.BatchUnknown, journal.BatchFailed, journal.BatchMismatch}
	settled := r.Intn(3) > 0 // most runs are cleanable: every batch verified or unknown
	if settled {
		statuses = statuses[:4]
	}
	ck := &randomChecker{verdict: map[int]journal.Check{}}
	for _, pb := range batches {
		status := statuses[r.Intn(len(statuses))]
		if !settled && r.Intn(5) == 0 {
			continue // planned only
		}
		must(t, w.Append(ctx, journal.Record{Kind: journal.KindIntent, Intent: &journal.Intent{Batch: pb.Batch, Files: pb.Files, ExpectedRows: pb.ExpectedRows, SQL: pb.SQL}}))
		if !settled && r.Intn(6) == 0 {
			continue // open
		}
		must(t, w.Append(ctx, journal.Record{Kind: journal.KindResult, Result: &journal.Result{Batch: pb.Batch, Inserted: journal.Int64(pb.ExpectedRows)}}))
		must(t, w.Append(ctx, journal.Record{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: pb.Batch, Status: status, Evidence: journal.EvidenceAnswer}}))
		c := journal.Check{Batch: pb.Batch, OK: r.Intn(3) > 0}
		if c.OK && r.Intn(3) > 0 {
			c.Evidence = journal.EvidenceAnswer
		}
		ck.verdict[pb.Batch] = c
	}
	must(t, w.Append(ctx, journal.Record{Kind: journal.KindEnd, End: &journal.End{State: journal.RunVerified}}))
	run := w.Run()
	file := filepath.Join(fx.store.Location(), fx.table, run+".jsonl")
	switch r.Intn(5) {
	case 0: // truncated at a line
		data, _ := os.ReadFile(file)
		lines := strings.SplitAfter(string(data), "\n")
		cut := 1 + r.Intn(len(lines)-1)
		must(t, os.WriteFile(file, []byte(strings.Join(lines[:cut], "")), 0o600))
	case 1: // edited: a key turned into a Delta log file in every record
		if len(keys) > 0 {
			data, _ := os.ReadFile(file)
			k := keys[r.Intn(len(keys))]
			edited := strings.ReplaceAll(string(data), `"`+k+`"`, `"_delta_log/00000000000000000000.json"`)
			must(t, os.WriteFile(file, []byte(edited), 0o600))
		}
	case 2: // a foreign run copied into this table's folder
		data, _ := os.ReadFile(file)
		foreign := strings.ReplaceAll(string(data), fx.table, "tbl-9999")
		must(t, os.WriteFile(filepath.Join(fx.store.Location(), fx.table, "20260101T000000Z-ffffffff.jsonl"), []byte(strings.ReplaceAll(foreign, run, "20260101T000000Z-ffffffff")), 0o600))
	}
	fx.store.Close()
	store, err := journal.OpenDir(fx.store.Location())
	must(t, err)
	defer store.Close()

	before := map[string]bool{}
	_ = b.List(ctx, "", func(o storage.ObjectInfo) error { before[o.Key] = true; return nil })
	prep, err := Prepare(ctx, Config{Journal: store, TableID: fx.table, Root: b.Location(), Backend: b, Prefix: prefix, Checker: ck}, Request{Run: run})
	if err == nil {
		_, _ = prep.Execute(ctx, Options{})
		prep.Close()
	}
	st, rerr := journal.ReadState(ctx, store, fx.table, run)
	outside := false
	if rerr == nil {
		for _, f := range st.Files() {
			if fallback.CheckKey(prefix, f.Key) != nil {
				outside = true
			}
		}
	}
	for k := range before {
		if _, err := b.Stat(ctx, k); err == nil {
			continue
		}
		// k was deleted.
		if fallback.CheckKey(prefix, k) != nil {
			t.Errorf("deleted %s, outside the fallback folder", k)
		}
		if outside {
			t.Errorf("deleted %s of a run whose journal names a key outside the fallback folder", k)
		}
		if rerr != nil {
			t.Errorf("deleted %s of a run that does not replay (%v)", k, rerr)
			continue
		}
		f, ok := st.File(k)
		if !ok {
			t.Errorf("deleted %s, which the run does not hold", k)
			continue
		}
		c := ck.verdict[f.Batch]
		if f.Status != journal.BatchVerified || !c.OK || c.Evidence == "" {
			t.Errorf("deleted %s of batch %d (%s), whose re-check is ok %v with evidence %q", k, f.Batch, f.Status, c.OK, c.Evidence)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
