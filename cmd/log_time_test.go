package cmd

import (
	"regexp"
	"testing"

	"github.com/zbrecover/zbrecover/internal/iostreams"
)

// TestVerboseLinesCarryTimestamps: at -v every log line starts with its UTC time; without -v
// the warnings that are shown carry none.
func TestVerboseLinesCarryTimestamps(t *testing.T) {
	for _, v := range []int{0, 1} {
		io, _, _, errOut := iostreams.Test()
		f := NewFactory(io)
		f.Global.Verbose = v
		f.Logger.Warn("storage retry", "op", "read")
		stamped := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z warn: storage retry op=read\n$`).MatchString(errOut.String())
		if stamped != (v == 1) {
			t.Errorf("-v=%d: %q", v, errOut.String())
		}
	}
}
