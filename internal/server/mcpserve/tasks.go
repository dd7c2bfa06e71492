package mcpserve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/board/boardlock"
	"github.com/planrunner/runner/internal/liveboard"
	"github.com/planrunner/runner/internal/runs"
)

// MCP tasks (protocol 2025-11-25): a start_run call that carries `task`
// params is answered at once with a task whose id names the run it
// started; tasks/get says how the run stands, tasks/result waits for its
// end, tasks/cancel interrupts it, tasks/list pages through the tasks.
//
// The SDK (v1.8.0) knows nothing of tasks. Its custom methods take
// tasks/*, and a receiving middleware rewrites tools/call, tools/list
// and initialize. But the SDK decodes a tools/call's params into a type
// without `task` before any middleware sees it, so the transport moves
// `task` into the params' _meta first (taskTransport, and Handler over
// HTTP), where the middleware finds it.

// taskMetaKey is the _meta key a tools/call's task params are moved to.
const taskMetaKey = "dev.planrunner.runner/task"

// relatedTaskKey is the _meta key that ties tasks/result's answer to its
// task.
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// Task statuses.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

const (
	// taskTTL is how long a task is kept after its creation when the
	// client asks for no ttl; maxTaskTTL bounds what it asks.
	taskTTL    = time.Hour
	maxTaskTTL = 24 * time.Hour
	// taskPoll is the poll interval the client is told.
	taskPoll = 500 * time.Millisecond
	// cancelWait bounds the wait for a run's process to save the run
	// interrupted after tasks/cancel signalled it.
	cancelWait = 30 * time.Second
)

// taskPage is how many tasks tasks/list gives at once.
var taskPage = 50

// resultWait bounds how long tasks/result waits for a run's end; a
// client asks again after it.
var resultWait = 10 * time.Minute

// task is a run started by a task-augmented start_run.
type task struct {
	id      string
	path    string // the run's blackboard.json; "" when nothing started
	created time.Time
	ttl     time.Duration
	// result is what start_run answered, given back by tasks/result.
	result *mcp.CallToolResult
	// status is the last status seen, message why; a terminal status
	// is kept (a run resumed later is a run of its own to follow).
	status, message string
	updated         time.Time
}

// Task is a task as the protocol shows it.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           int64  `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
}

// tasks are the server's tasks, oldest first. Every client of a server
// sees them all: over stdio there is one, over HTTP all hold one token.
type tasks struct {
	mu    sync.Mutex
	byID  map[string]*task
	order []*task
}

func terminal(status string) bool {
	return status == taskCompleted || status == taskFailed || status == taskCancelled
}

// addTaskMethods registers tasks/* and the middleware that makes a
// task-augmented start_run a task.
func (s *Server) addTaskMethods() {
	s.tasks = &tasks{byID: map[string]*task{}}
	s.mcp.AddReceivingMiddleware(s.taskCalls)
	must(mcp.AddReceivingCustomMethod(s.mcp, "tasks/get", func(ctx context.Context, _ *mcp.ServerSession, p *taskIDParams) (*rawResult, error) {
		t, err := s.taskOf(p)
		if err != nil {
			return nil, err
		}
		return rawOf(s.look(t))
	}))
	must(mcp.AddReceivingCustomMethod(s.mcp, "tasks/result", s.taskResult))
	must(mcp.AddReceivingCustomMethod(s.mcp, "tasks/cancel", s.cancelTask))
	must(mcp.AddReceivingCustomMethod(s.mcp, "tasks/list", s.listTasks))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

type taskIDParams struct {
	mcp.ParamsBase
	TaskID string `json:"taskId"`
}

type listTasksParams struct {
	mcp.ParamsBase
	Cursor string `json:"cursor,omitempty"`
}

// rawResult is a result the SDK has no type for, as its JSON.
type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

func rawOf(v any) (*rawResult, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &rawResult{raw: data}, nil
}

// taskCapability is what the server declares of tasks: start_run (a
// tools/call) may be a task, and tasks can be listed and cancelled.
var taskCapability = map[string]any{
	"list":     map[string]any{},
	"cancel":   map[string]any{},
	"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}},
}

// taskCalls makes a start_run call with task params a task, and says so
// where the SDK's types cannot: the tasks capability in initialize's
// answer, start_run's execution.taskSupport in tools/list's.
func (s *Server) taskCalls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
				if tp, ok := r.Params.Meta[taskMetaKey]; ok {
					delete(r.Params.Meta, taskMetaKey)
					return s.startTask(ctx, next, method, r, tp)
				}
			}
		case "initialize":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			return patched(res, func(m map[string]any) {
				if caps, ok := m["capabilities"].(map[string]any); ok {
					caps["tasks"] = taskCapability
				}
			})
		case "tools/list":
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			return patched(res, func(m map[string]any) {
				tools, _ := m["tools"].([]any)
				for _, t := range tools {
					if tm, ok := t.(map[string]any); ok && tm["name"] == "start_run" {
						tm["execution"] = map[string]any{"taskSupport": "optional"}
					}
				}
			})
		}
		return next(ctx, method, req)
	}
}

// patched is res as JSON, changed by f.
func patched(res mcp.Result, f func(map[string]any)) (mcp.Result, error) {
	data, err := json.Marshal(res)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	f(m)
	return rawOf(m)
}

// startTask runs start_run and answers with the task of the run it
// started (a plan with problems is a task failed at once, its problems
// its result).
func (s *Server) startTask(ctx context.Context, next mcp.MethodHandler, method string, r *mcp.CallToolRequest, params any) (mcp.Result, error) {
	if r.Params.Name != "start_run" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("tool %q cannot run as a task: only start_run can", r.Params.Name)}
	}
	var tp struct {
		TTL *float64 `json:"ttl"`
	}
	if data, err := json.Marshal(params); err != nil || json.Unmarshal(data, &tp) != nil {
		return nil, invalidParams("task: want an object with an optional ttl (milliseconds)")
	}
	ttl := taskTTL
	if tp.TTL != nil {
		if *tp.TTL <= 0 {
			return nil, invalidParams("task.ttl %v: want a positive number of milliseconds", *tp.TTL)
		}
		ttl = min(time.Duration(*tp.TTL)*time.Millisecond, maxTaskTTL)
	}
	res, err := next(ctx, method, r)
	if err != nil {
		return res, err
	}
	ctr, ok := res.(*mcp.CallToolResult)
	if !ok {
		return nil, fmt.Errorf("start_run answered a %T", res)
	}
	now := time.Now()
	t := &task{id: newTaskID(), created: now, updated: now, ttl: ttl, result: ctr, status: taskWorking}
	var out StartOutput
	if data, err := json.Marshal(ctr.StructuredContent); err == nil {
		json.Unmarshal(data, &out)
	}
	switch {
	case ctr.IsError || out.Started == nil:
		t.status, t.message = taskFailed, "nothing started: "+toolText(ctr)
	default:
		t.path = out.Started.Blackboard
	}
	s.tasks.mu.Lock()
	s.tasks.expire(now)
	s.tasks.byID[t.id] = t
	s.tasks.order = append(s.tasks.order, t)
	s.tasks.mu.Unlock()
	return rawOf(map[string]any{"task": s.look(t)})
}

func newTaskID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// toolText is a tool result's text content.
func toolText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, strings.TrimSpace(tc.Text))
		}
	}
	return strings.Join(parts, "\n")
}

// expire drops the tasks past their ttl; tasks.mu is held.
func (ts *tasks) expire(now time.Time) {
	kept := ts.order[:0]
	for _, t := range ts.order {
		if now.Sub(t.created) > t.ttl {
			delete(ts.byID, t.id)
			continue
		}
		kept = append(kept, t)
	}
	ts.order = kept
}

// taskOf is the task p names; an unknown id is invalid params.
func (s *Server) taskOf(p *taskIDParams) (*task, error) {
	if p == nil || p.TaskID == "" {
		return nil, invalidParams("taskId: give the id of a task")
	}
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	s.tasks.expire(time.Now())
	t, ok := s.tasks.byID[p.TaskID]
	if !ok {
		return nil, invalidParams("task %q: no such task (or its ttl has passed)", p.TaskID)
	}
	return t, nil
}

// look brings t's status up to date with its run's and shows it.
func (s *Server) look(t *task) Task {
	s.tasks.mu.Lock()
	done := terminal(t.status)
	s.tasks.mu.Unlock()
	if !done {
		status, msg := s.runTaskStatus(t.path)
		s.tasks.mu.Lock()
		if !terminal(t.status) && (status != t.status || msg != t.message) {
			t.status, t.message, t.updated = status, msg, time.Now()
		}
		s.tasks.mu.Unlock()
	}
	s.tasks.mu.Lock()
	defer s.tasks.mu.Unlock()
	return Task{TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: t.created.UTC().Format(timeFormat), LastUpdatedAt: t.updated.UTC().Format(timeFormat),
		TTL: t.ttl.Milliseconds(), PollInterval: taskPoll.Milliseconds()}
}

// runTaskStatus is the task status of the run at path: running is
// working, waiting for an answer input_required (the message says what
// it asks), succeeded completed, failed failed, interrupted cancelled.
func (s *Server) runTaskStatus(path string) (status, msg string) {
	sum := runs.SummaryOf(path, s.o.Dir)
	if sum.Error != "" {
		return taskFailed, sum.Error
	}
	switch sum.Status {
	case board.StatusSucceeded, board.StatusFailed, board.StatusInterrupted:
		if sum.Live {
			// Its process saves the end and lets go of the run a moment
			// after: the task ends once the run is read as it stays.
			return taskWorking, "the run is ending"
		}
	}
	switch sum.Status {
	case board.StatusSucceeded:
		return taskCompleted, "the run succeeded"
	case board.StatusFailed:
		return taskFailed, "the run failed"
	case board.StatusInterrupted:
		return taskCancelled, "the run was interrupted"
	case board.StatusWaiting:
		var qs []string
		_ = s.onBoard(path, true, func(a liveboard.Access) error {
			b, err := a.Board()
			if err != nil {
				return err
			}
			for _, w := range b.Run().Waiting {
				qs = append(qs, fmt.Sprintf("%s: %s", w.Label, w.Prompt))
			}
			return nil
		})
		if len(qs) == 0 {
			return taskWorking, "the run is running"
		}
		return taskInputRequired, "the run waits for an answer (answer_input): " + strings.Join(qs, "; ")
	}
	return taskWorking, "the run is running"
}

// taskResult waits (at most resultWait) for the task's run to end and
// answers what start_run answered, tied to the task.
func (s *Server) taskResult(ctx context.Context, _ *mcp.ServerSession, p *taskIDParams) (*mcp.CallToolResult, error) {
	t, err := s.taskOf(p)
	if err != nil {
		return nil, err
	}
	deadline := time.NewTimer(resultWait)
	defer deadline.Stop()
	tick := time.NewTicker(watchEvery)
	defer tick.Stop()
	for {
		if st := s.look(t); terminal(st.Status) {
			res := *t.result
			meta := map[string]any{}
			for k, v := range res.Meta {
				meta[k] = v
			}
			meta[relatedTaskKey] = map[string]any{"taskId": t.id}
			res.Meta = meta
			return &res, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline.C:
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %s: the run has not ended after %s; ask tasks/result again", t.id, resultWait)}
		case <-tick.C:
		}
	}
}

// cancelTask interrupts the task's run: a process running it is sent
// SIGTERM (as Ctrl-C, it saves the run interrupted) and waited for; a run
// that stopped to wait for an answer is saved interrupted at once.
func (s *Server) cancelTask(ctx context.Context, _ *mcp.ServerSession, p *taskIDParams) (*rawResult, error) {
	t, err := s.taskOf(p)
	if err != nil {
		return nil, err
	}
	if st := s.look(t); terminal(st.Status) {
		return nil, invalidParams("task %s is %s already", t.id, st.Status)
	}
	if err := s.interrupt(ctx, t.path); err != nil {
		return nil, err
	}
	s.tasks.mu.Lock()
	t.status, t.message, t.updated = taskCancelled, "cancelled: the run was interrupted", time.Now()
	s.tasks.mu.Unlock()
	s.o.Log.Info().Str("task", t.id).Str("blackboard", t.path).Msg("task cancelled")
	return rawOf(s.look(t))
}

// interrupt stops the run at path and leaves it saved interrupted.
func (s *Server) interrupt(ctx context.Context, path string) error {
	deadline := time.Now().Add(cancelWait)
	signalled := 0
	for {
		sum := runs.SummaryOf(path, s.o.Dir)
		switch {
		case sum.Error != "":
			return fmt.Errorf("reading the run: %s", sum.Error)
		case sum.Status == board.StatusSucceeded || sum.Status == board.StatusFailed || sum.Status == board.StatusInterrupted:
			if !sum.Live {
				return nil
			}
		case !sum.Live && sum.Status == board.StatusWaiting:
			return s.onBoard(path, false, func(a liveboard.Access) error {
				b, err := a.Board()
				if err != nil {
					return err
				}
				return b.UpdateRun(func(r *board.Run) {
					r.Status = board.StatusInterrupted
					r.Error = "cancelled by its MCP task"
				})
			})
		case sum.Live:
			if o, err := boardlock.ReadOwner(path); err == nil && o.PID > 0 && o.PID != signalled {
				if err := stopProcess(o.PID); err != nil {
					return fmt.Errorf("stopping the run's process %d: %w", o.PID, err)
				}
				signalled = o.PID
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the run has not stopped %s after it was told to", cancelWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(watchEvery):
		}
	}
}

// listTasks pages through the tasks, oldest first; the cursor is the id
// of the last task of the page before.
func (s *Server) listTasks(ctx context.Context, _ *mcp.ServerSession, p *listTasksParams) (*rawResult, error) {
	s.tasks.mu.Lock()
	s.tasks.expire(time.Now())
	all := append([]*task(nil), s.tasks.order...)
	s.tasks.mu.Unlock()
	from := 0
	if p != nil && p.Cursor != "" {
		from = -1
		for i, t := range all {
			if t.id == p.Cursor {
				from = i + 1
			}
		}
		if from < 0 {
			return nil, invalidParams("cursor %q: not a cursor tasks/list gave", p.Cursor)
		}
	}
	page := all[from:min(from+taskPage, len(all))]
	out := struct {
		Tasks      []Task `json:"tasks"`
		NextCursor string `json:"nextCursor,omitempty"`
	}{Tasks: make([]Task, 0, len(page))}
	for _, t := range page {
		out.Tasks = append(out.Tasks, s.look(t))
	}
	if from+taskPage < len(all) {
		out.NextCursor = page[len(page)-1].id
	}
	return rawOf(out)
}

// moveTaskParams moves a tools/call's `task` params into its _meta
// (taskMetaKey), where the SDK keeps them for the middleware; other
// params come back as they were, and false.
func moveTaskParams(params json.RawMessage) (json.RawMessage, bool) {
	if len(params) == 0 || !strings.Contains(string(params), `"task"`) {
		return params, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return params, false
	}
	tp, ok := m["task"]
	if !ok {
		return params, false
	}
	delete(m, "task")
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return params, false
	}
	meta[taskMetaKey] = tp
	data, err := json.Marshal(meta)
	if err != nil {
		return params, false
	}
	m["_meta"] = data
	out, err := json.Marshal(m)
	if err != nil {
		return params, false
	}
	return out, true
}

// taskTransport is a transport whose tools/call requests have their task
// params moved where the middleware finds them.
type taskTransport struct{ mcp.Transport }

func (t taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return taskConn{c}, nil
}

type taskConn struct{ mcp.Connection }

func (c taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Request); ok && err == nil && r.Method == "tools/call" {
		r.Params, _ = moveTaskParams(r.Params)
	}
	return msg, err
}
