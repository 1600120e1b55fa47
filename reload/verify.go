package reload

import (
	"context"
	"fmt"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
)

// VerifyReport is the re-check of one run, batch by batch.
type VerifyReport struct {
	Run     string          `json:"run"`
	TableID string          `json:"table_id"`
	Table   string          `json:"table"`
	Status  string          `json:"status"`
	Checks  []journal.Check `json:"checks"`
	OK      bool            `json:"ok"`
	// Failed counts the batches whose counts do not agree or are not known.
	Failed    int    `json:"failed_batches"`
	Expected  int64  `json:"expected_rows"`
	Inserted  int64  `json:"inserted_rows"`
	Guarantee string `json:"guarantee"`
	// Merge is the state of a load by key's MERGE; Keys the key check (verify --key).
	Merge *MergeCheck `json:"merge,omitempty"`
	Keys  *KeyCheck   `json:"keys,omitempty"`
}

// Verify re-checks a run: for every batch, the rows its files' footers hold (as planned) vs the
// rows its statement reported inserted vs, where the batch was settled by a history version,
// that commit's numOutputRows. A batch that is not verified fails the check. It writes a
// verification record to the run (w may be nil to check without recording).
func Verify(ctx context.Context, wh Warehouse, table databricks.TableName, st *journal.State, w *journal.Writer) (*VerifyReport, error) {
	rep := &VerifyReport{Run: st.Run, TableID: st.TableID, Table: st.Table, Status: string(st.Status), Checks: []journal.Check{}, OK: true, Guarantee: Guarantee}
	var commits map[int64]Commit
	for _, b := range st.Batches {
		c := journal.Check{Batch: b.Batch, Expected: b.ExpectedRows}
		rep.Expected += b.ExpectedRows
		if b.Result != nil && b.Result.Inserted != nil {
			c.Inserted = b.Result.Inserted
			rep.Inserted += *b.Result.Inserted
		}
		// A load by key's batches were settled from the staging table's history.
		if b.Outcome != nil && b.Outcome.Version != nil && st.Merge == nil {
			if commits == nil {
				res, err := wh.QueryAll(ctx, HistorySQL(table, 1000))
				if err != nil {
					return nil, fmt.Errorf("read the table's history: %w", err)
				}
				list, err := ParseHistory(res)
				if err != nil {
					return nil, err
				}
				commits = map[int64]Commit{}
				for _, cm := range list {
					commits[cm.Version] = cm
				}
			}
			if cm, ok := commits[*b.Outcome.Version]; ok {
				if n, ok := cm.OutputRows(); ok {
					c.History = &n
				}
			}
		}
		switch {
		case b.Status != journal.BatchVerified:
			c.Note = fmt.Sprintf("batch is %s", b.Status)
			if b.Outcome != nil && b.Outcome.Reason != "" {
				c.Note += ": " + b.Outcome.Reason
			}
		case st.Merge != nil && b.Outcome != nil && b.Outcome.Version != nil:
			// Settled when it ran from the staging table's history (the table is dropped
			// once merged).
			c.OK = true
			c.Note = fmt.Sprintf("settled from the staging table's history (version %d)", *b.Outcome.Version)
		case c.History != nil && *c.History != c.Expected:
			c.Note = fmt.Sprintf("history version %d wrote %d rows, the files hold %d", *b.Outcome.Version, *c.History, c.Expected)
		case b.Outcome != nil && b.Outcome.Version != nil && c.History == nil && st.Merge == nil:
			c.Note = fmt.Sprintf("history version %d is no longer in the table's history (or has no numOutputRows)", *b.Outcome.Version)
		case c.History == nil && (c.Inserted == nil || *c.Inserted != c.Expected):
			c.Note = "the statement's row count does not match the files"
		default:
			c.OK = true
		}
		if !c.OK {
			rep.OK = false
			rep.Failed++
		}
		rep.Checks = append(rep.Checks, c)
	}
	if st.Merge != nil {
		rep.Merge = checkMerge(st)
		rep.Guarantee = GuaranteeDedupe
		if !rep.Merge.OK {
			rep.OK = false
		}
	}
	if w != nil {
		if err := w.Append(ctx, journal.Record{Kind: journal.KindVerification, Verification: &journal.Verification{Checks: rep.Checks}}); err != nil {
			return rep, err
		}
	}
	return rep, nil
}
