package inspect

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// The pre-scan's estimate is an upper bound on what parsing and converting a footer allocates
// (measured as the growth of the runtime's total allocation), for footers of every shape that
// stresses it: wide, deep, many row groups, statistics, many or long key-value entries. And it
// is not so loose that ordinary footers are refused.
func TestFooterEstimateBoundsAllocation(t *testing.T) {
	cases := map[string]footerSpec{
		"small":          {columns: 3, rowGroups: 1},
		"wide":           {columns: 5000, rowGroups: 1, stats: true},
		"row groups":     {columns: 4, rowGroups: 15000, stats: true},
		"deep":           {columns: 2, depth: 250, rowGroups: 2},
		"deep and wide":  {columns: 300, depth: 100, rowGroups: 1},
		"key values":     {columns: 1, keyValues: 50000, valueLen: 8},
		"long value":     {columns: 1, keyValues: 1, valueLen: 4 << 20},
		"long kv values": {columns: 1, keyValues: 40, valueLen: 100 << 10},
	}
	for name, spec := range cases {
		raw := buildFooter(spec)
		st, err := scanFooter(raw)
		if err != nil {
			t.Fatalf("%s: scan: %v", name, err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		md, err := metadata.NewFileMetaData(raw, nil)
		if err != nil {
			t.Fatalf("%s: parse: %v", name, err)
		}
		if _, err := extract(md); err != nil {
			t.Fatalf("%s: extract: %v", name, err)
		}
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(md)
		got := int64(after.TotalAlloc - before.TotalAlloc)
		t.Logf("%s: footer %d bytes, estimate %d, allocated %d (%.1fx)", name, len(raw), st.cost, got, float64(st.cost)/float64(got))
		if st.cost < got {
			t.Errorf("%s: estimate %d is below the %d bytes allocated", name, st.cost, got)
		}
		if st.cost > 1<<20 && st.cost > 12*got {
			t.Errorf("%s: estimate %d is more than 12 times the %d bytes allocated", name, st.cost, got)
		}
	}
}

// The scan counts what it saw.
func TestScanFooterStats(t *testing.T) {
	st, err := scanFooter(buildFooter(footerSpec{columns: 7, depth: 3, rowGroups: 5, keyValues: 2}))
	if err != nil {
		t.Fatal(err)
	}
	want := footerStats{cost: st.cost, schemaElems: 11, columns: 7, depth: 4, rowGroups: 5, keyValues: 2}
	if !reflect.DeepEqual(st, want) {
		t.Errorf("stats %+v, want %+v", st, want)
	}
}

// Converting a Parquet schema costs memory linear in its depth: doubling the depth about
// doubles the allocation (joining the column path at every level made it quadruple).
func TestSparkSchemaLinearInDepth(t *testing.T) {
	measure := func(depth int) uint64 {
		md, err := metadata.NewFileMetaData(buildFooter(footerSpec{columns: 1, depth: depth, groupName: strings.Repeat("g", 200)}), nil)
		if err != nil {
			t.Fatal(err)
		}
		var a, b runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&a)
		if _, err := SparkSchema(md.Schema); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	a, b := measure(120), measure(240)
	if b > 3*a {
		t.Errorf("%d bytes at depth 120, %d at 240", a, b)
	}
}
