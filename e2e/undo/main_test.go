// Package undo holds the end-to-end tests of zbrecover undo: the release binary against
// `zbrecover demo serve` on managed tables, staged, with Zerobus committing throughout.
package undo

import (
	"testing"

	"github.com/zbrecover/zbrecover/e2e/e2etest"
)

// TestMain removes the binaries the tests built once they have run.
func TestMain(m *testing.M) { e2etest.Main(m) }
