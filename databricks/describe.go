package databricks

import (
	"context"
	"fmt"

	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/sqlstmt"
)

// DescribeTable reads a table's schema and location through the warehouse with
// DESCRIBE TABLE EXTENDED <table> AS JSON (read with QueryContext; the report form is never
// parsed, since it truncates wide structs). Errors from the statement are *SQLError; a document
// with a type zbrecover cannot model is an error naming the column.
// The result is the table's TableInfo as DESCRIBE gives it: no TableID, no Owner.
func (w *Warehouse) DescribeTable(ctx context.Context, name string) (*TableInfo, error) {
	tn, err := ParseTableName(name)
	if err != nil {
		return nil, err
	}
	stmt := sqlstmt.DescribeJSON(tn)
	res, err := w.QueryAll(ctx, stmt)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", tn, err)
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) < 1 {
		return nil, fmt.Errorf("describe %s: expected one json_metadata row, got %d row(s)", tn, len(res.Rows))
	}
	var doc string
	switch v := res.Rows[0][0].(type) {
	case string:
		doc = v
	case []byte:
		doc = string(v)
	default:
		return nil, fmt.Errorf("describe %s: json_metadata is a %T, want a string", tn, v)
	}
	out, err := describeFromJSON(tn, []byte(doc))
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", tn, err)
	}
	return out, nil
}

func describeFromJSON(tn TableName, doc []byte) (*TableInfo, error) {
	d, err := schemadiff.ParseDescribeTable(doc)
	if err != nil {
		return nil, err
	}
	if len(d.Schema.Fields) == 0 {
		return nil, fmt.Errorf("describe json: the document lists no columns")
	}
	out := &TableInfo{Name: tn, TableType: d.Type, DataSourceFormat: d.Provider, StorageLocation: d.Location,
		Schema: d.Schema, PartitionColumns: d.PartitionColumns, Properties: d.TableProperties}
	if d.CatalogName != "" && d.SchemaName != "" && d.TableName != "" {
		out.Name = TableName{Catalog: d.CatalogName, Schema: d.SchemaName, Table: d.TableName}
	}
	return out, nil
}
