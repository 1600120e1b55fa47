// Package fakewarehouse is a local Databricks SQL warehouse for tests and the demo: an HTTP
// server on 127.0.0.1 that speaks the TCLIService Thrift protocol the databricks-sql-go driver
// uses, backed by DuckDB with the Databricks SQL dialect zbrecover needs.
//
// It is test and demo support only: DuckDB needs cgo, so the release binary must not import
// this package (without cgo, NewDuckDB and Start return an error).
//
// # Use
//
//	srv := fakewarehouse.New(t)                  // or Start(Options{…}) and Close()
//	db, _ := sql.Open("databricks", srv.DSN())   // http://token:…@127.0.0.1:<port>/sql/1.0/warehouses/fake?enableTelemetry=false
//	srv.Engine().Exec(ctx, "CREATE TABLE main.default.t (id BIGINT NOT NULL, …)")
//	loc, _ := srv.Engine().Location("main.default.t") // the table root; fallback files go under it
//
// Host, Port, HTTPPath and Token give the parts of the DSN for connector options. Requests
// and Statements return the request and statement logs; Inject adds faults.
//
// # Protocol
//
// Every statement is answered with direct results in COLUMN_BASED_SET form (status, result
// metadata, the first page and, when every row fits, closeOperation), so one statement is one
// HTTP request and the driver never waits its 1 s poll interval. Larger results page through
// FetchResults. Authentication is a bearer token: anything else is HTTP 401 with an
// X-Databricks-Reason-Phrase header. The driver's telemetry feature-flag GET is answered with
// no flags. Statement errors come back as ERROR_STATE with the Thrift sqlState set and the
// message "[ERROR_CLASS] … SQLSTATE: xxxxx", so dbsqlerr.DBExecutionError.SqlState() works.
//
// # SQL
//
// Names are catalog.schema.table (backticks allowed), resolved case-insensitively against the
// session's current catalog and schema (main.default at start). Supported statements:
//
//   - CREATE CATALOG | SCHEMA | TABLE (Spark types including STRUCT, ARRAY, MAP, DECIMAL,
//     TIMESTAMP, TIMESTAMP_NTZ; NOT NULL; COMMENT; USING DELTA; PARTITIONED BY; LOCATION;
//     TBLPROPERTIES; AS SELECT; OR REPLACE; IF NOT EXISTS), DROP, USE, SET, SHOW CATALOGS |
//     SCHEMAS | TABLES | TBLPROPERTIES, LIST 'path'.
//   - ALTER TABLE … ADD COLUMNS, ALTER COLUMN … TYPE (type widening, with the table property
//     delta.enableTypeWidening = true, as Delta requires), ALTER COLUMN … DROP NOT NULL | SET NOT
//     NULL | COMMENT, SET | UNSET TBLPROPERTIES.
//   - COPY INTO t FROM 'dir' | (SELECT … FROM 'dir') FILEFORMAT = PARQUET [VALIDATE [ALL | n
//     ROWS]] [FILES = (…) | PATTERN = '…'] [FORMAT_OPTIONS (…)] [COPY_OPTIONS (…)].
//   - DESCRIBE [TABLE] [EXTENDED] t [AS JSON], DESCRIBE HISTORY t [LIMIT n], DESCRIBE DETAIL t.
//   - SELECT (with parquet.`path` and read_files('path') sources), INSERT INTO | OVERWRITE,
//     MERGE INTO … USING … ON … WHEN [NOT] MATCHED … (INSERT * and UPDATE SET * by name),
//     UPDATE, DELETE, TRUNCATE.
//
// Queries run on DuckDB after a token-level rewrite (identifiers, string literals, table
// names, Spark types in casts, a few Spark functions and literals). Spark functions DuckDB does
// not know fail with UNRESOLVED_ROUTINE.
//
// # COPY INTO semantics
//
// As documented for Databricks: the directory form reads files recursively and skips names
// and folders starting with "_" or "." (FILES may still name such files); loaded files are
// tracked per table and skipped on later runs even if modified, unless 'force' = 'true';
// FILES names at most 1000 files and missing ones are ignored; one statement is one atomic
// commit. The result is num_affected_rows, num_inserted_rows, num_skipped_corrupt_files.
// With 'mergeSchema' = 'false' (the default) each file's schema must fit the table: names
// match case-insensitively; a column the table lacks fails with DELTA_METADATA_MISMATCH
// (42KDG); a missing nullable column is NULL; a missing NOT NULL column, or a NULL in one,
// fails with DELTA_NOT_NULL_CONSTRAINT_VIOLATED (23502); types must be equal except that
// tinyint, smallint and int (Parquet INT32) may go into a wider one of the three — any other
// difference (int into bigint, a decimal change, timestamp versus timestamp_ntz) fails with
// DELTA_FAILED_TO_MERGE_FIELDS (22005) and needs a CAST projection. Each file is checked on
// its own, so files with different schemas in one statement are each held to the table.
// Struct members follow the same rules (an extra member is DELTA_METADATA_MISMATCH, a missing
// NOT NULL member DELTA_NOT_NULL_CONSTRAINT_VIOLATED); mergeSchema does not add members.
// 'mergeSchema' = 'true' adds the missing columns. VALIDATE checks all of this, writes
// nothing and returns up to 50 rows of preview in the table's schema. A corrupt file fails
// the statement (FAILED_READ_FILE) unless FORMAT_OPTIONS ('ignoreCorruptFiles' = 'true'); a
// skipped file is not recorded as loaded. Every commit appears in DESCRIBE HISTORY with Delta's
// operation names (CREATE TABLE, COPY INTO, WRITE, MERGE, …) and string-valued
// operationMetrics (numFiles, numOutputRows, …).
//
// # Storage
//
// file:// URLs and local paths are read directly. Other schemes (s3://, gs://, abfss://) go
// through Options.Storage: the engine lists the source and copies the files it needs to its
// working directory before DuckDB reads them. Managed tables get a location under
// Options.StorageRoot (default file://<Dir>/warehouse); with Options.LocationOverlap, path
// reads under a managed table's location fail with INVALID_PARAMETER_VALUE.LOCATION_OVERLAP,
// as Unity Catalog may refuse them.
//
// # Faults
//
// Inject registers a Fault for matching requests: fail the Nth matching statement with an
// error class; run a statement (a COPY INTO commits) and drop the connection without a reply;
// answer 429 or 503 with Retry-After; keep a statement RUNNING for a while (the driver polls,
// and a context cancel sends CancelOperation). ExpireSessions makes open sessions invalid
// (HTTP 400 "Invalid SessionHandle", which the driver maps to driver.ErrBadConn).
//
// # Known differences from a real warehouse
//
// Results are sent in column form, never Arrow or CloudFetch. The data lives in memory. For
// tables at a local (file://) location the engine writes a Delta log (protocol, metaData with
// the schema, commitInfo for every version) so tools can read the schema from storage, but no
// data files and no add actions; a location that already holds a log is left alone; remote
// locations get no log. The exact texts of some error
// messages, the COPY INTO history parameters and the VALIDATE output shape are
// approximations. NULL values in nested NOT NULL fields are not rejected. Not implemented
// (clear UNSUPPORTED_FEATURE errors): views, volumes, CSV/JSON sources, column DEFAULT and
// GENERATED clauses, RENAME/DROP COLUMN, time travel.
package fakewarehouse
