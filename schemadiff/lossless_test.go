package schemadiff

import (
	"strings"
	"testing"
)

// TestBigintToStringNeedsCast: a bigint file column against a string table column loses
// nothing; COPY INTO still needs the cast spelled out, so the projection carries it.
func TestBigintToStringNeedsCast(t *testing.T) {
	file := col("id", LongType).Col("code", LongType)
	table := col("id", LongType).Col("code", StringType)
	changes := Diff(file, table)
	if got := Worst(changes); got != NeedsCast {
		t.Fatalf("verdict %s, want needs-cast: %v", got, Infos(changes))
	}
	s := Suggest(changes, "main.s.t")
	if want := "`id`, CAST(`code` AS STRING) AS `code`"; s.SelectList(file) != want {
		t.Errorf("SelectList = %s, want %s", s.SelectList(file), want)
	}
	if !s.Complete || len(s.DDL) > 0 {
		t.Errorf("Complete %v DDL %q, want a complete projection and no DDL", s.Complete, s.DDL)
	}
	for _, n := range s.Notes {
		if strings.Contains(n, "losing values") {
			t.Errorf("note %q calls a lossless cast lossy", n)
		}
	}
	if r := Info(changes[0]).Reason; !strings.Contains(r, "without loss") {
		t.Errorf("reason %q does not say the cast is lossless", r)
	}
}

func TestLosslessCasts(t *testing.T) {
	lossless := [][2]Type{
		{LongType, StringType}, {IntegerType, StringType}, {BooleanType, StringType}, {DoubleType, StringType},
		{DecimalType(10, 2), StringType}, {DateType, StringType}, {TimestampType, StringType}, {TimestampNTZType, StringType},
		{IntegerType, LongType}, {DecimalType(10, 2), DecimalType(12, 2)},
	}
	for _, c := range lossless {
		if !LosslessCast(c[0], c[1]) {
			t.Errorf("LosslessCast(%s, %s) = false", c[0], c[1])
		}
		if got := Worst(Diff(col("c", c[0]), col("c", c[1]))); got != NeedsCast {
			t.Errorf("%s → %s: %s, want needs-cast", c[0], c[1], got)
		}
	}
	lossy := [][2]Type{
		{StringType, LongType}, {BinaryType, StringType}, {LongType, IntegerType}, {StringType, DateType},
		{ArrayType(IntegerType, true), StringType}, {LongType, DoubleType},
	}
	for _, c := range lossy {
		if LosslessCast(c[0], c[1]) {
			t.Errorf("LosslessCast(%s, %s) = true", c[0], c[1])
		}
	}
	// Nested: array<bigint> into array<string> casts the whole array.
	file, table := col("a", ArrayType(LongType, true)), col("a", ArrayType(StringType, true))
	s := Suggest(Diff(file, table), "t")
	if want := "CAST(`a` AS ARRAY<STRING>) AS `a`"; s.SelectList(file) != want {
		t.Errorf("SelectList = %s, want %s", s.SelectList(file), want)
	}
}

// TestNoRenameWithoutEvidence: a table whose newest version dropped note and added region
// (both strings) is not a rename: nothing of note goes into the projection as region.
func TestNoRenameWithoutEvidence(t *testing.T) {
	file := col("id", LongType).Col("note", StringType)
	table := col("id", LongType).Col("region", StringType)
	changes := Diff(file, table)
	for _, c := range changes {
		if c.Kind() == KindLikelyRename || c.Kind() == KindRenamed {
			t.Errorf("unexpected rename: %s", Info(c))
		}
	}
	s := Suggest(changes, "t")
	if s.Confirm {
		t.Error("Confirm is set: a guess is in the projection")
	}
	if sel := s.SelectList(file); strings.Contains(sel, "region") {
		t.Errorf("projection %s loads note as region", sel)
	}
}

func TestSimilarNames(t *testing.T) {
	yes := [][2]string{{"customer_id", "customerId"}, {"amount", "amount_usd"}, {"adress", "address"},
		{"costumer_id", "customer_id"}, {"note", "notes"}, {"User-Name", "username"}, {"customer_id", "customer_key"}}
	no := [][2]string{{"note", "region"}, {"id", "newid"}, {"a", "b"}, {"amount", "total"}, {"ts", "tz"}, {"x", ""}, {"created", "creator_id"}}
	for _, p := range yes {
		if ev, ok := SimilarNames(p[0], p[1]); !ok || ev == "" {
			t.Errorf("SimilarNames(%q, %q) = %q, %v; want similar", p[0], p[1], ev, ok)
		}
	}
	for _, p := range no {
		if ev, ok := SimilarNames(p[0], p[1]); ok {
			t.Errorf("SimilarNames(%q, %q) = %q; want not similar", p[0], p[1], ev)
		}
	}
}

// TestUnsupportedColumnBlocks: a file column Databricks has no type for blocks the group,
// naming the column and the Parquet type, whether the table has the column or not.
func TestUnsupportedColumnBlocks(t *testing.T) {
	f16 := UnsupportedType("FIXED_LEN_BYTE_ARRAY (Float16)", "Databricks has no 16-bit float type")
	for name, table := range map[string]Schema{
		"in table":     col("id", LongType).Col("h", FloatType),
		"not in table": col("id", LongType),
	} {
		changes := Diff(col("id", LongType).Col("h", f16), table)
		var got []ChangeInfo
		for _, c := range changes {
			if c.Kind() == KindUnsupportedType {
				got = append(got, Info(c))
			}
		}
		if len(got) != 1 || got[0].Path.String() != "h" || got[0].Verdict != Blocks || !strings.Contains(got[0].Reason, "Float16") {
			t.Errorf("%s: unsupported changes %v, want one blocking change on h naming Float16 (all: %v)", name, got, Infos(changes))
		}
		s := Suggest(changes, "t")
		if s.Complete || len(s.DDL) > 0 {
			t.Errorf("%s: Complete %v DDL %q: nothing settles an unreadable column type", name, s.Complete, s.DDL)
		}
	}
	// Geometry and geography are types of their own.
	if got := Worst(Diff(col("g", GeometryType("4326")), col("g", GeometryType("4326")))); got != OK {
		t.Errorf("geometry(4326) → geometry(4326): %s", got)
	}
	if got := Worst(Diff(col("g", GeometryType("4326")), col("g", GeographyType("4326")))); got != Blocks {
		t.Errorf("geometry → geography: %s, want blocks", got)
	}
	for in, want := range map[string]Type{"GEOMETRY(4326)": GeometryType("4326"), "geography": GeographyType(""), "geometry(any)": GeometryType("ANY")} {
		got, err := ParsePrimitive(in)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParsePrimitive(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
}
