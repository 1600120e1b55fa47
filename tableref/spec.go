package tableref

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
)

// Spec is TARGET as the operator gave it: a positional argument, or --table and --root.
type Spec struct {
	Arg   string // the positional TARGET, if given
	Table string // catalog.schema.table
	Root  string // a storage root URL or local path
}

// UsageError is a mistake in how the target was named; cmd reports it as a usage error.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usagef(format string, a ...any) error { return &UsageError{Msg: fmt.Sprintf(format, a...)} }

// IsUsage reports whether err is a UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// IsTableName reports whether s reads as a three-part table name rather than a path: it has
// no "/", "\" or "://", is not an existing local path, and parses as a Unity Catalog name
// (databricks.ParseTableName: Unicode names, backquoted parts with doubled backquotes).
func IsTableName(s string) bool {
	if strings.ContainsAny(s, `/\`) || strings.Contains(s, "://") {
		return false
	}
	if _, err := os.Stat(s); err == nil {
		return false
	}
	_, err := databricks.ParseTableName(s)
	return err == nil
}

// Parse fills Table and Root from the positional arguments and checks the combination.
func (s *Spec) Parse(args []string) error {
	if len(args) > 0 {
		s.Arg = args[0]
	}
	if s.Arg != "" {
		if s.Table != "" || s.Root != "" {
			return usagef("give TARGET or --table/--root, not both")
		}
		switch {
		case IsTableName(s.Arg):
			s.Table = s.Arg
		case looksQuotedName(s.Arg):
			_, err := databricks.ParseTableName(s.Arg)
			return usagef("%v", err)
		case isBareWord(s.Arg):
			return usagef("%s", bareWordHelp(s.Arg))
		default:
			s.Root = s.Arg
		}
	}
	if s.Table == "" && s.Root == "" {
		return usagef("name the target: a storage root URL, or --table catalog.schema.table")
	}
	if s.Table != "" {
		if _, err := databricks.ParseTableName(s.Table); err != nil {
			return usagef("--table: %v", err)
		}
	}
	return nil
}

// Name returns the parsed table name, or ok=false when the spec names only a root.
func (s Spec) Name() (databricks.TableName, bool) {
	if s.Table == "" {
		return databricks.TableName{}, false
	}
	n, err := databricks.ParseTableName(s.Table)
	return n, err == nil
}

// isBareWord reports whether s can be neither a table name nor a storage root: no path
// separator, no URL scheme, and no file or directory of that name here. Such a word is a
// table name missing its catalog and schema, or a mistyped local directory; read as a local
// path it could only fail later with a file system error.
func isBareWord(s string) bool {
	if s == "" || strings.ContainsAny(s, `/\:`) {
		return false
	}
	_, err := os.Stat(s)
	return errors.Is(err, os.ErrNotExist)
}

// bareWordHelp explains why TARGET word was refused, and what to give instead.
func bareWordHelp(word string) string {
	why := "a table name has three parts, catalog.schema.table (such as main.sales.orders)"
	if _, err := databricks.ParseTableName(word); err != nil && strings.Contains(word, ".") {
		why = fmt.Sprintf("a table name has three parts, catalog.schema.table, where %s has %d", word, strings.Count(word, ".")+1)
	}
	return fmt.Sprintf("TARGET %s is neither a table name nor a local path: %s; and no file or directory %s exists in the "+
		"current directory. Give the table's full name, or its storage root (s3://, gs://, abfss://, wasbs://, file:// or an existing local directory)",
		word, why, word)
}

// looksQuotedName reports whether s was meant as a table name, though it does not parse as
// one: it has backquotes and no path separators, and is not an existing path.
func looksQuotedName(s string) bool {
	if !strings.Contains(s, "`") || strings.ContainsAny(s, `/\`) || strings.Contains(s, "://") {
		return false
	}
	_, err := os.Stat(s)
	return err != nil
}
