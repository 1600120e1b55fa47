package keyfile_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/keyfile"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
	"github.com/zbrecover/zbrecover/storage/s3"
	"github.com/zbrecover/zbrecover/storage/s3/s3test"
	"github.com/zbrecover/zbrecover/storage/storagetest"
)

// wideFile is a fallback file whose key columns are a small part of it: id and region next
// to each other, a 200-byte payload, and tail_key after it; rows in row groups of rgRows.
func wideFile(t testing.TB, rows, rgRows int, seed int64) []byte {
	t.Helper()
	sc := schemaOf(field("id", arrow.PrimitiveTypes.Int64), field("region", arrow.BinaryTypes.String),
		field("payload", arrow.BinaryTypes.String), field("tail_key", arrow.PrimitiveTypes.Int64))
	rng := rand.New(rand.NewSource(seed))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	payload := make([]byte, 100)
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.Int64Builder).Append(rng.Int63())
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("region-", rng.Intn(5)))
		rng.Read(payload)
		b.Field(2).(*array.StringBuilder).Append(hex.EncodeToString(payload))
		b.Field(3).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	if err := pqgen.Write(&buf, sc, []arrow.RecordBatch{rec}, pqgen.Options{RowGroupRows: int64(rgRows), Compression: compress.Codecs.Snappy}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// store is a backend and a way to put objects on it directly.
type store struct {
	name string
	b    storage.Backend
	put  func(key string, data []byte)
	// gets returns the GET requests the store served, and heads its HEADs (-1: not known).
	gets, heads func() int64
}

func stores(t *testing.T) []store {
	m := mem.New()
	srv := s3test.NewServer(t)
	be := storagetest.OpenURL(t, s3.New, srv.URLFor("root"), srv.Config())
	return []store{
		{name: "mem", b: m, put: func(k string, d []byte) { m.Set(k, d, t0) },
			gets: func() int64 { return -1 }, heads: func() int64 { return -1 }},
		{name: "s3", b: be, put: func(k string, d []byte) {
			if err := srv.Put("root/"+k, d); err != nil {
				t.Fatal(err)
			}
		}, gets: func() int64 { return srv.Counts().Gets }, heads: func() int64 { return srv.Counts().Heads }},
	}
}

// Each file costs one footer read and one read per row group of its key chunks (adjacent
// chunks in one read), and the bytes read are within 1.2× the footer and the key chunks:
// on the in-memory store and on the S3 emulator, counted by the storage decorator, by the
// bytes the reads returned, and by the emulator's own count of GETs.
func TestRequestsPerFile(t *testing.T) {
	const rowGroups = 4
	data := wideFile(t, 8000, 2000, 1)
	small := parquetFile(t, schemaOf(field("id", arrow.PrimitiveTypes.Int64), field("p", arrow.BinaryTypes.String)),
		`[{"id": 1, "p": "a"}, {"id": 2, "p": "b"}]`, pqgen.Options{})
	footerLen := int64(len(data) - 8 - pqgen.FooterStart(data))
	cases := []struct {
		name       string
		keys       []string
		data       []byte
		footer     string // "known": FooterLength given; "tail": unknown; "given": Source.Footer; "small tail"
		reads      int64  // reads of the file
		footerOnly bool   // bytes: the whole file is read
	}{
		{"one key, footer length known", []string{"id"}, data, "known", 1 + rowGroups, false},
		{"adjacent keys in one read", []string{"id", "region"}, data, "known", 1 + rowGroups, false},
		{"keys apart, two reads", []string{"id", "tail_key"}, data, "known", 1 + 2*rowGroups, false},
		{"footer length unknown", []string{"id"}, data, "tail", 1 + rowGroups, false},
		{"footer given", []string{"id"}, data, "given", rowGroups, false},
		{"footer longer than the tail read", []string{"id"}, data, "small tail", 2 + rowGroups, false},
		{"small file in the tail read", []string{"id"}, small, "tail", 1, true},
	}
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					key := fmt.Sprintf("f/%d.parquet", i)
					st.put(key, c.data)
					counted, counter := storage.WithCounting(st.b)
					bc := countBytes(counted)
					src := keyfile.Source{Key: key, Size: int64(len(c.data)), Group: "g"}
					opts := keyfile.Options{}
					switch c.footer {
					case "known":
						src.FooterLength = footerLen
					case "given":
						src.Footer = footerOf(t, c.data)
					case "small tail":
						opts.TailSize = 1024
					}
					var cols []keyfile.Column
					for _, k := range c.keys {
						cols = append(cols, col(k, sd.LongType))
						if k == "region" {
							cols[len(cols)-1].Type = sd.StringType
						}
					}
					getsBefore := st.gets()
					res, got, err := readAll(t, bc, []keyfile.Source{src}, keyfile.Spec{Columns: cols}, opts)
					if err != nil {
						t.Fatal(err)
					}
					f := res.Files[0]
					if int64(len(got[key])) != f.Rows || f.Rows == 0 {
						t.Fatalf("%d rows received, %d read", len(got[key]), f.Rows)
					}
					reads := counter.ReadsOf(key)
					if reads != c.reads || int64(f.Requests) != c.reads || counter.Counts().Total() != c.reads {
						t.Errorf("%d reads (result %d, all requests %v), want %d", reads, f.Requests, counter.Counts(), c.reads)
					}
					if g := st.gets(); g >= 0 && g-getsBefore != c.reads {
						t.Errorf("the emulator served %d GETs, want %d", g-getsBefore, c.reads)
					}
					if h := st.heads(); h > 0 {
						t.Errorf("%d HEADs", h)
					}
					keyBytes, footerBytes := keyChunkBytes(t, c.data, c.keys...)
					read := bc.of(key)
					if read != f.BytesRead || f.KeyBytes != keyBytes || f.FooterBytes != footerBytes {
						t.Errorf("bytes read %d (result %d), key chunks %d (result %d), footer %d (result %d)",
							read, f.BytesRead, keyBytes, f.KeyBytes, footerBytes, f.FooterBytes)
					}
					limit := (footerBytes + keyBytes) * 12 / 10
					switch {
					case c.footerOnly:
						limit = int64(len(c.data))
					case c.footer == "tail":
						limit = 64<<10 + keyBytes*12/10
					case c.footer == "small tail":
						limit = 1024 + (footerBytes+keyBytes)*12/10
					}
					if read > limit {
						t.Errorf("%d bytes read, over %d (footer %d, key chunks %d, file %d)", read, limit, footerBytes, keyBytes, len(c.data))
					}
					t.Logf("%d reads, %d bytes: footer %d + key chunks %d (file %d)", reads, read, footerBytes, keyBytes, len(c.data))
				})
			}
		})
	}
}
