package pqgen

import (
	"fmt"
	"math/rand"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// NullFraction is the share of generated values that are null in nullable fields.
const NullFraction = 0.1

// Generate returns n pseudo-random rows for sc, the same for the same seed. Nullable fields get
// about NullFraction nulls; non-nullable fields never do. Supported types: boolean, signed and
// unsigned integers, float32/64, string, binary, date32, timestamp (any unit and zone),
// decimal128, struct, list, map, and the JSONType and EnumType extensions. The caller releases
// the record.
func Generate(sc *arrow.Schema, n int, seed int64) (rec arrow.RecordBatch, err error) {
	defer func() {
		if r := recover(); r != nil {
			rec, err = nil, fmt.Errorf("pqgen: generate: %v", r)
		}
	}()
	rng := rand.New(rand.NewSource(seed))
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for row := 0; row < n; row++ {
		for i, f := range sc.Fields() {
			if err := gen(b.Field(i), f.Type, f.Nullable, rng, row); err != nil {
				return nil, fmt.Errorf("pqgen: generate %s: %w", f.Name, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

var epoch2024 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func gen(b array.Builder, dt arrow.DataType, nullable bool, rng *rand.Rand, row int) error {
	if nullable && rng.Float64() < NullFraction {
		b.AppendNull()
		return nil
	}
	switch t := dt.(type) {
	case *arrow.BooleanType:
		b.(*array.BooleanBuilder).Append(rng.Intn(2) == 1)
	case *arrow.Int8Type:
		b.(*array.Int8Builder).Append(int8(rng.Intn(256) - 128))
	case *arrow.Int16Type:
		b.(*array.Int16Builder).Append(int16(rng.Intn(65536) - 32768))
	case *arrow.Int32Type:
		b.(*array.Int32Builder).Append(rng.Int31() - 1<<30)
	case *arrow.Int64Type:
		b.(*array.Int64Builder).Append(int64(row)*1000 + rng.Int63n(1000))
	case *arrow.Uint8Type:
		b.(*array.Uint8Builder).Append(uint8(rng.Intn(256)))
	case *arrow.Uint16Type:
		b.(*array.Uint16Builder).Append(uint16(rng.Intn(65536)))
	case *arrow.Uint32Type:
		b.(*array.Uint32Builder).Append(rng.Uint32())
	case *arrow.Uint64Type:
		b.(*array.Uint64Builder).Append(rng.Uint64())
	case *arrow.Float32Type:
		b.(*array.Float32Builder).Append(rng.Float32() * 1000)
	case *arrow.Float64Type:
		b.(*array.Float64Builder).Append(rng.NormFloat64() * 1000)
	case *arrow.StringType:
		b.(*array.StringBuilder).Append("s-" + strconv.Itoa(row) + "-" + strconv.Itoa(rng.Intn(1000)))
	case *arrow.BinaryType:
		v := make([]byte, 1+rng.Intn(16))
		rng.Read(v)
		b.(*array.BinaryBuilder).Append(v)
	case *arrow.Date32Type:
		d := epoch2024.AddDate(0, 0, rng.Intn(3650))
		b.(*array.Date32Builder).Append(arrow.Date32FromTime(d))
	case *arrow.TimestampType:
		ts := epoch2024.Add(time.Duration(rng.Int63n(int64(365 * 24 * time.Hour))))
		v, err := arrow.TimestampFromTime(ts.Truncate(time.Microsecond), t.Unit)
		if err != nil {
			return err
		}
		b.(*array.TimestampBuilder).Append(v)
	case *arrow.Decimal128Type:
		max := int64(1)
		for i := int32(0); i < t.Precision && i < 18; i++ {
			max *= 10
		}
		b.(*array.Decimal128Builder).Append(decimal128.FromI64(rng.Int63n(max) - max/2))
	case *arrow.StructType:
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		for i, f := range t.Fields() {
			if err := gen(sb.FieldBuilder(i), f.Type, f.Nullable, rng, row); err != nil {
				return err
			}
		}
	case *arrow.ListType:
		lb := b.(*array.ListBuilder)
		lb.Append(true)
		for i, k := 0, rng.Intn(4); i < k; i++ {
			if err := gen(lb.ValueBuilder(), t.Elem(), t.ElemField().Nullable, rng, row); err != nil {
				return err
			}
		}
	case *arrow.MapType:
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		for i, k := 0, rng.Intn(4); i < k; i++ {
			// Keys are unique within a map: derive them from the position.
			switch kb := mb.KeyBuilder().(type) {
			case *array.StringBuilder:
				kb.Append("k" + strconv.Itoa(i))
			case *array.Int32Builder:
				kb.Append(int32(i))
			case *array.Int64Builder:
				kb.Append(int64(i))
			default:
				return fmt.Errorf("unsupported map key type %s", t.KeyType())
			}
			if err := gen(mb.ItemBuilder(), t.ItemType(), t.ItemField().Nullable, rng, row); err != nil {
				return err
			}
		}
	case arrow.ExtensionType:
		eb := b.(*array.ExtensionBuilder)
		sb, ok := eb.StorageBuilder().(*array.StringBuilder)
		if !ok {
			return fmt.Errorf("unsupported extension storage %s", t.StorageType())
		}
		switch t.ExtensionName() {
		case "arrow.json":
			sb.Append(`{"n":` + strconv.Itoa(row) + `,"tag":"t` + strconv.Itoa(rng.Intn(5)) + `"}`)
		default:
			sb.Append([]string{"RED", "GREEN", "BLUE"}[rng.Intn(3)])
		}
	default:
		return fmt.Errorf("unsupported type %s", dt)
	}
	return nil
}
