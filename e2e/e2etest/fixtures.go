package e2etest

import (
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/zbrecover/zbrecover/schemadiff"
)

// The recovery fixtures: the managed table and the two producers whose files it refused.
var (
	// The table's schema after the breaking change.
	TableSchema = schemadiff.NewSchema().Col("id", schemadiff.LongType, schemadiff.NotNull).
			Col("customer_key", schemadiff.StringType).Col("amount", schemadiff.DecimalType(18, 4))
	// Producers before it: customer_id (renamed since) and a narrower decimal.
	OldFiles = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true}}, nil)
	// Producers on another build: an extra column the table dropped.
	NewFiles = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "customer_key", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 4}, Nullable: true},
		{Name: "gift", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}}, nil)
)

// DecodeInto decodes a command's JSON output into v; output that is not JSON fails the test.
func DecodeInto(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
}

// WaitFor polls cond every 10 ms until it holds, the process exits, or d passes; it reports
// whether cond held while the process ran.
func WaitFor(cmd *exec.Cmd, exited <-chan struct{}, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}
