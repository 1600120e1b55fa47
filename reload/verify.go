package reload

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/keyfile"
	"github.com/zbrecover/zbrecover/sqlstmt"
	"github.com/zbrecover/zbrecover/storage"
	"github.com/zbrecover/zbrecover/tableref"
)

// EvidenceKey is a batch proved in the table by key: every key of its files is there (a
// passing verify --key), and no commit since removed rows.
const EvidenceKey journal.Evidence = "key"

// VerifyReport is the re-check of one run, batch by batch.
type VerifyReport struct {
	Run     string          `json:"run"`
	TableID string          `json:"table_id"`
	Table   string          `json:"table"`
	Status  string          `json:"status"`
	Checks  []journal.Check `json:"checks"`
	OK      bool            `json:"ok"`
	// Failed counts the batches whose counts do not agree, are not known, or whose rows
	// may have left the table; Review the batches whose rows are in the table by weaker
	// evidence only (cleanup keeps their files until verify --key proves them).
	Failed int `json:"failed_batches"`
	Review int `json:"needs_review_batches"`
	// Checked says what was read to check: the journal, the table's history from a version
	// on, the keys.
	Checked  []string          `json:"checked"`
	Removals []journal.Removal `json:"removals"`
	Expected int64             `json:"expected_rows"`
	Inserted int64             `json:"inserted_rows"`
	// Pinned counts the batches whose commit version this check found and recorded.
	Pinned    int    `json:"pinned_batches,omitempty"`
	Guarantee string `json:"guarantee"`
	// Merge is the state of a load by key's MERGE; Keys the key check (verify --key).
	Merge *MergeCheck `json:"merge,omitempty"`
	Keys  *KeyCheck   `json:"keys,omitempty"`
	// Files counts the run's files; BatchStates its batches by state (for summaries).
	Files       int            `json:"-"`
	BatchStates map[string]int `json:"-"`
}

// Checker re-checks a run against the table now (cleanup's independent evidence).
type Checker struct {
	Warehouse Warehouse
	Table     databricks.TableName
	// Identity is current_user(), for finding the commits of batches whose version the
	// journal does not record.
	Identity string
	// OpenKeys opens the location of a keys file (as the journal names it), so that its rows
	// are counted per file against the footers. Without it, no batch is proved by key.
	OpenKeys       func(ctx context.Context, location string) (storage.Backend, error)
	HistoryRetries int
	Backoff        time.Duration
}

// LazyChecker is a Checker whose warehouse is opened at the first check: a cleanup that finds
// nothing to check needs no workspace.
type LazyChecker struct {
	// Table is the table to check when the run names none.
	Table string
	// Connect opens the warehouse that checks table and returns it with its identity
	// (current_user()).
	Connect  func(ctx context.Context, table databricks.TableName) (Warehouse, string, error)
	OpenKeys func(ctx context.Context, location string) (storage.Backend, error)
}

// Check opens the warehouse and checks st as Checker.Check does.
func (c LazyChecker) Check(ctx context.Context, st *journal.State) (*journal.Verification, error) {
	var name databricks.TableName
	var err error
	if st.Table != "" {
		name, err = databricks.TableNameFromString(st.Table) // as the journal spells it
	} else {
		name, err = databricks.ParseTableName(c.Table) // as the operator gave it
	}
	if err != nil {
		return nil, fmt.Errorf("the run names no table to check (%v)", err)
	}
	wh, identity, err := c.Connect(ctx, name)
	if err != nil {
		return nil, err
	}
	return Checker{Warehouse: wh, Table: name, Identity: identity, OpenKeys: c.OpenKeys}.Check(ctx, st)
}

// Check reads the table's history since the run's first load and judges every batch: the
// verification to record (By "cleanup"). It writes nothing.
//
// When the journal records keys files of the run, every key they hold is checked against the
// table too (one statement), and each file's rows in them are counted against its footer: when
// every key is there and every file's rows are counted, the batches the keys files cover are
// proved by key, whatever the history says of their commits. One key missing, or one file not
// wholly in the keys files, and no batch is proved by key (as verify --key fails then).
func (c Checker) Check(ctx context.Context, st *journal.State) (*journal.Verification, error) {
	v, err := c.keysNow(ctx, st)
	if err != nil {
		return nil, err
	}
	if v != nil {
		cp := *st
		cp.KeyCheck = v
		st = &cp
	}
	rep, _, err := recheck(ctx, c, st)
	if err != nil {
		return nil, err
	}
	out := rep.verification("cleanup")
	if v != nil {
		out.Keys, out.TableVersion = v.Keys, v.TableVersion
	}
	return out, nil
}

// keysNow checks the run's keys files against the table now: nil when the run has none.
func (c Checker) keysNow(ctx context.Context, st *journal.State) (*journal.Verification, error) {
	if len(st.KeysFiles) == 0 {
		return nil, nil
	}
	keys := Keys(st.KeysFiles[len(st.KeysFiles)-1].Columns)
	var files []journal.KeysFile
	for _, kf := range st.KeysFiles {
		if sameKey(kf.Columns, keys) {
			files = append(files, kf)
		}
	}
	latest, err := c.history(c.Table).latest(ctx)
	if err != nil {
		return nil, err
	}
	kc, per, err := ReconcileKeysFiles(ctx, c.Warehouse, c.Table, keys, files)
	if err != nil {
		return nil, err
	}
	res := &journal.KeyResult{Key: keys, Keys: kc.Keys, Missing: kc.Missing, OK: kc.OK}
	if c.OpenKeys == nil {
		res.OK, res.Note = false, "the keys files could not be opened to count each file's rows"
	} else {
		rows, note := countKeysFiles(ctx, st, files, c.OpenKeys)
		res.Rows = rows
		if note != "" {
			res.OK, res.Note = false, note
		}
	}
	if res.OK {
		for _, p := range per {
			var n int
			if _, err := fmt.Sscan(p.Label, &n); err == nil && p.Missing == 0 {
				res.Batches = append(res.Batches, n)
			}
		}
	}
	return &journal.Verification{Keys: res, TableVersion: &latest}, nil
}

func (c Checker) history(table databricks.TableName) *history {
	retries, backoff := c.HistoryRetries, c.Backoff
	if retries <= 0 {
		retries = 3
	}
	if backoff <= 0 {
		backoff = time.Second
	}
	return &history{wh: c.Warehouse, table: table, retries: retries, backoff: backoff}
}

// verification is the record of rep.
func (rep *VerifyReport) verification(by string) *journal.Verification {
	ok := rep.OK
	v := &journal.Verification{Checks: rep.Checks, OK: &ok, By: by, Removals: rep.Removals}
	return v
}

// recheck judges st against the table's history. It returns the report and the commits
// read (nil when no batch needed them).
func recheck(ctx context.Context, c Checker, st *journal.State) (*VerifyReport, *commits, error) {
	rep := &VerifyReport{Run: st.Run, TableID: st.TableID, Table: st.Table, Status: string(st.Status), Checks: []journal.Check{},
		Removals: []journal.Removal{}, OK: true, Guarantee: Guarantee, Checked: []string{"the journal's records of run " + st.Run}}
	if st.Merge != nil {
		rep.Guarantee = GuaranteeDedupe
	}
	floor, ok := historyFloor(st)
	var cs *commits
	if ok {
		var err error
		if cs, err = c.history(c.Table).since(ctx, floor); err != nil {
			return nil, nil, fmt.Errorf("read the table's history: %w", err)
		}
		rep.Checked = append(rep.Checked, fmt.Sprintf("the table's history after version %d (%d commits, up to version %d)", floor, len(cs.List), cs.Latest))
		for _, cm := range cs.List {
			if cm.RemovesRows() {
				rep.Removals = append(rep.Removals, journal.Removal{Version: cm.Version, Operation: cm.Operation, User: cm.User})
			}
		}
	}
	keys := st.KeyCheck
	if keys != nil {
		rep.Checked = append(rep.Checked, fmt.Sprintf("the key check of %s (%s)", strings.Join(keys.Keys.Key, ","), okWord(keys.Keys.OK)))
	}
	for _, b := range st.Batches {
		ch := judge(st, b, cs, keys)
		rep.Expected += b.ExpectedRows
		if ch.Inserted != nil {
			rep.Inserted += *ch.Inserted
		}
		switch {
		case !ch.OK:
			rep.OK = false
			rep.Failed++
		case ch.Evidence == "" && b.Status == journal.BatchVerified:
			rep.Review++
		}
		rep.Checks = append(rep.Checks, ch)
	}
	if st.Merge != nil {
		rep.Merge = checkMerge(st)
		if !rep.Merge.OK {
			rep.OK = false
		}
	}
	return rep, cs, nil
}

func okWord(ok bool) string {
	if ok {
		return "passed"
	}
	return "failed"
}

// historyFloor is the version after which the table's history must be read to judge the
// run: just before the earliest commit or base any batch records. ok is false when no
// batch records one (nothing to read).
func historyFloor(st *journal.State) (int64, bool) {
	floor, ok := int64(0), false
	note := func(v int64) {
		if !ok || v < floor {
			floor, ok = v, true
		}
	}
	for _, b := range st.Batches {
		if b.Status != journal.BatchVerified {
			continue
		}
		if b.Outcome != nil && b.Outcome.Version != nil && st.Merge == nil {
			note(*b.Outcome.Version - 1)
		}
		if b.FirstBase != nil && st.Merge == nil {
			note(*b.FirstBase)
		}
	}
	if st.Merge != nil && st.Merge.Intent != nil && st.Merge.Intent.BaseVersion != nil {
		note(*st.Merge.Intent.BaseVersion)
	}
	if st.KeyCheck != nil && st.KeyCheck.TableVersion != nil {
		note(*st.KeyCheck.TableVersion)
	}
	return floor, ok
}

// judge checks one batch: what proves its rows in the table now, or why nothing does.
func judge(st *journal.State, b *journal.BatchState, cs *commits, keys *journal.Verification) journal.Check {
	c := journal.Check{Batch: b.Batch, Expected: b.ExpectedRows, OK: true}
	if b.Result != nil && b.Result.Inserted != nil {
		c.Inserted = b.Result.Inserted
	}
	if b.Status == journal.BatchUndone {
		// Taken back by zbrecover undo: its rows are gone by design, nothing proves them
		// (its old commit least of all), and cleanup keeps its files.
		c.Note = "undone: its rows were taken back by zbrecover undo"
		if u := b.Undo.Outcome; u != nil && u.Version != nil {
			c.Note += fmt.Sprintf(" (version %d)", *u.Version)
		}
		return c
	}
	if b.Status != journal.BatchVerified {
		c.OK = false
		c.Note = fmt.Sprintf("batch is %s", b.Status)
		if b.Outcome != nil && b.Outcome.Reason != "" {
			c.Note += ": " + b.Outcome.Reason
		}
		return c
	}
	var notes []string
	ev := b.Evidence()
	if ev == "" {
		// A journal of an earlier version: an answer with the expected count, or a commit
		// settled from the history without a tag.
		if c.Inserted != nil && *c.Inserted == c.Expected && (b.Outcome == nil || b.Outcome.Version == nil) {
			ev = journal.EvidenceAnswer
		} else {
			ev = journal.EvidenceHistory
		}
	}
	// after is the version after which a commit removing rows undoes the evidence.
	var after *int64
	switch {
	case st.Merge != nil:
		if st.Merge.MergedSeq == 0 || b.IntentSeq > st.Merge.MergedSeq {
			c.OK = false
			c.Note = "the load by key's MERGE has not committed after this batch: its rows are in the staging table only"
			return c
		}
		ev = journal.EvidenceMerge
		if st.Merge.Intent != nil && st.Merge.Intent.BaseVersion != nil {
			v := *st.Merge.Intent.BaseVersion
			after = &v
		} else {
			notes = append(notes, "the MERGE's base version is not recorded (a journal of an earlier version)")
			ev = ""
		}
	case b.Outcome != nil && b.Outcome.Version != nil:
		v := *b.Outcome.Version
		after = &v
		switch cm, found := cs.atOK(v); {
		case found:
			rows, _ := cm.OutputRows()
			c.History = &rows
			if ok, why := confirm(cm, batchFacts{Run: st.Run, Batch: b.Batch, Tags: b.Tags, Rows: c.Expected}, ev == journal.EvidenceTag); !ok {
				c.OK = false
				c.Note = why
				return c
			}
		case cs != nil && cs.Whole:
			c.OK = false
			c.Note = fmt.Sprintf("version %d, recorded as the batch's commit, is not in the table's history", v)
			return c
		default:
			notes = append(notes, fmt.Sprintf("the table's history no longer reaches version %d, the batch's commit", v))
			if ev != journal.EvidenceAnswer {
				ev = ""
			}
		}
	case b.FirstBase != nil:
		v := *b.FirstBase
		after = &v
		notes = append(notes, "its commit version is not recorded")
	default:
		notes = append(notes, "the journal records no base version for it (a journal of an earlier version)")
		ev = ""
	}
	if ev == journal.EvidenceHistory {
		notes = append(notes, "settled from the table's history without a commit tag (weaker evidence: another writer with the same identity could have made that commit)")
		ev = ""
	}
	// A commit that removed or rewrote rows after the batch loaded undoes every proof of it
	// from the history.
	if after != nil && cs != nil {
		for _, cm := range cs.List {
			if cm.Version > *after && cm.RemovesRows() && !undoneBy(st, cm.Version) {
				c.OK = false
				notes = append(notes, fmt.Sprintf("version %d (%s by %s) may have removed its rows since it loaded", cm.Version, cm.Operation, orDefault(cm.User, "unknown")))
				ev = ""
				break
			}
		}
	}
	// A passing key check that covers the batch, with no removal since, proves it by key.
	if k := keys; k != nil && k.Keys != nil && k.Keys.OK && slices.Contains(k.Keys.Batches, b.Batch) && k.TableVersion != nil {
		removed := false
		if cs != nil {
			for _, cm := range cs.List {
				if cm.Version > *k.TableVersion && cm.RemovesRows() {
					removed = true
				}
			}
		}
		if !removed && cs != nil {
			ev = EvidenceKey
			c.OK = true
			notes = append(notes, fmt.Sprintf("every key of its files was in the table at version %d (verify --key %s)", *k.TableVersion, strings.Join(k.Keys.Key, ",")))
		}
	}
	if ev == "" && c.OK {
		notes = append(notes, "needs review: cleanup keeps its files until zbrecover verify --key COL proves them in the table")
	}
	c.Evidence = ev
	c.Note = strings.Join(notes, "; ")
	return c
}

// undoneBy reports whether version v is the DELETE of an undo of one of st's batches that
// the journal records as undone: it deleted exactly that batch's rows (counted before it was
// sent, and its numDeletedRows after), none of the run's other batches'.
func undoneBy(st *journal.State, v int64) bool {
	for _, b := range st.Undone() {
		if u := b.Undo.Outcome; u != nil && u.Version != nil && *u.Version == v {
			return true
		}
	}
	return false
}

// atOK returns the commit at v when cs holds it.
func (cs *commits) atOK(v int64) (Commit, bool) {
	if cs == nil {
		return Commit{}, false
	}
	return cs.at(v)
}

// VerifyOptions configure VerifyRun.
type VerifyOptions struct {
	// Run is the run to check; "" checks the table's newest run.
	Run string
	// Header is this process's run record.
	Header journal.Header
	// BreakLock is asked about a lock another process holds (--break-lock).
	BreakLock func(*journal.LockedError) bool
	// Keys, when set, also reconciles the run's files with the table by these columns.
	Keys Keys
	// KeySources returns the sources the key check reads for the run when it has no keys
	// file (the files, through the warehouse); RunSources by default.
	KeySources func(st *journal.State) []KeySource
	// OpenKeys opens the location of a keys file (as the journal names it), so that its rows
	// are counted per file against the footers.
	OpenKeys func(ctx context.Context, location string) (storage.Backend, error)
	// HistoryRetries and Backoff as in Options.
	HistoryRetries int
	Backoff        time.Duration
}

// ErrNoRun is returned (wrapped) when the journal holds no run of the table to verify.
var ErrNoRun = fmt.Errorf("no run of the table in the journal")

// VerifyRun re-checks a run under the table's lock: what the journal recorded, what the
// table's history says now (each batch's own commit, and every commit since that removed
// rows), and, with Keys, every key of the run's files against the table. It records the
// commit versions it finds for batches that had none, and the verification.
func VerifyRun(ctx context.Context, d Deps, tgt *tableref.Ref, o VerifyOptions) (*VerifyReport, error) {
	lock, err := d.Journal.Lock(ctx, tgt.TableID, journal.LockOptions{Owner: journal.Holder{Command: o.Header.Command}, Break: o.BreakLock})
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	run := o.Run
	if run == "" {
		runs, err := journal.Runs(ctx, d.Journal, tgt.TableID)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if r.Problem == "" {
				run = r.Run
				break
			}
		}
		if run == "" {
			return nil, fmt.Errorf("%w: the journal at %s has no run of %s (table id %s)", ErrNoRun, d.Journal.Location(), tgt.TableName(), tgt.TableID)
		}
	}
	st, err := journal.ReadState(ctx, d.Journal, tgt.TableID, run)
	if err != nil {
		return nil, err
	}
	w, err := journal.Continue(ctx, d.Journal, st, o.Header)
	if err != nil {
		return nil, err
	}
	ck := Checker{Warehouse: d.Warehouse, Table: tgt.Name, Identity: d.Identity, HistoryRetries: o.HistoryRetries, Backoff: o.Backoff}
	pinned, err := pinAnswered(ctx, ck, d, w, st)
	if err != nil {
		return nil, err
	}
	if pinned > 0 {
		if st, err = journal.ReadState(ctx, d.Journal, tgt.TableID, run); err != nil {
			return nil, err
		}
	}
	var keyRes *journal.KeyResult
	var kc *KeyCheck
	var tableVersion *int64
	if len(o.Keys) > 0 {
		h := ck.history(tgt.Name)
		v, err := h.latest(ctx)
		if err != nil {
			return nil, err
		}
		tableVersion = &v
		if kc, keyRes, err = verifyKeys(ctx, d, tgt, st, o); err != nil {
			return nil, err
		}
		// Judged with this key check as the latest.
		st.KeyCheck = &journal.Verification{Keys: keyRes, TableVersion: tableVersion}
	}
	rep, _, err := recheck(ctx, ck, st)
	if err != nil {
		return nil, err
	}
	rep.Pinned = pinned
	rep.Files, rep.BatchStates = runTotals(st)
	if kc != nil {
		rep.Keys = kc
		if !kc.OK {
			rep.OK = false
		}
	}
	v := rep.verification("verify")
	v.Keys, v.TableVersion = keyRes, tableVersion
	if err := w.Append(ctx, journal.Record{Kind: journal.KindVerification, Verification: v}); err != nil {
		return rep, err
	}
	if err := w.Append(ctx, journal.Record{Kind: journal.KindEnd, End: &journal.End{State: st.Status}}); err != nil {
		return rep, err
	}
	return rep, nil
}

// runTotals counts a run's files and its batches by state.
func runTotals(st *journal.State) (int, map[string]int) {
	files, states := 0, map[string]int{}
	for _, b := range st.Batches {
		files += len(b.Files)
		states[string(b.Status)]++
	}
	return files, states
}

// pinAnswered finds the commits of batches that answered with their rows but whose commit
// version the journal does not record (the history could not be read then), by their tag
// or as the only candidate, and records them; it returns how many.
func pinAnswered(ctx context.Context, ck Checker, d Deps, w *journal.Writer, st *journal.State) (int, error) {
	if st.Merge != nil {
		return 0, nil
	}
	var todo []*journal.BatchState
	floor, have := int64(0), false
	for _, b := range st.Batches {
		if b.Status == journal.BatchVerified && b.Outcome != nil && b.Outcome.Version == nil && b.Evidence() == journal.EvidenceAnswer &&
			b.FirstBase != nil && b.ExpectedRows > 0 {
			todo = append(todo, b)
			if !have || *b.FirstBase < floor {
				floor, have = *b.FirstBase, true
			}
		}
	}
	if len(todo) == 0 {
		return 0, nil
	}
	facts, err := journal.FactsFor(ctx, d.Journal, st.TableID, nil) // the claimed and unpinned commits, no files
	if err != nil {
		return 0, err
	}
	cs, err := ck.history(ck.Table).since(ctx, floor)
	if err != nil {
		return 0, nil // the check below reports what it could not read
	}
	n := 0
	for _, b := range todo {
		s, err := settle(cs.List, cs.Whole, batchFacts{Run: st.Run, Batch: b.Batch, Tags: b.Tags, Rows: b.ExpectedRows, Base: *b.FirstBase},
			knownCommits{Identity: ck.Identity, Claimed: facts.Claimed, Unpinned: facts.Unpinned})
		if err != nil || s.Commit == nil || s.Mismatch {
			continue
		}
		v := s.Commit.Version
		facts.Claimed[v] = journal.BatchRef{Run: st.Run, Batch: b.Batch}
		if err := w.Append(ctx, journal.Record{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: b.Batch, Status: journal.BatchVerified,
			Reason: b.Outcome.Reason + fmt.Sprintf("; its commit is version %d (found by verify)", v), Version: &v, Evidence: journal.EvidenceAnswer}}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// verifyKeys checks the run's files by key: from the run's keys files when they hold every
// batch (each file's rows counted against its footer), else by reading the files through the
// warehouse (o.KeySources), which works only while they exist where it may read them.
func verifyKeys(ctx context.Context, d Deps, tgt *tableref.Ref, st *journal.State, o VerifyOptions) (*KeyCheck, *journal.KeyResult, error) {
	var files []journal.KeysFile
	covered := map[int]bool{}
	for _, kf := range st.KeysFiles {
		if sameKey(kf.Columns, o.Keys) {
			files = append(files, kf)
			for _, b := range kf.Batches {
				covered[b] = true
			}
		}
	}
	all := len(files) > 0
	nfiles := 0
	for _, b := range st.Batches {
		nfiles += len(b.Files)
		if len(b.Files) > 0 && !covered[b.Batch] {
			all = false
		}
	}
	if all {
		kc, per, err := ReconcileKeysFiles(ctx, d.Warehouse, tgt.Name, o.Keys, files)
		if err != nil {
			return nil, nil, err
		}
		kc.Files = nfiles
		res := &journal.KeyResult{Key: o.Keys, Files: nfiles, Keys: kc.Keys, Missing: kc.Missing, OK: kc.OK}
		for _, p := range per {
			var n int
			if _, err := fmt.Sscan(p.Label, &n); err == nil && p.Missing == 0 {
				res.Batches = append(res.Batches, n)
			}
		}
		if o.OpenKeys != nil {
			rows, note := countKeysFiles(ctx, st, files, o.OpenKeys)
			res.Rows = rows
			if note != "" {
				kc.OK, res.OK = false, false
				kc.Note = note + "; " + kc.Note
				res.Note = note
				res.Batches = nil
			}
		}
		return kc, res, nil
	}
	// The batches cleanup removed every file of were proved before and cannot be read again:
	// the check reads the others.
	live := unremoved(st)
	var srcs []KeySource
	if o.KeySources != nil {
		srcs = o.KeySources(live)
	} else {
		srcs = RunSources(live, o.Keys, tgt.Loc)
	}
	kc, err := Reconcile(ctx, d.Warehouse, tgt.Name, o.Keys, srcs)
	if err != nil {
		return nil, nil, err
	}
	res := &journal.KeyResult{Key: o.Keys, Files: kc.Files, Keys: kc.Keys, Missing: kc.Missing, OK: kc.OK}
	// A name the statement does not find reads as no rows, not as an error: the rows read
	// must be the rows the footers hold, batch by batch, or the check proves nothing.
	if len(srcs) > 0 {
		rows, note, err := countSourceRows(ctx, d.Warehouse, live, srcs)
		if err != nil {
			return nil, nil, err
		}
		kc.Statements++
		res.Rows = rows
		if note != "" {
			kc.OK, res.OK = false, false
			kc.Note = note + "; " + kc.Note
			res.Note = note
		}
	}
	if res.OK {
		for _, s := range srcs {
			var n int
			if _, err := fmt.Sscan(s.Label, &n); err == nil {
				res.Batches = append(res.Batches, n)
			}
		}
	}
	return kc, res, nil
}

// countKeysFiles counts each keys file's rows per file and compares them with the rows the
// journal records for the file (its footer's): a file missing or with another count fails
// the check, with a note saying which.
func countKeysFiles(ctx context.Context, st *journal.State, files []journal.KeysFile, open func(ctx context.Context, location string) (storage.Backend, error)) (int64, string) {
	got := map[string]int64{}
	var total int64
	for _, kf := range files {
		b, err := open(ctx, kf.Location)
		if err != nil {
			return 0, fmt.Sprintf("the keys file %s cannot be opened: %v", KeysFileURL(kf), err)
		}
		kr, err := keyfile.OpenObject(ctx, b, kf.Key)
		if err != nil {
			return 0, fmt.Sprintf("the keys file %s cannot be read: %v", KeysFileURL(kf), err)
		}
		counts, err := kr.Counts(ctx)
		if err != nil {
			return 0, fmt.Sprintf("the keys file %s cannot be read: %v", KeysFileURL(kf), err)
		}
		for _, c := range counts {
			got[c.File] += c.Rows
			total += c.Rows
		}
	}
	for _, f := range st.Files() {
		if g, ok := got[f.Key]; !ok || g != f.Rows {
			return total, fmt.Sprintf("the keys files hold %d rows of %s, whose footer holds %d: the key check does not cover every row", g, f.Key, f.Rows)
		}
	}
	return total, ""
}

// countSourceRows counts, with one statement, the rows the key check's sources read per batch
// (their label) and compares them with the rows the journal records for the batch's files
// (their footers'): a batch with another count, or none, fails the check, with a note saying
// which.
func countSourceRows(ctx context.Context, wh Warehouse, st *journal.State, srcs []KeySource) (int64, string, error) {
	res, err := wh.QueryAll(ctx, sqlstmt.SourceRows(srcs))
	if err != nil {
		return 0, "", fmt.Errorf("count the rows the key check reads: %w", err)
	}
	col := columns(res)
	got := map[string]int64{}
	var total int64
	for _, row := range res.Rows {
		n, _ := asInt(row[col["n"]])
		got[asString(row[col["g"]])] += n
		total += n
	}
	for _, b := range st.Batches {
		if len(b.Files) == 0 {
			continue
		}
		var want int64
		for _, f := range b.Files {
			want += f.Rows
		}
		if g := got[fmt.Sprint(b.Batch)]; g != want {
			return total, fmt.Sprintf("the key check read %d rows of batch %d's files, whose footers hold %d: not every row was read "+
				"(a file missing or under another name where the warehouse reads it), so it proves nothing", g, b.Batch, want), nil
		}
	}
	return total, "", nil
}

// unremoved returns st with only the batches that still have a file cleanup did not delete
// (or find gone).
func unremoved(st *journal.State) *journal.State {
	removed := map[string]bool{}
	for _, f := range st.Files() {
		if f.Delete == journal.Deleted || f.Delete == journal.DeleteGone {
			removed[f.Key] = true
		}
	}
	if len(removed) == 0 {
		return st
	}
	cp := *st
	cp.Batches = nil
	for _, b := range st.Batches {
		for _, f := range b.Files {
			if !removed[f.Key] {
				cp.Batches = append(cp.Batches, b)
				break
			}
		}
	}
	return &cp
}
