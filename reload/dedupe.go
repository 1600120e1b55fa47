package reload

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/journal"
	"github.com/zbrecover/zbrecover/schemadiff"
	"github.com/zbrecover/zbrecover/sqlstmt"
)

// Dedupe configures a load by key (reload --dedupe-key): the batches load, with the same
// statements, files and checks as a plain reload, into a staging table of the run; then one
// MERGE inserts into the table the staged records whose key it does not hold, one per key;
// then the staging table is dropped.
type Dedupe struct {
	Key Keys
	// Columns are the table's columns, in order: the MERGE inserts exactly these, so that
	// no column of its source (the staging table's batch number, the rank) can reach the
	// table, whatever the warehouse's schema evolution settings.
	Columns []string
	// Order is the column whose highest value (lowest with Ascending) wins among the
	// fallback records of one key; "" keeps the record of the earliest batch.
	Order     string
	Ascending bool
}

// Rule says which record of a key a load by key keeps.
func (d Dedupe) Rule() string {
	tail := "among records of one batch, any one (Spark does not say which)"
	if d.Order == "" {
		return "the record of the earliest batch (batches go by schema group, then folder and file name); " + tail
	}
	dir, which := "DESC NULLS LAST", "highest"
	if d.Ascending {
		dir, which = "ASC NULLS LAST", "lowest"
	}
	return fmt.Sprintf("the record with the %s %s (ORDER BY %s %s), then the earliest batch; %s",
		which, schemadiff.QuoteIdent(d.Order), schemadiff.QuoteIdent(d.Order), dir, tail)
}

// GuaranteeDedupe is what a load by key states.
const GuaranteeDedupe = "Each file is loaded at most once into the run's staging table (COPY INTO skips files " +
	"it already loaded; the journal records every batch and the MERGE). The MERGE inserts only records whose key " +
	"the table does not hold, one per key: afterwards every key of the loaded files is in the table, and this " +
	"load added no second row for any key. A key with a NULL column identifies nothing: such records are all inserted, " +
	"as a plain reload inserts them. Rows the table " +
	"already held more than once stay so, and Zerobus appends committed while the MERGE runs are not seen by it; " +
	"check with zbrecover verify --key COL."

var unsafeRun = regexp.MustCompile(`[^a-z0-9_]+`)

// StagingTable is the staging table of run for table t: in the same schema,
// <table>__zbrecover_<run>, lower case, non-alphanumerics as "_".
func StagingTable(t databricks.TableName, run string) databricks.TableName {
	return databricks.TableName{Catalog: t.Catalog, Schema: t.Schema,
		Table: t.Table + "__zbrecover_" + unsafeRun.ReplaceAllString(strings.ToLower(run), "_")}
}

// MergeReport is what the MERGE of a load by key did.
type MergeReport struct {
	Key       Keys   `json:"key"`
	Order     string `json:"order,omitempty"`
	Ascending bool   `json:"ascending,omitempty"`
	Rule      string `json:"rule"`
	Staging   string `json:"staging_table"`
	// Status: merged (the MERGE committed after every batch), pending (staged rows wait
	// for it: re-run reload), or not run (a batch mismatched).
	Status string `json:"status"`
	// Inserted are the rows the MERGE inserted into the table (of every send that
	// answered, and of a lost answer settled from the table's history).
	Inserted   int64  `json:"inserted_rows"`
	Statements int    `json:"merge_statements"`
	Settled    string `json:"settled,omitempty"`
	Dropped    bool   `json:"staging_dropped"`
	DropError  string `json:"drop_error,omitempty"`
}

// dedupeRun is a runner's load by key.
type dedupeRun struct {
	cfg     Dedupe
	target  databricks.TableName
	staging databricks.TableName
}

// checkDedupe refuses to mix a load by key with a plain reload in one run. A re-run of a
// load by key continues it as it was planned, with or without the flag.
func checkDedupe(st *journal.State, o Options) error {
	if st == nil || o.Dedupe == nil {
		return nil
	}
	if st.Merge == nil {
		return fmt.Errorf("run %s of this table was started without --dedupe-key and is unfinished: finish it first (zbrecover reload without --dedupe-key), then load by key", st.Run)
	}
	if fmt.Sprint(st.Merge.Key) != fmt.Sprint([]string(o.Dedupe.Key)) || st.Merge.Order != o.Dedupe.Order || st.Merge.Ascending != o.Dedupe.Ascending {
		return fmt.Errorf("run %s of this table loads by key %s (order %q) and is unfinished: re-run with the same --dedupe-key and --dedupe-order, or without them",
			st.Run, Keys(st.Merge.Key), st.Merge.Order)
	}
	return nil
}

// dedupeStart sets up a load by key once the run is known: the staging table (planned in the
// journal, then created if missing) and the new batches' statements, which load it instead
// of the table. History lookups of batches then read the staging table's.
func (r *runner) dedupeStart(ctx context.Context, st *journal.State, newBatches []Batch, base int) ([]Batch, error) {
	var cfg *Dedupe
	switch {
	case st != nil && st.Merge != nil:
		cfg = &Dedupe{Key: st.Merge.Key, Order: st.Merge.Order, Ascending: st.Merge.Ascending, Columns: r.columns()}
		r.log.Info("continuing a load by key", "run", st.Run, "key", cfg.Key.String())
	case r.o.Dedupe != nil && (st == nil || len(newBatches) > 0):
		cfg = r.o.Dedupe
	default:
		return newBatches, nil
	}
	d := &dedupeRun{cfg: *cfg, target: r.table, staging: StagingTable(r.table, r.w.Run())}
	if len(d.cfg.Columns) == 0 {
		d.cfg.Columns = r.columns()
	}
	if len(d.cfg.Columns) == 0 {
		return nil, fmt.Errorf("load by key: the table's columns are not known")
	}
	if st != nil && st.Merge != nil && st.Merge.Staging != d.staging.String() {
		return nil, fmt.Errorf("run %s: the journal names staging table %s, not %s", st.Run, st.Merge.Staging, d.staging)
	}
	r.dd = d
	r.rep.Guarantee = GuaranteeDedupe
	r.rep.Merge = &MergeReport{Key: cfg.Key, Order: cfg.Order, Ascending: cfg.Ascending, Rule: cfg.Rule(), Staging: d.staging.String(), Status: "pending"}
	if st != nil && st.Merge != nil {
		r.rep.Merge.Dropped = st.Merge.Dropped
	}
	if st == nil || st.Merge == nil || st.Merge.Dropped && len(newBatches) > 0 {
		if err := r.w.Append(ctx, journal.Record{Kind: journal.KindMerge, Merge: &journal.Merge{Step: journal.MergePlanned,
			Staging: d.staging.String(), Key: cfg.Key, Order: cfg.Order, Ascending: cfg.Ascending}}); err != nil {
			return nil, err
		}
		r.rep.Merge.Dropped = false
	}
	if !r.rep.Merge.Dropped {
		if _, err := r.d.Warehouse.QueryAll(ctx, sqlstmt.StagingCreate(d.target, d.staging)); err != nil {
			return nil, fmt.Errorf("create the staging table %s: %w", d.staging, err)
		}
	}
	out := make([]Batch, len(newBatches))
	for i, b := range newBatches {
		// The same statement, rendered from its parts into the staging table with the batch
		// number as a column.
		files := journalFiles(r.p.Plan.Prefix, b.Files)
		b.SQL = r.batchSQL(d.staging, base+i+1, files, b.Select, false)
		b.ValidateSQL = r.batchSQL(d.staging, base+i+1, files, b.Select, true)
		out[i] = b
	}
	r.table = d.staging
	r.hist.table = d.staging
	// The batches commit to the run's own staging table: only its versions can be claimed.
	r.claimed, r.unpinned = map[int64]journal.BatchRef{}, nil
	if st != nil {
		for _, b := range st.Batches {
			if b.Outcome != nil && b.Outcome.Version != nil {
				r.claimed[*b.Outcome.Version] = journal.BatchRef{Run: st.Run, Batch: b.Batch}
			}
		}
	}
	return out, nil
}

// dedupeFinish sends the MERGE when staged rows wait for it (settling a MERGE whose answer
// was lost from the table's history first), then drops the staging table.
func (r *runner) dedupeFinish(ctx context.Context) error {
	if r.dd == nil {
		return nil
	}
	mr := r.rep.Merge
	st, err := journal.ReadState(ctx, r.d.Journal, r.p.tgt.TableID, r.w.Run())
	if err != nil {
		return err
	}
	for _, b := range st.Batches {
		switch b.Status {
		case journal.BatchMismatch:
			mr.Status = "not_run"
			return nil
		case journal.BatchPlanned, journal.BatchOpen, journal.BatchLoaded, journal.BatchFailed:
			return fmt.Errorf("batch %d is %s: the MERGE waits until every batch is settled; re-run reload", b.Batch, b.Status)
		}
	}
	if st.Merge.Result != nil && st.Merge.Result.Inserted != nil {
		mr.Inserted += *st.Merge.Result.Inserted
	}
	if st.MergePending() {
		if st.Merge.Intent != nil && st.Merge.Result == nil {
			// An earlier MERGE got no answer: it may have committed. A commit carrying its
			// tag settles it (a MERGE inserts every record of a NULL key, which a second MERGE
			// would insert again); without one it is sent again: it inserts only the keys the
			// table lacks, so no record of a key is added twice.
			n, why, err := r.mergeByTag(ctx, st.Merge.Intent)
			if err != nil {
				return err
			}
			if n != nil {
				if err := r.w.Append(ctx, journal.Record{Kind: journal.KindMerge, Merge: &journal.Merge{Step: journal.MergeResult, Staging: r.dd.staging.String(),
					Inserted: n}}); err != nil {
					return err
				}
				mr.Inserted += *n
				mr.Settled = "an earlier MERGE got no answer: " + why
				mr.Status = "merged"
				return r.dropStaging(ctx)
			}
			if err := r.w.Append(ctx, journal.Record{Kind: journal.KindMerge, Merge: &journal.Merge{Step: journal.MergeResult, Staging: r.dd.staging.String(),
				Err: "no answer was recorded: the process ended while the MERGE was in flight"}}); err != nil {
				return err
			}
			mr.Settled = "an earlier MERGE got no answer: sent again (idempotent by key; records of a NULL key may be inserted twice)"
		}
		if err := r.sendMerge(ctx); err != nil {
			return err
		}
	}
	mr.Status = "merged"
	return r.dropStaging(ctx)
}

// sendMerge writes the MERGE's intent, sends it (retrying transaction conflicts) and writes
// its result.
func (r *runner) sendMerge(ctx context.Context) error {
	d, mr := r.dd, r.rep.Merge
	sql := sqlstmt.Merge(d.target, d.staging, sqlstmt.MergeSpec{Key: d.cfg.Key, Order: d.cfg.Order, Ascending: d.cfg.Ascending, Columns: d.cfg.Columns})
	backoff := r.o.Backoff
	target := &history{wh: r.d.Warehouse, table: d.target, retries: r.o.HistoryRetries, backoff: r.o.Backoff}
	for attempt := 1; ; attempt++ {
		base, err := target.latest(ctx)
		if err != nil {
			return fmt.Errorf("MERGE: %w (%v); nothing was sent: re-run reload once DESCRIBE HISTORY works", ErrNoBase, err)
		}
		if err := r.w.Append(ctx, journal.Record{Kind: journal.KindMerge, Merge: &journal.Merge{Step: journal.MergeIntent, Staging: d.staging.String(),
			SQL: sql, Started: r.o.Now().UTC(), BaseVersion: &base}}); err != nil {
			return err
		}
		mr.Statements++
		r.rep.Statements++
		res, err := r.load(ctx, sql, r.mergeTag(attempt))
		result := func(c context.Context, n *int64, e string) error {
			return r.w.Append(c, journal.Record{Kind: journal.KindMerge, Merge: &journal.Merge{Step: journal.MergeResult, Staging: d.staging.String(), Inserted: n, Err: e}})
		}
		if err == nil {
			n, ok := inserted(res)
			if !ok {
				_ = result(context.WithoutCancel(ctx), nil, "the MERGE returned no row count")
				return fmt.Errorf("MERGE into %s returned no row count (columns %v): re-run reload to send it again", d.target, res.Columns)
			}
			mr.Inserted += n
			return result(ctx, &n, "")
		}
		se := databricks.Classify(err)
		switch {
		case ctx.Err() != nil || se.Class == databricks.ClassCanceled:
			_ = result(context.WithoutCancel(ctx), nil, "interrupted: the MERGE was cancelled; the next run settles it")
			return fmt.Errorf("MERGE: %w", ErrInterrupted)
		case isConflict(se) && attempt < r.o.MaxAttempts:
			if err := result(ctx, nil, se.Error()); err != nil {
				return err
			}
			r.log.Warn("transaction conflict; retrying the MERGE", "attempt", attempt, "wait", backoff)
			if err := sleep(ctx, backoff); err != nil {
				return fmt.Errorf("MERGE: %w", ErrInterrupted)
			}
			backoff *= 2
		default:
			_ = result(context.WithoutCancel(ctx), nil, se.Error())
			return fmt.Errorf("MERGE from %s into %s (re-run reload to send it again; it inserts only keys the table lacks): %w", d.staging, d.target, err)
		}
	}
}

// dropStaging drops the staging table once its rows are merged. A failure is reported, not
// fatal: the rows are in the table, and the next reload of the table drops it.
func (r *runner) dropStaging(ctx context.Context) error {
	d, mr := r.dd, r.rep.Merge
	if _, err := r.d.Warehouse.QueryAll(ctx, sqlstmt.StagingDrop(d.staging)); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("drop the staging table %s: %w", d.staging, ErrInterrupted)
		}
		mr.DropError = err.Error()
		r.log.Warn("could not drop the staging table; the next reload drops it", "table", d.staging.String(), "error", err)
		return nil
	}
	mr.Dropped = true
	return r.w.Append(ctx, journal.Record{Kind: journal.KindMerge, Merge: &journal.Merge{Step: journal.MergeDropped, Staging: d.staging.String()}})
}

// mergeByTag looks, after the base of an unanswered MERGE, for the commits carrying the run's
// MERGE tags: the rows they inserted (numTargetRowsInserted), or nil (and why) when none
// does or the run is untagged.
func (r *runner) mergeByTag(ctx context.Context, in *journal.Merge) (*int64, string, error) {
	if !r.tagging || in == nil || in.BaseVersion == nil {
		return nil, "", nil
	}
	target := &history{wh: r.d.Warehouse, table: r.dd.target, retries: r.o.HistoryRetries, backoff: r.o.Backoff}
	cs, err := target.since(ctx, *in.BaseVersion)
	if err != nil {
		return nil, "", fmt.Errorf("read the table's history to settle the unanswered MERGE: %w", err)
	}
	prefix := "zbrecover:" + r.w.Run() + ":merge:"
	var n int64
	found := 0
	for _, c := range cs.List {
		if strings.EqualFold(c.Operation, "MERGE") && strings.HasPrefix(c.UserMetadata, prefix) {
			rows, _ := c.metric("numTargetRowsInserted")
			n += rows
			found++
		}
	}
	if found == 0 {
		return nil, "", nil
	}
	why := fmt.Sprintf("settled from its tagged commit in the table's history (%d rows inserted)", n)
	if found > 1 {
		why += fmt.Sprintf("; %d MERGE commits carry the run's tags: records of a NULL key may be in the table twice", found)
		r.rep.Warnings = append(r.rep.Warnings, why)
	}
	return &n, why, nil
}

// mergeTag is the tag of a MERGE attempt, "" when the run is untagged.
func (r *runner) mergeTag(attempt int) string {
	if !r.tagging {
		return ""
	}
	return mergeTag(r.w.Run(), attempt)
}

// MergeCheck is verify's view of a load by key's MERGE.
type MergeCheck struct {
	Staging  string `json:"staging_table"`
	Key      Keys   `json:"key"`
	Merged   bool   `json:"merged"`
	Inserted *int64 `json:"inserted_rows,omitempty"`
	Dropped  bool   `json:"staging_dropped"`
	OK       bool   `json:"ok"`
	Note     string `json:"note,omitempty"`
}

// checkMerge checks that a load by key's MERGE committed after its last batch.
func checkMerge(st *journal.State) *MergeCheck {
	m := st.Merge
	c := &MergeCheck{Staging: m.Staging, Key: m.Key, Merged: !st.MergePending(), Dropped: m.Dropped}
	if m.Result != nil {
		c.Inserted = m.Result.Inserted
	}
	c.OK = c.Merged
	if !c.OK {
		c.Note = "staged rows wait for the MERGE into the table: run reload again (it sends the MERGE, idempotent by key)"
	} else if !m.Dropped {
		c.Note = "the staging table is still there: the next reload drops it"
	}
	return c
}

// columns are the table's top-level column names, in order.
func (r *runner) columns() []string {
	if r.p.table == nil {
		return nil
	}
	out := make([]string, len(r.p.table.Schema.Fields))
	for i, f := range r.p.table.Schema.Fields {
		out[i] = f.Name
	}
	return out
}
