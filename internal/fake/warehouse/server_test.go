package warehouse_test

import (
	"testing"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

func TestPing(t *testing.T) {
	srv := warehouse.New(t)
	db := open(t, srv)
	if err := db.PingContext(ctx(t)); err != nil {
		t.Fatalf("ping: %v", err)
	}
	var one int
	if err := db.QueryRowContext(ctx(t), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("SELECT 1 = %d, %v", one, err)
	}
	if got := srv.CountRequests("OpenSession"); got != 1 {
		t.Errorf("OpenSession requests = %d, want 1", got)
	}
}
