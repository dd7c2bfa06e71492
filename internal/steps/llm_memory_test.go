package steps

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
)

// memFake is a model API speaking OpenAI's or Anthropic's wire format:
// it keeps each request's body and serves answers in order, an answer
// being a text or, as "tool:NAME:ARGS", one tool call.
type memFake struct {
	provider string
	srv      *httptest.Server
	mu       sync.Mutex
	answers  []string
	bodies   []map[string]any
}

func newMemFake(t *testing.T, provider string, answers ...string) *memFake {
	f := &memFake{provider: provider, answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			w.WriteHeader(400)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.bodies = append(f.bodies, body)
		w.Header().Set("Content-Type", "application/json")
		if len(f.answers) == 0 {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"fake: no answer left","type":"invalid_request_error"}}`)
			return
		}
		a := f.answers[0]
		f.answers = f.answers[1:]
		n := len(f.bodies)
		tool, isTool := strings.CutPrefix(a, "tool:")
		name, args, _ := strings.Cut(tool, ":")
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		switch {
		case f.provider == "openai" && isTool:
			fmt.Fprintf(w, `{"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":%s,"arguments":%s}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`, n, q(name), q(args))
		case f.provider == "openai":
			fmt.Fprintf(w, `{"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`, q(a))
		case isTool:
			fmt.Fprintf(w, `{"type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"tool_use","id":"toolu_%d","name":%s,"input":%s}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}}`, n, q(name), args)
		default:
			fmt.Fprintf(w, `{"type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":%s}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`, q(a))
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// memLoopPlan: the agent's step runs three times in a loop, then a second
// step asks the same agent; the first visit writes the board through a
// tool call.
func memLoopPlan(agent string) string {
	return `
version: 1
agents:
  coder: ` + agent + `
steps:
  - label: work
    type: llm
    agent: coder
    tools: [board]
    prompt: "Try ${{ steps.work.visits + 1 }}"
  - label: again
    type: branch
    cases:
      - {when: steps.work.visits < 3, goto: work}
  - {label: sum, type: llm, agent: coder, prompt: "Sum up"}
`
}

// jsonEqual compares a decoded JSON value with JSON text.
func jsonEqual(t *testing.T, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", what, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Errorf("%s:\n got %s\nwant %s", what, g, want)
	}
}

// The agent's earlier turns (prompts, answers, tool calls and their
// results) are sent as real multi-turn messages in each provider's wire
// format, on later visits of a loop and on another step of the agent.
func TestLLMMemoryWireFormats(t *testing.T) {
	result := `{\"key\":\"note\",\"ok\":true,\"version\":1}`
	tests := []struct {
		provider, agent string
		want            map[int]string // request index -> messages
	}{
		{"openai", `{provider: openai, model: gpt-4o-mini, system: "You fix code.", memory: conversation, base_url: "URL/v1"}`, map[int]string{
			2: `[{"role":"system","content":"You fix code."},
			     {"role":"user","content":"Try 1"},
			     {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"board_write","arguments":"{\"key\":\"note\",\"value\":\"a\"}"}}]},
			     {"role":"tool","content":"` + result + `","tool_call_id":"call_1"},
			     {"role":"assistant","content":"done 1"},
			     {"role":"user","content":"Try 2"}]`,
			4: `[{"role":"system","content":"You fix code."},
			     {"role":"user","content":"Try 1"},
			     {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"board_write","arguments":"{\"key\":\"note\",\"value\":\"a\"}"}}]},
			     {"role":"tool","content":"` + result + `","tool_call_id":"call_1"},
			     {"role":"assistant","content":"done 1"},
			     {"role":"user","content":"Try 2"},
			     {"role":"assistant","content":"done 2"},
			     {"role":"user","content":"Try 3"},
			     {"role":"assistant","content":"done 3"},
			     {"role":"user","content":"Sum up"}]`,
		}},
		{"anthropic", `{provider: anthropic, model: claude-sonnet-4-5, system: "You fix code.", memory: {mode: conversation, max_tokens: 4000}, base_url: "URL"}`, map[int]string{
			2: `[{"role":"user","content":[{"type":"text","text":"Try 1"}]},
			     {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"board_write","input":{"key":"note","value":"a"}}]},
			     {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"` + result + `"}]},
			     {"role":"assistant","content":[{"type":"text","text":"done 1"}]},
			     {"role":"user","content":[{"type":"text","text":"Try 2"}]}]`,
			3: `[{"role":"user","content":[{"type":"text","text":"Try 1"}]},
			     {"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"board_write","input":{"key":"note","value":"a"}}]},
			     {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"` + result + `"}]},
			     {"role":"assistant","content":[{"type":"text","text":"done 1"}]},
			     {"role":"user","content":[{"type":"text","text":"Try 2"}]},
			     {"role":"assistant","content":[{"type":"text","text":"done 2"}]},
			     {"role":"user","content":[{"type":"text","text":"Try 3"}]}]`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			f := newMemFake(t, tt.provider, `tool:board_write:{"key":"note","value":"a"}`, "done 1", "done 2", "done 3", "summed")
			src := memLoopPlan(strings.Replace(tt.agent, "URL", f.srv.URL, 1))
			set := llmAgents(t, src, agents.Options{Getenv: func(string) string { return "sk-test" }})
			b, err := llmRunPlan(t, src, set)
			if err != nil {
				t.Fatal(err)
			}
			if got := llmSaved(t, b, "sum")["output"]; got != "summed" {
				t.Fatalf("sum = %v", got)
			}
			if len(f.bodies) != 5 {
				t.Fatalf("%d requests, want 5", len(f.bodies))
			}
			for i, want := range tt.want {
				jsonEqual(t, fmt.Sprintf("request %d messages", i), f.bodies[i]["messages"], want)
			}
			if tt.provider == "anthropic" && f.bodies[4]["system"] != "You fix code." {
				t.Errorf("system = %v", f.bodies[4]["system"])
			}
		})
	}
}

// memScriptPlan is the loop with a script agent and a memory bound.
func memScriptPlan(memory string) string {
	return memLoopPlan(`
    provider: script
    memory: ` + memory + `
    responses:
      - {tool_calls: [{name: board_write, args: {key: note, value: a}}]}
      - done 1
      - done 2
      - done 3
      - summed`)
}

// recordedMessages is the messages and memory of each recorded request of
// step label, in order.
func recordedMessages(t *testing.T, b *board.Board, label string) []agents.Request {
	t.Helper()
	var out []agents.Request
	for _, r := range b.Recordings() {
		if r.Kind != agents.KindLLM || r.Label != label {
			continue
		}
		var req agents.Request
		if err := json.Unmarshal(r.Request, &req); err != nil {
			t.Fatal(err)
		}
		out = append(out, req)
	}
	return out
}

func brief(msgs []agents.Message) string {
	var parts []string
	for _, m := range msgs {
		s := m.Role + ":" + m.Content
		for _, tc := range m.ToolCalls {
			s += "[" + tc.Name + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " | ")
}

// Past the bound the oldest whole turns go: a tool call and its result
// leave together, the current prompt always stays, and a prompt that
// alone is past the bound is a clear error.
func TestLLMMemoryBound(t *testing.T) {
	tool := `user:Try 1 | assistant:[board_write] | tool:{"key":"note","ok":true,"version":1} | assistant:done 1`
	tests := []struct {
		name, memory string
		visit3       string // the messages of work's third visit
		dropped      int
		err          string
	}{
		{"short form keeps all", "conversation",
			tool + ` | user:Try 2 | assistant:done 2 | user:Try 3`, 0, ""},
		// 10 tokens: 40 bytes. Visit 3: "Try 3" (5) + turn 2 (11) fit, the
		// tool turn (82) does not, and goes whole.
		{"oldest turn with its tool call dropped", "{mode: conversation, max_tokens: 10}",
			`user:Try 2 | assistant:done 2 | user:Try 3`, 1, ""},
		{"nothing but the prompt fits", "{mode: conversation, max_tokens: 2}",
			`user:Try 3`, 2, ""},
		{"the prompt alone is too long", "{mode: conversation, max_tokens: 1}", "", 0,
			"step work: agent coder: memory.max_tokens is 1, but the system prompt and the prompt of step work alone come to about 2 tokens"},
		{"memory off", "none", `user:Try 3`, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := llmRunPlan(t, memScriptPlan(tt.memory), nil)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				var me *agents.MemoryError
				if !errors.As(err, &me) {
					t.Errorf("err is %T, not a *agents.MemoryError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			reqs := recordedMessages(t, b, "work")
			if len(reqs) != 4 {
				t.Fatalf("%d calls of work, want 4", len(reqs))
			}
			last := reqs[3]
			if got := brief(last.Messages); got != tt.visit3 {
				t.Errorf("third visit sent\n %s\nwant\n %s", got, tt.visit3)
			}
			if tt.memory == "none" {
				if last.Memory != nil {
					t.Errorf("memory off, yet the request says %+v", last.Memory)
				}
				return
			}
			if last.Memory == nil || last.Memory.Agent != "coder" || last.Memory.Messages != len(last.Messages)-1 || last.Memory.Dropped != tt.dropped {
				t.Errorf("memory = %+v, want %d dropped turns", last.Memory, tt.dropped)
			}
		})
	}
}

// An offline replay rebuilds the same messages from the recording; a
// history that differs (an earlier answer changed in the recording) is a
// divergence at the first visit that remembers it.
func TestLLMMemoryReplay(t *testing.T) {
	f := newMemFake(t, "openai", `tool:board_write:{"key":"note","value":"a"}`, "done 1", "done 2", "done 3", "summed")
	src := memLoopPlan(`{provider: openai, model: gpt-4o-mini, memory: conversation, base_url: "` + f.srv.URL + `/v1"}`)
	saved, err := llmRunPlan(t, src, llmAgents(t, src, agents.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	replay := func(recs []board.Recording) (*board.Board, error) {
		set := llmAgents(t, src, agents.Options{Replay: agents.FromRecordings(recs),
			Getenv: func(string) string { return "" }, HTTPClient: &http.Client{Transport: llmNoNetwork{t}}})
		return llmRunPlan(t, src, set)
	}
	b, err := replay(saved.Recordings())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := recordedMessages(t, b, "sum"), recordedMessages(t, saved, "sum"); !reflect.DeepEqual(got, want) {
		t.Errorf("replayed request\n %+v\nwant\n %+v", got, want)
	}
	// Visit 2's answer changed: visit 2 itself still matches (its
	// request is the same), visit 3 remembers another answer.
	recs := saved.Recordings()
	for i, r := range recs {
		if r.Label == "work" && r.Visit == 2 {
			recs[i].Response = json.RawMessage(strings.Replace(string(r.Response), `"done 2"`, `"done two"`, 1))
		}
	}
	_, err = replay(recs)
	var d *agents.Divergence
	if !errors.As(err, &d) || d.Label != "work" || d.Visit != 3 {
		t.Fatalf("err = %v, want a divergence at work visit 3", err)
	}
	if !strings.Contains(string(d.Recorded), `"done 2"`) || !strings.Contains(string(d.Now), `"done two"`) {
		t.Errorf("divergence:\n%s\n%s", d.Recorded, d.Now)
	}
}

// A memory agent in steps that run at the same time is refused when the
// plan loads (the order of its turns would be timing's); max_concurrency:
// 1 makes them one at a time, in order, and is accepted.
func TestLLMMemoryRefusedInParallel(t *testing.T) {
	agent := "agents:\n  coder: {provider: script, memory: conversation, responses: [a, b]}\n  plain: {provider: script, responses: [a, b]}\n"
	tests := []struct{ name, steps, err string }{
		{"parallel group", `
  - label: group
    parallel:
      - {label: a, type: llm, agent: coder, prompt: x}
      - {label: b, type: command, run: "true"}`, "agent coder has memory: conversation, and this step runs in parallel group group"},
		{"sequence in a group", `
  - label: group
    parallel:
      - label: seq
        steps:
          - {label: a, type: llm, agent: coder, prompt: x}
      - {label: b, type: command, run: "true"}`, "runs in parallel group group"},
		{"for_each", `
  - {label: each, type: llm, agent: coder, for_each: '["x", "y"]', prompt: "${{ item }}"}`, "runs in for_each each"},
		{"for_each one at a time", `
  - {label: each, type: llm, agent: coder, for_each: '["x", "y"]', max_concurrency: 1, prompt: "${{ item }}"}`, ""},
		{"group one at a time", `
  - label: group
    max_concurrency: 1
    parallel:
      - {label: a, type: llm, agent: coder, prompt: x}
      - {label: b, type: llm, agent: coder, prompt: y}`, ""},
		{"an agent without memory", `
  - {label: each, type: llm, agent: plain, for_each: '["x", "y"]', prompt: "${{ item }}"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "version: 1\n" + agent + "steps:" + tt.steps + "\n"
			if tt.err == "" {
				if _, err := llmRunPlan(t, src, nil); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got := llmCompileErr(t, src); !strings.Contains(got, tt.err) || !strings.Contains(got, "max_concurrency: 1") {
				t.Errorf("error %q, want %q", got, tt.err)
			}
		})
	}
}

// memory: takes the short form or a mapping; anything else says what is
// wrong and where.
func TestLLMMemoryLoadErrors(t *testing.T) {
	tests := []struct{ memory, err string }{
		{"conversaton", `agent coder: memory: unknown mode "conversaton" (one of conversation, none)`},
		{"{mode: conversation, max_tokens: 0}", "agent coder: memory.max_tokens must be at least 1"},
		{"{mode: conversation, max_tokens: lots}", "agent coder: memory.max_tokens must be a whole number"},
		{"{max_tokens: 100}", "agent coder: memory needs a mode (conversation or none)"},
		{"{mode: conversation, tokens: 100}", `unknown field "tokens" in agent coder: memory`},
		{"[conversation]", "agent coder: memory must be a mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.memory, func(t *testing.T) {
			src := "version: 1\nagents:\n  coder:\n    provider: script\n    responses: [a]\n    memory: " + tt.memory +
				"\nsteps:\n  - {label: a, type: llm, agent: coder, prompt: x}\n"
			got := llmCompileErr(t, src)
			if !strings.Contains(got, tt.err) || !strings.Contains(got, "plan.yaml:6:") {
				t.Errorf("error %q, want %q at line 6", got, tt.err)
			}
		})
	}
}

// A visit that failed on tool calls it never answered (past
// max_tool_calls) leaves its prompt in the memory but not the calls: a
// provider refuses a tool call without its result.
func TestLLMMemoryDropsUnansweredToolCalls(t *testing.T) {
	src := `
version: 1
agents:
  coder:
    provider: script
    memory: conversation
    responses:
      - {tool_calls: [{name: board_read, args: {key: a}}, {name: board_read, args: {key: b}}]}
      - done 2
steps:
  - {label: work, type: llm, agent: coder, tools: [board], max_tool_calls: 1, continue_on_error: true, prompt: "Try ${{ steps.work.visits + 1 }}"}
  - label: again
    type: branch
    cases:
      - {when: steps.work.visits < 2, goto: work}
`
	b, err := llmRunPlan(t, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	reqs := recordedMessages(t, b, "work")
	if len(reqs) != 2 {
		t.Fatalf("%d calls, want 2", len(reqs))
	}
	if got := brief(reqs[1].Messages); got != "user:Try 1 | user:Try 2" {
		t.Errorf("second visit sent %s", got)
	}
}
