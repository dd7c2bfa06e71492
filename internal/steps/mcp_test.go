package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// toolTurn is one scripted model answer: tool calls (name, JSON
// arguments) or, when calls is empty, a final text.
type toolTurn struct {
	calls [][2]string
	text  string
}

// wireFake is a model API that speaks the real tool-calling wire format
// of one provider (OpenAI Chat Completions or Anthropic Messages) and
// answers with the scripted turns in order, keeping each request body.
type wireFake struct {
	srv      *httptest.Server
	provider string
	mu       sync.Mutex
	turns    []toolTurn
	bodies   []map[string]any
}

func newWireFake(t *testing.T, provider string, turns ...toolTurn) *wireFake {
	f := &wireFake{provider: provider, turns: turns}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *wireFake) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bodies = append(f.bodies, body)
	w.Header().Set("Content-Type", "application/json")
	if len(f.turns) == 0 {
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"no more","type":"server_error"}}`)
		return
	}
	turn := f.turns[0]
	f.turns = f.turns[1:]
	n := len(f.bodies)
	if f.provider == "anthropic" {
		var blocks []map[string]any
		stop := "end_turn"
		if turn.text != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": turn.text})
		}
		for i, c := range turn.calls {
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", n, i), "name": c[0], "input": json.RawMessage(c[1])})
			stop = "tool_use"
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
			"content": blocks, "stop_reason": stop, "usage": map[string]int{"input_tokens": 50, "output_tokens": 10}})
		return
	}
	msg := map[string]any{"role": "assistant", "content": turn.text}
	finish := "stop"
	if len(turn.calls) > 0 {
		var calls []map[string]any
		for i, c := range turn.calls {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
				"function": map[string]any{"name": c[0], "arguments": c[1]}})
		}
		msg["content"], msg["tool_calls"], finish = nil, calls, "tool_calls"
	}
	json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]int{"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}})
}

// requestText is the i-th request the fake received, as JSON text.
func (f *wireFake) requestText(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i >= len(f.bodies) {
		return ""
	}
	b, _ := json.Marshal(f.bodies[i])
	return string(b)
}

// toolServer is an in-process MCP server (the Go SDK's) over streamable
// HTTP, with tools for the edge cases: echo (a required string), fail
// (a tool that reports failure), whoami (answers with the header the plan
// sent, a secret) and hidden (which no pattern allows).
type toolServer struct {
	url   string
	calls atomic.Int32
	inits atomic.Int32 // sessions started
	echo  string       // what echo prefixes its answer with
}

func newToolServer(t *testing.T) *toolServer {
	ts := &toolServer{echo: "echo: "}
	s := mcp.NewServer(&mcp.Implementation{Name: "edge", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) { ts.inits.Add(1) }})
	type echoIn struct {
		Text string `json:"text" jsonschema:"what to echo"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes text."}, func(ctx context.Context, req *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		ts.calls.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: ts.echo + in.Text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails."}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		ts.calls.Add(1)
		return nil, nil, errors.New("the disk is on fire")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Says who called."}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		ts.calls.Add(1)
		tok := req.Extra.Header.Get("Authorization")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are " + tok}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hidden", Description: "Not for the agent."}, func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
		ts.calls.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "secret stuff"}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ts.url = srv.URL
	return ts
}

func mcpPlan(provider, base, url, tools string) string {
	if provider == "openai" {
		base += "/v1"
	}
	return `
version: 1
secrets: [EDGE_TOKEN]
agents:
  coder:
    provider: ` + provider + `
    model: test-model
    base_url: "` + base + `"
    mcp:
      - {name: edge, url: "` + url + `", headers: {Authorization: "Bearer ${{ secrets.EDGE_TOKEN }}"}}
    tools: [` + tools + `]
steps:
  - {label: ask, type: llm, agent: coder, prompt: "Use the tools."}
`
}

const edgeToken = "tok-0123456789abcdef"

func mcpAgents(t *testing.T, src string, opt agents.Options) *agents.Set {
	t.Helper()
	opt.Getenv = func(k string) string {
		return map[string]string{"OPENAI_API_KEY": "sk-step-test", "ANTHROPIC_API_KEY": "sk-ant-test", "EDGE_TOKEN": edgeToken}[k]
	}
	set := llmAgents(t, src, opt)
	t.Cleanup(func() { set.Close() })
	return set
}

// TestMCPToolsThroughBothProviders runs an llm step whose agent uses an
// MCP server's tools, through each provider's real tool-calling wire
// format: the model sees only the allowed tools, under their input
// schemas; a call's result (or the tool's failure) is fed back; arguments
// that do not match the schema never reach the server; a secret the
// server answers with is masked in what the model and the board see; and
// the run replays with the server and the model gone.
func TestMCPToolsThroughBothProviders(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			ts := newToolServer(t)
			f := newWireFake(t, provider,
				toolTurn{calls: [][2]string{{"edge__echo", `{"text":"hi"}`}, {"edge__echo", `{"txt":"no"}`}, {"edge__fail", `{}`}}},
				toolTurn{calls: [][2]string{{"edge__whoami", `{}`}}},
				toolTurn{text: "done"})
			src := mcpPlan(provider, f.srv.URL, ts.url, "edge.echo, edge.fail, edge.whoami")
			b, err := llmRunPlan(t, src, mcpAgents(t, src, agents.Options{Mask: nil}))
			if err != nil {
				t.Fatal(err)
			}
			if out := llmSaved(t, b, "ask")["output"]; out != "done" {
				t.Fatalf("output = %v", out)
			}
			first := f.requestText(0)
			for _, want := range []string{"edge__echo", "edge__fail", "edge__whoami", `"text"`} {
				if !strings.Contains(first, want) {
					t.Errorf("the model was not offered %s: %s", want, first)
				}
			}
			if strings.Contains(first, "edge__hidden") {
				t.Errorf("the model was offered a tool no pattern allows: %s", first)
			}
			second := f.requestText(1)
			for _, want := range []string{"echo: hi", "the arguments do not match the input schema of edge__echo", "the disk is on fire"} {
				if !strings.Contains(second, want) {
					t.Errorf("the second request lacks %q: %s", want, second)
				}
			}
			if n := ts.calls.Load(); n != 3 { // echo, fail, whoami: the bad echo never reached the server
				t.Errorf("the server got %d calls, want 3", n)
			}
			third := f.requestText(2)
			if !strings.Contains(third, "you are Bearer ***") || strings.Contains(third, edgeToken) {
				t.Errorf("the secret the server answered with was not masked for the model: %s", third)
			}
			all := llmBoardString(t, b)
			if strings.Contains(all, edgeToken) {
				t.Error("the secret reached the board")
			}
			kinds := map[string]int{}
			for _, r := range b.Recordings() {
				kinds[r.Kind]++
			}
			if kinds[agents.KindMCP] != 4 || kinds[agents.KindLLM] != 3 { // one list, three calls
				t.Errorf("recordings by kind = %v", kinds)
			}

			// Offline replay: the model and the MCP server are gone.
			f.srv.Close()
			replay := func(src string, recs []board.Recording) (*board.Board, error) {
				set := llmAgents(t, src, agents.Options{Replay: agents.FromRecordings(recs),
					Getenv: func(string) string { return "" }, HTTPClient: &http.Client{Transport: llmNoNetwork{t}}})
				defer set.Close()
				return llmRunPlan(t, src, set)
			}
			ts.echo = "ECHO "
			rb, err := replay(src, b.Recordings())
			if err != nil {
				t.Fatal(err)
			}
			if out := llmSaved(t, rb, "ask")["output"]; out != "done" {
				t.Errorf("replayed output = %v", out)
			}
			if n := ts.calls.Load(); n != 3 {
				t.Errorf("the replay called the server (%d calls)", n)
			}
			// A changed tool list (another pattern) diverges at the model
			// call that offers it, with both requests to compare.
			_, err = replay(mcpPlan(provider, f.srv.URL, ts.url, "edge.echo"), b.Recordings())
			var d *agents.Divergence
			if !errors.As(err, &d) || d.Call != 1 || !strings.Contains(string(d.Recorded), "edge__whoami") || strings.Contains(string(d.Now), "edge__whoami") {
				t.Errorf("changed tools: err = %v", err)
			}
			// A recording without its MCP exchanges diverges at the first
			// one, saying which.
			var llmOnly []board.Recording
			for _, r := range b.Recordings() {
				if r.Kind == agents.KindLLM {
					llmOnly = append(llmOnly, r)
				}
			}
			_, err = replay(src, llmOnly)
			if !errors.As(err, &d) || !strings.Contains(err.Error(), "makes a tools/list of MCP server edge (MCP exchange 1), which the recording does not have") {
				t.Errorf("no MCP recordings: err = %v", err)
			}
			// A changed tool result diverges: the model request that
			// carries it differs from the recorded one.
			changed := append([]board.Recording(nil), b.Recordings()...)
			for i, r := range changed {
				if r.Kind == agents.KindMCP && strings.Contains(string(r.Response), "echo: hi") {
					changed[i].Response = json.RawMessage(strings.Replace(string(r.Response), "echo: hi", "echo: HI", 1))
				}
			}
			_, err = replay(src, changed)
			if !errors.As(err, &d) || d.Call != 2 || !strings.Contains(string(d.Recorded), "echo: hi") || !strings.Contains(string(d.Now), "echo: HI") {
				t.Errorf("changed result: err = %v", err)
			}
		})
	}
}

// TestMCPToolLimits: max_tool_calls stops a model that asks for more calls
// than the step allows, before any of them runs.
func TestMCPToolLimits(t *testing.T) {
	ts := newToolServer(t)
	f := newWireFake(t, "openai",
		toolTurn{calls: [][2]string{{"edge__echo", `{"text":"a"}`}, {"edge__echo", `{"text":"b"}`}}},
		toolTurn{calls: [][2]string{{"edge__echo", `{"text":"c"}`}, {"edge__echo", `{"text":"d"}`}}},
		toolTurn{text: "done"})
	src := strings.Replace(mcpPlan("openai", f.srv.URL, ts.url, "edge.*"), `prompt: "Use the tools."`, `prompt: "Use the tools.", max_tool_calls: 3`, 1)
	_, err := llmRunPlan(t, src, mcpAgents(t, src, agents.Options{}))
	if err == nil || !strings.Contains(err.Error(), "agent coder asks for 2 more tool calls after 2: more than max_tool_calls (3) allows") {
		t.Fatalf("err = %v", err)
	}
	if n := ts.calls.Load(); n != 2 {
		t.Errorf("the server got %d calls, want 2", n)
	}
}

// TestMCPPlanErrors: what an agent's mcp and tools may not say, each with
// a clear error at its line.
func TestMCPPlanErrors(t *testing.T) {
	base := `
version: 1
secrets: [TOK]
agents:
  coder:
    provider: script
    responses: [ok]
%s
steps:
  - {label: ask, type: llm, agent: coder, prompt: hi}
`
	for _, tt := range []struct{ name, agent, want string }{
		{"no tools", `    mcp: [{name: fs, command: [srv]}]`, "agent coder lists mcp servers but no tools: an agent may use only the tools it names; add tools: [fs.*]"},
		{"unknown server", "    mcp: [{name: fs, command: [srv]}]\n    tools: [fss.read]", `tools: "fss.read" names server "fss", which is not one of the agent's mcp servers (fs)`},
		{"no server", "    tools: [fs.read]", `names server "fs", but the agent has no mcp servers`},
		{"not server.tool", "    mcp: [{name: fs, command: [srv]}]\n    tools: [fs.]", `tools: "fs." must be SERVER.TOOL`},
		{"neither server.tool nor a plan tool", "    mcp: [{name: fs, command: [srv]}]\n    tools: [read]", `tools: "read" names no tool: the plan defines no tools (a top-level tools: map), and an MCP tool is named SERVER.TOOL`},
		{"both", "    mcp: [{name: fs, command: [srv], url: \"http://x\"}]\n    tools: [fs.*]", "has both command and url"},
		{"neither", "    mcp: [{name: fs}]\n    tools: [fs.*]", "needs command (a stdio server) or url"},
		{"undeclared secret", "    mcp: [{name: fs, command: [srv], env: {T: \"${{ secrets.OTHER }}\"}}]\n    tools: [fs.*]", "uses secrets.OTHER, which is not in the plan's secrets"},
		{"not a secret", "    mcp: [{name: fs, command: [srv], env: {T: \"${{ vars.x }}\"}}]\n    tools: [fs.*]", "may insert only ${{ secrets.NAME }}"},
		{"secret on command line", "    mcp: [{name: fs, command: [srv, \"${{ secrets.TOK }}\"]}]\n    tools: [fs.*]", "a secret reaches a server only through env"},
		{"bad scope", "    mcp: [{name: fs, command: [srv], scope: forever}]\n    tools: [fs.*]", `scope "forever": one of run`},
		{"duplicate", "    mcp: [{name: fs, command: [a]}, {name: fs, command: [b]}]\n    tools: [fs.*]", `already has a server named "fs"`},
		{"unknown field", "    mcp: [{name: fs, commnd: [a]}]\n    tools: [fs.*]", `unknown field "commnd"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := llmCompileErr(t, fmt.Sprintf(base, tt.agent))
			if !strings.Contains(got, tt.want) || !strings.Contains(got, "plan.yaml:") {
				t.Errorf("error = %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestMCPDryRunNamesTools: the dry run says which MCP tools a step's
// agent may use.
func TestMCPDryRunNamesTools(t *testing.T) {
	prog, err := engine.Compile("plan.yaml", []byte(mcpPlan("openai", "http://model", "http://tools", "edge.echo, edge.f*")), Registry())
	if err != nil {
		t.Fatal(err)
	}
	d := prog.Node("ask").Impl.(engine.Describer).Describe()
	if d != "ask coder (MCP tools edge.echo, edge.f*): Use the tools." {
		t.Errorf("describe = %q", d)
	}
}

// TestMCPServerScope: a server of scope run starts once for all the
// steps of a run; one of scope step starts for each step visit.
func TestMCPServerScope(t *testing.T) {
	for _, tt := range []struct {
		scope string
		want  int32
	}{{"", 1}, {"run", 1}, {"step", 2}} {
		t.Run("scope "+tt.scope, func(t *testing.T) {
			ts := newToolServer(t)
			f := newWireFake(t, "openai",
				toolTurn{calls: [][2]string{{"edge__echo", `{"text":"a"}`}}}, toolTurn{text: "one"},
				toolTurn{calls: [][2]string{{"edge__echo", `{"text":"b"}`}}}, toolTurn{text: "two"})
			src := mcpPlan("openai", f.srv.URL, ts.url, "edge.echo") + `  - {label: again, type: llm, agent: coder, prompt: "Again."}` + "\n"
			if tt.scope != "" {
				src = strings.Replace(src, `headers: {`, `scope: `+tt.scope+`, headers: {`, 1)
			}
			if _, err := llmRunPlan(t, src, mcpAgents(t, src, agents.Options{})); err != nil {
				t.Fatal(err)
			}
			if n := ts.inits.Load(); n != tt.want {
				t.Errorf("the server was started %d times, want %d", n, tt.want)
			}
		})
	}
}

// TestMCPResumedVisitNumbersOn: a visit run again after a kill numbers
// its MCP exchanges after those the killed run recorded, so a replay
// never takes the killed run's exchange for the new one.
func TestMCPResumedVisitNumbersOn(t *testing.T) {
	ts := newToolServer(t)
	src := mcpPlan("openai", "http://model.invalid", ts.url, "edge.echo")
	set := mcpAgents(t, src, agents.Options{})
	b := board.New(board.Run{ID: "r1"})
	if err := b.AddRecording(board.Recording{Label: "ask", Visit: 1, Kind: agents.KindMCP, Call: 3, Response: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	ss, err := set.Session(b, "ask", 1, "coder")
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	if _, err := ss.MCPTools(context.Background()); err != nil {
		t.Fatal(err)
	}
	var calls []int
	for _, r := range b.Recordings() {
		if r.Kind == agents.KindMCP {
			calls = append(calls, r.Call)
		}
	}
	if fmt.Sprint(calls) != "[3 4]" {
		t.Errorf("MCP exchange numbers = %v, want [3 4]", calls)
	}
}

// TestMCPServersOfAContext: a step run with a pool of servers in its
// context (as a Temporal worker runs each step) starts its scope-run
// servers in that pool, not the run's, so each pool starts its own; and
// once the pool is closed a step cannot start one there (a server nothing
// would end), with an error that says so.
func TestMCPServersOfAContext(t *testing.T) {
	ts := newToolServer(t)
	f := newWireFake(t, "openai",
		toolTurn{calls: [][2]string{{"edge__echo", `{"text":"a"}`}}}, toolTurn{text: "one"},
		toolTurn{calls: [][2]string{{"edge__echo", `{"text":"b"}`}}}, toolTurn{text: "two"},
		toolTurn{calls: [][2]string{{"edge__echo", `{"text":"c"}`}}}, toolTurn{text: "three"})
	src := mcpPlan("openai", f.srv.URL, ts.url, "edge.echo")
	prog, err := engine.Compile("plan.yaml", []byte(src), Registry())
	if err != nil {
		t.Fatal(err)
	}
	set := mcpAgents(t, src, agents.Options{})
	run := func(p *agents.Servers) (*board.Board, error) {
		b := board.New(board.Run{ID: "run1"})
		r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: t.TempDir(), Agents: set,
			Sleep: func(context.Context, time.Duration) error { return nil }}
		return b, r.Run(agents.WithServers(context.Background(), p))
	}
	for i := 1; i <= 2; i++ {
		p := agents.NewServers()
		if _, err := run(p); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if n := ts.inits.Load(); n != int32(i) {
			t.Errorf("after %d pools the server was started %d times, want %d", i, n, i)
		}
	}
	closed := agents.NewServers()
	closed.Close()
	b, _ := run(closed)
	if _, status, errText := saved(t, b, "ask"); status != "failed" || !strings.Contains(errText, "MCP server edge not started") {
		t.Errorf("a step with a closed pool: %s, %q", status, errText)
	}
	if n := ts.inits.Load(); n != 2 {
		t.Errorf("the server was started %d times, want 2", n)
	}
}
