package delta_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zbrecover/zbrecover/delta"
	sd "github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage/local"
)

const idSchema = `"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}"`

// writeLogCommits writes hand-written JSON commits 0, 1, … into dir/_delta_log.
func writeLogCommits(t *testing.T, dir string, commits ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	for v, c := range commits {
		name := strings.Repeat("0", 19) + string(rune('0'+v)) + ".json"
		if err := os.WriteFile(logFile(dir, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func metaDataLine(schemaString string) string {
	return `{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":` + schemaString + `,"partitionColumns":[],"configuration":{}}}` + "\n"
}

// TestReadRefusesNewerProtocol: a reader must not read a table whose protocol asks for a
// newer reader version or for a reader feature it does not know; the error names which.
func TestReadRefusesNewerProtocol(t *testing.T) {
	cases := []struct {
		name, protocol string
		want           []string
	}{
		{"reader version 99", `{"minReaderVersion":99,"minWriterVersion":7}`,
			[]string{"reader version 99 (minReaderVersion)", "versions 1 to 3", "--from uc", "00000000000000000000.json"}},
		{"reader version 4", `{"minReaderVersion":4,"minWriterVersion":7,"readerFeatures":[],"writerFeatures":[]}`,
			[]string{"reader version 4"}},
		{"unknown reader feature", `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["columnMapping","quantumEntanglement"],"writerFeatures":["columnMapping"]}`,
			[]string{`an unknown reader feature, "quantumEntanglement"`}},
		{"two unknown reader features", `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["zz1","deletionVectors","zz2"],"writerFeatures":[]}`,
			[]string{`unknown reader features, "zz1", "zz2"`}},
		{"reader version 0", `{"minReaderVersion":0,"minWriterVersion":2}`,
			[]string{"minReaderVersion 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeLogCommits(t, dir, `{"protocol":`+tc.protocol+"}\n"+metaDataLine(idSchema))
			snap, err := read(t, dir)
			if !errors.Is(err, delta.ErrUnsupportedProtocol) {
				t.Fatalf("Read = %+v, %v; want ErrUnsupportedProtocol", snap, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestReadKnownReaderFeatures: the reader features of tables zbrecover reads (the shared real
// tables hold columnMapping, deletionVectors, timestampNtz, v2Checkpoint and
// typeWidening-preview) and the others the protocol defines that leave the schema readable.
func TestReadKnownReaderFeatures(t *testing.T) {
	dir := t.TempDir()
	features := `["columnMapping","deletionVectors","timestampNtz","v2Checkpoint","vacuumProtocolCheck","typeWidening","typeWidening-preview","variantType","variantType-preview","variantShredding-preview","geospatial"]`
	geo := `"{\"type\":\"struct\",\"fields\":[{\"name\":\"g\",\"type\":\"geography(OGC:CRS84, spherical)\",\"nullable\":true,\"metadata\":{}},{\"name\":\"p\",\"type\":\"geometry(EPSG:3857)\",\"nullable\":true,\"metadata\":{}}]}"`
	writeLogCommits(t, dir, `{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":`+features+`,"writerFeatures":`+features+"}}\n"+metaDataLine(geo))
	snap, err := read(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := sd.NewSchema().Col("g", sd.GeographyType("4326")).Col("p", sd.GeometryType("3857"))
	if !snap.Schema.Equal(want) || snap.MinReaderVersion != 3 {
		t.Errorf("schema %s (reader %d), want %s", snap.Schema.DDL(), snap.MinReaderVersion, want.DDL())
	}
}

// TestReadMetaDataWithoutSchemaString: the error names the missing schemaString and where it
// is, instead of a JSON parser's "EOF".
func TestReadMetaDataWithoutSchemaString(t *testing.T) {
	for name, md := range map[string]string{
		"absent": `{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"partitionColumns":[],"configuration":{}}}` + "\n",
		"empty":  metaDataLine(`""`),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeLogCommits(t, dir,
				`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`+"\n"+metaDataLine(idSchema),
				`{"commitInfo":{"operation":"SET TBLPROPERTIES"}}`+"\n"+md)
			_, err := read(t, dir)
			if err == nil || !strings.Contains(err.Error(), "no schemaString") ||
				!strings.Contains(err.Error(), "00000000000000000001.json line 2") || strings.Contains(err.Error(), "EOF") {
				t.Errorf("err = %v, want one naming the missing schemaString, the file and the line", err)
			}
			if _, err := delta.History(t.Context(), local.New(dir), 0); err == nil || !strings.Contains(err.Error(), "no schemaString") {
				t.Errorf("History: err = %v, want one naming the missing schemaString", err)
			}
		})
	}
}
