//go:build cgo

package script

import (
	"context"
	"testing"

	"github.com/zbrecover/zbrecover/internal/fakewarehouse"
)

// startScriptWarehouse starts a fake SQL warehouse that accepts token and returns its URL and
// a function running statements on its engine.
func startScriptWarehouse(t *testing.T, token string) (string, func(stmt string) error, bool) {
	srv := fakewarehouse.New(t, fakewarehouse.Options{Token: token, WarehouseID: "scripts"})
	return srv.URL(), func(stmt string) error {
		_, err := srv.Engine().Exec(context.Background(), stmt)
		return err
	}, true
}
