package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/plans"
)

func anErr(typ, msg string) string {
	return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
}

// anthropicValidate checks what the Messages API checks: headers, the
// required max_tokens, alternating roles, and tool results that answer
// the tool uses of the turn just before.
func anthropicValidate(r *http.Request, body map[string]any) (int, string) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		return 404, anErr("not_found_error", "Not Found")
	}
	if r.Header.Get("x-api-key") != testKey {
		return 401, anErr("authentication_error", "invalid x-api-key")
	}
	if r.Header.Get("anthropic-version") == "" {
		return 400, anErr("invalid_request_error", "anthropic-version: header is required")
	}
	if r.Header.Get("anthropic-version") != "2023-06-01" {
		return 400, anErr("invalid_request_error", "anthropic-version: invalid version")
	}
	if r.Header.Get("Authorization") != "" {
		return 400, anErr("invalid_request_error", "unexpected Authorization header")
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || body == nil {
		return 400, anErr("invalid_request_error", "request body is not valid JSON")
	}
	if m, _ := body["model"].(string); m == "" {
		return 400, anErr("invalid_request_error", "model: Field required")
	}
	if mt, ok := body["max_tokens"].(float64); !ok || mt < 1 {
		return 400, anErr("invalid_request_error", "max_tokens: Field required")
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		return 400, anErr("invalid_request_error", "messages: at least one message is required")
	}
	var lastUses map[string]bool
	for i, x := range msgs {
		m, _ := x.(map[string]any)
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m["role"] != want {
			return 400, anErr("invalid_request_error", fmt.Sprintf("messages: roles must alternate between \"user\" and \"assistant\", but found multiple %q roles in a row", m["role"]))
		}
		blocks, _ := m["content"].([]any)
		uses := map[string]bool{}
		for _, y := range blocks {
			b, _ := y.(map[string]any)
			switch b["type"] {
			case "text":
				if s, _ := b["text"].(string); s == "" {
					return 400, anErr("invalid_request_error", fmt.Sprintf("messages.%d: text content blocks must be non-empty", i))
				}
			case "tool_use":
				if _, ok := b["input"].(map[string]any); !ok {
					return 400, anErr("invalid_request_error", fmt.Sprintf("messages.%d: tool_use.input: Input should be a valid dictionary", i))
				}
				uses[b["id"].(string)] = true
			case "thinking":
				if i%2 == 0 || b["signature"] == "" {
					return 400, anErr("invalid_request_error", fmt.Sprintf("messages.%d: thinking blocks go on assistant turns, with their signature", i))
				}
			case "redacted_thinking":
			case "tool_result":
				if !lastUses[b["tool_use_id"].(string)] {
					return 400, anErr("invalid_request_error", fmt.Sprintf("messages.%d: unexpected `tool_use_id` found in `tool_result` blocks", i))
				}
			default:
				return 400, anErr("invalid_request_error", fmt.Sprintf("messages.%d: unknown block type %v", i, b["type"]))
			}
		}
		lastUses = uses
	}
	return 0, ""
}

func anAnswer(text string) string {
	t, _ := json.Marshal(text)
	return `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":` + string(t) + `}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":4,"cache_read_input_tokens":6,"output_tokens":5}}`
}

const anToolAnswer = `{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[` +
	`{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_01","name":"board_read","input":{"key":"notes/plan"}},` +
	`{"type":"tool_use","id":"toolu_02","name":"board_list","input":{}}],` +
	`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":30,"output_tokens":12}}`

func anthropicAgent(base string) *plans.Agent {
	return &plans.Agent{Name: "critic", Provider: "anthropic", Model: "claude-sonnet-4-20250514", System: "Be strict.",
		BaseURL: base, Timeout: 2 * time.Second}
}

func TestAnthropic(t *testing.T) {
	overloaded := anErr("overloaded_error", "Overloaded")
	tests := []struct {
		name     string
		answers  []answer
		key      string
		wantText string
		wantErr  string
		retries  int
		waits    []time.Duration
	}{
		{name: "success", answers: []answer{{body: anAnswer("Fine.")}}, wantText: "Fine."},
		{name: "400 with the API's message", answers: []answer{{status: 400, body: anErr("invalid_request_error", "temperature: range: 0..1")}},
			wantErr: "anthropic: 400 invalid_request_error: temperature: range: 0..1"},
		{name: "401", key: "sk-ant-wrong", wantErr: "anthropic: 401 authentication_error: invalid x-api-key"},
		{name: "403", answers: []answer{{status: 403, body: anErr("permission_error", "Your API key does not have permission to use the specified resource.")}},
			wantErr: "anthropic: 403 permission_error: Your API key does not have permission"},
		{name: "529 overloaded then success", answers: []answer{{status: 529, body: overloaded}, {body: anAnswer("ok")}},
			wantText: "ok", retries: 1, waits: []time.Duration{7500 * time.Microsecond}},
		{name: "429 with an HTTP-date Retry-After", answers: []answer{
			{status: 429, header: map[string]string{"Retry-After": time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)}, body: anErr("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")},
			{body: anAnswer("ok")}},
			wantText: "ok", retries: 1, waits: []time.Duration{0}},
		{name: "529 every time", answers: []answer{{status: 529, body: overloaded}, {status: 529, body: overloaded}, {status: 529, body: overloaded}, {status: 529, body: overloaded}},
			wantErr: "anthropic: 529 overloaded_error: Overloaded (after 3 retries)", retries: 3},
		{name: "malformed JSON", answers: []answer{{body: `{"type":"message","content":[{"type":"text","te`}}, wantErr: "anthropic: malformed answer"},
		{name: "slow answer past the timeout", answers: []answer{{delay: 5 * time.Second, body: anAnswer("late")}},
			wantErr: "/v1/messages): no complete answer (no response headers) within 100ms (the agent's timeout: agents.critic.timeout)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, ss := providerCall(t, anthropicValidate, tc.answers, anthropicAgent, strings.Contains(tc.name, "timeout"), tc.key, "review")
			resp, err := ss.Send(context.Background(), user("Review this"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				want := Usage{InputTokens: 20, OutputTokens: 5, CacheCreationInputTokens: 4, CacheReadInputTokens: 6}
				if resp.Text != tc.wantText || resp.Usage != want || resp.FinishReason != "stop" || resp.Model != "claude-sonnet-4-20250514" {
					t.Errorf("response = %+v", resp)
				}
			}
			checkCall(t, h, ss, err, tc.retries, tc.waits)
		})
	}
}

func TestAnthropicToolRoundTrip(t *testing.T) {
	f := newFake(t, anthropicValidate, answer{body: anToolAnswer}, answer{body: anAnswer("Three steps.")})
	spec := anthropicAgent(f.srv.URL)
	spec.Board.Read = []string{"notes/*"}
	h := newHarness(t, onePlan(spec), nil)
	h.board.Append(boardEntry("notes/plan", "3 steps"))
	ss := h.session(t, "review", "critic")
	ss.Tools = BoardTools
	ss.Schema = json.RawMessage(`{"type":"object"}`)
	resp, err := ss.Send(context.Background(), user("What is the plan?"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Let me look." || len(resp.ToolCalls) != 2 || resp.FinishReason != "tool_calls" {
		t.Fatalf("response = %+v", resp)
	}
	var results []Message
	for _, tc := range resp.ToolCalls {
		results = append(results, ss.RunTool(tc))
	}
	resp, err = ss.Send(context.Background(), append(results, user("Answer now."))...)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "Three steps." {
		t.Errorf("text = %q", resp.Text)
	}
	reqs := f.requests()
	first := reqs[0].body
	if first["max_tokens"] != float64(DefaultAnthropicMaxTokens) {
		t.Errorf("max_tokens = %v, want the default", first["max_tokens"])
	}
	if sys, _ := first["system"].(string); !strings.HasPrefix(sys, "Be strict.") || !strings.Contains(sys, `{"type":"object"}`) {
		t.Errorf("system = %q", sys)
	}
	if tools := first["tools"].([]any); tools[0].(map[string]any)["input_schema"] == nil {
		t.Errorf("tools = %v", tools)
	}
	msgs := reqs[1].body["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("second call sends %d messages: %s", len(msgs), reqs[1].raw)
	}
	last := msgs[2].(map[string]any)["content"].([]any)
	if len(last) != 3 || last[0].(map[string]any)["type"] != "tool_result" || last[2].(map[string]any)["type"] != "text" {
		t.Errorf("tool results and the user text should share one user turn: %v", last)
	}
	if c := last[0].(map[string]any)["content"].(string); !strings.Contains(c, `"value":"3 steps"`) {
		t.Errorf("board_read result = %s", c)
	}
}
