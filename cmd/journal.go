package cmd

// The journal, as cmd sees it: opened here, handed to reload, cleanup, verify and history,
// which read and write it. No other file of cmd imports package journal (arch_test.go).

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/history"
	"github.com/zbrecover/zbrecover/internal/textsafe"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/recovery"
	"github.com/zbrecover/zbrecover/tableref"
)

// journalStore is an opened journal.
type journalStore = journal.Store

// closeJournal releases what the journal holds open (the local store's files).
var closeJournal = recovery.CloseJournal

// openTableJournal opens the journal of a run on tgt once it is checked against it, and
// records where it is in the run's summary.
func (f *Factory) openTableJournal(ctx context.Context, url string, tgt *tableref.Ref, s *runSummary) (journalStore, error) {
	store, err := f.places().OpenTableJournal(ctx, url, tgt)
	if err != nil {
		return nil, err
	}
	s.Journal = store.Location()
	return store, nil
}

// openRunJournal opens the journal at url (the local state directory when empty) and records
// where it is in the run's summary.
func (f *Factory) openRunJournal(ctx context.Context, url string, s *runSummary) (journalStore, error) {
	store, err := f.places().OpenRunJournal(ctx, url)
	if err != nil {
		return nil, err
	}
	s.Journal = store.Location()
	return store, nil
}

// warnWedged says, on stderr and in the summary's notes, how the journal read each run of the
// table the command read that two processes wrote at once (journal.Wedge), and how to go on.
func (f *Factory) warnWedged(store journalStore, tableID string, s *runSummary) {
	if store == nil || tableID == "" {
		return
	}
	for _, w := range history.Wedged(store, tableID) {
		fmt.Fprintf(f.IO.ErrOut, "warning: %s\n", textsafe.Escape(w))
		if s != nil {
			s.Notes = append(s.Notes, w)
		}
	}
}

// header is this process's journal run record.
func header(identity string) journal.Header {
	h := journal.Header{Identity: identity, PID: os.Getpid(), Command: strings.Join(os.Args, " "), ToolVersion: Version}
	if u, err := user.Current(); err == nil {
		h.User = u.Username
	}
	h.Host, _ = os.Hostname()
	return h
}

// lockBreaker is the --break-lock answer to a lock another process holds: it shows the
// holder, how long it has held the lock and what breaking it would risk, and answers as the
// lock's rule allows (journal.LockedError.Rule): a live process of this host is never broken
// (the journal does not even ask); a holder that cannot be checked from here, younger than
// its lease, only with a confirmation at a terminal, --yes or not; a holder of this host that
// has ended, or a lock past its lease, with --yes or a confirmation. nil when the flag is not
// given.
func (f *Factory) lockBreaker(enabled, yes bool) func(*journal.LockedError) bool {
	if !enabled {
		return nil
	}
	return func(le *journal.LockedError) bool {
		out := f.IO.ErrOut
		h := le.Holder
		age := "for an unknown time"
		if le.Age > 0 {
			age = "for " + le.Age.Round(time.Second).String()
		}
		host := textsafe.Quote(orUnknown(h.Host))
		fmt.Fprintf(out, "The lock of table %s (%s) is held %s by %s@%s, pid %d, running %q.\n",
			le.TableID, textsafe.Quote(le.Where), age, textsafe.Quote(orUnknown(h.User)), host, h.PID, textsafe.Quote(h.Command))
		const risk = "Breaking the lock of a process that is still working lets two runs of the table overlap: " +
			"both could send one batch (its rows loaded twice), and a cleanup could delete files the other run is loading."
		switch le.Rule() {
		case journal.BreakNever:
			fmt.Fprintln(out, "That process is running on this host: the lock is not broken. Wait for it to finish.")
			return false
		case journal.BreakWithYes:
			if le.Dead {
				fmt.Fprintln(out, "That process is no longer running on this host.")
			} else {
				fmt.Fprintf(out, "The lock is older than its lease (%s), but that process cannot be checked from here: "+
					"break it only if it is gone. %s\n", le.TTL, risk)
			}
			if yes {
				return true
			}
			if !f.IO.CanPrompt() {
				fmt.Fprintln(out, "Without a terminal, --break-lock needs --yes.")
				return false
			}
		case journal.BreakIfConfirmed:
			where := "on " + host
			if le.Here {
				where = "on this host, where this system cannot look up its pid"
			}
			lease := "the lock's age is unknown"
			if t := le.LeaseEnds(); !t.IsZero() {
				lease = fmt.Sprintf("the lock is younger than its lease of %s, which ends %s", le.TTL, t.UTC().Format(time.RFC3339))
			}
			fmt.Fprintf(out, "That process runs %s, and %s: it may still be working. %s\n", where, lease, risk)
			if !f.IO.CanPrompt() {
				fmt.Fprintf(out, "Without a terminal the lock is not broken, even with --yes. Check that pid %d %s has ended, "+
					"then run the command again at a terminal with --break-lock and confirm; or, once its lease has ended, "+
					"with --break-lock --yes; or wait for it to finish.\n", h.PID, where)
				return false
			}
			if yes {
				fmt.Fprintln(out, "--yes does not break a lock younger than its lease: confirm that the process has ended.")
			}
			fmt.Fprintf(out, "Has pid %d %s ended? Break the lock? [y/N] ", h.PID, where)
			return f.confirmed()
		}
		fmt.Fprint(out, "Break the lock? [y/N] ")
		return f.confirmed()
	}
}

// confirmed reads the operator's answer to a question: y or yes.
func (f *Factory) confirmed() bool {
	line, _ := bufio.NewReader(f.IO.In).ReadString('\n')
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}
