package warehouse_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/storage/all"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
)

// TestCopyIntoFromS3Emulator keeps managed tables in an S3 bucket (the gofakes3 emulator) and
// loads fallback files from the table root through the project's S3 backend.
func TestCopyIntoFromS3Emulator(t *testing.T) {
	s3 := s3test.NewServer(t)
	srv := warehouse.New(t, warehouse.Options{
		Unknowns:    allowManagedPaths.Unknowns,
		StorageRoot: s3.URLFor("uc"),
		Storage:     warehouse.RegistryOpener(all.Registry(), s3.Config()),
	})
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	loc, err := srv.Engine().Location("events")
	if err != nil {
		t.Fatal(err)
	}
	prefix := s3.URLFor("")
	if !strings.HasPrefix(loc, prefix+"uc/__unitystorage/") {
		t.Fatalf("location %s is not under %s", loc, prefix)
	}
	key := strings.TrimPrefix(loc, prefix) + "/_zerobus/table_rejected_parquets/"
	for i, name := range []string{"f1.parquet", "sub/f2.parquet", "_tmp/ignored.parquet"} {
		local := filepath.Join(t.TempDir(), "f.parquet")
		writeParquet(t, local, eventsSchema, eventRows(1+10*i, 3))
		data, err := os.ReadFile(local)
		if err != nil {
			t.Fatal(err)
		}
		if err := s3.Put(key+name, data); err != nil {
			t.Fatal(err)
		}
	}
	from := "'" + loc + "/_zerobus/table_rejected_parquets/'"
	s3.ResetCounts()
	got, err := copyInto(t, db, "COPY INTO events FROM "+from+" FILEFORMAT = PARQUET FORMAT_OPTIONS ('recursiveFileLookup' = 'true')")
	if err != nil {
		t.Fatal(err)
	}
	if got.inserted != 6 {
		t.Fatalf("inserted %d, want 6", got.inserted)
	}
	if c := s3.Counts(); c.Gets != 2 || c.Deletes != 0 || c.Puts != 0 {
		t.Errorf("S3 requests for the load: %v (want 2 GETs, no writes)", c)
	}
	if ids := strings.Join(idList(t, db), ","); ids != "1,2,3,11,12,13" {
		t.Errorf("ids = %s", ids)
	}
	// A re-run reads nothing from the bucket but the listing.
	s3.ResetCounts()
	got, err = copyInto(t, db, "COPY INTO events FROM "+from+" FILEFORMAT = PARQUET FILES = ('f1.parquet', 'sub/f2.parquet')")
	if err != nil || got != (copyCounts{}) {
		t.Fatalf("re-run = %+v %v", got, err)
	}
	if c := s3.Counts(); c.Gets != 0 {
		t.Errorf("re-run read %d objects", c.Gets)
	}
}
