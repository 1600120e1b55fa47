package place_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/azure"
	"github.com/zbrecover/zbrecover/storage/azure/azuretest"
	"github.com/zbrecover/zbrecover/storage/local"
	"github.com/zbrecover/zbrecover/storage/s3"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// TestMain stops the shared Azurite the Azure spellings start.
func TestMain(m *testing.M) { azuretest.Main(m) }

var (
	seedFlag   = flag.Int64("places.seed", 0, "seed of the place spelling property tests (0: the time)")
	trialsFlag = flag.Int("places.trials", 40, "trials per store of the place spelling property tests")
)

// spellings is one store of the property test: how a place in it (a store name, such as a
// bucket or volume, and path elements below it) is spelt at random, and how a backend opens.
type spellings struct {
	// stores are the names of the store's buckets (containers, volumes) places may be in.
	stores []string
	// spell returns a random spelling of the place els in the store named by stores[i].
	spell func(r *rand.Rand, i int, els []string) string
	// open opens a backend at loc (creating what a local folder needs).
	open func(ctx context.Context, loc storage.Location) (storage.Backend, error)
}

// elements are what random paths are made of: "ab" starts like "a", "A" differs from "a" only
// by case (case-sensitive everywhere the property test writes).
var elements = []string{"a", "b", "ab", "A", "data"}

// joinHostile joins path elements the way a careless operator might: doubled slashes, "./"
// elements, a trailing slash.
func joinHostile(r *rand.Rand, els []string) string {
	var b strings.Builder
	for _, el := range els {
		b.WriteString("/")
		if r.Intn(4) == 0 {
			b.WriteString("/")
		}
		if r.Intn(5) == 0 {
			b.WriteString("./")
		}
		b.WriteString(el)
	}
	if r.Intn(2) == 0 {
		b.WriteString("/")
	}
	return b.String()
}

// randomCase returns s with each letter in random case.
func randomCase(r *rand.Rand, s string) string {
	out := []rune(s)
	for i, c := range out {
		if r.Intn(2) == 0 {
			out[i] = []rune(strings.ToUpper(string(c)))[0]
		}
	}
	return string(out)
}

// related returns a place related to (store i, els) at random: the same, a folder inside, the
// parent, a sibling, a sibling whose name starts like it, the same name in other letter case,
// or the same path in another store.
func related(r *rand.Rand, nStores, i int, els []string) (int, []string, string) {
	clone := func(e []string) []string { return append([]string(nil), e...) }
	last := len(els) - 1
	switch r.Intn(7) {
	case 0:
		return i, clone(els), "same"
	case 1:
		out := append(clone(els), elements[r.Intn(len(elements))])
		if r.Intn(2) == 0 {
			out = append(out, elements[r.Intn(len(elements))])
		}
		return i, out, "inside"
	case 2:
		if last > 1 {
			return i, clone(els[:last]), "parent"
		}
		return i, clone(els), "same"
	case 3:
		out := clone(els)
		for out[last] == els[last] {
			out[last] = elements[r.Intn(len(elements))]
		}
		return i, out, "sibling"
	case 4:
		out := clone(els)
		out[last] += "x"
		return i, out, "prefix sibling"
	case 5:
		out := clone(els)
		out[last] = strings.ToUpper(out[last])
		if out[last] == els[last] {
			out[last] = strings.ToLower(out[last])
		}
		return i, out, "other case"
	}
	return (i + 1) % nStores, clone(els), "other store"
}

// checkSpellings is the property: for random spellings of two places (the same, nested,
// apart), Equal and Contains say what the store shows: a marker written through one spelling
// is listed through the other at the same key exactly when they are Equal, under a deeper key
// exactly when the other Contains it, and not at all otherwise.
func checkSpellings(t *testing.T, sp spellings) {
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("seed %d (-places.seed to replay)", seed)
	r := rand.New(rand.NewSource(seed))
	ctx := context.Background()
	for trial := 0; trial < *trialsFlag; trial++ {
		i := r.Intn(len(sp.stores))
		els := []string{fmt.Sprintf("trial%d", trial)}
		for n := 1 + r.Intn(2); n > 0; n-- {
			els = append(els, elements[r.Intn(len(elements))])
		}
		j, other, how := related(r, len(sp.stores), i, els)
		rawA, rawB := sp.spell(r, i, els), sp.spell(r, j, other)
		a, err := storage.Parse(rawA)
		if err != nil {
			t.Fatalf("%s: %v", rawA, err)
		}
		b, err := storage.Parse(rawB)
		if err != nil {
			t.Fatalf("%s: %v", rawB, err)
		}
		ba, err := sp.open(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		bb, err := sp.open(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		markA, markB := fmt.Sprintf("marker-a-%d", trial), fmt.Sprintf("marker-b-%d", trial)
		put(ctx, t, ba, markA)
		put(ctx, t, bb, markB)
		aSame, aBelow := listed(ctx, t, ba, markB)
		bSame, bBelow := listed(ctx, t, bb, markA)
		same := aSame && bSame
		if aSame != bSame {
			t.Fatalf("trial %d: %s lists %s's marker at its key (%v) but not the other way round (%v)", trial, rawA, rawB, aSame, bSame)
		}
		what := fmt.Sprintf("trial %d (%s): A %s, B %s", trial, how, rawA, rawB)
		if got := a.Equal(b); got != same {
			t.Errorf("%s: Equal = %v, the store shares their objects: %v (keys %s, %s)", what, got, same, a.Key(), b.Key())
		}
		if got := a.Contains(b); got != (same || aBelow) {
			t.Errorf("%s: A.Contains(B) = %v, A lists B's marker: %v (keys %s, %s)", what, got, same || aBelow, a.Key(), b.Key())
		}
		if got := b.Contains(a); got != (same || bBelow) {
			t.Errorf("%s: B.Contains(A) = %v, B lists A's marker: %v (keys %s, %s)", what, got, same || bBelow, a.Key(), b.Key())
		}
	}
}

func put(ctx context.Context, t *testing.T, b storage.Backend, key string) {
	t.Helper()
	p, ok := storage.AsPutter(b)
	if !ok {
		t.Fatalf("%s cannot be written to", b.Location())
	}
	data := []byte(key)
	if _, err := p.Put(ctx, key, bytes.NewReader(data), int64(len(data)), storage.PutOptions{}); err != nil {
		t.Fatalf("put %s at %s: %v", key, b.Location(), err)
	}
}

// listed reports whether b lists marker at its key, and under a folder below its root.
func listed(ctx context.Context, t *testing.T, b storage.Backend, marker string) (at, below bool) {
	t.Helper()
	err := b.List(ctx, "", func(o storage.ObjectInfo) error {
		switch {
		case o.Key == marker:
			at = true
		case strings.HasSuffix(o.Key, "/"+marker):
			below = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list %s: %v", b.Location(), err)
	}
	return at, below
}

// TestSpellingsLocal: local folders spelt as paths, file:// and file://localhost URLs, with
// doubled slashes, "./" and trailing slashes (letter case is a different folder on Linux).
func TestSpellingsLocal(t *testing.T) {
	dirs := []string{filepath.Join(t.TempDir(), "one"), filepath.Join(t.TempDir(), "two")}
	checkSpellings(t, spellings{
		stores: dirs,
		spell: func(r *rand.Rand, i int, els []string) string {
			p := joinHostile(r, append(strings.Split(strings.TrimPrefix(filepath.ToSlash(dirs[i]), "/"), "/"), els...))
			switch r.Intn(3) {
			case 0:
				return "file://" + p
			case 1:
				return "file://localhost" + p
			}
			return p
		},
		open: func(ctx context.Context, loc storage.Location) (storage.Backend, error) {
			if err := os.MkdirAll(loc.Path, 0o755); err != nil {
				return nil, err
			}
			return local.NewFactory().Open(ctx, loc, storage.Config{})
		},
	})
}

// TestSpellingsS3: S3 places spelt s3:// and s3a:// in any case, with doubled slashes, "./"
// and trailing slashes, in two buckets. (Bucket names are lower case by rule; the emulator
// takes them path-style, so their case is varied only in TestKeyEqualContains.)
func TestSpellingsS3(t *testing.T) {
	srv := s3test.NewServer(t)
	const other = "zbrecover-other"
	if err := srv.CreateBucket(other); err != nil {
		t.Fatal(err)
	}
	buckets := []string{srv.Bucket, other}
	checkSpellings(t, spellings{
		stores: buckets,
		spell: func(r *rand.Rand, i int, els []string) string {
			scheme := []string{"s3", "s3a", "S3", "S3A"}[r.Intn(4)]
			return scheme + "://" + buckets[i] + joinHostile(r, els)
		},
		open: func(ctx context.Context, loc storage.Location) (storage.Backend, error) {
			return s3.NewFactory().Open(ctx, loc, srv.Config())
		},
	})
}

// TestSpellingsAzure: Azure places spelt abfss://, abfs://, wasbs:// and wasb:// with the dfs
// or the blob host in any case, with a SAS query or none, doubled slashes, "./" and trailing
// slashes, in two containers. (Container names are lower case by rule, and Azurite refuses
// others, so their case is varied only in TestKeyEqualContains.)
func TestSpellingsAzure(t *testing.T) {
	srvs := []*azuretest.Server{azuretest.NewServer(t), azuretest.NewServer(t)}
	sas, err := srvs[0].SAS(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	checkSpellings(t, spellings{
		stores: []string{srvs[0].Container, srvs[1].Container},
		spell: func(r *rand.Rand, i int, els []string) string {
			scheme := []string{"abfss", "abfs", "wasbs", "wasb", "ABFSS"}[r.Intn(5)]
			endpoint := "blob"
			if strings.HasPrefix(strings.ToLower(scheme), "abfs") != (r.Intn(4) == 0) {
				endpoint = "dfs"
			}
			host := randomCase(r, azuretest.Account+"."+endpoint+".core.windows.net")
			u := scheme + "://" + srvs[i].Container + "@" + host + joinHostile(r, els)
			if i == 0 && r.Intn(3) == 0 {
				u += "?" + sas
			}
			return u
		},
		open: func(ctx context.Context, loc storage.Location) (storage.Backend, error) {
			for _, s := range srvs {
				if s.Container == loc.Bucket {
					return azure.NewFactory().Open(ctx, loc, s.Config())
				}
			}
			return nil, fmt.Errorf("no container %s", loc.Bucket)
		},
	})
}
