package journal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/internal/redact"
	"github.com/zbrecover/zbrecover/storage"
)

// HiddenDir is the folder name to use for a journal placed under a table's storage root
// (`<root>/_zbrecover/`): Spark's file listing, and so COPY INTO and inspect, skip names that
// start with "_".
const HiddenDir = "_zbrecover"

// ErrRunConflict is returned (wrapped) by Append when another process has written the same
// record number of the run: two processes are writing one run.
var ErrRunConflict = errors.New("another process is writing this run")

// ErrLocked is returned (wrapped, in a *LockedError) by Lock when another process holds the
// table's lock.
var ErrLocked = errors.New("the table is locked by another process")

// Store keeps the runs of every table. Dir (a local directory) and Remote (any storage
// backend that can write) implement it.
type Store interface {
	// Location names the store for messages.
	Location() string
	// Append writes r durably: when it returns nil the record survives a crash. Every string
	// field is redacted. r.Seq must be the run's next record number; if another process
	// wrote that number, the error wraps ErrRunConflict and nothing is overwritten.
	Append(ctx context.Context, r Record) error
	// Read returns a run's records in seq order. A last record torn by a crash is left out
	// and reported in Log.Warnings; damage anywhere else is an error.
	Read(ctx context.Context, tableID, run string) (*Log, error)
	// RunIDs returns the ids of a table's runs, in no particular order.
	RunIDs(ctx context.Context, tableID string) ([]string, error)
	// Tables returns the table ids that have runs or a lock.
	Tables(ctx context.Context) ([]string, error)
	// Lock takes the table's lock, or fails with a *LockedError naming the holder.
	Lock(ctx context.Context, tableID string, o LockOptions) (Lock, error)
}

// Log is a run's records as read.
type Log struct {
	TableID, Run string
	Records      []Record
	Warnings     []string
}

// Lock is a held table lock. Close releases it.
type Lock interface {
	Close() error
}

// Renewer is a Lock held as a lease (LockOptions.Lease): Renew records that its holder is
// still working, so that the lock's age counts from now and no other process takes it as
// stale while the holder renews it within its lease. Renew fails with an error wrapping
// ErrLockLost when the lock is no longer this holder's (broken after its lease ran out, then
// taken): the holder must stop what the lock guards. Every Lock of Dir and Remote is one.
type Renewer interface {
	Renew(ctx context.Context) error
}

// ErrLockLost is returned (wrapped) by Renew when the lock was broken and is gone or held by
// another process.
var ErrLockLost = errors.New("the table's lock is no longer held by this process")

// DefaultLockTTL is the lease of a lock that cannot tell whether its holder is alive (an
// object-store lock, held by a process of another host): younger than this, the holder may
// still be working.
const DefaultLockTTL = 24 * time.Hour

// LockOptions say who takes a lock and how to treat one another process holds.
type LockOptions struct {
	Owner Holder // zero fields are filled in: user, host, pid, time
	// TTL is the lease of locks that cannot detect a dead holder (object stores, and the
	// local directory on systems without flock), DefaultLockTTL when zero. Force breaks a
	// lock older than TTL without asking, unless its holder is a live process of this host.
	TTL   time.Duration
	Force bool
	// Lease, when set, takes the lock as a lease of this length, recorded in the lock: its
	// holder renews it (Renewer) well before the lease ends, and any process judges the lock
	// by this lease instead of TTL, from its last renewal: a holder that stops renewing (it
	// was killed, or lost its connection) leaves a lock older than its lease once Lease has
	// passed, which Force then breaks. A live lock younger than its lease is never broken.
	Lease time.Duration
	// Break, when set, is asked about a lock another holder has (the operator's
	// --break-lock: shown the holder, it confirms, as LockedError.Rule allows); when it
	// returns true the lock is broken (deleted with its version as precondition) and taken.
	// It is never asked about a lock whose holder is a live process (a local flock, or the
	// holder's pid running on this host): such a lock is not broken.
	Break func(*LockedError) bool
}

// Holder is who holds a lock, as written in the lock.
type Holder struct {
	User    string    `json:"user,omitempty"`
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Command string    `json:"command,omitempty"`
	Since   time.Time `json:"since"`
	Token   string    `json:"token,omitempty"` // tells the holder its own lock from a successor's
	// PIDSpace names where PID means a process: the boot and the pid namespace of the
	// holder's system (Linux; "" elsewhere and in locks of earlier versions). Two machines
	// or containers that share a host name differ here, so that a pid is looked up only
	// where it is the holder's.
	PIDSpace string `json:"pid_space,omitempty"`
	// LeaseSeconds is the lease the holder renews its lock within (LockOptions.Lease); 0
	// for a lock that is not renewed, judged by the TTL of whoever finds it.
	LeaseSeconds int64 `json:"lease_seconds,omitempty"`
}

// lease returns the holder's lease, else ttl.
func (h Holder) lease(ttl time.Duration) time.Duration {
	if h.LeaseSeconds > 0 {
		return time.Duration(h.LeaseSeconds) * time.Second
	}
	return ttl
}

func (h Holder) String() string {
	who := h.User
	if who == "" {
		who = "unknown user"
	}
	if h.Host != "" {
		who += "@" + h.Host
	}
	if h.PID != 0 {
		who += fmt.Sprintf(" (pid %d)", h.PID)
	}
	if h.Command != "" {
		who += fmt.Sprintf(" running %q", h.Command)
	}
	if !h.Since.IsZero() {
		who += " since " + h.Since.UTC().Format(time.RFC3339)
	}
	return who
}

// BreakRule is what --break-lock may do with a lock another process holds (LockedError.Rule).
type BreakRule int

const (
	// BreakNever: the holder is a live process (a local flock, or its pid running on this
	// host): the lock is not broken.
	BreakNever BreakRule = iota + 1
	// BreakIfConfirmed: the holder cannot be checked from here (it ran on another host, or
	// this system cannot look up a pid) and the lock is younger than its lease (TTL), or
	// of unknown age: the holder may still be working. Only an operator who confirms at a
	// terminal breaks it; --yes alone does not.
	BreakIfConfirmed
	// BreakWithYes: the holder ran on this host and is gone, or the lock is older than its
	// lease: --yes breaks it, as a confirmation does.
	BreakWithYes
)

// LockedError says who holds a table's lock. It wraps ErrLocked.
type LockedError struct {
	TableID string
	Where   string // the lock file or object
	Holder  Holder // zero when the holder could not be read
	// Since is when the lock was taken, or its lease last renewed, as far as can be told (the
	// later of the holder's time and the store's, so that a skewed clock makes a lock look
	// younger, never older); zero when unknown. Age is how long since then (0 when Since is
	// unknown). Renewed is set when Since is a renewal of the holder's lease.
	Since   time.Time
	Age     time.Duration
	Renewed bool
	// TTL is the lock's lease (the holder's, when it recorded one); Stale is set when the
	// lock is older than it.
	TTL   time.Duration
	Stale bool
	// Here is set when the holder ran on this host, in this pid space.
	Here bool
	// Dead is set when the holder ran here and its process is gone.
	Dead bool
	// Live is set when the lock is held by a live process: a local flock, or a holder that
	// ran here whose pid is running. It is never broken.
	Live bool
	// byPID is set when Live was told from the holder's pid (which the system may have
	// given another process since), not from a flock.
	byPID bool
}

// Rule says what --break-lock may do with the lock.
func (e *LockedError) Rule() BreakRule {
	switch {
	case e.Live:
		return BreakNever
	case e.Dead || e.Stale:
		return BreakWithYes
	}
	return BreakIfConfirmed
}

// LeaseEnds is when the lock becomes older than its lease (zero when its age is unknown).
func (e *LockedError) LeaseEnds() time.Time {
	if e.Since.IsZero() || e.TTL <= 0 {
		return time.Time{}
	}
	return e.Since.Add(e.TTL)
}

func (e *LockedError) Error() string {
	msg := fmt.Sprintf("table %s is locked by %s (%s)", e.TableID, e.Holder, e.Where)
	switch {
	case e.Age > 0 && e.Renewed:
		msg += fmt.Sprintf(", its lease of %s last renewed %s ago", e.TTL, e.Age.Round(time.Second))
	case e.Age > 0:
		msg += fmt.Sprintf(", held for %s", e.Age.Round(time.Second))
	}
	switch {
	case e.Dead:
		msg += fmt.Sprintf(": its holder, pid %d on this host, is no longer running; run the command again with --break-lock to remove the lock", e.Holder.PID)
	case e.Live && e.byPID:
		msg += fmt.Sprintf(": another reload, verify or cleanup of this table is running (pid %d on this host); wait for it to finish. "+
			"--break-lock never breaks the lock of a running process (if pid %d is another program, its number reused, delete %s by hand)",
			e.Holder.PID, e.Holder.PID, e.Where)
	case e.Live:
		msg += ": another reload, verify or cleanup of this table is running; wait for it to finish"
	case e.Stale:
		msg += fmt.Sprintf(": another reload, verify or cleanup of this table is running, or one was killed and left its lock, older than its lease (%s); "+
			"if that process is gone, run the command again with --break-lock (it shows the holder and asks; --yes breaks it without asking)", e.TTL)
	default:
		msg += ": another reload, verify or cleanup of this table is running, or one was killed and left its lock; " +
			"if that process is gone, run the command again with --break-lock at a terminal (it shows the holder and asks; " +
			"the lock is younger than its lease"
		if t := e.LeaseEnds(); !t.IsZero() {
			msg += fmt.Sprintf(", which ends %s", t.UTC().Format(time.RFC3339))
		}
		msg += ", so --yes alone does not break it)"
	}
	return redact.String(msg)
}

// describe fills in what can be said of the holder at now, the lock taken at since (zero
// when unknown): its age, whether it is older than its lease, and whether it ran here and is
// running or gone.
func (e *LockedError) describe(now, since time.Time) {
	e.Since = since
	if !since.IsZero() {
		e.Age = now.Sub(since)
		e.Stale = e.TTL > 0 && e.Age > e.TTL
	}
	host, _ := os.Hostname()
	space := pidSpace()
	e.Here = e.Holder.PID > 0 && host != "" && e.Holder.Host == host &&
		(e.Holder.PIDSpace == "" || space == "" || e.Holder.PIDSpace == space)
	if e.Here && !e.Live {
		if alive, known := processAlive(e.Holder.PID); known {
			e.Live, e.Dead, e.byPID = alive, !alive, alive
		}
	}
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// holder returns the lock's holder: o.Owner with its empty fields set from the process, and
// the lease recorded (whole seconds, rounded up).
func (o LockOptions) holder(now time.Time) Holder {
	h := o.Owner.filled(now)
	if o.Lease > 0 {
		h.LeaseSeconds = int64((o.Lease + time.Second - 1) / time.Second)
	}
	return h
}

// filled returns h with its empty fields set from the process.
func (h Holder) filled(now time.Time) Holder {
	if h.User == "" {
		h.User = currentUser()
	}
	if h.Host == "" {
		h.Host, _ = os.Hostname()
	}
	if h.PID == 0 {
		h.PID = os.Getpid()
		h.PIDSpace = pidSpace()
	}
	if h.Since.IsZero() {
		h.Since = now.UTC()
	}
	if h.Token == "" {
		h.Token = randomHex(8)
	}
	h.Command = redact.String(h.Command)
	return h
}

func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return os.Getenv("USER")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// NewRunID returns a new run id: the UTC start time and a random suffix, so that ids sort by
// time and two runs started in the same second differ ("20250102T030405Z-1a2b3c4d").
func NewRunID(t time.Time) string {
	return t.UTC().Format("20060102T150405Z") + "-" + randomHex(4)
}

// DefaultDir is the local journal directory: $XDG_STATE_HOME/zbrecover when XDG_STATE_HOME
// is an absolute path (the XDG base directory rule), else ~/.local/state/zbrecover.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "zbrecover"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("journal directory: %w (set XDG_STATE_HOME or pass a journal location)", err)
	}
	return filepath.Join(home, ".local", "state", "zbrecover"), nil
}

// Target is what a run is about.
type Target struct {
	TableID string // UC table_id, else Delta metaData.id
	Table   string // catalog.schema.table, when known
	Root    string // the fallback root, for display (redacted when written)
}

// now is the clock of writers and locks; tests set it.
var now = time.Now

// Writer appends the records of one run, numbering them. It is safe for concurrent use.
type Writer struct {
	s    Store
	t    Target
	run  string
	mu   sync.Mutex
	next int
	err  error // the first failed Append: the writer stops there
	now  func() time.Time
}

// Start opens a new run on t with id run (NewRunID when empty) and writes its run record.
// The caller holds the table's lock.
func Start(ctx context.Context, s Store, t Target, run string, h Header) (*Writer, error) {
	if run == "" {
		run = NewRunID(time.Now())
	}
	w := &Writer{s: s, t: t, run: run, next: 1, now: now}
	if err := w.Append(ctx, Record{Kind: KindRun, Header: &h}); err != nil {
		return nil, err
	}
	return w, nil
}

// Continue writes a run record for this process after the records st was replayed from and
// returns a writer for what follows. The caller holds the table's lock; if another process
// has written to the run since, the error wraps ErrRunConflict.
func Continue(ctx context.Context, s Store, st *State, h Header) (*Writer, error) {
	w := &Writer{s: s, t: Target{TableID: st.TableID, Table: st.Table, Root: st.Root}, run: st.Run, next: st.LastSeq + 1, now: now}
	if err := w.Append(ctx, Record{Kind: KindRun, Header: &h}); err != nil {
		return nil, err
	}
	return w, nil
}

// Run returns the run id.
func (w *Writer) Run() string { return w.run }

// Seq returns the number of the last record written.
func (w *Writer) Seq() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.next - 1
}

// Append fills in r's header (version, run, seq, time, table) and writes it durably.
//
// After a failed write, whether the record was stored is unknown (a lost answer, a failed
// fsync), so the writer stops: every later Append fails, and the run is continued by a new
// process that reads what was stored. Records refused before any write (invalid ones) do
// not stop the writer.
func (w *Writer) Append(ctx context.Context, r Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return fmt.Errorf("journal: run %s: an earlier record could not be written (%v); continue the run in a new process", w.run, w.err)
	}
	r.V, r.Run, r.Seq, r.TableID = Version, w.run, w.next, w.t.TableID
	if r.Table == "" {
		r.Table = w.t.Table
	}
	if r.Root == "" {
		r.Root = w.t.Root
	}
	if r.Time.IsZero() {
		r.Time = w.now().UTC()
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := w.s.Append(ctx, r); err != nil {
		w.err = err
		return err
	}
	w.next++
	if r.Kind == KindEnd {
		w.writeSnapshot(ctx)
	}
	return nil
}

// RunSummary is one line of history.
type RunSummary struct {
	TableID      string    `json:"table_id"`
	Table        string    `json:"table"`
	Root         string    `json:"root"`
	Run          string    `json:"run"`
	Started      time.Time `json:"started"`
	Command      string    `json:"command"`
	User         string    `json:"user"`
	Status       RunStatus `json:"status"`
	Batches      int       `json:"batches"`
	Files        int       `json:"files"`
	ExpectedRows int64     `json:"expected_rows"`
	InsertedRows int64     `json:"inserted_rows"`
	// UndoneRows are the rows of the run zbrecover undo took back (of InsertedRows).
	UndoneRows int64  `json:"undone_rows,omitempty"`
	Problem    string `json:"problem,omitempty"` // why the run could not be read or replayed; Status is then ""
	// Wedged says, when two processes wrote the run at once, how it was read and what to do
	// (Wedge.Message); "" otherwise.
	Wedged string `json:"wedged,omitempty"`
	// StagedLeft counts the verified files whose staged copy is still there: a cleaned run
	// with none has nothing left for cleanup. History does not show it.
	StagedLeft int `json:"-"`
}

// Runs returns the summaries of a table's runs, newest first. A run that cannot be read or
// replayed is listed with its Problem, not dropped. Runs are read from their snapshots where
// those are current, so that history does not replay every run.
func Runs(ctx context.Context, s Store, tableID string) ([]RunSummary, error) {
	entries, err := scanRuns(ctx, s, tableID, nil, false, nil)
	if err != nil {
		return nil, err
	}
	return summaries(tableID, entries), nil
}

func summaries(tableID string, entries []runEntry) []RunSummary {
	out := make([]RunSummary, 0, len(entries))
	for _, e := range entries {
		if e.err != nil {
			out = append(out, RunSummary{TableID: tableID, Run: e.run, Problem: redact.String(e.err.Error())})
			continue
		}
		out = append(out, e.info.sum)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].Run > out[j].Run
	})
	return out
}

// ReadState reads a run and replays it; the read's warnings join the state's.
func ReadState(ctx context.Context, s Store, tableID, run string) (*State, error) {
	return readStateFrom(ctx, s, tableID, run)
}

// SameRoot reports whether two roots, as records show them (display strings, a SAS
// redacted), are the same place: storage.Location.Equal of the two parsed, so that a fresh
// SAS, a trailing "/", abfss:// for wasbs:// or a host in capitals still find the runs. A root
// that does not parse (an edited record) is compared as written, less its query and trailing
// "/".
func SameRoot(a, b string) bool {
	la, errA := storage.Parse(a)
	lb, errB := storage.Parse(b)
	if errA == nil && errB == nil {
		return la.Equal(lb)
	}
	return rootKey(a) == rootKey(b)
}

func rootKey(s string) string {
	if i := strings.IndexByte(s, '?'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, "/")
}

// LatestUnfinished returns the newest run of the table on root (compared with SameRoot) that
// a re-run continues (State.Unfinished), or nil when there is none. A run of the table that
// cannot be read or replayed is an error: what it did is unknown. Only the run returned is
// replayed; the others are read from their snapshots where those are current.
func LatestUnfinished(ctx context.Context, s Store, tableID, root string) (*State, error) {
	entries, err := scanRuns(ctx, s, tableID, nil, false, nil)
	if err != nil {
		return nil, err
	}
	byRun := map[string]*runInfo{}
	for _, e := range entries {
		if e.err != nil {
			return nil, fmt.Errorf("run %s of table %s cannot be replayed: %s", e.run, tableID, redact.String(e.err.Error()))
		}
		byRun[e.run] = e.info
	}
	for _, sum := range summaries(tableID, entries) {
		if !SameRoot(sum.Root, root) || !byRun[sum.Run].unfinished {
			continue
		}
		st, err := ReadState(ctx, s, tableID, sum.Run)
		if err != nil {
			return nil, err
		}
		if st.Unfinished() {
			return st, nil
		}
	}
	return nil, nil
}

// BatchRef names one batch of one run, with what settling needs to know of it.
type BatchRef struct {
	Run   string
	Batch int
	// Rows the batch's statement inserted (its answer), or its expected rows.
	Rows int64
	// Base is the batch's first base version, when recorded.
	Base *int64
}

// TableFacts is what the journal says about a table, over every run of it.
type TableFacts struct {
	// Runs are the ids of the table's runs.
	Runs map[string]bool
	// Loaded are the files some run shows verified or possibly loaded (FileState.Run and
	// FileState.Root say where): a re-run or staging must not load them again, or through a
	// second path.
	Loaded []FileState
	// Claimed are the table versions batches were proved by (their commit), with the batch:
	// a claimed commit settles no other batch.
	Claimed map[int64]BatchRef
	// Unpinned are batches whose statement answered with rows (so committed) but whose
	// commit version is unknown: any unclaimed commit after their base may be theirs.
	Unpinned []BatchRef
	// Sources are the folder URLs each run's statements read (run id → source; "" for
	// journals of earlier versions).
	Sources map[string]string
	// Undone counts, by file key, the runs whose batch holding the file was undone
	// (zbrecover undo): such a file is not loaded (unless Loaded lists it too), and a load
	// of it again must read it through a path no earlier load read (see reload's staged
	// copies).
	Undone map[string]int
}

// FactsFor reads every run of the table, with Loaded narrowed to the files whose key keep
// accepts (none when keep is nil): what a reload needs of a table whose journal names many
// more files than its fallback folder still holds, without holding them all. A run that cannot
// be replayed is an error, since what it loaded is unknown. Runs are read from their snapshots
// where those are current.
func FactsFor(ctx context.Context, s Store, tableID string, keep func(key string) bool) (*TableFacts, error) {
	if keep == nil {
		keep = func(string) bool { return false }
	}
	return facts(ctx, s, tableID, keep, false)
}

func facts(ctx context.Context, s Store, tableID string, keep func(string) bool, share bool) (*TableFacts, error) {
	f := &TableFacts{Runs: map[string]bool{}, Claimed: map[int64]BatchRef{}, Sources: map[string]string{}, Undone: map[string]int{}}
	if keep == nil {
		// Every loaded file is kept: the summaries (read once, then from the cache) say how
		// many there are.
		entries, err := scanRuns(ctx, s, tableID, nil, false, nil)
		if err != nil {
			return nil, err
		}
		n := 0
		for _, e := range entries {
			if e.info != nil {
				n += e.info.loaded
			}
		}
		f.Loaded = make([]FileState, 0, n)
	}
	entries, err := scanRuns(ctx, s, tableID, keep, share, func(fs []FileState) { f.Loaded = append(f.Loaded, fs...) })
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.err != nil {
			return nil, fmt.Errorf("run %s of table %s: %w", e.run, tableID, e.err)
		}
		f.Runs[e.run] = true
		f.Sources[e.run] = e.info.source
		for _, c := range e.info.claimed {
			f.Claimed[c.Version] = c.Ref
		}
		f.Unpinned = append(f.Unpinned, e.info.unpinned...)
		for _, k := range e.info.undone {
			if keep == nil || keep(k) {
				f.Undone[k]++
			}
		}
	}
	return f, nil
}
