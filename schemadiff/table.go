package schemadiff

import (
	"fmt"
	"strings"
	"time"
)

// Source names where a table's schema was read from.
type Source string

const (
	// SourceDelta is the table's Delta log in storage (offline, storage access only).
	SourceDelta Source = "delta"
	// SourceWarehouse is DESCRIBE TABLE EXTENDED … AS JSON on a SQL warehouse.
	SourceWarehouse Source = "warehouse"
	// SourceUC is the table's Unity Catalog entry (the columns' type_json).
	SourceUC Source = "uc"
	// SourceFile is a schema file given by the operator.
	SourceFile Source = "schema_file"
	// SourceNone means no table schema was found.
	SourceNone Source = "none"
)

// Sources are the table sources a command's --from accepts, in order of preference.
var Sources = []Source{SourceDelta, SourceWarehouse, SourceUC}

// Table is a table's schema and where it came from: the one value every schema source
// returns, and what reports show and diffs compare with.
type Table struct {
	Source Source `json:"source"`
	// Name is catalog.schema.table, when known.
	Name string `json:"name,omitempty"`
	// Location is the table's storage root (secrets redacted), or the schema file's path.
	// It is for display only: SQL is never built from it.
	Location string `json:"location,omitempty"`
	// TableID is the table's identity: the Unity Catalog table_id, else the Delta log's
	// metaData.id. Empty when the source does not know it.
	TableID string `json:"table_id,omitempty"`
	// Version is the Delta table version the schema is from, when the source knows it.
	Version           *int64   `json:"version,omitempty"`
	PartitionColumns  []string `json:"partition_columns"`
	ColumnMappingMode string   `json:"column_mapping_mode,omitempty"`
	// Schema is the table's schema, physical names included under column mapping.
	Schema Schema `json:"-"`
	// Log holds the Delta log facts when the source is the Delta log.
	Log *LogDetails `json:"delta,omitempty"`
	// History is the table's schema over its versions, from the Delta log: one entry per
	// commit that changed it, oldest first, the first being the oldest schema the log still
	// holds. Nil when not read.
	History []SchemaVersion `json:"-"`
}

// LogDetails are the Delta log facts behind a schema read from storage.
type LogDetails struct {
	CheckpointVersion *int64            `json:"checkpoint_version"`
	MetaDataFile      string            `json:"metadata_file"`
	MinReaderVersion  int               `json:"min_reader_version"`
	MinWriterVersion  int               `json:"min_writer_version"`
	ReaderFeatures    []string          `json:"reader_features"`
	WriterFeatures    []string          `json:"writer_features"`
	Configuration     map[string]string `json:"configuration"`
	SchemaString      string            `json:"schema_string"`
}

// Known reports whether t holds a schema to compare with.
func (t *Table) Known() bool { return t != nil && t.Source != SourceNone && t.Source != "" }

// Describe names the schema's origin for text output: "Delta log at s3://…, version 7",
// "warehouse (DESCRIBE TABLE EXTENDED main.s.t AS JSON)", "Unity Catalog entry of main.s.t",
// "schema file cols.json".
func (t *Table) Describe() string {
	var b strings.Builder
	switch t.Source {
	case SourceDelta:
		b.WriteString("Delta log")
		if t.Location != "" {
			b.WriteString(" at " + t.Location)
		}
	case SourceWarehouse:
		b.WriteString("warehouse (DESCRIBE TABLE EXTENDED")
		if t.Name != "" {
			b.WriteString(" " + t.Name)
		}
		b.WriteString(" AS JSON)")
	case SourceUC:
		b.WriteString("Unity Catalog")
		if t.Name != "" {
			b.WriteString(" entry of " + t.Name)
		}
	case SourceFile:
		b.WriteString("schema file " + t.Location)
	default:
		b.WriteString(string(t.Source))
	}
	if t.Version != nil {
		fmt.Fprintf(&b, ", version %d", *t.Version)
	}
	return b.String()
}

// SchemaVersion is a table schema as one Delta commit set it, with who set it and how.
type SchemaVersion struct {
	// Version is the commit's table version.
	Version int64 `json:"version"`
	// Time is the commit's timestamp (commitInfo), zero when the log does not say.
	Time time.Time `json:"time,omitzero"`
	// Operation is the commit's operation (CREATE TABLE, REPLACE TABLE, ADD COLUMNS,
	// RENAME COLUMN, CHANGE COLUMN, …), "" when the log does not say.
	Operation string `json:"operation,omitempty"`
	// User is the commit's user name (or id), "" when the log does not say.
	User string `json:"user,omitempty"`
	// FromCheckpoint is true when the schema comes from a checkpoint at Version whose commit
	// is gone: it held at Version, and may have been set earlier.
	FromCheckpoint bool `json:"from_checkpoint,omitempty"`
	// Schema is the schema the commit set.
	Schema Schema `json:"-"`
}
