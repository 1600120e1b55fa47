//go:build unix && !(darwin || freebsd || netbsd || dragonfly)

package journal

import "syscall"

// changeTime is st's change time (Ctim on Linux and the other systems).
func changeTime(st *syscall.Stat_t) (sec, nsec int64) {
	return int64(st.Ctim.Sec), int64(st.Ctim.Nsec)
}
