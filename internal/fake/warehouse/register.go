package warehouse

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/delta"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/storage/local"
)

// RegisterTable registers the existing Delta table at root (a local path or URL) as
// catalog.schema.table, creating the catalog and schema when needed. Its schema, id,
// properties and partition columns come from its Delta log; later commits continue that log
// (version after version). A managed table's root is managed storage: path reads inside it
// are refused unless Unknowns.PathAccess allows them. The rows already in the table's data
// files are not loaded: the table starts empty in the warehouse.
func (e *DuckDB) RegisterTable(ctx context.Context, fullName, root string, managed bool) error {
	parts := strings.Split(fullName, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return fmt.Errorf("fakewarehouse: table name %q is not catalog.schema.table", fullName)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	loc, err := canonicalURL(root)
	if err != nil {
		return err
	}
	var be storage.Backend
	if p, ok := localPath(loc); ok {
		be = local.New(p)
	} else if e.opts.Storage != nil {
		if be, err = e.opts.Storage(ctx, loc); err != nil {
			return err
		}
	} else {
		return fmt.Errorf("fakewarehouse: no storage configured for %s", loc)
	}
	snap, err := delta.Read(ctx, be)
	if err != nil {
		return fmt.Errorf("fakewarehouse: register %s: %w", fullName, err)
	}
	cols, err := fieldsFromSchema(snap.Schema.Fields)
	if err != nil {
		return fmt.Errorf("fakewarehouse: register %s: %w", fullName, err)
	}
	cat, sch, name := strings.ToLower(parts[0]), strings.ToLower(parts[1]), strings.ToLower(parts[2])
	c, ok := e.catalogs[cat]
	if !ok {
		c = e.createCatalog(cat, "")
	}
	s, ok := c.schemas[sch]
	if !ok {
		s = &schemaMeta{name: sch, created: time.Now().UTC(), tables: map[string]*tableMeta{}}
		c.schemas[sch] = s
	}
	if _, exists := s.tables[name]; exists {
		return fmt.Errorf("fakewarehouse: table %s already exists", fullName)
	}
	props := map[string]string{}
	for k, v := range snap.Configuration {
		props[k] = v
	}
	t := &tableMeta{id: snap.TableID, catalog: cat, schema: sch, name: name, props: props, cols: cols,
		location: loc, managed: managed, partitionCols: snap.PartitionColumns, created: time.Now().UTC(),
		loaded: map[string]loadedFile{}, baseVersion: snap.Version + 1, phys: e.newPhys()}
	if t.id == "" {
		t.id = newUUID()
	}
	defs := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = duckIdent(c.Name) + " " + c.Type.Duck()
		if !c.Nullable {
			defs[i] += " NOT NULL"
		}
	}
	defs = append(defs, hiddenColumnDefs()...)
	// Row IDs continue above the high-water mark the log records, so that the rows of the
	// files already there (not loaded here) and the engine's never share one.
	hwm, err := logHighWaterMark(ctx, be)
	if err != nil {
		return fmt.Errorf("fakewarehouse: register %s: read the row ID high-water mark: %w", fullName, err)
	}
	t.nextRowID, t.loggedNextRowID = hwm+1, hwm+1
	t.rowTrackingFeature = slices.Contains(snap.WriterFeatures, "rowTracking")
	initRowTracking(t)
	if _, err := e.duckExec(ctx, fmt.Sprintf("CREATE TABLE %s (%s)", duckIdent(t.phys), strings.Join(defs, ", "))); err != nil {
		return e.classify(err)
	}
	// The log's current protocol and metaData are the baseline: the next commit writes them
	// again only when they change.
	if _, err := e.deltaActions(t, commit{Version: t.baseVersion}); err != nil {
		return err
	}
	s.tables[name] = t
	return nil
}

// RegisterTable registers an existing Delta table; see DuckDB.RegisterTable.
func (s *Server) RegisterTable(ctx context.Context, fullName, root string, managed bool) error {
	return s.duck.RegisterTable(ctx, fullName, root, managed)
}

// fieldsFromSchema converts a schemadiff schema (read from a Delta log) to the engine's
// fields, keeping column-mapping physical names and ids.
func fieldsFromSchema(fs []schemadiff.Field) ([]Field, error) {
	out := make([]Field, len(fs))
	for i, f := range fs {
		t, err := ParseType(f.Type.SQL())
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.Name, err)
		}
		if f.Type.Kind == schemadiff.Struct {
			nested, err := fieldsFromSchema(f.Type.Fields)
			if err != nil {
				return nil, err
			}
			t.Fields = nested
		}
		out[i] = Field{Name: f.Name, Type: t, Nullable: f.Nullable, Comment: f.Comment, PhysicalName: f.PhysicalName, ID: f.ID}
	}
	return out, nil
}

// TableInfo describes a table as Unity Catalog's tables API does.
type TableInfo struct {
	Catalog, Schema, Name string
	TableID               string
	Managed               bool
	Location              string
	// Schema is the table's schema with column-mapping names, as its Delta log holds it.
	Columns          schemadiff.Schema
	PartitionColumns []string
	Properties       map[string]string
}

// Tables returns every table, in name order.
func (e *DuckDB) Tables() ([]TableInfo, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []TableInfo
	for _, t := range e.allTables() {
		doc, err := json.Marshal(map[string]any{"type": "struct", "fields": DeltaFields(t.cols)})
		if err != nil {
			return nil, err
		}
		sch, err := schemadiff.ParseSchemaFile(doc)
		if err != nil {
			return nil, fmt.Errorf("fakewarehouse: schema of %s: %w", t.fullName(), err)
		}
		props := map[string]string{}
		for k, v := range t.props {
			props[k] = v
		}
		out = append(out, TableInfo{Catalog: t.catalog, Schema: t.schema, Name: t.name, TableID: t.id, Managed: t.managed,
			Location: t.location, Columns: sch, PartitionColumns: append([]string(nil), t.partitionCols...), Properties: props})
	}
	return out, nil
}
