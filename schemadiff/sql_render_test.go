package schemadiff

import "testing"

// TestTypeSQL pins the two spellings of a nested type: Spark's simpleString (String) and SQL DDL
// (SQL, DDL), and the CAST target form that drops NOT NULL from members (looseSQL).
func TestTypeSQL(t *testing.T) {
	s := NewSchema().
		Col("id", LongType, NotNull).
		Col("s", StructType(
			NewField("a", IntegerType, NotNull, Comment("it's")),
			NewField("b c", ArrayType(StructType(NewField("x", DecimalType(12, 2))), true)),
		)).
		Col("m", MapType(StringType, ArrayType(TimestampNTZType, false), true), Comment("m"))
	cases := []struct{ name, got, want string }{
		{"String", s.String(), "struct<id:bigint NOT NULL,s:struct<a:int NOT NULL,`b c`:array<struct<x:decimal(12,2)>>>,m:map<string,array<timestamp_ntz>>>"},
		{"SQL", s.Type().SQL(), "STRUCT<`id`: BIGINT NOT NULL, `s`: STRUCT<`a`: INT NOT NULL COMMENT 'it\\'s', `b c`: ARRAY<STRUCT<`x`: DECIMAL(12,2)>>>, `m`: MAP<STRING, ARRAY<TIMESTAMP_NTZ>> COMMENT 'm'>"},
		{"DDL", s.DDL(), "`id` BIGINT NOT NULL, `s` STRUCT<`a`: INT NOT NULL COMMENT 'it\\'s', `b c`: ARRAY<STRUCT<`x`: DECIMAL(12,2)>>>, `m` MAP<STRING, ARRAY<TIMESTAMP_NTZ>> COMMENT 'm'"},
		{"looseSQL", looseSQL(s.Type()), "STRUCT<`id`: BIGINT, `s`: STRUCT<`a`: INT, `b c`: ARRAY<STRUCT<`x`: DECIMAL(12,2)>>>, `m`: MAP<STRING, ARRAY<TIMESTAMP_NTZ>>>"},
		{"incomplete", Type{Kind: Map}.String() + " " + Type{Kind: Array}.SQL(), "map<,> ARRAY<>"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, c.got, c.want)
		}
	}
}
