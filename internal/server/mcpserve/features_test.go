package mcpserve_test

//lint:file-ignore SA1019 MCP logging is deprecated from protocol 2026-07-28, but clients of earlier revisions (and the conformance suite) still set a level and read log messages.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/planrunner/runner/internal/server/mcpserve"
)

// The server declares what it does and nothing more: a client reads the
// capabilities to know what it may ask.
func TestCapabilitiesSayWhatRunnerDoes(t *testing.T) {
	cs := connect(t, t.TempDir(), nil)
	c := cs.InitializeResult().Capabilities
	if c.Tools == nil || c.Tools.ListChanged {
		t.Errorf("tools: %+v, want declared, without listChanged (they are fixed)", c.Tools)
	}
	if c.Resources == nil || !c.Resources.Subscribe || c.Resources.ListChanged {
		t.Errorf("resources: %+v, want subscribe, without listChanged", c.Resources)
	}
	if c.Prompts == nil || c.Prompts.ListChanged {
		t.Errorf("prompts: %+v, want declared, without listChanged", c.Prompts)
	}
	if c.Completions == nil || c.Logging == nil {
		t.Errorf("completions %+v, logging %+v: want both", c.Completions, c.Logging)
	}
	if c.Experimental != nil {
		t.Errorf("experimental: %+v, want none", c.Experimental)
	}
}

// errCode is the JSON-RPC code of a request's error (0: none, or none
// given).
func errCode(err error) int64 {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return we.Code
	}
	return 0
}

func TestCompletions(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"ask.yaml", "plans/b.yml", ".hidden/c.yaml", "node_modules/d.yaml", "notes.txt", "a/b/c/d/e/deep.yaml"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755)
		writeFile(t, dir, f, askPlan)
	}
	cs := connect(t, dir, nil)
	done := finishedRun(t, cs, dir) // writes echo.yaml
	var out mcpserve.StartOutput
	if msg := call(t, cs, "start_run", map[string]any{"plan": "ask.yaml"}, &out); msg != "" {
		t.Fatal(msg)
	}
	waiting := out.Started.RunID
	waitStatus(t, cs, waiting, "waiting")

	prompt := func(name string) *mcp.CompleteReference {
		return &mcp.CompleteReference{Type: "ref/prompt", Name: name}
	}
	tmpl := func(uri string) *mcp.CompleteReference { return &mcp.CompleteReference{Type: "ref/resource", URI: uri} }
	cases := []struct {
		name    string
		ref     *mcp.CompleteReference
		arg     string
		value   string
		context map[string]string
		want    []string
	}{
		{"plan files, hidden directories and node_modules left out", prompt("run_plan"), "plan", "", nil, []string{"ask.yaml", "echo.yaml", "plans/b.yml"}},
		{"plan files by prefix", prompt("run_plan"), "plan", "pl", nil, []string{"plans/b.yml"}},
		{"no plan file", prompt("run_plan"), "plan", "zz", nil, []string{}},
		{"run ids, newest first, and latest", prompt("answer_run"), "run", "", nil, []string{"latest", waiting, done}},
		{"a run id by prefix", tmpl("runner://runs/{id}"), "id", waiting[:len(waiting)-1], nil, []string{waiting}},
		{"a board's run id", tmpl("runner://runs/{id}/board"), "id", "lat", nil, []string{"latest"}},
		{"the inputs a run waits at", prompt("answer_run"), "step", "", map[string]string{"run": waiting}, []string{"review"}},
		{"a run that waits for nothing", prompt("answer_run"), "step", "", map[string]string{"run": done}, []string{}},
		{"no run given", prompt("answer_run"), "step", "", nil, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &mcp.CompleteParams{Ref: c.ref, Argument: mcp.CompleteParamsArgument{Name: c.arg, Value: c.value}}
			if c.context != nil {
				p.Context = &mcp.CompleteContext{Arguments: c.context}
			}
			res, err := cs.Complete(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Completion.Values; !slices.Equal(got, c.want) || res.Completion.Total != len(c.want) {
				t.Errorf("values %q (total %d), want %q", got, res.Completion.Total, c.want)
			}
		})
	}
}

// Asking for what runner does not have is the protocol's error, with its
// code: invalid params for a name it does not know, method not found for
// a method.
func TestErrorsHaveTheProtocolsCodes(t *testing.T) {
	cs := connect(t, t.TempDir(), nil)
	ctx := context.Background()
	complete := func(ref *mcp.CompleteReference, arg string) func() error {
		return func() error {
			_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: "x"}})
			return err
		}
	}
	cases := []struct {
		name string
		do   func() error
		want int64
	}{
		{"completion of a prompt runner does not have", complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, "arg1"), jsonrpc.CodeInvalidParams},
		{"completion of an argument a prompt does not have", complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "run_plan"}, "nosuch"), jsonrpc.CodeInvalidParams},
		{"completion of a template runner does not have", complete(&mcp.CompleteReference{Type: "ref/resource", URI: "test://template/{id}/data"}, "id"), jsonrpc.CodeInvalidParams},
		{"completion of an argument a template does not have", complete(&mcp.CompleteReference{Type: "ref/resource", URI: "runner://runs/{id}"}, "nosuch"), jsonrpc.CodeInvalidParams},
		{"a prompt runner does not have", func() error {
			_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_simple_prompt"})
			return err
		}, jsonrpc.CodeInvalidParams},
		{"a prompt without its required argument", func() error {
			_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "run_plan"})
			return err
		}, jsonrpc.CodeInvalidParams},
		{"a page after a cursor runner never gave", func() error {
			_, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: "nosuch"})
			return err
		}, jsonrpc.CodeInvalidParams},
		{"a method runner does not have", func() error {
			return rawRequest(t, ctx, "nosuch/method", `{}`)
		}, jsonrpc.CodeMethodNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.do(); errCode(err) != c.want {
				t.Errorf("err = %v (code %d), want code %d", err, errCode(err), c.want)
			}
		})
	}
}

func TestPrompts(t *testing.T) {
	cs := connect(t, t.TempDir(), nil)
	ctx := context.Background()
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Prompts {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"answer_run", "run_plan"}) {
		t.Errorf("prompts %q", names)
	}
	cases := []struct {
		name string
		args map[string]string
		want []string
	}{
		{"run_plan", map[string]string{"plan": "deploy.yaml"}, []string{`"deploy.yaml"`, "validate_plan", "start_run", "answer_input"}},
		{"answer_run", map[string]string{"run": "latest"}, []string{`"latest"`, "run_status", "each input", "answer_input"}},
		{"answer_run", map[string]string{"run": "latest", "step": "review"}, []string{`its input "review"`}},
	}
	for _, c := range cases {
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: c.name, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s %v: %v", c.name, c.args, err)
		}
		if len(res.Messages) != 1 || res.Messages[0].Role != "user" {
			t.Fatalf("%s: messages %+v", c.name, res.Messages)
		}
		text := res.Messages[0].Content.(*mcp.TextContent).Text
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s %v: %q does not say %q", c.name, c.args, text, w)
			}
		}
	}
}

// elicitVersion is the newest protocol version in which a server sends
// an elicitation of its own accord.
const elicitVersion = "2025-11-25"

// elicitor is a client that takes elicitations, answering each with
// action (and content), and keeps what it was asked and the log
// messages it was sent.
type elicitor struct {
	action  string
	content map[string]any

	mu     sync.Mutex
	asked  []*mcp.ElicitParams
	logged []string
}

func (e *elicitor) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			e.mu.Lock()
			e.asked = append(e.asked, req.Params)
			e.mu.Unlock()
			return &mcp.ElicitResult{Action: e.action, Content: e.content}, nil
		},
		LoggingMessageHandler: func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			data, _ := json.Marshal(req.Params.Data)
			e.mu.Lock()
			e.logged = append(e.logged, string(req.Params.Level)+" "+string(data))
			e.mu.Unlock()
		},
	}
}

// waitFor waits (bounded) until cond holds of what the client saw.
func (e *elicitor) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		e.mu.Lock()
		ok := cond()
		e.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t.Fatalf("no %s after 60s; asked %d, logged %q", what, len(e.asked), e.logged)
}

func (e *elicitor) saidLog(part string) func() bool {
	return func() bool {
		return slices.ContainsFunc(e.logged, func(l string) bool { return strings.Contains(l, part) })
	}
}

// A run started by a client that takes elicitations asks it its inputs;
// the answer is recorded as answer_input records it, and the run goes on.
func TestInputElicitedAnsweredAndResumed(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ask.yaml", askPlan)
	e := &elicitor{action: "accept", content: map[string]any{"approve": true}}
	cs := connectAt(t, dir, e.options(), elicitVersion)
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	var out mcpserve.StartOutput
	if msg := call(t, cs, "start_run", map[string]any{"plan": "ask.yaml"}, &out); msg != "" {
		t.Fatal(msg)
	}
	id := out.Started.RunID
	// Between the answer and the resume the run waits with no process.
	e.waitFor(t, "log of the resume", e.saidLog(`"run resumed"`))
	st := waitStatus(t, cs, id, "succeeded")
	if n := len(st.Steps); n != 2 || st.Steps[0].Label != "review" || st.Steps[1].Label != "after" {
		t.Fatalf("steps: %+v", st.Steps)
	}
	e.mu.Lock()
	asked := e.asked
	said := map[string]bool{}
	for _, want := range []string{`"run started"`, `"input answered"`} {
		said[want] = e.saidLog(want)()
	}
	logged := e.logged
	e.mu.Unlock()
	if len(asked) != 1 || asked[0].Message != "Ship it?" {
		t.Fatalf("asked %+v, want the input's prompt once", asked)
	}
	schema, _ := json.Marshal(asked[0].RequestedSchema)
	if !strings.Contains(string(schema), `"approve"`) {
		t.Errorf("requested schema %s, want the input's form", schema)
	}
	for want, ok := range said {
		if !ok {
			t.Errorf("no log message %s: %q", want, logged)
		}
	}
	// The answer is the run's, as `runner answer` records it: the same
	// answer again is taken, another is refused.
	var ans mcpserve.AnswerOutput
	if msg := call(t, cs, "answer_input", map[string]any{"run": id, "step": "review", "answer": map[string]any{"approve": true}}, &ans); msg != "" || !ans.Already {
		t.Errorf("the elicited answer again: %q %+v", msg, ans)
	}
	if msg := call(t, cs, "answer_input", map[string]any{"run": id, "step": "review", "answer": map[string]any{"approve": false}}, nil); msg == "" {
		t.Error("a different answer was taken")
	}
}

// A declined elicitation leaves the input waiting for answer_input.
func TestDeclinedElicitationLeavesTheInputWaiting(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ask.yaml", askPlan)
	e := &elicitor{action: "decline"}
	cs := connectAt(t, dir, e.options(), elicitVersion)
	var out mcpserve.StartOutput
	if msg := call(t, cs, "start_run", map[string]any{"plan": "ask.yaml"}, &out); msg != "" {
		t.Fatal(msg)
	}
	id := out.Started.RunID
	e.waitFor(t, "elicitation", func() bool { return len(e.asked) == 1 })
	st := waitStatus(t, cs, id, "waiting")
	if len(st.Waiting) != 1 || st.Waiting[0].Label != "review" {
		t.Fatalf("waiting: %+v", st.Waiting)
	}
	if msg := call(t, cs, "answer_input", map[string]any{"run": id, "step": "review", "answer": map[string]any{"approve": true}, "resume": true}, nil); msg != "" {
		t.Fatal(msg)
	}
	waitStatus(t, cs, id, "succeeded")
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.asked) != 1 {
		t.Errorf("asked %d times, want once", len(e.asked))
	}
}
