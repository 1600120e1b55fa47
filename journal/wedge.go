package journal

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Wedge says that two processes (or more) wrote one run at once: some record numbers of the
// run are held by more than one record. Journals of earlier versions can hold such runs: a
// record on an object store was named by its number and its kind, so create-only guarded a
// number only against a record of the same kind, and a lock broken while its holder still
// worked let two processes continue one run, each numbering its records from what it had
// read. Their records interleave and cannot be told apart (a record does not name its
// process), so Replay reads them by the wedge rule instead of failing:
//
//   - the records before the first number held twice are replayed as always;
//   - the records from there on (the forked records) are all kept, in number order, each
//     applied as far as the run's state allows; none is dropped;
//   - a batch a forked record names (an intent, a result, an outcome) is then judged on all
//     of its records: mismatch when an outcome says so or, in a plain reload, when two
//     statements of the batch both inserted rows; verified when an outcome proves it by the
//     batch's own evidence (its statement's answer, its commit tag, its MERGE), whichever
//     process wrote it; else unknown (a statement of it may have been sent: never planned
//     or failed, so no re-run sends it again before verify settles it); a batch no forked
//     record names keeps its state;
//   - the first run record after the last number held twice is written by a process that
//     read the run by this rule: from there on the records are replayed as always. When one
//     of them does not apply to the state the rule gave, the run is read by the rule to its
//     end.
//
// Nothing a forked record says a statement did is lost: every intent counts (the batch may
// be loaded), every delete is kept (the file may be gone), every claimed commit stays
// claimed.
type Wedge struct {
	// Seqs are the record numbers held by more than one record.
	Seqs []int
	// From and To bound the records read by the rule: From is the first number held twice,
	// To the last record before a later process's run record (or the run's last record).
	From, To int
	// Unknown are the batches the rule left unknown, Mismatch those it found mismatched,
	// Verified those a forked record names that their own evidence proves.
	Unknown, Mismatch, Verified []int
	// Deleted counts the files of unknown or mismatched batches that a forked record shows
	// deleted (or about to be).
	Deleted int
	// Skipped describes the forked records (or parts) that could not apply to the state.
	Skipped []string
}

// Message says what happened to the run and how to go on, for the operator.
func (w *Wedge) Message(run string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s was written by two processes at once: %s %s %s held by two records%s "+
		"(an earlier version let a process continue a run whose lock it broke while the holder still worked); "+
		"records %d to %d are read by the journal's wedge rule, every one of them kept",
		run, plural(len(w.Seqs), "record number", "record numbers"), intList(w.Seqs), pluralVerb(len(w.Seqs)),
		plural(len(w.Seqs), "", " each"), w.From, w.To)
	if n := len(w.Mismatch); n > 0 {
		fmt.Fprintf(&b, "; %s %s %s mismatched: rows may be in the table twice, check with verify --key",
			plural(n, "batch", "batches"), intList(w.Mismatch), pluralVerb(n))
	}
	if n := len(w.Unknown); n > 0 {
		fmt.Fprintf(&b, "; %s %s %s unknown: either process may have sent %s statement, "+
			"so no run sends %s again and cleanup keeps %s files until `zbrecover verify` settles %s",
			plural(n, "batch", "batches"), intList(w.Unknown), pluralVerb(n), itsTheir(n), itThem(n), itsTheir(n), itThem(n))
	}
	if n := len(w.Verified); n > 0 {
		fmt.Fprintf(&b, "; %s %s %s verified by %s own statement's answer, commit tag or MERGE",
			plural(n, "batch", "batches"), intList(w.Verified), pluralVerb(n), itsTheir(n))
	}
	if w.Deleted > 0 {
		fmt.Fprintf(&b, "; %d files of those batches were deleted meanwhile", w.Deleted)
	}
	if n := len(w.Skipped); n > 0 {
		fmt.Fprintf(&b, "; not applied: %s", strings.Join(w.Skipped[:min(n, 3)], "; "))
		if n > 3 {
			fmt.Fprintf(&b, "; and %d more", n-3)
		}
	}
	b.WriteString(". The run goes on from its last record: a re-run sends only batches no statement was sent for")
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func pluralVerb(n int) string { return plural(n, "is", "are") }
func itsTheir(n int) string   { return plural(n, "its", "their") }
func itThem(n int) string     { return plural(n, "it", "them") }

func intList(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}

// heldTwice returns the record numbers of rs (sorted by seq) held by more than one record,
// and rs without the copies of a record stored twice as it is (the same bytes say nothing
// more), with a warning for each.
func heldTwice(rs []Record) (seqs []int, out []Record, warns []string) {
	out = rs[:0:0]
	for i, r := range rs {
		if i > 0 && r.Seq == rs[i-1].Seq {
			if same(r, rs[i-1]) {
				warns = append(warns, fmt.Sprintf("run %s: record %d (%s) is stored twice, the same bytes: read once", r.Run, r.Seq, r.Kind))
				continue
			}
			if len(seqs) == 0 || seqs[len(seqs)-1] != r.Seq {
				seqs = append(seqs, r.Seq)
			}
		}
		out = append(out, r)
	}
	return seqs, out, warns
}

// same reports whether two records encode to the same bytes.
func same(a, b Record) bool {
	ea, erra := encode(a)
	eb, errb := encode(b)
	return erra == nil && errb == nil && bytes.Equal(ea, eb)
}

// replayWedged replays a run some of whose record numbers are held twice (seqs), by the
// wedge rule (see Wedge). rs is sorted by seq.
func replayWedged(rs []Record, seqs []int) (*State, error) {
	for _, r := range rs {
		if r.Run != rs[0].Run {
			return nil, fmt.Errorf("run %s: seq %d belongs to run %s", rs[0].Run, r.Seq, r.Run)
		}
	}
	// Records of one number in a fixed order: by time, then kind.
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Seq != b.Seq {
			return a.Seq < b.Seq
		}
		if !a.Time.Equal(b.Time) {
			return a.Time.Before(b.Time)
		}
		return a.Kind < b.Kind
	})
	last := seqs[len(seqs)-1]
	end := len(rs)
	for i, r := range rs {
		if r.Seq > last && r.Kind == KindRun {
			end = i
			break
		}
	}
	st, err := replayWedgedTo(rs, seqs, end)
	if err != nil && end < len(rs) {
		// A later process's records do not follow from the state the rule gave: the rule
		// reads them too.
		if st2, err2 := replayWedgedTo(rs, seqs, len(rs)); err2 == nil {
			return st2, nil
		}
	}
	return st, err
}

// replayWedgedTo replays rs[:i] as always up to the first number held twice, rs[i:end] by the
// wedge rule, and the rest as always.
func replayWedgedTo(rs []Record, seqs []int, end int) (*State, error) {
	from := seqs[0]
	p := newReplayer()
	i := 0
	for ; i < len(rs) && rs[i].Seq < from; i++ {
		if err := p.add(rs[i]); err != nil {
			return nil, err
		}
	}
	if p.n == 0 {
		return nil, fmt.Errorf("run %s: record 1 is held %d times: two runs under one id", rs[0].Run, countSeq(rs, 1))
	}
	if p.n != from-1 {
		return nil, fmt.Errorf("run %s: seq %d follows seq %d (records %d to %d are missing)", p.s.Run, from, p.n, p.n+1, from-1)
	}
	w := &wedging{p: p, touched: map[int]*forked{}, alias: map[int][]int{}}
	for ; i < end; i++ {
		if err := w.apply(rs[i]); err != nil {
			return nil, err
		}
	}
	wedge := w.resolve(seqs)
	for ; i < len(rs); i++ {
		if err := p.add(rs[i]); err != nil {
			return nil, err
		}
	}
	st, err := p.finish()
	if err != nil {
		return nil, err
	}
	st.Wedge = wedge
	st.Warnings = append(st.Warnings, wedge.Message(st.Run))
	return st, nil
}

func countSeq(rs []Record, seq int) int {
	n := 0
	for _, r := range rs {
		if r.Seq == seq {
			n++
		}
	}
	return n
}

// wedging applies a run's forked records.
type wedging struct {
	p       *replayer
	touched map[int]*forked // batches an intent, result or outcome names, by number
	// alias maps a batch number that two processes planned with other files to the numbers
	// the second plans were given: a record naming the number may mean any of them.
	alias   map[int][]int
	skipped []string
}

// forked is what the forked records say of one batch.
type forked struct {
	outcomes []Outcome // the outcome at the fork, then every forked one
	rows     int       // statements whose answer had rows, at the fork and forked
	// ambiguous is set when a record naming the batch may mean another batch (two plans
	// gave its number to other files): no outcome then proves it.
	ambiguous bool
}

func (w *wedging) skip(r Record, format string, args ...any) {
	w.skipped = append(w.skipped, fmt.Sprintf("record %d (%s): ", r.Seq, r.Kind)+fmt.Sprintf(format, args...))
}

// batches returns the batches a forked record naming batch n may mean; when they are several,
// each is marked ambiguous.
func (w *wedging) batches(n int) []*BatchState {
	var out []*BatchState
	for _, m := range append([]int{n}, w.alias[n]...) {
		if b := w.p.batches[m]; b != nil {
			out = append(out, b)
		}
	}
	return out
}

// named returns the batches a forked intent, result or outcome naming batch n may mean, each
// with what the forked records say of it.
func (w *wedging) named(r Record, n int) ([]*BatchState, []*forked) {
	bs := w.batches(n)
	if len(bs) == 0 {
		w.skip(r, "batch %d, which no plan names", n)
	}
	fs := make([]*forked, len(bs))
	for i, b := range bs {
		fs[i] = w.touch(b)
		fs[i].ambiguous = fs[i].ambiguous || len(bs) > 1
	}
	return bs, fs
}

// touch returns what the forked records say of b, starting from its state at the fork.
func (w *wedging) touch(b *BatchState) *forked {
	f := w.touched[b.Batch]
	if f == nil {
		f = &forked{}
		if b.Outcome != nil {
			f.outcomes = append(f.outcomes, *b.Outcome)
		}
		if b.Result != nil && b.Result.Inserted != nil && *b.Result.Inserted > 0 {
			f.rows++
		}
		w.touched[b.Batch] = f
	}
	return f
}

// apply applies one forked record as far as the state allows; only a record of another run
// or table is an error.
func (w *wedging) apply(r Record) error {
	p := w.p
	s := p.s
	if r.Run != s.Run {
		return fmt.Errorf("run %s: seq %d belongs to run %s", s.Run, r.Seq, r.Run)
	}
	if r.TableID != s.TableID {
		return fmt.Errorf("run %s seq %d: table id %s, the run's is %s", s.Run, r.Seq, r.TableID, s.TableID)
	}
	if r.Seq != p.n && r.Seq != p.n+1 {
		return fmt.Errorf("run %s: seq %d follows seq %d (records %d to %d are missing)", s.Run, r.Seq, p.n, p.n+1, r.Seq-1)
	}
	p.n, s.LastSeq = r.Seq, r.Seq
	switch r.Kind {
	case KindRun:
		s.Processes = append(s.Processes, Process{Seq: r.Seq, Time: r.Time, Header: *r.Header})
		p.lastRun = r.Seq
	case KindEnd:
		e := *r.End
		s.End = &e
		p.lastEnd = r.Seq
	case KindPlan:
		w.plan(r)
	case KindIntent:
		bs, _ := w.named(r, r.Intent.Batch)
		for _, b := range bs {
			in := *r.Intent
			b.Intent, b.IntentSeq = &in, r.Seq
			b.Attempts++
			b.Tags = append(b.Tags, in.Tag)
			if in.BaseVersion != nil && (b.FirstBase == nil || *in.BaseVersion < *b.FirstBase) {
				v := *in.BaseVersion
				b.FirstBase = &v
			}
			if in.ExpectedRows > 0 {
				b.ExpectedRows = in.ExpectedRows
			}
			if in.SQL != "" {
				b.SQL = in.SQL
			}
			for _, f := range in.Files {
				if fs := s.byKey[f.Key]; fs != nil && fs.Batch == b.Batch {
					fs.File = f
				}
			}
			s.lastBatchSeq = r.Seq
		}
	case KindResult:
		bs, fs := w.named(r, r.Result.Batch)
		for i, b := range bs {
			f := fs[i]
			res := *r.Result
			b.Result = &res
			if res.Inserted != nil && *res.Inserted > 0 {
				f.rows++
			}
			s.lastBatchSeq = r.Seq
		}
	case KindOutcome:
		bs, fs := w.named(r, r.Outcome.Batch)
		for i, b := range bs {
			f := fs[i]
			f.outcomes = append(f.outcomes, *r.Outcome)
			b.OutcomeTime = r.Time
			s.lastBatchSeq = r.Seq
		}
	case KindVerification:
		v := *r.Verification
		for _, c := range v.Checks {
			for _, b := range w.batches(c.Batch) {
				c := c
				b.Check = &c
			}
		}
		s.Verification, s.VerificationTime = &v, r.Time
		if v.Keys != nil {
			s.KeyCheck = &v
		}
		if v.By != "cleanup" {
			s.LastVerify, s.LastVerifyTime = &v, r.Time
		}
	case KindStaging:
		w.staging(r)
	case KindDeleteIntent:
		for _, f := range r.Deletion.Files {
			if fs := s.byKey[f.Key]; fs != nil {
				fs.DeleteIntent = true
			} else {
				w.skip(r, "delete intent for %s, which the run does not hold", f.Key)
			}
		}
	case KindDeleted:
		for _, d := range r.Deletion.Results {
			fs := s.byKey[d.Key]
			if fs == nil {
				w.skip(r, "deletion of %s, which the run does not hold", d.Key)
				continue
			}
			fs.DeleteIntent = true
			fs.Delete, fs.DeleteReason = d.Status, d.Reason
			if d.Archive != "" {
				fs.Archive = d.Archive
			}
		}
	case KindMerge:
		if err := s.applyMerge(r); err != nil {
			w.skip(r, "%v", err)
		}
	case KindUndo:
		// An undo refuses a run read by the wedge rule; a record of one is not applied.
		w.skip(r, "an undo of batch %d in a run written by two processes at once is not applied", r.Undo.Batch)
	case KindKeys:
		for _, n := range r.Keys.Batches {
			if len(w.batches(n)) == 0 {
				w.skip(r, "keys file %s names batch %d, which no plan names", r.Keys.Key, n)
				return nil
			}
		}
		s.KeysFiles = append(s.KeysFiles, *r.Keys)
	default:
		s.Unknown = append(s.Unknown, r)
		s.Warnings = append(s.Warnings, fmt.Sprintf("run %s seq %d: record of unknown kind %q (format v%d), kept unread", s.Run, r.Seq, r.Kind, r.V))
	}
	return nil
}

// plan applies a forked plan: a batch number planned again with the same files is the same
// batch; planned with other files, the batch is kept under a new number, and records naming
// the number may mean either.
func (w *wedging) plan(r Record) {
	p, s := w.p, w.p.s
	for _, pb := range r.Plan.Batches {
		if pb.Batch < 1 {
			w.skip(r, "batch number %d", pb.Batch)
			continue
		}
		n := pb.Batch
		if old := p.batches[n]; old != nil {
			if sameKeys(old.Files, pb.Files) {
				continue
			}
			pb.Batch = s.Batches[len(s.Batches)-1].Batch + 1
			w.alias[n] = append(w.alias[n], pb.Batch)
			w.skip(r, "batch %d is planned again with other files: kept as batch %d", n, pb.Batch)
		}
		b := &BatchState{Batch: pb.Batch, Group: pb.Group, Folder: pb.Folder, ExpectedRows: pb.ExpectedRows,
			SQL: pb.SQL, Select: pb.Select, Status: BatchPlanned}
		for _, f := range pb.Files {
			if o := s.byKey[f.Key]; o != nil {
				w.skip(r, "file %s of batch %d is already in batch %d", f.Key, n, o.Batch)
				continue
			}
			b.Files = append(b.Files, f)
		}
		p.batches[b.Batch] = b
		s.Batches = append(s.Batches, b)
		_ = s.addFiles(b) // every file is new to the run
		sort.Slice(s.Batches, func(i, j int) bool { return s.Batches[i].Batch < s.Batches[j].Batch })
	}
	if r.Plan.Source != "" && s.Source == "" {
		s.Source = r.Plan.Source
	} else if r.Plan.Source != "" && r.Plan.Source != s.Source {
		w.skip(r, "the plan reads %s, the run's statements read %s", r.Plan.Source, s.Source)
	}
}

func sameKeys(a, b []File) bool {
	return slices.EqualFunc(a, b, func(x, y File) bool { return x.Key == y.Key })
}

// staging applies a forked staging record; a removal of a copy the run does not hold there
// is skipped.
func (w *wedging) staging(r Record) {
	_ = w.p.s.applyStaging(r, func(format string, args ...any) error {
		w.skip(r, format, args...)
		return nil
	})
}

// resolve judges every batch a forked record names (see Wedge) and returns the wedge.
func (w *wedging) resolve(seqs []int) *Wedge {
	s := w.p.s
	wg := &Wedge{Seqs: seqs, From: seqs[0], To: w.p.n, Skipped: w.skipped}
	nums := make([]int, 0, len(w.touched))
	for n := range w.touched {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for _, n := range nums {
		b, f := w.p.batches[n], w.touched[n]
		var mismatch, proved *Outcome
		var claimed *int64
		for i := range f.outcomes {
			o := &f.outcomes[i]
			if o.Version != nil {
				claimed = o.Version
			}
			switch {
			case o.Status == BatchMismatch:
				mismatch = o
			case o.Status == BatchVerified && o.Evidence.Strong():
				proved = o
			}
		}
		switch {
		case mismatch != nil:
			b.Status, b.Outcome = BatchMismatch, mismatch
			wg.Mismatch = append(wg.Mismatch, n)
		case f.rows > 1 && s.Merge == nil:
			b.Status = BatchMismatch
			b.Outcome = &Outcome{Batch: n, Status: BatchMismatch, Version: claimed,
				Reason: fmt.Sprintf("two processes wrote this run at once (records %d to %d), and %d statements of this batch each inserted rows: its rows may be in the table twice", wg.From, wg.To, f.rows)}
			wg.Mismatch = append(wg.Mismatch, n)
		case proved != nil && !f.ambiguous:
			b.Status, b.Outcome = BatchVerified, proved
			wg.Verified = append(wg.Verified, n)
		default:
			// A forked intent, result or outcome names the batch: a statement of it may have
			// been sent.
			b.Status = BatchUnknown
			b.Outcome = &Outcome{Batch: n, Status: BatchUnknown, Version: claimed,
				Reason: fmt.Sprintf("two processes wrote this run at once (records %d to %d): either may have sent this batch's statement, "+
					"and no answer, commit tag or MERGE of its own proves its rows; verify settles it", wg.From, wg.To)}
			wg.Unknown = append(wg.Unknown, n)
		}
		if b.Status != BatchVerified {
			for _, fs := range s.files {
				if fs.Batch == n && (fs.DeleteIntent || fs.Delete != "") {
					wg.Deleted++
				}
			}
		}
	}
	return wg
}
