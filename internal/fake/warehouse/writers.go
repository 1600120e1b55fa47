package warehouse

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Lookalike is a commit by another writer that looks like one of the warehouse's own: the
// same operation, the same identity, the same engineInfo, and rows really inserted. It is
// what a client that settles "which commit is mine" from history must not mistake for its
// own.
type Lookalike struct {
	// Operation is "COPY INTO" (default: numOutputRows, the COPY INTO parameters, a blind
	// append) or "MERGE" (numTargetRowsInserted and numSourceRows).
	Operation string
	// Rows is how many synthetic rows the commit inserts (values as a Zerobus writer's
	// default rows, numbered from 900000001 so that they do not collide with Zerobus's).
	Rows int64
	// UserName is the commit's userName. Default: the one the warehouse's own commits record
	// (Unknowns.HistoryUserName, else the user statements run as).
	UserName string
	// UserMetadata is the commit's userMetadata; empty for none.
	UserMetadata string
}

// lookalikeFirstRow is the number of the first synthetic row of look-alike commits.
const lookalikeFirstRow = 900000000

// Validate reports whether the look-alike is well formed.
func (l Lookalike) Validate() error {
	switch strings.ToUpper(l.Operation) {
	case "", "COPY INTO", "MERGE":
	default:
		return fmt.Errorf("fakewarehouse: a look-alike commit is COPY INTO or MERGE, not %q", l.Operation)
	}
	if l.Rows < 0 {
		return errors.New("fakewarehouse: a look-alike commit cannot insert a negative number of rows")
	}
	return nil
}

// CommitLookalike commits a look-alike to table (catalog.schema.table) and returns its
// version.
func (e *DuckDB) CommitLookalike(ctx context.Context, table string, l Lookalike) (int64, error) {
	if err := l.Validate(); err != nil {
		return 0, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, errInternal(errors.New("engine closed"))
	}
	t, err := e.table(&Session{Catalog: "main", Schema: "default"}, strings.Split(table, "."))
	if err != nil {
		return 0, err
	}
	return e.commitLookalikeLocked(ctx, t, l)
}

// CommitLookalike commits a look-alike to a table of the warehouse; see DuckDB.CommitLookalike.
func (s *Server) CommitLookalike(ctx context.Context, table string, l Lookalike) (int64, error) {
	return s.duck.CommitLookalike(ctx, table, l)
}

func (e *DuckDB) commitLookalikeLocked(ctx context.Context, t *tableMeta, l Lookalike) (int64, error) {
	rows := make([][]string, l.Rows)
	for i := range rows {
		e.lookalikeRows++
		rows[i] = defaultZerobusRow(t.cols, lookalikeFirstRow+e.lookalikeRows)
	}
	w, err := e.appendValues(ctx, t, rows)
	if err != nil {
		return 0, err
	}
	n := strconv.FormatInt(l.Rows, 10)
	cs := commitSpec{user: l.UserName, userMetadata: l.UserMetadata, adds: w.adds}
	if strings.EqualFold(l.Operation, "MERGE") {
		cs.op = "MERGE"
		cs.params = map[string]string{"predicate": `["(target.id = source.id)"]`, "matchedPredicates": "[]",
			"notMatchedPredicates": `[{"actionType":"insert"}]`, "notMatchedBySourcePredicates": "[]"}
		cs.metrics = map[string]string{
			"numSourceRows": n, "numTargetRowsInserted": n, "numTargetRowsUpdated": "0", "numTargetRowsMatchedUpdated": "0",
			"numTargetRowsMatchedDeleted": "0", "numTargetRowsNotMatchedBySourceUpdated": "0", "numTargetRowsNotMatchedBySourceDeleted": "0",
			"numTargetRowsDeleted": "0", "numTargetRowsCopied": "0", "numTargetFilesAdded": strconv.Itoa(w.files), "numTargetFilesRemoved": "0",
			"numTargetChangeFilesAdded": "0", "numTargetBytesAdded": strconv.FormatInt(w.bytes, 10), "numTargetBytesRemoved": "0",
			"numOutputRows": n, "executionTimeMs": "0", "materializeSourceTimeMs": "0", "scanTimeMs": "0", "rewriteTimeMs": "0",
		}
	} else {
		cs.op, cs.params, cs.blind = "COPY INTO", copyParams(), true
		cs.metrics = copyMetrics(w.files, w.bytes, l.Rows, 0)
	}
	return e.addCommitSpec(t, cs)
}

// Trigger makes other writers commit around the statements that match it, as a busy table
// sees: a look-alike commit right after each matching statement that committed, or a burst
// of Zerobus versions right before each matching statement. Exactly one of Lookalike and
// ZerobusVersions is set.
type Trigger struct {
	// Match is a regular expression (case-insensitive) the statement text must match; empty
	// matches every statement.
	Match string
	// Table is the table the writer commits to. For a look-alike, empty means the table the
	// matching statement committed to last; a Zerobus burst needs it.
	Table string
	// Skip and Times count matches as a Fault's do: Times 0 fires once, negative always.
	Skip, Times int
	// Lookalike is committed after each matching statement that committed a version and
	// succeeded; Rows 0 means as many rows as the statement inserted (num_inserted_rows, else
	// its modified rows).
	Lookalike *Lookalike
	// ZerobusVersions Zerobus versions are committed right before each matching statement,
	// by a writer with the options Zerobus.
	ZerobusVersions int
	Zerobus         ZerobusOptions
}

// Validate reports whether the trigger is well formed.
func (tr Trigger) Validate() error {
	if tr.Match != "" {
		if _, err := regexp.Compile("(?is)" + tr.Match); err != nil {
			return fmt.Errorf("fakewarehouse: trigger match: %w", err)
		}
	}
	switch {
	case tr.Lookalike != nil && tr.ZerobusVersions > 0, tr.Lookalike == nil && tr.ZerobusVersions <= 0:
		return errors.New("fakewarehouse: a Trigger needs exactly one of Lookalike and ZerobusVersions")
	case tr.Lookalike != nil:
		return tr.Lookalike.Validate()
	case tr.Table == "":
		return errors.New("fakewarehouse: a Zerobus burst trigger needs a Table")
	}
	return nil
}

// InstalledTrigger is a trigger registered with AddTrigger.
type InstalledTrigger struct {
	tr Trigger
	re *regexp.Regexp

	mu     sync.Mutex
	seen   int
	fired  int
	writer *ZerobusWriter // the burst's writer, made at its first burst
	err    error          // the last failure to commit
}

// Trigger returns the trigger as registered (Times filled in).
func (it *InstalledTrigger) Trigger() Trigger { return it.tr }

// Fired returns how many times the trigger has committed.
func (it *InstalledTrigger) Fired() int {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.fired
}

// Err returns the last error the trigger met while committing (a missing table, a
// constraint its synthetic rows violate), nil if none.
func (it *InstalledTrigger) Err() error {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.err
}

// AddTrigger registers a trigger, or returns why it is not valid.
func (s *Server) AddTrigger(tr Trigger) (*InstalledTrigger, error) {
	if err := tr.Validate(); err != nil {
		return nil, err
	}
	it := &InstalledTrigger{tr: tr}
	if tr.Match != "" {
		it.re = regexp.MustCompile("(?is)" + tr.Match)
	}
	if tr.Times == 0 {
		it.tr.Times = 1
	}
	s.mu.Lock()
	s.triggers = append(s.triggers, it)
	s.mu.Unlock()
	return it, nil
}

// Triggers returns the registered triggers, in the order they fire.
func (s *Server) Triggers() []*InstalledTrigger {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*InstalledTrigger(nil), s.triggers...)
}

// ClearTriggers removes every trigger.
func (s *Server) ClearTriggers() {
	s.mu.Lock()
	s.triggers = nil
	s.mu.Unlock()
}

// take counts a match and reports whether the trigger fires for it.
func (it *InstalledTrigger) take() bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.seen++
	if it.seen > it.tr.Skip && (it.tr.Times < 0 || it.fired < it.tr.Times) {
		it.fired++
		return true
	}
	return false
}

func (it *InstalledTrigger) fail(err error) {
	it.mu.Lock()
	it.err = err
	it.mu.Unlock()
}

func (it *InstalledTrigger) matches(stmt string) bool { return it.re == nil || it.re.MatchString(stmt) }

// beforeStatement commits the Zerobus bursts of the triggers stmt matches.
func (s *Server) beforeStatement(ctx context.Context, stmt string) {
	for _, it := range s.Triggers() {
		if it.tr.ZerobusVersions <= 0 || !it.matches(stmt) || !it.take() {
			continue
		}
		it.mu.Lock()
		w := it.writer
		it.mu.Unlock()
		if w == nil {
			var err error
			if w, err = s.duck.Zerobus(it.tr.Table, it.tr.Zerobus); err != nil {
				it.fail(err)
				continue
			}
			it.mu.Lock()
			it.writer = w
			it.mu.Unlock()
		}
		vs, err := w.FlushN(ctx, it.tr.ZerobusVersions)
		if err != nil {
			it.fail(err)
		}
		s.logf("fakewarehouse: trigger committed %d Zerobus versions to %s before: %s", len(vs), it.tr.Table, oneLine(stmt))
	}
}

// afterStatement commits the look-alikes of the triggers stmt matches, once it succeeded
// with res (its commits and inserted rows).
func (s *Server) afterStatement(ctx context.Context, stmt string, res *Result) {
	if res == nil || len(res.commits) == 0 {
		return
	}
	for _, it := range s.Triggers() {
		if it.tr.Lookalike == nil || !it.matches(stmt) || !it.take() {
			continue
		}
		l := *it.tr.Lookalike
		if l.Rows == 0 {
			l.Rows = insertedRows(res)
		}
		table := it.tr.Table
		if table == "" {
			table = res.commits[len(res.commits)-1].Table
		}
		v, err := s.duck.CommitLookalike(ctx, table, l)
		if err != nil {
			it.fail(err)
			continue
		}
		s.logf("fakewarehouse: trigger committed a look-alike %s (version %d of %s) after: %s", l.Operation, v, table, oneLine(stmt))
	}
}

// insertedRows is the rows a statement inserted: its num_inserted_rows, else its modified rows.
func insertedRows(res *Result) int64 {
	if i := res.ColumnIndex("num_inserted_rows"); i >= 0 && len(res.Rows) == 1 {
		if n, ok := res.Rows[0][i].(int64); ok {
			return n
		}
	}
	if res.ModifiedRows != nil {
		return *res.ModifiedRows
	}
	return 0
}
