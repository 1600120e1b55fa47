package reload

import (
	"sort"
	"strings"

	"github.com/zbrecover/zbrecover/journal"
)

// Work is what Execute will do, the batches of the run it continues and the new ones alike:
// what a prompt asks about and a dry run shows.
type Work struct {
	// Table is the table loaded; Continues the run continued ("" for a new run).
	Table     string
	Continues string
	// Settle counts the continued run's batches whose statement may have committed without
	// its answer being recorded: settled from the table's history, or sent again.
	Settle int
	// Settling are those batches, with the statement that sends one again (its SQL "" for a
	// batch whose row count was recorded: the history only classifies it).
	Settling []WorkBatch
	// Batches are the statements to send (the continued run's unsent or failed batches, then
	// the new ones), with the files they name and the rows those hold.
	Batches []WorkBatch
	// StageTo is the staging location ("" for none); Stage counts the files copied or
	// checked there first.
	StageTo string
	Stage   int
	// Validate says whether VALIDATE ALL checks every statement first.
	Validate bool
}

// WorkBatch is one statement of the work.
type WorkBatch struct {
	N         int
	Continued bool // a batch of the continued run
	Group     string
	Folder    string
	Files     []string // keys relative to the fallback folder
	Rows      int64
	SQL       string
}

// Files returns the files the statements name.
func (w Work) Files() int {
	n := 0
	for _, b := range w.Batches {
		n += len(b.Files)
	}
	return n
}

// Rows returns the rows the statements are expected to insert.
func (w Work) Rows() int64 {
	var n int64
	for _, b := range w.Batches {
		n += b.Rows
	}
	return n
}

// Work is the plan's batches as work, for a new run of the table named table.
func (p *Plan) Work(table string) Work {
	w := Work{Table: table, Validate: true}
	for _, b := range p.Batches {
		w.Batches = append(w.Batches, WorkBatch{N: b.N, Group: b.Group, Folder: b.Folder, Files: b.Keys(), Rows: b.ExpectedRows, SQL: b.SQL})
	}
	return w
}

// Work describes what Execute will do. It sends nothing.
func (p *Prepared) Work() Work {
	w := Work{Table: p.tgt.TableName(), Validate: !p.o.NoValidate}
	r := &runner{p: p, o: p.o, st: p.Continues}
	r.recordedCopies()
	stage := 0
	if st := p.Continues; st != nil {
		w.Continues = st.Run
		w.Settle = len(st.OpenBatches()) + len(st.Unclassified())
		settling := func(b *journal.BatchState, sql string) {
			wb := WorkBatch{N: b.Batch, Continued: true, Group: b.Group, Folder: strings.TrimPrefix(b.Folder, p.Plan.Prefix), Rows: b.ExpectedRows, SQL: sql}
			for _, f := range b.Files {
				wb.Files = append(wb.Files, strings.TrimPrefix(f.Key, p.Plan.Prefix))
			}
			w.Settling = append(w.Settling, wb)
		}
		for _, b := range st.OpenBatches() {
			stage += len(b.Files)
			settling(b, r.statementOf(b, false))
		}
		for _, b := range st.Unclassified() {
			settling(b, "")
		}
		sort.Slice(w.Settling, func(i, j int) bool { return w.Settling[i].N < w.Settling[j].N })
		for _, b := range st.Remaining() {
			wb := WorkBatch{N: b.Batch, Continued: true, Group: b.Group, Folder: strings.TrimPrefix(b.Folder, p.Plan.Prefix), Rows: b.ExpectedRows, SQL: r.statementOf(b, false)}
			for _, f := range b.Files {
				wb.Files = append(wb.Files, strings.TrimPrefix(f.Key, p.Plan.Prefix))
			}
			w.Batches = append(w.Batches, wb)
			stage += len(b.Files)
		}
	}
	base := 0
	if p.Continues != nil {
		for _, b := range p.Continues.Batches {
			base = max(base, b.Batch)
		}
	}
	for i, b := range p.Plan.Batches {
		w.Batches = append(w.Batches, WorkBatch{N: base + i + 1, Group: b.Group, Folder: b.Folder, Files: b.Keys(), Rows: b.ExpectedRows, SQL: b.SQL})
		stage += len(b.Files)
	}
	if p.o.Stage != nil {
		w.StageTo, w.Stage = p.o.Stage.Location, stage
	}
	return w
}
