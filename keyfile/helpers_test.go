package keyfile_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/zbrecover/zbrecover/inspect"
	"github.com/zbrecover/zbrecover/internal/pqgen"
	"github.com/zbrecover/zbrecover/keyfile"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/mem"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func field(name string, t arrow.DataType) arrow.Field {
	return arrow.Field{Name: name, Type: t, Nullable: true}
}

func schemaOf(fields ...arrow.Field) *arrow.Schema { return arrow.NewSchema(fields, nil) }

// parquetFile writes the JSON rows as a real Parquet file.
func parquetFile(t testing.TB, sc *arrow.Schema, rows string, opts pqgen.Options) []byte {
	t.Helper()
	data, err := pqgen.Bytes(sc, rows, opts)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// put stores data under key and returns it as a source of group.
func put(b *mem.Backend, key, group string, data []byte) keyfile.Source {
	b.Set(key, data, t0)
	return keyfile.Source{Key: key, Size: int64(len(data)), Group: group}
}

// keyRow is one row a sink received, its keys rendered as inspect.Value renders them.
type keyRow struct {
	File string
	Row  int64
	Keys []any
}

// readAll reads the sources and returns the rows the sink received, by file in row order.
func readAll(t testing.TB, b storage.Backend, srcs []keyfile.Source, spec keyfile.Spec, opts keyfile.Options) (*keyfile.Result, map[string][]keyRow, error) {
	t.Helper()
	got := map[string][]keyRow{}
	var inSink atomic.Int32
	res, err := keyfile.Read(context.Background(), b, srcs, spec, opts, func(bt keyfile.Batch) error {
		if inSink.Add(1) != 1 {
			t.Error("sink called concurrently")
		}
		defer inSink.Add(-1)
		key := srcs[bt.Source].Key
		rows := got[key]
		if int64(len(rows)) != bt.Row {
			t.Errorf("%s: batch starts at row %d after %d rows", key, bt.Row, len(rows))
		}
		for i := 0; i < int(bt.Rows()); i++ {
			r := keyRow{File: key, Row: bt.Row + int64(i)}
			for k, a := range bt.Keys {
				r.Keys = append(r.Keys, inspect.Value(a, i, spec.Columns[k].Type))
			}
			rows = append(rows, r)
		}
		got[key] = rows
		return nil
	})
	return res, got, err
}

// keysOf returns the keys of rows, each rendered as one string.
func keysOf(rows []keyRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		parts := make([]string, len(r.Keys))
		for k, v := range r.Keys {
			parts[k] = render(v)
		}
		out[i] = strings.Join(parts, "|")
	}
	return out
}

func render(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case bool:
		if x {
			return "true"
		}
		return "false"
	case string:
		return x
	default:
		s, _ := v.(interface{ String() string })
		if s != nil {
			return s.String()
		}
	}
	return "?"
}

func col(name string, t schemadiff.Type) keyfile.Column { return keyfile.Column{Name: name, Type: t} }

// footerOf parses the footer of a whole file in memory.
func footerOf(t testing.TB, data []byte) *metadata.FileMetaData {
	t.Helper()
	l := int(binary.LittleEndian.Uint32(data[len(data)-8:]))
	md, err := metadata.NewFileMetaData(data[len(data)-8-l:len(data)-8], nil)
	if err != nil {
		t.Fatal(err)
	}
	md.SetSourceFileSize(int64(len(data)))
	return md
}

// withFooter returns data with its footer replaced by md's serialization.
func withFooter(t testing.TB, data []byte, md *metadata.FileMetaData) []byte {
	t.Helper()
	start := pqgen.FooterStart(data)
	var buf bytes.Buffer
	buf.Write(data[:start])
	n, err := md.WriteTo(&buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], uint32(n))
	copy(trailer[4:], "PAR1")
	buf.Write(trailer[:])
	return buf.Bytes()
}

// keyChunkBytes is, from the file's own footer, the compressed size of the named top-level
// columns' chunks over every row group, and the footer's length with its trailer.
func keyChunkBytes(t testing.TB, data []byte, names ...string) (chunks, footer int64) {
	t.Helper()
	md := footerOf(t, data)
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		r := md.RowGroup(rg)
		for j := 0; j < md.Schema.NumColumns(); j++ {
			path := md.Schema.Column(j).ColumnPath()
			for _, n := range names {
				if path[0] == n {
					cc, err := r.ColumnChunk(j)
					if err != nil {
						t.Fatal(err)
					}
					chunks += cc.TotalCompressedSize()
				}
			}
		}
	}
	return chunks, int64(md.Size()) + 8
}

// byteCounter counts the bytes the ranged reads of a backend return, per key.
type byteCounter struct {
	storage.Backend
	mu    sync.Mutex
	bytes map[string]int64
}

func countBytes(b storage.Backend) *byteCounter {
	return &byteCounter{Backend: b, bytes: map[string]int64{}}
}

func (c *byteCounter) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	rc, err := c.Backend.ReadRange(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	return &countedBody{ReadCloser: rc, c: c, key: key}, nil
}

// of returns the bytes read of key.
func (c *byteCounter) of(key string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes[key]
}

type countedBody struct {
	io.ReadCloser
	c   *byteCounter
	key string
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.mu.Lock()
	b.c.bytes[b.key] += int64(n)
	b.c.mu.Unlock()
	return n, err
}
