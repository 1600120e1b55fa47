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

// The table's schema at each Delta version: 0 as created from the producer's first schema,
// 1 after ADD COLUMNS (is_gift) for the producer's second, 2 after the breaking change that
// renamed customer_id and widened amount.
var (
	tableItems = schemadiff.ArrayType(schemadiff.StructType(
		schemadiff.NewField("sku", schemadiff.StringType),
		schemadiff.NewField("quantity", schemadiff.IntegerType),
		schemadiff.NewField("unit_price", schemadiff.DecimalType(10, 2)),
	), true)
	tableShipping = schemadiff.StructType(
		schemadiff.NewField("city", schemadiff.StringType),
		schemadiff.NewField("country", schemadiff.StringType),
	)
	tableV0 = schemadiff.NewSchema().
		Col("order_id", schemadiff.LongType, schemadiff.NotNull).
		Col("customer_id", schemadiff.StringType).
		Col("order_ts", schemadiff.TimestampType).
		Col("amount", schemadiff.DecimalType(10, 2)).
		Col("items", tableItems).
		Col("shipping", tableShipping).
		Col("status", schemadiff.StringType)
	tableV1 = tableV0.Col("is_gift", schemadiff.BooleanType)
	tableV2 = schemadiff.NewSchema().
		Col("order_id", schemadiff.LongType, schemadiff.NotNull).
		Col("customer_key", schemadiff.StringType).
		Col("order_ts", schemadiff.TimestampType).
		Col("amount", schemadiff.DecimalType(18, 4)).
		Col("items", tableItems).
		Col("shipping", tableShipping).
		Col("status", schemadiff.StringType).
		Col("is_gift", schemadiff.BooleanType)
)

// TableSchema returns the demo table's current schema (its newest Delta version).
func TableSchema() schemadiff.Schema { return tableV2 }

// storyText is the narrative the demo prints before running the commands; WriteStory fills
// in the table, the fallback folder, the number of files and the days they span.
const storyText = `%[1]s is fed by Zerobus Ingest from an order service. Its Delta log holds
three versions:
  version 0  CREATE TABLE from the producer's first schema: order_id BIGINT NOT NULL,
             customer_id, order_ts TIMESTAMP, amount DECIMAL(10,2), items ARRAY<STRUCT<…>>,
             shipping STRUCT<city, country>, status
  version 1  ALTER TABLE … ADD COLUMNS (is_gift BOOLEAN), for the producer's second schema
  version 2  the breaking change: customer_id renamed to customer_key, amount changed to
             DECIMAL(18,4)

Both producer versions were still sending when version 2 landed. Zerobus had made their
records durable but could not publish them to the changed table, so it parked them as Parquet
files under <root>/%[2]s: %[3]d files over %[4]s, in two
producer schemas. One upload was cut short (a corrupt file), and the folder also holds a
_SUCCESS marker and a .crc checksum, hidden objects that Spark and zbrecover skip.
`
