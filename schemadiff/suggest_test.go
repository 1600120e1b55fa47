package schemadiff

import (
	"reflect"
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	cases := []struct {
		name        string
		file, table Schema
		wantDDL     []string
		wantSelect  string // SelectList over the file
		omit        []string
		confirm     bool
		complete    bool
		notes       []string // substrings expected among the notes
	}{
		{name: "nothing to do",
			file: col("id", LongType), table: col("id", LongType),
			wantSelect: "`id`", complete: true},
		{name: "widening cast",
			file: col("id", LongType).Col("n", IntegerType).Col("x", FloatType), table: col("id", LongType).Col("n", LongType).Col("x", DoubleType),
			wantSelect: "`id`, CAST(`n` AS BIGINT) AS `n`, CAST(`x` AS DOUBLE) AS `x`", complete: true},
		{name: "decimal widening",
			file: col("d", DecimalType(10, 2)), table: col("d", DecimalType(20, 5)),
			wantSelect: "CAST(`d` AS DECIMAL(20,5)) AS `d`", complete: true},
		{name: "missing NOT NULL column",
			file: col("id", LongType), table: col("id", LongType).Col("qty", IntegerType, NotNull),
			wantDDL:    []string{"ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `qty` DROP NOT NULL"},
			wantSelect: "`id`", complete: false,
			notes: []string{"qty is NOT NULL in the table and missing from the file"}},
		{name: "missing nullable column needs nothing",
			file: col("id", LongType), table: col("id", LongType).Col("note", StringType),
			wantSelect: "`id`", complete: true},
		{name: "extra columns: add them or leave them out",
			file: col("id", LongType).Col("legacy", StringType, Comment("old code")).Col("n", ShortType), table: col("id", LongType),
			wantDDL:    []string{"ALTER TABLE `main`.`sales`.`orders` ADD COLUMNS (`legacy` STRING COMMENT 'old code', `n` SMALLINT)"},
			wantSelect: "`id`", omit: []string{"legacy", "n"}, complete: true},
		{name: "likely rename",
			file: col("id", LongType).Col("amount", DecimalType(10, 2)), table: col("id", LongType).Col("amount_usd", DecimalType(10, 2)),
			wantSelect: "`id`, `amount` AS `amount_usd`", confirm: true, complete: true},
		{name: "nullable into NOT NULL with nulls",
			file: col("id", LongType, NullCount(5)), table: col("id", LongType, NotNull),
			wantDDL:    []string{"ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `id` DROP NOT NULL"},
			wantSelect: "`id`", complete: false,
			notes: []string{"coalesce(`id`, <default>)"}},
		{name: "nullable into NOT NULL without nulls",
			file: col("id", LongType, NullCount(0)), table: col("id", LongType, NotNull),
			wantSelect: "`id`", complete: true},
		{name: "narrowing: widen the table instead",
			file: col("n", LongType), table: col("n", IntegerType),
			wantDDL:    []string{"ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `n` TYPE BIGINT"},
			wantSelect: "`n`", complete: false,
			notes: []string{"delta.enableTypeWidening"}},
		{name: "unrelated types",
			file: col("n", StringType), table: col("n", IntegerType),
			wantSelect: "`n`", complete: false,
			notes: []string{"string in the file cannot be loaded into int"}},
		{name: "timestamp_ntz into timestamp",
			file: col("at", TimestampNTZType), table: col("at", TimestampType),
			wantSelect: "`at`", complete: false,
			notes: []string{"to_utc_timestamp(`at`, '<zone>')"}},
		{name: "timestamp into timestamp_ntz",
			file: col("at", TimestampType), table: col("at", TimestampNTZType),
			wantSelect: "`at`", complete: false,
			notes: []string{"CAST(from_utc_timestamp(`at`, '<zone>') AS TIMESTAMP_NTZ)"}},
		{name: "struct member widening casts the struct",
			file:       col("s", StructType(NewField("a", IntegerType), NewField("b", StringType))),
			table:      col("s", StructType(NewField("A", LongType, NotNull), NewField("b", StringType))),
			wantSelect: "CAST(`s` AS STRUCT<`A`: BIGINT, `b`: STRING>) AS `s`", complete: false,
			wantDDL: []string{"ALTER TABLE `main`.`sales`.`orders` ALTER COLUMN `s`.`A` DROP NOT NULL"}},
		{name: "struct with a dropped and a new member is rebuilt",
			file:       col("s", StructType(NewField("a", IntegerType), NewField("gone", StringType))),
			table:      col("s", StructType(NewField("a", LongType), NewField("c", DateType))),
			wantDDL:    []string{"ALTER TABLE `main`.`sales`.`orders` ADD COLUMNS (`s`.`gone` STRING)"},
			wantSelect: "IF(`s` IS NULL, NULL, named_struct('a', CAST(`s`.`a` AS BIGINT), 'c', CAST(NULL AS DATE))) AS `s`",
			complete:   true, notes: []string{"drops member s.gone"}},
		{name: "struct members in another order are rebuilt by name",
			file:       col("s", StructType(NewField("b", StringType), NewField("a", IntegerType))),
			table:      col("s", StructType(NewField("a", LongType), NewField("b", StringType))),
			wantSelect: "IF(`s` IS NULL, NULL, named_struct('a', CAST(`s`.`a` AS BIGINT), 'b', `s`.`b`)) AS `s`", complete: true},
		{name: "array of structs",
			file:       col("items", ArrayType(StructType(NewField("sku", StringType), NewField("qty", ShortType)), true)),
			table:      col("items", ArrayType(StructType(NewField("sku", StringType), NewField("qty", IntegerType), NewField("price", DecimalType(9, 2))), true)),
			wantSelect: "transform(`items`, _e1 -> IF(_e1 IS NULL, NULL, named_struct('sku', _e1.`sku`, 'qty', CAST(_e1.`qty` AS INT), 'price', CAST(NULL AS DECIMAL(9,2))))) AS `items`",
			complete:   true},
		{name: "array element widening casts the array",
			file: col("xs", ArrayType(IntegerType, true)), table: col("xs", ArrayType(LongType, true)),
			wantSelect: "CAST(`xs` AS ARRAY<BIGINT>) AS `xs`", complete: true},
		{name: "map value widening casts the map",
			file: col("m", MapType(StringType, FloatType, true)), table: col("m", MapType(StringType, DoubleType, true)),
			wantSelect: "CAST(`m` AS MAP<STRING, DOUBLE>) AS `m`", complete: true},
		{name: "map of structs needing a rebuild",
			file:       col("m", MapType(IntegerType, StructType(NewField("v", IntegerType), NewField("w", StringType)), true)),
			table:      col("m", MapType(LongType, StructType(NewField("v", LongType)), true)),
			wantDDL:    []string{"ALTER TABLE `main`.`sales`.`orders` ADD COLUMNS (`m`.`value`.`w` STRING)"},
			wantSelect: "transform_values(transform_keys(`m`, (_k1, _v1) -> CAST(_k1 AS BIGINT)), (_k1, _v1) -> IF(_v1 IS NULL, NULL, named_struct('v', CAST(_v1.`v` AS BIGINT)))) AS `m`",
			complete:   true},
		{name: "physical names become logical names",
			file:       col("col-1a", LongType).Col("col-2b", StructType(NewField("col-3c", IntegerType))).Col("note", StringType),
			table:      NewSchema().Col("id", LongType, Physical("col-1a", 1)).Col("s", StructType(NewField("x", LongType, Physical("col-3c", 3))), Physical("col-2b", 2)).Col("note", StringType, Physical("note", 4)),
			wantSelect: "`col-1a` AS `id`, CAST(`col-2b` AS STRUCT<`x`: BIGINT>) AS `s`, `note`",
			complete:   true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			changes := Diff(tc.file, tc.table)
			s := Suggest(changes, "main.sales.orders")
			if !reflect.DeepEqual(s.DDL, tc.wantDDL) {
				t.Errorf("DDL = %q\nwant %q%s", s.DDL, tc.wantDDL, dump(changes))
			}
			if got := s.SelectList(tc.file); got != tc.wantSelect {
				t.Errorf("SelectList = %s\n      want %s%s", got, tc.wantSelect, dump(changes))
			}
			if !reflect.DeepEqual(s.Omit, tc.omit) {
				t.Errorf("Omit = %q, want %q", s.Omit, tc.omit)
			}
			if s.Confirm != tc.confirm || s.Complete != tc.complete {
				t.Errorf("Confirm %v Complete %v, want %v %v%s", s.Confirm, s.Complete, tc.confirm, tc.complete, dump(changes))
			}
			notes := strings.Join(s.Notes, "\n")
			for _, n := range tc.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("notes lack %q:\n%s", n, notes)
				}
			}
		})
	}
}

// TestSuggestNotNullMissingIsIncomplete: the projection supplies no value for a NOT NULL
// column or member the file lacks, so it does not settle the change on its own.
func TestSuggestNotNullMissingIsIncomplete(t *testing.T) {
	for _, tc := range []struct {
		name        string
		file, table Schema
	}{
		{"column", col("id", LongType), col("id", LongType).Col("qty", IntegerType, NotNull)},
		{"member", col("s", StructType(NewField("a", IntegerType))),
			col("s", StructType(NewField("a", IntegerType), NewField("b", StringType, NotNull)))},
		{"column, with a cast elsewhere", col("id", IntegerType),
			col("id", LongType).Col("qty", IntegerType, NotNull)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes := Diff(tc.file, tc.table)
			if Worst(changes) != Blocks {
				t.Fatalf("verdict %s, want blocks%s", Worst(changes), dump(changes))
			}
			if s := Suggest(changes, "t"); s.Complete {
				t.Errorf("Complete = true, but the projection %q gives the NOT NULL column no value", s.SelectList(tc.file))
			}
		})
	}
}

func TestSuggestNestedNotNullMissing(t *testing.T) {
	file := col("s", StructType(NewField("a", IntegerType)))
	table := col("s", StructType(NewField("a", LongType), NewField("b", IntegerType, NotNull)))
	s := Suggest(Diff(file, table), "t")
	if s.Complete {
		t.Error("Complete with a NOT NULL member the file lacks")
	}
	if len(s.Projection) != 0 {
		t.Errorf("Projection = %v, want none (no value for s.b)", s.Projection)
	}
	if want := []string{"ALTER TABLE `t` ALTER COLUMN `s`.`b` DROP NOT NULL"}; !reflect.DeepEqual(s.DDL, want) {
		t.Errorf("DDL = %q, want %q", s.DDL, want)
	}
}

// TestSuggestNestedRename: a likely rename inside a struct is applied by the projection, for
// the operator to confirm.
func TestSuggestNestedRename(t *testing.T) {
	file := col("s", StructType(NewField("a", IntegerType), NewField("count", IntegerType)))
	table := col("s", StructType(NewField("a", LongType), NewField("counts", IntegerType, NotNull)))
	s := Suggest(Diff(file, table), "t")
	want := "IF(`s` IS NULL, NULL, named_struct('a', CAST(`s`.`a` AS BIGINT), 'counts', `s`.`count`)) AS `s`"
	if got := s.SelectList(file); got != want || !s.Confirm {
		t.Errorf("SelectList = %s (confirm %v), want %s", got, s.Confirm, want)
	}
	if want := []string{"ALTER TABLE `t` ALTER COLUMN `s`.`counts` DROP NOT NULL"}; !reflect.DeepEqual(s.DDL, want) {
		t.Errorf("DDL = %q, want %q", s.DDL, want)
	}
}

func TestSuggestSelect(t *testing.T) {
	file := col("id", LongType).Col("n", IntegerType).Col("extra", StringType)
	table := col("id", LongType).Col("n", LongType)
	s := Suggest(Diff(file, table), "orders")
	want := "SELECT `id`, CAST(`n` AS BIGINT) AS `n` FROM 's3://bucket/t/_zerobus/table_rejected_parquets/'"
	if got := s.Select(file, "s3://bucket/t/_zerobus/table_rejected_parquets/"); got != want {
		t.Errorf("Select = %s\nwant %s", got, want)
	}
	if !s.NeedsProjection() {
		t.Error("NeedsProjection = false")
	}
	if Suggest(Diff(table, table), "orders").NeedsProjection() {
		t.Error("NeedsProjection for identical schemas")
	}
}

// TestSuggestSelectNothingLeft: when no file column is in the table, the projection leaves
// them all out and there is no source query to offer (an empty SELECT list is not SQL).
func TestSuggestSelectNothingLeft(t *testing.T) {
	file := col("a", IntegerType).Col("b", StringType)
	table := col("x", DateType, NotNull)
	s := Suggest(Diff(file, table), "t")
	if got := s.Select(file, "s3://b/t/"); got != "" {
		t.Errorf("Select = %q, want none", got)
	}
	if !reflect.DeepEqual(s.Omit, []string{"a", "b"}) {
		t.Errorf("Omit = %q, want a and b", s.Omit)
	}
}

// TestSuggestHandBuiltChanges: changes not produced by Diff still give DDL.
func TestSuggestHandBuiltChanges(t *testing.T) {
	s := Suggest([]Change{
		MissingInFile{Path: p("q"), Table: NewField("q", IntegerType, NotNull)},
		ExtraInFile{Path: p("s", "x"), File: NewField("x", DateType)},
	}, "c.s.t")
	want := []string{
		"ALTER TABLE `c`.`s`.`t` ALTER COLUMN `q` DROP NOT NULL",
		"ALTER TABLE `c`.`s`.`t` ADD COLUMNS (`s`.`x` DATE)",
	}
	if !reflect.DeepEqual(s.DDL, want) {
		t.Errorf("DDL = %q, want %q", s.DDL, want)
	}
}
