package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/zbrecover/zbrecover/storage"
)

// exitedPID returns the pid of a process of this host that has ended.
func exitedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot start a process: %v", err)
	}
	return cmd.Process.Pid
}

// TestLockBreakRules: what --break-lock may do with an object-store lock, by who holds it
// and how old it is (a fake clock; a live pid, this process's, and a pid that has exited).
func TestLockBreakRules(t *testing.T) {
	ctx := context.Background()
	host, _ := os.Hostname()
	if host == "" {
		t.Skip("no host name")
	}
	live, dead := os.Getpid(), exitedPID(t)
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	type tc struct {
		name   string
		holder Holder
		// stored is when the store wrote the lock object (base when zero); age is how long
		// after base the lock is looked at.
		stored time.Time
		age    time.Duration
		rule   BreakRule
		msg    []string
	}
	cases := []tc{
		{name: "a live process of this host, just taken", holder: Holder{Host: host, PID: live, PIDSpace: pidSpace()},
			rule: BreakNever, msg: []string{fmt.Sprintf("(pid %d on this host); wait for it to finish", live), "--break-lock never breaks the lock of a running process"}},
		{name: "a live process of this host, past its lease", holder: Holder{Host: host, PID: live, PIDSpace: pidSpace()}, age: 25 * time.Hour,
			rule: BreakNever, msg: []string{"wait for it to finish"}},
		{name: "a process of this host that has ended, just taken", holder: Holder{Host: host, PID: dead, PIDSpace: pidSpace()},
			rule: BreakWithYes, msg: []string{fmt.Sprintf("pid %d on this host, is no longer running", dead)}},
		{name: "another host, just taken", holder: Holder{Host: "build-7.example", PID: live}, age: 3 * time.Second,
			rule: BreakIfConfirmed, msg: []string{"held for 3s", "--break-lock at a terminal", "younger than its lease, which ends 2026-01-03T03:04:05Z, so --yes alone does not break it"}},
		{name: "another host, an hour short of its lease", holder: Holder{Host: "build-7.example", PID: live}, age: 23 * time.Hour,
			rule: BreakIfConfirmed, msg: []string{"--yes alone does not break it"}},
		{name: "another host, past its lease", holder: Holder{Host: "build-7.example", PID: live}, age: 25 * time.Hour,
			rule: BreakWithYes, msg: []string{"older than its lease (24h0m0s)", "--yes breaks it without asking"}},
		{name: "the holder's clock far behind the store's: the store's time counts", holder: Holder{Host: "build-7.example", Since: base.Add(-48 * time.Hour)},
			age: time.Minute, rule: BreakIfConfirmed, msg: []string{"held for 1m0s"}},
		{name: "a holder of unknown pid on this host", holder: Holder{Host: host},
			rule: BreakIfConfirmed},
	}
	if space := pidSpace(); space != "" {
		cases = append(cases, tc{name: "this host's name in another pid space (another machine or container)",
			holder: Holder{Host: host, PID: dead, PIDSpace: "another-boot/pid:[1]"}, rule: BreakIfConfirmed})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			be := &memStore{objs: map[string]memObject{}}
			key := target.TableID + "/lock.json"
			plantLock := func() {
				t.Helper()
				h := c.holder
				h.User, h.Command, h.Token = "ops", "zbrecover reload main.sales.orders", "held"
				if h.Since.IsZero() {
					h.Since = base
				}
				data, err := json.Marshal(h)
				must(t, err)
				defer func(f func() time.Time) { now = f }(now)
				now = func() time.Time { return base }
				_, err = be.Put(ctx, key, strings.NewReader(string(data)), int64(len(data)), storage.PutOptions{})
				must(t, err)
			}
			plantLock()
			j, err := OpenRemote(be)
			must(t, err)
			j.now = func() time.Time { return base.Add(c.age) }

			var asked *LockedError
			_, err = j.Lock(ctx, target.TableID, LockOptions{Break: func(le *LockedError) bool { asked = le; return false }})
			var le *LockedError
			if !errors.As(err, &le) {
				t.Fatalf("lock: %v, want a LockedError", err)
			}
			if le.Rule() != c.rule || le.Age != c.age {
				t.Errorf("rule %d, age %s; want %d, %s", le.Rule(), le.Age, c.rule, c.age)
			}
			if (asked != nil) != (c.rule != BreakNever) {
				t.Errorf("Break asked: %v, for rule %d", asked != nil, c.rule)
			}
			for _, want := range c.msg {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q lacks %q", err, want)
				}
			}

			// Break answers yes: the lock is broken unless its holder is a live process.
			l, err := j.Lock(ctx, target.TableID, LockOptions{Owner: Holder{User: "next"}, Break: func(*LockedError) bool { return true }})
			if c.rule == BreakNever {
				if !errors.Is(err, ErrLocked) {
					t.Fatalf("a live holder's lock was broken: %v", err)
				}
				if data, _ := storage.ReadAll(ctx, be, key, 0, -1); !strings.Contains(string(data), `"token":"held"`) {
					t.Errorf("the lock object changed: %s", data)
				}
			} else {
				must(t, err)
				must(t, l.Close())
			}

			// Force, without asking, breaks only a lock past its lease whose holder is not
			// a live process.
			plantLock()
			l, err = j.Lock(ctx, target.TableID, LockOptions{Force: true})
			if broken := err == nil; broken != (c.rule == BreakWithYes && le.Stale) {
				t.Errorf("Force: broken %v (%v), rule %d, stale %v", broken, err, c.rule, le.Stale)
			}
			if err == nil {
				must(t, l.Close())
			}
		})
	}
}
