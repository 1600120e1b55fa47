package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
)

// Known kinds of damage: each file is listed as unreadable with an error, never a crash.
func TestCorruptFilesAreUnreadable(t *testing.T) {
	f := newFixture(t)
	good := f.a1
	fs := pqgen.FooterStart(good)
	l := uint32(len(good) - 8 - fs)
	footer := func(b byte) []byte {
		out := append([]byte(nil), good...)
		for i := fs; i < len(good)-8; i++ {
			out[i] = b
		}
		return out
	}
	cases := map[string][]byte{
		"empty":                {},
		"4 bytes":              []byte("PAR1"),
		"magic only":           []byte("PAR1\x00\x00\x00\x00PAR1"),
		"truncated by 1":       pqgen.Truncate(good, 1),
		"truncated by 4":       pqgen.Truncate(good, 4),
		"truncated by 8":       pqgen.Truncate(good, 8),
		"truncated by 9":       pqgen.Truncate(good, 9),
		"truncated by 100":     pqgen.Truncate(good, 100),
		"truncated by footer":  pqgen.Truncate(good, int(l)),
		"cut in half":          pqgen.Truncate(good, len(good)/2),
		"bad trailing magic":   pqgen.Flip(good, len(good)-1, 0x20),
		"footer length 0":      pqgen.SetFooterLength(good, 0),
		"footer length 1":      pqgen.SetFooterLength(good, 1),
		"footer length 7":      pqgen.SetFooterLength(good, 7),
		"footer length L-100":  pqgen.SetFooterLength(good, l-100),
		"footer length L+100":  pqgen.SetFooterLength(good, l+100),
		"footer length size-8": pqgen.SetFooterLength(good, uint32(len(good)-8)),
		"footer length size-7": pqgen.SetFooterLength(good, uint32(len(good)-7)),
		"footer length 2^31-1": pqgen.SetFooterLength(good, 0x7fffffff),
		"footer length 2^32-1": pqgen.SetFooterLength(good, 0xffffffff),
		"footer zeroed":        footer(0),
		"footer all 0xff":      footer(0xff),
		"encrypted footer":     append(pqgen.Truncate(good, 4), "PARE"...),
		"not parquet":          []byte("id,name\n1,alpha\n2,beta\n"),
	}
	s := newStore()
	for name, data := range cases {
		s.put(prefix+name+".parquet", data, t0)
	}
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Files != len(cases) || rep.Totals.Unreadable != len(cases) || len(rep.Groups) != 0 {
		for _, fi := range rep.Files {
			if !fi.Unreadable() {
				t.Errorf("%s was read as a valid file: %+v", fi.Key, fi)
			}
		}
		t.Fatalf("totals %+v", rep.Totals)
	}
	for _, fi := range rep.Files {
		if fi.Error == "" {
			t.Errorf("%s: no error", fi.Key)
		}
		t.Logf("%-32s %s", fi.Key, fi.Error)
	}
}

// Damage to the column data leaves the footer readable; the preview fails with an error.
func TestCorruptDataFailsPreview(t *testing.T) {
	f := newFixture(t)
	fs := pqgen.FooterStart(f.a2)
	zeroed := append([]byte(nil), f.a2...)
	for i := 4; i < fs; i++ {
		zeroed[i] = 0
	}
	s := newStore()
	s.put(prefix+"zeroed.parquet", zeroed, t0)
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files[0].Unreadable() || rep.Files[0].Rows != 2 {
		t.Fatalf("footer of a file with zeroed data: %+v", rep.Files[0])
	}
	if _, err := inspect.Preview(context.Background(), s, "zeroed.parquet", inspect.PreviewOptions{}); err == nil {
		t.Error("preview of zeroed column data succeeded")
	}
}

// mutate damages data at random: byte flips in a region, truncation, or a bogus footer length.
func mutate(rng *rand.Rand, data []byte) ([]byte, string) {
	switch k := rng.Intn(10); {
	case k < 4:
		return pqgen.Corrupt(data, rng, 1+rng.Intn(4), pqgen.Footer), "footer flips"
	case k < 6:
		return pqgen.Corrupt(data, rng, 1+rng.Intn(4), pqgen.Data), "data flips"
	case k < 7:
		return pqgen.Corrupt(data, rng, 1+rng.Intn(2), pqgen.Trailer), "trailer flips"
	case k < 8:
		return pqgen.Corrupt(data, rng, 1+rng.Intn(8), pqgen.Anywhere), "flips anywhere"
	case k < 9:
		return pqgen.Truncate(data, 1+rng.Intn(len(data))), "truncation"
	default:
		return pqgen.SetFooterLength(data, rng.Uint32()), "footer length"
	}
}

// Hundreds of random corruptions (fixed seed): inspect and preview always give a result or an
// error for the file, and every panic inside the Parquet library is contained.
func TestRandomCorruptionNeverPanics(t *testing.T) {
	f := newFixture(t)
	bases := [][]byte{f.a1, f.a2, f.b}
	rng := rand.New(rand.NewSource(20240501))
	const n = 600
	s := newStore()
	kinds := map[string]string{}
	for i := 0; i < n; i++ {
		data, kind := mutate(rng, bases[i%len(bases)])
		key := fmt.Sprintf("m%04d.parquet", i)
		kinds[key] = kind
		s.put(prefix+key, data, t0)
	}
	rep, err := inspect.Run(context.Background(), s, inspect.Options{Concurrency: 8})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Files != n {
		t.Fatalf("%d files reported, want %d", rep.Totals.Files, n)
	}
	var readable, unreadable, panics, previewed, previewErrs, previewPanics int
	for _, fi := range rep.Files {
		switch {
		case fi.Unreadable():
			unreadable++
			if fi.SchemaID != "" {
				t.Errorf("%s: unreadable but has schema id", fi.Key)
			}
			if strings.Contains(fi.Error, inspect.ErrPanic.Error()) {
				panics++
			}
			continue
		case fi.SchemaID == "" || fi.Rows < 0:
			t.Errorf("%s: readable without schema id or with negative rows: %+v", fi.Key, fi)
		}
		readable++
		res, err := inspect.PreviewObject(context.Background(), s, fi.Object(prefix), inspect.PreviewOptions{Rows: 5})
		switch {
		case err != nil:
			previewErrs++
			if errors.Is(err, inspect.ErrPanic) {
				previewPanics++
			}
		case len(res.Rows) > 5:
			t.Errorf("%s: %d preview rows", fi.Key, len(res.Rows))
		default:
			previewed++
		}
	}
	t.Logf("%d files: %d readable (%d previewed, %d preview errors of which %d contained panics), %d unreadable (%d contained panics)",
		n, readable, previewed, previewErrs, previewPanics, unreadable, panics)
	if readable == 0 || unreadable == 0 {
		t.Errorf("corruption mix too one-sided: %d readable, %d unreadable", readable, unreadable)
	}
}

// FuzzFooter feeds arbitrary bytes to inspect and preview: `go test -fuzz FuzzFooter ./inspect`.
func FuzzFooter(f *testing.F) {
	fx := newFixture(f)
	for _, seed := range [][]byte{fx.a1, fx.a2, fx.b, fx.empty, fx.bad, pqgen.SetFooterLength(fx.a2, 3)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := newStore()
		s.put(prefix+"f.parquet", data, t0)
		rep, err := inspect.Run(context.Background(), s, inspect.Options{Concurrency: 1})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if len(rep.Files) != 1 {
			t.Fatalf("%d files", len(rep.Files))
		}
		fi := rep.Files[0]
		if fi.Unreadable() != (fi.SchemaID == "") {
			t.Fatalf("inconsistent entry %+v", fi)
		}
		if fi.Unreadable() {
			return
		}
		res, err := inspect.PreviewObject(context.Background(), s, fi.Object(prefix), inspect.PreviewOptions{Rows: 3})
		if err == nil && len(res.Rows) > 3 {
			t.Fatalf("%d rows", len(res.Rows))
		}
	})
}

// Single-byte footer changes that make arrow-go v18.8.0 panic while parsing the footer
// (timestamp unit): each must come back as an unreadable file whose error says a panic was
// contained. A negative child count, which made it panic allocating a slice, is refused by
// the pre-scan before the library sees it. A logical type union with an unknown member
// (schema.getLogicalType panics on it) is dropped before parsing, as the Parquet format asks
// of readers: that file is readable, its column read as the physical type.
func TestFooterPanicsAreContained(t *testing.T) {
	f := newFixture(t)
	fs := pqgen.FooterStart(f.a2)
	if len(f.a2) != 2886 || fs != 1215 {
		t.Fatalf("fixture changed (size %d, footer at %d): re-derive the offsets below", len(f.a2), fs)
	}
	cases := map[string]struct {
		off  int
		val  byte
		want string
	}{
		"list size":      {fs + 14, 1, "footer rejected: schema element 0 declares -1 children"},
		"logical type":   {fs + 27, 156, ""},
		"timestamp unit": {fs + 120, 1, "TimeUnit must be one of"},
	}
	s := newStore()
	for name, c := range cases {
		d := append([]byte(nil), f.a2...)
		d[c.off] = c.val
		s.put(prefix+name+".parquet", d, t0)
	}
	rep, err := inspect.Run(context.Background(), s, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range rep.Files {
		c := cases[fi.Key[:len(fi.Key)-len(".parquet")]]
		if c.want == "" {
			if fi.Unreadable() || fi.Rows == 0 {
				t.Errorf("%s: error %q rows %d, want a readable file", fi.Key, fi.Error, fi.Rows)
			}
			continue
		}
		if c.off != fs+14 && !strings.Contains(fi.Error, inspect.ErrPanic.Error()) || !strings.Contains(fi.Error, c.want) {
			t.Errorf("%s: error %q, want a contained panic mentioning %q", fi.Key, fi.Error, c.want)
		}
	}
}
