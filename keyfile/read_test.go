package keyfile_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/keyfile"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

var (
	tsUTC   = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	tsMilli = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	tsNTZ   = &arrow.TimestampType{Unit: arrow.Microsecond}
	dec102  = &arrow.Decimal128Type{Precision: 10, Scale: 2}
	dec380  = &arrow.Decimal128Type{Precision: 38, Scale: 0}
)

// Every supported key type is read, cast to the table's type, with NULL kept as NULL.
func TestReadTypes(t *testing.T) {
	cases := []struct {
		name  string
		file  arrow.DataType
		opts  pqgen.Options
		json  string // the values of column "k", a JSON array
		table sd.Type
		want  []string
	}{
		{"tinyint", arrow.PrimitiveTypes.Int8, pqgen.Options{}, `[-128, null, 127]`, sd.ByteType, []string{"-128", "NULL", "127"}},
		{"smallint", arrow.PrimitiveTypes.Int16, pqgen.Options{}, `[-32768, null, 7]`, sd.ShortType, []string{"-32768", "NULL", "7"}},
		{"int", arrow.PrimitiveTypes.Int32, pqgen.Options{}, `[-2147483648, null, 1]`, sd.IntegerType, []string{"-2147483648", "NULL", "1"}},
		{"int to bigint", arrow.PrimitiveTypes.Int32, pqgen.Options{}, `[2147483647, null, -5]`, sd.LongType, []string{"2147483647", "NULL", "-5"}},
		{"tinyint to int", arrow.PrimitiveTypes.Int8, pqgen.Options{}, `[-1, null]`, sd.IntegerType, []string{"-1", "NULL"}},
		{"bigint", arrow.PrimitiveTypes.Int64, pqgen.Options{}, `[-9223372036854775808, null, 9223372036854775807]`, sd.LongType, []string{"-9223372036854775808", "NULL", "9223372036854775807"}},
		{"bigint to int in range", arrow.PrimitiveTypes.Int64, pqgen.Options{}, `[42, null]`, sd.IntegerType, []string{"42", "NULL"}},
		{"uint8 is smallint", arrow.PrimitiveTypes.Uint8, pqgen.Options{}, `[255, null, 0]`, sd.ShortType, []string{"255", "NULL", "0"}},
		{"uint16 is int", arrow.PrimitiveTypes.Uint16, pqgen.Options{}, `[65535, null]`, sd.IntegerType, []string{"65535", "NULL"}},
		{"uint32 is bigint", arrow.PrimitiveTypes.Uint32, pqgen.Options{}, `[4294967295, null, 1]`, sd.LongType, []string{"4294967295", "NULL", "1"}},
		{"uint64 is decimal(20,0)", arrow.PrimitiveTypes.Uint64, pqgen.Options{}, `[18446744073709551615, null, 3]`, sd.DecimalType(20, 0), []string{"18446744073709551615", "NULL", "3"}},
		{"uint64 to bigint in range", arrow.PrimitiveTypes.Uint64, pqgen.Options{}, `[9223372036854775807, null]`, sd.LongType, []string{"9223372036854775807", "NULL"}},
		{"int to string", arrow.PrimitiveTypes.Int32, pqgen.Options{}, `[-12, null]`, sd.StringType, []string{"-12", "NULL"}},
		{"int to decimal", arrow.PrimitiveTypes.Int32, pqgen.Options{}, `[-12, null]`, sd.DecimalType(12, 2), []string{"-12.00", "NULL"}},
		{"string", arrow.BinaryTypes.String, pqgen.Options{}, `["a", null, "", "ünï"]`, sd.StringType, []string{"a", "NULL", "", "ünï"}},
		{"json string", pqgen.JSONType(), pqgen.Options{}, `["{\"a\":1}", null]`, sd.StringType, []string{`{"a":1}`, "NULL"}},
		{"enum string", pqgen.EnumType(), pqgen.Options{}, `["RED", null]`, sd.StringType, []string{"RED", "NULL"}},
		{"binary", arrow.BinaryTypes.Binary, pqgen.Options{}, `["AAE=", null]`, sd.BinaryType, []string{"AAE=", "NULL"}},
		{"string to binary", arrow.BinaryTypes.String, pqgen.Options{}, `["ab", null]`, sd.BinaryType, []string{"YWI=", "NULL"}},
		{"binary to string", arrow.BinaryTypes.Binary, pqgen.Options{}, `["YWI=", null]`, sd.StringType, []string{"ab", "NULL"}},
		{"decimal", dec102, pqgen.Options{}, `["-12.34", null, "99999999.99"]`, sd.DecimalType(10, 2), []string{"-12.34", "NULL", "99999999.99"}},
		{"decimal widened", dec102, pqgen.Options{}, `["-12.34", null]`, sd.DecimalType(14, 4), []string{"-12.3400", "NULL"}},
		{"decimal(38,0)", dec380, pqgen.Options{}, `["-99999999999999999999999999999999999999", null]`, sd.DecimalType(38, 0), []string{"-99999999999999999999999999999999999999", "NULL"}},
		{"decimal(38,0) to bigint", dec380, pqgen.Options{}, `["-9223372036854775808", null]`, sd.LongType, []string{"-9223372036854775808", "NULL"}},
		{"date", arrow.FixedWidthTypes.Date32, pqgen.Options{}, `["2024-05-01", null, "1969-12-31"]`, sd.DateType, []string{"2024-05-01", "NULL", "1969-12-31"}},
		{"date to timestamp_ntz", arrow.FixedWidthTypes.Date32, pqgen.Options{}, `["2024-05-01", null]`, sd.TimestampNTZType, []string{"2024-05-01T00:00:00", "NULL"}},
		{"timestamp", tsUTC, pqgen.Options{}, `["2024-05-01T12:00:00.000001Z", null]`, sd.TimestampType, []string{"2024-05-01T12:00:00.000001Z", "NULL"}},
		{"timestamp millis", tsMilli, pqgen.Options{}, `["2024-05-01T12:00:00.123Z", null]`, sd.TimestampType, []string{"2024-05-01T12:00:00.123Z", "NULL"}},
		{"timestamp int96", tsUTC, pqgen.Options{Int96: true}, `["2024-05-01T12:00:00.000007Z", null, "1900-01-01T00:00:00Z"]`, sd.TimestampType, []string{"2024-05-01T12:00:00.000007Z", "NULL", "1900-01-01T00:00:00Z"}},
		{"timestamp_ntz", tsNTZ, pqgen.Options{}, `["2024-05-01T12:00:00.5", null]`, sd.TimestampNTZType, []string{"2024-05-01T12:00:00.5", "NULL"}},
		{"boolean", arrow.FixedWidthTypes.Boolean, pqgen.Options{}, `[true, null, false]`, sd.BooleanType, []string{"true", "NULL", "false"}},
		{"void", arrow.Null, pqgen.Options{}, `[null, null]`, sd.LongType, []string{"NULL", "NULL"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows := jsonRows(t, c.json)
			data := parquetFile(t, schemaOf(field("k", c.file), field("pad", arrow.BinaryTypes.String)), rows, c.opts)
			b := mem.New()
			src := put(b, "f.parquet", "g1", data)
			spec := keyfile.Spec{Columns: []keyfile.Column{col("k", c.table)}}
			res, got, err := readAll(t, b, []keyfile.Source{src}, spec, keyfile.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if k := keysOf(got["f.parquet"]); !slices.Equal(k, c.want) {
				t.Errorf("keys %q, want %q", k, c.want)
			}
			if res.Rows != int64(len(c.want)) || res.Files[0].Rows != int64(len(c.want)) || res.Files[0].Delivered != int64(len(c.want)) {
				t.Errorf("rows %d, file rows %d, delivered %d, want %d", res.Rows, res.Files[0].Rows, res.Files[0].Delivered, len(c.want))
			}
		})
	}
}

// jsonRows turns a JSON array of values into rows {"k": v, "pad": "x"}.
func jsonRows(t *testing.T, values string) string {
	t.Helper()
	vals := strings.Split(strings.Trim(strings.TrimSpace(values), "[]"), ",")
	var rows []string
	for _, v := range vals {
		rows = append(rows, fmt.Sprintf(`{"k": %s, "pad": "x"}`, strings.TrimSpace(v)))
	}
	return "[" + strings.Join(rows, ",") + "]"
}

// A composite key with NULLs in either column, over several row groups and files: every row
// in file order, a NULL key kept as NULL.
func TestReadCompositeKeysWithNulls(t *testing.T) {
	sc := schemaOf(field("payload", arrow.BinaryTypes.String), field("id", arrow.PrimitiveTypes.Int64), field("region", arrow.BinaryTypes.String))
	b := mem.New()
	var srcs []keyfile.Source
	var want []string
	for f := 0; f < 3; f++ {
		var rows []string
		for i := 0; i < 25; i++ {
			id, region := fmt.Sprint(f*100+i), fmt.Sprintf("%q", fmt.Sprint("r", i%3))
			if i%7 == 3 {
				id = "null"
			}
			if i%5 == 4 {
				region = "null"
			}
			rows = append(rows, fmt.Sprintf(`{"payload": "p%d", "id": %s, "region": %s}`, i, id, region))
			if f == 1 {
				want = append(want, strings.Trim(strings.ReplaceAll(id, "null", "NULL"), `"`)+"|"+strings.Trim(strings.ReplaceAll(region, "null", "NULL"), `"`))
			}
		}
		data := parquetFile(t, sc, "["+strings.Join(rows, ",")+"]", pqgen.Options{RowGroupRows: 10, Compression: compress.Codecs.Snappy})
		srcs = append(srcs, put(b, fmt.Sprintf("d/part-%d.parquet", f), "g1", data))
	}
	spec := keyfile.Spec{Columns: []keyfile.Column{col("id", sd.LongType), col("region", sd.StringType)}}
	res, got, err := readAll(t, b, srcs, spec, keyfile.Options{BatchRows: 4, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if k := keysOf(got["d/part-1.parquet"]); !slices.Equal(k, want) {
		t.Errorf("keys of part-1:\n%q\nwant\n%q", k, want)
	}
	for i, f := range res.Files {
		if f.Key != srcs[i].Key || f.Group != "g1" || f.Rows != 25 || f.RowGroups != 3 || f.Err != nil {
			t.Errorf("file %d: %+v", i, f)
		}
	}
	if res.Rows != 75 || res.Delivered != 75 {
		t.Errorf("rows %d, delivered %d", res.Rows, res.Delivered)
	}
}

// Each schema group finds the key where its files hold it: under another name (a renamed
// column), under a column-mapping physical name, inside a struct, or by a name that differs
// only in case.
func TestReadGroupPaths(t *testing.T) {
	b := mem.New()
	renamed := parquetFile(t, schemaOf(field("user_id", arrow.PrimitiveTypes.Int32), field("x", arrow.BinaryTypes.String)),
		`[{"user_id": 1, "x": "a"}, {"user_id": null, "x": "b"}]`, pqgen.Options{})
	physical := parquetFile(t, schemaOf(field("col-5f3a9c1e-8b2d-4f6a-9e7c-0d1b2a3c4e5f", arrow.PrimitiveTypes.Int64), field("col-0000", arrow.BinaryTypes.String)),
		`[{"col-5f3a9c1e-8b2d-4f6a-9e7c-0d1b2a3c4e5f": 2, "col-0000": "a"}]`, pqgen.Options{})
	meta := arrow.StructOf(field("source", arrow.BinaryTypes.String), field("id", arrow.PrimitiveTypes.Int64))
	nested := parquetFile(t, schemaOf(field("meta", meta), field("x", arrow.BinaryTypes.String)),
		`[{"meta": {"source": "s", "id": 3}, "x": "a"}, {"meta": null, "x": "b"}, {"meta": {"source": "s", "id": null}, "x": "c"}]`, pqgen.Options{})
	cased := parquetFile(t, schemaOf(field("ID", arrow.PrimitiveTypes.Int64)), `[{"ID": 4}]`, pqgen.Options{})
	srcs := []keyfile.Source{
		put(b, "renamed.parquet", "gr", renamed),
		put(b, "physical.parquet", "gp", physical),
		put(b, "nested.parquet", "gn", nested),
		put(b, "cased.parquet", "gc", cased),
	}
	spec := keyfile.Spec{
		Columns: []keyfile.Column{col("id", sd.LongType)},
		Groups: map[string][]keyfile.Path{
			"gr": {{"user_id"}},
			"gp": {{"col-5f3a9c1e-8b2d-4f6a-9e7c-0d1b2a3c4e5f"}},
			"gn": {{"Meta", "id"}},
		},
	}
	_, got, err := readAll(t, b, srcs, spec, keyfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"renamed.parquet":  {"1", "NULL"},
		"physical.parquet": {"2"},
		"nested.parquet":   {"3", "NULL", "NULL"},
		"cased.parquet":    {"4"},
	}
	for k, w := range want {
		if g := keysOf(got[k]); !slices.Equal(g, w) {
			t.Errorf("%s: keys %q, want %q", k, g, w)
		}
	}
}

// A key column that is missing, ambiguous, not a column a key is made of, or does not cast
// fails its file with an error naming it; the other files are read.
func TestReadColumnAndCastErrors(t *testing.T) {
	b := mem.New()
	goodInt := put(b, "good.parquet", "g1", parquetFile(t, schemaOf(field("id", arrow.PrimitiveTypes.Int64)), `[{"id": 1}]`, pqgen.Options{}))
	goodNTZ := put(b, "good-ntz.parquet", "g1", parquetFile(t, schemaOf(field("id", tsNTZ)), `[{"id": "2024-05-01T00:00:00"}]`, pqgen.Options{}))
	cases := []struct {
		name  string
		sc    *arrow.Schema
		rows  string
		table sd.Type
		want  error
		text  string
	}{
		{"missing", schemaOf(field("other", arrow.PrimitiveTypes.Int64)), `[{"other": 1}]`, sd.LongType, keyfile.ErrColumn, "no column `id`"},
		{"ambiguous", schemaOf(field("Id", arrow.PrimitiveTypes.Int64), field("iD", arrow.PrimitiveTypes.Int64)), `[{"Id": 1, "iD": 2}]`, sd.LongType, keyfile.ErrColumn, "ambiguous"},
		{"list", schemaOf(field("id", arrow.ListOf(arrow.PrimitiveTypes.Int64))), `[{"id": [1]}]`, sd.LongType, keyfile.ErrColumn, "array<bigint>"},
		{"double", schemaOf(field("id", arrow.PrimitiveTypes.Float64)), `[{"id": 1.5}]`, sd.DoubleType, nil, "not supported for a key"},
		{"string to bigint", schemaOf(field("id", arrow.BinaryTypes.String)), `[{"id": "1"}]`, sd.LongType, keyfile.ErrCast, "string in the file"},
		{"timestamp to ntz", schemaOf(field("id", tsUTC)), `[{"id": "2024-05-01T00:00:00Z"}]`, sd.TimestampNTZType, keyfile.ErrCast, "timestamp in the file"},
		{"decimal scale down", schemaOf(field("id", dec102)), `[{"id": "1.25"}]`, sd.DecimalType(10, 1), keyfile.ErrCast, "decimal(10,2) in the file"},
		{"bigint overflows int", schemaOf(field("id", arrow.PrimitiveTypes.Int64)), `[{"id": 1}, {"id": 2147483648}]`, sd.IntegerType, keyfile.ErrCast, "2147483648 does not fit int"},
		{"decimal overflows", schemaOf(field("id", dec102)), `[{"id": "99999999.99"}]`, sd.DecimalType(10, 4), keyfile.ErrCast, "99999999.99 does not fit decimal(10,4)"},
		{"uint64 overflows bigint", schemaOf(field("id", arrow.PrimitiveTypes.Uint64)), `[{"id": 9223372036854775808}]`, sd.LongType, keyfile.ErrCast, "9223372036854775808 does not fit bigint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := put(b, c.name+".parquet", "g1", parquetFile(t, c.sc, c.rows, pqgen.Options{}))
			good := goodInt
			if c.table.Kind == sd.TimestampNTZ {
				good = goodNTZ
			}
			spec := keyfile.Spec{Columns: []keyfile.Column{col("id", c.table)}}
			res, got, err := readAll(t, b, []keyfile.Source{good, bad}, spec, keyfile.Options{})
			if c.want == nil {
				// A table type that is no key type is refused before anything is read.
				if err == nil || !strings.Contains(err.Error(), c.text) || res != nil {
					t.Fatalf("err %v, want %q before reading", err, c.text)
				}
				return
			}
			var fe *keyfile.FileErrors
			if !errors.As(err, &fe) || len(fe.Failed) != 1 || fe.Files != 2 {
				t.Fatalf("err %v, want one failed file of 2", err)
			}
			ferr := res.Files[1].Err
			if !errors.Is(err, c.want) || !errors.Is(ferr, c.want) || !strings.Contains(ferr.Error(), c.text) || !strings.HasPrefix(ferr.Error(), bad.Key+": ") {
				t.Errorf("file error %q, want %v naming the file and %q", ferr, c.want, c.text)
			}
			if res.Files[0].Err != nil || len(got[good.Key]) != 1 {
				t.Errorf("good file: %v, %d rows", res.Files[0].Err, len(got[good.Key]))
			}
			if len(got[bad.Key]) != 0 || res.Files[1].Delivered != 0 {
				t.Errorf("the failed file delivered %d rows", len(got[bad.Key]))
			}
		})
	}
}

// A spec that does not hold is refused before anything is read.
func TestReadSpecErrors(t *testing.T) {
	b, counter := storage.WithCounting(mem.New())
	for _, spec := range []keyfile.Spec{
		{},
		{Columns: []keyfile.Column{col("", sd.LongType)}},
		{Columns: []keyfile.Column{col("a", sd.LongType), col("A", sd.LongType)}},
		{Columns: []keyfile.Column{col("a", sd.ArrayType(sd.LongType, true))}},
		{Columns: []keyfile.Column{col("a", sd.DecimalType(40, 0))}},
		{Columns: []keyfile.Column{col("a", sd.LongType)}, Groups: map[string][]keyfile.Path{"g": {}}},
		{Columns: []keyfile.Column{col("a", sd.LongType)}, Groups: map[string][]keyfile.Path{"g": {{}}}},
	} {
		if _, err := keyfile.Read(context.Background(), b, []keyfile.Source{{Key: "x", Size: 100}}, spec, keyfile.Options{}, func(keyfile.Batch) error { return nil }); err == nil {
			t.Errorf("spec %+v accepted", spec)
		}
	}
	spec := keyfile.Spec{Columns: []keyfile.Column{col("a", sd.LongType)}}
	if _, err := keyfile.Read(context.Background(), b, []keyfile.Source{{Key: "x", Size: 100}, {Key: "x", Size: 100}}, spec, keyfile.Options{}, func(keyfile.Batch) error { return nil }); err == nil {
		t.Error("a source listed twice was accepted")
	}
	if c := counter.Counts().Total(); c != 0 {
		t.Errorf("%d requests for refused specs", c)
	}
}

// Corrupt and truncated files fail with an error naming them, never a panic; the other files
// are read whole.
func TestReadCorruptFiles(t *testing.T) {
	sc := schemaOf(field("id", arrow.PrimitiveTypes.Int64), field("s", arrow.BinaryTypes.String))
	good, err := pqgen.GeneratedBytes(sc, 500, 1, pqgen.Options{RowGroupRows: 100, Compression: compress.Codecs.Zstd})
	if err != nil {
		t.Fatal(err)
	}
	b := mem.New()
	srcs := []keyfile.Source{put(b, "good.parquet", "g", good)}
	// The first data page header of the id column, overwritten: the page cannot be decoded.
	md := footerOf(t, good)
	cc, err := md.RowGroup(2).ColumnChunk(0)
	if err != nil {
		t.Fatal(err)
	}
	header := append([]byte(nil), good...)
	for i := cc.DataPageOffset(); i < cc.DataPageOffset()+8; i++ {
		header[i] = 0xff
	}
	fixed := map[string][]byte{
		"page-header.parquet": header,
		"truncated.parquet":   pqgen.Truncate(good, 100),
		"footer-len.parquet":  pqgen.SetFooterLength(good, 1<<30),
		"empty.parquet":       {},
		"not-parquet.parquet": []byte("hello, world, not parquet at all"),
	}
	for k, data := range fixed {
		srcs = append(srcs, put(b, k, "g", data))
	}
	rng := rand.New(rand.NewSource(7))
	for i := 0; i < 60; i++ {
		region := []pqgen.Region{pqgen.Data, pqgen.Footer, pqgen.Anywhere}[i%3]
		srcs = append(srcs, put(b, fmt.Sprintf("random-%02d.parquet", i), "g", pqgen.Corrupt(good, rng, 1+rng.Intn(8), region)))
	}
	spec := keyfile.Spec{Columns: []keyfile.Column{col("id", sd.LongType)}}
	res, got, err := readAll(t, b, srcs, spec, keyfile.Options{Concurrency: 4})
	var fe *keyfile.FileErrors
	if !errors.As(err, &fe) {
		t.Fatalf("err %v, want FileErrors", err)
	}
	for i, f := range res.Files {
		_, isFixed := fixed[f.Key]
		switch {
		case f.Key == "good.parquet" && (f.Err != nil || f.Rows != 500):
			t.Errorf("good file: %v, %d rows", f.Err, f.Rows)
		case isFixed && f.Err == nil:
			t.Errorf("%s was read: %d rows", f.Key, f.Rows)
		case f.Err != nil && !strings.HasPrefix(f.Err.Error(), srcs[i].Key+": "):
			t.Errorf("error %q does not name %s", f.Err, srcs[i].Key)
		case f.Err != nil && int64(len(got[f.Key])) != f.Delivered:
			t.Errorf("%s: %d rows received, %d delivered", f.Key, len(got[f.Key]), f.Delivered)
		case f.Err != nil && f.Delivered != 0:
			t.Errorf("%s failed after delivering %d rows", f.Key, f.Delivered)
		case f.Err == nil && (f.Rows != 500 || len(got[f.Key]) != 500):
			// A corruption the reader cannot see (inside a value) still gives every row.
			t.Errorf("%s: read without error but %d rows, %d received", f.Key, f.Rows, len(got[f.Key]))
		}
	}
	t.Logf("%d of %d corrupt files failed", len(fe.Failed), len(srcs)-1)
}

// arrow-go panics on some corrupt pages of uncompressed files: the panic is contained and
// reported as the file's error.
func TestReadContainsPanics(t *testing.T) {
	sc := schemaOf(field("id", arrow.PrimitiveTypes.Int64), field("s", arrow.BinaryTypes.String))
	good, err := pqgen.GeneratedBytes(sc, 500, 1, pqgen.Options{RowGroupRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	b := mem.New()
	var srcs []keyfile.Source
	for seed := int64(0); seed < 400; seed++ {
		rng := rand.New(rand.NewSource(seed))
		srcs = append(srcs, put(b, fmt.Sprintf("r-%03d.parquet", seed), "g", pqgen.Corrupt(good, rng, 1+rng.Intn(4), pqgen.Data)))
	}
	res, _, err := readAll(t, b, srcs, keyfile.Spec{Columns: []keyfile.Column{col("id", sd.LongType)}}, keyfile.Options{})
	if err == nil {
		t.Fatal("no file failed")
	}
	panics := 0
	for _, f := range res.Files {
		if errors.Is(f.Err, inspect.ErrPanic) {
			panics++
			if !strings.HasPrefix(f.Err.Error(), f.Key+": row group ") {
				t.Errorf("error %q does not name the file and row group", f.Err)
			}
		}
	}
	if panics == 0 {
		t.Error("no corruption made the Parquet library panic: the test no longer shows containment")
	}
}

// A footer whose row counts lie, whether the file's own or one the caller passes, fails the
// file: every row the footer claims must be read, and no more.
func TestReadFooterRowCountLies(t *testing.T) {
	sc := schemaOf(field("id", arrow.PrimitiveTypes.Int64), field("s", arrow.BinaryTypes.String))
	data, err := pqgen.GeneratedBytes(sc, 30, 3, pqgen.Options{RowGroupRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	more := footerOf(t, data)
	more.NumRows++
	more.RowGroups[2].NumRows++
	fewer := footerOf(t, data)
	fewer.NumRows--
	fewer.RowGroups[1].NumRows--
	sumLies := footerOf(t, data)
	sumLies.NumRows = 31

	b := mem.New()
	srcs := []keyfile.Source{
		put(b, "good.parquet", "g", data),
		put(b, "claims-more.parquet", "g", withFooter(t, data, more)),
		put(b, "claims-fewer.parquet", "g", withFooter(t, data, fewer)),
		put(b, "sum-lies.parquet", "g", withFooter(t, data, sumLies)),
	}
	given := put(b, "given-footer.parquet", "g", data)
	given.Footer = footerOf(t, data)
	given.Footer.NumRows++
	given.Footer.RowGroups[0].NumRows++
	srcs = append(srcs, given)
	spec := keyfile.Spec{Columns: []keyfile.Column{col("id", sd.LongType)}}
	res, got, err := readAll(t, b, srcs, spec, keyfile.Options{})
	var fe *keyfile.FileErrors
	if !errors.As(err, &fe) || len(fe.Failed) != 4 {
		t.Fatalf("err %v, want 4 failed files", err)
	}
	want := map[string]string{
		"claims-more.parquet":  "row group 2: key column id ends after 10 of the 11 rows",
		"claims-fewer.parquet": "row group 1: key column id holds more values than the 9 rows",
		"sum-lies.parquet":     "num_rows is 31 but the row groups hold 30",
		"given-footer.parquet": "row group 0: key column id ends after 10 of the 11 rows",
	}
	for _, f := range res.Files {
		w, bad := want[f.Key]
		switch {
		case !bad && (f.Err != nil || f.Rows != 30):
			t.Errorf("%s: %v, %d rows", f.Key, f.Err, f.Rows)
		case bad && (f.Err == nil || !strings.Contains(f.Err.Error(), w)):
			t.Errorf("%s: error %v, want %q", f.Key, f.Err, w)
		case bad && (f.Delivered != 0 || len(got[f.Key]) != 0):
			t.Errorf("%s: %d rows delivered", f.Key, len(got[f.Key]))
		}
	}
	if !strings.Contains(err.Error(), "4 of 5 files") {
		t.Errorf("error %q", err)
	}
}

// A file whose keys pass the file buffer hands its rows on as they are decoded; when it then
// fails, the rows it delivered are counted.
func TestReadFileBuffer(t *testing.T) {
	sc := schemaOf(field("id", arrow.PrimitiveTypes.Int64))
	data, err := pqgen.GeneratedBytes(sc, 300, 3, pqgen.Options{RowGroupRows: 100})
	if err != nil {
		t.Fatal(err)
	}
	lie := footerOf(t, data)
	lie.NumRows++
	lie.RowGroups[2].NumRows++
	b := mem.New()
	srcs := []keyfile.Source{put(b, "lies.parquet", "g", withFooter(t, data, lie))}
	spec := keyfile.Spec{Columns: []keyfile.Column{col("id", sd.LongType)}}
	for _, c := range []struct {
		buffer int64
		want   int64
	}{{0, 0}, {-1, 300}, {1000, 300}} {
		res, got, err := readAll(t, b, srcs, spec, keyfile.Options{FileBuffer: c.buffer, BatchRows: 50})
		if err == nil {
			t.Fatal("no error")
		}
		if f := res.Files[0]; f.Delivered != c.want || int64(len(got["lies.parquet"])) != c.want || f.Rows != 300 {
			t.Errorf("file buffer %d: delivered %d, received %d, rows %d; want %d delivered", c.buffer, f.Delivered, len(got["lies.parquet"]), f.Rows, c.want)
		}
	}
}

// The sink's error and the context's end stop the whole Read.
func TestReadStops(t *testing.T) {
	sc := schemaOf(field("id", arrow.PrimitiveTypes.Int64))
	data, err := pqgen.GeneratedBytes(sc, 10, 1, pqgen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := mem.New()
	var srcs []keyfile.Source
	for i := 0; i < 50; i++ {
		srcs = append(srcs, put(b, fmt.Sprintf("f%02d.parquet", i), "g", data))
	}
	spec := keyfile.Spec{Columns: []keyfile.Column{col("id", sd.LongType)}}
	boom := errors.New("boom")
	calls := 0
	_, err = keyfile.Read(context.Background(), b, srcs, spec, keyfile.Options{Concurrency: 4}, func(keyfile.Batch) error {
		calls++
		if calls == 3 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || calls != 3 {
		t.Errorf("err %v after %d calls, want boom after 3", err, calls)
	}
	_, err = keyfile.Read(context.Background(), b, srcs, spec, keyfile.Options{Concurrency: 4}, func(keyfile.Batch) error { panic("sink bug") })
	if err == nil || !strings.Contains(err.Error(), "sink panicked: sink bug") {
		t.Errorf("err %v, want the sink's panic", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	_, err = keyfile.Read(ctx, b, srcs, spec, keyfile.Options{Concurrency: 2}, func(keyfile.Batch) error {
		calls++
		if calls == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) || calls != 2 {
		t.Errorf("err %v after %d calls, want context.Canceled after 2", err, calls)
	}
}

// Progress counts files, rows and requests, never concurrently, and ends at the totals.
func TestReadProgress(t *testing.T) {
	sc := schemaOf(field("id", arrow.PrimitiveTypes.Int64))
	data, err := pqgen.GeneratedBytes(sc, 30, 1, pqgen.Options{RowGroupRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	b := mem.New()
	var srcs []keyfile.Source
	for i := 0; i < 20; i++ {
		srcs = append(srcs, put(b, fmt.Sprintf("f%02d.parquet", i), "g", data))
	}
	srcs = append(srcs, put(b, "bad.parquet", "g", []byte("not parquet, not at all")))
	var last keyfile.Progress
	var calls int
	res, err := keyfile.Read(context.Background(), b, srcs, keyfile.Spec{Columns: []keyfile.Column{col("id", sd.LongType)}},
		keyfile.Options{Concurrency: 8, Progress: func(p keyfile.Progress) {
			calls++
			if p.Done < last.Done || p.Rows < last.Rows || p.Requests < last.Requests || p.Files != 21 {
				t.Errorf("progress went from %+v to %+v", last, p)
			}
			last = p
		}}, func(keyfile.Batch) error { return nil })
	if err == nil {
		t.Fatal("no error for bad.parquet")
	}
	want := keyfile.Progress{Files: 21, Done: 21, Failed: 1, Rows: 600, Requests: res.Requests, BytesRead: res.BytesRead}
	if last != want || calls < 21+60 {
		t.Errorf("last progress %+v after %d calls, want %+v", last, calls, want)
	}
}
