// Package tableref resolves what a command works on, TARGET, into one value: the table's name,
// its identity (the Unity Catalog table_id, else the Delta log's metaData.id), its storage
// location as a structured storage.Location (SQL is built from it, never from a display
// string) and the decorated storage backend rooted there.
//
// TARGET is a table name (catalog.schema.table, resolved through Unity Catalog to its storage
// root and credentials), a storage root URL, or both (--table and --root). The table's schema
// comes from one of four Sources (the Delta log, the SQL warehouse, Unity Catalog or a schema
// file), each returning a *schemadiff.Table.
//
// tableref knows nothing of commands, flags or rendering: cmd parses flags into a Spec, builds a
// Resolver once per run and hands the Ref to inspect, reload, verify and cleanup.
package tableref
