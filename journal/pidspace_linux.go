package journal

import (
	"os"
	"strings"
	"sync"
)

// pidSpace names where this process's pid means this process: the kernel's boot id and the
// pid namespace. Two machines, two boots or two containers with separate pid namespaces
// differ, even under one host name. "" when /proc cannot tell.
var pidSpace = sync.OnceValue(func() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
})
