package keyfile_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/keyfile"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

// fixture is fallback files of two schema groups (the key renamed in the second) with a
// composite key of four types, NULLs included, over several row groups.
type fixture struct {
	b    *mem.Backend
	srcs []keyfile.Source
	spec keyfile.Spec
}

func newFixture(t *testing.T, files int) fixture {
	t.Helper()
	f := fixture{b: mem.New()}
	f.spec = keyfile.Spec{
		Columns: []keyfile.Column{
			col("id", sd.LongType), col("region", sd.StringType), col("amount", sd.DecimalType(12, 2)), col("at", sd.TimestampType),
		},
		Groups: map[string][]keyfile.Path{"g2": {{"record_id"}, {"region"}, {"amount"}, {"at"}}},
	}
	for i := 0; i < files; i++ {
		group, idName, idType := "g1", "id", arrow.DataType(arrow.PrimitiveTypes.Int64)
		if i%2 == 1 {
			group, idName, idType = "g2", "record_id", arrow.PrimitiveTypes.Int32
		}
		sc := schemaOf(field("payload", arrow.BinaryTypes.String), field(idName, idType), field("region", arrow.BinaryTypes.String),
			field("amount", dec102), field("at", tsUTC))
		var rows []string
		for r := 0; r < 23+i; r++ {
			id := fmt.Sprint(i*1000 + r)
			if r%6 == 5 {
				id = "null"
			}
			region := fmt.Sprintf(`"r%d"`, r%3)
			if r%4 == 3 {
				region = "null"
			}
			rows = append(rows, fmt.Sprintf(`{"payload": "p%d", %q: %s, "region": %s, "amount": "%d.25", "at": "2024-05-01T00:00:%02dZ"}`,
				r, idName, id, region, r, r%60))
		}
		data := parquetFile(t, sc, "["+strings.Join(rows, ",")+"]", pqgen.Options{RowGroupRows: 8, Compression: compress.Codecs.Snappy})
		f.srcs = append(f.srcs, put(f.b, fmt.Sprintf("day=%d/part-%03d.parquet", i%3, i), group, data))
	}
	return f
}

// The keys file holds, for every file read, every row with its group, file, ordinal and
// keys in the table's types; its reader gives them back, and counts them per file.
func TestWriteRoundTrip(t *testing.T) {
	f := newFixture(t, 7)
	_, want, err := readAll(t, f.b, f.srcs, f.spec, keyfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ordinals := range []bool{true, false} {
		t.Run(fmt.Sprint("ordinals=", ordinals), func(t *testing.T) {
			var buf bytes.Buffer
			res, err := keyfile.Write(context.Background(), &buf, f.b, f.srcs, f.spec, keyfile.Options{RowOrdinals: ordinals, RowGroupRows: 50, BatchRows: 5})
			if err != nil {
				t.Fatal(err)
			}
			kr, err := keyfile.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
			if err != nil {
				t.Fatal(err)
			}
			m := kr.Meta()
			if m.Version != keyfile.FormatVersion || m.Rows != res.Rows || m.RowOrdinals != ordinals || m.Order != keyfile.OrderByFile || kr.Rows() != res.Rows {
				t.Errorf("meta %+v, rows %d; read %d rows", m, kr.Rows(), res.Rows)
			}
			wantCols := []keyfile.MetaColumn{{"k0", "id", "bigint"}, {"k1", "region", "string"}, {"k2", "amount", "decimal(12,2)"}, {"k3", "at", "timestamp"}}
			if !slices.Equal(m.Columns, wantCols) {
				t.Errorf("meta columns %+v", m.Columns)
			}
			got := map[string][]keyRow{}
			groups := map[string]string{}
			err = kr.Scan(context.Background(), func(r keyfile.Row) error {
				if !ordinals && r.Ordinal != -1 {
					t.Errorf("ordinal %d without ordinals", r.Ordinal)
				}
				if !ordinals {
					r.Ordinal = int64(len(got[r.File])) // rows of a file are in row order
				}
				got[r.File] = append(got[r.File], keyRow{File: r.File, Row: r.Ordinal, Keys: r.Keys})
				groups[r.File] = r.Group
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range f.srcs {
				g := got[s.Key]
				sort.Slice(g, func(i, j int) bool { return g[i].Row < g[j].Row })
				if fmt.Sprint(g) != fmt.Sprint(want[s.Key]) || groups[s.Key] != s.Group {
					t.Errorf("%s (group %s): keys file rows\n%v\nwant\n%v", s.Key, groups[s.Key], g, want[s.Key])
				}
			}
			counts, err := kr.Counts(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var wantCounts []keyfile.FileCount
			for _, s := range f.srcs {
				nulls := int64(0)
				for _, r := range want[s.Key] {
					if slices.Contains(r.Keys, nil) {
						nulls++
					}
				}
				if nulls == 0 {
					t.Fatalf("%s: the fixture has no row with a NULL key column", s.Key)
				}
				wantCounts = append(wantCounts, keyfile.FileCount{Group: s.Group, File: s.Key, Rows: int64(len(want[s.Key])), NullRows: nulls})
			}
			sort.Slice(wantCounts, func(i, j int) bool {
				return wantCounts[i].Group < wantCounts[j].Group || wantCounts[i].Group == wantCounts[j].Group && wantCounts[i].File < wantCounts[j].File
			})
			if !slices.Equal(counts, wantCounts) {
				t.Errorf("counts %v, want %v", counts, wantCounts)
			}
		})
	}
}

// The keys file's Parquet columns carry the table's Spark types, compressed, the group and
// file columns dictionary-encoded, so that the warehouse reads it with the same types as the table.
func TestWriteLayout(t *testing.T) {
	f := newFixture(t, 3)
	for _, c := range []struct {
		codec compress.Compression
		want  compress.Compression
	}{{compress.Codecs.Uncompressed, compress.Codecs.Zstd}, {compress.Codecs.Snappy, compress.Codecs.Snappy}} {
		var buf bytes.Buffer
		res, err := keyfile.Write(context.Background(), &buf, f.b, f.srcs, f.spec, keyfile.Options{RowOrdinals: true, Compression: c.codec})
		if err != nil {
			t.Fatal(err)
		}
		md := footerOf(t, buf.Bytes())
		s, err := inspect.SparkSchema(md.Schema)
		if err != nil {
			t.Fatal(err)
		}
		want := sd.NewSchema().Col("g", sd.StringType, sd.NotNull).Col("f", sd.StringType, sd.NotNull).Col("r", sd.LongType, sd.NotNull).
			Col("k0", sd.LongType).Col("k1", sd.StringType).Col("k2", sd.DecimalType(12, 2)).Col("k3", sd.TimestampType)
		if !s.Equal(want) {
			t.Errorf("keys file schema %s, want %s", s, want)
		}
		if md.NumRows != res.Rows {
			t.Errorf("%d rows in the keys file, %d read", md.NumRows, res.Rows)
		}
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			for j := 0; j < md.Schema.NumColumns(); j++ {
				cc, err := md.RowGroup(rg).ColumnChunk(j)
				if err != nil {
					t.Fatal(err)
				}
				if cc.Compression() != c.want {
					t.Errorf("column %d compressed with %s, want %s", j, cc.Compression(), c.want)
				}
				dict := slices.Contains(cc.Encodings(), parquet.Encodings.RLEDict)
				if dict != (j <= 1) {
					t.Errorf("column %d encodings %v: want a dictionary for g and f only", j, cc.Encodings())
				}
				if j == 2 && !slices.Contains(cc.Encodings(), parquet.Encodings.DeltaBinaryPacked) {
					t.Errorf("row ordinal encodings %v, want delta", cc.Encodings())
				}
			}
		}
	}
	// The types the fixture lacks, written by hand, read back with the table's types.
	var buf bytes.Buffer
	cols := []keyfile.Column{col("day", sd.DateType), col("ok", sd.BooleanType), col("small", sd.ShortType), col("raw", sd.BinaryType), col("local", sd.TimestampNTZType)}
	kw, err := keyfile.NewWriter(&buf, cols, keyfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(dt arrow.DataType, json string) arrow.Array {
		a, _, err := array.FromJSON(memory.DefaultAllocator, dt, strings.NewReader(json))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	keys := []arrow.Array{
		mk(arrow.FixedWidthTypes.Date32, `["2024-05-01", null]`), mk(arrow.FixedWidthTypes.Boolean, `[true, null]`),
		mk(arrow.PrimitiveTypes.Int16, `[7, null]`), mk(arrow.BinaryTypes.Binary, `["AAE=", null]`), mk(tsNTZ, `["2024-05-01T01:02:03.000004", null]`),
	}
	if err := kw.Add("g", "f.parquet", 0, keys); err != nil {
		t.Fatal(err)
	}
	if err := kw.Close(); err != nil {
		t.Fatal(err)
	}
	kr, err := keyfile.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	if err := kr.Scan(context.Background(), func(r keyfile.Row) error { rows = append(rows, r.Keys); return nil }); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rows); got != "[[2024-05-01 true 7 AAE= 2024-05-01T01:02:03.000004] [<nil> <nil> <nil> <nil> <nil>]]" {
		t.Errorf("rows %s", got)
	}
}

// Files that fail are left out of a keys file that is still complete; the error names them.
func TestWriteWithoutFailedFiles(t *testing.T) {
	f := newFixture(t, 4)
	f.srcs = append(f.srcs, put(f.b, "bad.parquet", "g1", []byte("this is not a parquet file at all")))
	var buf bytes.Buffer
	res, err := keyfile.Write(context.Background(), &buf, f.b, f.srcs, f.spec, keyfile.Options{})
	var fe *keyfile.FileErrors
	if !errors.As(err, &fe) || len(fe.Failed) != 1 || fe.Failed[0].Key != "bad.parquet" {
		t.Fatalf("err %v, want bad.parquet failed", err)
	}
	kr, err := keyfile.Open(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	counts, err := kr.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, c := range counts {
		if c.File == "bad.parquet" {
			t.Errorf("the failed file has %d rows", c.Rows)
		}
		total += c.Rows
	}
	if len(counts) != 4 || total != res.Rows || kr.Rows() != res.Rows {
		t.Errorf("%d files, %d rows in the keys file; %d rows read", len(counts), total, res.Rows)
	}
}

// A Writer refuses rows that do not match its columns, and an unsupported codec.
func TestWriterChecks(t *testing.T) {
	cols := []keyfile.Column{col("id", sd.LongType)}
	if _, err := keyfile.NewWriter(io.Discard, cols, keyfile.Options{Compression: compress.Codecs.Gzip}); err == nil {
		t.Error("gzip accepted")
	}
	if _, err := keyfile.NewWriter(io.Discard, nil, keyfile.Options{}); err == nil {
		t.Error("no columns accepted")
	}
	kw, err := keyfile.NewWriter(io.Discard, cols, keyfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewInt32Builder(memory.DefaultAllocator)
	b.Append(1)
	i32 := b.NewArray()
	l := array.NewInt64Builder(memory.DefaultAllocator)
	l.Append(1)
	i64 := l.NewArray()
	for name, keys := range map[string][]arrow.Array{"wrong type": {i32}, "two arrays": {i64, i64}, "none": nil} {
		if err := kw.Add("g", "f", 0, keys); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if err := kw.Add("g", "f", 0, []arrow.Array{i64}); err != nil {
		t.Fatal(err)
	}
	if err := kw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := kw.Add("g", "f", 1, []arrow.Array{i64}); err == nil {
		t.Error("Add after Close accepted")
	}
}

// Open refuses a Parquet file that is not a keys file.
func TestOpenRefusesOtherFiles(t *testing.T) {
	other := parquetFile(t, schemaOf(field("g", arrow.BinaryTypes.String)), `[{"g": "x"}]`, pqgen.Options{})
	lying := parquetFile(t, schemaOf(field("g", arrow.BinaryTypes.String), field("f", arrow.BinaryTypes.String), field("k0", arrow.PrimitiveTypes.Int32)),
		`[{"g": "x", "f": "y", "k0": 1}]`, pqgen.Options{KeyValue: []pqgen.KV{{Key: keyfile.MetaKey, Value: `{"version":1,"columns":[{"column":"k0","name":"id","type":"bigint"}]}`}}})
	future := parquetFile(t, schemaOf(field("g", arrow.BinaryTypes.String)), `[{"g": "x"}]`, pqgen.Options{KeyValue: []pqgen.KV{{Key: keyfile.MetaKey, Value: `{"version":2}`}}})
	for name, data := range map[string][]byte{"plain": other, "wrong type": lying, "version 2": future, "garbage": []byte("garbage, garbage, garbage")} {
		_, err := keyfile.Open(bytes.NewReader(data), int64(len(data)))
		if err == nil || name != "garbage" && !errors.Is(err, keyfile.ErrNotKeysFile) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// Upload stores the keys file create-only and returns its size and SHA-256; the stored object
// reads back.
func TestUpload(t *testing.T) {
	f := newFixture(t, 3)
	dest := mem.New()
	ctx := context.Background()
	var res *keyfile.Result
	write := func(w io.Writer) error {
		var err error
		res, err = keyfile.Write(ctx, w, f.b, f.srcs, f.spec, keyfile.Options{RowOrdinals: true})
		return err
	}
	up, err := keyfile.Upload(ctx, dest, "keys/run-1.parquet", t.TempDir(), write)
	if err != nil {
		t.Fatal(err)
	}
	data, err := storage.ReadAll(ctx, dest, "keys/run-1.parquet", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if up.Key != "keys/run-1.parquet" || up.Size != int64(len(data)) || up.SHA256 != hex.EncodeToString(sum[:]) || up.Object.ETag == "" {
		t.Errorf("uploaded %+v; stored %d bytes, sha256 %x", up, len(data), sum)
	}
	kr, err := keyfile.OpenObject(ctx, dest, "keys/run-1.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if kr.Rows() != res.Rows {
		t.Errorf("%d rows stored, %d read", kr.Rows(), res.Rows)
	}
	counts, err := kr.Counts(ctx)
	if err != nil || len(counts) != 3 {
		t.Errorf("counts %v, %v", counts, err)
	}
	// Create-only: a second upload to the key fails and leaves the object as it was.
	if _, err := keyfile.Upload(ctx, dest, "keys/run-1.parquet", t.TempDir(), func(w io.Writer) error { _, err := w.Write([]byte("other")); return err }); !errors.Is(err, storage.ErrExist) {
		t.Errorf("second upload: %v, want ErrExist", err)
	}
	if again, _ := storage.ReadAll(ctx, dest, "keys/run-1.parquet", 0, -1); !bytes.Equal(again, data) {
		t.Error("the second upload changed the object")
	}
	// A failed write stores nothing and leaves no temporary file.
	dir := t.TempDir()
	boom := errors.New("boom")
	if _, err := keyfile.Upload(ctx, dest, "keys/run-2.parquet", dir, func(w io.Writer) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("failed write: %v", err)
	}
	if _, err := dest.Stat(ctx, "keys/run-2.parquet"); !errors.Is(err, storage.ErrNotExist) {
		t.Errorf("after a failed write: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
