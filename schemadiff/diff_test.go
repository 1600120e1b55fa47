package schemadiff

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// clean drops the bookkeeping Diff attaches for Suggest, so that changes compare with
// literals.
func clean(changes []Change) []Change {
	out := make([]Change, len(changes))
	for i, c := range changes {
		switch c := c.(type) {
		case MissingInFile:
			c.top = top{}
			out[i] = c
		case ExtraInFile:
			c.top = top{}
			out[i] = c
		case TypeChanged:
			c.top = top{}
			out[i] = c
		case NullabilityChanged:
			c.top = top{}
			out[i] = c
		case LikelyRename:
			c.top = top{}
			out[i] = c
		case Renamed:
			c.top = top{}
			out[i] = c
		default:
			out[i] = c
		}
	}
	return out
}

func p(parts ...string) Path { return Path(parts) }

func dump(changes []Change) string {
	var b strings.Builder
	for _, c := range changes {
		b.WriteString("\n  " + Info(c).String())
	}
	return b.String()
}

// col is a one-column schema.
func col(name string, t Type, opts ...FieldOption) Schema { return NewSchema().Col(name, t, opts...) }

func TestDiff(t *testing.T) {
	id := NewSchema().Col("id", LongType, NotNull)
	cases := []struct {
		name        string
		file, table Schema
		opts        []Option
		want        []Change
		verdict     Verdict
	}{
		// The rows of DESIGN.md's verdict table.
		{name: "same name, same type",
			file: id.Col("v", StringType), table: id.Col("v", StringType), verdict: OK},
		{name: "missing from file, nullable in table",
			file: id, table: id.Col("note", StringType),
			want:    []Change{MissingInFile{Path: p("note"), Table: NewField("note", StringType)}},
			verdict: OK},
		{name: "missing from file, NOT NULL in table",
			file: id, table: id.Col("qty", IntegerType, NotNull),
			want:    []Change{MissingInFile{Path: p("qty"), Table: NewField("qty", IntegerType, NotNull)}},
			verdict: Blocks},
		{name: "in file, not in table",
			file: id.Col("legacy", BinaryType), table: id,
			want:    []Change{ExtraInFile{Path: p("legacy"), File: NewField("legacy", BinaryType)}},
			verdict: Blocks},
		{name: "safe widening int to bigint",
			file: col("n", IntegerType), table: col("n", LongType),
			want:    []Change{TypeChanged{Path: p("n"), File: IntegerType, Table: LongType, Widening: true}},
			verdict: NeedsCast},
		{name: "safe widening float to double",
			file: col("x", FloatType), table: col("x", DoubleType),
			want:    []Change{TypeChanged{Path: p("x"), File: FloatType, Table: DoubleType, Widening: true}},
			verdict: NeedsCast},
		{name: "unsafe: string to int",
			file: col("n", StringType), table: col("n", IntegerType),
			want:    []Change{TypeChanged{Path: p("n"), File: StringType, Table: IntegerType}},
			verdict: Blocks},
		{name: "unsafe: narrowing bigint to int",
			file: col("n", LongType), table: col("n", IntegerType),
			want:    []Change{TypeChanged{Path: p("n"), File: LongType, Table: IntegerType}},
			verdict: Blocks},
		{name: "nullable in file, NOT NULL in table, statistics show no nulls",
			file: col("id", LongType, NullCount(0)), table: col("id", LongType, NotNull),
			want:    []Change{NullabilityChanged{Path: p("id"), NullCountKnown: true}},
			verdict: OK},
		{name: "nullable in file, NOT NULL in table, statistics show nulls",
			file: col("id", LongType, NullCount(3)), table: col("id", LongType, NotNull),
			want:    []Change{NullabilityChanged{Path: p("id"), NullCount: 3, NullCountKnown: true}},
			verdict: Blocks},
		{name: "nullable in file, NOT NULL in table, no statistics",
			file: col("id", LongType), table: col("id", LongType, NotNull),
			want:    []Change{NullabilityChanged{Path: p("id")}},
			verdict: Blocks},
		{name: "NOT NULL in file, nullable in table",
			file: col("id", LongType, NotNull), table: col("id", LongType), verdict: OK},
		{name: "likely rename",
			file: id.Col("amount", DecimalType(10, 2)), table: id.Col("amount_usd", DecimalType(10, 2)),
			want: []Change{LikelyRename{Path: p("amount_usd"), FilePath: p("amount"),
				File: NewField("amount", DecimalType(10, 2)), Table: NewField("amount_usd", DecimalType(10, 2)),
				Evidence: "one name extends the other"}},
			verdict: Blocks},
		{name: "no rename on the type alone: unrelated names",
			// A table that dropped note and added region (both strings): not a rename.
			file: id.Col("note", StringType), table: id.Col("region", StringType),
			want: []Change{
				MissingInFile{Path: p("region"), Table: NewField("region", StringType)},
				ExtraInFile{Path: p("note"), File: NewField("note", StringType)},
			},
			verdict: Blocks},
		{name: "likely rename off",
			file: id.Col("amount", DecimalType(10, 2)), table: id.Col("total", DecimalType(10, 2)),
			opts: []Option{NoRenameGuess()},
			want: []Change{
				MissingInFile{Path: p("total"), Table: NewField("total", DecimalType(10, 2))},
				ExtraInFile{Path: p("amount"), File: NewField("amount", DecimalType(10, 2))},
			},
			verdict: Blocks},
		{name: "not a rename: types differ",
			file: id.Col("amount", StringType), table: id.Col("total", DecimalType(10, 2)),
			want: []Change{
				MissingInFile{Path: p("total"), Table: NewField("total", DecimalType(10, 2))},
				ExtraInFile{Path: p("amount"), File: NewField("amount", StringType)},
			},
			verdict: Blocks},
		{name: "not a rename: two candidates",
			file: col("a", IntegerType).Col("b", IntegerType), table: col("c", IntegerType),
			want: []Change{
				MissingInFile{Path: p("c"), Table: NewField("c", IntegerType)},
				ExtraInFile{Path: p("a"), File: NewField("a", IntegerType)},
				ExtraInFile{Path: p("b"), File: NewField("b", IntegerType)},
			},
			verdict: Blocks},
		{name: "timestamp_ntz in file, timestamp in table",
			file: col("at", TimestampNTZType), table: col("at", TimestampType),
			want:    []Change{TypeChanged{Path: p("at"), File: TimestampNTZType, Table: TimestampType}},
			verdict: Blocks},
		{name: "timestamp in file, timestamp_ntz in table",
			file: col("at", TimestampType), table: col("at", TimestampNTZType),
			want:    []Change{TypeChanged{Path: p("at"), File: TimestampType, Table: TimestampNTZType}},
			verdict: Blocks},
		{name: "names differ only by case",
			file: col("OrderID", LongType), table: col("orderid", LongType),
			want:    []Change{CaseDiffers{Path: p("orderid"), FilePath: p("OrderID")}},
			verdict: OK},
		{name: "exact name wins over case-insensitive",
			file: col("Id", LongType).Col("id", LongType), table: col("id", LongType).Col("ID", LongType),
			want: []Change{
				CaseDiffers{Path: p("ID"), FilePath: p("Id")},
			},
			verdict: OK},

		// Nested structs, arrays of structs, maps.
		{name: "struct member widened, added and dropped",
			file: col("s", StructType(NewField("a", IntegerType), NewField("old", StringType), NewField("b", StringType))),
			table: col("s", StructType(NewField("a", LongType), NewField("b", StringType), NewField("c", DateType),
				NewField("d", DoubleType, NotNull))),
			opts: []Option{NoRenameGuess()},
			want: []Change{
				TypeChanged{Path: p("s", "a"), File: IntegerType, Table: LongType, Widening: true},
				MissingInFile{Path: p("s", "c"), Table: NewField("c", DateType)},
				MissingInFile{Path: p("s", "d"), Table: NewField("d", DoubleType, NotNull)},
				ExtraInFile{Path: p("s", "old"), File: NewField("old", StringType)},
			},
			verdict: Blocks},
		{name: "struct member nullability",
			file:    col("s", StructType(NewField("a", IntegerType))),
			table:   col("s", StructType(NewField("a", IntegerType, NotNull))),
			want:    []Change{NullabilityChanged{Path: p("s", "a")}},
			verdict: Blocks},
		{name: "array of structs",
			file: col("items", ArrayType(StructType(NewField("sku", StringType), NewField("qty", ShortType)), true)),
			table: col("items", ArrayType(StructType(NewField("SKU", StringType), NewField("qty", IntegerType),
				NewField("price", DecimalType(9, 2))), false)),
			want: []Change{
				NullabilityChanged{Path: p("items", "element")},
				CaseDiffers{Path: p("items", "element", "SKU"), FilePath: p("items", "element", "sku")},
				TypeChanged{Path: p("items", "element", "qty"), File: ShortType, Table: IntegerType, Widening: true},
				MissingInFile{Path: p("items", "element", "price"), Table: NewField("price", DecimalType(9, 2))},
			},
			verdict: Blocks},
		{name: "array element widening only",
			file: col("xs", ArrayType(IntegerType, true)), table: col("xs", ArrayType(LongType, true)),
			want:    []Change{TypeChanged{Path: p("xs", "element"), File: IntegerType, Table: LongType, Widening: true}},
			verdict: NeedsCast},
		{name: "map key and value",
			file:  col("m", MapType(IntegerType, FloatType, true)),
			table: col("m", MapType(LongType, DoubleType, false)),
			want: []Change{
				TypeChanged{Path: p("m", "key"), File: IntegerType, Table: LongType, Widening: true},
				NullabilityChanged{Path: p("m", "value")},
				TypeChanged{Path: p("m", "value"), File: FloatType, Table: DoubleType, Widening: true},
			},
			verdict: Blocks},
		{name: "map of struct values",
			file:    col("m", MapType(StringType, StructType(NewField("v", StringType)), true)),
			table:   col("m", MapType(StringType, StructType(NewField("v", IntegerType)), true)),
			want:    []Change{TypeChanged{Path: p("m", "value", "v"), File: StringType, Table: IntegerType}},
			verdict: Blocks},
		{name: "container kind differs",
			file: col("tags", StringType), table: col("tags", ArrayType(StringType, true)),
			want:    []Change{TypeChanged{Path: p("tags"), File: StringType, Table: ArrayType(StringType, true)}},
			verdict: Blocks},
		{name: "struct member order does not matter",
			file:  col("s", StructType(NewField("b", StringType), NewField("a", IntegerType))),
			table: col("s", StructType(NewField("a", IntegerType), NewField("b", StringType))), verdict: OK},

		// Decimals.
		{name: "decimal equal", file: col("d", DecimalType(10, 2)), table: col("d", DecimalType(10, 2)), verdict: OK},
		{name: "decimal widened, same scale",
			file: col("d", DecimalType(10, 2)), table: col("d", DecimalType(20, 2)),
			want:    []Change{TypeChanged{Path: p("d"), File: DecimalType(10, 2), Table: DecimalType(20, 2), Widening: true}},
			verdict: NeedsCast},
		{name: "decimal widened, greater scale",
			file: col("d", DecimalType(10, 2)), table: col("d", DecimalType(20, 5)),
			want:    []Change{TypeChanged{Path: p("d"), File: DecimalType(10, 2), Table: DecimalType(20, 5), Widening: true}},
			verdict: NeedsCast},
		{name: "decimal narrowed precision",
			file: col("d", DecimalType(12, 2)), table: col("d", DecimalType(10, 2)),
			want:    []Change{TypeChanged{Path: p("d"), File: DecimalType(12, 2), Table: DecimalType(10, 2)}},
			verdict: Blocks},
		{name: "decimal scale up without integer digits",
			file: col("d", DecimalType(10, 2)), table: col("d", DecimalType(10, 3)),
			want:    []Change{TypeChanged{Path: p("d"), File: DecimalType(10, 2), Table: DecimalType(10, 3)}},
			verdict: Blocks},
		{name: "decimal scale down",
			file: col("d", DecimalType(10, 4)), table: col("d", DecimalType(20, 2)),
			want:    []Change{TypeChanged{Path: p("d"), File: DecimalType(10, 4), Table: DecimalType(20, 2)}},
			verdict: Blocks},

		// Types the Parquet → Spark mapping produces.
		{name: "UINT8 (smallint) into int",
			file: col("u", ShortType), table: col("u", IntegerType),
			want:    []Change{TypeChanged{Path: p("u"), File: ShortType, Table: IntegerType, Widening: true}},
			verdict: NeedsCast},
		{name: "UINT32 (bigint) into bigint", file: col("u", LongType), table: col("u", LongType), verdict: OK},
		{name: "UINT32 (bigint) into int",
			file: col("u", LongType), table: col("u", IntegerType),
			want:    []Change{TypeChanged{Path: p("u"), File: LongType, Table: IntegerType}},
			verdict: Blocks},
		{name: "UINT64 (decimal(20,0)) into bigint",
			file: col("u", DecimalType(20, 0)), table: col("u", LongType),
			want:    []Change{TypeChanged{Path: p("u"), File: DecimalType(20, 0), Table: LongType}},
			verdict: Blocks},
		{name: "UINT64 (decimal(20,0)) into decimal(38,0)",
			file: col("u", DecimalType(20, 0)), table: col("u", DecimalType(38, 0)),
			want:    []Change{TypeChanged{Path: p("u"), File: DecimalType(20, 0), Table: DecimalType(38, 0), Widening: true}},
			verdict: NeedsCast},
		{name: "INT96 (timestamp) into timestamp", file: col("ts", TimestampType), table: col("ts", TimestampType), verdict: OK},
		{name: "INT96 (timestamp) into timestamp_ntz",
			file: col("ts", TimestampType), table: col("ts", TimestampNTZType),
			want:    []Change{TypeChanged{Path: p("ts"), File: TimestampType, Table: TimestampNTZType}},
			verdict: Blocks},
		{name: "isAdjustedToUTC=false (timestamp_ntz) into timestamp_ntz",
			file: col("ts", TimestampNTZType), table: col("ts", TimestampNTZType), verdict: OK},

		// Column mapping.
		{name: "physical names settle a rename",
			file:    col("id", IntegerType).Col("description", StringType),
			table:   NewSchema().Col("newid", IntegerType, Physical("id", 1)).Col("description", StringType, Physical("description", 2)),
			want:    []Change{Renamed{Path: p("newid"), FilePath: p("id")}},
			verdict: NeedsCast},
		{name: "uuid physical names",
			file: col("col-1a", LongType).Col("col-2b", StructType(NewField("col-3c", IntegerType))),
			table: NewSchema().Col("id", LongType, Physical("col-1a", 1)).
				Col("s", StructType(NewField("x", LongType, Physical("col-3c", 3))), Physical("col-2b", 2)),
			want: []Change{
				Renamed{Path: p("id"), FilePath: p("col-1a")},
				Renamed{Path: p("s"), FilePath: p("col-2b")},
				Renamed{Path: p("s", "x"), FilePath: p("col-2b", "col-3c")},
				TypeChanged{Path: p("s", "x"), File: IntegerType, Table: LongType, Widening: true},
			},
			verdict: NeedsCast},
		{name: "physical name beats a same-named logical column",
			// After RENAME COLUMN id TO newid and ADD COLUMN id, a file column "id" is newid's data.
			file: col("id", IntegerType),
			table: NewSchema().Col("newid", IntegerType, Physical("id", 1)).
				Col("id", StringType, Physical("col-9", 3)),
			want: []Change{
				Renamed{Path: p("newid"), FilePath: p("id")},
				MissingInFile{Path: p("id"), Table: NewField("id", StringType, Physical("col-9", 3))},
			},
			verdict: NeedsCast},
		{name: "files with logical names under column mapping",
			file:    col("newid", IntegerType),
			table:   NewSchema().Col("newid", IntegerType, Physical("id", 1)),
			verdict: OK},
		{name: "physical matching turned off",
			file:  col("id", IntegerType),
			table: NewSchema().Col("newid", IntegerType, Physical("id", 1)),
			opts:  []Option{MatchPhysicalNames(false)},
			want: []Change{
				MissingInFile{Path: p("newid"), Table: NewField("newid", IntegerType, Physical("id", 1))},
				ExtraInFile{Path: p("id"), File: NewField("id", IntegerType)},
			},
			verdict: Blocks},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(tc.file, tc.table, tc.opts...)
			if !reflect.DeepEqual(clean(got), tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("Diff:%s\nwant:%s", dump(got), dump(tc.want))
			}
			if v := Worst(got); v != tc.verdict {
				t.Errorf("Worst = %s, want %s%s", v, tc.verdict, dump(got))
			}
		})
	}
}

// TestWideningRules checks every type-widening rule (Delta's type widening table) and a
// sample of the pairs it excludes.
func TestWideningRules(t *testing.T) {
	widen := [][2]Type{
		{ByteType, ShortType}, {ByteType, IntegerType}, {ByteType, LongType}, {ByteType, DoubleType}, {ByteType, DecimalType(3, 0)},
		{ByteType, DecimalType(11, 1)},
		{ShortType, IntegerType}, {ShortType, LongType}, {ShortType, DoubleType}, {ShortType, DecimalType(5, 0)}, {ShortType, DecimalType(11, 1)},
		{IntegerType, LongType}, {IntegerType, DoubleType}, {IntegerType, DecimalType(10, 0)}, {IntegerType, DecimalType(11, 1)},
		{LongType, DecimalType(20, 0)}, {LongType, DecimalType(21, 1)},
		{FloatType, DoubleType},
		{DecimalType(10, 2), DecimalType(20, 2)}, {DecimalType(10, 2), DecimalType(20, 5)}, {DecimalType(10, 2), DecimalType(11, 3)},
		{DateType, TimestampNTZType},
		{{Kind: Void}, StringType},
	}
	keep := [][2]Type{
		{ShortType, ByteType}, {IntegerType, ShortType}, {LongType, IntegerType}, {LongType, DoubleType}, {LongType, FloatType},
		{IntegerType, FloatType}, {DoubleType, FloatType}, {FloatType, DecimalType(38, 10)}, {FloatType, LongType}, {DoubleType, DecimalType(38, 18)},
		{ByteType, DecimalType(2, 0)}, {ShortType, DecimalType(4, 0)}, {IntegerType, DecimalType(9, 0)}, {IntegerType, DecimalType(11, 2)},
		{LongType, DecimalType(19, 0)}, {LongType, DecimalType(20, 1)},
		{DecimalType(10, 2), DecimalType(10, 3)}, {DecimalType(10, 2), DecimalType(9, 2)}, {DecimalType(10, 4), DecimalType(20, 2)},
		{DecimalType(10, 2), DecimalType(10, 2)}, {DecimalType(10, 0), LongType}, {DecimalType(5, 0), IntegerType},
		{DateType, TimestampType}, {TimestampType, TimestampNTZType}, {TimestampNTZType, TimestampType}, {TimestampType, DateType},
		{StringType, BinaryType}, {BinaryType, StringType}, {StringType, IntegerType},
		{BooleanType, IntegerType}, {IntegerType, BooleanType}, {StringType, VariantType}, {IntegerType, IntegerType},
	}
	for _, w := range widen {
		if !CanWiden(w[0], w[1]) {
			t.Errorf("CanWiden(%s, %s) = false, want true", w[0], w[1])
		}
		if got := Worst(Diff(col("c", w[0]), col("c", w[1]))); got != NeedsCast {
			t.Errorf("%s → %s: verdict %s, want needs-cast", w[0], w[1], got)
		}
	}
	for _, k := range keep {
		if CanWiden(k[0], k[1]) {
			t.Errorf("CanWiden(%s, %s) = true, want false", k[0], k[1])
		}
		want := Blocks
		if k[0].Equal(k[1]) {
			want = OK
		}
		if got := Worst(Diff(col("c", k[0]), col("c", k[1]))); got != want {
			t.Errorf("%s → %s: verdict %s, want %s", k[0], k[1], got, want)
		}
	}
}

func TestDiffDoesNotMutate(t *testing.T) {
	file := col("s", StructType(NewField("a", IntegerType))).Col("x", StringType)
	table := NewSchema().Col("s", StructType(NewField("a", LongType, Physical("p-a", 2))), Physical("p-s", 1))
	fileCopy := NewSchema(file.Fields...)
	before := file.DeltaJSON() + table.DeltaJSON()
	Diff(file, table)
	Suggest(Diff(file, table), "t")
	if file.DeltaJSON()+table.DeltaJSON() != before || !reflect.DeepEqual(file, fileCopy) {
		t.Error("Diff or Suggest modified an input")
	}
}

func TestChangeReasonsAndJSON(t *testing.T) {
	changes := Diff(
		NewSchema().Col("id", LongType, NullCount(2)).Col("n", IntegerType).Col("ts", TimestampNTZType).Col("old", StringType),
		NewSchema().Col("id", LongType, NotNull).Col("n", LongType).Col("ts", TimestampType).Col("old_v2", StringType).Col("q", IntegerType, NotNull),
	)
	var reasons []string
	for _, c := range changes {
		reasons = append(reasons, Info(c).String())
	}
	all := strings.Join(reasons, "\n")
	for _, want := range []string{
		"id: blocks: column id is nullable in the file and NOT NULL in the table: the file's statistics show 2 NULLs",
		"n: needs-cast: column n is int in the file and bigint in the table: every value fits",
		"CAST(… AS BIGINT)",
		"ts: blocks: column ts is timestamp_ntz (local date-time) in the file and timestamp (UTC instant) in the table",
		"old_v2: blocks: column old (string) is only in the file and old_v2 (string) only in the table: probably renamed (one name extends the other)",
		"q: blocks: column q (int NOT NULL) is in the table but not in the file",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("reasons lack %q:\n%s", want, all)
		}
	}
	b, err := json.Marshal(changes)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got[1]["kind"] != "type_changed" || got[1]["path"] != "n" || got[1]["verdict"] != "needs_cast" ||
		got[1]["file_type"] != "int" || got[1]["table_type"] != "bigint" {
		t.Errorf("JSON of a type change = %v", got[1])
	}
	if got[3]["kind"] != "likely_rename" || got[3]["file_path"] != "old" {
		t.Errorf("JSON of a rename = %v", got[3])
	}
	// A rename the load maps is labelled rename in text, needs_cast in JSON (it needs the
	// projection).
	r := Info(Renamed{Path: Path{"customer_key"}, FilePath: Path{"customer_id"}, Evidence: "the table renamed customer_id to customer_key in version 2"})
	if got := r.String(); got != "customer_key: rename: column customer_key is customer_id in the file: the table renamed customer_id to "+
		"customer_key in version 2; COPY INTO matches columns by name, so load through `customer_id` AS `customer_key`" {
		t.Errorf("a rename: %s", got)
	}
	if b, _ := json.Marshal(r); !strings.Contains(string(b), `"kind":"renamed"`) || !strings.Contains(string(b), `"verdict":"needs_cast"`) {
		t.Errorf("JSON of a rename: %s", b)
	}
	if len(Blocking(changes)) != 4 {
		t.Errorf("Blocking = %d changes, want 4:%s", len(Blocking(changes)), dump(Blocking(changes)))
	}
	var v Verdict
	if err := v.UnmarshalText([]byte("needs-cast")); err != nil || v != NeedsCast {
		t.Errorf("UnmarshalText = %v, %v", v, err)
	}
	if p("a b", "element", "c").String() != "`a b`.element.c" || p("a b", "element").SQL() != "`a b`.`element`" {
		t.Error("Path rendering")
	}
}
