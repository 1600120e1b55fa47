package workspace

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/schemadiff"
)

// SchemaChangeSpec breaks a table's schema for its Zerobus producers, or fixes it again, as an
// operator's ALTER TABLE would (POST /api/2.0/fake/schema). Break drops Column (default: the
// table's last column) with ALTER TABLE … DROP COLUMN, first turning column mapping on as
// Databricks requires: the producers' records, which still carry it, no longer fit, and a
// Zerobus writer started with "park" parks them as fallback files, whose schema group then
// blocks the load until the fix. Fix adds the dropped column back with its type (ALTER TABLE …
// ADD COLUMNS): new records commit again, and the parked files load. Both show in the table's
// history, by the workspace user.
type SchemaChangeSpec struct {
	Table  string `json:"table"`
	Action string `json:"action"` // break or fix
	Column string `json:"column,omitempty"`
}

// SchemaScheduleSpec breaks a table's schema BreakAfterMS after it is applied and fixes it
// FixAfterMS after it is applied (after the break), again every EveryMS when set (0: once),
// until the workspace closes or DELETE /api/2.0/fake/schema stops every schedule.
type SchemaScheduleSpec struct {
	Table        string `json:"table"`
	Column       string `json:"column,omitempty"`
	BreakAfterMS int64  `json:"break_after_ms"`
	FixAfterMS   int64  `json:"fix_after_ms"`
	EveryMS      int64  `json:"every_ms,omitempty"`
}

// BrokenTable is a table whose schema a schema change broke.
type BrokenTable struct {
	Table  string    `json:"table"`
	Column string    `json:"column"` // the column dropped
	Type   string    `json:"type"`   // its type, as ADD COLUMNS takes it back
	Since  time.Time `json:"since"`
	// Breaks and Fixes count the changes made to the table so far.
	Breaks int `json:"breaks"`
	Fixes  int `json:"fixes"`
}

// schemaChanges is the workspace's record of broken tables and running schedules.
type schemaChanges struct {
	mu     sync.Mutex
	tables map[string]*BrokenTable // by lower-case name; kept after a fix (counts)
	broken map[string]bool
	errs   []string // what schedules could not change
	stop   chan struct{}
	wg     sync.WaitGroup
}

func (w *Workspace) changes() *schemaChanges {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.schema == nil {
		w.schema = &schemaChanges{tables: map[string]*BrokenTable{}, broken: map[string]bool{}, stop: make(chan struct{})}
	}
	return w.schema
}

// ChangeSchema applies a break or a fix and returns the table's state.
func (w *Workspace) ChangeSchema(ctx context.Context, s SchemaChangeSpec) (BrokenTable, error) {
	switch s.Action {
	case "break":
		return w.BreakSchema(ctx, s.Table, s.Column)
	case "fix":
		return w.FixSchema(ctx, s.Table)
	}
	return BrokenTable{}, fmt.Errorf("workspace: schema action %q is not break or fix", s.Action)
}

// BreakSchema drops column (default the table's last) from table; a table already broken is
// left as it is.
func (w *Workspace) BreakSchema(ctx context.Context, table, column string) (BrokenTable, error) {
	sc := w.changes()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	key := strings.ToLower(table)
	if sc.broken[key] {
		return *sc.tables[key], nil
	}
	info, err := w.tableInfo(table)
	if err != nil {
		return BrokenTable{}, err
	}
	fields := info.Columns.Fields
	if len(fields) < 2 {
		return BrokenTable{}, fmt.Errorf("workspace: %s has one column: it cannot lose one", table)
	}
	col := fields[len(fields)-1]
	if column != "" {
		found := false
		for _, f := range fields {
			if strings.EqualFold(f.Name, column) {
				col, found = f, true
			}
		}
		if !found {
			return BrokenTable{}, fmt.Errorf("workspace: %s has no column %s", table, column)
		}
	}
	if !strings.EqualFold(info.Properties["delta.columnMapping.mode"], "name") {
		if _, err := w.wh.Engine().Exec(ctx, "ALTER TABLE "+table+" SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')"); err != nil {
			return BrokenTable{}, err
		}
	}
	if _, err := w.wh.Engine().Exec(ctx, "ALTER TABLE "+table+" DROP COLUMN "+schemadiff.QuoteIdent(col.Name)); err != nil {
		return BrokenTable{}, err
	}
	bt := sc.tables[key]
	if bt == nil {
		bt = &BrokenTable{Table: table}
		sc.tables[key] = bt
	}
	bt.Column, bt.Type, bt.Since = col.Name, col.Type.SQL(), time.Now().UTC()
	bt.Breaks++
	sc.broken[key] = true
	return *bt, nil
}

// FixSchema adds back the column BreakSchema dropped from table; a table not broken is left
// as it is.
func (w *Workspace) FixSchema(ctx context.Context, table string) (BrokenTable, error) {
	sc := w.changes()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	key := strings.ToLower(table)
	bt := sc.tables[key]
	if bt == nil {
		return BrokenTable{}, fmt.Errorf("workspace: the schema of %s was not broken", table)
	}
	if !sc.broken[key] {
		return *bt, nil
	}
	if _, err := w.wh.Engine().Exec(ctx, fmt.Sprintf("ALTER TABLE %s ADD COLUMNS (%s %s)", table, schemadiff.QuoteIdent(bt.Column), bt.Type)); err != nil {
		return BrokenTable{}, err
	}
	bt.Fixes++
	sc.broken[key] = false
	return *bt, nil
}

// BrokenTables lists the tables schema changes touched, by name, with whether each is broken
// now (Since is zero for a fixed one).
func (w *Workspace) BrokenTables() []map[string]any {
	sc := w.changes()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	var out []map[string]any
	keys := make([]string, 0, len(sc.tables))
	for k := range sc.tables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		bt := *sc.tables[k]
		out = append(out, withFields(bt, map[string]any{"broken": sc.broken[k]}))
	}
	return out
}

// ScheduleSchema starts a schedule of breaks and fixes; every schedule stops when the
// workspace closes or StopSchemaSchedules is called.
func (w *Workspace) ScheduleSchema(s SchemaScheduleSpec) error {
	if err := s.check(); err != nil {
		return err
	}
	if _, err := w.tableInfo(s.Table); err != nil {
		return err
	}
	sc := w.changes()
	sc.mu.Lock()
	stop := sc.stop
	sc.wg.Add(1)
	sc.mu.Unlock()
	go func() {
		defer sc.wg.Done()
		start := time.Now()
		for round := 0; ; round++ {
			at := start.Add(time.Duration(round*int(s.EveryMS)) * time.Millisecond)
			for _, step := range []struct {
				after time.Duration
				do    func() error
			}{
				{time.Duration(s.BreakAfterMS) * time.Millisecond, func() error { _, err := w.BreakSchema(context.Background(), s.Table, s.Column); return err }},
				{time.Duration(s.FixAfterMS) * time.Millisecond, func() error { _, err := w.FixSchema(context.Background(), s.Table); return err }},
			} {
				select {
				case <-stop:
					return
				case <-time.After(time.Until(at.Add(step.after))):
				}
				if err := step.do(); err != nil {
					sc.mu.Lock()
					sc.errs = append(sc.errs, fmt.Sprintf("%s: %v", s.Table, err))
					sc.mu.Unlock()
				}
			}
			if s.EveryMS <= 0 {
				return
			}
		}
	}()
	return nil
}

func (s SchemaScheduleSpec) check() error {
	switch {
	case s.Table == "":
		return errors.New("workspace: a schema schedule needs a table")
	case s.BreakAfterMS < 0 || s.FixAfterMS <= s.BreakAfterMS:
		return errors.New("workspace: a schema schedule fixes after it breaks: 0 <= break_after_ms < fix_after_ms")
	case s.EveryMS != 0 && s.EveryMS <= s.FixAfterMS:
		return errors.New("workspace: a schema schedule repeats after its fix: every_ms > fix_after_ms")
	}
	return nil
}

// StopSchemaSchedules stops every schedule (the tables stay as they are) and waits for them.
func (w *Workspace) StopSchemaSchedules() {
	sc := w.changes()
	sc.mu.Lock()
	close(sc.stop)
	sc.stop = make(chan struct{})
	sc.mu.Unlock()
	sc.wg.Wait()
}

// tableInfo returns what the warehouse knows of table.
func (w *Workspace) tableInfo(table string) (tableInfoT, error) {
	list, err := w.wh.Engine().Tables()
	if err != nil {
		return tableInfoT{}, err
	}
	for _, t := range list {
		if strings.EqualFold(t.Catalog+"."+t.Schema+"."+t.Name, table) {
			return tableInfoT{Columns: t.Columns, Properties: t.Properties}, nil
		}
	}
	return tableInfoT{}, fmt.Errorf("workspace: no table %s", table)
}

type tableInfoT struct {
	Columns    schemadiff.Schema
	Properties map[string]string
}
