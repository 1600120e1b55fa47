package inspect

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// TestListSplitOnePass: however the keys look (generated hex names, day folders, one
// name pattern), listing in ranges delivers every object exactly once, and costs at most
// one list request per range more than the pages its objects fill.
func TestListSplitOnePass(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	layouts := map[string]func(i int) string{
		"hex":     func(i int) string { return fmt.Sprintf("%016x.parquet", rng.Uint64()) },
		"days":    func(i int) string { return fmt.Sprintf("2026-01-%02d/part-%05d.parquet", 1+i%28, i) },
		"pattern": func(i int) string { return fmt.Sprintf("part-%07d-c000.snappy.parquet", i) },
		"counter": func(i int) string { return fmt.Sprintf("%08x.parquet", i) },
		"mixed":   func(i int) string { return fmt.Sprintf("%c/%d.parquet", "aZ_9é"[i%5], i) },
	}
	const pageSize = 100
	for name, key := range layouts {
		for _, n := range []int{0, 1, 99, 100, 101, 5000, 10000} {
			t.Run(fmt.Sprintf("%s/%d", name, n), func(t *testing.T) {
				m := mem.New(mem.WithPageSize(pageSize))
				want := map[string]bool{}
				for i := 0; i < n; i++ {
					k := "fb/" + key(i)
					m.Set(k, []byte("x"), time.Time{})
					want[k] = true
				}
				m.Set("other/x.parquet", []byte("x"), time.Time{}) // outside the prefix
				b, counter := storage.WithCounting(m)
				var (
					mu  sync.Mutex
					got = map[string]int{}
				)
				err := listSplit(context.Background(), b, "fb/", DefaultListSplits, func(o storage.ObjectInfo) error {
					mu.Lock()
					got[o.Key]++
					mu.Unlock()
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				for k, c := range got {
					if c != 1 || !want[k] {
						t.Errorf("%s delivered %d times (listed: %v)", k, c, want[k])
					}
				}
				if len(got) != len(want) {
					t.Errorf("%d objects delivered, want %d", len(got), len(want))
				}
				pages := max(1, (len(want)+pageSize-1)/pageSize)
				if n <= serialPages*pageSize && counter.Counts().ListPages != int64(pages) {
					t.Errorf("%d list requests for %d objects: a small folder costs its pages", counter.Counts().ListPages, n)
				}
				if lp := counter.Counts().ListPages; lp > int64(pages+2*DefaultListSplits) {
					t.Errorf("%d list requests for %d pages and at most %d ranges", lp, pages, 2*DefaultListSplits)
				}
			})
		}
	}
}

func TestSplitBounds(t *testing.T) {
	var seen [256]bool
	for _, c := range "0123456789abcdef" {
		seen[c] = true
	}
	got := splitBounds("p/", &seen, "0123", 100, "")
	for i, b := range got {
		if b <= "p/0123" || i > 0 && b <= got[i-1] {
			t.Fatalf("bounds %q: not sorted after the last key", got)
		}
	}
	// The coarsest cuts first: every first character after '0' that names use.
	if got[len(got)-1] != "p/f" || got[0] != "p/0124" {
		t.Errorf("bounds %q", got)
	}
	if got := splitBounds("p/", &seen, "0123", 3, ""); len(got) != 3 || got[0] != "p/1" {
		t.Errorf("bounds %q, want the 3 coarsest", got)
	}
	// Inside a range ending at p/02, only bounds before it.
	if got := splitBounds("p/", &seen, "0123", 100, "p/02"); len(got) == 0 || got[len(got)-1] >= "p/02" || got[0] != "p/0124" {
		t.Errorf("bounds %q within p/02", got)
	}
}
