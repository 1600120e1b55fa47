package delta

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
)

// checkpointSchema is the part of the Delta checkpoint schema the reader uses, plus add.
var checkpointSchema = arrow.NewSchema([]arrow.Field{
	{Name: "add", Nullable: true, Type: arrow.StructOf(
		arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "size", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "stats", Type: arrow.BinaryTypes.String, Nullable: true},
	)},
	{Name: "metaData", Nullable: true, Type: arrow.StructOf(
		arrow.Field{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "schemaString", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "partitionColumns", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		arrow.Field{Name: "configuration", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
	)},
	{Name: "protocol", Nullable: true, Type: arrow.StructOf(
		arrow.Field{Name: "minReaderVersion", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "minWriterVersion", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "readerFeatures", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		arrow.Field{Name: "writerFeatures", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	)},
}, nil)

const bigSchemaString = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},{"name":"day","type":"date","nullable":true,"metadata":{}}]}`

// writeBigCheckpoint writes a Parquet checkpoint, in row groups of rowGroup rows, of a
// protocol and a metaData row followed by adds add actions, as
// _delta_log/00000000000000000010.checkpoint.parquet under dir.
func writeBigCheckpoint(t *testing.T, dir string, adds, rowGroup int) int64 {
	t.Helper()
	rb := array.NewRecordBuilder(memory.DefaultAllocator, checkpointSchema)
	defer rb.Release()
	add := rb.Field(0).(*array.StructBuilder)
	md := rb.Field(1).(*array.StructBuilder)
	proto := rb.Field(2).(*array.StructBuilder)
	strs := func(lb *array.ListBuilder, vals ...string) {
		lb.Append(true)
		for _, v := range vals {
			lb.ValueBuilder().(*array.StringBuilder).Append(v)
		}
	}
	// Row 0: protocol. Row 1: metaData. Then the adds.
	for row := 0; row < adds+2; row++ {
		switch row {
		case 0:
			add.AppendNull()
			md.AppendNull()
			proto.Append(true)
			proto.FieldBuilder(0).(*array.Int32Builder).Append(3)
			proto.FieldBuilder(1).(*array.Int32Builder).Append(7)
			strs(proto.FieldBuilder(2).(*array.ListBuilder), "deletionVectors")
			strs(proto.FieldBuilder(3).(*array.ListBuilder), "deletionVectors", "appendOnly")
		case 1:
			add.AppendNull()
			proto.AppendNull()
			md.Append(true)
			md.FieldBuilder(0).(*array.StringBuilder).Append("big-table")
			md.FieldBuilder(1).(*array.StringBuilder).Append(bigSchemaString)
			strs(md.FieldBuilder(2).(*array.ListBuilder), "day")
			mb := md.FieldBuilder(3).(*array.MapBuilder)
			mb.Append(true)
			for _, kv := range [][2]string{{"delta.checkpointInterval", "10"}, {"delta.appendOnly", "true"}} {
				mb.KeyBuilder().(*array.StringBuilder).Append(kv[0])
				mb.ItemBuilder().(*array.StringBuilder).Append(kv[1])
			}
		default:
			i := row - 2
			md.AppendNull()
			proto.AppendNull()
			add.Append(true)
			add.FieldBuilder(0).(*array.StringBuilder).Append(fmt.Sprintf("day=2026-01-%02d/part-%05d-0b1c2d3e.c000.snappy.parquet", i%28+1, i))
			add.FieldBuilder(1).(*array.Int64Builder).Append(int64(1000 + i))
			add.FieldBuilder(2).(*array.StringBuilder).Append(fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d},"maxValues":{"id":%d}}`, i, i*10, i*10+9))
		}
	}
	rec := rb.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(checkpointSchema, []arrow.RecordBatch{rec})
	defer tbl.Release()
	logDir := filepath.Join(dir, "_delta_log")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(logDir, "00000000000000000010.checkpoint.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	props := parquet.NewWriterProperties(parquet.WithStats(true), parquet.WithDictionaryDefault(false))
	if err := pqarrow.WriteTable(tbl, f, int64(rowGroup), props, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// byteCounting counts ranged reads and the bytes they return.
type byteCounting struct {
	storage.Backend
	mu       sync.Mutex
	requests int
	bytes    int64
}

type countedReader struct {
	io.ReadCloser
	b *byteCounting
}

func (r countedReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.b.mu.Lock()
	r.b.bytes += int64(n)
	r.b.mu.Unlock()
	return n, err
}

func (b *byteCounting) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	b.mu.Lock()
	b.requests++
	b.mu.Unlock()
	rc, err := b.Backend.ReadRange(ctx, key, off, n)
	if err != nil {
		return nil, err
	}
	return countedReader{rc, b}, nil
}

// TestReadLargeCheckpoint: a checkpoint far larger than its metaData and protocol is read with
// two requests (footer, then the span of the two columns in the one row group holding them),
// fetching a small part of the file.
func TestReadLargeCheckpoint(t *testing.T) {
	dir := t.TempDir()
	size := writeBigCheckpoint(t, dir, 20000, 4000)
	b := &byteCounting{Backend: local.New(dir)}
	snap, err := Read(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 10 || snap.SchemaString != bigSchemaString || snap.TableID != "big-table" ||
		strings.Join(snap.PartitionColumns, ",") != "day" || snap.Configuration["delta.appendOnly"] != "true" ||
		len(snap.Configuration) != 2 || snap.MinReaderVersion != 3 || snap.MinWriterVersion != 7 ||
		strings.Join(snap.ReaderFeatures, ",") != "deletionVectors" || strings.Join(snap.WriterFeatures, ",") != "deletionVectors,appendOnly" {
		t.Errorf("snapshot = %+v", snap)
	}
	if snap.CheckpointVersion == nil || *snap.CheckpointVersion != 10 || snap.MetaDataFile != "00000000000000000010.checkpoint.parquet" {
		t.Errorf("checkpoint %v, metaData in %s", snap.CheckpointVersion, snap.MetaDataFile)
	}
	if b.requests > 2 {
		t.Errorf("%d ranged reads of the checkpoint, want at most 2", b.requests)
	}
	if b.bytes*5 > size {
		t.Errorf("read %d of %d bytes, want under a fifth of the file", b.bytes, size)
	}
	t.Logf("checkpoint of %d bytes: %d requests, %d bytes read", size, b.requests, b.bytes)
}
