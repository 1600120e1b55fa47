package warehouse

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The engine keeps a Delta log for tables whose location is a local directory: for every
// version, <location>/_delta_log/<version>.json holds the protocol and metaData actions when
// they change (always at version 0) and a commitInfo action. The schemaString is the table's
// schema in Delta's JSON form, so tools that read a table's schema from its log see what
// DESCRIBE shows. Data files and their add and remove actions are written by write.go (with
// row tracking's fields and high-water mark, rowtracking.go).

// deltaActions returns the log lines of a new version of t.
func (e *DuckDB) deltaActions(t *tableMeta, c commit) ([]string, error) {
	var lines []string
	proto := deltaProtocol(t)
	if proto != t.lastProtocol || c.Version == 0 {
		lines = append(lines, proto)
		t.lastProtocol = proto
	}
	schema, err := json.Marshal(map[string]any{"type": "struct", "fields": DeltaFields(t.cols)})
	if err != nil {
		return nil, err
	}
	meta, err := json.Marshal(map[string]any{"metaData": orderedJSON{
		{"id", t.id},
		{"format", map[string]any{"provider": "parquet", "options": map[string]string{}}},
		{"schemaString", string(schema)},
		{"partitionColumns", nonNil(t.partitionCols)},
		{"configuration", t.props},
		{"createdTime", t.created.UnixMilli()},
	}})
	if err != nil {
		return nil, err
	}
	if string(meta) != t.lastMetaData || c.Version == 0 {
		lines = append(lines, string(meta))
		t.lastMetaData = string(meta)
	}
	info := orderedJSON{
		{"timestamp", c.Timestamp.UnixMilli()},
		{"userName", c.UserName},
		{"operation", c.Operation},
		{"operationParameters", c.Parameters},
	}
	if c.ReadVersion != nil {
		info = append(info, kv{"readVersion", *c.ReadVersion})
	}
	info = append(info,
		kv{"isolationLevel", "WriteSerializable"},
		kv{"isBlindAppend", c.IsBlindAppend},
		kv{"operationMetrics", c.Metrics},
	)
	if c.UserMetadata != "" {
		info = append(info, kv{"userMetadata", c.UserMetadata})
	}
	info = append(info,
		kv{"engineInfo", c.EngineInfo},
		kv{"txnId", newUUID()},
	)
	ci, err := json.Marshal(map[string]any{"commitInfo": info})
	if err != nil {
		return nil, err
	}
	return append(lines, string(ci)), nil
}

// deltaProtocol returns the protocol action the table's features need.
func deltaProtocol(t *tableMeta) string {
	var features []string
	if hasKind(t.cols, KindTimestampNTZ) {
		features = append(features, "timestampNtz")
	}
	if strings.EqualFold(t.props["delta.enableTypeWidening"], "true") {
		features = append(features, "typeWidening")
	}
	// Row tracking is a writer-only feature that needs domain metadata (PROTOCOL: Row
	// Tracking); once supported it stays in the protocol.
	var writerOnly []string
	if t.rowTrackingFeature {
		writerOnly = []string{"domainMetadata", "rowTracking"}
	}
	if t.columnMapping() {
		if len(features) == 0 && len(writerOnly) == 0 {
			return `{"protocol":{"minReaderVersion":2,"minWriterVersion":5}}`
		}
		features = append(features, "columnMapping")
	}
	if len(t.constraints()) > 0 && len(features) == 0 && len(writerOnly) == 0 {
		return `{"protocol":{"minReaderVersion":1,"minWriterVersion":3}}`
	}
	if len(t.constraints()) > 0 {
		features = append(features, "checkConstraints")
	}
	if len(features) == 0 && len(writerOnly) == 0 {
		return `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`
	}
	w, _ := json.Marshal(append(append([]string(nil), features...), writerOnly...))
	if len(features) == 0 {
		return fmt.Sprintf(`{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":%s}}`, w)
	}
	f, _ := json.Marshal(features)
	return fmt.Sprintf(`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":%s,"writerFeatures":%s}}`, f, w)
}

func hasKind(fields []Field, k Kind) bool {
	for _, f := range fields {
		if typeHasKind(f.Type, k) {
			return true
		}
	}
	return false
}

func typeHasKind(t *Type, k Kind) bool {
	switch {
	case t.Kind == k:
		return true
	case t.Kind == KindArray:
		return typeHasKind(t.Elem, k)
	case t.Kind == KindMap:
		return typeHasKind(t.Key, k) || typeHasKind(t.Value, k)
	case t.Kind == KindStruct:
		return hasKind(t.Fields, k)
	}
	return false
}

// writeDeltaLog writes the given versions' log files under a local location; other locations
// get no log.
func writeDeltaLog(location string, commits []commit) error {
	dir, ok := localPath(location)
	if !ok {
		return nil
	}
	logDir := filepath.Join(dir, "_delta_log")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	for _, c := range commits {
		name := filepath.Join(logDir, fmt.Sprintf("%020d.json", c.Version))
		if err := os.WriteFile(name, []byte(strings.Join(c.logLines, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}
