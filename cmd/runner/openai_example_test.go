package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// The flagship loop against OpenAI's two wire APIs as a model of today
// speaks them: the Responses API with a reasoning model that thinks,
// calls a tool, and then answers (its reasoning items sent back on the
// next turn, as the API requires), and Chat Completions streamed. Each
// run is then replayed offline with the server gone. The server sends
// the bytes of OpenAI's API reference (internal/agents/openai_*_test.go
// names the pages).
func TestFixTestsExampleOpenAIWireAPIs(t *testing.T) {
	example, _ := filepath.Abs("../../examples/fix-tests")
	var canned map[string][]string
	data, err := os.ReadFile(filepath.Join(example, "answers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &canned); err != nil {
		t.Fatal(err)
	}
	answers := canned["fix"]
	// The second answer with its (last) hunk miscounted, as models write
	// them: applied by its body, since the provider says the answer ended.
	answers[1] = strings.Replace(answers[1], "@@ -8,7 +8,7 @@", "@@ -8,9 +8,9 @@", 1)
	if !strings.Contains(answers[1], "@@ -8,9 +8,9 @@") {
		t.Fatal("the canned answer changed: fix the test")
	}
	tests := []struct {
		name  string
		flags []string
		tools bool // the fix step offers the board tools
		serve func(f *wireModel, t *testing.T, w http.ResponseWriter, body map[string]any)
		check func(t *testing.T, f *wireModel, stderr string)
	}{
		{name: "responses API, a reasoning model and a tool call",
			flags: []string{"--agent", "coder.api=responses", "--agent", "coder.model=gpt-5", "--agent", "coder.reasoning_effort=low"},
			tools: true, serve: (*wireModel).responses,
			check: func(t *testing.T, f *wireModel, _ string) {
				if f.calls != 4 || f.path != "/v1/responses" {
					t.Errorf("%d calls to %s, want 4 to /v1/responses", f.calls, f.path)
				}
			}},
		{name: "chat completions, streamed",
			flags: []string{"--agent", "coder.stream=true"},
			serve: (*wireModel).chatStream,
			check: func(t *testing.T, f *wireModel, _ string) {
				if f.calls != 2 || f.path != "/v1/chat/completions" {
					t.Errorf("%d calls to %s, want 2 to /v1/chat/completions", f.calls, f.path)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(example)); err != nil {
				t.Fatal(err)
			}
			plan := filepath.Join(dir, "plan.yaml")
			if tc.tools {
				src, _ := os.ReadFile(plan)
				with := strings.Replace(string(src), "    output: diff\n", "    output: diff\n    tools: [board]\n", 1)
				if err := os.WriteFile(plan, []byte(with), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f := &wireModel{answers: answers}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				raw, _ := io.ReadAll(r.Body)
				var body map[string]any
				json.Unmarshal(raw, &body)
				f.mu.Lock()
				defer f.mu.Unlock()
				f.calls++
				f.path = r.URL.Path
				if r.Header.Get("Authorization") != "Bearer sk-test" {
					w.WriteHeader(401)
					io.WriteString(w, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
					return
				}
				tc.serve(f, t, w, body)
			}))
			t.Setenv("OPENAI_API_KEY", "sk-test")
			wd := t.TempDir()
			args := append([]string{"run", plan, "--agent", "coder.provider=openai", "--agent", "coder.base_url=" + srv.URL + "/v1"}, tc.flags...)
			r := runCLI(t, wd, args...)
			srv.Close()
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			bb := blackboardPath(t, r.stdout)
			checkFixTestsRun(t, bb)
			tc.check(t, f, r.stderr)
			if tc.tools { // the reasoning model: 2 calls a visit, each 1,200 in (1,024 cached), 300 out (256 reasoning)
				checkStepUsage(t, checkFixTestsRun(t, bb), "fix", []string{
					`{"input_tokens":2400,"output_tokens":600,"cache_read_input_tokens":2048,"reasoning_tokens":512,`,
					`{"input_tokens":2400,"output_tokens":600,"cache_read_input_tokens":2048,"reasoning_tokens":512,`,
				})
				if line := `"input_tokens":4800,"output_tokens":1200,"cache_read_input_tokens":4096,"reasoning_tokens":1024,"cost_usd":0.013392`; !strings.Contains(r.stderr, line) {
					t.Errorf("the summary lacks %q:\n%s", line, r.stderr)
				}
			}
			t.Setenv("OPENAI_API_KEY", "")
			if r := runCLI(t, wd, "replay", bb, "--offline", "-q"); r.code != 0 {
				t.Fatalf("replay --offline: exit %d\n%s", r.code, r.stderr)
			}
		})
	}
}

type wireModel struct {
	mu      sync.Mutex
	answers []string
	calls   int
	path    string
	visits  int
}

// responses answers as a reasoning model does at POST /responses: to a
// prompt, with its reasoning and a call of board_write; to the call's
// output (which must come back after the reasoning, as the API demands
// of a stateless conversation), with its reasoning and the diff.
func (f *wireModel) responses(t *testing.T, w http.ResponseWriter, body map[string]any) {
	input, _ := body["input"].([]any)
	if len(input) == 0 || body["store"] != false {
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"message":"Invalid request.","type":"invalid_request_error","param":null,"code":null}}`)
		return
	}
	last, _ := input[len(input)-1].(map[string]any)
	usage := `"usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":1024},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":256},"total_tokens":1500}`
	w.Header().Set("Content-Type", "application/json")
	if last["type"] == "message" {
		f.visits++
		args, _ := json.Marshal(fmt.Sprintf(`{"key":"attempt","value":%d}`, f.visits))
		fmt.Fprintf(w, `{"id":"resp_%d","object":"response","status":"completed","model":"gpt-5-2025-08-07","output":[`+
			`{"id":"rs_%d","type":"reasoning","summary":[],"encrypted_content":"enc-%d"},`+
			`{"id":"fc_%d","type":"function_call","status":"completed","call_id":"call_%d","name":"board_write","arguments":%s}],%s}`,
			f.visits, f.visits, f.visits, f.visits, f.visits, args, usage)
		return
	}
	want := fmt.Sprintf(`"encrypted_content":"enc-%d"`, f.visits)
	raw, _ := json.Marshal(input)
	if last["type"] != "function_call_output" || !strings.Contains(string(raw), want) {
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"message":"Item 'fc' of type 'function_call' was provided without its required 'reasoning' item.","type":"invalid_request_error","param":"input","code":null}}`)
		return
	}
	text, _ := json.Marshal(f.answers[min(f.visits-1, 1)])
	fmt.Fprintf(w, `{"id":"resp_x","object":"response","status":"completed","model":"gpt-5-2025-08-07","output":[`+
		`{"id":"rs_x","type":"reasoning","summary":[],"encrypted_content":"enc-x"},`+
		`{"id":"msg_x","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":%s,"annotations":[]}]}],%s}`, text, usage)
}

// chatStream answers at POST /chat/completions with stream: true, in
// chunks, the usage in a last chunk of its own.
func (f *wireModel) chatStream(t *testing.T, w http.ResponseWriter, body map[string]any) {
	so, _ := body["stream_options"].(map[string]any)
	if body["stream"] != true || so["include_usage"] != true {
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"message":"want a stream","type":"invalid_request_error","param":null,"code":null}}`)
		return
	}
	answer := f.answers[min(f.visits, 1)]
	f.visits++
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta, finish string) {
		fmt.Fprintf(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, finish)
		w.(http.Flusher).Flush()
	}
	chunk(`{"role":"assistant","content":""}`, "null")
	for len(answer) > 0 {
		n := min(len(answer), 40)
		c, _ := json.Marshal(map[string]string{"content": answer[:n]})
		chunk(string(c), "null")
		answer = answer[n:]
	}
	chunk(`{}`, `"stop"`)
	io.WriteString(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":300,"completion_tokens":90,"total_tokens":390,"prompt_tokens_details":{"cached_tokens":256}}}`+"\n\ndata: [DONE]\n\n")
}
