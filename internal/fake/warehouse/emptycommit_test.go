package warehouse_test

import (
	"testing"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// TestUnknownSkipEmptyCommits: an INSERT of no row (zbrecover's claim on a table) commits a
// tagged WRITE of 0 rows by default, as Databricks was seen to do, and nothing with
// SkipEmptyCommits; either way the table's rows are unchanged, NOT NULL columns included.
func TestUnknownSkipEmptyCommits(t *testing.T) {
	for _, skip := range []bool{false, true} {
		srv := warehouse.New(t, warehouse.Options{Unknowns: warehouse.Unknowns{SkipEmptyCommits: skip}})
		db := open(t, srv)
		mustExec(t, db, "CREATE TABLE t (id BIGINT NOT NULL, name STRING, amount DECIMAL(18,4))",
			"INSERT INTO t VALUES (1, 'a', 1.5)")
		before := len(describeHistory(t, db, "t"))
		mustExec(t, db, "SET spark.databricks.delta.commitInfo.userMetadata = 'zbrecover:r1:claim:1'",
			"INSERT INTO t (`id`, `name`, `amount`) SELECT CAST(NULL AS BIGINT) AS `id`, CAST(NULL AS STRING) AS `name`, CAST(NULL AS DECIMAL(18,4)) AS `amount` WHERE false")
		h := describeHistory(t, db, "t")
		switch {
		case skip && len(h) != before:
			t.Errorf("SkipEmptyCommits: %d commits after the empty insert, %d before", len(h), before)
		case !skip && (len(h) != before+1 || h[0].operation != "WRITE" || h[0].metrics["numOutputRows"] != "0"):
			t.Errorf("the empty insert committed %s %v (%d commits, %d before)", h[0].operation, h[0].metrics, len(h), before)
		}
		if n := count(t, db, "t"); n != 1 {
			t.Errorf("skip %v: %d rows", skip, n)
		}
	}
}
