package mcpserve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planrunner/runner/internal/server/mcpserve"
)

// rawClient speaks JSON-RPC to a server over the SDK's in-memory
// transport: the SDK's client has no tasks, and drops a tools/call's
// task params.
type rawClient struct {
	t    *testing.T
	conn mcp.Connection
	id   int
	init json.RawMessage // initialize's answer
}

// rawConnect serves a fresh server on dir and initializes a session at
// protocol version 2025-11-25, the one with tasks.
func rawConnect(t *testing.T, dir string) *rawClient {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	srv := mcpserve.New(mcpserve.Options{Dir: dir, Runner: runnerBin, Version: "test"})
	ct, st := mcp.NewInMemoryTransports()
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(sctx, st) }()
	conn, err := ct.Connect(sctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); cancel(); <-done })
	c := &rawClient{t: t, conn: conn}
	c.ok("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`, &c.init)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return c
}

func (c *rawClient) send(text string) {
	c.t.Helper()
	msg, err := jsonrpc.DecodeMessage([]byte(text))
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, msg); err != nil {
		c.t.Fatal(err)
	}
}

// call sends a request and returns its answer (at most a minute: a
// tasks/result waits for the run).
func (c *rawClient) call(method, params string) *jsonrpc.Response {
	c.t.Helper()
	c.id++
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.id, method, params))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		msg, err := c.conn.Read(ctx)
		if err != nil {
			c.t.Fatalf("%s: %v", method, err)
		}
		if r, ok := msg.(*jsonrpc.Response); ok && r.ID.Raw() == int64(c.id) {
			return r
		}
	}
}

// ok calls and decodes the result into out, failing on an error.
func (c *rawClient) ok(method, params string, out any) {
	c.t.Helper()
	r := c.call(method, params)
	if r.Error != nil {
		c.t.Fatalf("%s %s: %v", method, params, r.Error)
	}
	if out != nil {
		if err := json.Unmarshal(r.Result, out); err != nil {
			c.t.Fatalf("%s: decoding %s: %v", method, r.Result, err)
		}
	}
}

// code is the error code a call is answered with (0: none).
func (c *rawClient) code(method, params string) int64 {
	c.t.Helper()
	r := c.call(method, params)
	if r.Error == nil {
		return 0
	}
	var we *jsonrpc.Error
	if e, ok := r.Error.(*jsonrpc.Error); ok {
		we = e
	} else {
		c.t.Fatalf("%s: error %T %v", method, r.Error, r.Error)
	}
	return we.Code
}

// startTask calls start_run on plan as a task.
func (c *rawClient) startTask(plan string) mcpserve.Task {
	c.t.Helper()
	var out struct {
		Task mcpserve.Task `json:"task"`
	}
	c.ok("tools/call", `{"name":"start_run","arguments":{"plan":`+quote(plan)+`},"task":{"ttl":600000}}`, &out)
	if out.Task.TaskID == "" || out.Task.TTL != 600000 || out.Task.PollInterval <= 0 || out.Task.CreatedAt == "" {
		c.t.Fatalf("created task: %+v", out.Task)
	}
	return out.Task
}

func quote(s string) string { data, _ := json.Marshal(s); return string(data) }

// waitTask polls tasks/get until the task's status is want; a terminal
// status that is not fails the test.
func (c *rawClient) waitTask(id, want string) mcpserve.Task {
	c.t.Helper()
	var tk mcpserve.Task
	for range 600 {
		c.ok("tasks/get", `{"taskId":`+quote(id)+`}`, &tk)
		if tk.Status == want {
			return tk
		}
		if tk.Status == "completed" || tk.Status == "failed" || tk.Status == "cancelled" {
			c.t.Fatalf("task %s is %s (%s), want %s", id, tk.Status, tk.StatusMessage, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("task %s is still %s, want %s", id, tk.Status, want)
	return tk
}

// taskResult is tasks/result's answer: start_run's.
type taskResult struct {
	Meta              map[string]map[string]string `json:"_meta"`
	IsError           bool                         `json:"isError"`
	StructuredContent mcpserve.StartOutput         `json:"structuredContent"`
}

func (c *rawClient) runStatus(run string) mcpserve.RunStatus {
	c.t.Helper()
	var res struct {
		StructuredContent mcpserve.RunStatus `json:"structuredContent"`
	}
	c.ok("tools/call", `{"name":"run_status","arguments":{"run":`+quote(run)+`}}`, &res)
	return res.StructuredContent
}

func TestTasksAreDeclared(t *testing.T) {
	c := rawConnect(t, t.TempDir())
	var init struct {
		Capabilities struct {
			Tasks *struct {
				List     *struct{} `json:"list"`
				Cancel   *struct{} `json:"cancel"`
				Requests struct {
					Tools struct {
						Call *struct{} `json:"call"`
					} `json:"tools"`
				} `json:"requests"`
			} `json:"tasks"`
		} `json:"capabilities"`
	}
	if err := json.Unmarshal(c.init, &init); err != nil {
		t.Fatal(err)
	}
	if tk := init.Capabilities.Tasks; tk == nil || tk.List == nil || tk.Cancel == nil || tk.Requests.Tools.Call == nil {
		t.Fatalf("capabilities.tasks: %s", c.init)
	}
	var tools struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	c.ok("tools/list", `{}`, &tools)
	for _, tool := range tools.Tools {
		want := "" // forbidden, by default
		if tool.Name == "start_run" {
			want = "optional"
		}
		got := ""
		if tool.Execution != nil {
			got = tool.Execution.TaskSupport
		}
		if got != want {
			t.Errorf("tool %s: taskSupport %q, want %q", tool.Name, got, want)
		}
	}
}

func TestStartRunAsATask(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "echo.yaml", echoPlan)
	c := rawConnect(t, dir)
	tk := c.startTask("echo.yaml")
	if tk.Status != "working" && tk.Status != "completed" {
		t.Fatalf("a new task is %s", tk.Status)
	}
	c.waitTask(tk.TaskID, "completed")
	var res taskResult
	c.ok("tasks/result", `{"taskId":`+quote(tk.TaskID)+`}`, &res)
	if res.IsError || res.StructuredContent.Started == nil || res.Meta["io.modelcontextprotocol/related-task"]["taskId"] != tk.TaskID {
		t.Fatalf("tasks/result: %+v", res)
	}
	if st := c.runStatus(res.StructuredContent.Started.RunID); st.Status != "succeeded" {
		t.Fatalf("the task's run is %s", st.Status)
	}
}

func TestTaskInputRequiredAnsweredCompleted(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ask.yaml", askPlan)
	c := rawConnect(t, dir)
	tk := c.startTask("ask.yaml")
	got := c.waitTask(tk.TaskID, "input_required")
	if !strings.Contains(got.StatusMessage, "review: Ship it?") || !strings.Contains(got.StatusMessage, "answer_input") {
		t.Fatalf("input_required says %q", got.StatusMessage)
	}
	// The run is found by its task's result only once it ends: its id is
	// the latest run's.
	var ans struct {
		IsError bool `json:"isError"`
	}
	c.ok("tools/call", `{"name":"answer_input","arguments":{"run":"latest","step":"review","answer":{"approve":true},"resume":true}}`, &ans)
	if ans.IsError {
		t.Fatal("answer_input failed")
	}
	c.waitTask(tk.TaskID, "completed")
	var res taskResult
	c.ok("tasks/result", `{"taskId":`+quote(tk.TaskID)+`}`, &res)
	if st := c.runStatus(res.StructuredContent.Started.RunID); st.Status != "succeeded" || len(st.Steps) != 2 {
		t.Fatalf("the task's run: %+v", st)
	}
}

const sleepPlan = `version: 1
name: sleep
steps:
  - {label: nap, type: command, run: "sleep 60"}
`

func TestCancelATaskInterruptsItsRun(t *testing.T) {
	tests := []struct {
		name, plan, waitFor string
	}{
		{"a run that runs", sleepPlan, "working"},
		{"a run that waits for an answer", askPlan, "input_required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "plan.yaml", tt.plan)
			c := rawConnect(t, dir)
			tk := c.startTask("plan.yaml")
			c.waitTask(tk.TaskID, tt.waitFor)
			var cancelled mcpserve.Task
			c.ok("tasks/cancel", `{"taskId":`+quote(tk.TaskID)+`}`, &cancelled)
			if cancelled.Status != "cancelled" {
				t.Fatalf("tasks/cancel: %+v", cancelled)
			}
			c.waitTask(tk.TaskID, "cancelled")
			var res taskResult
			c.ok("tasks/result", `{"taskId":`+quote(tk.TaskID)+`}`, &res)
			if st := c.runStatus(res.StructuredContent.Started.RunID); st.Status != "interrupted" || st.Live {
				t.Fatalf("the cancelled task's run: %+v", st)
			}
			// A task that ended cannot be cancelled again.
			if code := c.code("tasks/cancel", `{"taskId":`+quote(tk.TaskID)+`}`); code != jsonrpc.CodeInvalidParams {
				t.Fatalf("cancelling a cancelled task: code %d", code)
			}
		})
	}
}

func TestTaskErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "echo.yaml", echoPlan)
	c := rawConnect(t, dir)
	tests := []struct {
		name, method, params string
		want                 int64
	}{
		{"get an unknown task", "tasks/get", `{"taskId":"nosuch"}`, jsonrpc.CodeInvalidParams},
		{"the result of an unknown task", "tasks/result", `{"taskId":"nosuch"}`, jsonrpc.CodeInvalidParams},
		{"cancel an unknown task", "tasks/cancel", `{"taskId":"nosuch"}`, jsonrpc.CodeInvalidParams},
		{"get with no task id", "tasks/get", `{}`, jsonrpc.CodeInvalidParams},
		{"list from a cursor never given", "tasks/list", `{"cursor":"nosuch"}`, jsonrpc.CodeInvalidParams},
		{"a tool that cannot be a task", "tools/call", `{"name":"list_runs","arguments":{},"task":{}}`, jsonrpc.CodeMethodNotFound},
		{"a ttl that is not positive", "tools/call", `{"name":"start_run","arguments":{"plan":"echo.yaml"},"task":{"ttl":0}}`, jsonrpc.CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code := c.code(tt.method, tt.params); code != tt.want {
				t.Fatalf("code %d, want %d", code, tt.want)
			}
		})
	}
}

func TestTasksListPages(t *testing.T) {
	defer mcpserve.SetTaskPage(2)()
	dir := t.TempDir()
	writeFile(t, dir, "bad.yaml", badPlan)
	c := rawConnect(t, dir)
	// A plan with problems starts nothing: its task fails at once, with
	// the problems as its result.
	var made []string
	for range 5 {
		tk := c.startTask("bad.yaml")
		if tk.Status != "failed" || !strings.Contains(tk.StatusMessage, "nothing started") {
			t.Fatalf("a task of a bad plan: %+v", tk)
		}
		made = append(made, tk.TaskID)
	}
	var res taskResult
	c.ok("tasks/result", `{"taskId":`+quote(made[0])+`}`, &res)
	if !res.IsError || len(res.StructuredContent.Problems) != 2 {
		t.Fatalf("a bad plan's task result: %+v", res)
	}
	var listed []string
	var pages []int
	cursor := ""
	for range 10 {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + quote(cursor) + `}`
		}
		var page struct {
			Tasks      []mcpserve.Task `json:"tasks"`
			NextCursor string          `json:"nextCursor"`
		}
		c.ok("tasks/list", params, &page)
		pages = append(pages, len(page.Tasks))
		for _, tk := range page.Tasks {
			listed = append(listed, tk.TaskID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if fmt.Sprint(pages) != "[2 2 1]" || strings.Join(listed, ",") != strings.Join(made, ",") {
		t.Fatalf("pages %v listed %v, want [2 2 1] and %v", pages, listed, made)
	}
}
