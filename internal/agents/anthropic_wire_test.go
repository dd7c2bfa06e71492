package agents

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// What the Messages API is sent: structured output and strict tools on
// the models that have them (Anthropic's "Structured outputs" guide), the
// schema in the system prompt elsewhere; extended thinking; and prompt
// cache breakpoints (the "Prompt caching" guide) on the stable prefix
// when it is long enough to be cached.
func TestAnthropicWire(t *testing.T) {
	closed := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`)
	open := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}}}`)
	long := strings.Repeat("Rules of the house. ", 250) // 5,000 bytes: over 1,024 tokens at 4 bytes a token
	tool := Tool{Name: "board_read", Parameters: json.RawMessage(`{"type":"object","properties":{"key":{"type":"string"}},"required":["key"],"additionalProperties":false}`)}
	for _, tc := range []struct {
		name string
		req  Request
		want []string // substrings of the wire JSON
		not  []string
	}{
		{name: "structured output on a 4.5 model",
			req:  Request{Model: "claude-sonnet-4-5-20250929", System: "Be brief.", Schema: closed, Messages: []Message{user("Title?")}},
			want: []string{`"system":"Be brief."`, `"output_config":{"format":{"type":"json_schema","schema":{"type":"object"`},
			not:  []string{"JSON Schema", "cache_control"}},
		{name: "a schema structured output cannot enforce goes in the prompt",
			req:  Request{Model: "claude-opus-5-5", System: "Be brief.", Schema: open, Messages: []Message{user("Title?")}},
			want: []string{`"system":"Be brief.\n\nAnswer with only a JSON value`},
			not:  []string{"output_config"}},
		{name: "an older model gets the schema in the prompt",
			req:  Request{Model: "claude-sonnet-4-20250514", Schema: closed, Messages: []Message{user("Title?")}},
			want: []string{`"system":"Answer with only a JSON value`},
			not:  []string{"output_config", `"strict"`}},
		{name: "strict tools",
			req:  Request{Model: "claude-haiku-4-5", Tools: []Tool{tool}, Messages: []Message{user("Read it.")}},
			want: []string{`"name":"board_read"`, `"strict":true`}},
		{name: "thinking: budget added to the default max_tokens",
			req:  Request{Model: "claude-sonnet-4-5", Thinking: 2048, Messages: []Message{user("Think.")}},
			want: []string{`"max_tokens":6144`, `"thinking":{"type":"enabled","budget_tokens":2048}`}},
		{name: "thinking goes back first on the answered turn",
			req: Request{Model: "claude-sonnet-4-5", Thinking: 2048, MaxTokens: 8000, Messages: []Message{user("Read it."),
				{Role: RoleAssistant, Thinking: []Thinking{{Text: "I should read.", Signature: "sig=="}, {Redacted: "opaque"}},
					ToolCalls: []ToolCall{{ID: "toolu_1", Name: "board_read", Args: json.RawMessage(`{"key":"a"}`)}}},
				{Role: RoleTool, ToolCallID: "toolu_1", Content: "1"}}},
			want: []string{`"max_tokens":8000`, `"content":[{"type":"thinking","thinking":"I should read.","signature":"sig=="},{"type":"redacted_thinking","data":"opaque"},{"type":"tool_use"`}},
		{name: "no thinking asked: none sent back",
			req: Request{Model: "claude-sonnet-4-5", Messages: []Message{user("Hi"),
				{Role: RoleAssistant, Content: "Hello", Thinking: []Thinking{{Text: "x", Signature: "s"}}}, user("Again")}},
			not: []string{`"thinking"`}},
		{name: "a long system prompt is cached; a short one-shot prompt is not",
			req:  Request{Model: "claude-sonnet-4-5", System: long, Messages: []Message{user("Hi")}},
			want: []string{`"system":[{"type":"text","text":"Rules of the house.`, `"cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]`}},
		{name: "a short system prompt is sent as text",
			req: Request{Model: "claude-sonnet-4-5", System: "Be brief.", Tools: []Tool{tool}, Messages: []Message{user("Hi")}},
			not: []string{"cache_control"}},
		{name: "a tool loop caches its conversation so far",
			req: Request{Model: "claude-sonnet-4-5", System: long, Tools: []Tool{tool}, Messages: []Message{user("Read it."),
				{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "toolu_1", Name: "board_read", Args: json.RawMessage(`{"key":"a"}`)}}},
				{Role: RoleTool, ToolCallID: "toolu_1", Content: "1"}}},
			want: []string{`"type":"tool_result","tool_use_id":"toolu_1","content":"1","cache_control":{"type":"ephemeral"}`, `"system":[{"type":"text"`}},
		{name: "memory: its end is a breakpoint",
			req: Request{Model: "claude-sonnet-4-5", Memory: &MemoryRef{Agent: "critic", Messages: 2}, Messages: []Message{user(long),
				{Role: RoleAssistant, Content: "Noted."}, user("Next?")}},
			want: []string{`{"type":"text","text":"Noted.","cache_control":{"type":"ephemeral"}}`, `{"type":"text","text":"Next?","cache_control":{"type":"ephemeral"}}`}},
		{name: "Opus 4.5 caches from 4,096 tokens",
			req: Request{Model: "claude-opus-4-5", System: long, Messages: []Message{user("Hi")}},
			not: []string{"cache_control"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &anthropic{agent: &Agent{}}
			b, err := json.Marshal(p.wire(&tc.req))
			if err != nil {
				t.Fatal(err)
			}
			got := string(b)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("wire lacks %s:\n%s", w, got)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("wire has %s:\n%s", w, got)
				}
			}
		})
	}
}

func TestAnthropicStructured(t *testing.T) {
	for model, want := range map[string]bool{
		"claude-sonnet-4-5-20250929": true, "claude-haiku-4-5": true, "claude-opus-4-1": false, "claude-opus-4-20250514": false,
		"claude-sonnet-4-20250514": false, "claude-3-5-sonnet-20241022": false, "claude-opus-5": true, "claude-opus-5-5": true,
		"claude-fable-5-1": true, "anthropic/claude-sonnet-4-6": true, "llama3": false,
	} {
		if got := anthropicStructured(model); got != want {
			t.Errorf("anthropicStructured(%q) = %v, want %v", model, got, want)
		}
	}
}

// With thinking on, a tool loop's second call sends the first answer's
// thinking back, signed, before its tool use (the API refuses the turn
// otherwise), and the recording keeps it so a replay sends the same.
func TestAnthropicThinkingAcrossTurns(t *testing.T) {
	first := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[` +
		`{"type":"thinking","thinking":"The plan is on the board.","signature":"WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve/op91XWHOEBLLqIOMfFG/UvLEczmEsUjavL...."},` +
		`{"type":"tool_use","id":"toolu_01","name":"board_read","input":{"key":"notes/plan"}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":40}}`
	validate := func(r *http.Request, body map[string]any) (int, string) {
		if s, m := anthropicValidate(r, body); s != 0 {
			return s, m
		}
		msgs := body["messages"].([]any)
		if len(msgs) == 3 {
			blocks := msgs[1].(map[string]any)["content"].([]any)
			if blocks[0].(map[string]any)["type"] != "thinking" {
				return 400, anErr("invalid_request_error", "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block")
			}
		}
		return 0, ""
	}
	f := newFake(t, validate, answer{body: first}, answer{body: anAnswer("Three steps.")})
	spec := anthropicAgent(f.srv.URL)
	spec.Model, spec.Thinking = "claude-sonnet-4-5", 2048
	spec.Board.Read = []string{"notes/*"}
	h := newHarness(t, onePlan(spec), nil)
	h.board.Append(boardEntry("notes/plan", "3 steps"))
	ss := h.session(t, "review", "critic")
	ss.Tools = BoardTools
	resp, err := ss.Send(context.Background(), user("What is the plan?"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Thinking) != 1 || resp.Text != "" {
		t.Fatalf("answer = %+v", resp)
	}
	if _, err := ss.Send(context.Background(), ss.RunTool(resp.ToolCalls[0])); err != nil {
		t.Fatal(err)
	}
	recs := h.board.Recordings()
	rh := newHarness(t, onePlan(spec), func(o *Options) { o.Replay = FromRecordings(recs) })
	rs := rh.session(t, "review", "critic")
	rs.Tools = BoardTools
	rh.board.Append(boardEntry("notes/plan", "3 steps"))
	again, err := rs.Send(context.Background(), user("What is the plan?"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Send(context.Background(), rs.RunTool(again.ToolCalls[0])); err != nil {
		t.Errorf("the replay's second call: %v", err)
	}
}
