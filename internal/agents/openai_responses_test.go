package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/plans"
)

// The answers below follow OpenAI's API reference for the Responses API:
// "The response object" (https://platform.openai.com/docs/api-reference/responses/object)
// for output items (reasoning with encrypted_content, function_call,
// message with output_text), status and incomplete_details, and usage
// with input_tokens_details.cached_tokens and
// output_tokens_details.reasoning_tokens; "Streaming events"
// (https://platform.openai.com/docs/api-reference/responses-streaming)
// for the events of a stream, each an `event:` line naming its type and a
// `data:` line holding it, with sequence_number.

// responsesValidate checks what the Responses API checks before it
// answers: the path, the key, the input's shape, and, as the API does
// for a reasoning model without stored state, that a function call made
// after reasoning comes back with its reasoning item.
func responsesValidate(r *http.Request, body map[string]any) (int, string) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		return 404, oaErr("Invalid URL ("+r.Method+" "+r.URL.Path+")", "invalid_request_error", "")
	}
	if r.Header.Get("Authorization") != "Bearer "+testKey {
		return 401, oaErr("Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
	}
	if m, _ := body["model"].(string); m == "" {
		return 400, oaErr("Missing required parameter: 'model'.", "invalid_request_error", "missing_required_parameter")
	}
	if _, ok := body["temperature"]; ok && body["reasoning"] != nil {
		return 400, oaErr("Unsupported parameter: 'temperature' is not supported with this model.", "invalid_request_error", "unsupported_parameter")
	}
	if _, ok := body["messages"]; ok {
		return 400, oaErr("Unsupported parameter: 'messages'. In the Responses API, this parameter has moved to 'input'.", "invalid_request_error", "unsupported_parameter")
	}
	input, ok := body["input"].([]any)
	if !ok {
		return 400, oaErr("Invalid type for 'input'.", "invalid_request_error", "invalid_type")
	}
	reasoned, calls := map[string]bool{}, map[string]bool{}
	for i, x := range input {
		it, _ := x.(map[string]any)
		switch it["type"] {
		case "message":
			if _, ok := it["content"].(string); !ok {
				return 400, oaErr(fmt.Sprintf("Invalid type for 'input[%d].content'.", i), "invalid_request_error", "invalid_type")
			}
		case "reasoning":
			if _, ok := it["encrypted_content"].(string); !ok {
				return 400, oaErr(fmt.Sprintf("Item 'input[%d]' of type 'reasoning' has no encrypted_content; without store it is required.", i), "invalid_request_error", "")
			}
			reasoned[it["id"].(string)] = true
		case "function_call":
			if _, ok := it["arguments"].(string); !ok {
				return 400, oaErr(fmt.Sprintf("Invalid type for 'input[%d].arguments': expected a string.", i), "invalid_request_error", "invalid_type")
			}
			if !reasoned["rs_1"] {
				return 400, oaErr("Item 'fc_1' of type 'function_call' was provided without its required 'reasoning' item: 'rs_1'.", "invalid_request_error", "")
			}
			calls[it["call_id"].(string)] = true
		case "function_call_output":
			if !calls[fmt.Sprint(it["call_id"])] {
				return 400, oaErr("No tool call found for function call output with call_id "+fmt.Sprint(it["call_id"])+".", "invalid_request_error", "")
			}
		default:
			return 400, oaErr(fmt.Sprintf("Invalid value: '%v'.", it["type"]), "invalid_request_error", "invalid_value")
		}
	}
	for _, x := range asList(body["tools"]) {
		tl, _ := x.(map[string]any)
		if tl["type"] != "function" || tl["name"] == nil {
			return 400, oaErr("Missing required parameter: 'tools[0].name'.", "invalid_request_error", "missing_required_parameter")
		}
	}
	return 0, ""
}

func asList(v any) []any { l, _ := v.([]any); return l }

const rsReasoningItem = `{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Read the failing test first."}],"encrypted_content":"gAAAAB-enc-1"}`

// rsToolAnswer: a reasoning model thinks, then calls a tool.
const rsToolAnswer = `{"id":"resp_1","object":"response","created_at":1741476777,"status":"completed","error":null,"incomplete_details":null,` +
	`"instructions":"Be brief.","max_output_tokens":256,"model":"gpt-5-2025-08-07","output":[` + rsReasoningItem + `,` +
	`{"id":"fc_1","type":"function_call","status":"completed","arguments":"{\"key\":\"notes/plan\",\"value\":{\"steps\":3}}","call_id":"call_r1","name":"board_write"}],` +
	`"parallel_tool_calls":true,"reasoning":{"effort":"high","summary":null},"store":false,"temperature":1.0,"text":{"format":{"type":"text"}},` +
	`"usage":{"input_tokens":2000,"input_tokens_details":{"cached_tokens":1536},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":256},"total_tokens":2300}}`

func rsMessageAnswer(status, incomplete, text string) string {
	t, _ := json.Marshal(text)
	inc := "null"
	if incomplete != "" {
		inc = `{"reason":"` + incomplete + `"}`
	}
	return `{"id":"resp_2","object":"response","created_at":1741476778,"status":"` + status + `","error":null,"incomplete_details":` + inc + `,` +
		`"model":"gpt-5-2025-08-07","output":[{"id":"rs_2","type":"reasoning","summary":[],"encrypted_content":"gAAAAB-enc-2"},` +
		`{"id":"msg_2","type":"message","status":"` + status + `","role":"assistant","content":[{"type":"output_text","text":` + string(t) + `,"annotations":[]}]}],` +
		`"usage":{"input_tokens":2400,"input_tokens_details":{"cached_tokens":2048},"output_tokens":120,"output_tokens_details":{"reasoning_tokens":64},"total_tokens":2520}}`
}

func responsesAgent(base string) *plans.Agent {
	a := openAIAgent(base)
	a.Model, a.API, a.ReasoningEffort, a.PromptCacheKey = "gpt-5", plans.APIResponses, "high", "fix-tests-coder"
	return a // its temperature 0 stays in the plan: a reasoning model is not sent one
}

func TestOpenAIResponsesToolLoop(t *testing.T) {
	f := newFake(t, responsesValidate, answer{body: rsToolAnswer}, answer{body: rsMessageAnswer("completed", "", `{"done":true}`)})
	h := newHarness(t, onePlan(responsesAgent(f.srv.URL)), nil)
	ss := h.session(t, "fix", "coder")
	ss.Tools = BoardTools
	ss.Schema = json.RawMessage(`{"type":"object","properties":{"done":{"type":"boolean"}},"required":["done"],"additionalProperties":false}`)
	resp, err := ss.Send(context.Background(), user("Fix the tests"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].ID != "call_r1" || string(resp.ToolCalls[0].Args) != `{"key":"notes/plan","value":{"steps":3}}` ||
		resp.FinishReason != "tool_calls" || len(resp.Reasoning) != 1 || string(resp.Reasoning[0]) != rsReasoningItem {
		t.Fatalf("first answer = %+v", resp)
	}
	if want := (Usage{InputTokens: 2000, OutputTokens: 300, CacheReadInputTokens: 1536, ReasoningTokens: 256}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
	// gpt-5: $1.25 input, $0.125 cached input, $10 output (reasoning
	// tokens are output tokens) per million.
	if want := (464*1.25 + 1536*0.125 + 300*10) / 1e6; math.Abs(resp.CostUSD-want) > 1e-9 {
		t.Errorf("cost = %v, want %v", resp.CostUSD, want)
	}
	resp, err = ss.Send(context.Background(), ss.RunTool(resp.ToolCalls[0]))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `{"done":true}` || resp.FinishReason != "stop" {
		t.Errorf("second answer = %+v", resp)
	}
	reqs := f.requests()
	first := reqs[0].body
	text, _ := first["text"].(map[string]any)
	format, _ := text["format"].(map[string]any)
	reasoning, _ := first["reasoning"].(map[string]any)
	if first["instructions"] != "Be brief." || first["store"] != false || fmt.Sprint(first["include"]) != "[reasoning.encrypted_content]" ||
		first["max_output_tokens"] != 256.0 || first["prompt_cache_key"] != "fix-tests-coder" || reasoning["effort"] != "high" ||
		format["type"] != "json_schema" || format["strict"] != true || format["name"] != "answer" || first["temperature"] != nil {
		t.Errorf("first request = %s", reqs[0].raw)
	}
	// The second call sends the conversation back: the prompt, the
	// reasoning item as it came, the call, and its output.
	var types []string
	for _, x := range reqs[1].body["input"].([]any) {
		types = append(types, x.(map[string]any)["type"].(string))
	}
	if strings.Join(types, " ") != "message reasoning function_call function_call_output" {
		t.Errorf("second request's input = %v: %s", types, reqs[1].raw)
	}
	if !strings.Contains(string(reqs[1].raw), `"encrypted_content":"gAAAAB-enc-1"`) {
		t.Errorf("the reasoning was not sent back: %s", reqs[1].raw)
	}

	// Offline, with no server: the same answers from the recording, and
	// the same requests (the reasoning item is part of the second one).
	f.srv.Close()
	recs := h.board.Recordings()
	rh := newHarness(t, onePlan(responsesAgent(f.srv.URL)), func(o *Options) {
		o.Replay = FromRecordings(recs)
		o.Getenv = func(string) string { return "" }
		o.HTTPClient = &http.Client{Transport: noNetwork{t}}
	})
	rs := rh.session(t, "fix", "coder")
	rs.Tools, rs.Schema = BoardTools, ss.Schema
	r1, err := rs.Send(context.Background(), user("Fix the tests"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Send(context.Background(), rs.RunTool(r1.ToolCalls[0])); err != nil {
		t.Fatal(err)
	}
	if jsonStr(rh.board.Recordings()) != jsonStr(recs) {
		t.Errorf("the replay's recordings differ")
	}
}

func TestOpenAIResponsesFinish(t *testing.T) {
	tests := []struct {
		name, body, wantFin, wantText, wantErr string
	}{
		{name: "completed", body: rsMessageAnswer("completed", "", "done"), wantFin: "stop", wantText: "done"},
		{name: "cut at max_output_tokens", body: rsMessageAnswer("incomplete", "max_output_tokens", "--- a/x"), wantFin: "length", wantText: "--- a/x"},
		{name: "stopped by the content filter", body: rsMessageAnswer("incomplete", "content_filter", "part"), wantFin: "content_filter", wantText: "part"},
		{name: "a refusal", body: `{"model":"gpt-5","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I can't help with that."}]}]}`,
			wantFin: "content_filter", wantText: "I can't help with that."},
		{name: "failed", body: `{"model":"gpt-5","status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[]}`,
			wantErr: "The model failed. (server_error)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ss := providerCall(t, responsesValidate, []answer{{body: tc.body}}, responsesAgent, false, "", "ask")
			resp, err := ss.Send(context.Background(), user("go"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if resp.FinishReason != tc.wantFin || resp.Text != tc.wantText {
				t.Errorf("answer = %+v", resp)
			}
		})
	}
}

// rsEvents is a whole streamed response, every event type of a reasoning
// model's answer in the order the API sends them.
func rsEvents(terminal string) []string {
	ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
	done := rsMessageAnswer("completed", "", "Hello, world")
	return []string{
		ev("response.created", `{"type":"response.created","sequence_number":0,"response":{"id":"resp_2","object":"response","status":"in_progress","model":"gpt-5-2025-08-07","output":[],"usage":null}}`),
		ev("response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_2","object":"response","status":"in_progress","output":[]}}`),
		ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"rs_2","type":"reasoning","summary":[]}}`),
		ev("response.reasoning_summary_part.added", `{"type":"response.reasoning_summary_part.added","sequence_number":3,"item_id":"rs_2","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":""}}`),
		ev("response.reasoning_summary_text.delta", `{"type":"response.reasoning_summary_text.delta","sequence_number":4,"item_id":"rs_2","output_index":0,"summary_index":0,"delta":"Greeting."}`),
		ev("response.reasoning_summary_text.done", `{"type":"response.reasoning_summary_text.done","sequence_number":5,"item_id":"rs_2","output_index":0,"summary_index":0,"text":"Greeting."}`),
		ev("response.reasoning_summary_part.done", `{"type":"response.reasoning_summary_part.done","sequence_number":6,"item_id":"rs_2","output_index":0,"summary_index":0,"part":{"type":"summary_text","text":"Greeting."}}`),
		ev("response.output_item.done", `{"type":"response.output_item.done","sequence_number":7,"output_index":0,"item":{"id":"rs_2","type":"reasoning","summary":[],"encrypted_content":"gAAAAB-enc-2"}}`),
		ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":8,"output_index":1,"item":{"id":"msg_2","type":"message","status":"in_progress","role":"assistant","content":[]}}`),
		ev("response.content_part.added", `{"type":"response.content_part.added","sequence_number":9,"item_id":"msg_2","output_index":1,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`),
		ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":10,"item_id":"msg_2","output_index":1,"content_index":0,"delta":"Hello"}`),
		ev("response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":11,"item_id":"msg_2","output_index":1,"content_index":0,"delta":", world"}`),
		ev("response.output_text.done", `{"type":"response.output_text.done","sequence_number":12,"item_id":"msg_2","output_index":1,"content_index":0,"text":"Hello, world"}`),
		ev("response.content_part.done", `{"type":"response.content_part.done","sequence_number":13,"item_id":"msg_2","output_index":1,"content_index":0,"part":{"type":"output_text","text":"Hello, world","annotations":[]}}`),
		ev("response.output_item.done", `{"type":"response.output_item.done","sequence_number":14,"output_index":1,"item":{"id":"msg_2","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello, world","annotations":[]}]}}`),
		ev(terminal, `{"type":"`+terminal+`","sequence_number":15,"response":`+done+`}`),
	}
}

func TestOpenAIResponsesStream(t *testing.T) {
	whole := rsEvents("response.completed")
	ev := func(typ, data string) string { return "event: " + typ + "\ndata: " + data + "\n\n" }
	tests := []struct {
		name      string
		answers   []answer
		wantErr   string
		wantShown string
		retries   int
	}{
		{name: "every event type", answers: []answer{{events: whole}}, wantShown: "Hello, world"},
		{name: "broken mid-way: asked again", answers: []answer{{events: whole[:11], cut: true}, {events: whole}}, retries: 1,
			wantShown: "HelloHello, world"},
		{name: "ended before response.completed: asked again", answers: []answer{{events: whole[:15]}, {events: whole}}, retries: 1,
			wantShown: "Hello, worldHello, world"},
		{name: "an error event is retried", answers: []answer{
			{events: append(whole[:2:2], ev("error", `{"type":"error","sequence_number":2,"code":"server_error","message":"The server had an error.","param":null}`))},
			{events: whole}}, retries: 1,
			wantShown: "Hello, world"},
		{name: "response.failed is retried", answers: []answer{
			{events: append(whole[:2:2], ev("response.failed", `{"type":"response.failed","sequence_number":2,"response":{"id":"resp_2","status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[]}}`))},
			{events: whole}}, retries: 1,
			wantShown: "Hello, world"},
		{name: "an invalid request is not", answers: []answer{
			{events: []string{ev("error", `{"type":"error","sequence_number":0,"code":"invalid_prompt","message":"Invalid prompt.","param":null}`)}}},
			wantErr: "openai: 400 invalid_prompt: Invalid prompt."},
		{name: "a stalled stream hits the idle limit", answers: []answer{{events: whole[:11], stall: true}},
			wantErr: "nothing more of the answer's stream (status 200, stalled after"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shown := &syncBuffer{}
			h, ss := providerCallWith(t, responsesValidate, tc.answers, func(base string) *plans.Agent {
				a := responsesAgent(base)
				a.Stream = true
				return a
			}, strings.Contains(tc.name, "stall"), "", "ask", streamedTo(shown))
			resp, err := ss.Send(context.Background(), user("Say hello"))
			checkCall(t, h, ss, err, tc.retries, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := (Usage{InputTokens: 2400, OutputTokens: 120, CacheReadInputTokens: 2048, ReasoningTokens: 64})
			if resp.Text != "Hello, world" || resp.FinishReason != "stop" || resp.Usage != want || len(resp.Reasoning) != 1 {
				t.Errorf("answer = %+v", resp)
			}
			if shown.String() != tc.wantShown {
				t.Errorf("shown %q, want %q", shown.String(), tc.wantShown)
			}
		})
	}
	t.Run("incomplete", func(t *testing.T) {
		evs := append(rsEvents("response.incomplete")[:15:15],
			ev("response.incomplete", `{"type":"response.incomplete","sequence_number":15,"response":`+rsMessageAnswer("incomplete", "max_output_tokens", "Hello, wor")+`}`))
		_, ss := providerCall(t, responsesValidate, []answer{{events: evs}}, func(base string) *plans.Agent {
			a := responsesAgent(base)
			a.Stream = true
			return a
		}, false, "", "ask")
		resp, err := ss.Send(context.Background(), user("Say hello"))
		if err != nil || resp.FinishReason != "length" || resp.Text != "Hello, wor" {
			t.Fatalf("answer = %+v, %v", resp, err)
		}
	})
}

func TestOpenAIDefaultAPI(t *testing.T) {
	tests := []struct{ base, api, want string }{
		{DefaultOpenAIBaseURL, "", plans.APIResponses},
		{"http://localhost:11434/v1", "", plans.APIChat},
		{DefaultOpenAIBaseURL, plans.APIChat, plans.APIChat},
		{"http://localhost:8000/v1", plans.APIResponses, plans.APIResponses},
	}
	for _, tc := range tests {
		p := &openAI{baseURL: tc.base, agent: &Agent{Spec: &plans.Agent{API: tc.api}}}
		if got := p.api(); got != tc.want {
			t.Errorf("%s with api %q: %s, want %s", tc.base, tc.api, got, tc.want)
		}
	}
}

// A memory agent on the Responses API sends its earlier visits' reasoning
// back with them: the memory is read from the recordings, which keep it.
func TestOpenAIResponsesMemoryKeepsReasoning(t *testing.T) {
	f := newFake(t, responsesValidate, answer{body: rsMessageAnswer("completed", "", "first")}, answer{body: rsMessageAnswer("completed", "", "second")})
	spec := responsesAgent(f.srv.URL)
	spec.Memory = &plans.AgentMemory{Mode: plans.MemoryConversation, MaxTokens: 10000}
	h := newHarness(t, onePlan(spec), nil)
	for i, label := range []string{"plan", "code"} {
		ss := h.session(t, label, "coder")
		prompt := fmt.Sprintf("visit %d", i+1)
		if err := ss.Remember(prompt); err != nil {
			t.Fatal(err)
		}
		if _, err := ss.Send(context.Background(), user(prompt)); err != nil {
			t.Fatal(err)
		}
		ss.Close()
	}
	var types []string
	for _, x := range f.requests()[1].body["input"].([]any) {
		types = append(types, x.(map[string]any)["type"].(string))
	}
	if strings.Join(types, " ") != "message reasoning message message" || !strings.Contains(string(f.requests()[1].raw), `"encrypted_content":"gAAAAB-enc-2"`) {
		t.Errorf("second visit's input = %v: %s", types, f.requests()[1].raw)
	}
}
