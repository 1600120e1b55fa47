package tableref

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/delta"
	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// Source reads a table's current schema from one of its sources. Every source returns the
// same *schemadiff.Table.
type Source interface {
	// Name is the source's --from value.
	Name() schemadiff.Source
	// Table reads the schema of the target. The Delta source needs t.Root; the warehouse and
	// Unity Catalog sources need a table name (NeedsStorage tells which).
	Table(ctx context.Context, t *Ref) (*schemadiff.Table, error)
}

// NeedsStorage reports whether src reads the table's storage (and so needs a resolved root).
func NeedsStorage(src Source) bool { return src.Name() == schemadiff.SourceDelta }

// NewSource returns the source for a --from value: "delta", "warehouse" or "uc". ws may be
// nil, in which case the warehouse and Unity Catalog sources fail with ErrNeedsDatabricks.
func NewSource(name string, ws *Workspace) (Source, error) {
	switch schemadiff.Source(name) {
	case schemadiff.SourceDelta:
		return &DeltaSource{}, nil
	case schemadiff.SourceWarehouse:
		return &WarehouseSource{Workspace: ws}, nil
	case schemadiff.SourceUC:
		return &UCSource{Workspace: ws}, nil
	}
	names := make([]string, len(schemadiff.Sources))
	for i, s := range schemadiff.Sources {
		names[i] = string(s)
	}
	return nil, usagef("--from %q: want %s", name, strings.Join(names, ", "))
}

// DeltaSource reads the schema from the table's Delta log in storage.
type DeltaSource struct{ Opts []delta.Option }

// Name implements Source.
func (s *DeltaSource) Name() schemadiff.Source { return schemadiff.SourceDelta }

// Table implements Source.
func (s *DeltaSource) Table(ctx context.Context, t *Ref) (*schemadiff.Table, error) {
	if t.Root == nil {
		return nil, errors.New("the Delta log source needs the table's storage root")
	}
	snap, err := delta.Read(ctx, t.Root, s.Opts...)
	if err != nil {
		return nil, err
	}
	v := snap.Version
	id := t.TableID
	if id == "" {
		id = snap.TableID
	}
	return &schemadiff.Table{
		Source:            schemadiff.SourceDelta,
		Name:              t.TableName(),
		Location:          t.Display(),
		TableID:           id,
		Version:           &v,
		Schema:            snap.Schema,
		PartitionColumns:  snap.PartitionColumns,
		ColumnMappingMode: snap.ColumnMappingMode,
		Log: &schemadiff.LogDetails{
			CheckpointVersion: snap.CheckpointVersion,
			MetaDataFile:      snap.MetaDataFile,
			MinReaderVersion:  snap.MinReaderVersion,
			MinWriterVersion:  snap.MinWriterVersion,
			ReaderFeatures:    snap.ReaderFeatures,
			WriterFeatures:    snap.WriterFeatures,
			Configuration:     snap.Configuration,
			SchemaString:      snap.SchemaString,
		},
	}, nil
}

// UCSource reads the schema from the table's Unity Catalog entry: each column's type_json,
// with Delta column-mapping physical names when the table uses them.
type UCSource struct{ Workspace *Workspace }

// Name implements Source.
func (s *UCSource) Name() schemadiff.Source { return schemadiff.SourceUC }

// Table implements Source. It needs a table name, and refuses a table that cannot be a
// Zerobus target (a view, a non-Delta or an external table).
func (s *UCSource) Table(ctx context.Context, t *Ref) (*schemadiff.Table, error) {
	if err := needsCatalog(t, "uc", s.Workspace); err != nil {
		return nil, err
	}
	ti := t.Info
	if ti == nil {
		var err error
		if ti, err = s.Workspace.Table(ctx, t.Name.String()); err != nil {
			return nil, err
		}
	}
	return catalogTable(schemadiff.SourceUC, ti, ti.TableID)
}

// needsCatalog refuses a schema read from the catalog (--from from) without a table name or
// a Databricks workspace.
func needsCatalog(t *Ref, from string, w *Workspace) error {
	if !t.HasName {
		return usagef("--from %s needs a table name: give catalog.schema.table or --table", from)
	}
	if w == nil {
		return fmt.Errorf("table %s: %w", t.Name, ErrNeedsDatabricks)
	}
	return nil
}

// catalogTable is the table schema of ti as src read it, with tableID (what is known of the
// table's ID); a table that cannot be a Zerobus target is refused.
func catalogTable(src schemadiff.Source, ti *databricks.TableInfo, tableID string) (*schemadiff.Table, error) {
	if err := ti.CheckRecoverable(); err != nil {
		return nil, err
	}
	return &schemadiff.Table{
		Source:            src,
		Name:              ti.Name.String(),
		Location:          redact.String(ti.StorageLocation),
		TableID:           tableID,
		Schema:            ti.Schema,
		PartitionColumns:  ti.PartitionColumns,
		ColumnMappingMode: ti.Properties["delta.columnMapping.mode"],
	}, nil
}

// WarehouseSource reads the schema through the SQL warehouse with DESCRIBE TABLE EXTENDED …
// AS JSON. That document carries no column-mapping physical names.
type WarehouseSource struct{ Workspace *Workspace }

// Name implements Source.
func (s *WarehouseSource) Name() schemadiff.Source { return schemadiff.SourceWarehouse }

// Table implements Source. It needs a table name, and refuses a table that cannot be a
// Zerobus target.
func (s *WarehouseSource) Table(ctx context.Context, t *Ref) (*schemadiff.Table, error) {
	if err := needsCatalog(t, "warehouse", s.Workspace); err != nil {
		return nil, err
	}
	w, err := s.Workspace.Warehouse(ctx)
	if err != nil {
		return nil, err
	}
	d, err := w.DescribeTable(ctx, t.Name.String())
	if err != nil {
		return nil, err
	}
	return catalogTable(schemadiff.SourceWarehouse, d, t.TableID)
}

// ReadSchemaFile reads a schema file (a Delta schema JSON, DESCRIBE … AS JSON, the output of
// zbrecover schema -o json, or a DDL column list). name is how the file is shown.
func ReadSchemaFile(name string, data []byte) (*schemadiff.Table, error) {
	s, err := schemadiff.ParseSchemaFile(data)
	if err != nil {
		return nil, fmt.Errorf("--schema-file %s: %w", name, err)
	}
	return &schemadiff.Table{Source: schemadiff.SourceFile, Location: name, Schema: s, PartitionColumns: []string{}}, nil
}

// TableFor reads the table schema the fallback files are compared with. A root without a
// Delta log is not an error: the table is nil and note says what to pass instead. Other
// failures return the error and a note that reports it, so that a caller can still list the
// files.
func TableFor(ctx context.Context, src Source, t *Ref) (table *schemadiff.Table, note string, err error) {
	table, err = src.Table(ctx, t)
	switch {
	case errors.Is(err, delta.ErrNotDeltaTable):
		return nil, fmt.Sprintf("no table schema: %s has no Delta log (%s); "+
			"pass --schema-file (a Delta schema JSON or a DDL column list) or --from warehouse|uc to diff the files against the table",
			t.Display(), delta.LogDir), nil
	case err != nil:
		return nil, fmt.Sprintf("no table schema: reading it from %s failed: %s", src.Name(), redact.String(err.Error())), err
	}
	return table, "", nil
}

// CheckRoot is for a fallback folder found empty or missing: a mistyped root looks exactly
// like a table with nothing to recover. It returns a note when the root has no Delta log
// either, and "" when it has one (or the check itself failed: the fallback folder listed
// fine, so a failure here says nothing about the root). One list request; an error only when
// ctx ends.
func CheckRoot(ctx context.Context, t *Ref) (note string, err error) {
	errFound := errors.New("found")
	err = t.Root.List(ctx, delta.LogDir, func(storage.ObjectInfo) error { return errFound })
	switch {
	case errors.Is(err, errFound):
		return "", nil
	case ctx.Err() != nil:
		return "", ctx.Err()
	case err != nil:
		return "", nil
	}
	return fmt.Sprintf("no table here: %s has no Delta log (%s) either: check that it is the table's storage root",
		t.Display(), delta.LogDir), nil
}

// Identify makes sure t.TableID is set: the Unity Catalog table_id when the table was
// resolved there, else the Delta log's metaData.id read from the root. It is the key under
// which the journal keeps the table's runs, so a table dropped and created again under the
// same name never inherits a run.
func Identify(ctx context.Context, t *Ref) error {
	if t.TableID != "" {
		return nil
	}
	snap, err := delta.Read(ctx, t.Root)
	if err != nil {
		return fmt.Errorf("the table's identity (metaData.id in its Delta log at %s): %w", t.Display(), err)
	}
	if snap.TableID == "" {
		return fmt.Errorf("the Delta log at %s has no metaData.id", t.Display())
	}
	t.TableID = snap.TableID
	return nil
}

// Named returns the target of a spec that names a table, without opening storage: enough for
// the warehouse and Unity Catalog sources.
func Named(s Spec) (*Ref, error) {
	n, ok := s.Name()
	if !ok {
		return nil, usagef("a table name is needed: give catalog.schema.table or --table")
	}
	return &Ref{Name: n, HasName: true}, nil
}
