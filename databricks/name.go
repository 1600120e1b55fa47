package databricks

import (
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// TableName is a Unity Catalog three-part table name.
type TableName struct {
	Catalog, Schema, Table string
}

// String returns the name as Unity Catalog's REST API spells it: catalog.schema.table, unquoted.
func (n TableName) String() string { return n.Catalog + "." + n.Schema + "." + n.Table }

// SQL returns the name quoted for Databricks SQL: `catalog`.`schema`.`table`.
func (n TableName) SQL() string {
	return quoteIdent(n.Catalog) + "." + quoteIdent(n.Schema) + "." + quoteIdent(n.Table)
}

func quoteIdent(s string) string { return schemadiff.QuoteIdent(s) }

// ParseTableName parses catalog.schema.table. Each part may be quoted with backquotes
// (`my-catalog`.sales.`orders`), a doubled backquote standing for one inside a quoted part.
// Unity Catalog object names cannot contain a period, a space, a slash or control characters,
// so such names are refused here instead of by the server.
func ParseTableName(s string) (TableName, error) {
	parts, err := schemadiff.SplitName(strings.TrimSpace(s))
	if err != nil {
		return TableName{}, fmt.Errorf("table name %q: %w", s, err)
	}
	if len(parts) != 3 {
		return TableName{}, fmt.Errorf("table name %q: want catalog.schema.table (three parts), got %d part(s)", s, len(parts))
	}
	for _, p := range parts {
		if p == "" {
			return TableName{}, fmt.Errorf("table name %q: empty name part", s)
		}
		for _, r := range p {
			if r == '.' || r == ' ' || r == '/' || r < 0x20 || r == 0x7f {
				return TableName{}, fmt.Errorf("table name %q: Unity Catalog names cannot contain %q", s, r)
			}
		}
		if len(p) > 255 {
			return TableName{}, fmt.Errorf("table name %q: a name part is longer than 255 characters", s)
		}
	}
	return TableName{Catalog: parts[0], Schema: parts[1], Table: parts[2]}, nil
}
