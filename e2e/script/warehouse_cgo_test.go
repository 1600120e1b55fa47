//go:build cgo

package script

import (
	"context"
	"testing"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// startScriptWarehouse starts a fake SQL warehouse that accepts token and returns its URL and
// a function running statements on its engine.
func startScriptWarehouse(t *testing.T, token string) (string, func(stmt string) error, bool) {
	srv := warehouse.New(t, warehouse.Options{Token: token, WarehouseID: "scripts"})
	return srv.URL(), func(stmt string) error {
		_, err := srv.Engine().Exec(context.Background(), stmt)
		return err
	}, true
}
