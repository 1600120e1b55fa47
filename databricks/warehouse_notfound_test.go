package databricks

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestWarehouseNotFoundByStatusNotPort: an unknown warehouse id (the endpoint answers 404)
// is said to not exist; a refused token on a workspace whose port contains 404 is an
// authentication error, and asks the warehouses API nothing.
func TestWarehouseNotFoundByStatusNotPort(t *testing.T) {
	cleanEnv(t)
	var ln net.Listener
	for port := 40400; port < 40500 && ln == nil; port++ {
		ln, _ = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	}
	if ln == nil {
		t.Skip("no free port with 404 in it")
	}
	for _, status := range []int{http.StatusNotFound, http.StatusUnauthorized} {
		var mu sync.Mutex
		var paths []string
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			paths = append(paths, r.URL.Path)
			mu.Unlock()
			w.WriteHeader(status)
		}))
		if status == http.StatusUnauthorized {
			srv.Listener.Close()
			srv.Listener = ln
		}
		srv.Start()
		t.Setenv("DATABRICKS_HOST", srv.URL)
		t.Setenv("DATABRICKS_TOKEN", goodToken)
		c, err := NewClient(context.Background(), Options{WarehouseID: "wh42", Version: "1.2.3"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Warehouse(context.Background())
		srv.Close()
		mu.Lock()
		asked := strings.Join(paths, " ")
		mu.Unlock()
		switch status {
		case http.StatusNotFound:
			if err == nil || !strings.Contains(err.Error(), "SQL warehouse wh42 does not exist") {
				t.Errorf("404: %v", err)
			}
		default:
			if strings.Contains(asked, "/api/2.0/sql/warehouses") || err == nil || strings.Contains(err.Error(), "does not exist") {
				t.Errorf("401 on %s: %v; requests %s", srv.URL, err, asked)
			}
		}
	}
}
