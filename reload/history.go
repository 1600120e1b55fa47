package reload

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zbrecover/zbrecover/databricks"
	"github.com/zbrecover/zbrecover/sqlstmt"
)

// Commit is one row of DESCRIBE HISTORY, as reload reads it.
type Commit struct {
	Version    int64
	Time       time.Time
	User       string
	Operation  string
	EngineInfo string
	// UserMetadata is the commit's userMetadata: a zbrecover statement's tag when the
	// warehouse took it.
	UserMetadata string
	// BlindAppend is isBlindAppend.
	BlindAppend bool
	// Metrics are operationMetrics and Parameters operationParameters; every value is a
	// string, as Delta writes them.
	Metrics    map[string]string
	Parameters map[string]string
}

// OutputRows returns numOutputRows, and false when the commit does not carry it.
func (c Commit) OutputRows() (int64, bool) { return c.metric("numOutputRows") }

func (c Commit) metric(name string) (int64, bool) {
	v, ok := c.Metrics[name]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil
}

// rowsUnchanged reports whether every named metric is present and 0.
func (c Commit) rowsUnchanged(names ...string) bool {
	for _, n := range names {
		if v, ok := c.metric(n); !ok || v != 0 {
			return false
		}
	}
	return true
}

// keepsRows are the operations that never remove or rewrite a row: loads, schema and
// property changes that keep every value, file maintenance.
var keepsRows = map[string]bool{
	"COPY INTO": true, "CREATE TABLE": true, "ADD COLUMNS": true, "CHANGE COLUMN": true, "CHANGE COLUMNS": true,
	"RENAME COLUMN": true, "SET TBLPROPERTIES": true, "UNSET TBLPROPERTIES": true, "ADD CONSTRAINT": true,
	"DROP CONSTRAINT": true, "OPTIMIZE": true, "VACUUM START": true, "VACUUM END": true, "UPGRADE PROTOCOL": true,
	"SET COLUMN TAGS": true, "UNSET COLUMN TAGS": true, "COMPUTE STATS": true, "ANALYZE": true, "CLUSTER BY": true,
	"ROW TRACKING BACKFILL": true, "DOMAIN METADATA CLEANUP": true, "ENABLE DELETION VECTORS": true,
}

// RemovesRows reports whether the commit may have removed or rewritten rows of the table:
// DELETE, UPDATE, TRUNCATE, RESTORE, a replace or an overwrite, a MERGE that deleted or
// updated rows, a dropped column, and any operation it does not know. Appends (Zerobus
// writes, COPY INTO, an insert-only MERGE) and file maintenance (OPTIMIZE, VACUUM) keep
// every row.
func (c Commit) RemovesRows() bool {
	op := strings.ToUpper(strings.TrimSpace(c.Operation))
	switch {
	case keepsRows[op]:
		return false
	case op == "WRITE" || op == "STREAMING UPDATE" || op == "CREATE TABLE AS SELECT":
		mode := strings.ToLower(strings.Trim(c.Parameters["mode"], `"`))
		return !(mode == "append" || mode == "errorifexists" || mode == "" && c.BlindAppend)
	case op == "MERGE":
		return !c.rowsUnchanged("numTargetRowsDeleted", "numTargetRowsUpdated")
	case op == "DELETE":
		return !c.rowsUnchanged("numDeletedRows")
	case op == "UPDATE":
		return !c.rowsUnchanged("numUpdatedRows")
	}
	return true
}

// ParseHistory reads DESCRIBE HISTORY rows, looking columns up by name (the column set
// differs between runtimes). Values are read tolerantly: numbers as int64, float or string;
// times as time.Time or text; operationMetrics and operationParameters as a JSON object or
// a map.
func ParseHistory(res *databricks.Result) ([]Commit, error) {
	col := map[string]int{}
	for i, c := range res.Columns {
		col[strings.ToLower(c)] = i
	}
	get := func(row []any, name string) any {
		if i, ok := col[strings.ToLower(name)]; ok && i < len(row) {
			return row[i]
		}
		return nil
	}
	if _, ok := col["version"]; !ok {
		return nil, fmt.Errorf("DESCRIBE HISTORY returned no version column (columns %v)", res.Columns)
	}
	out := make([]Commit, 0, len(res.Rows))
	for _, row := range res.Rows {
		v, ok := asInt(get(row, "version"))
		if !ok {
			return nil, fmt.Errorf("DESCRIBE HISTORY: version %v is not a number", get(row, "version"))
		}
		c := Commit{Version: v, User: asString(get(row, "userName")), Operation: asString(get(row, "operation")),
			EngineInfo: asString(get(row, "engineInfo")), Time: asTime(get(row, "timestamp")),
			UserMetadata: asString(get(row, "userMetadata"))}
		c.Metrics = asMetrics(get(row, "operationMetrics"))
		c.Parameters = asMetrics(get(row, "operationParameters"))
		switch b := get(row, "isBlindAppend").(type) {
		case bool:
			c.BlindAppend = b
		case string:
			c.BlindAppend = strings.EqualFold(b, "true")
		}
		out = append(out, c)
	}
	return out, nil
}

// history reads a table's commits for a run, retrying a failed read.
type history struct {
	wh      Warehouse
	table   databricks.TableName
	retries int
	backoff time.Duration
}

// latest returns the table's newest version (-1 when the history shows none). A read that
// keeps failing is an error: a statement is never sent without the version it starts from.
func (h *history) latest(ctx context.Context) (int64, error) {
	var last error
	wait := h.backoff
	for attempt := 0; attempt <= h.retries; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, wait); err != nil {
				return 0, err
			}
			wait *= 2
		}
		res, err := h.wh.QueryAll(ctx, sqlstmt.History(h.table, 1))
		if err == nil {
			var cs []Commit
			if cs, err = ParseHistory(res); err == nil {
				if len(cs) == 0 {
					// No commit to show (Databricks always has version 0; a table created
					// without one): every commit there will be is after -1.
					return -1, nil
				}
				return cs[0].Version, nil
			}
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		last = err
	}
	return 0, fmt.Errorf("read the newest version of %s (DESCRIBE HISTORY, %d tries): %w", h.table, h.retries+1, last)
}

// commits is the table's history after a base version, newest first.
type commits struct {
	List   []Commit
	Latest int64
	// Whole is false when the table's history no longer reaches back to the base (log
	// retention removed older commits): a commit that is not listed may still exist.
	Whole bool
}

// at returns the commit at version v, if listed.
func (cs *commits) at(v int64) (Commit, bool) {
	for _, c := range cs.List {
		if c.Version == v {
			return c, true
		}
	}
	return Commit{}, false
}

// since returns every commit after version base, newest first. It reads as many commits as
// separate base from the newest, however many that is (a table Zerobus writes to commits on
// every flush), and reads again when commits arrived between its two statements.
func (h *history) since(ctx context.Context, base int64) (*commits, error) {
	latest, err := h.latest(ctx)
	if err != nil {
		return nil, err
	}
	for n := latest - base; ; n *= 2 {
		if n <= 0 {
			return &commits{Latest: latest, Whole: true}, nil
		}
		res, err := h.query(ctx, n)
		if err != nil {
			return nil, err
		}
		cs, err := ParseHistory(res)
		if err != nil {
			return nil, err
		}
		if len(cs) == 0 {
			return &commits{Latest: latest}, nil
		}
		latest = max(latest, cs[0].Version)
		oldest := cs[len(cs)-1].Version
		// Complete when the oldest commit read is base+1 or older, or the history has no
		// more to give.
		if oldest <= base+1 || int64(len(cs)) < n {
			out := &commits{Latest: latest, Whole: oldest <= base+1}
			for _, c := range cs {
				if c.Version > base {
					out.List = append(out.List, c)
				}
			}
			return out, nil
		}
	}
}

func (h *history) query(ctx context.Context, n int64) (*databricks.Result, error) {
	var last error
	wait := h.backoff
	for attempt := 0; attempt <= h.retries; attempt++ {
		if attempt > 0 {
			if err := sleep(ctx, wait); err != nil {
				return nil, err
			}
			wait *= 2
		}
		res, err := h.wh.QueryAll(ctx, sqlstmt.History(h.table, n))
		if err == nil {
			return res, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		last = err
	}
	return nil, fmt.Errorf("read the history of %s (DESCRIBE HISTORY, %d tries): %w", h.table, h.retries+1, last)
}

// asInt reads an integer that may arrive as int64, int32, float64, a decimal string or text.
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	case float64:
		if x == float64(int64(x)) {
			return int64(x), true
		}
	case string:
		s := strings.TrimSpace(x)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, true
		}
		if i := strings.IndexByte(s, '.'); i > 0 && strings.Trim(s[i+1:], "0") == "" {
			n, err := strconv.ParseInt(s[:i], 10, 64)
			return n, err == nil
		}
	case []byte:
		return asInt(string(x))
	}
	return 0, false
}

func asString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func asTime(v any) time.Time {
	switch x := v.(type) {
	case time.Time:
		return x.UTC()
	case string:
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
			if t, err := time.Parse(layout, x); err == nil {
				return t.UTC()
			}
		}
	}
	return time.Time{}
}

func asMetrics(v any) map[string]string {
	out := map[string]string{}
	switch x := v.(type) {
	case map[string]string:
		return x
	case map[string]any:
		for k, v := range x {
			out[k] = asString(v)
		}
	case string, []byte:
		var m map[string]any
		if json.Unmarshal([]byte(asString(x)), &m) == nil {
			for k, v := range m {
				switch n := v.(type) {
				case float64:
					out[k] = strconv.FormatInt(int64(n), 10)
				default:
					out[k] = asString(v)
				}
			}
		}
	}
	return out
}

// inserted reads COPY INTO's (or MERGE's) result row: num_inserted_rows, else
// num_affected_rows. ok is false when the result carries neither.
func inserted(res *databricks.Result) (int64, bool) {
	if res == nil || len(res.Rows) == 0 {
		return 0, false
	}
	for _, name := range []string{"num_inserted_rows", "num_affected_rows"} {
		for i, c := range res.Columns {
			if strings.EqualFold(c, name) && i < len(res.Rows[0]) {
				return asInt(res.Rows[0][i])
			}
		}
	}
	return 0, false
}

// taggedCommit is a commit some zbrecover run tagged, or a COPY INTO without a zbrecover tag
// (Run empty, Rows its output rows): a load by hand, or by a run whose warehouse took no tag.
type taggedCommit struct {
	Version   int64
	Time      time.Time
	User      string
	Operation string
	Tag       string
	Run       string
	Rows      int64
	// Kind is "claim" for a run's claim on the table (an empty, tagged insert), "release"
	// for its release, "" for a load.
	Kind string
}

// tagScan is what tagsSince read.
type tagScan struct {
	Tagged []taggedCommit // newest first
	Latest int64
	// Read counts the commits read and Statements the DESCRIBE HISTORY statements sent.
	Read, Statements int
}

// tagsSince reads the table's history, newest first, back past the first commit older than
// since (or as far as it goes), and returns the commits carrying a zbrecover tag. A table
// Zerobus writes to commits on every flush, so the history since a fallback file was parked
// can hold many thousands of commits: it reads a first page, then as many commits as the rate
// of that page says separate the newest from since (with a quarter more, at least twice the
// page), and parses of each commit only its version, time and userMetadata, and the rest of a
// tagged one.
func (h *history) tagsSince(ctx context.Context, since time.Time) (*tagScan, error) {
	scan := &tagScan{Latest: -1}
	for n := int64(1000); ; {
		res, err := h.query(ctx, n)
		if err != nil {
			return nil, err
		}
		scan.Statements++
		col := map[string]int{}
		for i, c := range res.Columns {
			col[strings.ToLower(c)] = i
		}
		vi, ok := col["version"]
		if !ok {
			return nil, fmt.Errorf("DESCRIBE HISTORY returned no version column (columns %v)", res.Columns)
		}
		get := func(row []any, name string) any {
			if i, ok := col[strings.ToLower(name)]; ok && i < len(row) {
				return row[i]
			}
			return nil
		}
		scan.Tagged, scan.Read = scan.Tagged[:0], len(res.Rows)
		var newest, oldest time.Time
		for i, row := range res.Rows {
			v, ok := asInt(row[vi])
			if !ok {
				return nil, fmt.Errorf("DESCRIBE HISTORY: version %v is not a number", row[vi])
			}
			t := asTime(get(row, "timestamp"))
			if i == 0 {
				newest, scan.Latest = t, v
			}
			oldest = t
			tag := asString(get(row, "userMetadata"))
			op := asString(get(row, "operation"))
			if !strings.HasPrefix(tag, "zbrecover:") && !strings.EqualFold(op, "COPY INTO") {
				continue // Zerobus' flushes and everyone else's writes: nothing more to parse
			}
			c := taggedCommit{Version: v, Time: t, User: asString(get(row, "userName")), Operation: op, Tag: tag, Kind: tagKind(tag)}
			if run, ok := tagRun(tag); ok {
				c.Run = run
			} else {
				c.Rows, _ = Commit{Metrics: asMetrics(get(row, "operationMetrics"))}.OutputRows()
			}
			scan.Tagged = append(scan.Tagged, c)
		}
		if int64(len(res.Rows)) < n || len(res.Rows) == 0 || oldest.Before(since) || oldest.IsZero() {
			return scan, nil
		}
		next := 2 * n
		if span := newest.Sub(oldest); span > 0 {
			if est := int64(float64(n) * float64(newest.Sub(since)) / float64(span) * 1.25); est > next {
				next = est
			}
		}
		n = next
	}
}
