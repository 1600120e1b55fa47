//go:build darwin || freebsd || netbsd || dragonfly

package journal

import "syscall"

// changeTime is st's change time (Ctimespec on the BSDs and darwin).
func changeTime(st *syscall.Stat_t) (sec, nsec int64) {
	return int64(st.Ctimespec.Sec), int64(st.Ctimespec.Nsec)
}
