package demo

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// Table is the demo table's three-part name.
const Table = "main.sales.orders"

// tableID is the demo table's Delta id, fixed so that the example is the same on every run.
const tableID = "5f1d2c3e-8a4b-4c6d-9e0f-1a2b3c4d5e6f"

// The producer's schemas, as the Zerobus client wrote them into the fallback files. Version 2
// added the gift flag; both versions were still running when the table changed.
var (
	itemType = arrow.StructOf(
		arrow.Field{Name: "sku", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "quantity", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "unit_price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	)
	shippingType = arrow.StructOf(
		arrow.Field{Name: "city", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "country", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	producerV1 = arrow.NewSchema([]arrow.Field{
		{Name: "order_id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "order_ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "items", Type: arrow.ListOf(itemType), Nullable: true},
		{Name: "shipping", Type: shippingType, Nullable: true},
		{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	producerV2 = arrow.NewSchema(append(producerV1.Fields(),
		arrow.Field{Name: "is_gift", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}), nil)
)

// The table's schema at each Delta version that Build writes: 0 as created from the
// producer's first schema, with column mapping (delta.columnMapping.mode = name, so every
// column has a physical name) and type widening enabled; 1 after ADD COLUMNS (is_gift) for
// the producer's second. The breaking change (BreakingChange) is made later by a SQL
// warehouse, which continues the log with versions 2, 3 and 4.
var (
	tableItems = schemadiff.ArrayType(schemadiff.StructType(
		schemadiff.NewField("sku", schemadiff.StringType, schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a05", 5)),
		schemadiff.NewField("quantity", schemadiff.IntegerType, schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a06", 6)),
		schemadiff.NewField("unit_price", schemadiff.DecimalType(10, 2), schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a07", 7)),
	), true)
	tableShipping = schemadiff.StructType(
		schemadiff.NewField("city", schemadiff.StringType, schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a09", 9)),
		schemadiff.NewField("country", schemadiff.StringType, schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a0a", 10)),
	)
	tableV0 = schemadiff.NewSchema().
		Col("order_id", schemadiff.LongType, schemadiff.NotNull, schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a01", 1)).
		Col("customer_id", schemadiff.StringType, schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a02", 2)).
		Col("order_ts", schemadiff.TimestampType, schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a03", 3)).
		Col("amount", schemadiff.DecimalType(10, 2), schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a04", 4)).
		Col("items", tableItems, schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a08", 8)).
		Col("shipping", tableShipping, schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a0b", 11)).
		Col("status", schemadiff.StringType, schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a0c", 12))
	tableV1 = tableV0.Col("is_gift", schemadiff.BooleanType, schemadiff.Physical("col-3f6e1d0a-51b2-4c1e-9a57-0c1d2e3f4a0d", 13))

	// tableProperties are the table's properties from version 0 on.
	tableProperties = map[string]string{
		"delta.columnMapping.mode":        "name",
		"delta.columnMapping.maxColumnId": "13",
		"delta.enableTypeWidening":        "true",
	}
)

// BreakingChange is the schema change the table's owner made while Zerobus was still sending
// records in the producer's schemas: each statement is one commit (versions 2, 3 and 4).
var BreakingChange = []string{
	"ALTER TABLE " + Table + " RENAME COLUMN customer_id TO customer_key",
	"ALTER TABLE " + Table + " DROP COLUMN status",
	"ALTER TABLE " + Table + " ALTER COLUMN amount TYPE DECIMAL(18,4)",
}

// TableSchemaBeforeChange returns the table's schema before BreakingChange (version 1, the
// newest version Build writes).
func TableSchemaBeforeChange() schemadiff.Schema { return tableV1 }

// storyText is the narrative the demo prints before running the commands; WriteStory fills
// in the table, the fallback folder, the number of files and the days they span.
const storyText = `%[1]s is fed by Zerobus Ingest from an order service. It is a managed
table with column mapping (delta.columnMapping.mode = name) and type widening enabled. Its
Delta log holds:
  version 0  CREATE TABLE from the producer's first schema: order_id BIGINT NOT NULL,
             customer_id, order_ts TIMESTAMP, amount DECIMAL(10,2), items ARRAY<STRUCT<…>>,
             shipping STRUCT<city, country>, status
  version 1  ALTER TABLE … ADD COLUMNS (is_gift BOOLEAN), for the producer's second schema
  then the breaking change, made on the SQL warehouse below: customer_id renamed to
  customer_key, status dropped, amount widened to DECIMAL(18,4).

Both producer versions were still sending when the table changed. Zerobus had made their
records durable but could not publish them to the changed table, so it parked them as Parquet
files under <root>/%[2]s: %[3]d files over %[4]s, in two
producer schemas. One upload was cut short (a corrupt file), and the folder also holds a
_SUCCESS marker and a .crc checksum, hidden objects that Spark and zbrecover skip.
`
