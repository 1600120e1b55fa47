package warehouse_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// literalLayout writes folders whose names hold glob characters and non-ASCII letters next
// to the folders a glob would match instead:
//
//	[b]/x.parquet                    id 1
//	b/x.parquet                      ids 10–12
//	données é/a*{1,2}.parquet        ids 20–21
//	données é/a1.parquet             id 30
func literalLayout(t *testing.T) string {
	t.Helper()
	base := filepath.Join(t.TempDir(), "src")
	writeParquet(t, filepath.Join(base, "[b]", "x.parquet"), eventsSchema, eventRows(1, 1))
	writeParquet(t, filepath.Join(base, "b", "x.parquet"), eventsSchema, eventRows(10, 3))
	writeParquet(t, filepath.Join(base, "données é", "a*{1,2}.parquet"), eventsSchema, eventRows(20, 2))
	writeParquet(t, filepath.Join(base, "données é", "a1.parquet"), eventsSchema, eventRows(30, 1))
	return base
}

// TestPathsAreLiteralByDefault: a folder or file name with glob characters or non-ASCII
// letters names that folder or file in COPY INTO's FROM and FILES; in queries a path is a
// glob.
func TestPathsAreLiteralByDefault(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	base := literalLayout(t)
	got, err := copyInto(t, db, "COPY INTO events FROM '"+filepath.Join(base, "[b]")+"/' FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 1 {
		t.Fatalf("COPY INTO [b]/: %+v %v, want the 1 row of [b] (not the 3 of b)", got, err)
	}
	// Path reads in queries are globs (as read_files documents): [b] is the folder b there,
	// and an escaped \[b\] the folder [b].
	var n int64
	if err := db.QueryRowContext(ctx(t), "SELECT count(*) FROM parquet.`"+filepath.Join(base, "[b]")+"`").Scan(&n); err != nil || n != 3 {
		t.Errorf("parquet.`[b]` = %d %v, want the 3 rows of b", n, err)
	}
	if err := db.QueryRowContext(ctx(t), "SELECT count(*) FROM read_files('"+base+`/\\[b\\]', format => 'parquet')`).Scan(&n); err != nil || n != 1 {
		t.Errorf(`read_files('\[b\]') = %d %v, want the 1 row of [b]`, n, err)
	}
	got, err = copyInto(t, db, "COPY INTO events FROM '"+filepath.Join(base, "données é")+"' FILEFORMAT = PARQUET FILES = ('a*{1,2}.parquet')")
	if err != nil || got.inserted != 2 {
		t.Fatalf("FILES = ('a*{1,2}.parquet'): %+v %v, want the 2 rows of that one file", got, err)
	}
	got, err = copyInto(t, db, "COPY INTO events FROM '"+filepath.Join(base, "données é")+"' FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 1 {
		t.Fatalf("folder données é: %+v %v, want a1.parquet only (the other is loaded)", got, err)
	}
	if ids := strings.Join(idList(t, db), ","); ids != "1,20,21,30" {
		t.Errorf("ids = %s", ids)
	}
	loaded, _ := srv.Engine().LoadedFiles("events")
	if !contains(loaded, "file://"+filepath.ToSlash(base)+"/données é/a*{1,2}.parquet") {
		t.Errorf("loaded files = %v", loaded)
	}
}

// TestGlobPathsSwitch: with GlobPaths the same paths are Hadoop globs, and a backslash
// escapes a glob character.
func TestGlobPathsSwitch(t *testing.T) {
	srv := warehouse.New(t, warehouse.Options{Unknowns: warehouse.Unknowns{GlobPaths: true}})
	db := open(t, srv)
	mustExec(t, db, eventsDDL)
	base := literalLayout(t)
	got, err := copyInto(t, db, "COPY INTO events FROM '"+filepath.Join(base, "[b]")+"/' FILEFORMAT = PARQUET")
	if err != nil || got.inserted != 3 {
		t.Fatalf("COPY INTO [b]/ as a glob: %+v %v, want the 3 rows of b", got, err)
	}
	// In a Spark string literal a backslash is written twice.
	got, err = copyInto(t, db, "COPY INTO events FROM '"+base+`/\\[b\\]/' FILEFORMAT = PARQUET`)
	if err != nil || got.inserted != 1 {
		t.Fatalf(`COPY INTO \[b\]/: %+v %v, want the 1 row of [b]`, got, err)
	}
	got, err = copyInto(t, db, "COPY INTO events FROM '"+filepath.Join(base, "données é")+"' FILEFORMAT = PARQUET FILES = ('a*{1,2}.parquet')")
	if err != nil || got.inserted != 1 {
		t.Fatalf("FILES = ('a*{1,2}.parquet') as a glob: %+v %v, want a1.parquet's row", got, err)
	}
	var n int64
	if err := db.QueryRowContext(ctx(t), "SELECT count(*) FROM parquet.`"+base+"/?`").Scan(&n); err != nil || n != 3 {
		t.Errorf("parquet.`?` = %d %v, want the 3 rows of b", n, err)
	}
	_, err = copyInto(t, db, "COPY INTO events FROM '"+base+"/nothing*' FILEFORMAT = PARQUET")
	execError(t, err, "42K03", "PATH_NOT_FOUND")
	if ids := strings.Join(idList(t, db), ","); ids != "1,10,11,12,30" {
		t.Errorf("ids = %s", ids)
	}
}
