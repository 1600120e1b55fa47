// Package golden pins what the release binary prints against `zbrecover demo serve`, for
// every command of a whole recovery, in text and in JSON: testdata/<step>.txt and .json,
// compared byte for byte after the parts that differ between runs (run ids, times,
// durations, temporary paths, the port) are replaced by placeholders. go test -tags
// 'duckdb demo' ./e2e/golden -update rewrites them.
package golden

import (
	"testing"

	"github.com/zbrecover/zbrecover/e2e/e2etest"
)

// TestMain removes the binaries the tests built once they have run.
func TestMain(m *testing.M) { e2etest.Main(m) }
