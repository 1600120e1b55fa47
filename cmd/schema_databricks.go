package cmd

import (
	"context"
	"github.com/zbrecover/zbrecover/internal/redact"
)

// databricksSchemaSource returns the schema sources that need a Databricks connection:
// "warehouse" (DESCRIBE TABLE EXTENDED … AS JSON on the SQL warehouse) and "uc" (the table's
// Unity Catalog columns).
func databricksSchemaSource(f *Factory, name string) (SchemaSource, bool) {
	switch name {
	case "warehouse":
		return &WarehouseSchemaSource{F: f}, true
	case "uc":
		return &UCSchemaSource{F: f}, true
	}
	return nil, false
}

// UCSchemaSource reads the schema from the table's Unity Catalog entry: each column's
// type_json, with Delta column-mapping physical names when the table uses them.
type UCSchemaSource struct{ F *Factory }

// Name implements SchemaSource.
func (s *UCSchemaSource) Name() string { return "uc" }

// TableSchema implements SchemaSource. It needs a table name, and refuses a table that cannot
// be a Zerobus target (a view, a non-Delta or an external table).
func (s *UCSchemaSource) TableSchema(ctx context.Context, t *TargetOptions) (*TableSchema, error) {
	if t.Table == "" {
		return nil, FlagErrorf("--from uc needs a table name: give catalog.schema.table or --table")
	}
	ti, err := s.F.Databricks().Table(ctx, s.F, t.Table)
	if err != nil {
		return nil, err
	}
	if err := ti.CheckRecoverable(); err != nil {
		return nil, err
	}
	return &TableSchema{
		Source:            "uc",
		Table:             ti.Name.String(),
		Root:              redact.String(ti.StorageLocation),
		Schema:            ti.Schema,
		PartitionColumns:  ti.PartitionColumns,
		ColumnMappingMode: ti.Properties["delta.columnMapping.mode"],
	}, nil
}

// WarehouseSchemaSource reads the schema through the SQL warehouse with DESCRIBE TABLE
// EXTENDED … AS JSON. That document carries no column-mapping physical names.
type WarehouseSchemaSource struct{ F *Factory }

// Name implements SchemaSource.
func (s *WarehouseSchemaSource) Name() string { return "warehouse" }

// TableSchema implements SchemaSource. It needs a table name, and refuses a table that cannot
// be a Zerobus target (a view, a non-Delta or an external table).
func (s *WarehouseSchemaSource) TableSchema(ctx context.Context, t *TargetOptions) (*TableSchema, error) {
	if t.Table == "" {
		return nil, FlagErrorf("--from warehouse needs a table name: give catalog.schema.table or --table")
	}
	w, err := s.F.Databricks().Warehouse(ctx, s.F)
	if err != nil {
		return nil, err
	}
	d, err := w.DescribeTable(ctx, t.Table)
	if err != nil {
		return nil, err
	}
	if err := d.CheckRecoverable(); err != nil {
		return nil, err
	}
	return &TableSchema{
		Source:            "warehouse",
		Table:             d.Name.String(),
		Root:              redact.String(d.Location),
		Schema:            d.Schema,
		PartitionColumns:  d.PartitionColumns,
		ColumnMappingMode: d.Properties["delta.columnMapping.mode"],
	}, nil
}
