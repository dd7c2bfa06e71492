package agents

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/planrunner/runner/internal/plans"
)

// leaked reports which part of testKey, if any, s holds: the whole key,
// or a piece of it long enough to matter (a key cut by truncation).
func leaked(s string) string {
	for _, part := range []string{testKey, "SECRET", "0123456789", base64.StdEncoding.EncodeToString([]byte(testKey))[:16]} {
		if strings.Contains(s, part) {
			return part
		}
	}
	return ""
}

// TestServerEchoesKeyAnywhere: a provider that echoes the API key in any
// field of its answer (the error's type, code, param, a nested field, a
// copy of the request headers, an HTML page cut for the error message, the
// answer text itself) leaks it into neither the error, the logs, the board
// nor the recording.
func TestServerEchoesKeyAnywhere(t *testing.T) {
	k, _ := json.Marshal(testKey)
	key := string(k)
	html := "<html><body>" + strings.Repeat("x", 274) + " key " + testKey + " rejected</body></html>"
	headers := fmt.Sprintf(`{"error":{"message":"bad request","type":"invalid_request_error","echo":{"headers":{"Authorization":["Bearer %s"]}}}}`, testKey)
	basic := base64.StdEncoding.EncodeToString([]byte("user:" + testKey))
	tests := []struct {
		name     string
		provider string
		answer   answer
		ok       bool // the call succeeds (the key is in the answer)
	}{
		{"openai error.type", "openai", answer{status: 400, body: `{"error":{"message":"no","type":` + key + `,"code":null}}`}, false},
		{"openai error.code", "openai", answer{status: 400, body: `{"error":{"message":"no","type":"x","code":` + key + `}}`}, false},
		{"openai error.param", "openai", answer{status: 400, body: `{"error":{"message":"no","type":"x","param":` + key + `}}`}, false},
		{"openai nested echo of headers", "openai", answer{status: 400, body: headers}, false},
		{"openai no message, key in type", "openai", answer{status: 401, body: `{"error":{"type":` + key + `}}`}, false},
		{"openai html cut at 300", "openai", answer{status: 400, body: html}, false},
		{"openai basic auth echo", "openai", answer{status: 400, body: `{"error":{"message":"auth Basic ` + basic + `","type":"x"}}`}, false},
		{"openai retried 500 then 400", "openai", answer{status: 500, body: html}, false},
		{"openai answer quotes the key", "openai", answer{body: oaAnswer("your key is "+testKey, true)}, true},
		{"openai malformed 200", "openai", answer{body: `{"choices": [` + key}, false},
		{"anthropic error.type", "anthropic", answer{status: 400, body: `{"type":"error","error":{"type":` + key + `,"message":"no"}}`}, false},
		{"anthropic error.message", "anthropic", answer{status: 400, body: anErr("invalid_request_error", "bad key "+testKey)}, false},
		{"anthropic html cut at 300", "anthropic", answer{status: 400, body: html}, false},
		{"anthropic answer quotes the key", "anthropic", answer{body: anAnswer("the key: " + testKey)}, true},
		{"anthropic unexpected type", "anthropic", answer{body: `{"type":` + key + `}`}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			validate, agent := openAIValidate, openAIAgent
			if tc.provider == "anthropic" {
				validate, agent = anthropicValidate, func(base string) *plans.Agent { return anthropicAgent(base) }
			}
			answers := []answer{tc.answer}
			for i := 0; i < 4 && tc.answer.status >= 500; i++ {
				answers = append(answers, tc.answer)
			}
			h, ss := providerCall(t, validate, answers, agent, false, "", "ask")
			resp, err := ss.Send(context.Background(), user("hi"))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
			text := ""
			if resp != nil {
				text = resp.Text
			}
			for what, s := range map[string]string{"error": fmt.Sprint(err), "logs": h.logs.String(),
				"board": boardJSON(t, h.board), "answer": text} {
				if p := leaked(s); p != "" {
					t.Errorf("%q of the key leaked into the %s: %s", p, what, s)
				}
			}
			dropped := strings.Contains(tc.name, "param") || strings.Contains(tc.name, "nested")
			if !dropped && !strings.Contains(fmt.Sprint(err)+text, "***") {
				t.Errorf("the field holding the key is not shown masked: %v %s", err, text)
			}
		})
	}
}

// TestOversizeAnswer: an answer past the size cap is named as such, not
// reported as malformed JSON, and not retried.
func TestOversizeAnswer(t *testing.T) {
	old := maxAnswer
	maxAnswer = 1 << 20
	t.Cleanup(func() { maxAnswer = old })
	big := oaAnswer(strings.Repeat("x", 1<<20), true)
	for _, status := range []int{200, 500} {
		h, ss := providerCall(t, openAIValidate, []answer{{status: status, body: big}, {body: oaAnswer("ok", true)}}, openAIAgent, false, "", "ask")
		_, err := ss.Send(context.Background(), user("hi"))
		if err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") || strings.Contains(err.Error(), "malformed") {
			t.Errorf("status %d: err = %v", status, err)
		}
		checkCall(t, h, ss, err, 0, nil)
	}
}
