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
	"testing"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/engine"
	"github.com/rs/zerolog"
)

// llmRunPlan compiles src with the built-in types and runs it on an in-memory
// board. set may be nil: the engine then builds the agents itself.
func llmRunPlan(t *testing.T, src string, set *agents.Set) (*board.Board, error) {
	t.Helper()
	return llmRunPlanLog(t, src, set, zerolog.Nop())
}

func llmRunPlanLog(t *testing.T, src string, set *agents.Set, log zerolog.Logger) (*board.Board, error) {
	t.Helper()
	return runPlan(t, t.TempDir(), src, set, log)
}

// result returns the saved result of the last visit of label.
func llmSaved(t *testing.T, b *board.Board, label string) map[string]any {
	t.Helper()
	out, status, errText := saved(t, b, label)
	out["_status"], out["_error"] = status, errText
	return out
}

func llmCompileErr(t *testing.T, src string) string {
	t.Helper()
	_, err := engine.Compile("plan.yaml", []byte(src), Registry())
	if err == nil {
		t.Fatal("the plan compiled")
	}
	return err.Error()
}

const llmSchemaPlan = `
version: 1
agents:
  filler:
    provider: script
    responses:
      fill:
%s
steps:
  - label: fill
    type: llm
    agent: filler
    prompt: Describe the release.
    output: json
    schema:
      type: object
      properties:
        name: {type: string}
        count: {type: integer, minimum: 1}
      required: [name, count]
  - label: use
    type: command
    run: echo ${{ steps.fill.output.name }} x${{ steps.fill.output.count }}
`

func llmAnswers(list ...string) string {
	var b strings.Builder
	for _, a := range list {
		q, _ := json.Marshal(a)
		fmt.Fprintf(&b, "        - %s\n", q)
	}
	return b.String()
}

func TestLLMJSONSchema(t *testing.T) {
	tests := []struct {
		name    string
		answers []string
		wantOut string // the command's output
		wantErr string
		calls   float64
		reask   string // substring of the corrective re-ask
	}{
		{name: "fills the schema", answers: []string{`{"name": "v1.2", "count": 3}`}, wantOut: "v1.2 x3", calls: 1},
		{name: "fenced, with prose", answers: []string{"Here it is:\n```json\n{\"name\": \"v2\", \"count\": 1}\n```\nAnything else?"}, wantOut: "v2 x1", calls: 1},
		{name: "not JSON, re-ask fixes it", answers: []string{"Sure! The release is v3.", `{"name":"v3","count":2}`},
			wantOut: "v3 x2", calls: 2, reask: "the answer is not JSON"},
		{name: "wrong type, re-ask fixes it", answers: []string{`{"name":"v4","count":"two"}`, `{"name":"v4","count":2}`},
			wantOut: "v4 x2", calls: 2, reask: "at '/count': got string, want integer"},
		{name: "still wrong after the re-ask", answers: []string{`{"name":"v5"}`, `{"name":"v5","count":0}`},
			wantErr: "still not usable after a corrective re-ask: the JSON does not match the schema: at '/count': minimum: got 0, want 1", calls: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := llmRunPlan(t, fmt.Sprintf(llmSchemaPlan, llmAnswers(tc.answers...)), nil)
			fill := llmSaved(t, b, "fill")
			if fill["calls"] != tc.calls {
				t.Errorf("calls = %v, want %v", fill["calls"], tc.calls)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := llmSaved(t, b, "use")["output"]; got != tc.wantOut {
				t.Errorf("command output = %q, want %q", got, tc.wantOut)
			}
			if fill["model"] != "script" || fill["finish_reason"] != "stop" {
				t.Errorf("fill result = %v", fill)
			}
			if tc.reask != "" {
				users := b.Query(board.Filter{Section: "llm", Role: "user"})
				if len(users) != 2 || !strings.Contains(users[1].Content.(string), tc.reask) {
					t.Errorf("re-ask = %v, want it to quote %q", users, tc.reask)
				}
			}
		})
	}
}

func TestLLMToolWritesBoardForALaterStep(t *testing.T) {
	b, err := llmRunPlan(t, `
version: 1
agents:
  planner:
    provider: script
    board: {write: ["plan/*"], read: ["plan/*"]}
    responses:
      - tool_calls:
          - {name: board_write, args: {key: plan/steps, value: 3}}
          - {name: board_write, args: {key: secrets, value: x}}
      - Saved the plan.
steps:
  - label: think
    type: llm
    agent: planner
    prompt: Make a plan and save it.
    tools: [board]
  - label: read
    type: board
    op: read
    key: plan/steps
  - label: show
    type: command
    run: echo "steps=${{ board('plan/steps') }} found=${{ steps.read.found }}"
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := llmSaved(t, b, "show")["output"]; got != "steps=3 found=true" {
		t.Errorf("show = %q", got)
	}
	think := llmSaved(t, b, "think")
	if think["output"] != "Saved the plan." || think["calls"] != 2.0 {
		t.Errorf("think = %v", think)
	}
	e, _ := b.Get("plan/steps")
	if e.Author != "planner" || e.Label != "think" {
		t.Errorf("the key lacks provenance: %+v", e)
	}
	if _, ok := b.Get("secrets"); ok {
		t.Error("a write outside board.write patterns went through")
	}
	tools := b.Query(board.Filter{Section: "llm", Role: "tool"})
	if len(tools) != 2 || !strings.Contains(tools[1].Content.(string), `may not write key "secrets"`) || tools[1].Meta["is_error"] != true {
		t.Errorf("tool results on the board = %+v", tools)
	}
}

func TestLLMToolLoopIsBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 10; i++ {
		b.WriteString("      - tool_calls: [{name: board_list, args: {}}]\n")
	}
	_, err := llmRunPlan(t, `
version: 1
agents:
  loopy:
    provider: script
    responses:
`+b.String()+`
steps:
  - {label: spin, type: llm, agent: loopy, prompt: go, tools: [board]}
`, nil)
	if err == nil || !strings.Contains(err.Error(), "agent loopy still calls tools after 8 rounds") {
		t.Fatalf("err = %v", err)
	}
}

func TestLLMDiff(t *testing.T) {
	good := "I changed the constant.\n\n```diff\n--- a/main.go\n+++ b/main.go\n@@ -1,3 +1,3 @@\n package main\n-const n = 1\n+const n = 2\n \n```\nThat should do it."
	b, err := llmRunPlan(t, `
version: 1
agents:
  coder:
    provider: script
    responses: ["I would change the constant to 2.", `+llmJSONQuote(good)+`]
steps:
  - {label: gen, type: llm, agent: coder, prompt: Fix it, output: diff}
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := "--- a/main.go\n+++ b/main.go\n@@ -1,3 +1,3 @@\n package main\n-const n = 1\n+const n = 2\n \n"
	if got := llmSaved(t, b, "gen"); got["output"] != want || got["calls"] != 2.0 {
		t.Errorf("gen = %q", got)
	}
}

func llmJSONQuote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

func TestLLMLoadErrors(t *testing.T) {
	tests := []struct{ name, steps, want string }{
		{"unknown agent", `{label: a, type: llm, agent: codr, prompt: hi}`, `plan.yaml:5:34: unknown agent "codr" (agents: coder) (did you mean "coder"?)`},
		{"missing prompt", `{label: a, type: llm, agent: coder}`, `missing required field "prompt"`},
		{"schema without json", `{label: a, type: llm, agent: coder, prompt: hi, schema: {type: object}}`, `schema is only for output: json`},
		{"bad schema", "\n    label: a\n    type: llm\n    agent: coder\n    prompt: hi\n    output: json\n    schema:\n      type: object\n      properties:\n        n: {type: strin}",
			`plan.yaml:14:19: schema: at '/properties/n/type': value must be one of 'array'`},
		{"unknown tool set", `{label: a, type: llm, agent: coder, prompt: hi, tools: [boards]}`, `unknown tool set "boards" (available: board, spawn, memory) (did you mean "board"?)`},
		{"bad output", `{label: a, type: llm, agent: coder, prompt: hi, output: yaml}`, `output: "yaml" is not one of [text json diff edits]`},
		{"bad template", `{label: a, type: llm, agent: coder, prompt: "${{ vars.nope }}"}`, `nope`},
	}
	if got := llmCompileErr(t, "version: 1\nsteps:\n  - {label: a, type: llm, agent: coder, prompt: hi}\n"); !strings.Contains(got, `plan.yaml:3:34: unknown agent "coder": the plan has no agents`) {
		t.Errorf("an agent in a plan without agents:\n%s", got)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := llmCompileErr(t, "version: 1\nagents:\n  coder: {provider: script, responses: [x]}\nsteps:\n  - "+tc.steps+"\n")
			if !strings.Contains(got, tc.want) {
				t.Errorf("errors:\n%s\nwant %q", got, tc.want)
			}
		})
	}
}

// llmOpenAIFake answers Chat Completions requests in order and checks the key.
type llmOpenAIFake struct {
	srv     *httptest.Server
	mu      sync.Mutex
	answers []string
	bodies  []string
}

func newLLMOpenAIFake(t *testing.T, answers ...string) *llmOpenAIFake {
	f := &llmOpenAIFake{answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.bodies = append(f.bodies, string(body))
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-step-test" {
			w.WriteHeader(401)
			io.WriteString(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
			return
		}
		if len(f.answers) == 0 {
			w.WriteHeader(500)
			io.WriteString(w, `{"error":{"message":"no more","type":"server_error","param":null,"code":null}}`)
			return
		}
		a := f.answers[0]
		f.answers = f.answers[1:]
		if code, ok := strings.CutPrefix(a, "!"); ok { // "!429": an error status
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(map[string]int{"429": 429, "500": 500}[code])
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`)
			return
		}
		c, _ := json.Marshal(a)
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":20,"total_tokens":120}}`, c)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func llmOpenAIPlan(base string, extra string) string {
	return `
version: 1
vars: {topic: tests}
` + extra + `
agents:
  coder: {provider: openai, model: gpt-4o-mini, base_url: "` + base + `/v1"}
steps:
  - {label: one, type: llm, agent: coder, prompt: "Write about ${{ vars.topic }}", continue_on_error: true}
  - {label: two, type: llm, agent: coder, prompt: "More", system: "Be terse."}
`
}

func llmAgents(t *testing.T, src string, opt agents.Options) *agents.Set {
	t.Helper()
	prog, err := engine.Compile("plan.yaml", []byte(src), Registry())
	if err != nil {
		t.Fatal(err)
	}
	if opt.Getenv == nil {
		opt.Getenv = func(k string) string { return map[string]string{"OPENAI_API_KEY": "sk-step-test"}[k] }
	}
	opt.Sleep = func(context.Context, time.Duration) error { return nil }
	set, err := agents.New(prog.Plan, opt)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestLLMOpenAIThroughTheEngine(t *testing.T) {
	f := newLLMOpenAIFake(t, "first", "!429", "!500", "second")
	src := llmOpenAIPlan(f.srv.URL, "")
	var logs strings.Builder
	b, err := llmRunPlanLog(t, src, llmAgents(t, src, agents.Options{}), zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	two := llmSaved(t, b, "two")
	if two["output"] != "second" || two["model"] != "gpt-4o-mini-2024-07-18" || two["finish_reason"] != "stop" ||
		fmt.Sprint(two["usage"]) != "map[cost_usd:2.7e-05 input_tokens:100 output_tokens:20]" || two["calls"] != 1.0 || two["retries"] != 2.0 {
		t.Errorf("two = %v", two)
	}
	if n := strings.Count(logs.String(), `"step":"two","agent":"coder","visit":1,"provider":"openai","status":429`); n != 1 {
		t.Errorf("retry log lines:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), "sk-step-test") {
		t.Error("the key reached the logs")
	}
	if !strings.Contains(f.bodies[1], `{"role":"system","content":"Be terse."}`) || !strings.Contains(f.bodies[0], `Write about tests`) {
		t.Errorf("requests = %v", f.bodies)
	}
	if strings.Contains(llmBoardString(t, b), "sk-step-test") {
		t.Error("the key reached the board")
	}
}

func llmBoardString(t *testing.T, b *board.Board) string {
	out, err := json.Marshal(map[string]any{"entries": b.Entries(), "recordings": b.Recordings(), "steps": b.Steps()})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestLLMBudgetEndsTheRun(t *testing.T) {
	f := newLLMOpenAIFake(t, "first", "second")
	src := strings.Replace(llmOpenAIPlan(f.srv.URL, "limits: {max_tokens: 160}"), "model: gpt-4o-mini,", "model: gpt-4o-mini, max_tokens: 20,", 1)
	// `one` may use up to about 45 tokens and uses 120; `two` could use up
	// to 40 more, which could cross 160: it must not call, and
	// continue_on_error on a later step could not save the run either.
	b, err := llmRunPlan(t, src, llmAgents(t, src, agents.Options{}))
	var be *agents.BudgetError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "step two: limits.max_tokens 160: the next call (agent coder, model gpt-4o-mini) could use up to ") ||
		!strings.Contains(err.Error(), "and 120 are used: it was not started") {
		t.Fatalf("err = %v", err)
	}
	if len(f.bodies) != 1 {
		t.Errorf("%d calls reached the server", len(f.bodies))
	}
	if b.Run().Status != "failed" {
		t.Errorf("run status %s", b.Run().Status)
	}
}

type llmNoNetwork struct{ t *testing.T }

func (n llmNoNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("replay used the network: %s", r.URL)
	return nil, errors.New("no network")
}

func TestLLMReplay(t *testing.T) {
	f := newLLMOpenAIFake(t, "first", "second")
	src := llmOpenAIPlan(f.srv.URL, "")
	saved, err := llmRunPlan(t, src, llmAgents(t, src, agents.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	replay := func(src string) (*board.Board, error) {
		set := llmAgents(t, src, agents.Options{Replay: agents.FromRecordings(saved.Recordings()),
			Getenv: func(string) string { return "" }, HTTPClient: &http.Client{Transport: llmNoNetwork{t}}})
		return llmRunPlan(t, src, set)
	}
	b, err := replay(src)
	if err != nil {
		t.Fatal(err)
	}
	if llmSaved(t, b, "two")["output"] != "second" {
		t.Errorf("replayed answer = %v", llmSaved(t, b, "two"))
	}
	// A changed prompt stops the replay at that call, even under
	// continue_on_error, with both requests to compare.
	_, err = replay(strings.Replace(src, "Write about", "Write a poem about", 1))
	var d *agents.Divergence
	if !errors.As(err, &d) || d.Label != "one" || d.Call != 1 {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(string(d.Recorded), "Write about tests") || !strings.Contains(string(d.Now), "Write a poem about tests") {
		t.Errorf("divergence:\n%s\n%s", d.Recorded, d.Now)
	}
}

func TestLLMMissingKeyWithoutWiring(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	_, err := llmRunPlan(t, llmOpenAIPlan("http://127.0.0.1:1", ""), nil)
	if err == nil || !strings.Contains(err.Error(), "agent coder: OPENAI_API_KEY is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestOfflineExample(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	prog, err := engine.Load("../../examples/offline/plan.yaml", Registry())
	if err != nil {
		t.Fatal(err)
	}
	b := board.New(board.Run{ID: "example"})
	r := &engine.Runner{Prog: prog, Board: b, Log: zerolog.Nop(), Workdir: t.TempDir()}
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := "[high] Double submit creates duplicate invoices\nticket BUG-1042; the clerk said: Filed BUG-1042."
	if got := llmSaved(t, b, "report")["output"]; got != want {
		t.Errorf("report = %q, want %q", got, want)
	}
	if e, ok := b.Get("triage/current"); !ok || e.Author != "clerk" {
		t.Errorf("triage/current = %+v", e)
	}
}

func TestExtractJSON(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{`{"a":1}`, `{"a":1}`, ""},
		{"```json\n{\"a\": [1, 2]}\n```", `{"a":[1,2]}`, ""},
		{"```\n[true]\n```", `[true]`, ""},
		{"The answer is {\"a\": \"b\"} as requested.", `{"a":"b"}`, ""},
		{`"just a string"`, `"just a string"`, ""},
		{"no json here", "", "the answer is not JSON"},
		{"   ", "", "the answer is empty"},
		{`{"a": 1`, "", "the answer is not JSON: unexpected end of JSON input"},
	}
	for _, tc := range tests {
		v, err := extractJSON(tc.in)
		got, _ := json.Marshal(v)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("extractJSON(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("extractJSON(%q) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestExtractDiff(t *testing.T) {
	diff := "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n"
	tests := []struct{ in, want, err string }{
		{diff, diff, ""},
		{"Here:\n" + diff + "\nThis renames a to b.", diff, ""},
		{"```patch\n" + diff + "```", diff, ""},
		{"diff --git a/x.go b/x.go\nindex 1..2 100644\n" + diff, "diff --git a/x.go b/x.go\nindex 1..2 100644\n" + diff, ""},
		{"--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n", "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n", ""},
		{"First file:\n```diff\n" + diff + "```\nSecond:\n```diff\n--- a/y\n+++ b/y\n@@ -2 +2 @@\n-c\n+d\n```",
			diff + "--- a/y\n+++ b/y\n@@ -2 +2 @@\n-c\n+d\n", ""},
		{"--- x\n+++ x\n@@ ... @@\n ctx\nlost its space\n-a\n+b\n\nHope this helps.", "--- x\n+++ x\n@@ ... @@\n ctx\nlost its space\n-a\n+b\n", ""},
		{"I think you should change a to b.", "", "no unified diff found"},
		// Cut off in a second block: the first alone is part of the change.
		{"```diff\n" + diff + "```\nAnd y:\n```diff\n--- a/y\n+++ b/y\n@@ -1,3 +1,3 @@\n a\n-c", "", "never closed: your answer was cut off"},
		{"```diff\n" + diff + "```\nRun:\n```sh\ngo test ./...\n", diff, ""},
		{"--- a/x\n+++ b/x\nchanged a to b", "", "no @@"},
		{"--- a/x\n+++ b/x\n@@ -1 +1 @@\n a\n", "", "changes nothing"},
	}
	for _, tc := range tests {
		got, err := extractDiff(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("extractDiff(%q) err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("extractDiff(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}
