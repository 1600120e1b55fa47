package reload

import (
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/sqlstmt"
)

// statementOf is the statement batch b sends now (validate: its VALIDATE ALL form), rendered
// from the parts the journal keeps against this process's source; a batch already sent is
// sent again exactly as before (its source cannot have changed since). A journal of an
// earlier version that kept only the statement gives that statement.
func (r *runner) statementOf(b *journal.BatchState, validate bool) string {
	if b.Attempts > 0 && !validate && b.Intent != nil {
		return b.Intent.SQL
	}
	sel, ok := r.selectOf(b)
	if !ok {
		if validate {
			return validateOf(b.SQL)
		}
		return b.SQL
	}
	table := r.p.tgt.Name
	if r.st != nil && r.st.Merge != nil {
		table = StagingTable(r.p.tgt.Name, r.st.Run)
	}
	if sqlstmt.Forced(b.SQL) {
		// A redo planned from the fallback folder: rendered forced again, as planned.
		folder, names := batchNames(r.p.Plan.Prefix, b.Files, nil)
		return copySQL(table, r.p.Source, folder, sel, names, validate, true)
	}
	return r.batchSQL(table, b.Batch, b.Files, sel, validate)
}

// batchSQL renders the load of a batch's files with the projection sel into table (the
// target, or a load by key's staging table, which takes the batch number as a column), from
// the run's source: the fallback folder, or the files' staged paths.
func (r *runner) batchSQL(table databricks.TableName, batch int, files []journal.File, sel string, validate bool) string {
	var staged map[string]string
	if r.o.Stage != nil {
		staged = r.stagedMap(files)
	}
	folder, names := batchNames(r.p.Plan.Prefix, files, staged)
	if table != r.p.tgt.Name {
		return stagingCopySQL(table, batch, r.p.Source, folder, sel, names, validate)
	}
	return CopySQL(table, r.p.Source, folder, sel, names, validate)
}

// selectOf returns the batch's projection as planned, and false for journals of earlier
// versions that kept only the statement (and rendered one with a projection).
func (r *runner) selectOf(b *journal.BatchState) (string, bool) {
	if b.Select != "" || !strings.Contains(b.SQL, "(SELECT ") {
		return b.Select, true
	}
	return "", false
}

// statementOfWork is the statement an open batch is sent again with: the one its last
// attempt sent (the source cannot have changed after an intent).
func (r *runner) statementOfWork(b *journal.BatchState, w work) string {
	if b.Intent != nil {
		return b.Intent.SQL
	}
	return w.sql
}
