package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse"
)

// Control is the JSON document that changes how the workspace behaves: read by `zbrecover
// demo serve --faults FILE` at start and accepted by POST /api/2.0/fake/apply while it runs.
// Every part is optional:
//
//	{
//	  "unknowns":   {"path_access": "allowed", "refuse_user_metadata": true},
//	  "faults":     [{"method": "ExecuteStatement", "match": "(?i)^COPY INTO", "times": 1,
//	                  "action": "commit_then_error"}],
//	  "api_faults": [{"method": "PUT", "path": "^/api/2.0/fs/files/", "percent": 20, "times": -1,
//	                  "action": "http", "http_status": 429, "retry_after": "1"}],
//	  "latency":    {"files_ms": 20, "unity_catalog_ms": 0},
//	  "zerobus":    [{"table": "main.sales.orders", "interval_ms": 1, "rows": 1, "park": true}],
//	  "schema_changes": [{"table": "main.sales.orders", "column": "note",
//	                  "break_after_ms": 2000, "fix_after_ms": 8000, "every_ms": 20000}],
//	  "triggers":   [{"match": "(?i)^COPY INTO", "times": -1, "lookalike": {"operation": "COPY INTO"}},
//	                 {"match": "(?i)^DESCRIBE HISTORY", "table": "main.sales.orders",
//	                  "zerobus_versions": 1000, "times": -1}]
//	}
//
// Unknown member names are errors. The whole document is checked before any of it applies.
type Control struct {
	// Unknowns is a partial Unknowns document (warehouse.Unknowns.Patch).
	Unknowns  json.RawMessage `json:"unknowns,omitempty"`
	Faults    []FaultSpec     `json:"faults,omitempty"`
	APIFaults []APIFaultSpec  `json:"api_faults,omitempty"`
	Latency   *LatencySpec    `json:"latency,omitempty"`
	Zerobus   []ZerobusSpec   `json:"zerobus,omitempty"`
	Triggers  []TriggerSpec   `json:"triggers,omitempty"`
	// SchemaChanges break and fix tables' schemas on a schedule (SchemaScheduleSpec).
	SchemaChanges []SchemaScheduleSpec `json:"schema_changes,omitempty"`
}

// FaultSpec is a SQL warehouse fault (warehouse.Fault) in JSON. Action is one of error,
// http, drop_request, drop_response, delay, commit_then_error and commit_then_bad_conn;
// error takes Error, http takes HTTPStatus (and RetryAfter), delay takes DelayMS, and
// commit_then_error takes Error or, without one, Delta's post-commit hook failure. Times 0
// fires once, a negative Times always; Percent (0–100, 0 every match) fires on a share of
// the matches picked reproducibly from Seed.
type FaultSpec struct {
	Method     string     `json:"method,omitempty"`
	Match      string     `json:"match,omitempty"`
	Skip       int        `json:"skip,omitempty"`
	Times      int        `json:"times,omitempty"`
	Percent    float64    `json:"percent,omitempty"`
	Seed       uint64     `json:"seed,omitempty"`
	Action     string     `json:"action"`
	Error      *ErrorSpec `json:"error,omitempty"`
	HTTPStatus int        `json:"http_status,omitempty"`
	RetryAfter string     `json:"retry_after,omitempty"`
	DelayMS    int64      `json:"delay_ms,omitempty"`
}

// ErrorSpec is a statement error: its class, SQLSTATE and message.
type ErrorSpec struct {
	Class    string `json:"class"`
	SQLState string `json:"sqlstate,omitempty"`
	Message  string `json:"message,omitempty"`
}

// APIFaultSpec is an API fault (APIFault) in JSON. Action is http (HTTPStatus, RetryAfter),
// delay (DelayMS), drop_request or drop_response; Method and Path (a regular expression)
// select the requests.
type APIFaultSpec struct {
	Method     string  `json:"method,omitempty"`
	Path       string  `json:"path,omitempty"`
	Skip       int     `json:"skip,omitempty"`
	Times      int     `json:"times,omitempty"`
	Percent    float64 `json:"percent,omitempty"`
	Seed       uint64  `json:"seed,omitempty"`
	Action     string  `json:"action"`
	HTTPStatus int     `json:"http_status,omitempty"`
	RetryAfter string  `json:"retry_after,omitempty"`
	DelayMS    int64   `json:"delay_ms,omitempty"`
}

// LatencySpec is a Latency in milliseconds.
type LatencySpec struct {
	FilesMS        int64 `json:"files_ms"`
	UnityCatalogMS int64 `json:"unity_catalog_ms"`
}

// ZerobusSpec starts a Zerobus writer on Table committing every IntervalMS milliseconds
// (default 1), Rows rows a version (default 1), as Principal (default the writer's). With
// Park, the writer keeps the table's schema of now as its producers' and parks the records the
// table no longer takes as fallback files (warehouse.ZerobusOptions.Park), as Zerobus does
// after a breaking change.
type ZerobusSpec struct {
	Table      string `json:"table"`
	IntervalMS int64  `json:"interval_ms,omitempty"`
	Rows       int    `json:"rows,omitempty"`
	Principal  string `json:"principal,omitempty"`
	Park       bool   `json:"park,omitempty"`
}

// LookalikeSpec is a look-alike commit (warehouse.Lookalike) in JSON; Table is used by
// POST /api/2.0/fake/lookalike only.
type LookalikeSpec struct {
	Table        string `json:"table,omitempty"`
	Operation    string `json:"operation,omitempty"`
	Rows         int64  `json:"rows,omitempty"`
	UserName     string `json:"user_name,omitempty"`
	UserMetadata string `json:"user_metadata,omitempty"`
}

// TriggerSpec is a trigger (warehouse.Trigger) in JSON: a look-alike after each matching
// statement that committed, or ZerobusVersions Zerobus versions before each matching
// statement (by ZerobusPrincipal, ZerobusRows rows a version).
type TriggerSpec struct {
	Match            string         `json:"match,omitempty"`
	Table            string         `json:"table,omitempty"`
	Skip             int            `json:"skip,omitempty"`
	Times            int            `json:"times,omitempty"`
	Lookalike        *LookalikeSpec `json:"lookalike,omitempty"`
	ZerobusVersions  int            `json:"zerobus_versions,omitempty"`
	ZerobusPrincipal string         `json:"zerobus_principal,omitempty"`
	ZerobusRows      int            `json:"zerobus_rows,omitempty"`
}

// DecodeControl reads a Control document; unknown member names are errors.
func DecodeControl(b []byte) (Control, error) {
	var c Control
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Control{}, fmt.Errorf("workspace: control document: %w", err)
	}
	if dec.More() {
		return Control{}, errors.New("workspace: control document: more than one JSON value")
	}
	return c, nil
}

// Fault converts the spec.
func (s FaultSpec) Fault() (warehouse.Fault, error) {
	f := warehouse.Fault{Method: s.Method, Match: s.Match, Skip: s.Skip, Times: s.Times, Percent: s.Percent, Seed: s.Seed}
	sqlErr := func() *warehouse.SQLError {
		if s.Error == nil {
			return nil
		}
		return &warehouse.SQLError{Class: s.Error.Class, SQLState: s.Error.SQLState, Message: s.Error.Message}
	}
	switch s.Action {
	case "error":
		if f.Error = sqlErr(); f.Error == nil {
			return f, errors.New(`workspace: a fault with action "error" needs "error"`)
		}
	case "http":
		f.HTTPStatus, f.RetryAfter = s.HTTPStatus, s.RetryAfter
	case "drop_request":
		f.DropRequest = true
	case "drop_response":
		f.DropResponse = true
	case "delay":
		f.Delay = time.Duration(s.DelayMS) * time.Millisecond
	case "commit_then_error":
		if f.CommitThenError = sqlErr(); f.CommitThenError == nil {
			f.CommitThenError = warehouse.PostCommitHookFailed()
		}
	case "commit_then_bad_conn":
		f.CommitThenBadConn = true
	default:
		return f, fmt.Errorf("workspace: fault action %q is not one of error, http, drop_request, drop_response, delay, commit_then_error, commit_then_bad_conn", s.Action)
	}
	return f, f.Validate()
}

// faultSpec renders a registered fault in JSON form.
func faultSpec(f warehouse.Fault) FaultSpec {
	s := FaultSpec{Method: f.Method, Match: f.Match, Skip: f.Skip, Times: f.Times, Percent: f.Percent, Seed: f.Seed,
		Action: f.Action(), HTTPStatus: f.HTTPStatus, RetryAfter: f.RetryAfter, DelayMS: f.Delay.Milliseconds()}
	e := f.Error
	if e == nil {
		e = f.CommitThenError
	}
	if e != nil {
		s.Error = &ErrorSpec{Class: e.Class, SQLState: e.SQLState, Message: e.Message}
	}
	return s
}

// APIFault converts the spec.
func (s APIFaultSpec) APIFault() (APIFault, error) {
	f := APIFault{Method: s.Method, Path: s.Path, Skip: s.Skip, Times: s.Times, Percent: s.Percent, Seed: s.Seed}
	switch s.Action {
	case "http":
		f.HTTPStatus, f.RetryAfter = s.HTTPStatus, s.RetryAfter
	case "delay":
		f.Delay = time.Duration(s.DelayMS) * time.Millisecond
	case "drop_request":
		f.DropRequest = true
	case "drop_response":
		f.DropResponse = true
	default:
		return f, fmt.Errorf("workspace: API fault action %q is not one of http, delay, drop_request, drop_response", s.Action)
	}
	return f, f.Validate()
}

func apiFaultSpec(f APIFault) APIFaultSpec {
	return APIFaultSpec{Method: f.Method, Path: f.Path, Skip: f.Skip, Times: f.Times, Percent: f.Percent, Seed: f.Seed,
		Action: f.Action(), HTTPStatus: f.HTTPStatus, RetryAfter: f.RetryAfter, DelayMS: f.Delay.Milliseconds()}
}

// Lookalike converts the spec.
func (s LookalikeSpec) Lookalike() warehouse.Lookalike {
	return warehouse.Lookalike{Operation: s.Operation, Rows: s.Rows, UserName: s.UserName, UserMetadata: s.UserMetadata}
}

// Trigger converts the spec.
func (s TriggerSpec) Trigger() (warehouse.Trigger, error) {
	tr := warehouse.Trigger{Match: s.Match, Table: s.Table, Skip: s.Skip, Times: s.Times, ZerobusVersions: s.ZerobusVersions,
		Zerobus: warehouse.ZerobusOptions{Principal: s.ZerobusPrincipal, Rows: s.ZerobusRows}}
	if s.Lookalike != nil {
		l := s.Lookalike.Lookalike()
		tr.Lookalike = &l
	}
	return tr, tr.Validate()
}

func triggerSpec(tr warehouse.Trigger) TriggerSpec {
	s := TriggerSpec{Match: tr.Match, Table: tr.Table, Skip: tr.Skip, Times: tr.Times, ZerobusVersions: tr.ZerobusVersions,
		ZerobusPrincipal: tr.Zerobus.Principal, ZerobusRows: tr.Zerobus.Rows}
	if l := tr.Lookalike; l != nil {
		s.Lookalike = &LookalikeSpec{Operation: l.Operation, Rows: l.Rows, UserName: l.UserName, UserMetadata: l.UserMetadata}
	}
	return s
}

// Apply applies a control document: the unknowns it names, its faults, API faults and
// triggers (added after the registered ones), its latency, and its Zerobus writers (started).
// Every part is checked first, and nothing applies when one is wrong.
func (w *Workspace) Apply(ctx context.Context, c Control) error {
	unk := w.wh.Unknowns()
	if len(c.Unknowns) > 0 {
		if err := unk.Patch(c.Unknowns); err != nil {
			return err
		}
	}
	faults := make([]warehouse.Fault, len(c.Faults))
	for i, s := range c.Faults {
		f, err := s.Fault()
		if err != nil {
			return fmt.Errorf("faults[%d]: %w", i, err)
		}
		faults[i] = f
	}
	apiFaults := make([]APIFault, len(c.APIFaults))
	for i, s := range c.APIFaults {
		f, err := s.APIFault()
		if err != nil {
			return fmt.Errorf("api_faults[%d]: %w", i, err)
		}
		apiFaults[i] = f
	}
	triggers := make([]warehouse.Trigger, len(c.Triggers))
	for i, s := range c.Triggers {
		tr, err := s.Trigger()
		if err != nil {
			return fmt.Errorf("triggers[%d]: %w", i, err)
		}
		triggers[i] = tr
	}
	for i, sc := range c.SchemaChanges {
		if err := sc.check(); err != nil {
			return fmt.Errorf("schema_changes[%d]: %w", i, err)
		}
		if _, err := w.tableInfo(sc.Table); err != nil {
			return fmt.Errorf("schema_changes[%d]: %w", i, err)
		}
	}
	writers := make([]*warehouse.ZerobusWriter, len(c.Zerobus))
	intervals := make([]time.Duration, len(c.Zerobus))
	for i, s := range c.Zerobus {
		zw, interval, err := w.newZerobus(s)
		if err != nil {
			return fmt.Errorf("zerobus[%d]: %w", i, err)
		}
		writers[i], intervals[i] = zw, interval
	}

	if len(c.Unknowns) > 0 {
		w.wh.SetUnknowns(unk)
	}
	for _, f := range faults {
		if _, err := w.wh.AddFault(f); err != nil {
			return err
		}
	}
	for _, f := range apiFaults {
		if _, err := w.InjectAPI(f); err != nil {
			return err
		}
	}
	for _, tr := range triggers {
		if _, err := w.wh.AddTrigger(tr); err != nil {
			return err
		}
	}
	if c.Latency != nil {
		w.SetLatency(Latency{Files: time.Duration(c.Latency.FilesMS) * time.Millisecond, UnityCatalog: time.Duration(c.Latency.UnityCatalogMS) * time.Millisecond})
	}
	for i, zw := range writers {
		w.startZerobus(c.Zerobus[i], zw, intervals[i])
	}
	for _, sc := range c.SchemaChanges {
		if err := w.ScheduleSchema(sc); err != nil {
			return err
		}
	}
	return nil
}

// ZerobusInfo describes a Zerobus writer the workspace runs.
type ZerobusInfo struct {
	ID         int    `json:"id"`
	Table      string `json:"table"`
	IntervalMS int64  `json:"interval_ms"`
	Versions   int    `json:"versions"`
	Running    bool   `json:"running"`
	Error      string `json:"error,omitempty"`
	// Park is set for a writer that parks what the table refuses; Rows counts the rows it
	// produced (committed or parked), ParkedFiles and ParkedRows those it parked.
	Park        bool  `json:"park,omitempty"`
	Rows        int64 `json:"rows"`
	ParkedFiles int   `json:"parked_files,omitempty"`
	ParkedRows  int64 `json:"parked_rows,omitempty"`
}

type runningZerobus struct {
	spec     ZerobusSpec
	writer   *warehouse.ZerobusWriter
	interval time.Duration
	stopped  bool
	err      error
}

func (w *Workspace) newZerobus(s ZerobusSpec) (*warehouse.ZerobusWriter, time.Duration, error) {
	if s.IntervalMS < 0 {
		return nil, 0, errors.New("workspace: a Zerobus interval cannot be negative")
	}
	interval := time.Duration(s.IntervalMS) * time.Millisecond
	if interval == 0 {
		interval = time.Millisecond
	}
	zw, err := w.wh.Zerobus(s.Table, warehouse.ZerobusOptions{Rows: s.Rows, Principal: s.Principal, Park: s.Park})
	return zw, interval, err
}

func (w *Workspace) startZerobus(s ZerobusSpec, zw *warehouse.ZerobusWriter, interval time.Duration) int {
	zw.Start(interval)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextZerobus++
	if w.zerobus == nil {
		w.zerobus = map[int]*runningZerobus{}
	}
	w.zerobus[w.nextZerobus] = &runningZerobus{spec: s, writer: zw, interval: interval}
	return w.nextZerobus
}

// StartZerobus starts a Zerobus writer on a table, committing every interval (default 1 ms),
// and returns its id for StopZerobus. Close stops every writer still running.
func (w *Workspace) StartZerobus(s ZerobusSpec) (int, error) {
	zw, interval, err := w.newZerobus(s)
	if err != nil {
		return 0, err
	}
	return w.startZerobus(s, zw, interval), nil
}

// StopZerobus stops a writer and returns what it committed; a stopped writer's versions
// stay listed.
func (w *Workspace) StopZerobus(id int) (ZerobusInfo, error) {
	w.mu.Lock()
	rz, ok := w.zerobus[id]
	w.mu.Unlock()
	if !ok {
		return ZerobusInfo{}, fmt.Errorf("workspace: no Zerobus writer %d", id)
	}
	err := rz.writer.Close()
	w.mu.Lock()
	rz.stopped, rz.err = true, err
	w.mu.Unlock()
	return w.zerobusInfo(id, rz), nil
}

// ZerobusWriters lists the writers started, by id.
func (w *Workspace) ZerobusWriters() []ZerobusInfo {
	w.mu.Lock()
	ids := make([]int, 0, len(w.zerobus))
	for id := range w.zerobus {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	sort.Ints(ids)
	out := make([]ZerobusInfo, 0, len(ids))
	for _, id := range ids {
		w.mu.Lock()
		rz := w.zerobus[id]
		w.mu.Unlock()
		out = append(out, w.zerobusInfo(id, rz))
	}
	return out
}

func (w *Workspace) zerobusInfo(id int, rz *runningZerobus) ZerobusInfo {
	w.mu.Lock()
	stopped, err := rz.stopped, rz.err
	w.mu.Unlock()
	info := ZerobusInfo{ID: id, Table: rz.spec.Table, IntervalMS: rz.interval.Milliseconds(), Versions: len(rz.writer.Versions()), Running: !stopped,
		Park: rz.spec.Park, Rows: rz.writer.Rows()}
	info.ParkedFiles, info.ParkedRows = rz.writer.Parked()
	if err != nil {
		info.Error = err.Error()
	}
	return info
}

// stopAllZerobus stops every running writer.
func (w *Workspace) stopAllZerobus() {
	for _, info := range w.ZerobusWriters() {
		if info.Running {
			_, _ = w.StopZerobus(info.ID)
		}
	}
}
