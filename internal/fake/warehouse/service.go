package warehouse

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zbrecover/zbrecover/internal/fake/warehouse/tcli"
)

// session is a server-side session (one driver connection).
type session struct {
	id      string
	handle  *tcli.TSessionHandle
	state   *Session
	expired bool
}

// operation is one statement's server-side state.
type operation struct {
	s       *Server
	id      string
	handle  *tcli.TOperationHandle
	sess    *session
	stmtIdx int

	mu        sync.Mutex
	state     tcli.TOperationState
	res       *Result
	err       *SQLError
	next      int // next row FetchResults returns
	started   time.Time
	completed time.Time
	cancel    context.CancelFunc
	done      chan struct{}
	commits   []CommitRef // the versions a statement answered with an error committed
}

func (op *operation) cancelRun() {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.cancel != nil {
		op.cancel()
	}
}

func (op *operation) wait() {
	if op.done != nil {
		<-op.done
	}
}

func newGUID() []byte {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return b
}

func formatGUID(b []byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func okStatus() *tcli.TStatus { return &tcli.TStatus{StatusCode: tcli.TStatusCode_SUCCESS_STATUS} }

func invalidHandle(what string) *tcli.TStatus {
	msg := "Invalid " + what
	return &tcli.TStatus{StatusCode: tcli.TStatusCode_INVALID_HANDLE_STATUS, ErrorMessage: &msg}
}

// service implements the TCLIService methods the driver uses.
type service struct{ s *Server }

var _ tcli.TCLIService = (*service)(nil)

func (h *service) OpenSession(ctx context.Context, req *tcli.TOpenSessionReq) (*tcli.TOpenSessionResp, error) {
	guid := newGUID()
	st := &Session{ID: formatGUID(guid), Catalog: "main", Schema: "default", Conf: map[string]string{}}
	if ns := req.GetInitialNamespace(); ns != nil {
		if ns.CatalogName != nil && *ns.CatalogName != "" {
			st.Catalog = strings.ToLower(*ns.CatalogName)
		}
		if ns.SchemaName != nil && *ns.SchemaName != "" {
			st.Schema = strings.ToLower(*ns.SchemaName)
		}
	}
	for k, v := range req.GetConfiguration() {
		st.Conf[k] = v
	}
	ss := &session{id: st.ID, state: st, handle: &tcli.TSessionHandle{SessionId: &tcli.THandleIdentifier{GUID: guid, Secret: newGUID()}}}
	h.s.mu.Lock()
	h.s.sessions[string(guid)] = ss
	h.s.mu.Unlock()
	multi := true
	cat, sch := st.Catalog, st.Schema
	return &tcli.TOpenSessionResp{
		Status:                 okStatus(),
		ServerProtocolVersion:  tcli.TProtocolVersion_SPARK_CLI_SERVICE_PROTOCOL_V8,
		SessionHandle:          ss.handle,
		InitialNamespace:       &tcli.TNamespace{CatalogName: &cat, SchemaName: &sch},
		CanUseMultipleCatalogs: &multi,
	}, nil
}

// lookupSession returns the live session for a handle. An unknown or expired session makes
// the request fail with HTTP 400 and "Invalid SessionHandle", as a warehouse answers.
func (h *service) lookupSession(ctx context.Context, hd *tcli.TSessionHandle) *session {
	var key string
	if hd != nil && hd.SessionId != nil {
		key = string(hd.SessionId.GUID)
	}
	h.s.mu.Lock()
	ss, ok := h.s.sessions[key]
	h.s.mu.Unlock()
	if ok && !ss.expired {
		return ss
	}
	id := "unknown"
	if hd != nil && hd.SessionId != nil && len(hd.SessionId.GUID) == 16 {
		id = formatGUID(hd.SessionId.GUID)
	}
	st := stateFrom(ctx)
	st.status = 400
	st.reason = fmt.Sprintf("BAD_REQUEST: Invalid SessionHandle: Session [%s] is closed.", id)
	return nil
}

func (h *service) CloseSession(ctx context.Context, req *tcli.TCloseSessionReq) (*tcli.TCloseSessionResp, error) {
	ss := h.lookupSession(ctx, req.GetSessionHandle())
	if ss == nil {
		return &tcli.TCloseSessionResp{Status: invalidHandle("SessionHandle")}, nil
	}
	h.s.mu.Lock()
	delete(h.s.sessions, string(ss.handle.SessionId.GUID))
	var running []*operation
	for k, op := range h.s.ops {
		if op.sess == ss {
			running = append(running, op)
			delete(h.s.ops, k)
		}
	}
	h.s.mu.Unlock()
	for _, op := range running {
		op.cancelRun()
	}
	return &tcli.TCloseSessionResp{Status: okStatus()}, nil
}

func (h *service) ExecuteStatement(ctx context.Context, req *tcli.TExecuteStatementReq) (*tcli.TExecuteStatementResp, error) {
	ss := h.lookupSession(ctx, req.GetSessionHandle())
	if ss == nil {
		return &tcli.TExecuteStatementResp{Status: invalidHandle("SessionHandle")}, nil
	}
	text := req.GetStatement()
	if msg := h.s.stoppedMessage(); msg != "" {
		now := time.Now()
		st := Statement{QueryID: formatGUID(newGUID()), SessionID: ss.id, SQL: text, Start: now, End: now, State: "REJECTED", Error: msg}
		h.s.mu.Lock()
		h.s.stmts = append(h.s.stmts, st)
		h.s.mu.Unlock()
		if h.s.opts.OnStatement != nil {
			h.s.opts.OnStatement(st)
		}
		return &tcli.TExecuteStatementResp{Status: &tcli.TStatus{StatusCode: tcli.TStatusCode_ERROR_STATUS, ErrorMessage: &msg}}, nil
	}
	h.s.beforeStatement(context.WithoutCancel(ctx), text)
	snap := h.s.duck.snapshot()
	params := make([]Param, 0, len(req.GetParameters()))
	for _, p := range req.GetParameters() {
		prm := Param{Name: p.GetName(), Type: p.GetType()}
		if v := p.GetValue(); v != nil {
			switch {
			case v.StringValue != nil:
				s := *v.StringValue
				prm.Value = &s
			case v.DoubleValue != nil:
				s := fmt.Sprint(*v.DoubleValue)
				prm.Value = &s
			case v.BooleanValue != nil:
				s := fmt.Sprint(*v.BooleanValue)
				prm.Value = &s
			}
		}
		params = append(params, prm)
	}

	guid := newGUID()
	op := &operation{s: h.s, id: formatGUID(guid), sess: ss, started: time.Now(),
		handle: &tcli.TOperationHandle{OperationId: &tcli.THandleIdentifier{GUID: guid, Secret: newGUID()},
			OperationType: tcli.TOperationType_EXECUTE_STATEMENT, HasResultSet: true}}
	h.s.mu.Lock()
	op.stmtIdx = len(h.s.stmts)
	h.s.stmts = append(h.s.stmts, Statement{QueryID: op.id, SessionID: ss.id, SQL: text, Start: op.started, State: "RUNNING"})
	h.s.mu.Unlock()

	f := h.s.matchFault("ExecuteStatement", text)
	if f != nil {
		h.s.setStatement(op.stmtIdx, func(st *Statement) { st.Fault = (&InjectedFault{f: *f}).describe() })
	}
	switch {
	case f != nil && f.DropRequest:
		stateFrom(ctx).drop = true
		h.s.setStatement(op.stmtIdx, func(st *Statement) { st.State, st.End = "DROPPED", time.Now() })
		return &tcli.TExecuteStatementResp{Status: okStatus()}, nil
	case f != nil && f.HTTPStatus != 0:
		st := stateFrom(ctx)
		st.status, st.retryAfter = f.HTTPStatus, f.RetryAfter
		h.s.setStatement(op.stmtIdx, func(st *Statement) { st.State, st.End = "REJECTED", time.Now() })
		return &tcli.TExecuteStatementResp{Status: okStatus()}, nil
	case f != nil && f.Error != nil:
		op.finish(nil, f.Error)
	case f != nil && f.Delay > 0:
		runCtx, cancel := context.WithCancel(withSnapshot(context.Background(), snap))
		op.state, op.cancel, op.done = tcli.TOperationState_PENDING_STATE, cancel, make(chan struct{})
		h.s.mu.Lock()
		h.s.ops[string(guid)] = op
		h.s.mu.Unlock()
		go func() {
			defer close(op.done)
			defer cancel()
			select {
			case <-runCtx.Done():
				op.finishCanceled()
				return
			case <-time.After(f.Delay):
			}
			op.mu.Lock()
			op.state = tcli.TOperationState_RUNNING_STATE
			op.mu.Unlock()
			res, err := h.s.engine.Execute(runCtx, ss.state, text, params)
			if err == nil {
				h.s.afterStatement(context.WithoutCancel(runCtx), text, res)
			}
			op.finish(res, err)
		}()
		return &tcli.TExecuteStatementResp{Status: okStatus(), OperationHandle: op.handle,
			DirectResults: &tcli.TSparkDirectResults{OperationStatus: op.status()}}, nil
	default:
		// The statement runs to completion even if the client goes away, as on a warehouse.
		res, err := h.s.engine.Execute(withSnapshot(context.WithoutCancel(ctx), snap), ss.state, text, params)
		if err == nil {
			h.s.afterStatement(context.WithoutCancel(ctx), text, res)
		}
		switch {
		case f != nil && f.CommitThenError != nil && err == nil:
			op.commits = res.Commits()
			op.finish(nil, commitThenError(f.CommitThenError, op.commits))
		case f != nil && f.CommitThenBadConn:
			op.finish(res, err)
			h.s.mu.Lock()
			ss.expired = true
			h.s.mu.Unlock()
			st := stateFrom(ctx)
			st.status = 400
			st.reason = fmt.Sprintf("BAD_REQUEST: Invalid SessionHandle: Session [%s] is closed.", ss.id)
			return &tcli.TExecuteStatementResp{Status: invalidHandle("SessionHandle")}, nil
		default:
			op.finish(res, err)
		}
		if f != nil && f.DropResponse {
			stateFrom(ctx).drop = true
		}
	}
	return h.executeResponse(op, req), nil
}

// commitThenError is the error a CommitThenError fault answers after the statement made
// commits: {version} and {table} stand for the last of them.
func commitThenError(se *SQLError, commits []CommitRef) *SQLError {
	version, table := "?", "?"
	if n := len(commits); n > 0 {
		version, table = strconv.FormatInt(commits[n-1].Version, 10), commits[n-1].Table
	}
	c := *se
	c.Message = strings.NewReplacer("{version}", version, "{table}", table).Replace(se.Message)
	return &c
}

// finish records the outcome of a statement.
func (op *operation) finish(res *Result, err error) {
	op.mu.Lock()
	op.completed = time.Now()
	if err != nil {
		var se *SQLError
		if !errors.As(err, &se) {
			se = errInternal(err)
		}
		if op.s.duck.Unknowns().NoSQLState && se.SQLState != "" {
			c := *se
			c.SQLState = ""
			se = &c
		}
		op.state, op.err = tcli.TOperationState_ERROR_STATE, se
	} else {
		if res == nil {
			res = emptyDDLResult()
		}
		op.state, op.res = tcli.TOperationState_FINISHED_STATE, res
	}
	state, se := op.state, op.err
	op.mu.Unlock()
	commits := op.commits
	op.s.setStatement(op.stmtIdx, func(st *Statement) {
		st.End = op.completed
		if state == tcli.TOperationState_ERROR_STATE {
			st.State, st.Error, st.Class, st.SQLState = "ERROR", se.Error(), se.Class, se.SQLState
			st.Commits = commits
		} else {
			st.State = "FINISHED"
			if res != nil {
				st.Commits = res.Commits()
			}
			if res != nil && res.ModifiedRows != nil {
				st.Rows = *res.ModifiedRows
			} else if res != nil {
				st.Rows = int64(len(res.Rows))
			}
		}
	})
	if se != nil {
		op.s.logf("fakewarehouse: %s -> %s", oneLine(op.s.statementSQL(op.stmtIdx)), oneLine(se.Error()))
	} else {
		op.s.logf("fakewarehouse: %s -> ok", oneLine(op.s.statementSQL(op.stmtIdx)))
	}
}

func (op *operation) finishCanceled() {
	op.mu.Lock()
	op.completed = time.Now()
	op.state = tcli.TOperationState_CANCELED_STATE
	op.mu.Unlock()
	op.s.setStatement(op.stmtIdx, func(st *Statement) { st.State, st.End = "CANCELED", op.completed })
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func (s *Server) setStatement(i int, fn func(*Statement)) {
	s.mu.Lock()
	if i < 0 || i >= len(s.stmts) {
		s.mu.Unlock()
		return
	}
	fn(&s.stmts[i])
	st := s.stmts[i]
	s.mu.Unlock()
	if s.opts.OnStatement != nil && st.State != "RUNNING" {
		s.opts.OnStatement(st)
	}
}

func (s *Server) statementSQL(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stmts[i].SQL
}

// status renders the operation's state as a TGetOperationStatusResp.
func (op *operation) status() *tcli.TGetOperationStatusResp {
	op.mu.Lock()
	defer op.mu.Unlock()
	state := op.state
	started := op.started.UnixMilli()
	resp := &tcli.TGetOperationStatusResp{Status: okStatus(), OperationState: &state, OperationStarted: &started}
	switch state {
	case tcli.TOperationState_FINISHED_STATE:
		has := true
		done := op.completed.UnixMilli()
		resp.HasResultSet, resp.OperationCompleted = &has, &done
		if op.res != nil && op.res.ModifiedRows != nil {
			n := *op.res.ModifiedRows
			resp.NumModifiedRows = &n
		}
	case tcli.TOperationState_ERROR_STATE:
		msg, sqlState := op.err.Error(), op.err.SQLState
		code := int32(0)
		resp.ErrorMessage, resp.DisplayMessage, resp.SqlState, resp.ErrorCode = &msg, &msg, &sqlState, &code
	case tcli.TOperationState_CANCELED_STATE:
		msg := "The statement was canceled."
		resp.ErrorMessage, resp.DisplayMessage = &msg, &msg
	}
	return resp
}

// metadata describes the operation's result set.
func (op *operation) metadata() *tcli.TGetResultSetMetadataResp {
	op.mu.Lock()
	defer op.mu.Unlock()
	var cols []Column
	if op.res != nil {
		cols = op.res.Columns
	}
	format := tcli.TSparkRowSetType_COLUMN_BASED_SET
	lz4, staging := false, false
	return &tcli.TGetResultSetMetadataResp{Status: okStatus(), Schema: tableSchema(cols), ResultFormat: &format,
		Lz4Compressed: &lz4, IsStagingOperation: &staging}
}

// page returns the next rows (at most maxRows; 0 or less means all) and whether more remain.
func (op *operation) page(maxRows int64) (*tcli.TRowSet, bool) {
	op.mu.Lock()
	defer op.mu.Unlock()
	if op.res == nil {
		return &tcli.TRowSet{StartRowOffset: 0, Rows: []*tcli.TRow{}, Columns: []*tcli.TColumn{}}, false
	}
	from, to := op.next, len(op.res.Rows)
	if maxRows > 0 && int64(to-from) > maxRows {
		to = from + int(maxRows)
	}
	op.next = to
	return rowSet(op.res, from, to), to < len(op.res.Rows)
}

// executeResponse builds the ExecuteStatement reply. With direct results requested, a
// finished statement is answered in full in this one reply: status, metadata, the first page
// and, when every row fits, closeOperation, so the driver needs no further round trip.
func (h *service) executeResponse(op *operation, req *tcli.TExecuteStatementReq) *tcli.TExecuteStatementResp {
	resp := &tcli.TExecuteStatementResp{Status: okStatus(), OperationHandle: op.handle}
	if req.GetDirectResults == nil {
		h.s.mu.Lock()
		h.s.ops[string(op.handle.OperationId.GUID)] = op
		h.s.mu.Unlock()
		return resp
	}
	dr := &tcli.TSparkDirectResults{OperationStatus: op.status(), ResultSetMetadata: op.metadata()}
	complete := true
	if op.state == tcli.TOperationState_FINISHED_STATE {
		rows, more := op.page(req.GetDirectResults.GetMaxRows())
		dr.ResultSet = &tcli.TFetchResultsResp{Status: okStatus(), HasMoreRows: &more, Results: rows}
		complete = !more
	}
	if complete {
		dr.CloseOperation = &tcli.TCloseOperationResp{Status: okStatus()}
	} else {
		h.s.mu.Lock()
		h.s.ops[string(op.handle.OperationId.GUID)] = op
		h.s.mu.Unlock()
	}
	resp.DirectResults = dr
	return resp
}

func (h *service) lookupOp(hd *tcli.TOperationHandle) *operation {
	if hd == nil || hd.OperationId == nil {
		return nil
	}
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	return h.s.ops[string(hd.OperationId.GUID)]
}

func (h *service) GetOperationStatus(ctx context.Context, req *tcli.TGetOperationStatusReq) (*tcli.TGetOperationStatusResp, error) {
	op := h.lookupOp(req.GetOperationHandle())
	if op == nil {
		return &tcli.TGetOperationStatusResp{Status: invalidHandle("OperationHandle")}, nil
	}
	return op.status(), nil
}

func (h *service) CancelOperation(ctx context.Context, req *tcli.TCancelOperationReq) (*tcli.TCancelOperationResp, error) {
	op := h.lookupOp(req.GetOperationHandle())
	if op == nil {
		return &tcli.TCancelOperationResp{Status: invalidHandle("OperationHandle")}, nil
	}
	op.cancelRun()
	op.wait()
	return &tcli.TCancelOperationResp{Status: okStatus()}, nil
}

func (h *service) CloseOperation(ctx context.Context, req *tcli.TCloseOperationReq) (*tcli.TCloseOperationResp, error) {
	op := h.lookupOp(req.GetOperationHandle())
	if op == nil {
		return &tcli.TCloseOperationResp{Status: invalidHandle("OperationHandle")}, nil
	}
	op.cancelRun()
	h.s.mu.Lock()
	delete(h.s.ops, string(op.handle.OperationId.GUID))
	h.s.mu.Unlock()
	return &tcli.TCloseOperationResp{Status: okStatus()}, nil
}

func (h *service) GetResultSetMetadata(ctx context.Context, req *tcli.TGetResultSetMetadataReq) (*tcli.TGetResultSetMetadataResp, error) {
	op := h.lookupOp(req.GetOperationHandle())
	if op == nil {
		return &tcli.TGetResultSetMetadataResp{Status: invalidHandle("OperationHandle")}, nil
	}
	return op.metadata(), nil
}

func (h *service) FetchResults(ctx context.Context, req *tcli.TFetchResultsReq) (*tcli.TFetchResultsResp, error) {
	op := h.lookupOp(req.GetOperationHandle())
	if op == nil {
		return &tcli.TFetchResultsResp{Status: invalidHandle("OperationHandle")}, nil
	}
	op.mu.Lock()
	state := op.state
	op.mu.Unlock()
	if state != tcli.TOperationState_FINISHED_STATE {
		msg := "The operation has no results in state " + state.String()
		return &tcli.TFetchResultsResp{Status: &tcli.TStatus{StatusCode: tcli.TStatusCode_ERROR_STATUS, ErrorMessage: &msg}}, nil
	}
	rows, more := op.page(req.GetMaxRows())
	resp := &tcli.TFetchResultsResp{Status: okStatus(), HasMoreRows: &more, Results: rows}
	if req.GetIncludeResultSetMetadata() {
		resp.ResultSetMetadata = op.metadata()
	}
	return resp, nil
}
