package workspace

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// controlPrefix is where the control endpoints are served (with the workspace's token).
const controlPrefix = "/api/2.0/fake/"

// The control endpoints change the workspace's behaviour while it runs, for tests that drive
// a separate process; they take and return JSON (the forms of Control's parts):
//
//	GET    /api/2.0/fake/faults         {"faults": [FaultSpec + "id", "fired", "seen"]}
//	POST   /api/2.0/fake/faults         FaultSpec → {"id": n}
//	DELETE /api/2.0/fake/faults         removes every SQL warehouse fault
//	GET    /api/2.0/fake/api-faults     {"api_faults": [APIFaultSpec + "id", "fired", "seen"]}
//	POST   /api/2.0/fake/api-faults     APIFaultSpec → {"id": n}
//	DELETE /api/2.0/fake/api-faults     removes every API fault
//	GET    /api/2.0/fake/unknowns       the current Unknowns
//	PATCH  /api/2.0/fake/unknowns       a partial Unknowns document → the resulting Unknowns
//	GET    /api/2.0/fake/latency        LatencySpec
//	PUT    /api/2.0/fake/latency        LatencySpec
//	GET    /api/2.0/fake/zerobus        {"writers": [ZerobusInfo]}
//	POST   /api/2.0/fake/zerobus        ZerobusSpec → ZerobusInfo (started)
//	DELETE /api/2.0/fake/zerobus/<id>   stops the writer → ZerobusInfo
//	POST   /api/2.0/fake/lookalike      LookalikeSpec (table required) → {"version": v}
//	GET    /api/2.0/fake/triggers       {"triggers": [TriggerSpec + "id", "fired", "error"]}
//	POST   /api/2.0/fake/triggers       TriggerSpec → {"id": n}
//	DELETE /api/2.0/fake/triggers       removes every trigger
//	GET    /api/2.0/fake/schema         {"tables": [BrokenTable + "broken"], "errors": [what a schedule could not change]}
//	POST   /api/2.0/fake/schema         SchemaChangeSpec (break or fix now) → BrokenTable
//	POST   /api/2.0/fake/schema-schedule SchemaScheduleSpec → {}
//	DELETE /api/2.0/fake/schema         stops every schema schedule (the tables stay as they are)
//	POST   /api/2.0/fake/apply          a whole Control document
//
// A malformed document is HTTP 400 INVALID_PARAMETER_VALUE; ids are positions in the lists.
func (w *Workspace) serveControl(rw http.ResponseWriter, r *http.Request) {
	what, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, controlPrefix), "/")
	bad := func(err error) { writeError(rw, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", err.Error()) }
	decode := func(v any) bool {
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			bad(err)
			return false
		}
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			bad(fmt.Errorf("request body: %w", err))
			return false
		}
		return true
	}
	key := r.Method + " " + what
	if rest != "" && key != "DELETE zerobus" {
		key = "not found"
	}
	switch key {
	case "GET faults":
		list := []map[string]any{}
		for i, f := range w.wh.Faults() {
			list = append(list, withFields(faultSpec(f.Fault()), map[string]any{"id": i + 1, "fired": f.Fired(), "seen": f.Seen()}))
		}
		writeJSON(rw, http.StatusOK, map[string]any{"faults": list})
	case "POST faults":
		var s FaultSpec
		if !decode(&s) {
			return
		}
		f, err := s.Fault()
		if err != nil {
			bad(err)
			return
		}
		inj, err := w.wh.AddFault(f)
		if err != nil {
			bad(err)
			return
		}
		writeJSON(rw, http.StatusOK, map[string]any{"id": position(w.wh.Faults(), inj)})
	case "DELETE faults":
		w.wh.ClearFaults()
		writeJSON(rw, http.StatusOK, map[string]any{})
	case "GET api-faults":
		list := []map[string]any{}
		for i, f := range w.APIFaults() {
			list = append(list, withFields(apiFaultSpec(f.Fault()), map[string]any{"id": i + 1, "fired": f.Fired(), "seen": f.Seen()}))
		}
		writeJSON(rw, http.StatusOK, map[string]any{"api_faults": list})
	case "POST api-faults":
		var s APIFaultSpec
		if !decode(&s) {
			return
		}
		f, err := s.APIFault()
		if err != nil {
			bad(err)
			return
		}
		inj, err := w.InjectAPI(f)
		if err != nil {
			bad(err)
			return
		}
		writeJSON(rw, http.StatusOK, map[string]any{"id": position(w.APIFaults(), inj)})
	case "DELETE api-faults":
		w.ClearAPIFaults()
		writeJSON(rw, http.StatusOK, map[string]any{})
	case "GET unknowns":
		writeJSON(rw, http.StatusOK, w.wh.Unknowns())
	case "PATCH unknowns", "POST unknowns":
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			bad(err)
			return
		}
		u := w.wh.Unknowns()
		if err := u.Patch(b); err != nil {
			bad(err)
			return
		}
		w.wh.SetUnknowns(u)
		writeJSON(rw, http.StatusOK, u)
	case "GET latency":
		l := w.CurrentLatency()
		writeJSON(rw, http.StatusOK, LatencySpec{FilesMS: l.Files.Milliseconds(), UnityCatalogMS: l.UnityCatalog.Milliseconds()})
	case "PUT latency", "POST latency":
		var s LatencySpec
		if !decode(&s) {
			return
		}
		if s.FilesMS < 0 || s.UnityCatalogMS < 0 {
			bad(fmt.Errorf("a latency cannot be negative"))
			return
		}
		w.SetLatency(Latency{Files: time.Duration(s.FilesMS) * time.Millisecond, UnityCatalog: time.Duration(s.UnityCatalogMS) * time.Millisecond})
		writeJSON(rw, http.StatusOK, s)
	case "GET zerobus":
		writeJSON(rw, http.StatusOK, map[string]any{"writers": w.ZerobusWriters()})
	case "POST zerobus":
		var s ZerobusSpec
		if !decode(&s) {
			return
		}
		id, err := w.StartZerobus(s)
		if err != nil {
			bad(err)
			return
		}
		for _, info := range w.ZerobusWriters() {
			if info.ID == id {
				writeJSON(rw, http.StatusOK, info)
			}
		}
	case "DELETE zerobus":
		id, err := strconv.Atoi(rest)
		if err != nil {
			bad(fmt.Errorf("writer id %q is not a number", rest))
			return
		}
		info, err := w.StopZerobus(id)
		if err != nil {
			writeError(rw, http.StatusNotFound, "RESOURCE_DOES_NOT_EXIST", err.Error())
			return
		}
		writeJSON(rw, http.StatusOK, info)
	case "POST lookalike":
		var s LookalikeSpec
		if !decode(&s) {
			return
		}
		if s.Table == "" {
			bad(fmt.Errorf("a look-alike commit needs a table"))
			return
		}
		v, err := w.wh.CommitLookalike(r.Context(), s.Table, s.Lookalike())
		if err != nil {
			bad(err)
			return
		}
		writeJSON(rw, http.StatusOK, map[string]any{"version": v})
	case "GET triggers":
		list := []map[string]any{}
		for i, tr := range w.wh.Triggers() {
			extra := map[string]any{"id": i + 1, "fired": tr.Fired()}
			if err := tr.Err(); err != nil {
				extra["error"] = err.Error()
			}
			list = append(list, withFields(triggerSpec(tr.Trigger()), extra))
		}
		writeJSON(rw, http.StatusOK, map[string]any{"triggers": list})
	case "POST triggers":
		var s TriggerSpec
		if !decode(&s) {
			return
		}
		tr, err := s.Trigger()
		if err != nil {
			bad(err)
			return
		}
		it, err := w.wh.AddTrigger(tr)
		if err != nil {
			bad(err)
			return
		}
		writeJSON(rw, http.StatusOK, map[string]any{"id": position(w.wh.Triggers(), it)})
	case "DELETE triggers":
		w.wh.ClearTriggers()
		writeJSON(rw, http.StatusOK, map[string]any{})
	case "GET schema":
		sc := w.changes()
		sc.mu.Lock()
		errs := append([]string{}, sc.errs...)
		sc.mu.Unlock()
		tables := w.BrokenTables()
		if tables == nil {
			tables = []map[string]any{}
		}
		writeJSON(rw, http.StatusOK, map[string]any{"tables": tables, "errors": errs})
	case "POST schema":
		var s SchemaChangeSpec
		if !decode(&s) {
			return
		}
		bt, err := w.ChangeSchema(r.Context(), s)
		if err != nil {
			bad(err)
			return
		}
		writeJSON(rw, http.StatusOK, bt)
	case "POST schema-schedule":
		var s SchemaScheduleSpec
		if !decode(&s) {
			return
		}
		if err := w.ScheduleSchema(s); err != nil {
			bad(err)
			return
		}
		writeJSON(rw, http.StatusOK, map[string]any{})
	case "DELETE schema":
		w.StopSchemaSchedules()
		writeJSON(rw, http.StatusOK, map[string]any{})
	case "POST apply":
		b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			bad(err)
			return
		}
		c, err := DecodeControl(b)
		if err == nil {
			err = w.Apply(r.Context(), c)
		}
		if err != nil {
			bad(err)
			return
		}
		writeJSON(rw, http.StatusOK, map[string]any{})
	default:
		writeError(rw, http.StatusNotFound, "ENDPOINT_NOT_FOUND", fmt.Sprintf("No API found for '%s %s'", r.Method, r.URL.Path))
	}
}

// withFields renders v (a struct with JSON tags) as an object with extra members added.
func withFields(v any, extra map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	m := map[string]any{}
	_ = json.Unmarshal(b, &m)
	for k, x := range extra {
		m[k] = x
	}
	return m
}

// position returns the 1-based position of x in list (0 when it is no longer there).
func position[T comparable](list []T, x T) int {
	for i, y := range list {
		if y == x {
			return i + 1
		}
	}
	return 0
}
