package reload

import (
	"reflect"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/databricks"
)

func TestParseKeys(t *testing.T) {
	for in, want := range map[string]Keys{
		"id":                  {"id"},
		" id , region ":       {"id", "region"},
		"order id":            {"order id"},
		"`a,b`,c":             {"a,b", "c"},
		"`we``ird`, id":       {"we`ird", "id"},
		"we`ird":              {"we`ird"},
		"`  padded  `":        {"  padded  "},
		"`order id`,`seq no`": {"order id", "seq no"},
	} {
		got, err := ParseKeys(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseKeys(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "id,", ",id", "`id", "`id`x", "id,ID"} {
		if k, err := ParseKeys(bad); err == nil {
			t.Errorf("ParseKeys(%q) = %q, want an error", bad, k)
		}
	}
}

func TestStagingStatements(t *testing.T) {
	tbl := databricks.TableName{Catalog: "main", Schema: "sales", Table: "orders"}
	st := StagingTable(tbl, "20261201T101500Z-1a2b3c4d")
	if st.String() != "main.sales.orders__zbrecover_20261201t101500z_1a2b3c4d" {
		t.Fatalf("staging %s", st)
	}
	sel := "COPY INTO `main`.`sales`.`orders` FROM (SELECT `id`, CAST(`amount` AS DECIMAL(18,4)) AS `amount` FROM 'file:///x/it\\'s/') FILEFORMAT = PARQUET FILES = ('a.parquet') COPY_OPTIONS ('mergeSchema' = 'false')"
	got, err := StagingCopySQL(sel, tbl, st, 7)
	if err != nil || got != "COPY INTO `main`.`sales`.`orders__zbrecover_20261201t101500z_1a2b3c4d` FROM (SELECT CAST(7 AS BIGINT) AS `__zbrecover_batch`, `id`, CAST(`amount` AS DECIMAL(18,4)) AS `amount` FROM 'file:///x/it\\'s/') FILEFORMAT = PARQUET FILES = ('a.parquet') COPY_OPTIONS ('mergeSchema' = 'false')" {
		t.Errorf("projection: %v\n%s", err, got)
	}
	bare := "COPY INTO `main`.`sales`.`orders` FROM 'file:///x/it\\'s FILEFORMAT = PARQUET/' FILEFORMAT = PARQUET FILES = ('a.parquet') COPY_OPTIONS ('mergeSchema' = 'false')"
	got, err = StagingCopySQL(bare, tbl, st, 2)
	if err != nil || got != "COPY INTO `main`.`sales`.`orders__zbrecover_20261201t101500z_1a2b3c4d` FROM (SELECT CAST(2 AS BIGINT) AS `__zbrecover_batch`, * FROM 'file:///x/it\\'s FILEFORMAT = PARQUET/') FILEFORMAT = PARQUET FILES = ('a.parquet') COPY_OPTIONS ('mergeSchema' = 'false')" {
		t.Errorf("no projection: %v\n%s", err, got)
	}
	if _, err := StagingCopySQL("COPY INTO `main`.`sales`.`other` FROM 'x' FILEFORMAT = PARQUET", tbl, st, 1); err == nil {
		t.Error("a statement loading another table was retargeted")
	}
	m := MergeSQL(tbl, st, Dedupe{Key: Keys{"order id", "re`gion"}, Order: "seq", Columns: []string{"order id", "re`gion", "seq"}})
	for _, want := range []string{"PARTITION BY `order id`, `re``gion` ORDER BY `seq` DESC NULLS LAST, `__zbrecover_batch`",
		"zb_target.`order id` IS NOT DISTINCT FROM zb_source.`order id` AND zb_target.`re``gion` IS NOT DISTINCT FROM zb_source.`re``gion`",
		"WHERE `__zbrecover_rn` = 1",
		"WHEN NOT MATCHED THEN INSERT (`order id`, `re``gion`, `seq`) VALUES (zb_source.`order id`, zb_source.`re``gion`, zb_source.`seq`)"} {
		if !strings.Contains(m, want) {
			t.Errorf("MERGE lacks %q:\n%s", want, m)
		}
	}
	if _, ins, _ := strings.Cut(m, "WHEN NOT MATCHED"); strings.Contains(ins, "*") || strings.Contains(ins, "__zbrecover") {
		t.Errorf("the MERGE can insert a helper column: %s", m)
	}
	if m := MergeSQL(tbl, st, Dedupe{Key: Keys{"id"}, Order: "seq", Ascending: true}); !strings.Contains(m, "ORDER BY `seq` ASC NULLS LAST, `__zbrecover_batch`") {
		t.Errorf("ascending: %s", m)
	}
}

func TestKeySourceGlob(t *testing.T) {
	s := KeySource{Label: "g'1", Folder: "file:///f/", Files: []string{"a,b.parquet", "c{1}.parquet", `d\e.parquet`}, Exprs: []string{"`id`"}}
	got := s.sourceSQL()
	want := `SELECT 'g\'1' AS g, ` + "`id`" + ` AS k0 FROM read_files('file:///f/{a\\,b.parquet,c\\{1\\}.parquet,d\\\\e.parquet}', format => 'parquet')`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	many := KeySource{Label: "g", Folder: "file:///f", Exprs: []string{"`id`"}}
	for i := 0; i < 2500; i++ {
		many.Files = append(many.Files, "x.parquet")
	}
	if n := strings.Count(many.sourceSQL(), "read_files("); n != 3 {
		t.Errorf("2,500 names in %d globs, want 3", n)
	}
}
