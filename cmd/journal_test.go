package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/internal/iostreams"
	"github.com/zbrecover/zbrecover/journal"
)

// TestLockBreaker: what --break-lock answers, and says, for each kind of holder, with and
// without --yes and a terminal.
func TestLockBreaker(t *testing.T) {
	since := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	holder := journal.Holder{User: "ops", Host: "build-7", PID: 4242, Command: "zbrecover reload main.sales.orders", Since: since}
	live := journal.LockedError{TableID: "t1", Where: "s3://j/t1/lock.json", Holder: holder, Live: true, Here: true, Age: 3 * time.Second}
	dead := journal.LockedError{TableID: "t1", Where: "s3://j/t1/lock.json", Holder: holder, Dead: true, Here: true, Age: 3 * time.Second}
	young := journal.LockedError{TableID: "t1", Where: "s3://j/t1/lock.json", Holder: holder, Since: since, Age: 3 * time.Second, TTL: journal.DefaultLockTTL}
	old := journal.LockedError{TableID: "t1", Where: "s3://j/t1/lock.json", Holder: holder, Since: since, Age: 25 * time.Hour, TTL: journal.DefaultLockTTL, Stale: true}
	for _, c := range []struct {
		name     string
		le       journal.LockedError
		yes, tty bool
		answer   string
		want     bool
		stderr   []string
		not      []string
	}{
		{name: "a live process of this host, --yes", le: live, yes: true, tty: true, answer: "y\n",
			stderr: []string{"held for 3s by ops@build-7, pid 4242", "running on this host: the lock is not broken"}, not: []string{"[y/N]"}},
		{name: "a process of this host that has ended, --yes", le: dead, yes: true, want: true,
			stderr: []string{"no longer running on this host"}},
		{name: "a process of this host that has ended, no --yes, no terminal", le: dead,
			stderr: []string{"Without a terminal, --break-lock needs --yes."}},
		{name: "another host, young, --yes, no terminal: refused", le: young, yes: true,
			stderr: []string{"held for 3s by ops@build-7, pid 4242", "runs on build-7", "the lock is younger than its lease of 24h0m0s, which ends 2026-05-07T07:08:09Z: it may still be working",
				"its rows loaded twice", "Without a terminal the lock is not broken, even with --yes", "Check that pid 4242 on build-7 has ended"}},
		{name: "another host, young, --yes at a terminal: asks, declined", le: young, yes: true, tty: true, answer: "\n",
			stderr: []string{"--yes does not break a lock younger than its lease", "Has pid 4242 on build-7 ended? Break the lock? [y/N]"}},
		{name: "another host, young, at a terminal: confirmed", le: young, tty: true, answer: "yes\n", want: true,
			stderr: []string{"Break the lock? [y/N]"}},
		{name: "another host, past its lease, --yes", le: old, yes: true, want: true,
			stderr: []string{"held for 25h0m0s", "older than its lease (24h0m0s)", "break it only if it is gone"}},
		{name: "another host, past its lease, no --yes, no terminal", le: old,
			stderr: []string{"Without a terminal, --break-lock needs --yes."}},
		{name: "another host, past its lease, at a terminal", le: old, tty: true, answer: "y\n", want: true,
			stderr: []string{"Break the lock? [y/N]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			io, in, _, errOut := iostreams.Test()
			io.SetStdinTTY(c.tty)
			io.SetStderrTTY(c.tty)
			in.WriteString(c.answer)
			f := NewFactory(io)
			le := c.le
			if got := f.lockBreaker(true, c.yes)(&le); got != c.want {
				t.Errorf("answer %v, want %v\n%s", got, c.want, errOut)
			}
			for _, want := range c.stderr {
				if !strings.Contains(errOut.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			for _, not := range c.not {
				if strings.Contains(errOut.String(), not) {
					t.Errorf("stderr holds %q:\n%s", not, errOut)
				}
			}
		})
	}
	io, _, _, _ := iostreams.Test()
	if NewFactory(io).lockBreaker(false, true) != nil {
		t.Error("a lock breaker without --break-lock")
	}
}
