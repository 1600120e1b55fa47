//go:build !cgo

package script

import "testing"

// startScriptWarehouse reports that this build has no fake SQL warehouse (it needs cgo).
func startScriptWarehouse(*testing.T, string) (string, func(string) error, bool) {
	return "", nil, false
}
