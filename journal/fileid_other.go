//go:build !unix

package journal

import (
	"fmt"
	"os"
)

// fileIdentity names a file's content as the system knows it: its size and modification
// time.
func fileIdentity(fi os.FileInfo) string {
	return fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
}
