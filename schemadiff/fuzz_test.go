package schemadiff

import (
	"reflect"
	"testing"
)

// FuzzParseDDL: ParseDDL never panics, and whatever it accepts renders back (DDL) to the same
// schema.
func FuzzParseDDL(f *testing.F) {
	for _, s := range []string{
		"id BIGINT NOT NULL, name STRING COMMENT 'x', price DECIMAL(12,2)",
		"s STRUCT<a: INT NOT NULL, `b c`: ARRAY<STRUCT<x: DOUBLE>>>, m MAP<STRING, ARRAY<BIGINT>>",
		"struct<a:int,b:map<string,decimal(5,2)>>",
		"`a``b` INT, `select` STRING NULL, 1x INT",
		"c VARCHAR(3) COLLATE UTF8_LCASE COMMENT 'it''s \\\\ here'",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ddl string) {
		s, err := ParseDDL(ddl)
		if err != nil {
			return
		}
		again, err := ParseDDL(s.DDL())
		if err != nil {
			t.Fatalf("ParseDDL(%q) gave %s, which does not parse: %v", ddl, s.DDL(), err)
		}
		if !reflect.DeepEqual(s, again) {
			t.Fatalf("round trip of %q: %s became %s", ddl, s.DDL(), again.DDL())
		}
		// A schema never differs from itself, and needs no fix.
		if changes := Diff(s, s); len(changes) != 0 {
			t.Fatalf("Diff of %s with itself:%s", s.DDL(), dump(changes))
		}
		// Widening every integer column needs at most casts, and the projection covers it.
		wide := widenInts(s)
		changes := Diff(s, wide)
		if v := Worst(changes); v == Blocks {
			t.Fatalf("widening %s to %s blocks:%s", s.DDL(), wide.DDL(), dump(changes))
		}
		if sg := Suggest(changes, "t"); !sg.Complete || len(sg.DDL) != 0 {
			t.Fatalf("widening %s: suggestion %+v", s.DDL(), sg)
		}
	})
}

// FuzzParseDeltaSchema: ParseDeltaSchema never panics, and DeltaJSON writes back what it read.
func FuzzParseDeltaSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`,
		`{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[{"name":"a","type":"decimal(10,2)","nullable":false,"metadata":{"comment":"c","delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-x"}}]},"nullable":true,"metadata":{}}]}`,
		`{"type":"struct","fields":[{"name":"m","type":{"type":"map","keyType":"integer","valueType":{"type":"array","elementType":"timestamp_ntz","containsNull":false},"valueContainsNull":true},"nullable":true,"metadata":{"x":[1,{"y":null}]}}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		s, err := ParseDeltaSchema(doc)
		if err != nil {
			return
		}
		again, err := ParseDeltaSchema(s.DeltaJSON())
		if err != nil {
			t.Fatalf("DeltaJSON %s does not parse: %v", s.DeltaJSON(), err)
		}
		if !again.Equal(s) || again.DeltaJSON() != s.DeltaJSON() {
			t.Fatalf("round trip of %s: %s became %s", doc, s.DeltaJSON(), again.DeltaJSON())
		}
	})
}

// widenInts returns s with every int (top level and nested) turned into bigint.
func widenInts(s Schema) Schema { return Schema{Fields: widenFields(s.Fields)} }

func widenFields(fields []Field) []Field {
	out := make([]Field, len(fields))
	for i, f := range fields {
		f.Type = widenType(f.Type)
		out[i] = f
	}
	return out
}

func widenType(t Type) Type {
	switch t.Kind {
	case Integer:
		return LongType
	case Struct:
		t.Fields = widenFields(t.Fields)
	case Array:
		e := widenType(*t.Elem)
		t.Elem = &e
	case Map:
		k, v := widenType(*t.Key), widenType(*t.Value)
		t.Key, t.Value = &k, &v
	}
	return t
}
