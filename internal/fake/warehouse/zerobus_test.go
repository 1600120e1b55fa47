package warehouse_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// TestZerobusManyVersions: a writer committing every millisecond puts hundreds of versions
// between a COPY INTO and its re-check; DESCRIBE HISTORY LIMIT n shows only the newest n
// (all Zerobus), and the COPY INTO's commit is found further back, with its metrics.
func TestZerobusManyVersions(t *testing.T) {
	srv := warehouse.New(t)
	dir := loadFixture(t, srv)
	db := open(t, srv)
	zb, err := srv.Zerobus("main.default.events", warehouse.ZerobusOptions{})
	if err != nil {
		t.Fatal(err)
	}
	zb.Start(time.Millisecond)
	defer zb.Close()
	if got, err := copyInto(t, db, "COPY INTO events FROM '"+dir+"' FILEFORMAT = PARQUET"); err != nil || got.inserted != 5 {
		t.Fatalf("COPY INTO: %+v %v", got, err)
	}
	copyVersion := statementsLike(srv, "COPY INTO")[0].Commits[0].Version
	const between = 400
	waitFor(t, fmt.Sprintf("%d Zerobus versions after the COPY INTO", between), func() bool {
		vs := zb.Versions()
		return len(vs) > 0 && vs[len(vs)-1] >= copyVersion+between
	})
	if err := zb.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx(t), "DESCRIBE HISTORY events LIMIT 5")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		n++
	}
	rows.Close()
	if n != 5 {
		t.Errorf("LIMIT 5 returned %d rows", n)
	}
	h := historyRows(t, db, "events")
	for _, r := range h[:5] {
		if r["operation"] != "WRITE" || r["engineInfo"] != warehouse.ZerobusEngineInfo {
			t.Errorf("newest versions are not all Zerobus: %v", r)
		}
	}
	latest := int64(len(h) - 1)
	if latest-copyVersion < between {
		t.Fatalf("%d versions after the COPY INTO, want ≥ %d", latest-copyVersion, between)
	}
	r := h[latest-copyVersion]
	if r["operation"] != "COPY INTO" || jsonMap(t, r["operationMetrics"])["numOutputRows"] != "5" {
		t.Errorf("version %d = %v, want the COPY INTO", copyVersion, r)
	}
	for i, r := range h {
		if r["version"] != fmt.Sprint(latest-int64(i)) {
			t.Fatalf("history row %d is version %s: versions are not contiguous", i, r["version"])
		}
	}
	if got, want := count(t, db, "events"), int64(5+len(zb.Versions())); got != want {
		t.Errorf("rows = %d, want %d", got, want)
	}
}

// TestZerobusFlushN: FlushN commits n versions back to back, each its own data file.
func TestZerobusFlushN(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	mustExec(t, db, "CREATE TABLE t (id BIGINT, s STRING)")
	zb, err := srv.Zerobus("main.default.t", warehouse.ZerobusOptions{Rows: 3})
	if err != nil {
		t.Fatal(err)
	}
	vs, err := zb.FlushN(context.Background(), 50)
	if err != nil || len(vs) != 50 || vs[0] != 1 || vs[49] != 50 {
		t.Fatalf("FlushN = %v %v", vs, err)
	}
	if n := count(t, db, "t"); n != 150 {
		t.Errorf("rows = %d, want 150", n)
	}
	if got := logRows(t, srv, "main.default.t", 51); got[50] != 150 || got[1] != 3 {
		t.Errorf("rows the log's files hold = %v…", got[:3])
	}
}
