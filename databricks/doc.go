// Package databricks is zbrecover's connection to a Databricks workspace:
//
//   - authentication through the Databricks unified configuration (databricks-sdk-go: a
//     ~/.databrickscfg profile, DATABRICKS_HOST with a token, OAuth M2M, Azure service
//     principals), with the zbrecover user agent on every call (NewClient, Options);
//   - Unity Catalog: a table's entry (Client.Table → TableInfo: table_id, storage location,
//     columns as schemadiff types, properties), the Zerobus-target check (CheckRecoverable),
//     and temporary table credentials for its storage, refreshed before they expire
//     (TableCredentials, CredentialProvider; ChooseStorageAuth decides between them and the
//     store's own credentials);
//   - the SQL warehouse, over databricks-sql-go (Client.Warehouse → Warehouse: QueryAll,
//     Exec, DescribeTable with DESCRIBE TABLE EXTENDED … AS JSON), with telemetry off and the
//     driver's log routed into the -v log;
//   - errors sorted into what an operator can act on: APIError and SQLError carry a Kind
//     (ErrNotFound, ErrPermissionDenied, ErrAuth, ErrRejected, ErrUnsupported, …) and, for
//     SQL, the error class and SQLSTATE (Classify: LOCATION_OVERLAP, concurrent COPY INTO,
//     schema mismatch, cancelled statements).
//
// Table names have one grammar, ParseTableName (Unicode names as Unity Catalog allows them,
// backquoted parts with doubled backquotes); TableName.SQL quotes them for statements.
// Every secret the package learns (tokens, client secrets, vended credentials) is registered
// with internal/redact, and every error and log line passes through it.
package databricks
