// A minimal subset of the TCLIService (HiveServer2) interface, as spoken by Databricks SQL
// warehouses and the databricks-sql-go driver over Thrift binary protocol.
//
// Hand-written. Field ids and enum values follow the public TCLIService IDLs, both Apache-2.0:
// apache/hive service-rpc/if/TCLIService.thrift and the Databricks-flavoured
// databricks/databricks-jdbc src/main/java/com/databricks/jdbc/dbclient/impl/thrift/TCLIService.thrift
// (the 0x5xx fields). Only what the fake warehouse serves is declared: fields the server does not
// declare are skipped when it reads a request.
//
// Rules kept here: every request field is optional (the driver omits some that Hive marks
// required); response fields the driver requires are marked required so the generated writer
// always emits them.
//
// Regenerate with `go generate ./internal/fakewarehouse/` (needs the `thrift` compiler 0.17+,
// Debian package thrift-compiler).

namespace go tcli

enum TProtocolVersion {
  HIVE_CLI_SERVICE_PROTOCOL_V1 = 0
  HIVE_CLI_SERVICE_PROTOCOL_V10 = 9
  SPARK_CLI_SERVICE_PROTOCOL_V1 = 0xA501
  SPARK_CLI_SERVICE_PROTOCOL_V2 = 0xA502
  SPARK_CLI_SERVICE_PROTOCOL_V3 = 0xA503
  SPARK_CLI_SERVICE_PROTOCOL_V4 = 0xA504
  SPARK_CLI_SERVICE_PROTOCOL_V5 = 0xA505
  SPARK_CLI_SERVICE_PROTOCOL_V6 = 0xA506
  SPARK_CLI_SERVICE_PROTOCOL_V7 = 0xA507
  SPARK_CLI_SERVICE_PROTOCOL_V8 = 0xA508
  SPARK_CLI_SERVICE_PROTOCOL_V9 = 0xA509
}

enum TTypeId {
  BOOLEAN_TYPE = 0
  TINYINT_TYPE = 1
  SMALLINT_TYPE = 2
  INT_TYPE = 3
  BIGINT_TYPE = 4
  FLOAT_TYPE = 5
  DOUBLE_TYPE = 6
  STRING_TYPE = 7
  TIMESTAMP_TYPE = 8
  BINARY_TYPE = 9
  ARRAY_TYPE = 10
  MAP_TYPE = 11
  STRUCT_TYPE = 12
  UNION_TYPE = 13
  USER_DEFINED_TYPE = 14
  DECIMAL_TYPE = 15
  NULL_TYPE = 16
  DATE_TYPE = 17
  VARCHAR_TYPE = 18
  CHAR_TYPE = 19
  INTERVAL_YEAR_MONTH_TYPE = 20
  INTERVAL_DAY_TIME_TYPE = 21
}

enum TStatusCode {
  SUCCESS_STATUS = 0
  SUCCESS_WITH_INFO_STATUS = 1
  STILL_EXECUTING_STATUS = 2
  ERROR_STATUS = 3
  INVALID_HANDLE_STATUS = 4
}

enum TOperationState {
  INITIALIZED_STATE = 0
  RUNNING_STATE = 1
  FINISHED_STATE = 2
  CANCELED_STATE = 3
  CLOSED_STATE = 4
  ERROR_STATE = 5
  UKNOWN_STATE = 6
  PENDING_STATE = 7
  TIMEDOUT_STATE = 8
}

enum TOperationType {
  EXECUTE_STATEMENT = 0
  UNKNOWN = 8
}

enum TSparkRowSetType {
  ARROW_BASED_SET = 0
  COLUMN_BASED_SET = 1
  ROW_BASED_SET = 2
  URL_BASED_SET = 3
}

struct TStatus {
  1: required TStatusCode statusCode
  2: optional list<string> infoMessages
  3: optional string sqlState
  4: optional i32 errorCode
  5: optional string errorMessage
  6: optional string displayMessage
}

struct THandleIdentifier {
  1: required binary guid
  2: required binary secret
}

struct TSessionHandle {
  1: required THandleIdentifier sessionId
}

struct TOperationHandle {
  1: required THandleIdentifier operationId
  2: required TOperationType operationType
  3: required bool hasResultSet
}

struct TNamespace {
  1: optional string catalogName
  2: optional string schemaName
}

struct TTypeQualifierValue {
  1: optional i32 i32Value
  2: optional string stringValue
}

struct TTypeQualifiers {
  1: required map<string, TTypeQualifierValue> qualifiers
}

struct TPrimitiveTypeEntry {
  1: required TTypeId type
  2: optional TTypeQualifiers typeQualifiers
}

struct TTypeEntry {
  1: optional TPrimitiveTypeEntry primitiveEntry
}

struct TTypeDesc {
  1: required list<TTypeEntry> types
}

struct TColumnDesc {
  1: required string columnName
  2: required TTypeDesc typeDesc
  3: required i32 position
  4: optional string comment
}

struct TTableSchema {
  1: required list<TColumnDesc> columns
}

struct TRow {}

struct TBoolColumn   { 1: required list<bool> values,   2: required binary nulls }
struct TByteColumn   { 1: required list<i8> values,   2: required binary nulls }
struct TI16Column    { 1: required list<i16> values,    2: required binary nulls }
struct TI32Column    { 1: required list<i32> values,    2: required binary nulls }
struct TI64Column    { 1: required list<i64> values,    2: required binary nulls }
struct TDoubleColumn { 1: required list<double> values, 2: required binary nulls }
struct TStringColumn { 1: required list<string> values, 2: required binary nulls }
struct TBinaryColumn { 1: required list<binary> values, 2: required binary nulls }

union TColumn {
  1: TBoolColumn boolVal
  2: TByteColumn byteVal
  3: TI16Column i16Val
  4: TI32Column i32Val
  5: TI64Column i64Val
  6: TDoubleColumn doubleVal
  7: TStringColumn stringVal
  8: TBinaryColumn binaryVal
}

struct TRowSet {
  1: required i64 startRowOffset
  2: required list<TRow> rows
  3: optional list<TColumn> columns
}

struct TOpenSessionReq {
  1: optional i32 client_protocol
  4: optional map<string, string> configuration
  0x502: optional i64 client_protocol_i64
  0x504: optional TNamespace initialNamespace
  0x505: optional bool canUseMultipleCatalogs
}

struct TOpenSessionResp {
  1: required TStatus status
  2: required TProtocolVersion serverProtocolVersion
  3: optional TSessionHandle sessionHandle
  4: optional map<string, string> configuration
  0x504: optional TNamespace initialNamespace
  0x505: optional bool canUseMultipleCatalogs
}

struct TCloseSessionReq {
  1: optional TSessionHandle sessionHandle
}

struct TCloseSessionResp {
  1: required TStatus status
}

struct TSparkGetDirectResults {
  1: optional i64 maxRows
  2: optional i64 maxBytes
}

struct TSparkParameterValue {
  1: optional string stringValue
  2: optional double doubleValue
  3: optional bool booleanValue
}

struct TSparkParameter {
  1: optional i32 ordinal
  2: optional string name
  3: optional string type
  4: optional TSparkParameterValue value
}

struct TExecuteStatementReq {
  1: optional TSessionHandle sessionHandle
  2: optional string statement
  3: optional map<string, string> confOverlay
  4: optional bool runAsync
  5: optional i64 queryTimeout
  0x501: optional TSparkGetDirectResults getDirectResults
  0x502: optional bool canReadArrowResult
  0x503: optional bool canDownloadResult
  0x504: optional bool canDecompressLZ4Result
  0x508: optional list<TSparkParameter> parameters
}

struct TGetOperationStatusReq {
  1: optional TOperationHandle operationHandle
  2: optional bool getProgressUpdate
}

struct TGetOperationStatusResp {
  1: required TStatus status
  2: optional TOperationState operationState
  3: optional string sqlState
  4: optional i32 errorCode
  5: optional string errorMessage
  7: optional i64 operationStarted
  8: optional i64 operationCompleted
  9: optional bool hasResultSet
  11: optional i64 numModifiedRows
  0x501: optional string displayMessage
  0x502: optional string diagnosticInfo
}

struct TGetResultSetMetadataReq {
  1: optional TOperationHandle operationHandle
}

struct TGetResultSetMetadataResp {
  1: required TStatus status
  2: optional TTableSchema schema
  0x501: optional TSparkRowSetType resultFormat
  0x502: optional bool lz4Compressed
  0x507: optional bool isStagingOperation
}

struct TFetchResultsReq {
  1: optional TOperationHandle operationHandle
  2: optional i32 orientation
  3: optional i64 maxRows
  0x503: optional bool includeResultSetMetadata
}

struct TFetchResultsResp {
  1: required TStatus status
  2: optional bool hasMoreRows
  3: optional TRowSet results
  0x501: optional TGetResultSetMetadataResp resultSetMetadata
}

struct TCloseOperationReq {
  1: optional TOperationHandle operationHandle
}

struct TCloseOperationResp {
  1: required TStatus status
}

struct TCancelOperationReq {
  1: optional TOperationHandle operationHandle
}

struct TCancelOperationResp {
  1: required TStatus status
}

struct TSparkDirectResults {
  1: optional TGetOperationStatusResp operationStatus
  2: optional TGetResultSetMetadataResp resultSetMetadata
  3: optional TFetchResultsResp resultSet
  4: optional TCloseOperationResp closeOperation
}

struct TExecuteStatementResp {
  1: required TStatus status
  2: optional TOperationHandle operationHandle
  0x501: optional TSparkDirectResults directResults
}

service TCLIService {
  TOpenSessionResp OpenSession(1: TOpenSessionReq req)
  TCloseSessionResp CloseSession(1: TCloseSessionReq req)
  TExecuteStatementResp ExecuteStatement(1: TExecuteStatementReq req)
  TGetOperationStatusResp GetOperationStatus(1: TGetOperationStatusReq req)
  TCancelOperationResp CancelOperation(1: TCancelOperationReq req)
  TCloseOperationResp CloseOperation(1: TCloseOperationReq req)
  TGetResultSetMetadataResp GetResultSetMetadata(1: TGetResultSetMetadataReq req)
  TFetchResultsResp FetchResults(1: TFetchResultsReq req)
}
