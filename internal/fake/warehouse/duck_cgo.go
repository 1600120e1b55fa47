//go:build cgo

package warehouse

import (
	"database/sql"
	"fmt"
	"math/big"

	"github.com/duckdb/duckdb-go/v2"
)

// openDuckDB opens a private in-memory DuckDB database.
func openDuckDB() (*sql.DB, error) {
	return sql.Open("duckdb", "")
}

// normalizeDriverValue turns duckdb-go's own value types into the plain forms Result holds.
func normalizeDriverValue(v any) any {
	switch x := v.(type) {
	case duckdb.Decimal:
		return decimalString(x.Value, int(x.Scale))
	case *duckdb.Decimal:
		return decimalString(x.Value, int(x.Scale))
	case duckdb.OrderedMap:
		return orderedMapEntries(&x)
	case *duckdb.OrderedMap:
		return orderedMapEntries(x)
	case duckdb.Map:
		out := make([]MapEntry, 0, len(x))
		for k, val := range x {
			out = append(out, MapEntry{Key: k, Value: val})
		}
		return out
	case duckdb.UUID:
		return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
	case *duckdb.UUID:
		return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
	case duckdb.Interval:
		return fmt.Sprintf("%d months %d days %d microseconds", x.Months, x.Days, x.Micros)
	case *big.Int:
		return x
	}
	return v
}

func orderedMapEntries(m *duckdb.OrderedMap) []MapEntry {
	keys, vals := m.Keys(), m.Values()
	out := make([]MapEntry, len(keys))
	for i := range keys {
		out[i] = MapEntry{Key: keys[i], Value: vals[i]}
	}
	return out
}

// decimalString renders an unscaled integer with scale digits after the point, keeping
// trailing zeros as Databricks does ("1.50" for decimal(10,2)).
func decimalString(unscaled *big.Int, scale int) string {
	if unscaled == nil {
		return "0"
	}
	s := new(big.Int).Abs(unscaled).String()
	neg := unscaled.Sign() < 0
	if scale > 0 {
		for len(s) <= scale {
			s = "0" + s
		}
		s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	}
	if neg {
		s = "-" + s
	}
	return s
}
