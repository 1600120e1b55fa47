// Package watch holds the end-to-end tests of zbrecover watch: the release binary against
// `zbrecover demo serve`, whose Zerobus writers park records while a table's schema is broken,
// with the journal on the S3 emulator.
package watch

import (
	"testing"

	"github.com/zbrecover/zbrecover/e2e/e2etest"
)

// TestMain removes the binaries the tests built once they have run.
func TestMain(m *testing.M) { e2etest.Main(m) }
