package delta

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/s3"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// TestReadOverS3 reads real tables uploaded to the S3 emulator: the log is listed and read
// through an object store (keys, pages, ranged GETs) exactly as from a bucket.
func TestReadOverS3(t *testing.T) {
	exp := requireTestdata(t)
	srv := s3test.NewServer(t)
	ctx := context.Background()
	for _, name := range []string{"checkpoint-v2-table", "dv-with-columnmapping", "v1-multi-part-partitioned-struct-stats-only"} {
		src := filepath.Join(testdata, name, "_delta_log")
		err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(filepath.Join(testdata, name), p)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return srv.Put("tables/"+name+"/"+filepath.ToSlash(rel), data)
		})
		if err != nil {
			t.Fatal(err)
		}
		cfg := srv.Config()
		cfg.PageSize = 7 // several list pages
		b, err := storage.NewRegistry(s3.NewFactory()).Open(ctx, srv.URLFor("tables/"+name), cfg)
		if err != nil {
			t.Fatal(err)
		}
		counted, counter := storage.WithCounting(b)
		for _, opts := range [][]Option{nil, {IgnoreChecksums()}} {
			counter.Reset()
			snap, err := Read(ctx, counted, opts...)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			checkSnapshot(t, snap, exp[name])
			c := counter.Counts()
			if c.Stats != 0 || c.Deletes != 0 || c.ReadRanges > 8 {
				t.Errorf("%s: requests %s", name, c)
			}
			t.Logf("%s (checksums %v): %s, metaData from %s", name, opts == nil, c, snap.MetaDataFile)
		}
	}
}
