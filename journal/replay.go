package journal

import (
	"fmt"
	"sort"
	"time"
)

// BatchStatus is where one batch stands.
type BatchStatus string

// The states of a batch. The last four are also the classifications an outcome record gives.
const (
	BatchPlanned  BatchStatus = "planned"  // planned, no statement sent
	BatchOpen     BatchStatus = "open"     // intent without a row count: needs settling from history
	BatchLoaded   BatchStatus = "loaded"   // the statement returned a row count, not yet classified
	BatchVerified BatchStatus = "verified" // inserted rows match the expected rows
	BatchUnknown  BatchStatus = "unknown"  // may or may not be loaded; never verified
	BatchMismatch BatchStatus = "mismatch" // rows were loaded, not the expected number
	BatchFailed   BatchStatus = "failed"   // the warehouse refused the statement before it committed
	// BatchUndoing: an undo's DELETE may have run (intent without an outcome): the rows may
	// or may not still be in the table until the undo is settled (a re-run of undo).
	BatchUndoing BatchStatus = "undoing"
	// BatchUndone: the batch's rows were taken back (zbrecover undo): never verified again by
	// its load's commit, its files loadable again, never deleted by this run's cleanup.
	BatchUndone BatchStatus = "undone"
	// BatchUndoMismatch: an undo's DELETE deleted another number of rows than the batch
	// loaded: neither verified nor undone until someone looks (its files stay put).
	BatchUndoMismatch BatchStatus = "undo_mismatch"
)

// PossiblyLoaded reports whether a batch in status s may have put rows in the table. A
// failed batch counts: its statement was refused, but the refusal is the warehouse's word,
// and no other run may load its files through another path on that word alone.
//
// An undone batch's rows are gone (its undo proved it): its files are not loaded, and may be
// loaded again. A batch being undone may still have its rows: it counts.
func (s BatchStatus) PossiblyLoaded() bool {
	switch s {
	case BatchOpen, BatchLoaded, BatchVerified, BatchUnknown, BatchMismatch, BatchFailed, BatchUndoing, BatchUndoMismatch:
		return true
	}
	return false
}

// RunStatus is where a run stands, as history shows it.
type RunStatus string

// The states of a run, in the order Replay decides them (the first that applies wins).
const (
	RunCleaned          RunStatus = "cleaned"           // every verified file deleted (or gone)
	RunPartiallyCleaned RunStatus = "partially_cleaned" // some verified files deleted, not all
	RunMismatch         RunStatus = "mismatch"          // a batch loaded the wrong number of rows
	RunLoading          RunStatus = "loading"           // work in progress (or a crashed process)
	RunUnknown          RunStatus = "unknown"           // a batch's outcome is not settled
	RunFailed           RunStatus = "failed"            // a batch failed, or the run stopped early
	RunPlanned          RunStatus = "planned"           // nothing sent yet
	RunVerified         RunStatus = "verified"          // every batch verified
	// RunUndoing: an undo of some batch is in progress (or was interrupted): re-run undo.
	RunUndoing RunStatus = "undoing"
	// RunUndone: every batch was undone; RunPartiallyUndone: some were, the others verified.
	RunUndone          RunStatus = "undone"
	RunPartiallyUndone RunStatus = "partially_undone"
)

// Process is one process's run record.
type Process struct {
	Seq  int
	Time time.Time
	Header
}

// BatchState is one batch after replay.
type BatchState struct {
	Batch        int
	Group        string
	Folder       string
	Files        []File // from the latest intent, else from the plan
	ExpectedRows int64
	SQL          string
	// Select is the projection the batch was planned with ("" for none, or in journals of
	// earlier versions, which kept only SQL).
	Select      string
	Status      BatchStatus
	Attempts    int      // intents written
	Intent      *Intent  // the latest
	IntentSeq   int      // seq of the latest intent
	Result      *Result  // for the latest intent
	Outcome     *Outcome // the latest classification
	OutcomeTime time.Time
	Check       *Check // the latest verification
	// Tags are the commit tags of every attempt, in order ("" for an untagged attempt).
	Tags []string
	// FirstBase is the base version of the batch's first attempt that recorded one: no
	// commit of any attempt can be older.
	FirstBase *int64
	// Undo is the batch's undo (zbrecover undo), nil when none was attempted.
	Undo *UndoState
}

// UndoState is a batch's undo after replay: its attempts' DELETEs, the latest's answer and
// the latest outcome.
type UndoState struct {
	Intent    *Undo // the latest intent
	IntentSeq int
	Result    *Undo // the latest intent's result, if one was written
	Outcome   *Undo // the latest outcome
	// OutcomeTime is when the latest outcome was written.
	OutcomeTime time.Time
	Attempts    int
	// Tags are the commit tags of every attempt, in order ("" for an untagged attempt);
	// FirstBase the base version of the first attempt that recorded one.
	Tags      []string
	FirstBase *int64
}

// Evidence is what proved the batch verified ("" when it is not, or for journals of
// earlier versions).
func (b *BatchState) Evidence() Evidence {
	if b.Status != BatchVerified || b.Outcome == nil {
		return ""
	}
	return b.Outcome.Evidence
}

// Open reports whether the batch's statement may have run with no row count known: an intent
// without a result, or a result without a row count, and no classification since.
func (b *BatchState) Open() bool { return b.Status == BatchOpen }

// FileState is one file of a run after replay.
type FileState struct {
	File
	Run        string
	Root       string // the run's root, for display
	Batch      int
	Status     BatchStatus // the status of its batch
	Staged     string      // key of its staged copy, if any
	StagedSize int64       // the staged copy's size, as verified
	// StagedLocation is the staging location of its copy.
	StagedLocation string
	// StagedRemoving is set when cleanup recorded that it is about to delete the copy,
	// StagedRemoved once it did (or found it gone).
	StagedRemoving bool
	StagedRemoved  bool
	DeleteIntent   bool // a delete intent names it
	Delete         DeleteStatus
	DeleteReason   string
	Archive        string // URL of its archive copy, when cleanup archived it
}

// State is a run after replay.
type State struct {
	Run, TableID, Table, Root string
	Started                   time.Time
	LastSeq                   int
	Processes                 []Process
	Batches                   []*BatchState // by batch number
	Staging                   []Staging
	Merge                     *MergeState // a load by key (reload --dedupe-key); nil otherwise
	End                       *End        // of the last process, if it wrote one
	// Source is the folder URL the run's statements read (the latest plan record's), ""
	// for journals of earlier versions.
	Source string
	// KeysFiles are the keys files of the run's files, in the order they were recorded.
	KeysFiles []KeysFile
	// Left are the files the latest plan left behind (unreadable, refused), with why;
	// IgnoredForeign the operators' --ignore-foreign-runs, in order.
	Left           []LeftFile
	IgnoredForeign []IgnoredForeign
	// Verification is the latest verification record, VerificationTime when it was written;
	// KeyCheck the latest one that checked keys.
	Verification     *Verification
	VerificationTime time.Time
	KeyCheck         *Verification
	// LastVerify is the latest verification by verify (not cleanup's re-check), and
	// LastVerifyTime when it was written: cleanup keeps the batches whose latest verify failed.
	LastVerify     *Verification
	LastVerifyTime time.Time
	// KeyVerify is the latest verification by verify that checked keys (verify --key): a batch
	// its key check failed stays failed until a later verify --key passes for it.
	KeyVerify *Verification
	Unknown   []Record // records of kinds this version does not know
	Warnings  []string // unknown kinds, torn lines, a wedge, … (never fatal)
	// Wedge is set when two processes wrote the run at once (some seqs are held twice): the
	// run was read by the wedge rule.
	Wedge  *Wedge
	Status RunStatus

	files []*FileState // in batch order, then the batch's file order
	byKey map[string]*FileState
	// lastBatchSeq is the seq of the latest intent, result or outcome of a batch.
	lastBatchSeq int
	// endSeq is the seq of the latest end record (0 for none).
	endSeq int
}

// MergeState is a load by key after replay: the staging table the batches load into, and
// the MERGE that moves their rows, deduplicated by key, into the table.
type MergeState struct {
	Staging   string
	Key       []string
	Order     string
	Ascending bool
	Dropped   bool   // the staging table was dropped since it was last planned
	Intent    *Merge // the latest MERGE intent
	IntentSeq int
	Result    *Merge // the result of the latest intent, if one was written
	Attempts  int    // MERGE intents written
	// MergedSeq is the seq of the latest MERGE result with a row count: the MERGE committed
	// then, and every batch sent before it is in the table.
	MergedSeq int
}

// MergePending reports whether a load by key has staged rows no committed MERGE has moved
// into the table yet (a batch sent after the latest MERGE, or no MERGE yet).
func (s *State) MergePending() bool {
	return s.Merge != nil && (s.Merge.MergedSeq == 0 || s.lastBatchSeq > s.Merge.MergedSeq)
}

// merged reports whether batch b's rows are in the table: always for a plain reload; for a
// load by key, when a committed MERGE followed its statement.
func (s *State) merged(b *BatchState) bool {
	return s.Merge == nil || (b.IntentSeq > 0 && b.IntentSeq < s.Merge.MergedSeq)
}

// Replay turns a run's records into its state. It is pure: no I/O, no clock.
//
// Records are taken in seq order; they must all belong to one run and one table, with seqs
// 1, 2, … without gap, and start with a run record. A run some of whose seqs are held by two
// records (two processes wrote it at once: a journal of an earlier version) is read by the
// wedge rule, reported in State.Wedge and State.Warnings (see Wedge). An intent names a planned
// batch in a state that allows a (new) statement: planned, failed, unknown, or open with an
// error result. A result follows its batch's intent; an outcome needs an intent; a delete
// intent names files of verified batches with the verified version; a deleted record names
// files with a delete intent. Records of unknown kinds are kept in Unknown and reported in
// Warnings.
func Replay(recs []Record) (*State, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("replay: no records")
	}
	rs := append([]Record(nil), recs...)
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Seq < rs[j].Seq })
	seqs, rs, warns := heldTwice(rs)
	var st *State
	var err error
	if len(seqs) > 0 {
		st, err = replayWedged(rs, seqs)
	} else {
		p := newReplayer()
		for _, r := range rs {
			if err := p.add(r); err != nil {
				return nil, err
			}
		}
		st, err = p.finish()
	}
	if err != nil {
		return nil, err
	}
	st.Warnings = append(warns, st.Warnings...)
	return st, nil
}

// replayer replays a run's records one at a time, in seq order, so that a run is replayed
// as it is read, without holding its records.
type replayer struct {
	s                *State
	batches          map[int]*BatchState
	n                int // records applied
	lastRun, lastEnd int
	// owned is set when the records added are the replayer's own (decoded for it): the
	// strings of their files are then replaced by equal ones the state already holds, so
	// that each file's key and ETag are held once.
	owned bool
}

func newReplayer() *replayer {
	return &replayer{s: &State{byKey: map[string]*FileState{}}, batches: map[int]*BatchState{}}
}

// next returns the seq the next record must have.
func (p *replayer) next() int { return p.n + 1 }

// add applies the run's next record (seq next()); a record of another run or table, a
// duplicate, a gap or a first record other than run is an error naming the run.
func (p *replayer) add(r Record) error {
	s := p.s
	if p.n == 0 {
		s.Run, s.TableID = r.Run, r.TableID
	}
	if r.Run != s.Run {
		return fmt.Errorf("run %s: seq %d belongs to run %s", s.Run, r.Seq, r.Run)
	}
	if r.TableID != s.TableID {
		return fmt.Errorf("run %s seq %d: table id %s, the run's is %s", s.Run, r.Seq, r.TableID, s.TableID)
	}
	if p.n > 0 && r.Seq == p.n {
		return fmt.Errorf("run %s: seq %d appears twice", s.Run, r.Seq)
	}
	if r.Seq != p.n+1 {
		return fmt.Errorf("run %s: seq %d follows seq %d (records %d to %d are missing)", s.Run, r.Seq, p.n, p.n+1, r.Seq-1)
	}
	if p.n == 0 && r.Kind != KindRun {
		return fmt.Errorf("run %s: first record is %s, not run", s.Run, r.Kind)
	}
	p.n++
	if s.Table == "" {
		s.Table = r.Table
	}
	if s.Root == "" {
		s.Root = r.Root
	}
	s.LastSeq = r.Seq
	if err := s.apply(r, p.batches, p.owned); err != nil {
		return fmt.Errorf("run %s seq %d (%s): %w", s.Run, r.Seq, r.Kind, err)
	}
	switch r.Kind {
	case KindRun:
		p.lastRun = r.Seq
		if r.Seq == 1 {
			s.Started = r.Time
		}
	case KindEnd:
		p.lastEnd = r.Seq
	}
	return nil
}

// finish returns the state after the records added.
func (p *replayer) finish() (*State, error) {
	s := p.s
	if p.n == 0 {
		return nil, fmt.Errorf("replay: no records")
	}
	if p.lastEnd < p.lastRun {
		s.End = nil // the last process wrote no end
	}
	s.endSeq = p.lastEnd
	s.Status = s.status(p.lastEnd > p.lastRun)
	return s, nil
}

func (s *State) apply(r Record, batches map[int]*BatchState, owned bool) error {
	switch r.Kind {
	case KindRun:
		s.Processes = append(s.Processes, Process{Seq: r.Seq, Time: r.Time, Header: *r.Header})
	case KindPlan:
		for _, pb := range r.Plan.Batches {
			if pb.Batch < 1 {
				return fmt.Errorf("batch number %d", pb.Batch)
			}
			if _, dup := batches[pb.Batch]; dup {
				return fmt.Errorf("batch %d is planned twice", pb.Batch)
			}
			b := &BatchState{Batch: pb.Batch, Group: pb.Group, Folder: pb.Folder, Files: pb.Files,
				ExpectedRows: pb.ExpectedRows, SQL: pb.SQL, Select: pb.Select, Status: BatchPlanned}
			batches[pb.Batch] = b
			s.Batches = append(s.Batches, b)
			if err := s.addFiles(b); err != nil {
				return err
			}
		}
		sort.Slice(s.Batches, func(i, j int) bool { return s.Batches[i].Batch < s.Batches[j].Batch })
		if r.Plan.Left != nil {
			s.Left = r.Plan.Left // the latest plan's: what the folder left behind then
		}
		if r.Plan.IgnoredForeign != nil {
			s.IgnoredForeign = append(s.IgnoredForeign, *r.Plan.IgnoredForeign)
		}
		if r.Plan.Source != "" {
			if s.Source != "" && r.Plan.Source != s.Source && s.anyIntent() {
				return fmt.Errorf("plan reads %s, but the run's statements read %s", r.Plan.Source, s.Source)
			}
			s.Source = r.Plan.Source
		}
	case KindIntent:
		b := batches[r.Intent.Batch]
		if b == nil {
			return fmt.Errorf("intent for batch %d, which no plan names", r.Intent.Batch)
		}
		if !b.mayStart() {
			return fmt.Errorf("intent for batch %d, which is %s", b.Batch, b.Status)
		}
		for _, f := range r.Intent.Files {
			if o := s.byKey[f.Key]; o == nil || o.Batch != b.Batch {
				return fmt.Errorf("intent for batch %d names %s, which its plan does not", b.Batch, f.Key)
			}
		}
		in := *r.Intent
		b.Intent, b.IntentSeq, b.Result, b.Status = &in, r.Seq, nil, BatchOpen
		s.lastBatchSeq = r.Seq
		b.Files, b.ExpectedRows, b.SQL = in.Files, in.ExpectedRows, in.SQL
		b.Attempts++
		b.Tags = append(b.Tags, in.Tag)
		if b.FirstBase == nil && in.BaseVersion != nil {
			v := *in.BaseVersion
			b.FirstBase = &v
		}
		// The intent's files are the versions the statement read: they replace the plan's.
		for i, f := range in.Files {
			fs := s.byKey[f.Key]
			if owned {
				f.Key = fs.Key
				if f.ETag == fs.ETag {
					f.ETag = fs.ETag
				}
				in.Files[i] = f
			}
			fs.File = f
		}
	case KindResult:
		b := batches[r.Result.Batch]
		if b == nil || b.Intent == nil {
			return fmt.Errorf("result for batch %d, which has no intent", r.Result.Batch)
		}
		if b.Result != nil || b.Status != BatchOpen {
			return fmt.Errorf("result for batch %d, which is %s after its intent (seq %d)", b.Batch, b.Status, b.IntentSeq)
		}
		res := *r.Result
		b.Result = &res
		s.lastBatchSeq = r.Seq
		if res.Inserted != nil {
			b.Status = BatchLoaded
		}
	case KindOutcome:
		b := batches[r.Outcome.Batch]
		if b == nil || b.Intent == nil {
			return fmt.Errorf("classification of batch %d without an intent", r.Outcome.Batch)
		}
		if b.Status == BatchUndoing || b.Status == BatchUndone {
			// Its rows were (or are being) taken back: its load's commit proves nothing now.
			return fmt.Errorf("classification of batch %d, which is %s", b.Batch, b.Status)
		}
		o := *r.Outcome
		b.Outcome, b.OutcomeTime, b.Status = &o, r.Time, o.Status
		s.lastBatchSeq = r.Seq
	case KindVerification:
		for _, c := range r.Verification.Checks {
			b := batches[c.Batch]
			if b == nil {
				return fmt.Errorf("verification of batch %d, which no plan names", c.Batch)
			}
			c := c
			b.Check = &c
		}
		v := *r.Verification
		s.Verification, s.VerificationTime = &v, r.Time
		if v.Keys != nil {
			s.KeyCheck = &v
		}
		if v.By != "cleanup" {
			s.LastVerify, s.LastVerifyTime = &v, r.Time
			if v.Keys != nil {
				s.KeyVerify = &v
			}
		}
	case KindStaging:
		if err := s.applyStaging(r, func(format string, args ...any) error { return fmt.Errorf(format, args...) }); err != nil {
			return err
		}
	case KindDeleteIntent:
		for _, f := range r.Deletion.Files {
			fs := s.byKey[f.Key]
			if fs == nil || batches[fs.Batch].Status != BatchVerified || !s.merged(batches[fs.Batch]) {
				return fmt.Errorf("delete intent for %s, which no verified batch holds", f.Key)
			}
			if !samePrecondition(f, fs.File) {
				return fmt.Errorf("delete intent for %s with another version than the verified one", f.Key)
			}
			fs.DeleteIntent = true
		}
	case KindDeleted:
		for _, d := range r.Deletion.Results {
			fs := s.byKey[d.Key]
			if fs == nil || !fs.DeleteIntent {
				return fmt.Errorf("deletion of %s without a delete intent", d.Key)
			}
			switch d.Status {
			case Deleted, DeleteSkip, DeleteGone, DeleteFailed:
			default:
				return fmt.Errorf("deletion of %s: status %q", d.Key, d.Status)
			}
			fs.Delete, fs.DeleteReason = d.Status, d.Reason
			if d.Archive != "" {
				fs.Archive = d.Archive
			}
		}
	case KindEnd:
		e := *r.End
		s.End = &e
	case KindMerge:
		return s.applyMerge(r)
	case KindKeys:
		for _, n := range r.Keys.Batches {
			if batches[n] == nil {
				return fmt.Errorf("keys file %s names batch %d, which no plan names", r.Keys.Key, n)
			}
		}
		s.KeysFiles = append(s.KeysFiles, *r.Keys)
	case KindUndo:
		return s.applyUndo(r, batches)
	default:
		s.Unknown = append(s.Unknown, r)
		s.Warnings = append(s.Warnings, fmt.Sprintf("run %s seq %d: record of unknown kind %q (format v%d), kept unread", s.Run, r.Seq, r.Kind, r.V))
	}
	return nil
}

// applyUndo applies an undo record: an intent needs a verified batch, or one whose undo's
// latest DELETE returned an error (the caller settled it from the table's history first);
// a result needs an intent without one; an outcome needs an intent, and makes the batch
// undone, or verified again when nothing was deleted.
func (s *State) applyUndo(r Record, batches map[int]*BatchState) error {
	u := *r.Undo
	b := batches[u.Batch]
	if b == nil {
		return fmt.Errorf("undo of batch %d, which no plan names", u.Batch)
	}
	switch u.Step {
	case UndoIntent:
		retry := b.Status == BatchUndoing && b.Undo.Result != nil && b.Undo.Result.Err != ""
		if b.Status != BatchVerified && !retry {
			return fmt.Errorf("undo intent for batch %d, which is %s", b.Batch, b.Status)
		}
		if b.Undo == nil {
			b.Undo = &UndoState{}
		}
		b.Undo.Intent, b.Undo.IntentSeq, b.Undo.Result = &u, r.Seq, nil
		b.Undo.Attempts++
		b.Undo.Tags = append(b.Undo.Tags, u.Tag)
		if b.Undo.FirstBase == nil && u.BaseVersion != nil {
			v := *u.BaseVersion
			b.Undo.FirstBase = &v
		}
		b.Status = BatchUndoing
	case UndoResult:
		if b.Status != BatchUndoing || b.Undo.Result != nil {
			return fmt.Errorf("undo result for batch %d, which is %s with no undo intent open", b.Batch, b.Status)
		}
		b.Undo.Result = &u
	case UndoOutcome:
		if b.Status != BatchUndoing {
			return fmt.Errorf("undo outcome for batch %d, which is %s", b.Batch, b.Status)
		}
		b.Undo.Outcome, b.Undo.OutcomeTime = &u, r.Time
		switch u.Status {
		case Undone:
			b.Status = BatchUndone
		case UndoMismatch:
			b.Status = BatchUndoMismatch
		default:
			b.Status = BatchVerified
		}
	}
	return nil
}

// UndoOpen returns the batches whose undo's DELETE may have run without a known outcome:
// a re-run of undo settles them from the table's history before anything else.
func (s *State) UndoOpen() []*BatchState { return s.batchesIn(BatchUndoing) }

// Undone returns the batches whose rows were taken back.
func (s *State) Undone() []*BatchState { return s.batchesIn(BatchUndone) }

// UndoneFiles returns the files of undone batches: loadable again.
func (s *State) UndoneFiles() []FileState {
	var out []FileState
	for _, f := range s.files {
		if v := s.view(f); v.Status == BatchUndone {
			out = append(out, v)
		}
	}
	return out
}

// applyStaging applies a staging record to the run's files: their copies staged, being
// removed or removed. A record both removing and removed, and a removal of a copy the run
// does not hold there, are passed to refuse (a format and its arguments): for the first the
// record is not applied at all; for the second that file is left as it is, and applying
// stops at refuse's error when it returns one.
func (s *State) applyStaging(r Record, refuse func(format string, args ...any) error) error {
	if r.Staging.Removing && r.Staging.Removed {
		return refuse("a staging record both removing and removed")
	}
	s.Staging = append(s.Staging, *r.Staging)
	for _, st := range r.Staging.Files {
		f := s.byKey[st.Source]
		if f == nil {
			continue
		}
		switch {
		case r.Staging.Removing:
			if f.Staged != st.Key || f.StagedLocation != r.Staging.Location {
				if err := refuse("removal of staged copy %s of %s, which the run does not hold there", st.Key, st.Source); err != nil {
					return err
				}
				continue
			}
			f.StagedRemoving = true
		case r.Staging.Removed:
			f.StagedRemoved, f.StagedRemoving = true, false
		default:
			f.Staged, f.StagedSize, f.StagedLocation, f.StagedRemoved, f.StagedRemoving = st.Key, st.Size, r.Staging.Location, false, false
		}
	}
	return nil
}

// applyMerge applies a merge record: planned names the staging table and the key (the same
// for every planned record of the run), an intent needs a planned load, a result needs an
// intent without one, dropped needs a planned load.
func (s *State) applyMerge(r Record) error {
	m := *r.Merge
	if m.Step != MergePlanned && s.Merge == nil {
		return fmt.Errorf("merge %s before the load by key was planned", m.Step)
	}
	if s.Merge != nil && m.Staging != s.Merge.Staging {
		return fmt.Errorf("merge %s names staging table %s, the run's is %s", m.Step, m.Staging, s.Merge.Staging)
	}
	switch m.Step {
	case MergePlanned:
		if s.Merge == nil {
			s.Merge = &MergeState{Staging: m.Staging, Key: m.Key, Order: m.Order, Ascending: m.Ascending}
		} else if fmt.Sprint(m.Key) != fmt.Sprint(s.Merge.Key) || m.Order != s.Merge.Order || m.Ascending != s.Merge.Ascending {
			return fmt.Errorf("the load by key is planned again with another key or order")
		}
		s.Merge.Dropped = false
	case MergeIntent:
		s.Merge.Intent, s.Merge.IntentSeq, s.Merge.Result = &m, r.Seq, nil
		s.Merge.Attempts++
	case MergeResult:
		if s.Merge.Intent == nil || s.Merge.Result != nil {
			return fmt.Errorf("MERGE result without an open MERGE intent")
		}
		s.Merge.Result = &m
		if m.Inserted != nil {
			s.Merge.MergedSeq = r.Seq
		}
	case MergeDropped:
		s.Merge.Dropped = true
	}
	return nil
}

// anyIntent reports whether some batch of the run has an intent.
func (s *State) anyIntent() bool {
	for _, b := range s.Batches {
		if b.Attempts > 0 {
			return true
		}
	}
	return false
}

// mayStart reports whether a new statement may be sent for the batch: it is planned, it
// failed, its outcome is unknown, or its last statement returned an error without a count
// (the caller settles that from history first; the journal cannot).
func (b *BatchState) mayStart() bool {
	switch b.Status {
	case BatchPlanned, BatchFailed, BatchUnknown:
		return true
	case BatchOpen:
		return b.Result != nil && b.Result.Err != ""
	}
	return false
}

func (s *State) addFiles(b *BatchState) error {
	states := make([]FileState, len(b.Files)) // one allocation for the batch's files
	for i, f := range b.Files {
		if o := s.byKey[f.Key]; o != nil {
			return fmt.Errorf("file %s is in batch %d and batch %d", f.Key, o.Batch, b.Batch)
		}
		fs := &states[i]
		*fs = FileState{File: f, Run: s.Run, Root: s.Root, Batch: b.Batch}
		s.byKey[f.Key] = fs
		s.files = append(s.files, fs)
	}
	return nil
}

func samePrecondition(a, b File) bool {
	pa, pb := a.Precondition(), b.Precondition()
	return pa.ETag == pb.ETag && pa.Generation == pb.Generation && pa.Size == pb.Size && pa.ModTime.Equal(pb.ModTime)
}

func (s *State) status(ended bool) RunStatus {
	verified, removed := 0, 0
	for _, f := range s.files {
		if s.batch(f.Batch).Status == BatchVerified {
			verified++
			if f.Delete == Deleted || f.Delete == DeleteGone {
				removed++
			}
		}
	}
	if removed > 0 {
		if removed == verified {
			return RunCleaned
		}
		return RunPartiallyCleaned
	}
	count := map[BatchStatus]int{}
	attempted := false
	for _, b := range s.Batches {
		count[b.Status]++
		attempted = attempted || b.Attempts > 0
	}
	pending := count[BatchPlanned] + count[BatchOpen] + count[BatchLoaded] + count[BatchFailed]
	mergePending := attempted && s.MergePending()
	switch {
	case count[BatchMismatch]+count[BatchUndoMismatch] > 0:
		return RunMismatch
	case count[BatchUndoing] > 0:
		return RunUndoing
	case !ended && attempted && (pending > 0 || mergePending):
		return RunLoading
	case count[BatchOpen]+count[BatchLoaded]+count[BatchUnknown] > 0:
		return RunUnknown
	case count[BatchFailed] > 0 || (attempted && count[BatchPlanned] > 0) || mergePending:
		return RunFailed
	case count[BatchPlanned] > 0 || (len(s.Batches) == 0 && !ended):
		return RunPlanned
	case count[BatchUndone] > 0 && count[BatchUndone] == len(s.Batches):
		return RunUndone
	case count[BatchUndone] > 0:
		return RunPartiallyUndone
	}
	return RunVerified
}

func (s *State) batch(n int) *BatchState {
	i := sort.Search(len(s.Batches), func(i int) bool { return s.Batches[i].Batch >= n })
	if i < len(s.Batches) && s.Batches[i].Batch == n {
		return s.Batches[i]
	}
	return nil
}

// Batch returns batch n, or nil.
func (s *State) Batch(n int) *BatchState { return s.batch(n) }

// Unfinished reports whether a re-run has work to do on this run: a batch planned, open,
// loaded but not classified, or failed. Unknown batches are left to verify.
func (s *State) Unfinished() bool {
	mismatch := false
	for _, b := range s.Batches {
		switch b.Status {
		case BatchPlanned, BatchOpen, BatchLoaded, BatchFailed:
			return true
		case BatchMismatch:
			mismatch = true
		}
	}
	// A load by key is unfinished while staged rows wait for the MERGE (unless a batch
	// mismatched: that stops it) or the staging table is still there.
	return s.Merge != nil && !mismatch && (s.MergePending() || !s.Merge.Dropped)
}

// OpenBatches returns the batches whose statement may have run without a known row count:
// an intent without a result, or a result without a count, and no classification since.
// A re-run settles them from the table's history before anything else.
func (s *State) OpenBatches() []*BatchState { return s.batchesIn(BatchOpen) }

// Unclassified returns the batches with a row count but no classification yet.
func (s *State) Unclassified() []*BatchState { return s.batchesIn(BatchLoaded) }

// Remaining returns the batches a re-run sends (again): planned or failed.
func (s *State) Remaining() []*BatchState { return s.batchesIn(BatchPlanned, BatchFailed) }

func (s *State) batchesIn(st ...BatchStatus) []*BatchState {
	var out []*BatchState
	for _, b := range s.Batches {
		for _, x := range st {
			if b.Status == x {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

// Files returns every file of the run, in batch order.
func (s *State) Files() []FileState {
	out := make([]FileState, 0, len(s.files))
	for _, f := range s.files {
		out = append(out, s.view(f))
	}
	return out
}

// File returns the state of the file with key, if the run has it.
func (s *State) File(key string) (FileState, bool) {
	f := s.byKey[key]
	if f == nil {
		return FileState{}, false
	}
	return s.view(f), true
}

func (s *State) view(f *FileState) FileState {
	v := *f
	v.Status = s.batch(f.Batch).Status
	return v
}

// VerifiedFiles returns the files of verified batches, each with the version that was
// verified (FileState.Precondition), including those already deleted (see Delete); for a
// load by key, only the batches a committed MERGE followed (before it, their rows are in the
// staging table, not in the table). It is the only list cleanup may delete from.
func (s *State) VerifiedFiles() []FileState {
	var out []FileState
	for _, f := range s.files {
		if v := s.view(f); v.Status == BatchVerified && s.merged(s.batch(f.Batch)) {
			out = append(out, v)
		}
	}
	return out
}

// Deleted returns the files a deleted record names, with their latest delete status.
func (s *State) Deleted() []FileState {
	var out []FileState
	for _, f := range s.files {
		if f.Delete != "" {
			out = append(out, s.view(f))
		}
	}
	return out
}

// ExpectedRows is the sum of the expected rows of every batch.
func (s *State) ExpectedRows() int64 {
	var n int64
	for _, b := range s.Batches {
		n += b.ExpectedRows
	}
	return n
}

// Rows is what a run's batches hold and loaded: the one accounting every output (reload's
// report, verify, history, summaries) takes its totals from.
type Rows struct {
	// Expected is the footer rows of every batch.
	Expected int64 `json:"expected_rows"`
	// Answered is the rows the batches' statements answered with, where the answer was
	// recorded.
	Answered int64 `json:"answered_rows"`
	// FromHistory is the rows of verified batches whose answer was lost, settled from the
	// table's history (a commit with exactly the batch's rows).
	FromHistory int64 `json:"history_rows"`
	// Loaded is Answered + FromHistory: the rows the run put in the table.
	Loaded int64 `json:"loaded_rows"`
	// Undone is the rows of the batches undone since (zbrecover undo took them back).
	Undone int64 `json:"undone_rows,omitempty"`
}

// LoadedRows returns the rows batch b put in the table and how that is known: "answer" (its
// statement's answer), "history" (verified from the table's history, its answer lost: its
// footer rows), or "" with 0 when it loaded nothing known.
func (b *BatchState) LoadedRows() (int64, string) {
	verified := b.Status == BatchVerified || b.Undo != nil // an undo starts from a verified batch
	if b.Result != nil && b.Result.Inserted != nil && (*b.Result.Inserted > 0 || !verified) {
		return *b.Result.Inserted, "answer"
	}
	if verified {
		return b.ExpectedRows, "history"
	}
	return 0, ""
}

// Rows is the run's accounting of rows.
func (s *State) Rows() Rows {
	var r Rows
	for _, b := range s.Batches {
		r.Expected += b.ExpectedRows
		n, how := b.LoadedRows()
		switch how {
		case "answer":
			r.Answered += n
		case "history":
			r.FromHistory += n
		}
		if b.Status == BatchUndone {
			r.Undone += n
		}
	}
	r.Loaded = r.Answered + r.FromHistory
	return r
}

// InsertedRows is the rows the run put in the table (Rows().Loaded).
func (s *State) InsertedRows() int64 { return s.Rows().Loaded }
