package agents

import (
	"encoding/json"
	"testing"
)

// Odd answers seen from local servers and proxies, and plain garbage: none
// may panic, and whatever parses must be usable in the next request.
var oddAnswers = []string{
	`null`, `[]`, `"text"`, `{}`, `{"choices":[null]}`, `{"choices":[{"message":null}]}`,
	`{"choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"finish_reason":"stop"}]}`,
	`{"choices":[{"message":{"content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`,
	`{"choices":[{"message":{"tool_calls":[{"function":{"name":"board_read","arguments":123}}]}}]}`,
	`{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"board_read","arguments":"{\"key\": \"a\""}}]}}]}`,
	`{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"board_read","arguments":{"key":"a"}}}]}}]}`,
	`{"type":"message","content":null}`, `{"type":"message","content":[null,{"type":"tool_use","input":"str"}]}`,
	`{"type":"message","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"ok"}],"usage":null}`,
	`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
}

func TestOddAnswersDoNotPanic(t *testing.T) {
	for _, body := range oddAnswers {
		for name, parse := range map[string]func([]byte) (*Response, error){"openai": parseOpenAI, "anthropic": parseAnthropic} {
			resp, err := parse([]byte(body))
			if err != nil {
				continue
			}
			req := &Request{Model: "m", Messages: []Message{{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls}}}
			if _, _, err := req.Canonical(); err != nil {
				t.Errorf("%s: %s: the parsed answer cannot be sent back: %v", name, body, err)
			}
			(&openAI{}).wire(req)
			(&anthropic{}).wire(req)
		}
	}
}

func TestOpenAIAnswerShapes(t *testing.T) {
	tests := []struct{ body, text, finish, args string }{
		{oddAnswers[6], "ab", "stop", ""},
		{oddAnswers[7], "I can't help with that.", "content_filter", ""},
		{oddAnswers[9], "", "", `"{\"key\": \"a\""`}, // broken arguments kept as text for the tool to report
		{oddAnswers[10], "", "", `{"key":"a"}`},      // arguments sent as an object
	}
	for _, tc := range tests {
		resp, err := parseOpenAI([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		if resp.Text != tc.text || resp.FinishReason != tc.finish {
			t.Errorf("%s: %+v", tc.body, resp)
		}
		if tc.args != "" && (len(resp.ToolCalls) != 1 || string(resp.ToolCalls[0].Args) != tc.args) {
			t.Errorf("%s: tool calls %+v", tc.body, resp.ToolCalls)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, b := range oddAnswers {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, parse := range []func([]byte) (*Response, error){parseOpenAI, parseAnthropic} {
			if resp, err := parse([]byte(body)); err == nil {
				req := &Request{Messages: []Message{{Role: RoleAssistant, ToolCalls: resp.ToolCalls}}}
				if _, _, err := req.Canonical(); err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(resp)
				if _, err := decodeResponse(b); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
