//go:build unix

package journal

import (
	"fmt"
	"os"
	"syscall"
)

// fileIdentity names a file's content as the system knows it: its size, modification and
// change times, device and inode. Any write to the file changes its change time.
func fileIdentity(fi os.FileInfo) string {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		sec, nsec := changeTime(st)
		return fmt.Sprintf("%d/%d/%d.%d/%d/%d", fi.Size(), fi.ModTime().UnixNano(), sec, nsec, st.Dev, st.Ino)
	}
	return fmt.Sprintf("%d/%d", fi.Size(), fi.ModTime().UnixNano())
}
