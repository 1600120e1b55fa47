package warehouse_test

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	dbsql "github.com/databricks/databricks-sql-go"
	"github.com/databricks/databricks-sql-go/logger"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

func TestMain(m *testing.M) {
	_ = logger.SetLogLevel("disabled")
	os.Exit(m.Run())
}

// open returns a database/sql handle on the server through the real driver.
func open(t *testing.T, srv *warehouse.Server) *sql.DB {
	t.Helper()
	db, err := sql.Open("databricks", srv.DSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// connect opens a handle through the connector API with retries off, so a test sees the
// first failure.
func connect(t *testing.T, srv *warehouse.Server, opts ...dbsql.ConnOption) *sql.DB {
	t.Helper()
	base := []dbsql.ConnOption{
		dbsql.WithServerHostname("http://" + srv.Host()),
		dbsql.WithPort(srv.Port()),
		dbsql.WithHTTPPath(srv.HTTPPath()),
		dbsql.WithAccessToken(srv.Token()),
		dbsql.WithRetries(-1, 0, 0),
	}
	c, err := dbsql.NewConnector(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return db
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
