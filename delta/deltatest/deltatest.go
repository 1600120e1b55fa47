// Package deltatest writes small Delta tables for tests and the demo: a JSON-only transaction
// log (commitInfo, protocol and metaData in version 0, one metaData per later version) in a
// local directory. The logs follow the Delta protocol closely enough for delta.Read, Spark and
// DuckDB's delta extension to read their schema; they hold no data files unless Files says so.
package deltatest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// Table describes the log to write.
type Table struct {
	// Schema is the table's schema at version 0.
	Schema schemadiff.Schema
	// Later are the schemas of versions 1, 2, …: each is committed as one metaData action (a
	// schema change such as ALTER TABLE … ADD COLUMNS).
	Later []schemadiff.Schema
	// Operations are the commitInfo operations of the Later versions, in order; a missing one
	// is REPLACE COLUMNS.
	Operations []string
	// PartitionColumns are the partition columns (logical names).
	PartitionColumns []string
	// Configuration holds table properties. When the schema has column-mapping physical names
	// and no mode is set, delta.columnMapping.mode = name and maxColumnId are added.
	Configuration map[string]string
	// ID is the table id (metaData.id); a random UUID when empty.
	ID string
	// Files are data files (relative paths) to record with add actions in version 0; their
	// sizes are read from disk when they exist, 0 otherwise.
	Files []string
	// Time is the commit timestamp; the zero time means now.
	Time time.Time
}

// Write writes the table's _delta_log/ under dir (created if needed) and returns the newest
// version. Existing commit files are an error: a log is written once.
func Write(dir string, t Table) (int64, error) {
	logDir := filepath.Join(dir, "_delta_log")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return 0, err
	}
	id := t.ID
	if id == "" {
		id = uuid()
	}
	ts := t.Time
	if ts.IsZero() {
		ts = time.Now()
	}
	schemas := append([]schemadiff.Schema{t.Schema}, t.Later...)
	for v, s := range schemas {
		var actions []any
		op := "CREATE TABLE"
		switch {
		case v > 0 && v-1 < len(t.Operations):
			op = t.Operations[v-1]
		case v > 0:
			op = "REPLACE COLUMNS"
		}
		actions = append(actions, map[string]any{"commitInfo": map[string]any{
			"timestamp":  ts.UnixMilli(),
			"operation":  op,
			"engineInfo": "zbrecover-deltatest",
		}})
		if v == 0 {
			actions = append(actions, map[string]any{"protocol": protocolFor(schemas)})
		}
		actions = append(actions, map[string]any{"metaData": map[string]any{
			"id":               id,
			"format":           map[string]any{"provider": "parquet", "options": map[string]string{}},
			"schemaString":     s.DeltaJSON(),
			"partitionColumns": orEmpty(t.PartitionColumns),
			"configuration":    configurationFor(t.Configuration, s),
			"createdTime":      ts.UnixMilli(),
		}})
		if v == 0 {
			for _, f := range t.Files {
				var size int64
				if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); err == nil {
					size = fi.Size()
				}
				actions = append(actions, map[string]any{"add": map[string]any{
					"path": f, "partitionValues": map[string]string{}, "size": size,
					"modificationTime": ts.UnixMilli(), "dataChange": true,
				}})
			}
		}
		if err := writeCommit(logDir, int64(v), actions); err != nil {
			return 0, err
		}
	}
	return int64(len(schemas) - 1), nil
}

func writeCommit(logDir string, v int64, actions []any) error {
	var buf []byte
	for _, a := range actions {
		b, err := json.Marshal(a)
		if err != nil {
			return err
		}
		buf = append(append(buf, b...), '\n')
	}
	name := filepath.Join(logDir, fmt.Sprintf("%020d.json", v))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("write commit %d: %w", v, err)
	}
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// protocolFor returns the lowest protocol that covers every schema: table features
// (reader 3, writer 7) when a timestamp_ntz column appears, reader 2 / writer 5 for column
// mapping, 1 / 2 otherwise.
func protocolFor(schemas []schemadiff.Schema) map[string]any {
	ntz, mapping := false, false
	for _, s := range schemas {
		ntz = ntz || hasKind(s.Type(), schemadiff.TimestampNTZ)
		mapping = mapping || s.HasColumnMapping()
	}
	switch {
	case ntz:
		rf, wf := []string{"timestampNtz"}, []string{"timestampNtz"}
		if mapping {
			rf, wf = append(rf, "columnMapping"), append(wf, "columnMapping")
		}
		return map[string]any{"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": rf, "writerFeatures": wf}
	case mapping:
		return map[string]any{"minReaderVersion": 2, "minWriterVersion": 5}
	}
	return map[string]any{"minReaderVersion": 1, "minWriterVersion": 2}
}

func hasKind(t schemadiff.Type, k schemadiff.Kind) bool {
	if t.Kind == k {
		return true
	}
	switch t.Kind {
	case schemadiff.Struct:
		for _, f := range t.Fields {
			if hasKind(f.Type, k) {
				return true
			}
		}
	case schemadiff.Array:
		return t.Elem != nil && hasKind(*t.Elem, k)
	case schemadiff.Map:
		return (t.Key != nil && hasKind(*t.Key, k)) || (t.Value != nil && hasKind(*t.Value, k))
	}
	return false
}

func configurationFor(base map[string]string, s schemadiff.Schema) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	if s.HasColumnMapping() {
		if out["delta.columnMapping.mode"] == "" {
			out["delta.columnMapping.mode"] = "name"
		}
		if out["delta.columnMapping.maxColumnId"] == "" {
			out["delta.columnMapping.maxColumnId"] = strconv.FormatInt(maxID(s.Fields), 10)
		}
	}
	return out
}

func maxID(fields []schemadiff.Field) int64 {
	var m int64
	for _, f := range fields {
		m = max(m, f.ID, maxIDType(f.Type))
	}
	return m
}

func maxIDType(t schemadiff.Type) int64 {
	switch t.Kind {
	case schemadiff.Struct:
		return maxID(t.Fields)
	case schemadiff.Array:
		if t.Elem != nil {
			return maxIDType(*t.Elem)
		}
	case schemadiff.Map:
		var m int64
		if t.Key != nil {
			m = maxIDType(*t.Key)
		}
		if t.Value != nil {
			m = max(m, maxIDType(*t.Value))
		}
		return m
	}
	return 0
}

func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
