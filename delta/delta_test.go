package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
)

// testdata holds real Delta tables written by Spark and Databricks (see its README.md), shared
// by the project and not copied into the repository.
const testdata = "../../shared/testdata/delta"

type expectedTable struct {
	Version           int64             `json:"version"`
	SchemaString      string            `json:"schemaString"`
	PartitionColumns  []string          `json:"partitionColumns"`
	Configuration     map[string]string `json:"configuration"`
	ReaderFeatures    []string          `json:"readerFeatures"`
	WriterFeatures    []string          `json:"writerFeatures"`
	MinReaderVersion  int               `json:"minReaderVersion"`
	MinWriterVersion  int               `json:"minWriterVersion"`
	CheckpointVersion *int64            `json:"checkpointVersion"`
	MetaDataFile      string            `json:"metaDataFile"`
}

func requireTestdata(t *testing.T) map[string]expectedTable {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdata, "expected.json"))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Delta test tables missing (CI=true): %v", err)
		}
		t.Skipf("Delta test tables missing: %v", err)
	}
	var exp map[string]expectedTable
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatalf("expected.json: %v", err)
	}
	return exp
}

// counting records the keys a Backend reads.
type counting struct {
	storage.Backend
	mu    sync.Mutex
	reads []string
	lists int
}

func (c *counting) ReadRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	c.mu.Lock()
	c.reads = append(c.reads, key)
	c.mu.Unlock()
	return c.Backend.ReadRange(ctx, key, off, n)
}

func (c *counting) List(ctx context.Context, prefix string, fn func(storage.ObjectInfo) error) error {
	c.mu.Lock()
	c.lists++
	c.mu.Unlock()
	return c.Backend.List(ctx, prefix, fn)
}

func (c *counting) Stat(context.Context, string) (storage.ObjectInfo, error) {
	panic("Read must not Stat: the listing gives sizes")
}

func (c *counting) Delete(context.Context, string, storage.Precondition) error {
	panic("Read must not delete")
}

func (c *counting) files() []string {
	seen := map[string]bool{}
	var out []string
	for _, k := range c.reads {
		if !seen[k] {
			seen[k] = true
			out = append(out, strings.TrimPrefix(k, LogDir))
		}
	}
	sort.Strings(out)
	return out
}

// TestReadRealTables reads every table in the shared testdata and checks the snapshot against
// expected.json, once using checksum files and once replaying the log without them.
func TestReadRealTables(t *testing.T) {
	exp := requireTestdata(t)
	entries, err := os.ReadDir(testdata)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
			if _, ok := exp[e.Name()]; !ok {
				t.Errorf("table %s has no entry in expected.json", e.Name())
			}
		}
	}
	if len(dirs) != len(exp) {
		t.Errorf("%d table folders, %d entries in expected.json", len(dirs), len(exp))
	}
	for _, name := range dirs {
		want := exp[name]
		for _, mode := range []struct {
			name string
			opts []Option
		}{{"checksums", nil}, {"replay", []Option{IgnoreChecksums()}}} {
			t.Run(name+"/"+mode.name, func(t *testing.T) {
				b := &counting{Backend: local.New(filepath.Join(testdata, name))}
				snap, err := Read(context.Background(), b, mode.opts...)
				if err != nil {
					t.Fatal(err)
				}
				checkSnapshot(t, snap, want)
				if b.lists != 1 {
					t.Errorf("%d listings, want 1", b.lists)
				}
				switch {
				case snap.MetaDataFile == want.MetaDataFile:
				case mode.opts == nil && snap.MetaDataFile == fmt.Sprintf("%020d.crc", want.Version):
					// The checksum of the newest version carries the same metaData.
				default:
					t.Errorf("MetaDataFile = %s, want %s", snap.MetaDataFile, want.MetaDataFile)
				}
				if mode.opts != nil {
					for _, f := range b.files() {
						if strings.HasSuffix(f, ".crc") {
							t.Errorf("IgnoreChecksums read %s", f)
						}
					}
				}
				t.Logf("read %v", b.files())
			})
		}
	}
}

func checkSnapshot(t *testing.T, snap *Snapshot, want expectedTable) {
	t.Helper()
	if snap.Version != want.Version {
		t.Errorf("Version = %d, want %d", snap.Version, want.Version)
	}
	if snap.SchemaString != want.SchemaString {
		t.Errorf("SchemaString = %s\nwant %s", snap.SchemaString, want.SchemaString)
	}
	ws, err := schemadiff.ParseDeltaSchema(want.SchemaString)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(snap.Schema, ws) {
		t.Errorf("Schema = %s\nwant %s", snap.Schema.DDL(), ws.DDL())
	}
	if !equalStrings(snap.PartitionColumns, want.PartitionColumns) {
		t.Errorf("PartitionColumns = %q, want %q", snap.PartitionColumns, want.PartitionColumns)
	}
	if !(len(snap.Configuration) == 0 && len(want.Configuration) == 0) && !reflect.DeepEqual(snap.Configuration, want.Configuration) {
		t.Errorf("Configuration = %v, want %v", snap.Configuration, want.Configuration)
	}
	if !equalStrings(snap.ReaderFeatures, want.ReaderFeatures) || !equalStrings(snap.WriterFeatures, want.WriterFeatures) {
		t.Errorf("features = %q / %q, want %q / %q", snap.ReaderFeatures, snap.WriterFeatures, want.ReaderFeatures, want.WriterFeatures)
	}
	if snap.MinReaderVersion != want.MinReaderVersion || snap.MinWriterVersion != want.MinWriterVersion {
		t.Errorf("protocol %d/%d, want %d/%d", snap.MinReaderVersion, snap.MinWriterVersion, want.MinReaderVersion, want.MinWriterVersion)
	}
	switch {
	case want.CheckpointVersion == nil && snap.CheckpointVersion != nil:
		t.Errorf("CheckpointVersion = %d, want none", *snap.CheckpointVersion)
	case want.CheckpointVersion != nil && (snap.CheckpointVersion == nil || *snap.CheckpointVersion != *want.CheckpointVersion):
		t.Errorf("CheckpointVersion = %v, want %d", snap.CheckpointVersion, *want.CheckpointVersion)
	}
	wantMode := want.Configuration["delta.columnMapping.mode"]
	if wantMode == "" {
		wantMode = "none"
	}
	if snap.ColumnMappingMode != wantMode {
		t.Errorf("ColumnMappingMode = %s, want %s", snap.ColumnMappingMode, wantMode)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}
