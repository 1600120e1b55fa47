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

	"github.com/zbrecover/zbrecover/internal/textsafe"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/place"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/tableref"
)

// journalStore is an opened journal.
type journalStore = journal.Store

// openJournal opens --journal, or the local state directory.
func (f *Factory) openJournal(ctx context.Context, url string) (journal.Store, error) {
	if url == "" {
		dir, err := journal.DefaultDir()
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("journal directory %s: %w", dir, err)
		}
		return journal.OpenDir(dir)
	}
	loc, err := storage.Parse(url)
	if err != nil {
		return nil, fmt.Errorf("--journal: %w", err)
	}
	if loc.Scheme == "file" {
		if err := os.MkdirAll(loc.Path, 0o700); err != nil {
			return nil, fmt.Errorf("--journal %s: %w", loc.Path, err)
		}
		return journal.OpenDir(loc.Path)
	}
	b, err := f.openLocation(ctx, loc, f.Global.StorageConfig())
	if err != nil {
		return nil, fmt.Errorf("--journal: %w", err)
	}
	return journal.OpenRemote(b)
}

// checkJournalPlace refuses --journal url (place.Check) when it is, lies inside or contains
// the table's root or another table's, lies in a _zerobus/ folder, or is a table's root its
// probes find: before the journal records anything of the table. The local state directory
// (url "") is never in a table's storage.
func (f *Factory) checkJournalPlace(ctx context.Context, url string, tgt *tableref.Ref) error {
	if url == "" {
		return nil
	}
	_, err := f.checkedPlace(ctx, place.Journal, url, tgt, nil)
	return err
}

// openTableJournal opens the journal of a run on tgt once checkJournalPlace passed it, and
// records where it is in the run's summary.
func (f *Factory) openTableJournal(ctx context.Context, url string, tgt *tableref.Ref, s *runSummary) (journalStore, error) {
	if err := f.checkJournalPlace(ctx, url, tgt); err != nil {
		return nil, err
	}
	return f.openRunJournal(ctx, url, s)
}

// openRunJournal opens the journal at url (the local state directory when empty) and records
// where it is in the run's summary.
func (f *Factory) openRunJournal(ctx context.Context, url string, s *runSummary) (journalStore, error) {
	if url != "" {
		// A run writes to its journal: before the table is known (reload opens its journal
		// first), the place is checked against the tables the probes find, so that no folder
		// is made in a table's storage; checkJournalPlace checks it against the table once
		// the table is known.
		if _, err := f.checkedPlace(ctx, place.Journal, url, nil, nil); err != nil {
			return nil, err
		}
	}
	store, err := f.openJournal(ctx, url)
	if err != nil {
		return nil, err
	}
	s.Journal = store.Location()
	return store, nil
}

// closeJournal releases what the journal holds open (the local store's files).
func closeJournal(s journalStore) {
	if c, ok := s.(interface{ Close() error }); ok {
		_ = c.Close()
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
// holder and asks (yes: without asking). nil when the flag is not given.
func (f *Factory) lockBreaker(enabled, yes bool) func(*journal.LockedError) bool {
	if !enabled {
		return nil
	}
	return func(le *journal.LockedError) bool {
		h := le.Holder
		age := "for an unknown time"
		if le.Age > 0 {
			age = "for " + le.Age.Round(time.Second).String()
		}
		fmt.Fprintf(f.IO.ErrOut, "The lock of table %s (%s) is held %s by %s@%s, pid %d, running %q.\n",
			le.TableID, textsafe.Quote(le.Where), age, textsafe.Quote(orUnknown(h.User)), textsafe.Quote(orUnknown(h.Host)), h.PID, textsafe.Quote(h.Command))
		switch {
		case le.Live:
			fmt.Fprintln(f.IO.ErrOut, "That process is running (it holds the lock file open): the lock is not broken.")
			return false
		case le.Dead:
			fmt.Fprintln(f.IO.ErrOut, "That process is no longer running on this host.")
		default:
			fmt.Fprintln(f.IO.ErrOut, "Break it only if that process is gone: two runs of one table at once could load files twice.")
		}
		if yes {
			return true
		}
		if !f.IO.CanPrompt() {
			fmt.Fprintln(f.IO.ErrOut, "Without a terminal, --break-lock needs --yes.")
			return false
		}
		fmt.Fprint(f.IO.ErrOut, "Break the lock? [y/N] ")
		line, _ := bufio.NewReader(f.IO.In).ReadString('\n')
		a := strings.ToLower(strings.TrimSpace(line))
		return a == "y" || a == "yes"
	}
}
