package schemadiff

import (
	"reflect"
	"strings"
	"testing"
)

func geography(srid, algorithm string) Type {
	t := GeographyType(srid)
	t.Algorithm = algorithm
	return t
}

// TestParseGeospatialTypes: geometry and geography parse in every form the Delta protocol
// (a CRS, and for geography an edge algorithm) and Databricks (an SRID) give them, in each
// parser that reads types.
func TestParseGeospatialTypes(t *testing.T) {
	cases := []struct {
		name string
		want Type
	}{
		{"geography(OGC:CRS84, spherical)", GeographyType("4326")},
		{"geography(OGC:CRS84,spherical)", GeographyType("4326")},
		{"GEOGRAPHY(OGC:CRS84, SPHERICAL)", GeographyType("4326")},
		{"geography(OGC:CRS84)", GeographyType("4326")},
		{"geography(EPSG:4326, vincenty)", geography("4326", "vincenty")},
		{"geography(srid:4269, Karney)", geography("4269", "karney")},
		{"geography(4326)", GeographyType("4326")},
		{"geography", GeographyType("")},
		{"geometry(OGC:CRS84)", GeometryType("4326")},
		{"geometry(EPSG:3857)", GeometryType("3857")},
		{"geometry(epsg:3857)", GeometryType("3857")},
		{"GEOMETRY(4326)", GeometryType("4326")},
		{"geometry(any)", GeometryType("ANY")},
		{"geometry(projjson:crs_prop)", GeometryType("projjson:crs_prop")},
		{"geometry", GeometryType("")},
	}
	for _, tc := range cases {
		got, err := ParsePrimitive(tc.name)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParsePrimitive(%q) = %#v, %v; want %s", tc.name, got, err, tc.want)
		}
		// In a Delta schemaString and a Unity Catalog type_json.
		doc := `{"type":"struct","fields":[{"name":"g","type":"` + tc.name + `","nullable":true,"metadata":{}}]}`
		s, err := ParseDeltaSchema(doc)
		if err != nil || len(s.Fields) != 1 || !reflect.DeepEqual(s.Fields[0].Type, tc.want) {
			t.Errorf("ParseDeltaSchema(%s) = %v, %v; want g %s", doc, s, err, tc.want)
		}
		// In DESCRIBE … AS JSON.
		desc := `{"columns":[{"name":"g","type":{"name":"` + tc.name + `"},"nullable":true}]}`
		s, err = ParseDescribeJSON([]byte(desc))
		if err != nil || len(s.Fields) != 1 || !reflect.DeepEqual(s.Fields[0].Type, tc.want) {
			t.Errorf("ParseDescribeJSON(%s) = %v, %v; want g %s", desc, s, err, tc.want)
		}
		// In DDL, nested too, and DDL renders what ParseDDL reads.
		ddl := "g " + tc.name + ", s STRUCT<h: " + tc.name + ">"
		s, err = ParseDDL(ddl)
		if err != nil || len(s.Fields) != 2 || !reflect.DeepEqual(s.Fields[0].Type, tc.want) ||
			!reflect.DeepEqual(s.Fields[1].Type.Fields[0].Type, tc.want) {
			t.Errorf("ParseDDL(%q) = %v, %v; want %s twice", ddl, s, err, tc.want)
			continue
		}
		again, err := ParseDDL(s.DDL())
		if err != nil || !reflect.DeepEqual(again, s) {
			t.Errorf("DDL round trip of %q: %s became %v, %v", ddl, s.DDL(), again, err)
		}
		// The Delta form written back reads as the same type.
		back, err := ParseDeltaSchema(s.DeltaJSON())
		if err != nil || !reflect.DeepEqual(back.Fields[0].Type, tc.want) {
			t.Errorf("Delta round trip of %s: %v, %v", s.DeltaJSON(), back, err)
		}
	}
}

func TestParseGeospatialErrors(t *testing.T) {
	cases := map[string]string{
		"geography(OGC:CRS84, rhumb)":        `unknown edge interpolation algorithm "rhumb"`,
		"geometry(OGC:CRS84, spherical)":     "geometry takes one parameter",
		"geography(OGC:CRS84, spherical, x)": "unknown type",
		"geography()":                        "unknown type",
	}
	for name, want := range cases {
		_, err := ParsePrimitive(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePrimitive(%q) error = %v, want one mentioning %q", name, err, want)
		}
	}
	if _, err := ParseDDL("g GEOGRAPHY(OGC:CRS84, rhumb)"); err == nil || !strings.Contains(err.Error(), "rhumb") || !strings.Contains(err.Error(), " at g") {
		t.Errorf("ParseDDL with a bad algorithm: %v, want one naming the algorithm and the column", err)
	}
	if _, err := ParseDDL("g GEOGRAPHY(OGC:CRS84"); err == nil {
		t.Error("ParseDDL of an unclosed GEOGRAPHY( succeeded")
	}
}

// TestGeospatialDiff: the CRS is compared as an SRID (OGC:CRS84 in the table is 4326 in a
// file), and a geography's edge algorithm is part of its type.
func TestGeospatialDiff(t *testing.T) {
	table, err := ParseDeltaSchema(`{"type":"struct","fields":[{"name":"g","type":"geography(OGC:CRS84, spherical)","nullable":true,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := Worst(Diff(col("g", GeographyType("4326")), table)); got != OK {
		t.Errorf("geography(4326) file into geography(OGC:CRS84, spherical): %s, want ok", got)
	}
	if got := Worst(Diff(col("g", geography("4326", "vincenty")), table)); got != Blocks {
		t.Errorf("geography(4326, vincenty) file into geography(OGC:CRS84, spherical): %s, want blocks", got)
	}
	if got := geography("4326", "karney").String(); got != "geography(4326,karney)" {
		t.Errorf("String() = %s", got)
	}
	if got := geography("4326", "karney").SQL(); got != "GEOGRAPHY(4326, karney)" {
		t.Errorf("SQL() = %s", got)
	}
}
