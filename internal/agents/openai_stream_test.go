package agents

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/plans"
)

// The chunks below follow OpenAI's API reference, "The chat completion
// chunk object" (https://platform.openai.com/docs/api-reference/chat-streaming)
// and stream_options.include_usage in "Create chat completion"
// (https://platform.openai.com/docs/api-reference/chat/create): every
// event is a `data:` line and a blank line; the first chunk's delta
// carries the role, the last content chunk the finish_reason, then a
// chunk with empty choices carries the usage, then `data: [DONE]`. An
// error after the 200 comes as a data line holding {"error": {...}}.

func chatData(json string) string { return "data: " + json + "\n\n" }

func chatChunk(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return chatData(`{"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_1",` +
		`"choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}`)
}

const chatUsageChunk = `data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_1","choices":[],` +
	`"usage":{"prompt_tokens":1200,"completion_tokens":40,"total_tokens":1240,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},` +
	`"completion_tokens_details":{"reasoning_tokens":16,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}` + "\n\n"

const chatDone = "data: [DONE]\n\n"

// chatHello is a whole streamed answer, "Hello, world", with a comment
// line and CRLF line ends, which the event-stream format allows.
var chatHello = []string{
	": keep-alive\n\n",
	chatChunk(`{"role":"assistant","content":"","refusal":null}`, ""),
	strings.ReplaceAll(chatChunk(`{"content":"Hello"}`, ""), "\n", "\r\n"),
	chatChunk(`{"content":", world"}`, ""),
	chatChunk(`{}`, "stop"),
	chatUsageChunk,
	chatDone,
}

func streamAgent(base string) *plans.Agent {
	a := openAIAgent(base)
	a.Stream, a.PromptCacheKey = true, "fix-tests-coder"
	return a
}

func TestOpenAIChatStream(t *testing.T) {
	usage := Usage{InputTokens: 1200, OutputTokens: 40, CacheReadInputTokens: 1024, ReasoningTokens: 16}
	tests := []struct {
		name      string
		answers   []answer
		wantText  string
		wantShown string
		wantFin   string
		wantUsage Usage
		wantCalls string
		wantErr   string
		retries   int
	}{
		{name: "text, finish, usage chunk, done", answers: []answer{{events: chatHello}},
			wantText: "Hello, world", wantShown: "Hello, world", wantFin: "stop", wantUsage: usage},
		{name: "a server that sends no [DONE]", answers: []answer{{events: chatHello[:len(chatHello)-1]}},
			wantText: "Hello, world", wantShown: "Hello, world", wantFin: "stop", wantUsage: usage},
		{name: "cut at the token limit", answers: []answer{{events: []string{
			chatChunk(`{"role":"assistant","content":"--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a"}`, ""),
			chatChunk(`{}`, "length"), chatUsageChunk, chatDone}}},
			wantText: "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a", wantShown: "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a", wantFin: "length", wantUsage: usage},
		{name: "a tool call whose arguments come in pieces", answers: []answer{{events: []string{
			chatChunk(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"board_write","arguments":""}}]}`, ""),
			chatChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"key\": \"no"}}]}`, ""),
			chatChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"tes/a\", \"value\": 1}"}}]}`, ""),
			chatChunk(`{}`, "tool_calls"), chatUsageChunk, chatDone}}},
			wantFin: "tool_calls", wantUsage: usage, wantCalls: `call_9 board_write {"key":"notes/a","value":1}`},
		{name: "a refusal", answers: []answer{{events: []string{
			chatChunk(`{"role":"assistant","content":null,"refusal":"I can't"}`, ""),
			chatChunk(`{"refusal":" help with that."}`, ""),
			chatChunk(`{}`, "stop"), chatDone}}},
			wantText: "I can't help with that.", wantFin: "content_filter"},
		{name: "broken mid-way: asked again, the broken part never kept",
			answers:  []answer{{events: chatHello[:3], cut: true}, {events: chatHello}},
			wantText: "Hello, world", wantShown: "HelloHello, world", wantFin: "stop", wantUsage: usage, retries: 1},
		{name: "ended before its finish reason: asked again",
			answers:  []answer{{events: chatHello[:3]}, {events: chatHello}},
			wantText: "Hello, world", wantFin: "stop", wantUsage: usage, retries: 1,
			wantShown: "HelloHello, world"},
		{name: "a server error in the stream is retried", answers: []answer{
			{events: append(chatHello[1:3:3], chatData(`{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`))},
			{events: chatHello}},
			wantText: "Hello, world", wantFin: "stop", wantUsage: usage, retries: 1,
			wantShown: "HelloHello, world"},
		{name: "an invalid request in the stream is not", answers: []answer{
			{events: []string{chatData(`{"error":{"message":"Invalid 'messages[1].content': string too long.","type":"invalid_request_error","param":"messages","code":"string_above_max_length"}}`)}}},
			wantErr: "openai: 400 string_above_max_length: Invalid 'messages[1].content': string too long."},
		{name: "a stalled stream hits the idle limit", answers: []answer{{events: chatHello[:3], stall: true}},
			wantErr: "nothing more of the answer's stream (status 200, stalled after"},
		{name: "an error status is read as JSON", answers: []answer{{status: 400, body: oaErr("Invalid value for 'temperature'.", "invalid_request_error", "invalid_value")}},
			wantErr: "openai: 400 invalid_value: Invalid value for 'temperature'."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shown := &syncBuffer{}
			h, ss := providerCallWith(t, openAIValidate, tc.answers, streamAgent, strings.Contains(tc.name, "stall"), "", "ask", streamedTo(shown))
			resp, err := ss.Send(context.Background(), user("Say hello"))
			checkCall(t, h, ss, err, tc.retries, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tc.wantErr)
				}
				if len(h.board.Recordings()) != 0 {
					t.Errorf("a failed stream was recorded")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var calls []string
			for _, c := range resp.ToolCalls {
				calls = append(calls, c.ID+" "+c.Name+" "+string(c.Args))
			}
			if resp.Text != tc.wantText || resp.FinishReason != tc.wantFin || resp.Usage != tc.wantUsage || strings.Join(calls, "; ") != tc.wantCalls {
				t.Errorf("response = %+v", resp)
			}
			if tc.wantShown != "" && shown.String() != tc.wantShown {
				t.Errorf("shown %q, want %q", shown.String(), tc.wantShown)
			}
			recs := h.board.Recordings()
			if len(recs) != 1 || !strings.Contains(string(recs[0].Response), jsonStr(tc.wantText)) || strings.Contains(string(recs[0].Response), "starts again") {
				t.Errorf("recording = %+v", recs)
			}
		})
	}
}

func TestOpenAIChatStreamRequest(t *testing.T) {
	f := newFake(t, openAIValidate, answer{events: chatHello})
	spec := streamAgent(f.srv.URL)
	spec.API, spec.ReasoningEffort = plans.APIChat, "low"
	h := newHarness(t, onePlan(spec), nil)
	if _, err := h.session(t, "ask", "coder").Send(context.Background(), user("hi")); err != nil {
		t.Fatal(err)
	}
	r := f.requests()[0]
	so, _ := r.body["stream_options"].(map[string]any)
	if r.body["stream"] != true || so["include_usage"] != true || r.body["prompt_cache_key"] != "fix-tests-coder" ||
		r.body["reasoning_effort"] != "low" || r.body["temperature"] != nil || r.header.Get("Accept") != "text/event-stream" {
		t.Errorf("request = %s (Accept %q)", r.raw, r.header.Get("Accept"))
	}
}

func TestOpenAIStreamReplaysWithoutServer(t *testing.T) {
	f := newFake(t, openAIValidate, answer{events: chatHello})
	spec := streamAgent(f.srv.URL)
	h := newHarness(t, onePlan(spec), nil)
	want, err := h.session(t, "ask", "coder").Send(context.Background(), user("hi"))
	if err != nil {
		t.Fatal(err)
	}
	f.srv.Close()
	recs := h.board.Recordings()
	shown := &syncBuffer{}
	rh := newHarness(t, onePlan(spec), func(o *Options) {
		o.Replay = FromRecordings(recs)
		o.HTTPClient = &http.Client{Transport: noNetwork{t}}
		streamedTo(shown)(o)
	})
	ss := rh.session(t, "ask", "coder")
	got, err := ss.Send(context.Background(), user("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Text != want.Text || got.Usage != want.Usage || shown.String() != "" {
		t.Errorf("replayed %+v (shown %q), recorded %+v", got, shown.String(), want)
	}
	if jsonStr(rh.board.Recordings()) != jsonStr(recs) {
		t.Errorf("the replay's recording differs:\n%s\n%s", jsonStr(rh.board.Recordings()), jsonStr(recs))
	}
}

func TestReadSSE(t *testing.T) {
	// The framing rules of the WHATWG event-stream format.
	in := ": comment\n\nevent: a\ndata: 1\ndata:2\n\r\nid: 5\nretry: 10\n\ndata: {\"x\":1}\n\nevent: cut\ndata: half"
	var got []string
	err := readSSE(strings.NewReader(in), func(e sseEvent) error {
		got = append(got, e.Type+"="+e.Data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a=1\n2", `={"x":1}`}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events = %q, want %q", got, want)
	}
}
