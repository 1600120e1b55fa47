package delta_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/delta"
	"github.com/zbrecover/zbrecover/delta/deltatest"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage/local"
)

const testdata = "../../shared/testdata/delta"

// copyLog copies a shared test table's _delta_log/ (not its data) into a temporary directory
// that the test may damage.
func copyLog(t *testing.T, table string) string {
	t.Helper()
	src := filepath.Join(testdata, table, "_delta_log")
	if _, err := os.Stat(src); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Delta test tables missing (CI=true): %v", err)
		}
		t.Skipf("Delta test tables missing: %v", err)
	}
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Dir(src), p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func logFile(dir, name string) string { return filepath.Join(dir, "_delta_log", name) }

func read(t *testing.T, dir string, opts ...delta.Option) (*delta.Snapshot, error) {
	t.Helper()
	return delta.Read(context.Background(), local.New(dir), opts...)
}

func TestReadDeltatestLog(t *testing.T) {
	dir := t.TempDir()
	v0 := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("amount", sd.DecimalType(10, 2))
	v1 := v0.Col("note", sd.StringType)
	v2 := sd.NewSchema().Col("id", sd.LongType, sd.NotNull).Col("amount", sd.DecimalType(12, 2)).
		Col("note", sd.StringType).Col("at", sd.TimestampNTZType)
	last, err := deltatest.Write(dir, deltatest.Table{Schema: v0, Later: []sd.Schema{v1, v2}, PartitionColumns: []string{"note"},
		Configuration: map[string]string{"delta.enableTypeWidening": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if last != 2 {
		t.Errorf("Write returned version %d, want 2", last)
	}
	snap, err := read(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 2 || !snap.Schema.Equal(v2) || snap.MetaDataFile != "00000000000000000002.json" ||
		snap.ProtocolFile != "00000000000000000000.json" {
		t.Errorf("snapshot = version %d, schema %s, metaData in %s, protocol in %s", snap.Version, snap.Schema.DDL(), snap.MetaDataFile, snap.ProtocolFile)
	}
	if snap.MinReaderVersion != 3 || snap.MinWriterVersion != 7 || strings.Join(snap.ReaderFeatures, ",") != "timestampNtz" {
		t.Errorf("protocol = %d/%d %v, want 3/7 [timestampNtz] (the log has a timestamp_ntz column)", snap.MinReaderVersion, snap.MinWriterVersion, snap.ReaderFeatures)
	}
	if snap.Configuration["delta.enableTypeWidening"] != "true" || strings.Join(snap.PartitionColumns, ",") != "note" {
		t.Errorf("configuration %v, partitions %v", snap.Configuration, snap.PartitionColumns)
	}
	if snap.CheckpointVersion != nil || snap.ColumnMappingMode != "none" || snap.TableID == "" {
		t.Errorf("checkpoint %v, mapping %s, id %q", snap.CheckpointVersion, snap.ColumnMappingMode, snap.TableID)
	}
	if _, err := deltatest.Write(dir, deltatest.Table{Schema: v0}); err == nil {
		t.Error("Write over an existing log succeeded")
	}
}

func TestReadDeltatestColumnMapping(t *testing.T) {
	dir := t.TempDir()
	s := sd.NewSchema().Col("id", sd.LongType, sd.Physical("col-a", 1)).
		Col("s", sd.StructType(sd.NewField("x", sd.IntegerType, sd.Physical("col-c", 3))), sd.Physical("col-b", 2))
	if _, err := deltatest.Write(dir, deltatest.Table{Schema: s}); err != nil {
		t.Fatal(err)
	}
	snap, err := read(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if snap.ColumnMappingMode != "name" || snap.Configuration["delta.columnMapping.maxColumnId"] != "3" ||
		snap.MinReaderVersion != 2 || snap.MinWriterVersion != 5 {
		t.Errorf("mapping %s, config %v, protocol %d/%d", snap.ColumnMappingMode, snap.Configuration, snap.MinReaderVersion, snap.MinWriterVersion)
	}
	if got := snap.Schema.PhysicalView().Names(); strings.Join(got, ",") != "col-a,col-b" {
		t.Errorf("physical names %v", got)
	}
	if snap.Schema.Fields[1].Type.Fields[0].PhysicalName != "col-c" {
		t.Errorf("nested physical name lost: %+v", snap.Schema.Fields[1])
	}
}

func TestReadNotDelta(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "part-0.parquet"), []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := read(t, dir)
	if !errors.Is(err, delta.ErrNotDeltaTable) {
		t.Errorf("err = %v, want ErrNotDeltaTable", err)
	}
	_, err = read(t, filepath.Join(dir, "missing"))
	if !errors.Is(err, delta.ErrNotDeltaTable) {
		t.Errorf("missing directory: err = %v, want ErrNotDeltaTable", err)
	}
}

func TestReadCatalogManaged(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	commit := `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["catalogManaged","vacuumProtocolCheck"],"writerFeatures":["catalogManaged","inCommitTimestamp","vacuumProtocolCheck"]}}
{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{}}}
`
	if err := os.WriteFile(logFile(dir, "00000000000000000000.json"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := read(t, dir)
	if !errors.Is(err, delta.ErrCatalogManaged) {
		t.Errorf("err = %v, want ErrCatalogManaged", err)
	}
}

func TestReadMissingCommit(t *testing.T) {
	dir := copyLog(t, "simple_table")
	if err := os.Remove(logFile(dir, "00000000000000000002.json")); err != nil {
		t.Fatal(err)
	}
	_, err := read(t, dir)
	if err == nil || !strings.Contains(err.Error(), "commit 00000000000000000002.json is missing") {
		t.Errorf("err = %v, want one naming the missing commit", err)
	}
}

// TestReadIncompleteMultiPart: a multi-part checkpoint with a part missing is ignored, and the
// log is replayed from its commits.
func TestReadIncompleteMultiPart(t *testing.T) {
	dir := copyLog(t, "v1-multi-part-partitioned-struct-stats-only")
	if err := os.Remove(logFile(dir, "00000000000000000005.checkpoint.0000000002.0000000003.parquet")); err != nil {
		t.Fatal(err)
	}
	snap, err := read(t, dir, delta.IgnoreChecksums())
	if err != nil {
		t.Fatal(err)
	}
	if snap.CheckpointVersion != nil || snap.Version != 5 || strings.Join(snap.PartitionColumns, ",") != "part" {
		t.Errorf("checkpoint %v, version %d, partitions %v", snap.CheckpointVersion, snap.Version, snap.PartitionColumns)
	}
	if !strings.HasSuffix(snap.MetaDataFile, ".json") {
		t.Errorf("MetaDataFile = %s, want a commit", snap.MetaDataFile)
	}
}

// TestReadCorruptCheckpoint: damaged checkpoint Parquet gives an error naming the file (never a
// panic), whether the footer or the data is damaged.
func TestReadCorruptCheckpoint(t *testing.T) {
	for _, damage := range []struct {
		name string
		fn   func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"footer flipped", func(b []byte) []byte {
			out := append([]byte(nil), b...)
			for i := len(out) - 200; i < len(out)-8; i += 7 {
				out[i] ^= 0xA5
			}
			return out
		}},
		{"data flipped", func(b []byte) []byte {
			out := append([]byte(nil), b...)
			for i := 4; i < len(out)/2; i += 13 {
				out[i] ^= 0xFF
			}
			return out
		}},
		{"empty", func([]byte) []byte { return nil }},
	} {
		t.Run(damage.name, func(t *testing.T) {
			dir := copyLog(t, "checkpoints_vacuumed")
			name := logFile(dir, "00000000000000000010.checkpoint.parquet")
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(name, damage.fn(b), 0o644); err != nil {
				t.Fatal(err)
			}
			snap, err := read(t, dir)
			if err == nil {
				// Damage that leaves metaData and protocol readable must still give the right schema.
				if snap.Version != 12 || len(snap.Schema.Fields) != 4 {
					t.Errorf("damaged checkpoint read as version %d, %s", snap.Version, snap.Schema.DDL())
				}
				return
			}
			t.Logf("error: %v", err)
			if !strings.Contains(err.Error(), "00000000000000000010.checkpoint.parquet") {
				t.Errorf("err = %v, want one naming the checkpoint", err)
			}
		})
	}
}

// TestReadBadChecksumFallsBack: an unreadable .crc is skipped and the log replayed.
func TestReadBadChecksumFallsBack(t *testing.T) {
	dir := copyLog(t, "checkpoint-v2-table")
	if err := os.WriteFile(logFile(dir, "00000000000000000009.crc"), []byte(`{"txnId":"x","metadata":`), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := read(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if snap.MetaDataFile != "00000000000000000009.json" || snap.Version != 9 {
		t.Errorf("MetaDataFile %s version %d, want 00000000000000000009.json 9", snap.MetaDataFile, snap.Version)
	}
	// Commit 9 has no protocol: the checksum of version 8 supplies it.
	if snap.ProtocolFile != "00000000000000000008.crc" {
		t.Errorf("ProtocolFile = %s, want 00000000000000000008.crc", snap.ProtocolFile)
	}
	if !strings.Contains(snap.SchemaString, `"delta.identity.highWaterMark":44`) {
		t.Errorf("schema from the wrong version: %s", snap.SchemaString)
	}
}

// TestReadStaleLastCheckpoint: _last_checkpoint pointing at a checkpoint that is gone does not
// matter; the listing decides.
func TestReadStaleLastCheckpoint(t *testing.T) {
	dir := copyLog(t, "dv-with-columnmapping")
	if err := os.WriteFile(logFile(dir, "_last_checkpoint"), []byte(`{"version":14,"size":3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := read(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if snap.CheckpointVersion == nil || *snap.CheckpointVersion != 10 || snap.Version != 15 {
		t.Errorf("checkpoint %v version %d, want 10 and 15", snap.CheckpointVersion, snap.Version)
	}
	if err := os.WriteFile(logFile(dir, "_last_checkpoint"), []byte(`garbage`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := read(t, dir); err != nil {
		t.Errorf("corrupt _last_checkpoint: %v", err)
	}
}

// TestReadLastCheckpointMissing: the checkpoint _last_checkpoint names is gone and so are the
// commits before it; the error says both, so the operator knows why the replay cannot start.
func TestReadLastCheckpointMissing(t *testing.T) {
	dir := copyLog(t, "checkpoints_vacuumed")
	for _, name := range []string{"00000000000000000005.checkpoint.parquet", "00000000000000000010.checkpoint.parquet"} {
		if err := os.Remove(logFile(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(logFile(dir, "_last_checkpoint"), []byte(`{"version":10,"size":20}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := read(t, dir)
	if err == nil || !strings.Contains(err.Error(), "commit 00000000000000000004.json is missing") ||
		!strings.Contains(err.Error(), "_last_checkpoint names checkpoint version 10, which is missing") {
		t.Errorf("err = %v, want one naming the missing commit and the missing checkpoint", err)
	}
	// Without _last_checkpoint, or when it names a checkpoint that is there, no such hint.
	if err := os.Remove(logFile(dir, "_last_checkpoint")); err != nil {
		t.Fatal(err)
	}
	if _, err := read(t, dir); err == nil || strings.Contains(err.Error(), "_last_checkpoint") {
		t.Errorf("err = %v, want no _last_checkpoint hint", err)
	}
}

// TestReadCheckpointOnly: commits up to the checkpoint were cleaned up and no later commit
// exists; the checkpoint alone gives the version.
func TestReadCheckpointOnly(t *testing.T) {
	dir := copyLog(t, "checkpoint-cdf-table")
	for _, v := range []int{3, 4, 5} {
		if err := os.Remove(logFile(dir, fmt.Sprintf("%020d.json", v))); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := read(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version != 3 || snap.MetaDataFile != "00000000000000000003.checkpoint.parquet" {
		t.Errorf("version %d from %s", snap.Version, snap.MetaDataFile)
	}
}

func TestReadCanceled(t *testing.T) {
	dir := copyLog(t, "simple_table")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := delta.Read(ctx, local.New(dir)); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestReadBadSchemaString(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	commit := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}
{"metaData":{"id":"x","schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"i\",\"type\":\"interval\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{}}}
`
	if err := os.WriteFile(logFile(dir, "00000000000000000000.json"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := read(t, dir)
	if err == nil || !strings.Contains(err.Error(), "interval") || !strings.Contains(err.Error(), "00000000000000000000.json") {
		t.Errorf("err = %v, want one naming the type and the file", err)
	}
	if err := os.WriteFile(logFile(dir, "00000000000000000001.json"), []byte("{\"metaData\":{broken\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = read(t, dir)
	if err == nil || !strings.Contains(err.Error(), "00000000000000000001.json line 1") {
		t.Errorf("err = %v, want one naming the file and line", err)
	}
}

// TestReadLastCheckpointChoosesAmongEqualVersions: with two V2 checkpoints of the newest
// version, the one _last_checkpoint names is read.
func TestReadLastCheckpointChoosesAmongEqualVersions(t *testing.T) {
	dir := copyLog(t, "v2-checkpoint-parquet")
	// A second, damaged checkpoint of version 2 that sorts first by name.
	if err := os.WriteFile(logFile(dir, "00000000000000000002.checkpoint.00000000-0000-4000-8000-000000000000.parquet"), []byte("PAR1 not parquet PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := read(t, dir, delta.IgnoreChecksums())
	if err != nil {
		t.Fatal(err)
	}
	if snap.MetaDataFile != "00000000000000000002.checkpoint.e8fa2696-9728-4e9c-b285-634743fdd4fb.parquet" {
		t.Errorf("MetaDataFile = %s, want the checkpoint _last_checkpoint names", snap.MetaDataFile)
	}
	// Without _last_checkpoint the damaged one (first by name) is tried, and its error names it.
	if err := os.Remove(logFile(dir, "_last_checkpoint")); err != nil {
		t.Fatal(err)
	}
	if _, err := read(t, dir, delta.IgnoreChecksums()); err == nil || !strings.Contains(err.Error(), "00000000-0000-4000-8000-000000000000") {
		t.Errorf("err = %v, want one naming the damaged checkpoint", err)
	}
}
