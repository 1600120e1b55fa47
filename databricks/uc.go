package databricks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/databricks/databricks-sdk-go/service/catalog"
	"github.com/zbrecover/zbrecover/internal/suggest"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
)

// TableInfo is what Unity Catalog says about a table.
//
// Unity Catalog fills every field; DESCRIBE TABLE EXTENDED … AS JSON (Warehouse.DescribeTable)
// all but TableID and Owner.
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
	// Owner is the table's owner (a user, group or service principal).
	Owner string
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

// CheckRecoverable reports why the table cannot hold Zerobus fallback files: Zerobus Ingest
// writes only to Unity Catalog managed Delta tables, so a view, a table in another format or an
// external table has none, and a table without a storage location cannot be reached. The error
// wraps ErrUnsupported.
func (t *TableInfo) CheckRecoverable() error {
	return checkZerobusTarget(t.Name, t.TableType, t.DataSourceFormat, t.StorageLocation)
}

// checkZerobusTarget holds the rule of CheckRecoverable for both table sources (Unity Catalog's
// table_type and data_source_format, DESCRIBE … AS JSON's type and provider). Empty values are
// not held against the table.
func checkZerobusTarget(name TableName, tableType, format, location string) error {
	typ := strings.ToUpper(strings.TrimSpace(tableType))
	switch typ {
	case "VIEW", "MATERIALIZED_VIEW", "METRIC_VIEW":
		return fmt.Errorf("table %s is %s: %w; name the Delta table Zerobus writes to", name, tableKind(typ), ErrUnsupported)
	}
	if f := strings.ToUpper(strings.TrimSpace(format)); f != "" && f != "DELTA" {
		return fmt.Errorf("table %s has format %s: %w; Zerobus targets are Delta tables", name, f, ErrUnsupported)
	}
	if typ != "" && typ != "MANAGED" {
		return fmt.Errorf("table %s is %s: %w; Zerobus Ingest writes only to Unity Catalog managed Delta tables, "+
			"so only those have fallback files (to look at a storage location anyway, give its URL as TARGET)", name, tableKind(typ), ErrUnsupported)
	}
	if location == "" {
		return fmt.Errorf("table %s: %w: Unity Catalog reports no storage location", name, ErrUnsupported)
	}
	return nil
}

// tableKind spells a table type for a sentence: "a view", "an external table".
func tableKind(typ string) string {
	s := strings.ToLower(strings.ReplaceAll(typ, "_", " "))
	if !strings.HasSuffix(s, "view") && !strings.HasSuffix(s, "table") {
		s += " table"
	}
	if strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
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
		err = classifyAPI(op, c.cfg.Host, c.cfg.AuthType, err, apiHints{
			notFound: "check the catalog, schema and table names; Unity Catalog also answers not found when the identity lacks USE CATALOG or USE SCHEMA",
			denied:   "the identity needs USE CATALOG on the catalog, USE SCHEMA on the schema and SELECT on the table",
			rejected: "Unity Catalog refuses the lookup of this name; check the catalog, schema and table names",
		})
		var ae *APIError
		if errors.As(err, &ae) && ae.Kind == ErrNotFound {
			if hint := c.nearbyNames(ctx, tn); hint != "" {
				ae.Hint = hint
			}
		}
		return nil, err
	}
	return tableInfoFrom(tn, ti)
}

// nearbyNames says, for a table Unity Catalog does not know, which names the identity can see
// near it: the tables of its schema (one list), and when the schema itself is not found, the
// schemas of its catalog, and when that is not found either, the catalogs; the closest to
// the name given first, as a did-you-mean. It returns "" when the listing fails otherwise
// (the lookup's own advice then stands).
func (c *Client) nearbyNames(ctx context.Context, tn TableName) string {
	const unseen = "Unity Catalog also answers not found when the identity lacks USE CATALOG or USE SCHEMA"
	tables, err := c.Tables(ctx, tn.Catalog, tn.Schema)
	if err == nil {
		names := make([]string, len(tables))
		for i, t := range tables {
			names[i] = t.Name.Table
		}
		schema := tn.Catalog + "." + tn.Schema
		if len(names) == 0 {
			return fmt.Sprintf("schema %s holds no table the identity can see (%s)", schema, unseen)
		}
		if dym := suggest.Phrase(tn.Table, names, func(n string) string { return schema + "." + n }); dym != "" {
			return fmt.Sprintf("%s (tables of %s the identity can see: %d)", dym, schema, len(names))
		}
		return fmt.Sprintf("no table of %s has a name close to %s; its tables: %s", schema, tn.Table, suggest.List(names, 10))
	}
	if !errors.Is(err, ErrNotFound) {
		return ""
	}
	schemas, err := c.Schemas(ctx, tn.Catalog)
	if err == nil {
		names := make([]string, len(schemas))
		for i, s := range schemas {
			names[i] = s.Name
		}
		msg := fmt.Sprintf("the schema %s.%s is not found either (%s)", tn.Catalog, tn.Schema, unseen)
		if dym := suggest.Phrase(tn.Schema, names, func(n string) string { return tn.Catalog + "." + n }); dym != "" {
			return msg + "; " + dym
		}
		return msg + "; the schemas of " + tn.Catalog + ": " + suggest.List(names, 10)
	}
	if !errors.Is(err, ErrNotFound) {
		return ""
	}
	catalogs, err := c.Catalogs(ctx)
	if err != nil {
		return ""
	}
	names := make([]string, len(catalogs))
	for i, ct := range catalogs {
		names[i] = ct.Name
	}
	msg := fmt.Sprintf("the catalog %s is not found either (Unity Catalog also answers not found when the identity lacks USE CATALOG)", tn.Catalog)
	if dym := suggest.Phrase(tn.Catalog, names, func(n string) string { return n }); dym != "" {
		return msg + "; " + dym
	}
	return msg + "; the catalogs: " + suggest.List(names, 10)
}

// VolumeStorageLocation returns the storage location Unity Catalog records for the volume
// catalog.schema.volume (GET /api/2.1/unity-catalog/volumes/<full name>): where its files
// are in the cloud store, "" when the answer names none. Errors wrap ErrNotFound (no such
// volume, or no privilege to see it), ErrPermissionDenied, ErrUnauthenticated, ErrRejected or
// ErrUnreachable.
func (c *Client) VolumeStorageLocation(ctx context.Context, fullName string) (string, error) {
	v, err := c.volumes.ReadByName(ctx, fullName)
	if err != nil {
		return "", classifyAPI("get volume "+fullName, c.cfg.Host, c.cfg.AuthType, err, apiHints{
			notFound: "check the catalog, schema and volume names; Unity Catalog also answers not found when the identity lacks USE CATALOG or USE SCHEMA",
			denied:   "the identity needs USE CATALOG, USE SCHEMA and READ VOLUME",
			rejected: "Unity Catalog refuses the lookup of this volume",
		})
	}
	return v.StorageLocation, nil
}

// Volumes lists the names of the volumes of a schema the identity may see, every page of them
// (GET /api/2.1/unity-catalog/volumes). Errors wrap ErrNotFound (no such catalog or schema, or
// no privilege to see it), ErrPermissionDenied, ErrUnauthenticated, ErrRejected or
// ErrUnreachable.
func (c *Client) Volumes(ctx context.Context, catalogName, schemaName string) ([]string, error) {
	list, err := c.volumes.ListAll(ctx, catalog.ListVolumesRequest{CatalogName: catalogName, SchemaName: schemaName})
	if err != nil {
		return nil, classifyAPI("list the volumes of "+catalogName+"."+schemaName, c.cfg.Host, c.cfg.AuthType, err, apiHints{
			notFound: "check the catalog and schema names; Unity Catalog also answers not found when the identity lacks USE CATALOG or USE SCHEMA",
			denied:   "the identity needs USE CATALOG on the catalog and USE SCHEMA on the schema",
			rejected: "Unity Catalog refuses to list the volumes of this schema",
		})
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		out = append(out, v.Name)
	}
	return out, nil
}

// MissingVolumeError is a volume Unity Catalog does not know: it does not exist, or the
// identity may not see it (Unity Catalog answers not found for both). It wraps ErrNotFound.
type MissingVolumeError struct {
	Catalog, Schema, Volume string
	// Volumes are the volumes of the schema the identity can see; Listed is false when they
	// could not be listed (SchemaMissing: because the schema is not found either).
	Volumes       []string
	Listed        bool
	SchemaMissing bool
}

func (e *MissingVolumeError) Error() string {
	schema := e.Catalog + "." + e.Schema
	msg := fmt.Sprintf("volume %s.%s does not exist, or the identity may not see it", schema, e.Volume)
	switch {
	case e.SchemaMissing:
		return msg + fmt.Sprintf("; the schema %s is not found either (check the catalog and schema names; Unity Catalog also answers not found when the identity lacks USE CATALOG or USE SCHEMA)", schema)
	case !e.Listed:
		return msg
	case len(e.Volumes) == 0:
		return msg + fmt.Sprintf("; the schema %s has no volume the identity can see", schema)
	}
	if dym := suggest.Phrase(e.Volume, e.Volumes, func(n string) string { return schema + "." + n }); dym != "" {
		msg += "; " + dym
	}
	return msg + fmt.Sprintf(" (the volumes of %s: %s)", schema, suggest.List(e.Volumes, 10))
}

// Closest returns the volumes of the schema whose names are close to the one asked for, the
// closest first.
func (e *MissingVolumeError) Closest() []string { return suggest.Closest(e.Volume, e.Volumes, 3) }

// Is reports ErrNotFound.
func (e *MissingVolumeError) Is(target error) bool { return target == ErrNotFound }

// CheckVolume returns nil when Unity Catalog knows the volume catalog.schema.volume; a
// *MissingVolumeError, with the volumes of the schema the identity can see (one list), when
// it does not; and the lookup's error (ErrPermissionDenied, ErrUnreachable, …) otherwise.
func (c *Client) CheckVolume(ctx context.Context, catalogName, schemaName, volumeName string) error {
	_, err := c.VolumeStorageLocation(ctx, catalogName+"."+schemaName+"."+volumeName)
	if err == nil || !errors.Is(err, ErrNotFound) {
		return err
	}
	me := &MissingVolumeError{Catalog: catalogName, Schema: schemaName, Volume: volumeName}
	vols, lerr := c.Volumes(ctx, catalogName, schemaName)
	switch {
	case lerr == nil:
		me.Volumes, me.Listed = vols, true
	case errors.Is(lerr, ErrNotFound):
		me.SchemaMissing = true
	}
	return me
}

// TableEntry is a table as Unity Catalog lists it (no columns).
type TableEntry struct {
	Name             TableName
	TableID          string
	TableType        string
	DataSourceFormat string
	StorageLocation  string
}

// CatalogEntry is a catalog as Unity Catalog lists it.
type CatalogEntry struct {
	Name string
	// Type is the catalog_type: MANAGED_CATALOG, DELTASHARING_CATALOG, FOREIGN_CATALOG,
	// SYSTEM_CATALOG, INTERNAL_CATALOG, … ("" when Unity Catalog leaves it out).
	Type string
}

// SchemaEntry is a schema as Unity Catalog lists it.
type SchemaEntry struct {
	Catalog, Name string
}

// Catalogs lists the catalogs the identity may use, every page of them
// (GET /api/2.1/unity-catalog/catalogs). Errors wrap ErrPermissionDenied,
// ErrUnauthenticated, ErrRejected or ErrUnreachable.
func (c *Client) Catalogs(ctx context.Context) ([]CatalogEntry, error) {
	list, err := c.catalogs.ListAll(ctx, catalog.ListCatalogsRequest{})
	if err != nil {
		return nil, classifyAPI("list the catalogs", c.cfg.Host, c.cfg.AuthType, err, apiHints{
			notFound: "the workspace has no Unity Catalog metastore assigned",
			denied:   "the identity may not list the metastore's catalogs",
			rejected: "Unity Catalog refuses to list the catalogs",
		})
	}
	out := make([]CatalogEntry, 0, len(list))
	for _, ci := range list {
		out = append(out, CatalogEntry{Name: ci.Name, Type: string(ci.CatalogType)})
	}
	return out, nil
}

// Schemas lists the schemas of a catalog the identity may use, every page of them
// (GET /api/2.1/unity-catalog/schemas). Errors wrap ErrNotFound (no such catalog, or no USE
// CATALOG on it), ErrPermissionDenied, ErrUnauthenticated, ErrRejected or ErrUnreachable.
func (c *Client) Schemas(ctx context.Context, catalogName string) ([]SchemaEntry, error) {
	list, err := c.schemas.ListAll(ctx, catalog.ListSchemasRequest{CatalogName: catalogName})
	if err != nil {
		return nil, classifyAPI("list the schemas of "+catalogName, c.cfg.Host, c.cfg.AuthType, err, apiHints{
			notFound: "check the catalog name; Unity Catalog also answers not found when the identity lacks USE CATALOG",
			denied:   "the identity needs USE CATALOG on the catalog",
			rejected: "Unity Catalog refuses to list this catalog",
		})
	}
	out := make([]SchemaEntry, 0, len(list))
	for _, si := range list {
		out = append(out, SchemaEntry{Catalog: orName(si.CatalogName, catalogName), Name: si.Name})
	}
	return out, nil
}

func orName(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Tables lists the tables of a schema the identity may see, every page of them. Errors wrap
// ErrNotFound, ErrPermissionDenied, ErrUnauthenticated, ErrRejected or ErrUnreachable.
func (c *Client) Tables(ctx context.Context, catalogName, schemaName string) ([]TableEntry, error) {
	var out []TableEntry
	err := c.EachTable(ctx, catalogName, schemaName, func(t TableEntry) error {
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EachTable calls fn for each table of a schema the identity may see, page after page as
// Unity Catalog returns them (columns left out), in the caller's goroutine: the first tables
// reach fn while later pages are still to be requested. It stops at fn's first error and
// returns it. Listing errors wrap ErrNotFound, ErrPermissionDenied, ErrUnauthenticated,
// ErrRejected or ErrUnreachable.
func (c *Client) EachTable(ctx context.Context, catalogName, schemaName string, fn func(TableEntry) error) error {
	it := c.tables.List(ctx, catalog.ListTablesRequest{CatalogName: catalogName, SchemaName: schemaName, OmitColumns: true})
	for it.HasNext(ctx) {
		t, err := it.Next(ctx)
		if err != nil {
			return classifyAPI("list the tables of "+catalogName+"."+schemaName, c.cfg.Host, c.cfg.AuthType, err, apiHints{
				notFound: "check the catalog and schema names; Unity Catalog also answers not found when the identity lacks USE CATALOG or USE SCHEMA",
				denied:   "the identity needs USE CATALOG on the catalog and USE SCHEMA on the schema",
				rejected: "Unity Catalog refuses to list this schema",
			})
		}
		e := TableEntry{Name: TableName{Catalog: orName(t.CatalogName, catalogName), Schema: orName(t.SchemaName, schemaName), Table: t.Name},
			TableID: t.TableId, TableType: string(t.TableType), DataSourceFormat: string(t.DataSourceFormat), StorageLocation: t.StorageLocation}
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// CheckRecoverable reports why the listed table cannot hold Zerobus fallback files, as
// TableInfo.CheckRecoverable does. The error wraps ErrUnsupported.
func (t TableEntry) CheckRecoverable() error {
	return checkZerobusTarget(t.Name, t.TableType, t.DataSourceFormat, t.StorageLocation)
}

func tableInfoFrom(tn TableName, ti *catalog.TableInfo) (*TableInfo, error) {
	out := &TableInfo{
		Name:             tn,
		TableID:          ti.TableId,
		TableType:        string(ti.TableType),
		DataSourceFormat: string(ti.DataSourceFormat),
		StorageLocation:  ti.StorageLocation,
		Properties:       ti.Properties,
		Owner:            ti.Owner,
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
