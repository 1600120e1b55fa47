package reliability

import (
	"testing"

	"github.com/zbrecover/zbrecover/e2e/e2etest"
)

// TestMain removes the binaries the tests built once they have run.
func TestMain(m *testing.M) { e2etest.Main(m) }
