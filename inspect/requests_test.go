package inspect_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// wideSchema has n int64 columns: with 1,000 of them the footer is larger than 64 KiB.
func wideSchema(n int) *arrow.Schema {
	fields := make([]arrow.Field, n)
	for i := range fields {
		fields[i] = arrow.Field{Name: "c" + strconv.Itoa(i), Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	}
	return arrow.NewSchema(fields, nil)
}

// Inspect reads every footer with exactly one request, no Stat, and lists in ⌈objects/page⌉
// pages; only a footer larger than the tail read takes a second request.
func TestInspectRequestsPerFile(t *testing.T) {
	f := newFixture(t)
	s := f.store
	s.setPageSize(7)
	for i := 0; i < 40; i++ {
		s.put(fmt.Sprintf("%sday=%02d/part-%03d.parquet", prefix, i%4, i), f.a2, t0)
	}
	wide, err := pqgen.GeneratedBytes(wideSchema(1000), 2, 1, pqgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if fs := pqgen.FooterStart(wide); len(wide)-8-fs <= inspect.DefaultTailSize {
		t.Fatalf("wide footer is only %d bytes", len(wide)-8-fs)
	}
	s.put(prefix+"wide.parquet", wide, t0)
	s.resetCounts()

	rep, err := inspect.Run(context.Background(), s, inspect.Options{Concurrency: 16})
	if err != nil {
		t.Fatal(err)
	}
	objects := s.objects(prefix)
	pages := int64((objects + s.pageSize - 1) / s.pageSize)

	parquet := rep.Totals.Files
	if parquet != 46 {
		t.Fatalf("%d Parquet files", parquet)
	}
	if got := s.counts().ListPages; got != pages {
		t.Errorf("%d list pages for %d objects at 7 per page, want %d", got, objects, pages)
	}
	if got := s.counts().Stats; got != 0 {
		t.Errorf("%d Stat calls, want 0", got)
	}
	// One read per file, plus one for the wide file's footer.
	if got, want := s.counts().ReadRanges, int64(parquet+1); got != want {
		t.Errorf("%d reads for %d files, want %d", got, parquet, want)
	}
	for _, fi := range rep.Files {
		want := int64(1)
		if fi.Key == "wide.parquet" {
			want = 2
		}
		if got := s.readsOf(prefix + fi.Key); got != want {
			t.Errorf("%s: %d reads, want %d", fi.Key, got, want)
		}
	}
	for _, hidden := range []string{"_hidden/x.parquet", ".tmp.parquet", "notes.txt", "sub/_SUCCESS"} {
		if got := s.readsOf(prefix + hidden); got != 0 {
			t.Errorf("%s was read %d times", hidden, got)
		}
	}
	if w := fileByKey(t, rep, "wide.parquet"); w.Rows != 2 || w.Error != "" {
		t.Errorf("wide: %+v", w)
	}
}

// A smaller tail read makes every footer that does not fit take exactly one more request.
func TestInspectSmallTail(t *testing.T) {
	f := newFixture(t)
	f.store.resetCounts()
	rep, err := inspect.Run(context.Background(), f.store, inspect.Options{TailSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range rep.Files {
		if fi.Unreadable() {
			continue
		}
		want := int64(1)
		if fi.FooterBytes+8 > 1024 {
			want = 2
		}
		if got := f.store.readsOf(prefix + fi.Key); got != want {
			t.Errorf("%s (footer %d bytes): %d reads, want %d", fi.Key, fi.FooterBytes, got, want)
		}
	}
	if fileByKey(t, rep, "a.parquet").Rows != 5 {
		t.Error("a.parquet misread with a small tail")
	}
}

// A preview of a listed file costs 2 reads (footer, first row group); by key it adds one Stat.
func TestPreviewRequests(t *testing.T) {
	f := newFixture(t)
	s := f.store
	rep := run(t, f, inspect.Options{})

	s.resetCounts()
	if _, err := inspect.PreviewObject(context.Background(), s, fileByKey(t, rep, "c.parquet").Object(prefix), inspect.PreviewOptions{}); err != nil {
		t.Fatal(err)
	}
	if r, st := s.counts().ReadRanges, s.counts().Stats; r != 2 || st != 0 {
		t.Errorf("PreviewObject: %d reads, %d stats; want 2, 0", r, st)
	}

	s.resetCounts()
	res, err := inspect.Preview(context.Background(), s, "a.parquet", inspect.PreviewOptions{Rows: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r, st := s.counts().ReadRanges, s.counts().Stats; r != 2 || st != 1 {
		t.Errorf("Preview by key: %d reads, %d stats; want 2, 1", r, st)
	}
	if res.Files[0].Requests != 2 {
		t.Errorf("reported %d requests", res.Files[0].Requests)
	}

	// A group of many single-row-group files: 2 reads per file previewed, nothing else.
	g := newStore()
	for i := 0; i < 10; i++ {
		g.put(fmt.Sprintf("%sf%02d.parquet", prefix, i), f.a2, t0)
	}
	grep, err := inspect.Run(context.Background(), g, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	g.resetCounts()
	pg, err := inspect.PreviewGroup(context.Background(), g, grep, grep.Groups[0].SchemaID, inspect.PreviewOptions{Rows: 7})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Rows) != 7 || len(pg.Files) != 4 {
		t.Errorf("%d rows from %d files", len(pg.Rows), len(pg.Files))
	}
	if r, st, l := g.counts().ReadRanges, g.counts().Stats, g.counts().ListPages; r != 8 || st != 0 || l != 0 {
		t.Errorf("group preview of 4 files: %d reads, %d stats, %d list pages; want 8, 0, 0", r, st, l)
	}
}

// Against the S3 emulator, counting real HTTP requests: one GET per footer, no HEAD, list
// pages separately; a preview of a listed file is 2 GETs.
func TestS3RequestsPerFile(t *testing.T) {
	f := newFixture(t)
	srv := s3test.NewServer(t)
	const files = 25
	for i := 0; i < files; i++ {
		if err := srv.Put(fmt.Sprintf("tables/orders/%sp-%02d.parquet", prefix, i), f.a1); err != nil {
			t.Fatal(err)
		}
	}
	srv.Put("tables/orders/"+prefix+"_SUCCESS", nil)
	cfg := srv.Config()
	cfg.PageSize = 10
	ctx := context.Background()
	b, err := all.Registry().Open(ctx, srv.URLFor("tables/orders"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.ResetCounts()
	rep, err := inspect.Run(ctx, b, inspect.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Totals.Files != files || rep.Totals.Rows != 5*files || rep.Totals.OtherObjects != 1 || len(rep.Groups) != 1 {
		t.Fatalf("totals %+v", rep.Totals)
	}
	c := srv.Counts()
	if c.Gets != files || c.Heads != 0 || c.ListPages != 3 {
		t.Errorf("requests %s; want %d GETs, 0 HEADs, 3 list pages", c, files)
	}

	srv.ResetCounts()
	if _, err := inspect.PreviewGroup(ctx, b, rep, rep.Groups[0].SchemaID, inspect.PreviewOptions{Rows: 2}); err != nil {
		t.Fatal(err)
	}
	if c := srv.Counts(); c.Gets != 2 || c.Total() != 2 {
		t.Errorf("preview requests %s; want 2 GETs and nothing else", c)
	}
}
