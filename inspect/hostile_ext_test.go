package inspect_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/memstat"
)

// Each hostile footer class (declared counts, nesting depth, sizes) comes back as an
// unreadable file whose error names the limit, at the default concurrency, without a crash.
func TestHostileFootersAreUnreadable(t *testing.T) {
	s := newStore()
	cases := inspect.HostileFooters()
	for name, c := range cases {
		s.put(prefix+strings.ReplaceAll(name, "/", "-")+".parquet", inspect.ParquetFile(c.Footer), t0)
	}
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != len(cases) || rep.Totals.Unreadable != len(cases) {
		t.Fatalf("%d files, %d unreadable, want %d of each", len(rep.Files), rep.Totals.Unreadable, len(cases))
	}
	for _, fi := range rep.Files {
		name := strings.Replace(strings.TrimSuffix(fi.Key, ".parquet"), "-", "/", 1)
		c, ok := cases[name]
		if !ok {
			t.Fatalf("unexpected file %s", fi.Key)
		}
		if !strings.HasPrefix(fi.Error, "footer rejected: ") || !strings.Contains(fi.Error, c.Want) {
			t.Errorf("%s: error %q, want a rejected footer mentioning %q", name, fi.Error, c.Want)
		}
		if strings.Contains(fi.Error, inspect.ErrPanic.Error()) {
			t.Errorf("%s: reached the Parquet library: %s", name, fi.Error)
		}
	}
}

// A footer longer than MaxFooterSize is refused from its length alone.
func TestOversizedFooterLength(t *testing.T) {
	s := newStore()
	data := make([]byte, inspect.MaxFooterSize+100)
	copy(data, "PAR1")
	l := uint32(inspect.MaxFooterSize + 1)
	tail := data[len(data)-8:]
	tail[0], tail[1], tail[2], tail[3] = byte(l), byte(l>>8), byte(l>>16), byte(l>>24)
	copy(tail[4:], "PAR1")
	s.put(prefix+"big.parquet", data, t0)
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if e := rep.Files[0].Error; !strings.Contains(e, "over the 16777216-byte limit") {
		t.Errorf("error %q", e)
	}
	if got := s.readsOf(prefix + "big.parquet"); got != 1 {
		t.Errorf("%d reads, want 1 (the tail)", got)
	}
}

// Files whose footers claim more rows than they could hold (2^62 rows in a few hundred bytes,
// three times over) are unreadable with the reason, and the totals hold only the plausible
// files, without wrapping negative.
func TestImplausibleRowCounts(t *testing.T) {
	s := newStore()
	for i := 0; i < 3; i++ {
		s.put(prefix+fmt.Sprintf("lie-%d.parquet", i), inspect.ParquetFile(inspect.BuildFooter(1, 1, 1<<62)), t0)
	}
	s.put(prefix+"ok.parquet", inspect.ParquetFile(inspect.BuildFooter(1, 1, 1000)), t0)
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Rows != 1000 || rep.Totals.Unreadable != 3 {
		t.Fatalf("totals %+v, want 1000 rows and 3 unreadable", rep.Totals)
	}
	for _, fi := range rep.Files[:3] {
		if !strings.Contains(fi.Error, "implausible footer: 4611686018427387904 rows in a") {
			t.Errorf("%s: error %q", fi.Key, fi.Error)
		}
	}
}

// A footer with more key-value entries than a report keeps says how many it left out.
func TestManyKeyValuesAreCut(t *testing.T) {
	s := newStore()
	s.put(prefix+"kv.parquet", inspect.ParquetFile(inspect.BuildFooterKV(10000)), t0)
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fi := rep.Files[0]
	if fi.Unreadable() || len(fi.KeyValue) != inspect.MaxKeyValueEntries || fi.KeyValueDropped != 10000-inspect.MaxKeyValueEntries {
		t.Errorf("%d entries kept, %d dropped, error %q", len(fi.KeyValue), fi.KeyValueDropped, fi.Error)
	}
}

func TestAddRowsSaturates(t *testing.T) {
	if got := inspect.AddRows(math.MaxInt64-1, 5); got != math.MaxInt64 {
		t.Errorf("got %d", got)
	}
	if got := inspect.AddRows(2, 3); got != 5 {
		t.Errorf("got %d", got)
	}
}

// BenchmarkInspectHostile measures the peak heap of inspecting, at the default concurrency
// (64), 64 files of each hostile footer class plus 64 files whose footers are valid but each
// need close to the per-footer budget (MaxFooterMemory) to parse. The hostile ones are refused
// by the pre-scan; the heavy ones wait for their share of FooterMemoryInFlight. Figures and
// command in docs/performance.md.
//
//	go test -run XXX -bench InspectHostile -benchtime 3x ./inspect
func BenchmarkInspectHostile(b *testing.B) {
	s := newStore()
	cases := inspect.HostileFooters()
	heavy := inspect.ParquetFile(inspect.BuildHeavyFooter())
	files := map[string][]byte{}
	for name, c := range cases {
		files[name] = inspect.ParquetFile(c.Footer)
	}
	for i := 0; i < 64; i++ {
		for name := range cases {
			s.put(prefix+fmt.Sprintf("%s-%02d.parquet", strings.ReplaceAll(name, "/", "-"), i), files[name], t0)
		}
		s.put(prefix+fmt.Sprintf("heavy-%02d.parquet", i), heavy, t0)
	}
	// As the command line does (cmd.Main): a soft memory limit keeps garbage from piling up
	// between collections while footers are refused or parsed at this rate.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(inspect.DefaultMemoryLimit))
	var peak uint64
	for i := 0; i < b.N; i++ {
		base := memstat.LiveHeap()
		h := memstat.StartHeapPeak()
		rep, err := inspect.Run(context.Background(), s, inspect.Options{})
		p := h.Stop()
		if err != nil {
			b.Fatal(err)
		}
		if rep.Totals.Unreadable != 64*len(cases) || rep.Totals.Files != 64*(len(cases)+1) {
			b.Fatalf("totals %+v", rep.Totals)
		}
		if p > base && p-base > peak {
			peak = p - base
		}
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(inspect.FooterMemoryBudget)/(1<<20), "footer-budget-MiB")
	b.ReportMetric(float64(inspect.DefaultMemoryLimit)/(1<<20), "heap-limit-MiB")
	if peak > inspect.DefaultMemoryLimit {
		b.Errorf("peak heap %d MiB over the %d MiB limit", peak>>20, inspect.DefaultMemoryLimit>>20)
	}
}

var writeCorpus = flag.Bool("write-corpus", false, "rewrite testdata/fuzz/FuzzFooter/hostile-* from HostileFooters")

// The hostile footers small enough to keep in the repository are seeds of FuzzFooter, which
// go test runs as ordinary test cases; this test checks they are there and current.
func TestHostileFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzFooter")
	n := 0
	for name, c := range inspect.HostileFooters() {
		if len(c.Footer) > 64<<10 {
			continue
		}
		n++
		path := filepath.Join(dir, "hostile-"+strings.NewReplacer("/", "-", " ", "-").Replace(name))
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", inspect.ParquetFile(c.Footer))
		if *writeCorpus {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is missing or stale (run with -write-corpus): %v", path, err)
		}
	}
	if n < 5 {
		t.Errorf("only %d hostile seeds", n)
	}
}
