package databricks

import (
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/storage"
)

// CheckRootInside returns nil when root is the table's storage location (as Unity Catalog
// returned it) or a folder inside it, and an error otherwise. Credentials vended for a table
// are sent only to roots it accepts: a --root elsewhere, on another host, bucket, container or
// account, must be read with credentials of its own. A root with "." or ".." path segments is
// refused, since a store or proxy may resolve them out of the table's folder.
func CheckRootInside(tableLocation string, root storage.Location) error {
	table, err := storage.Parse(tableLocation)
	if err != nil {
		return fmt.Errorf("the table's storage location: %w", err)
	}
	outside := func(why string) error {
		return fmt.Errorf("--root %s is not inside the table's storage location %s (%s): credentials vended for the table are only sent there; "+
			"give a root inside it, or use --storage-auth default with credentials for that location", root, table, why)
	}
	for _, seg := range strings.Split(root.Path, "/") {
		if seg == "." || seg == ".." {
			return outside("its path has a \".\" or \"..\" segment")
		}
	}
	switch {
	case root.Scheme != table.Scheme:
		return outside("another kind of store")
	case root.Bucket != table.Bucket:
		return outside("another bucket or container")
	case !strings.EqualFold(root.Account, table.Account) || !strings.EqualFold(root.BlobHost, table.BlobHost):
		return outside("another storage account or endpoint")
	}
	tp, rp := strings.Trim(table.Path, "/"), strings.Trim(root.Path, "/")
	if table.Scheme == "file" {
		tp, rp = strings.TrimRight(table.Path, "/"), strings.TrimRight(root.Path, "/")
	}
	if rp == tp || tp == "" || strings.HasPrefix(rp, tp+"/") {
		return nil
	}
	return outside("another folder")
}
