package textfmt

import (
	"os/exec"
	"strings"
	"testing"
)

func TestShell(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/a/orders":            "/tmp/a/orders",
		"--group=abc":              "--group=abc",
		"main.sales.orders":        "main.sales.orders",
		"s3://b/p?x=1":             "'s3://b/p?x=1'",
		"/tmp/a b":                 "'/tmp/a b'",
		"it's":                     `'it'\''s'`,
		"":                         "''",
		"`my-cat`.sales.t":         "'`my-cat`.sales.t'",
		"$HOME":                    "'$HOME'",
		"a*":                       "'a*'",
		"customer_id=customer_key": "customer_id=customer_key",
		"café":                     "'café'",
	} {
		if got := Shell(in); got != want {
			t.Errorf("Shell(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestShellJoinRoundTrip: a POSIX shell splits ShellJoin's line back into the same words.
func TestShellJoinRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	args := []string{"zbrecover", "reload", "`my-cat`.sales.orders", "--rename", "a b=c", "it's", "", "$(touch /tmp/x)", "a\nb", `back\slash`, "*", "~"}
	line := ShellJoin(args...)
	got, err := exec.Command(sh, "-c", `f() { for a in "$@"; do printf '[%s]' "$a"; done; }; eval "f $1"`, "sh", line).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "[" + strings.Join(args, "][") + "]"
	if string(got) != want {
		t.Errorf("sh split %s into %q, want %q", line, got, want)
	}
}
