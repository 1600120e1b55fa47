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
// (`my-catalog`.sales.`orders`), a doubled backquote standing for one inside a quoted part;
// a backquote between two characters of an unquoted part stands for itself, so that the
// unquoted spelling String gives of such a name (main.sales.or`ders) parses back to it.
// Unity Catalog object names cannot contain a period, a space, a slash or control characters,
// so such names are refused here instead of by the server.
func ParseTableName(s string) (TableName, error) {
	parts, err := splitName(strings.TrimSpace(s))
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

func splitName(s string) ([]string, error) {
	var parts []string
	var cur strings.Builder
	quoted, inQuotes, afterQuote := false, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuotes:
			if c == '`' {
				if i+1 < len(s) && s[i+1] == '`' {
					cur.WriteByte('`')
					i++
					continue
				}
				inQuotes, afterQuote = false, true
				continue
			}
			cur.WriteByte(c)
		case c == '.':
			parts = append(parts, cur.String())
			cur.Reset()
			quoted, afterQuote = false, false
		case c == '`' && cur.Len() > 0 && !quoted && i+1 < len(s) && s[i+1] != '.' && s[i+1] != '`':
			// Between two characters of an unquoted part a backquote is the name's own, as
			// TableName.String (Unity Catalog's spelling) writes it: or`ders. One that ends
			// a part is a quote left open or closed too early, and refused.
			cur.WriteByte(c)
		case c == '`':
			if cur.Len() > 0 || quoted {
				return nil, fmt.Errorf("unexpected backquote at offset %d", i)
			}
			quoted, inQuotes = true, true
		default:
			if afterQuote {
				return nil, fmt.Errorf("unexpected %q after a quoted name at offset %d", c, i)
			}
			cur.WriteByte(c)
		}
	}
	if inQuotes {
		return nil, fmt.Errorf("unterminated backquote")
	}
	parts = append(parts, cur.String())
	return parts, nil
}
