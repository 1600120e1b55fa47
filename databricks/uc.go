package databricks

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/databricks/databricks-sdk-go/service/catalog"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// TableInfo is what Unity Catalog says about a table.
type TableInfo struct {
	Name             TableName
	TableID          string // UUID, the key for credential vending
	TableType        string // MANAGED, EXTERNAL, VIEW, …
	DataSourceFormat string // DELTA, PARQUET, …
	// StorageLocation is the table's storage root URL (s3://…, abfss://…, gs://…).
	StorageLocation string
	// Schema is built from the columns' type_json, in column position order.
	Schema schemadiff.Schema
	// PartitionColumns are the partition columns, in partition order.
	PartitionColumns []string
	Properties       map[string]string
}

// Root returns the parsed storage location.
func (t *TableInfo) Root() (storage.Location, error) {
	if t.StorageLocation == "" {
		return storage.Location{}, fmt.Errorf("table %s: %w: Unity Catalog reports no storage location", t.Name, ErrUnsupported)
	}
	loc, err := storage.Parse(t.StorageLocation)
	if err != nil {
		return storage.Location{}, fmt.Errorf("table %s: storage location: %w", t.Name, err)
	}
	return loc, nil
}

// CheckRecoverable reports why the table cannot hold Zerobus fallback files: a view or a
// non-Delta table has none, and a table without a storage location cannot be reached.
func (t *TableInfo) CheckRecoverable() error {
	switch strings.ToUpper(t.TableType) {
	case "VIEW", "MATERIALIZED_VIEW", "METRIC_VIEW":
		return fmt.Errorf("table %s is a %s: %w; name the Delta table Zerobus writes to", t.Name, strings.ToLower(t.TableType), ErrUnsupported)
	}
	if f := strings.ToUpper(t.DataSourceFormat); f != "" && f != "DELTA" {
		return fmt.Errorf("table %s has format %s: %w; Zerobus targets are Delta tables", t.Name, f, ErrUnsupported)
	}
	if t.StorageLocation == "" {
		return fmt.Errorf("table %s: %w: Unity Catalog reports no storage location", t.Name, ErrUnsupported)
	}
	return nil
}

// Table looks a table up in Unity Catalog by its three-part name (backquotes allowed). Errors
// wrap ErrNotFound (no such catalog, schema or table, or no privilege to see it),
// ErrPermissionDenied, ErrUnauthenticated, ErrRejected or ErrUnreachable.
func (c *Client) Table(ctx context.Context, name string) (*TableInfo, error) {
	tn, err := ParseTableName(name)
	if err != nil {
		return nil, err
	}
	op := "get table " + tn.String()
	ti, err := c.tables.Get(ctx, catalog.GetTableRequest{FullName: tn.String()})
	if err != nil {
		return nil, classifyAPI(op, c.cfg.Host, c.cfg.AuthType, err, apiHints{
			notFound: "check the catalog, schema and table names; Unity Catalog also answers not found when the identity lacks USE CATALOG or USE SCHEMA",
			denied:   "the identity needs USE CATALOG on the catalog, USE SCHEMA on the schema and SELECT on the table",
			rejected: "Unity Catalog refuses the lookup of this name; check the catalog, schema and table names",
		})
	}
	return tableInfoFrom(tn, ti)
}

func tableInfoFrom(tn TableName, ti *catalog.TableInfo) (*TableInfo, error) {
	out := &TableInfo{
		Name:             tn,
		TableID:          ti.TableId,
		TableType:        string(ti.TableType),
		DataSourceFormat: string(ti.DataSourceFormat),
		StorageLocation:  ti.StorageLocation,
		Properties:       ti.Properties,
	}
	if ti.CatalogName != "" && ti.SchemaName != "" && ti.Name != "" {
		out.Name = TableName{Catalog: ti.CatalogName, Schema: ti.SchemaName, Table: ti.Name}
	}
	s, err := SchemaFromUC(ti.Columns)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", out.Name, err)
	}
	out.Schema = s
	out.PartitionColumns = partitionColumns(ti.Columns)
	return out, nil
}

// partitionColumns returns the columns that carry a partition_index, ordered by it. The SDK
// records a present zero index in ForceSendFields.
func partitionColumns(cols []catalog.ColumnInfo) []string {
	type pc struct {
		name string
		idx  int
	}
	var ps []pc
	for _, c := range cols {
		if c.PartitionIndex > 0 || slices.Contains(c.ForceSendFields, "PartitionIndex") {
			ps = append(ps, pc{c.Name, c.PartitionIndex})
		}
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].idx < ps[j].idx })
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.name
	}
	return out
}

// SchemaFromUC builds a schema from Unity Catalog columns, ordered by position, from each
// column's type_json (Spark's StructField JSON, with Delta column-mapping metadata). A column
// without type_json, or with a type zbrecover cannot model, is an error naming the column.
func SchemaFromUC(cols []catalog.ColumnInfo) (schemadiff.Schema, error) {
	uc := make([]schemadiff.UCColumn, len(cols))
	for i, c := range cols {
		uc[i] = schemadiff.UCColumn{Name: c.Name, TypeText: c.TypeText, TypeName: string(c.TypeName),
			TypeJSON: c.TypeJson, Position: c.Position, Comment: c.Comment}
	}
	s, err := schemadiff.ParseUCColumns(uc)
	if err != nil {
		return schemadiff.Schema{}, fmt.Errorf("unity catalog %w", err)
	}
	return s, nil
}
