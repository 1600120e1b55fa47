package reload

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
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
	// Expected are the footer rows of the run's batches; Inserted the rows the run put in the
	// table (journal.Rows.Loaded): AnsweredRows, the statements' answers, and HistoryRows,
	// those of batches settled from the table's history.
	Expected     int64 `json:"expected_rows"`
	Inserted     int64 `json:"inserted_rows"`
	AnsweredRows int64 `json:"answered_rows"`
	HistoryRows  int64 `json:"history_rows"`
	// Pinned counts the batches whose commit version this check found and recorded; Settled
	// the unknown or open batches its key check proved and recorded as verified by key.
	Pinned    int    `json:"pinned_batches,omitempty"`
	Settled   int    `json:"settled_by_key_batches,omitempty"`
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

// keysNow checks the run's keys files against the table now (checkKeysFiles): nil when the
// run has none.
func (c Checker) keysNow(ctx context.Context, st *journal.State) (*journal.Verification, error) {
	if len(st.KeysFiles) == 0 {
		return nil, nil
	}
	keys := Keys(st.KeysFiles[len(st.KeysFiles)-1].Columns)
	files := keysFilesOf(st, keys)
	latest, err := c.history(c.Table).latest(ctx)
	if err != nil {
		return nil, err
	}
	if c.OpenKeys == nil {
		return &journal.Verification{TableVersion: &latest, Keys: &journal.KeyResult{Key: keys,
			Note: "the keys files could not be opened to check them: no batch is proved by key"}}, nil
	}
	kc, err := checkKeysFiles(ctx, c.Warehouse, c.Table, st, keys, files, c.OpenKeys)
	if err != nil {
		return nil, err
	}
	return &journal.Verification{Keys: kc.Result(), TableVersion: &latest}, nil
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
		from := fmt.Sprintf("after version %d", floor)
		if floor < 0 {
			from = "from its first version"
		}
		rep.Checked = append(rep.Checked, fmt.Sprintf("the table's history %s (%d commits, up to version %d)", from, len(cs.List), cs.Latest))
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
	rows := st.Rows()
	rep.Expected, rep.Inserted, rep.AnsweredRows, rep.HistoryRows = rows.Expected, rows.Loaded, rows.Answered, rows.FromHistory
	for _, b := range st.Batches {
		ch := judge(st, b, cs, keys)
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
	// A key check that failed the batch keeps it, whatever else proves it, until a later
	// verify --key passes for it; one that proves it, with no removal since, proves it by key.
	if why := keyVeto(b.Batch, keys, st.KeyVerify); why != "" {
		c.OK = false
		notes = append(notes, why)
		ev = ""
	} else if k := keys; keyProves(k, b.Batch) {
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
		} else if ev == EvidenceKey {
			ev = ""
		}
	} else {
		if ev == EvidenceKey {
			ev = ""
			notes = append(notes, "it was settled by key, and the latest key check does not prove it")
		}
		if k != nil && k.Keys != nil {
			if kb, ok := k.Keys.Batch(b.Batch); ok && kb.Verdict == journal.KeyUnproved {
				notes = append(notes, "not proved by key: "+kb.Note)
			}
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
	// KeyProgress, when set with Keys, is told the key check's statements done and their
	// total, at the start and after each (as Progress's callbacks).
	KeyProgress func(done, total int)
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
	settled := 0
	if len(o.Keys) > 0 {
		h := ck.history(tgt.Name)
		v, err := h.latest(ctx)
		if err != nil {
			return nil, err
		}
		tableVersion = &v
		if kc, err = verifyKeys(ctx, d, tgt, st, o); err != nil {
			return nil, err
		}
		keyRes = kc.Result()
		if settled, err = settleByKey(ctx, w, st, kc, v); err != nil {
			return nil, err
		}
		if settled > 0 {
			if st, err = journal.ReadState(ctx, d.Journal, tgt.TableID, run); err != nil {
				return nil, err
			}
		}
		// Judged with this key check as the latest, and as the latest verify --key.
		st.KeyCheck = &journal.Verification{Keys: keyRes, TableVersion: tableVersion}
		st.KeyVerify = st.KeyCheck
	}
	rep, _, err := recheck(ctx, ck, st)
	if err != nil {
		return nil, err
	}
	rep.Pinned, rep.Settled = pinned, settled
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
// batch (checkKeysFiles), else by reading the files through the warehouse (o.KeySources;
// checkSources), which works only while they exist where it may read them.
func verifyKeys(ctx context.Context, d Deps, tgt *tableref.Ref, st *journal.State, o VerifyOptions) (*KeyCheck, error) {
	files := keysFilesOf(st, o.Keys)
	covered := map[int]bool{}
	for _, kf := range files {
		for _, b := range kf.Batches {
			covered[b] = true
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
		if o.OpenKeys == nil {
			return nil, fmt.Errorf("verify --key: the run's keys files cannot be opened here")
		}
		tell(o.KeyProgress, 0, 1)
		kc, err := checkKeysFiles(ctx, d.Warehouse, tgt.Name, st, o.Keys, files, o.OpenKeys)
		if err != nil {
			return nil, err
		}
		tell(o.KeyProgress, 1, 1)
		kc.Files = nfiles
		return kc, nil
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
	tell(o.KeyProgress, 0, 1)
	kc, err := checkSources(ctx, d.Warehouse, tgt.Name, live, o.Keys, srcs)
	if err != nil {
		return nil, err
	}
	tell(o.KeyProgress, 1, 1)
	return kc, nil
}

// settleByKey records as verified, by key, the unknown and open batches of st that the key
// check kc (at table version v) proves: every row of their files read, none with a NULL key
// column, every key in the table. A load by key's batches are not settled so (the MERGE
// settles them). It returns how many it settled.
func settleByKey(ctx context.Context, w *journal.Writer, st *journal.State, kc *KeyCheck, v int64) (int, error) {
	if st.Merge != nil {
		return 0, nil
	}
	proved := map[int]bool{}
	for _, n := range kc.Proved() {
		proved[n] = true
	}
	n := 0
	for _, b := range st.Batches {
		if !proved[b.Batch] || (b.Status != journal.BatchUnknown && b.Status != journal.BatchOpen) {
			continue
		}
		kb, _ := kc.result(b.Batch)
		why := fmt.Sprintf("settled by verify --key %s: every key of its files (%d, in %d rows, none with a NULL key column) was in the table at version %d; it was %s",
			kc.Key, kb.Keys, kb.Rows, v, b.Status)
		if b.Outcome != nil && b.Outcome.Reason != "" {
			why += " (" + b.Outcome.Reason + ")"
		}
		if err := w.Append(ctx, journal.Record{Kind: journal.KindOutcome, Outcome: &journal.Outcome{Batch: b.Batch, Status: journal.BatchVerified,
			Reason: why, Evidence: EvidenceKey}}); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// keyVeto says why a key check among checks failed batch n ("" when none did): its files are
// then kept, whatever else proves it, until a later verify --key passes for it.
func keyVeto(n int, checks ...*journal.Verification) string {
	for _, v := range checks {
		if v == nil || v.Keys == nil || !slices.Contains(v.Keys.Failed, n) {
			continue
		}
		kb, _ := v.Keys.Batch(n)
		at := ""
		if v.TableVersion != nil {
			at = fmt.Sprintf(" at version %d", *v.TableVersion)
		}
		return fmt.Sprintf("the key check by %s%s failed it (%s), which no other evidence overrides: its files are kept until zbrecover verify --key %s passes for it",
			Keys(v.Keys.Key), at, kb.Note, Keys(v.Keys.Key))
	}
	return ""
}

// keyProves reports whether the key check v proves batch n (a check of this version: one of
// an earlier version compared NULL keys as equal, so it proves nothing).
func keyProves(v *journal.Verification, n int) bool {
	return v != nil && v.Keys != nil && v.TableVersion != nil && v.Keys.PerBatch != nil && slices.Contains(v.Keys.Batches, n)
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
