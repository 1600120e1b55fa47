package reload

import (
	"context"
	"fmt"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
)

// preflight runs VALIDATE ALL for every statement (pass/fail only; its rows are never read),
// or, with NoValidate, one cheap probe of path access. A LOCATION_OVERLAP refusal anywhere
// stops the reload before anything is loaded.
func (r *runner) preflight(ctx context.Context, stmts []string) error {
	if len(stmts) == 0 {
		return nil
	}
	check := func(stmt string) error {
		_, err := r.d.Warehouse.QueryAll(ctx, stmt)
		if err == nil {
			return nil
		}
		if databricks.IsLocationOverlap(err) {
			return ErrLocationOverlap
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w during preflight", ErrInterrupted)
		}
		if se := databricks.Classify(err); se.Class == databricks.ClassAuth || se.Class == databricks.ClassConnection {
			// Not a refusal of the files: the warehouse was not reached, or refused the
			// credentials.
			return fmt.Errorf("preflight: %w; nothing was loaded", err)
		}
		return fmt.Errorf("%w: %v", ErrValidate, err)
	}
	if r.o.NoValidate {
		stmts = stmts[:1]
	}
	tell(r.run.Progress.Validate, 0, len(stmts))
	for i, s := range stmts {
		// A graceful stop waits for the statement in flight, not for every batch's check:
		// nothing is loaded yet, and the next run checks them again.
		if r.run.stopped() {
			return fmt.Errorf("%w during preflight: stopped on request; nothing of these batches was loaded", ErrInterrupted)
		}
		if err := check(s); err != nil {
			return err
		}
		tell(r.run.Progress.Validate, i+1, len(stmts))
	}
	return nil
}

// validateOf turns a load statement of a journal of an earlier version (which kept only
// the statement) into its VALIDATE ALL form.
func validateOf(stmt string) string {
	return strings.Replace(stmt, " FILEFORMAT = PARQUET FILES = (", " FILEFORMAT = PARQUET VALIDATE ALL FILES = (", 1)
}
