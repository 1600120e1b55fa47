//go:build !cgo

package warehouse

import (
	"database/sql"
	"errors"
)

// openDuckDB fails without cgo: DuckDB is a C++ library.
func openDuckDB() (*sql.DB, error) {
	return nil, errors.New("fakewarehouse: the DuckDB engine needs cgo (build with CGO_ENABLED=1)")
}

func normalizeDriverValue(v any) any { return v }
