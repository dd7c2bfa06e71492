package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/plans"
)

func oaErr(msg, typ, code string) string {
	c := "null"
	if code != "" {
		c = fmt.Sprintf("%q", code)
	}
	return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":%s}}`, msg, typ, c)
}

// openAIValidate checks what the Chat Completions API checks before it
// answers, and refuses with its error shapes.
func openAIValidate(r *http.Request, body map[string]any) (int, string) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		return 404, oaErr("Invalid URL ("+r.Method+" "+r.URL.Path+")", "invalid_request_error", "")
	}
	if r.Header.Get("Authorization") != "Bearer "+testKey {
		return 401, oaErr("Incorrect API key provided: sk-test-***********6789. You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_request_error", "invalid_api_key")
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || body == nil {
		return 400, oaErr("We could not parse the JSON body of your request.", "invalid_request_error", "")
	}
	if m, _ := body["model"].(string); m == "" {
		return 400, oaErr("you must provide a model parameter", "invalid_request_error", "")
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) == 0 {
		return 400, oaErr("[] is too short - 'messages'", "invalid_request_error", "")
	}
	calls := map[string]bool{}
	for i, x := range msgs {
		m, _ := x.(map[string]any)
		switch m["role"] {
		case "system", "user":
			if _, ok := m["content"].(string); !ok {
				return 400, oaErr(fmt.Sprintf("Invalid type for 'messages[%d].content'", i), "invalid_request_error", "invalid_type")
			}
		case "assistant":
			tcs, _ := m["tool_calls"].([]any)
			for _, y := range tcs {
				tc, _ := y.(map[string]any)
				fn, _ := tc["function"].(map[string]any)
				if _, ok := fn["arguments"].(string); !ok || tc["type"] != "function" {
					return 400, oaErr(fmt.Sprintf("Invalid type for 'messages[%d].tool_calls.function.arguments': expected a string", i), "invalid_request_error", "invalid_type")
				}
				calls[tc["id"].(string)] = true
			}
		case "tool":
			id, _ := m["tool_call_id"].(string)
			if !calls[id] {
				return 400, oaErr("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", "invalid_request_error", "")
			}
		default:
			return 400, oaErr(fmt.Sprintf("Invalid value: '%v'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m["role"]), "invalid_request_error", "invalid_value")
		}
	}
	if rf, ok := body["response_format"].(map[string]any); ok {
		js, _ := rf["json_schema"].(map[string]any)
		if rf["type"] != "json_schema" || js["name"] == nil || js["schema"] == nil {
			return 400, oaErr("Missing required parameter: 'response_format.json_schema'.", "invalid_request_error", "missing_required_parameter")
		}
	}
	return 0, ""
}

func oaAnswer(content string, usage bool) string {
	u := ""
	if usage {
		u = `,"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":2}}`
	}
	c, _ := json.Marshal(content)
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o-mini-2024-07-18",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":` + string(c) + `,"refusal":null},"logprobs":null,"finish_reason":"stop"}]` + u +
		`,"system_fingerprint":"fp_1"}`
}

const oaToolAnswer = `{"id":"chatcmpl-2","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,` +
	`"tool_calls":[{"id":"call_abc","type":"function","function":{"name":"board_write","arguments":"{\"key\": \"notes/plan\", \"value\": {\"steps\": 3}}"}}]},` +
	`"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":20,"total_tokens":60}}`

func openAIAgent(base string) *plans.Agent {
	temp := 0.0
	return &plans.Agent{Name: "coder", Provider: "openai", Model: "gpt-4o-mini", System: "Be brief.",
		Temperature: &temp, MaxTokens: 256, BaseURL: base + "/v1", Timeout: 2 * time.Second}
}

func TestOpenAI(t *testing.T) {
	rateLimited := oaErr("Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.", "requests", "rate_limit_exceeded")
	tests := []struct {
		name      string
		answers   []answer
		key       string // "" : the right key
		wantText  string
		wantErr   string
		wantUsage Usage
		retries   int
		waits     []time.Duration
	}{
		{name: "success", answers: []answer{{body: oaAnswer("Hello!", true)}},
			wantText: "Hello!", wantUsage: Usage{InputTokens: 12, OutputTokens: 3, CacheReadInputTokens: 2}},
		{name: "local server without usage", answers: []answer{{body: oaAnswer("hi", false)}}, wantText: "hi"},
		{name: "400 fails at once with the API's message",
			answers: []answer{{status: 400, body: oaErr("Invalid value for 'temperature': expected a number.", "invalid_request_error", "invalid_value")}},
			wantErr: "openai: 400 invalid_value: Invalid value for 'temperature': expected a number."},
		{name: "401 names the error code, not the key", key: "sk-wrong",
			wantErr: "openai: 401 invalid_api_key: Incorrect API key provided"},
		{name: "404 not retried", answers: []answer{{status: 404, body: oaErr("The model `gpt-9` does not exist or you do not have access to it.", "invalid_request_error", "model_not_found")}},
			wantErr: "openai: 404 model_not_found: The model `gpt-9` does not exist"},
		{name: "429 honours Retry-After then succeeds",
			answers:  []answer{{status: 429, header: map[string]string{"Retry-After": "2"}, body: rateLimited}, {body: oaAnswer("ok", true)}},
			wantText: "ok", retries: 1, waits: []time.Duration{2 * time.Second}, wantUsage: Usage{InputTokens: 12, OutputTokens: 3, CacheReadInputTokens: 2}},
		{name: "retry-after-ms wins",
			answers:  []answer{{status: 429, header: map[string]string{"retry-after-ms": "150", "Retry-After": "1"}, body: rateLimited}, {body: oaAnswer("ok", false)}},
			wantText: "ok", retries: 1, waits: []time.Duration{150 * time.Millisecond}},
		{name: "500 then success with backoff",
			answers:  []answer{{status: 500, body: oaErr("The server had an error while processing your request. Sorry about that!", "server_error", "")}, {status: 503, body: "<html>Service Unavailable</html>"}, {body: oaAnswer("ok", false)}},
			wantText: "ok", retries: 2, waits: []time.Duration{7500 * time.Microsecond, 15 * time.Millisecond}},
		{name: "dropped connection then success",
			answers:  []answer{{hangup: true}, {body: oaAnswer("ok", false)}},
			wantText: "ok", retries: 1, waits: []time.Duration{7500 * time.Microsecond}},
		{name: "gives up after the retries",
			answers: []answer{{status: 502, body: "bad gateway"}, {status: 502, body: "bad gateway"}, {status: 502, body: "bad gateway"}, {status: 502, body: "bad gateway"}},
			wantErr: "openai: 502: bad gateway (after 3 retries)", retries: 3},
		{name: "slow answer past the timeout", answers: []answer{{delay: 5 * time.Second, body: oaAnswer("late", false)}},
			wantErr: "/v1/chat/completions): no complete answer (no response headers) within 100ms (the agent's timeout: agents.coder.timeout)"},
		{name: "malformed JSON", answers: []answer{{body: `{"choices": [`}}, wantErr: "openai: malformed answer"},
		{name: "no choices", answers: []answer{{body: `{"choices":[]}`}}, wantErr: "openai: the answer has no choices"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, ss := providerCall(t, openAIValidate, tc.answers, openAIAgent, strings.Contains(tc.name, "timeout"), tc.key, "ask")
			start := time.Now()
			resp, err := ss.Send(context.Background(), user("Say hello"))
			if time.Since(start) > 2*time.Second {
				t.Errorf("call took %s", time.Since(start))
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if resp.Text != tc.wantText || resp.Usage != tc.wantUsage || resp.FinishReason != "stop" {
					t.Errorf("response = %+v", resp)
				}
			}
			checkCall(t, h, ss, err, tc.retries, tc.waits)
		})
	}
}

func TestOpenAIWireRequest(t *testing.T) {
	f := newFake(t, openAIValidate, answer{body: oaToolAnswer}, answer{body: oaAnswer(`{"done":true}`, true)})
	seed := 7
	spec := openAIAgent(f.srv.URL)
	spec.Seed = &seed
	h := newHarness(t, onePlan(spec), nil)
	ss := h.session(t, "plan", "coder")
	ss.Tools = BoardTools
	ss.Schema = json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"],"additionalProperties":false}`)
	resp, err := ss.Send(context.Background(), user("Plan it"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_abc" || string(resp.ToolCalls[0].Args) != `{"key":"notes/plan","value":{"steps":3}}` || resp.FinishReason != "tool_calls" {
		t.Fatalf("tool calls = %+v (%s)", resp.ToolCalls, resp.FinishReason)
	}
	tool := ss.RunTool(resp.ToolCalls[0])
	if _, err := ss.Send(context.Background(), tool); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	first := reqs[0].body
	if first["model"] != "gpt-4o-mini" || first["temperature"] != 0.0 || first["seed"] != 7.0 || first["max_tokens"] != 256.0 {
		t.Errorf("parameters = %s", reqs[0].raw)
	}
	msgs := first["messages"].([]any)
	if m := msgs[0].(map[string]any); m["role"] != "system" || m["content"] != "Be brief." {
		t.Errorf("system message = %v", m)
	}
	tools := first["tools"].([]any)
	if fn := tools[0].(map[string]any)["function"].(map[string]any); fn["name"] != "board_read" || fn["parameters"] == nil {
		t.Errorf("tools = %v", tools)
	}
	rf := first["response_format"].(map[string]any)["json_schema"].(map[string]any)
	if rf["strict"] != true {
		t.Errorf("a closed schema should ask for strict mode: %v", rf)
	}
	second := reqs[1].body["messages"].([]any)
	if len(second) != 4 {
		t.Fatalf("second call sends %d messages: %s", len(second), reqs[1].raw)
	}
	asst := second[2].(map[string]any)
	if asst["content"] != nil {
		t.Errorf("an assistant turn with only tool calls should have null content: %v", asst)
	}
	if tm := second[3].(map[string]any); tm["role"] != "tool" || tm["tool_call_id"] != "call_abc" || !strings.Contains(tm["content"].(string), `"version":1`) {
		t.Errorf("tool message = %v", tm)
	}
	if e, ok := h.board.Get("notes/plan"); !ok || e.Author != "coder" {
		t.Errorf("the tool call did not write the key: %+v", e)
	}
}

func TestOpenAIMaxTokensField(t *testing.T) {
	// api.openai.com wants max_completion_tokens; local servers max_tokens.
	spec := openAIAgent("http://localhost:11434")
	p := &openAI{baseURL: "http://localhost:11434/v1"}
	if w := p.wire(&Request{Model: spec.Model, MaxTokens: 5}); w.MaxTokens != 5 || w.MaxCompletionTokens != 0 {
		t.Errorf("local: %+v", w)
	}
	p.baseURL = DefaultOpenAIBaseURL
	if w := p.wire(&Request{Model: spec.Model, MaxTokens: 5}); w.MaxTokens != 0 || w.MaxCompletionTokens != 5 {
		t.Errorf("openai: %+v", w)
	}
}

func TestStrictSchema(t *testing.T) {
	tests := []struct {
		schema string
		want   bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`, true},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}},"required":["a"],"additionalProperties":false}`, false},
		{`{"type":"object","properties":{"a":{"type":"object","properties":{"x":{"type":"string"}}}},"required":["a"],"additionalProperties":false}`, false},
		{`{"type":"array","items":{"type":"string"}}`, true},
	}
	for _, tc := range tests {
		if got := strictSchema(json.RawMessage(tc.schema)); got != tc.want {
			t.Errorf("strictSchema(%s) = %v, want %v", tc.schema, got, tc.want)
		}
	}
}

func TestCancelStopsTheCall(t *testing.T) {
	f := newFake(t, openAIValidate, answer{delay: 5 * time.Second, body: oaAnswer("late", false)})
	h := newHarness(t, onePlan(openAIAgent(f.srv.URL)), nil)
	ss := h.session(t, "ask", "coder")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := ss.Send(ctx, user("hi"))
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("err = %v after %s", err, time.Since(start))
	}
	if ss.Stats().Retries != 0 {
		t.Errorf("a cancelled call was retried")
	}
}

func TestConnectionRefusedIsRetried(t *testing.T) {
	f := newFake(t, openAIValidate)
	url := f.srv.URL
	f.srv.Close()
	h := newHarness(t, onePlan(openAIAgent(url)), nil)
	ss := h.session(t, "ask", "coder")
	_, err := ss.Send(context.Background(), user("hi"))
	if err == nil || !strings.Contains(err.Error(), "(after 3 retries)") || ss.Stats().Retries != 3 {
		t.Fatalf("err = %v, retries %d", err, ss.Stats().Retries)
	}
}
