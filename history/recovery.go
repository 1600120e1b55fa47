package history

import (
	"context"
	"sort"
	"time"

	"github.com/zbrecover/zbrecover/journal"
)

// Recovery is one run told whole, for an incident ticket: what was found and left behind,
// how the files were loaded and each batch proved, what the latest key check found, what was
// deleted, archived and kept, and who ran what, when. It is read from the journal alone.
type Recovery struct {
	Run     string            `json:"run"`
	Table   string            `json:"table"`
	TableID string            `json:"table_id"`
	Root    string            `json:"root"`
	Status  journal.RunStatus `json:"status"`
	// Started is when the run's first process started, Ended when its last process ended (or
	// its last record was written).
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// Files are the run's files, Rows its accounting of rows.
	Files int          `json:"files"`
	Rows  journal.Rows `json:"rows"`
	// Groups are the schema groups loaded, with the projection (the fix) each was loaded
	// through; Proof how many batches and rows each kind of evidence proved.
	Groups []RecoveryGroup `json:"groups"`
	Proof  []ProofCount    `json:"proof"`
	// Batches are the run's batches, their state and how each was proved.
	Batches []RecoveryBatch `json:"batches"`
	// Keys is the latest key check (verify --key): missing keys, keys twice, NULL keys.
	Keys *journal.KeyResult `json:"keys,omitempty"`
	// Left are the files the run left in the fallback folder: unreadable or refused.
	Left []journal.LeftFile `json:"left"`
	// Deletion is what cleanup did with the run's files and their staged copies.
	Deletion RecoveryDeletion `json:"deletion"`
	// IgnoredForeign are the operators' decisions to load files other journals' runs may
	// have loaded.
	IgnoredForeign []journal.IgnoredForeign `json:"ignored_foreign_runs,omitempty"`
	// Commands are the processes that worked on the run, in order.
	Commands []RecoveryCommand `json:"commands"`
	// Warnings are what the journal notes of the run (a wedged run, torn records).
	Warnings []string `json:"warnings"`
}

// RecoveryGroup is one schema group of the run.
type RecoveryGroup struct {
	Group      string `json:"group"`
	Batches    int    `json:"batches"`
	Files      int    `json:"files"`
	Rows       int64  `json:"expected_rows"`
	Projection string `json:"projection,omitempty"`
}

// ProofCount is what one kind of evidence proved.
type ProofCount struct {
	Evidence string `json:"evidence"` // answer, tag, history, key, merge, or the state of unproved batches
	Batches  int    `json:"batches"`
	Rows     int64  `json:"rows"`
}

// RecoveryBatch is one batch: its files, rows, state and proof.
type RecoveryBatch struct {
	Batch    int                 `json:"batch"`
	Group    string              `json:"group"`
	Folder   string              `json:"folder"`
	Files    int                 `json:"files"`
	Rows     int64               `json:"expected_rows"`
	Loaded   int64               `json:"loaded_rows"`
	Status   journal.BatchStatus `json:"status"`
	Evidence string              `json:"evidence,omitempty"`
	Version  *int64              `json:"history_version,omitempty"`
	Reason   string              `json:"reason,omitempty"`
}

// RecoveryDeletion counts the run's files by what cleanup did, and names those kept.
type RecoveryDeletion struct {
	Deleted  int            `json:"deleted"`
	Bytes    int64          `json:"deleted_bytes"`
	Gone     int            `json:"already_gone"`
	Archived int            `json:"archived"`
	Kept     []RecoveryKept `json:"kept"`
	// NotCleaned counts the files cleanup has not dealt with yet.
	NotCleaned int `json:"not_cleaned"`
	// Staged are the staged copies, per staging location.
	Staged []RecoveryStaged `json:"staged"`
}

// RecoveryKept is a file cleanup kept, and why.
type RecoveryKept struct {
	Key    string `json:"key"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// RecoveryStaged counts the staged copies at one location.
type RecoveryStaged struct {
	Location string `json:"location"`
	Copies   int    `json:"copies"`
	Removed  int    `json:"removed"`
}

// RecoveryCommand is one process that worked on the run.
type RecoveryCommand struct {
	Time     time.Time `json:"time"`
	User     string    `json:"user,omitempty"`
	Identity string    `json:"identity,omitempty"`
	Host     string    `json:"host,omitempty"`
	Command  string    `json:"command"`
	Version  string    `json:"tool_version,omitempty"`
}

// ReadRecovery reads the run (among the tables with the given ids, every table of the
// journal when nil; table names them in an error) and tells it whole.
func ReadRecovery(ctx context.Context, store journal.Store, ids []string, table, run string) (*Recovery, error) {
	st, err := readState(ctx, store, ids, table, run)
	if err != nil {
		return nil, err
	}
	return RecoveryOf(st), nil
}

// RecoveryOf tells a replayed run whole.
func RecoveryOf(st *journal.State) *Recovery {
	r := &Recovery{Run: st.Run, Table: st.Table, TableID: st.TableID, Root: st.Root, Status: st.Status, Started: st.Started,
		Rows: st.Rows(), Groups: []RecoveryGroup{}, Proof: []ProofCount{}, Batches: []RecoveryBatch{}, Left: append([]journal.LeftFile{}, st.Left...),
		IgnoredForeign: st.IgnoredForeign, Commands: []RecoveryCommand{}, Warnings: append([]string{}, st.Warnings...)}
	r.Deletion.Kept = []RecoveryKept{}
	r.Deletion.Staged = []RecoveryStaged{}
	for _, p := range st.Processes {
		r.Commands = append(r.Commands, RecoveryCommand{Time: p.Time, User: p.User, Identity: p.Identity, Host: p.Host, Command: p.Command, Version: p.ToolVersion})
		if p.Time.After(r.Ended) {
			r.Ended = p.Time
		}
	}
	if st.End != nil && st.VerificationTime.After(r.Ended) {
		r.Ended = st.VerificationTime
	}
	groups := map[string]*RecoveryGroup{}
	proof := map[string]*ProofCount{}
	var order []string
	for _, b := range st.Batches {
		r.Files += len(b.Files)
		loaded, _ := b.LoadedRows()
		rb := RecoveryBatch{Batch: b.Batch, Group: b.Group, Folder: b.Folder, Files: len(b.Files), Rows: b.ExpectedRows, Loaded: loaded,
			Status: b.Status, Evidence: string(b.Evidence())}
		if b.Outcome != nil {
			rb.Version, rb.Reason = b.Outcome.Version, b.Outcome.Reason
		}
		r.Batches = append(r.Batches, rb)
		g := groups[b.Group]
		if g == nil {
			g = &RecoveryGroup{Group: b.Group, Projection: b.Select}
			groups[b.Group] = g
		}
		g.Batches++
		g.Files += len(b.Files)
		g.Rows += b.ExpectedRows
		kind := rb.Evidence
		if b.Status != journal.BatchVerified || kind == "" {
			kind = string(b.Status)
		}
		pc := proof[kind]
		if pc == nil {
			pc = &ProofCount{Evidence: kind}
			proof[kind] = pc
			order = append(order, kind)
		}
		pc.Batches++
		pc.Rows += loaded
	}
	for _, g := range groups {
		r.Groups = append(r.Groups, *g)
	}
	sort.Slice(r.Groups, func(i, j int) bool { return r.Groups[i].Group < r.Groups[j].Group })
	for _, k := range order {
		r.Proof = append(r.Proof, *proof[k])
	}
	if st.KeyVerify != nil {
		r.Keys = st.KeyVerify.Keys
	} else if st.KeyCheck != nil {
		r.Keys = st.KeyCheck.Keys
	}
	r.Deletion = deletionOf(st)
	return r
}

func deletionOf(st *journal.State) RecoveryDeletion {
	d := RecoveryDeletion{Kept: []RecoveryKept{}, Staged: []RecoveryStaged{}}
	staged := map[string]*RecoveryStaged{}
	var locs []string
	for _, f := range st.Files() {
		switch f.Delete {
		case journal.Deleted:
			d.Deleted++
			d.Bytes += f.Size
		case journal.DeleteGone:
			d.Gone++
		case "":
			d.NotCleaned++
		default:
			d.Kept = append(d.Kept, RecoveryKept{Key: f.Key, Status: string(f.Delete), Reason: f.DeleteReason})
		}
		if f.Archive != "" {
			d.Archived++
		}
		if f.Staged != "" {
			sg := staged[f.StagedLocation]
			if sg == nil {
				sg = &RecoveryStaged{Location: f.StagedLocation}
				staged[f.StagedLocation] = sg
				locs = append(locs, f.StagedLocation)
			}
			sg.Copies++
			if f.StagedRemoved {
				sg.Removed++
			}
		}
	}
	for _, l := range locs {
		d.Staged = append(d.Staged, *staged[l])
	}
	return d
}
