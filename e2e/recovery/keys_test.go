//go:build cgo

package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/delta/deltatest"
	"github.com/zbrecover/zbrecover/e2e/e2etest"
	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
	"github.com/zbrecover/zbrecover/internal/fake/workspace"
	"github.com/zbrecover/zbrecover/internal/fallback"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/reload"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/sqlstmt"
)

// keyed is a recovery whose fallback files repeat some ids and whose table already holds 30%
// of the fallback keys (published by Zerobus before the breaking change).
type keyed struct {
	*recovery
	// perGroup counts fallback records per id in each group ("old", "new").
	perGroup  map[string]map[int64]int
	published map[int64]bool
}

// newKeyed: 30 old-schema files (ids 1–60) and 5 new-schema files (ids 61–70) from
// newRecovery, then repeated ids: 5 old-schema files repeating ids of other files, one with
// an id twice in itself, and one new-schema file repeating an old id (2) and a new one (61).
// The table holds ids 1–21 (30% of the 70 keys) before the reload.
func newKeyed(t *testing.T) *keyed {
	r := newRecovery(t, 30, 5)
	k := &keyed{recovery: r, perGroup: map[string]map[int64]int{"old": {}, "new": {}}, published: map[int64]bool{}}
	for id := int64(1); id <= 60; id++ {
		k.perGroup["old"][id]++
	}
	for id := int64(61); id <= 70; id++ {
		k.perGroup["new"][id]++
	}
	write := func(kind, name string, sc *arrow.Schema, ids ...int64) {
		var rows []string
		for _, id := range ids {
			if kind == "old" {
				rows = append(rows, fmt.Sprintf(`{"id":%d,"customer_id":"dup%d","amount":"1.25"}`, id, id))
			} else {
				rows = append(rows, fmt.Sprintf(`{"id":%d,"customer_key":"dup%d","amount":"1.5000","gift":true}`, id, id))
			}
			k.perGroup[kind][id]++
		}
		data, err := pqgen.Bytes(sc, "["+strings.Join(rows, ",")+"]", pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := pqgen.WriteFile(filepath.Join(r.root, filepath.FromSlash(fallback.Prefix+"2026/01/02/"), name), data); err != nil {
			t.Fatal(err)
		}
		r.rows += len(ids)
	}
	for i := int64(0); i < 5; i++ {
		write("old", fmt.Sprintf("dup-%05d.parquet", i), e2etest.OldFiles, 3+i*11, 50-i*7)
	}
	write("old", "dup-self.parquet", e2etest.OldFiles, 5, 5)
	write("new", "new-dup.parquet", e2etest.NewFiles, 2, 61)
	var vals []string
	for id := int64(1); id <= 21; id++ {
		k.published[id] = true
		vals = append(vals, fmt.Sprintf("(%d, 'zb%d', 1.0)", id, id))
	}
	r.exec(t, "INSERT INTO main.sales.orders VALUES "+strings.Join(vals, ", "))
	return k
}

// counts is the test's own count of what inspect --key must report, for one group or for
// the total (every group).
func (k *keyed) counts(groups ...string) map[string]int64 {
	per := map[int64]int{}
	for _, g := range groups {
		for id, n := range k.perGroup[g] {
			per[id] += n
		}
	}
	c := map[string]int64{}
	for id, n := range per {
		c["keys"]++
		c["records"] += int64(n)
		if k.published[id] {
			c["records_key_in_table"] += int64(n)
		} else {
			c["records_new"]++
		}
		if n > 1 {
			c["keys_duplicated_in_files"]++
			c["records_duplicated_in_files"] += int64(n - 1)
		}
	}
	c["rows_duplicated_by_a_plain_reload"] = c["records"] - c["records_new"]
	return c
}

// tableRows counts the table's rows per id.
func (r *recovery) tableRows(t *testing.T) map[int64]int {
	t.Helper()
	res, err := r.ws.Warehouse().Engine().Exec(context.Background(), "SELECT id FROM "+r.table)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]int{}
	for _, row := range res.Rows {
		n, _ := row[0].(int64)
		seen[n]++
	}
	return seen
}

type keyCheckJSON struct {
	OK   bool `json:"ok"`
	Keys *struct {
		Keys       int64            `json:"keys"`
		Missing    int64            `json:"missing"`
		Rows       map[string]int64 `json:"rows_per_key"`
		Duplicated int64            `json:"duplicated_keys"`
		Statements int              `json:"statements"`
	} `json:"keys"`
	Merge *struct {
		Merged bool `json:"merged"`
		OK     bool `json:"ok"`
	} `json:"merge"`
}

func verifyKey(t *testing.T, r *recovery, key string) (int, keyCheckJSON) {
	t.Helper()
	code, out, errOut := runZbrecover(t, "-o", "json", "verify", r.table, "--key", key)
	var v keyCheckJSON
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Keys == nil {
		t.Fatalf("verify --key: exit %d: %v\n%s%s", code, err, out, errOut)
	}
	return code, v
}

func dedupeArgs(r *recovery, extra ...string) []string {
	return append([]string{"-o", "json", "reload", r.table, "--rename", "customer_id=customer_key", "--batch-files", "10", "--yes",
		"--dedupe-key", "id"}, extra...)
}

// TestKeysInspectOverlap (must show 1): inspect --key id reports, per schema group and in
// total, the records already in the table, the keys repeated in the files and the new ones,
// exactly as counted here, with one statement.
func TestKeysInspectOverlap(t *testing.T) {
	k := newKeyed(t)
	before := len(k.ws.Statements())
	code, out, errOut := runZbrecover(t, "-o", "json", "inspect", k.table, "--from", "warehouse", "--key", "id", "--stage-to", "/Volumes/main/sales/staging/keys")
	if code != 3 { // the old group still needs --rename: the measure is made all the same
		t.Fatalf("inspect: exit %d\n%s", code, errOut)
	}
	var doc struct {
		Groups []struct {
			SchemaID string `json:"schema_id"`
			Columns  []struct {
				Name string `json:"name"`
			} `json:"columns"`
		} `json:"groups"`
		Keys struct {
			Groups     []map[string]any `json:"groups"`
			Total      map[string]any   `json:"total"`
			Statements int              `json:"statements"`
		} `json:"keys"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("inspect JSON: %v\n%s", err, out)
	}
	kind := map[string]string{}
	for _, g := range doc.Groups {
		kind[g.SchemaID] = "old"
		for _, c := range g.Columns {
			if c.Name == "gift" {
				kind[g.SchemaID] = "new"
			}
		}
	}
	check := func(name string, got map[string]any, want map[string]int64) {
		for field, w := range want {
			if g, _ := got[field].(float64); int64(g) != w {
				t.Errorf("%s %s = %v, want %d", name, field, got[field], w)
			}
		}
	}
	if len(doc.Keys.Groups) != 2 || doc.Keys.Statements != 1 {
		t.Fatalf("keys report: %+v", doc.Keys)
	}
	for _, g := range doc.Keys.Groups {
		kd := kind[g["group"].(string)]
		check("group "+kd, g, k.counts(kd))
	}
	want := k.counts("old", "new")
	check("total", doc.Keys.Total, want)
	if want["records_key_in_table"] == 0 || want["keys_duplicated_in_files"] < 7 || want["records_new"] != 49 {
		t.Fatalf("fixture: %v", want)
	}
	// One statement reads the keys: the overlap query (besides DESCRIBE and the like, no
	// statement per file).
	reads := 0
	for _, s := range k.ws.Statements()[before:] {
		if strings.Contains(s.SQL, "read_files(") {
			reads++
		}
	}
	if reads != 1 {
		t.Errorf("%d statements read the files' keys, want 1", reads)
	}
	// The text form says the same.
	_, out, _ = runZbrecover(t, "inspect", k.table, "--from", "warehouse", "--key", "id", "--stage-to", "/Volumes/main/sales/staging/keys")
	if !strings.Contains(out, fmt.Sprintf("%d records with a key already in the table", want["records_key_in_table"])) ||
		!strings.Contains(out, fmt.Sprintf("%d new", want["records_new"])) {
		t.Errorf("text report:\n%s", out)
	}
}

// TestKeysDedupeReload (must show 2): reload --dedupe-key id leaves every key exactly once and
// verify --key id reports 0 missing and only 1s; a plain reload of the same files leaves the
// duplicates verify --key then reports.
func TestKeysDedupeReload(t *testing.T) {
	k := newKeyed(t)
	k.exec(t, "ALTER TABLE main.sales.orders ADD COLUMNS (gift BOOLEAN)")
	code, out, errOut := runZbrecover(t, dedupeArgs(k.recovery)...)
	if code != 0 {
		t.Fatalf("reload --dedupe-key: exit %d\n%s%s", code, out, errOut)
	}
	var rep struct {
		Status string `json:"status"`
		Merge  struct {
			Status   string `json:"status"`
			Inserted int64  `json:"inserted_rows"`
			Dropped  bool   `json:"staging_dropped"`
		} `json:"merge"`
		Guarantee string `json:"guarantee"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want := k.counts("old", "new")
	if rep.Status != "verified" || rep.Merge.Status != "merged" || rep.Merge.Inserted != want["records_new"] || !rep.Merge.Dropped ||
		!strings.Contains(rep.Guarantee, "one per key") {
		t.Errorf("report %+v", rep)
	}
	rows := k.tableRows(t)
	for id := int64(1); id <= 70; id++ {
		if rows[id] != 1 {
			t.Errorf("id %d: %d rows", id, rows[id])
		}
	}
	if len(rows) != 70 {
		t.Errorf("%d distinct ids in the table, want 70", len(rows))
	}
	code, v := verifyKey(t, k.recovery, "id")
	if code != 0 || !v.OK || v.Keys.Missing != 0 || v.Keys.Keys != 70 || v.Keys.Rows["1"] != 70 || v.Keys.Rows["2"] != 0 || v.Keys.Rows["3+"] != 0 ||
		v.Keys.Statements != 1 || v.Merge == nil || !v.Merge.Merged { // the keys and the rows read per batch, in one statement
		t.Errorf("verify --key: exit %d, %+v %+v", code, v.Keys, v.Merge)
	}
	// A second reload by key loads nothing.
	if code, out, errOut := runZbrecover(t, dedupeArgs(k.recovery)...); code != 0 || !strings.Contains(errOut, "loaded by earlier runs") {
		t.Errorf("second reload: exit %d\n%s%s", code, out, errOut)
	}

	// Without --dedupe-key: every record is inserted, and verify --key counts the duplicates.
	p := newKeyed(t)
	p.exec(t, "ALTER TABLE main.sales.orders ADD COLUMNS (gift BOOLEAN)")
	if code, out, errOut := runZbrecover(t, reloadArgs(p.recovery)...); code != 0 {
		t.Fatalf("plain reload: exit %d\n%s%s", code, out, errOut)
	}
	hist := map[string]int64{}
	for _, n := range p.tableRows(t) {
		switch {
		case n >= 3:
			hist["3+"]++
		case n == 2:
			hist["2"]++
		case n == 1:
			hist["1"]++
		}
	}
	code, v = verifyKey(t, p.recovery, "id")
	if code != 0 || v.Keys.Missing != 0 || v.Keys.Rows["1"] != hist["1"] || v.Keys.Rows["2"] != hist["2"] || v.Keys.Rows["3+"] != hist["3+"] ||
		v.Keys.Duplicated != hist["2"]+hist["3+"] || v.Keys.Duplicated != expectedDuplicates(p) || v.Keys.Duplicated < 21 {
		t.Errorf("verify --key after a plain reload: exit %d, %+v, table histogram %v", code, v.Keys, hist)
	}
	_, out, _ = runZbrecover(t, "verify", p.table, "--key", "id")
	if !strings.Contains(out, fmt.Sprintf("%d keys duplicated in the table", v.Keys.Duplicated)) {
		t.Errorf("verify text:\n%s", out)
	}
	// Keys missing from the table fail verify (exit 4).
	p.exec(t, "DELETE FROM main.sales.orders WHERE id IN (40, 41)")
	if code, v := verifyKey(t, p.recovery, "id"); code != 4 || v.Keys.Missing != 2 {
		t.Errorf("after deleting 2 keys: exit %d, %+v", code, v.Keys)
	}
}

// expectedDuplicates counts the keys a plain reload leaves in the table more than once: the
// published row plus the file records, 2 or more.
func expectedDuplicates(k *keyed) int64 {
	var n int64
	for id := int64(1); id <= 70; id++ {
		rows := k.perGroup["old"][id] + k.perGroup["new"][id]
		if k.published[id] {
			rows++
		}
		if rows > 1 {
			n++
		}
	}
	return n
}

// TestKeysDedupeCrash (must show 3): the MERGE commits and its answer is lost, or the
// warehouse refuses it, or the DROP of the staging table fails: a re-run converges, and no
// key is in the table twice.
func TestKeysDedupeCrash(t *testing.T) {
	for name, f := range map[string]warehouse.Fault{
		"lost answer": {Match: `^MERGE`, DropResponse: true},
		"refused":     {Match: `^MERGE`, Error: &warehouse.SQLError{Class: "INTERNAL_ERROR", SQLState: "XX000", Message: "injected"}},
		"conflict":    {Match: `^MERGE`, Error: &warehouse.SQLError{Class: "DELTA_CONCURRENT_APPEND", SQLState: "2D521", Message: "ConcurrentAppendException: injected"}},
		"drop fails":  {Match: `^DROP TABLE`, Error: &warehouse.SQLError{Class: "INTERNAL_ERROR", SQLState: "XX000", Message: "injected"}},
		"lost batch":  {Match: `^COPY INTO .* FILEFORMAT = PARQUET FILES`, Skip: 1, DropResponse: true},
	} {
		t.Run(name, func(t *testing.T) {
			k := newKeyed(t)
			k.exec(t, "ALTER TABLE main.sales.orders ADD COLUMNS (gift BOOLEAN)")
			fault := k.ws.Warehouse().Inject(f)
			code, out, errOut := runZbrecover(t, dedupeArgs(k.recovery)...)
			t.Logf("first run: exit %d\n%s%s", code, out, errOut)
			if fault.Fired() != 1 {
				t.Fatalf("fault fired %d times", fault.Fired())
			}
			for i := 0; i < 3 && (code != 0 || name == "drop fails" && i == 0); i++ {
				code, out, errOut = runZbrecover(t, dedupeArgs(k.recovery)...)
				t.Logf("re-run %d: exit %d\n%s%s", i+1, code, out, errOut)
			}
			if code != 0 {
				t.Fatalf("did not converge")
			}
			rows := k.tableRows(t)
			for id := int64(1); id <= 70; id++ {
				if rows[id] != 1 {
					t.Errorf("id %d: %d rows", id, rows[id])
				}
			}
			if code, v := verifyKey(t, k.recovery, "id"); code != 0 || v.Keys.Missing != 0 || v.Keys.Rows["1"] != 70 || !v.Merge.Merged {
				t.Errorf("verify --key: exit %d %+v", code, v.Keys)
			}
			res, err := k.ws.Warehouse().Engine().Exec(context.Background(), "SHOW TABLES IN main.sales")
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range res.Rows {
				if strings.Contains(fmt.Sprint(row), "__zbrecover_") {
					t.Errorf("staging table left behind: %v", row)
				}
			}
		})
	}
}

// TestKeysComposite (must show 4): a composite key whose columns need quoting (a space, a
// backquote), with --dedupe-order: the overlap, the load by key and the reconciliation.
func TestKeysComposite(t *testing.T) {
	schema := schemadiff.NewSchema().Col("order id", schemadiff.LongType, schemadiff.NotNull).
		Col("re`gion", schemadiff.StringType).Col("seq", schemadiff.LongType).Col("note", schemadiff.StringType)
	files := arrow.NewSchema([]arrow.Field{{Name: "order id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "re`gion", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "seq", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	root := filepath.Join(t.TempDir(), "events")
	if _, err := deltatest.Write(root, deltatest.Table{Schema: schema, ID: "0b6c1c8e-0000-4000-8000-00000000e2e2",
		Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	type rec struct {
		id     int64
		region string
		seq    int64
	}
	// Keys (id, region): (1,eu) three times with seq 1, 5, 3; (1,us) once; (2,eu) twice; (3,us)
	// and (4,eu) once; (2,us) is in the table already, and in a file.
	fileRecs := [][]rec{
		{{1, "eu", 1}, {1, "us", 1}, {2, "eu", 1}},
		{{1, "eu", 5}, {3, "us", 1}, {2, "us", 1}},
		{{1, "eu", 3}, {2, "eu", 2}, {4, "eu", 1}},
	}
	for i, recs := range fileRecs {
		var rows []string
		for _, r := range recs {
			rows = append(rows, fmt.Sprintf(`{"order id":%d,"re`+"`"+`gion":%q,"seq":%d,"note":"f%d s%d"}`, r.id, r.region, r.seq, i, r.seq))
		}
		data, err := pqgen.Bytes(files, "["+strings.Join(rows, ",")+"]", pqgen.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := pqgen.WriteFile(filepath.Join(root, filepath.FromSlash(fallback.Prefix), fmt.Sprintf("part-%d.parquet", i)), data); err != nil {
			t.Fatal(err)
		}
	}
	const table = "main.sales.events"
	ws := startWorkspace(t, workspace.Options{}, table, root)
	exec := func(stmt string) [][]any {
		res, err := ws.Warehouse().Engine().Exec(context.Background(), stmt)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		return res.Rows
	}
	exec("INSERT INTO main.sales.events VALUES (2, 'us', 0, 'published')")

	const key = "`order id`,`re``gion`"
	code, out, errOut := runZbrecover(t, "-o", "json", "inspect", table, "--from", "warehouse", "--key", key, "--stage-to", "/Volumes/main/sales/staging/keys")
	var doc struct {
		Keys struct {
			Total map[string]float64 `json:"total"`
		} `json:"keys"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil {
		t.Fatalf("inspect: exit %d\n%s%s", code, out, errOut)
	}
	for field, want := range map[string]float64{"records": 9, "keys": 6, "records_key_in_table": 1, "keys_duplicated_in_files": 2,
		"records_duplicated_in_files": 3, "records_new": 5, "rows_duplicated_by_a_plain_reload": 4} {
		if doc.Keys.Total[field] != want {
			t.Errorf("total %s = %v, want %v", field, doc.Keys.Total[field], want)
		}
	}

	code, out, errOut = runZbrecover(t, "-o", "json", "reload", table, "--yes", "--dedupe-key", key, "--dedupe-order", "seq")
	if code != 0 {
		t.Fatalf("reload: exit %d\n%s%s", code, out, errOut)
	}
	rows := exec("SELECT `order id`, `re``gion`, seq, note FROM main.sales.events ORDER BY 1, 2")
	got := fmt.Sprint(rows)
	// (1,eu) keeps seq 5, the highest; (2,eu) seq 2; (2,us) stays as published.
	want := "[[1 eu 5 f1 s5] [1 us 1 f0 s1] [2 eu 2 f2 s2] [2 us 0 published] [3 us 1 f1 s1] [4 eu 1 f2 s1]]"
	if got != want {
		t.Errorf("table:\n got %s\nwant %s", got, want)
	}
	code, out, errOut = runZbrecover(t, "-o", "json", "verify", table, "--key", key)
	var v keyCheckJSON
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v.Keys == nil || v.Keys.Missing != 0 || v.Keys.Rows["1"] != 6 || v.Keys.Duplicated != 0 {
		t.Errorf("verify --key: exit %d\n%s%s", code, out, errOut)
	}
	// Ascending keeps the lowest: checked on the statement, not run again.
	if code, _, errOut := runZbrecover(t, "reload", table, "--yes", "--dedupe-key", key, "--dedupe-ascending"); code != 2 || !strings.Contains(errOut, "--dedupe-order") {
		t.Errorf("--dedupe-ascending without --dedupe-order: exit %d %s", code, errOut)
	}
	if code, _, errOut := runZbrecover(t, "reload", table, "--yes", "--dedupe-key", "`nope`"); code != 2 || !strings.Contains(errOut, "no column `nope`") {
		t.Errorf("unknown key column: exit %d %s", code, errOut)
	}
}

// keysBench is 1,000,000 fallback records in 100 files of 10,000 (901,000 keys: in every file
// but the first, every 10th record repeats a record of the previous file), against a table
// that holds ids 1–300,000.
func keysBench(b *testing.B) (*workspace.Workspace, []reload.KeySource, databricks.TableName) {
	b.Helper()
	root := filepath.Join(b.TempDir(), "orders")
	if _, err := deltatest.Write(root, deltatest.Table{Schema: e2etest.TableSchema, ID: "0b6c1c8e-0000-4000-8000-00000000e2e3",
		Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil {
		b.Fatal(err)
	}
	const files, per = 100, 10_000
	var names []string
	for i := 0; i < files; i++ {
		var rows strings.Builder
		rows.WriteString("[")
		for j := 0; j < per; j++ {
			id := i*per + j + 1
			if j > 0 {
				rows.WriteString(",")
			}
			if j%10 == 0 && i > 0 {
				id = (i-1)*per + j + 6 // every 10th record repeats a record of the previous file
			}
			fmt.Fprintf(&rows, `{"id":%d,"customer_key":"k%d","amount":"1.5000"}`, id, id)
		}
		rows.WriteString("]")
		sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
			{Name: "customer_key", Type: arrow.BinaryTypes.String, Nullable: true},
			{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 4}, Nullable: true}}, nil)
		data, err := pqgen.Bytes(sc, rows.String(), pqgen.Options{})
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("part-%05d.parquet", i)
		if err := pqgen.WriteFile(filepath.Join(root, filepath.FromSlash(fallback.Prefix), name), data); err != nil {
			b.Fatal(err)
		}
		names = append(names, name)
	}
	ws, err := workspace.Start(workspace.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	if err := ws.RegisterTable(context.Background(), "main.sales.orders", root, true); err != nil {
		b.Fatal(err)
	}
	u := ws.Warehouse().Unknowns()
	u.PathAccess = warehouse.OverlapAllowed
	ws.Warehouse().SetUnknowns(u)
	if _, err := ws.Warehouse().Engine().Exec(context.Background(),
		"INSERT INTO main.sales.orders SELECT range, 'zb', 1.0 FROM range(1, 300001)"); err != nil {
		b.Fatal(err)
	}
	dir := "file://" + filepath.ToSlash(filepath.Join(root, filepath.FromSlash(fallback.Prefix)))
	srcs := []reload.KeySource{{Label: "g", Folder: dir, Files: names, Exprs: []string{"CAST(`id` AS BIGINT)"}}}
	return ws, srcs, databricks.TableName{Catalog: "main", Schema: "sales", Table: "orders"}
}

// BenchmarkKeysQueries1M: the overlap (inspect --key) and reconciliation (verify --key)
// statements over 1,000,000 fallback records and a table of 300,000 rows, on the local
// warehouse's engine (DuckDB; one statement each).
func BenchmarkKeysQueries1M(b *testing.B) {
	ws, srcs, table := keysBench(b)
	keys := reload.Keys{"id"}
	for name, sql := range map[string]string{"overlap": sqlstmt.Overlap(table, keys, srcs), "reconcile": sqlstmt.ReconcileByLabel(table, keys, srcs)} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				res, err := ws.Warehouse().Engine().Exec(context.Background(), sql)
				if err != nil {
					b.Fatal(err)
				}
				if i == 0 {
					b.Logf("%s: %v", name, res.Rows)
				}
			}
		})
	}
}
