// Package warehouse is a local Databricks SQL warehouse for tests and the demo: an HTTP
// server on 127.0.0.1 that speaks the TCLIService Thrift protocol the databricks-sql-go driver
// uses, backed by DuckDB with the Databricks SQL dialect zbrecover needs.
//
// It is test and demo support only: DuckDB needs cgo, so the release binary must not import
// this package (without cgo, NewDuckDB and Start return an error).
//
// # Use
//
//	srv := warehouse.New(t)                  // or Start(Options{…}) and Close()
//	db, _ := sql.Open("databricks", srv.DSN())   // http://token:…@127.0.0.1:<port>/sql/1.0/warehouses/fake?enableTelemetry=false
//	srv.Engine().Exec(ctx, "CREATE TABLE main.default.t (id BIGINT NOT NULL, …)")
//	loc, _ := srv.Engine().Location("main.default.t") // the table root; fallback files go under it
//
// Host, Port, HTTPPath and Token give the parts of the DSN for connector options. Requests
// and Statements return the request and statement logs (each statement with the versions it
// committed); Inject adds faults, SetUnknowns picks the answers to unknown behaviours,
// Zerobus, CommitLookalike and AddTrigger add other writers. internal/fake/workspace serves all of
// it on a workspace's port, and makes each switch reachable from outside the process (its
// control endpoints under /api/2.0/fake/ and `zbrecover demo serve --faults FILE`).
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
//     TBLPROPERTIES; AS SELECT; OR REPLACE; IF NOT EXISTS), DROP, USE, SET, RESET, SHOW CATALOGS |
//     SCHEMAS | TABLES | TBLPROPERTIES, LIST 'path'.
//   - ALTER TABLE … ADD COLUMNS, ALTER COLUMN … TYPE (type widening, with the table property
//     delta.enableTypeWidening = true, as Delta requires), ALTER COLUMN … DROP NOT NULL | SET NOT
//     NULL | COMMENT, SET | UNSET TBLPROPERTIES, ADD CONSTRAINT … CHECK (…), DROP CONSTRAINT,
//     RENAME COLUMN and DROP COLUMN[S] (with column mapping). CREATE | DROP VOLUME.
//   - COPY INTO t FROM 'dir' | (SELECT … FROM 'dir') FILEFORMAT = PARQUET [VALIDATE [ALL | n
//     ROWS]] [FILES = (…) | PATTERN = '…'] [FORMAT_OPTIONS (…)] [COPY_OPTIONS (…)].
//   - DESCRIBE [TABLE] [EXTENDED] t [AS JSON], DESCRIBE HISTORY t [LIMIT n], DESCRIBE DETAIL t.
//   - SELECT (with parquet.`path` and read_files('path') sources), INSERT INTO | OVERWRITE,
//     MERGE INTO … USING … ON … WHEN [NOT] MATCHED … (INSERT * and UPDATE SET * by name),
//     UPDATE, DELETE, TRUNCATE, RESTORE, OPTIMIZE t.
//   - _metadata.file_path, _metadata.file_name and, with row tracking, _metadata.row_id and
//     _metadata.row_commit_version, in SELECT and in a DELETE's or UPDATE's condition.
//
// Queries run on DuckDB after a token-level rewrite (identifiers, string literals, table
// names, Spark types in casts, a few Spark functions and literals). Spark functions DuckDB does
// not know fail with UNRESOLVED_ROUTINE.
//
// # Behaviours and their sources
//
// Each behaviour is labelled with its source: DOC (Databricks or Microsoft Learn docs), CODE
// (Spark, Delta or driver source), OBS (real warehouse output someone published), or
// "unknown: switch X" (a field of Unknowns, set with Options.Unknowns or at run time with
// SetUnknowns; the default is named). The evidence is in notes/databricks-behaviour.md.
//
//   - Directory reads (COPY INTO, parquet.`dir`, read_files): only the files directly in the
//     folder are read; subfolders only with FORMAT_OPTIONS ('recursiveFileLookup' = 'true').
//     Folders named k=v are partition columns (typed int, bigint, double, date or string by
//     inference); then only the files of partition folders are read, and partition folders
//     under different bases or naming different columns fail (CONFLICTING_DIRECTORY_STRUCTURES,
//     CONFLICTING_PARTITION_COLUMN_NAMES). Names starting with "_" (without "=") or "." are
//     skipped. CODE: Spark PartitioningAwareFileIndex.allFiles, PartitioningUtils; DOC:
//     recursiveFileLookup. PATTERN globs match relative paths at any depth (DOC examples).
//   - Glob characters in read paths: read_files and parquet.`…` take their path as a Hadoop
//     glob (DOC: read_files "Can contain globs"; CODE: Spark DataSource
//     .checkAndGlobPathIfNecessary): "*" "?" "[…]" "[^…]" "{a,b}" within a path component, a
//     backslash escaping the next character, a glob matching nothing is PATH_NOT_FOUND.
//     Whether COPY INTO globs its FROM folder and FILES entries is unknown: switch GlobPaths
//     (default false: literal, so "[b]/" is the folder named "[b]" and "a*.parquet" in FILES
//     the file of that name; true: Hadoop globs as above). Names with non-ASCII characters are
//     read as they are either way.
//   - Multi-file schema: the first file's (listing order, or FILES order); columns only later
//     files have are dropped, columns they lack are NULL. FORMAT_OPTIONS mergeSchema merges the
//     files' schemas (CANNOT_MERGE_SCHEMAS on a type conflict) and never evolves the table;
//     only COPY_OPTIONS ('mergeSchema' = 'true') adds table columns. CODE: Spark
//     ParquetFileFormat.inferSchema; DOC: COPY INTO options. That the first FILES entry is the
//     "first file" is an assumption.
//   - Loaded files: tracked per table by path and skipped on later runs even if modified,
//     unless 'force' = 'true'; FILES names at most 1000 files; missing ones are skipped
//     (ignoreMissingFiles); one statement is one atomic commit (DOC). The result is
//     num_affected_rows, num_inserted_rows, num_skipped_corrupt_files (OBS).
//   - Schema enforcement (COPY_OPTIONS mergeSchema false): names match case-insensitively; a
//     source column the table lacks is COPY_INTO_SCHEMA_MISMATCH_WITH_TARGET_TABLE (42KDG, OBS);
//     a missing NOT NULL column is DELTA_MISSING_NOT_NULL_COLUMN_VALUE (23502), a NULL in one
//     DELTA_NOT_NULL_CONSTRAINT_VIOLATED (23502), a missing NOT NULL struct member
//     DELTA_NOT_NULL_COLUMN_NOT_FOUND_IN_STRUCT (42K09) (CODE: Delta error classes); types must
//     be equal except tinyint, smallint and int into a wider one of the three: anything else
//     (int into bigint, a decimal change, timestamp versus timestamp_ntz) is
//     DELTA_FAILED_TO_MERGE_FIELDS (22005) and needs a CAST projection (CODE + OBS). An extra
//     struct member is a schema mismatch; mergeSchema does not add members.
//   - A nullable struct member missing from the file: unknown: switch
//     RefuseMissingNestedMember (default false: NULL, as streaming writes do; true:
//     DELTA_INSERT_COLUMN_ARITY_MISMATCH, as a batch INSERT does, CODE: delta-io/delta PR 3691).
//   - Path reads inside a managed table's storage: DOC says path access to managed tables is
//     not supported; for COPY INTO on the _zerobus folder it is unknown: switch PathAccess
//     (default OverlapBracketed: "[INVALID_PARAMETER_VALUE.LOCATION_OVERLAP] Input path url '…'
//     overlaps with managed storage within 'CheckPathAccess' call. SQLSTATE: 22023";
//     OverlapPlain: the form a warehouse's LIST gave (OBS), no brackets, "within 'ListFiles'
//     call."; OverlapNoSQLState: no SQLSTATE; OverlapAllowed). Volumes are not managed storage.
//   - FILES entries that are subpaths ('a/b.parquet') or absolute URIs inside the FROM folder:
//     unknown: switch RefuseFilesPaths (default false: accepted; DOC examples use bare names).
//   - Concurrent COPY INTO of the same files: DOC says a transaction conflict; the class is
//     unknown: switch CopyConflict (default ConflictConcurrentAppend: DELTA_CONCURRENT_APPEND,
//     2D521; ConflictConcurrentCopyInto: TRANSACTION_CONCURRENT_COPY_INTO, 25000; ConflictNone:
//     the second statement skips the loaded files and succeeds). A statement's snapshot is the
//     engine's commit count when it arrived; it fails when a later commit loaded one of its
//     files.
//   - A COPY INTO that loads nothing: unknown: switch CommitEmptyCopy (default false: no
//     version).
//   - Errors without a SQLSTATE: unknown (real texts are seen without one, OBS): switch
//     NoSQLState (default false: the Thrift sqlState is set and the text ends "SQLSTATE: x").
//   - VALIDATE [ALL | n ROWS]: checks all of the above and CHECK constraints, writes nothing and
//     returns up to 50 preview rows in the table's schema (DOC; the shape for ALL is an
//     approximation). A corrupt file fails the statement (FAILED_READ_FILE) unless
//     FORMAT_OPTIONS ('ignoreCorruptFiles' = 'true'); a skipped file is not recorded as loaded
//     (DOC).
//   - DESCRIBE HISTORY: the documented columns plus engineInfo (OBS); operations COPY INTO,
//     WRITE, MERGE, CREATE TABLE, ADD COLUMNS, RENAME COLUMN, DROP COLUMNS, ADD CONSTRAINT, …
//     (CODE: DeltaOperations); metrics are strings. COPY INTO: numFiles and numOutputBytes
//     count the data files written (one per commit here), not the source files (DOC/CODE, OBS);
//     numOutputRows; numSkippedCorruptFiles always present; operationParameters
//     {"statsOnLoad":"false"} (OBS). MERGE: numSourceRows, numTargetRowsInserted, …Updated,
//     …Deleted, …Copied, numTargetFilesAdded/Removed, executionTimeMs, … (CODE). userName is
//     Options.UserName, engineInfo Databricks-Runtime/fake-warehouse.
//   - Commit metadata (DOC: "Enrich Delta Lake tables with custom metadata"): SET
//     spark.databricks.delta.commitInfo.userMetadata = '<text>' keeps the text in the session,
//     and every commit a later statement of that session makes carries it (DESCRIBE HISTORY
//     userMetadata, the Delta log's commitInfo.userMetadata); an empty SET or RESET of the key
//     clears it; other sessions' commits do not carry it. Whether a SQL warehouse accepts the
//     SET is unknown: switch RefuseUserMetadata (default false; true: SET and RESET of the key
//     fail with CONFIG_NOT_AVAILABLE, SQLSTATE 42K0I, "Configuration <key> is not available.",
//     DOC: Databricks error conditions).
//   - Identity in history: whether a service principal's history userName equals what
//     current_user() returns is unknown: switch HistoryUserName (default empty: both are
//     Options.UserName; set: commits record this name, current_user() still returns the
//     session user).
//   - Commits that remove data (CODE: Delta DeltaOperations, DeltaOperationMetrics): DELETE
//     and UPDATE (operationParameters predicate, the WHERE text as a JSON array; metrics
//     numDeletedRows or numUpdatedRows, numCopiedRows, numRemovedFiles, numAddedFiles,
//     numRemovedBytes, numAddedBytes, …), INSERT OVERWRITE (WRITE, mode Overwrite, the WRITE
//     metrics numFiles, numOutputRows, numOutputBytes), TRUNCATE (numRemovedFiles,
//     executionTimeMs) and MERGE (predicate, matchedPredicates, notMatchedPredicates;
//     numTargetRowsDeleted/Updated/Inserted/Copied, numTargetFilesRemoved/Added, …). A
//     statement that updates or deletes rows rewrites the files it touches (copy-on-write, as
//     Delta does without deletion vectors): it removes the data files holding a row it
//     deleted or changed and adds one file of their remaining rows and the changed ones; other
//     files stay live. The log's add and remove actions describe the
//     table's rows at every version; removed files stay on disk (no VACUUM). CREATE OR
//     REPLACE TABLE removes the old files; CREATE TABLE AS SELECT writes a data file.
//   - RESTORE [TABLE] t [TO] VERSION AS OF n | TIMESTAMP AS OF 'ts' (CODE: Delta
//     RestoreTableCommand): the rows, schema and properties of version n come back from the
//     files live at it; the commit (operation RESTORE, operationParameters version or
//     timestamp) removes the files added since and adds back those removed since, with the
//     metrics tableSizeAfterRestore, numOfFilesAfterRestore, numRemovedFiles,
//     numRestoredFiles, removedFilesSize, restoredFilesSize, which are also its result. A
//     version past the latest is DELTA_CANNOT_RESTORE_TABLE_VERSION (22003). Refused with
//     UNSUPPORTED_FEATURE where the engine cannot reconstruct the version: tables whose data
//     files it does not keep (remote locations, a Delta log it did not write) and versions of
//     a registered table before the engine's first. COPY INTO's loaded-files state is kept
//     by RESTORE (what Databricks does there is not known).
//   - MERGE schema evolution (DOC: MERGE INTO, automatic schema evolution): with MERGE WITH
//     SCHEMA EVOLUTION INTO or the session's spark.databricks.delta.schema.autoMerge.enabled =
//     true, INSERT * and UPDATE SET * add the source's columns the target lacks to the target
//     (in the MERGE's own version) and leave target columns the source lacks alone (NULL when
//     inserting); named clauses (INSERT (c1, …) VALUES (s.c1, …)) never evolve. Whether a
//     warehouse's admin turned autoMerge on is unknown: switch SchemaAutoMerge (default false).
//   - An INSERT of no row commits a WRITE of 0 rows (carrying the session's userMetadata), as
//     Databricks was seen to do; whether every warehouse does (Delta can skip empty commits)
//     is unknown: switch SkipEmptyCommits (default false; true: no version).
//     Struct members are not evolved.
//   - Row tracking (PROTOCOL: Row Tracking; rowtracking.go): with the table property
//     delta.enableRowTracking = true (at CREATE, or by ALTER TABLE, which backfills IDs for the
//     rows there, re-adding their files in the same commit), every add action carries
//     baseRowId and defaultRowCommitVersion, the version records the high-water mark (domain
//     metadata delta.rowTracking, rowIdHighWaterMark), the protocol lists the writer features
//     rowTracking and domainMetadata, and the configuration names the materialized columns. A
//     commit's rows are [baseRowId, baseRowId + numRecords − 1] by _metadata.row_id; stable
//     IDs survive UPDATE, MERGE and OPTIMIZE (rows an UPDATE or MERGE changes take the
//     commit's _metadata.row_commit_version; rows OPTIMIZE moves keep theirs). Without row
//     tracking, _metadata.row_id is FIELD_NOT_FOUND (42704). _metadata.file_path is the
//     table's location, "/", and the add action's path. SELECT * never shows _metadata.
//   - OPTIMIZE t (CODE: Delta OptimizeTableCommand): rewrites the live data files into one
//     when there are two or more (else commits nothing); operation OPTIMIZE with
//     operationParameters predicate, zOrderBy and auto, adds and removes with dataChange
//     false, and the metrics numRemovedFiles, numAddedFiles, numRemovedBytes,
//     numAddedBytes, min/p25/p50/p75/maxFileSize, numDeletionVectorsRemoved.
//   - _metadata in a DELETE's condition: unknown: switch RefuseMetadataInDelete (default
//     false: taken; true: UNRESOLVED_COLUMN.WITH_SUGGESTION, 42703, nothing committed;
//     SELECT takes _metadata either way).
//   - MERGE: INSERT * and UPDATE SET * by name; a target column the source lacks is
//     DELTA_MERGE_UNRESOLVED_EXPRESSION (42601) (CODE); source duplicates are all inserted.
//   - CHECK constraints (CODE: Delta): ALTER TABLE … ADD CONSTRAINT c CHECK (expr) checks the
//     existing rows (DELTA_NEW_CHECK_CONSTRAINT_VIOLATION, 23512) and is kept as the table
//     property delta.constraints.c; every write (COPY INTO, VALIDATE, INSERT, MERGE, UPDATE,
//     Zerobus) is checked: DELTA_VIOLATE_CONSTRAINT_WITH_VALUES (23001). DROP CONSTRAINT [IF
//     EXISTS]. A CHECK in CREATE TABLE or in TBLPROPERTIES is refused, never ignored.
//   - Column mapping (delta.columnMapping.mode = name, CODE: Delta): new columns get
//     delta.columnMapping.id and physicalName col-<uuid> in the log (a table switched to the
//     mode keeps its names as physical names); RENAME COLUMN changes the logical name only;
//     DROP COLUMN[S] removes columns from the schema; without the mode both are refused
//     (DELTA_UNSUPPORTED_RENAME_COLUMN / _DROP_COLUMN). Data files are written with physical
//     names (top-level columns and struct members; members inside arrays and maps keep their
//     names).
//   - Zerobus (OBS): ZerobusWriter commits blind-append WRITE versions (engineInfo Zerobus,
//     isBlindAppend true, a service principal as userName) on demand (Flush, FlushN) or at a
//     rate (Start … Close) while other statements run; blind appends do not conflict with COPY
//     INTO. A version costs two DuckDB statements and a log file (about 1–2 ms), so a writer
//     started at a 1 ms interval puts thousands of versions between a statement and its
//     re-check; a version keeps under 1 KB in memory (its log lines are on disk), and DESCRIBE
//     HISTORY t LIMIT n reads only the newest n (about 20 µs for 10 of 20,000 versions in the
//     engine, BenchmarkDescribeHistoryLimit). With ZerobusOptions.Park a writer keeps the
//     table's schema at its start as its producers' and, once a change makes the records no
//     longer fit (a producer column dropped or retyped, a NOT NULL column added), writes each
//     flush as one Parquet file in the producers' schema under
//     <root>/_zerobus/table_rejected_parquets/<date>/ instead of committing it (UNKNOWN: the
//     real fallback file names and layout; the tool lists recursively and never relies on
//     them), and commits again once the table takes them.
//   - Other writers with the same identity (OBS: a table has other writers, and history
//     tells commits apart only by operation, user and metrics): CommitLookalike commits a
//     COPY INTO (numOutputRows N, a blind append) or MERGE (numTargetRowsInserted N) by the
//     warehouse's own userName (or a given one), engineInfo and clusterId, optionally with a
//     userMetadata, really inserting N synthetic rows. AddTrigger commits such a look-alike
//     after every statement matching a regular expression that committed (with the rows it
//     inserted), or a burst of K Zerobus versions right before every matching statement.
//   - Volumes: CREATE VOLUME c.s.v makes /Volumes/c/s/v/… (and dbfs:/Volumes/…) a folder under
//     the working directory that path reads and COPY INTO accept; a missing volume is
//     UC_VOLUME_NOT_FOUND. internal/fake/workspace serves the Files API on it.
//
// # Storage
//
// file:// URLs and local paths are read directly. Other schemes (s3://, gs://, abfss://) go
// through Options.Storage: the engine lists the source and copies the files it needs to its
// working directory before DuckDB reads them. Managed tables get a location under
// Options.StorageRoot (default file://<Dir>/warehouse); path reads under a managed table's
// location are refused by default (see Unknowns.PathAccess). RegisterTable makes an existing
// Delta root a managed or external table whose later commits continue its log.
//
// # Faults
//
// Inject (or AddFault, which returns an error instead of panicking) registers a Fault for
// requests of one Thrift method; for ExecuteStatement, statements matching a regular
// expression. It fires on the matches after Skip, Times times (0 once, negative always), on
// every match or on a Percent of them chosen by a seeded pseudo-random sequence (the same
// Seed fires on the same matches). Actions:
//
//   - Error: the statement fails with an error class and SQLSTATE and does not run.
//   - HTTPStatus (429, 503, … with Retry-After): the request is refused before it runs; the
//     driver retries 429 and 503, ExecuteStatement included (CODE: databricks-sql-go
//     RetryPolicy).
//   - DropRequest: the connection is closed without a reply before the request is processed;
//     a statement never runs (statement state DROPPED): the cut before it reached the
//     warehouse.
//   - DropResponse: the request is processed (a statement runs to completion and commits)
//     and the connection is closed without a reply: the lost acknowledgement.
//   - Delay: the statement is answered PENDING, stays queued for the delay, then runs; the
//     driver polls GetOperationStatus (its fixed 1 s interval), and a CancelOperation during
//     the delay cancels it. A fault on GetOperationStatus (HTTPStatus, DropRequest,
//     DropResponse, Delay) hits the polls while the statement completes on the warehouse.
//   - CommitThenError: the statement runs to completion (it commits) and the answer is an
//     error, such as PostCommitHookFailed: DELTA_POST_COMMIT_HOOK_FAILED (2DKD0),
//     "Committing to the Delta table version N succeeded but error while executing
//     post-commit hook …" (CODE: Delta DeltaErrors).
//   - CommitThenBadConn: the statement runs to completion and the answer is HTTP 400 "Invalid
//     SessionHandle" (its session expires): the driver returns driver.ErrBadConn, on which
//     database/sql runs the statement again on a new session (CODE: databricks-sql-go
//     client.handleClientMethodError, database/sql retry), so it commits twice as far as the
//     warehouse is concerned and a COPY INTO's second run loads 0 rows.
//
// ExpireSessions makes open sessions invalid (HTTP 400 "Invalid SessionHandle", which the
// driver maps to driver.ErrBadConn). The statement log records each statement's state, the
// fault that applied and the versions it committed.
//
// # Known differences from a real warehouse
//
// Results are sent in column form, never Arrow or CloudFetch. The data lives in memory. For
// tables at a local (file://) location the engine writes a Delta log (protocol, metaData with
// the schema, commitInfo for every version, add and remove actions for the data files) and
// real Parquet data files for every write (see the commits that remove data above). A
// location that already holds a log (CREATE TABLE
// … LOCATION) is left alone; remote locations get no log and no files (their metrics still
// count the files). A registered table (RegisterTable) starts empty: the rows of its existing
// data files are not loaded. The exact texts of some error messages, the VALIDATE output shape
// and history metrics beyond those listed are approximations. NULL values in nested NOT NULL
// fields are not rejected. Not implemented (clear UNSUPPORTED_FEATURE errors): views, external
// volumes, CSV/JSON sources, column DEFAULT and GENERATED clauses, renaming or dropping nested
// fields, time travel in queries (VERSION AS OF in SELECT; RESTORE is supported). Row tracking's
// materialized columns are not written into data files (stable row IDs live in the engine), so
// RESTORE of a table with row tracking is refused; OPTIMIZE takes no WHERE or ZORDER BY. A
// query that names _metadata sees it as a column of SELECT * too (Spark hides it there), and
// _metadata has only file_path, file_name, row_id and row_commit_version.
package warehouse
