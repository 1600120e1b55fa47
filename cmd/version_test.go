package cmd

import "testing"

// TestBuildInfoString: the commit, its modified flag and time are shown when the build
// knows them, and left out when it does not.
func TestBuildInfoString(t *testing.T) {
	b := buildInfo{Version: "dev", Go: "go1.26.0", Platform: "linux/amd64"}
	if got := b.String(); got != "dev (go1.26.0, linux/amd64)" {
		t.Errorf("without vcs: %q", got)
	}
	b.Commit, b.Modified, b.Time = "0123456789abcdef0123", true, "2026-01-02T03:04:05Z"
	if got := b.String(); got != "dev (commit 0123456789ab, modified, 2026-01-02T03:04:05Z; go1.26.0, linux/amd64)" {
		t.Errorf("with vcs: %q", got)
	}
	if got := b.short(); got != "dev+0123456789ab-modified" {
		t.Errorf("short: %q", got)
	}
}
