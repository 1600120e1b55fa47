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
	if err := checkParts(parts); err != nil {
		return TableName{}, fmt.Errorf("table name %q: %w", s, err)
	}
	return TableName{Catalog: parts[0], Schema: parts[1], Table: parts[2]}, nil
}

// TableNameFromString reads a name as TableName.String spells it (Unity Catalog's
// catalog.schema.table, unquoted, as the journal records it): no part holds a period, so the
// periods split it, and a backquote anywhere is the name's own.
func TableNameFromString(s string) (TableName, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return TableName{}, fmt.Errorf("table name %q: want catalog.schema.table (three parts), got %d part(s)", s, len(parts))
	}
	if err := checkParts(parts); err != nil {
		return TableName{}, fmt.Errorf("table name %q: %w", s, err)
	}
	return TableName{Catalog: parts[0], Schema: parts[1], Table: parts[2]}, nil
}

// SplitName splits a dotted Unity Catalog name (catalog, catalog.schema, …) into its parts,
// with ParseTableName's rules: backquoted parts, a doubled backquote for one inside them, and
// no empty part nor one holding a period, a space, a slash or a control character.
func SplitName(s string) ([]string, error) {
	parts, err := schemadiff.SplitName(strings.TrimSpace(s))
	if err != nil {
		return nil, err
	}
	return parts, checkParts(parts)
}

func checkParts(parts []string) error {
	for _, p := range parts {
		if p == "" {
			return fmt.Errorf("empty name part")
		}
		for _, r := range p {
			if r == '.' || r == ' ' || r == '/' || r < 0x20 || r == 0x7f {
				return fmt.Errorf("Unity Catalog names cannot contain %q", r)
			}
		}
		if len(p) > 255 {
			return fmt.Errorf("a name part is longer than 255 characters")
		}
	}
	return nil
}

// QuotePart returns a name part as ParseTableName and SplitName read it back: as it is, or
// backquoted (a backquote doubled) when it holds a backquote.
func QuotePart(p string) string {
	if !strings.Contains(p, "`") {
		return p
	}
	return "`" + strings.ReplaceAll(p, "`", "``") + "`"
}

// Quoted returns the name as ParseTableName reads it back: String's form, with a part that
// holds a backquote backquoted.
func (n TableName) Quoted() string {
	return QuotePart(n.Catalog) + "." + QuotePart(n.Schema) + "." + QuotePart(n.Table)
}
