package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/board"
	"github.com/planrunner/runner/internal/plans"
	"github.com/rs/zerolog"
)

func TestNewChecksKeysBeforeTheRun(t *testing.T) {
	tests := []struct {
		name    string
		agents  []*plans.Agent
		env     map[string]string
		wantErr []string
	}{
		{name: "openai without a key", agents: []*plans.Agent{{Name: "coder", Provider: "openai", Model: "m"}},
			wantErr: []string{"agent coder: OPENAI_API_KEY is not set"}},
		{name: "anthropic without a key", agents: []*plans.Agent{{Name: "critic", Provider: "anthropic", Model: "m"}},
			wantErr: []string{"agent critic: ANTHROPIC_API_KEY is not set"}},
		{name: "api_key_env renames the variable", agents: []*plans.Agent{{Name: "local", Provider: "openai", Model: "m", APIKeyEnv: "OLLAMA_KEY"}},
			env: map[string]string{"OPENAI_API_KEY": "x"}, wantErr: []string{"agent local: OLLAMA_KEY is not set"}},
		{name: "every agent is reported", agents: []*plans.Agent{{Name: "a", Provider: "openai", Model: "m"}, {Name: "b", Provider: "anthropic", Model: "m"}},
			wantErr: []string{"agent a: OPENAI_API_KEY", "agent b: ANTHROPIC_API_KEY"}},
		{name: "keys present", agents: []*plans.Agent{{Name: "a", Provider: "openai", Model: "m"}, {Name: "b", Provider: "anthropic", Model: "m", APIKeyEnv: "MINE"}},
			env: map[string]string{"OPENAI_API_KEY": "k1", "MINE": "k2"}},
		{name: "script needs none", agents: []*plans.Agent{{Name: "s", Provider: "script", Responses: []plans.Response{{Text: "x"}}}}},
		{name: "bad base_url", agents: []*plans.Agent{{Name: "a", Provider: "openai", Model: "m", BaseURL: "localhost:11434/v1"}},
			env: map[string]string{"OPENAI_API_KEY": "k"}, wantErr: []string{`agent a: base_url "localhost:11434/v1" is not an http(s) URL`}},
		{name: "missing responses file", agents: []*plans.Agent{{Name: "s", Provider: "script", ResponsesFile: "nope.yaml"}},
			wantErr: []string{"agent s: responses file nope.yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(onePlan(tc.agents...), Options{Getenv: func(k string) string { return tc.env[k] }})
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestReplayNeedsNoKey(t *testing.T) {
	_, err := New(onePlan(&plans.Agent{Name: "a", Provider: "openai", Model: "m"}),
		Options{Getenv: func(string) string { return "" }, Replay: FromRecordings(nil)})
	if err != nil {
		t.Fatal(err)
	}
}

func TestKeysNeverLeak(t *testing.T) {
	// A badly behaved server echoes the key in its error and in its answer
	// headers; the key must still reach neither the board nor the logs.
	echo := oaErr("Incorrect API key provided: "+testKey, "invalid_request_error", "invalid_api_key")
	f := newFake(t, openAIValidate,
		answer{status: 500, body: oaErr("upstream said "+testKey, "server_error", "")},
		answer{body: oaAnswer("ok", true)},
		answer{status: 403, body: echo})
	h := newHarness(t, onePlan(openAIAgent(f.srv.URL)), nil)
	ss := h.session(t, "ask", "coder")
	if _, err := ss.Send(context.Background(), user("hi")); err != nil {
		t.Fatal(err)
	}
	_, err := ss.Send(context.Background(), user("again"))
	if err == nil || strings.Contains(err.Error(), testKey) || !strings.Contains(err.Error(), "***") {
		t.Fatalf("error = %v", err)
	}
	for what, s := range map[string]string{"logs": h.logs.String(), "board": boardJSON(t, h.board)} {
		if strings.Contains(s, testKey) || strings.Contains(s, "Bearer") {
			t.Errorf("the key leaked into the %s: %s", what, s)
		}
	}
	if !strings.Contains(h.logs.String(), "model call failed, retrying") {
		t.Errorf("the retry was not logged: %s", h.logs)
	}
}

func TestConversationOnTheBoard(t *testing.T) {
	f := newFake(t, openAIValidate, answer{body: oaToolAnswer}, answer{body: oaAnswer("done", true)})
	h := newHarness(t, onePlan(openAIAgent(f.srv.URL)), nil)
	ss, err := h.set.Session(h.board, "plan", 2, "coder")
	if err != nil {
		t.Fatal(err)
	}
	ss.Tools = BoardTools
	resp, err := ss.Send(context.Background(), user("Plan it"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ss.Send(context.Background(), ss.RunTool(resp.ToolCalls[0])); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range h.board.Query(board.Filter{Section: Section}) {
		if e.Author != "coder" || e.Label != "plan" || e.Meta["visit"] != 2 {
			t.Errorf("entry lacks provenance: %+v", e)
		}
		got = append(got, e.Role+"#"+jsonStr(e.Meta["call"]))
	}
	if strings.Join(got, " ") != "user#1 assistant#1 tool#2 assistant#2" {
		t.Errorf("conversation entries = %v", got)
	}
	last := h.board.Query(board.Filter{Section: Section, Limit: 1})[0]
	if last.Content != "done" || last.Meta["model"] != "gpt-4o-mini-2024-07-18" || jsonStr(last.Meta["usage"]) != `{"input_tokens":12,"output_tokens":3,"cache_read_input_tokens":2}` {
		t.Errorf("answer entry = %+v", last)
	}
	recs := h.board.Recordings()
	if len(recs) != 2 {
		t.Fatalf("%d recordings", len(recs))
	}
	for i, r := range recs {
		if r.Label != "plan" || r.Visit != 2 || r.Call != i+1 || r.Kind != "llm" || r.Agent != "coder" {
			t.Errorf("recording %d = %+v", i, r)
		}
		// The saved request re-hashes to the recorded hash, even after the
		// board's JSON round trip.
		var req Request
		saved, _ := json.Marshal(r)
		var back board.Recording
		json.Unmarshal(saved, &back)
		if err := json.Unmarshal(back.Request, &req); err != nil {
			t.Fatal(err)
		}
		if _, sum, _ := req.Canonical(); sum != r.RequestSHA256 {
			t.Errorf("recording %d: request re-hashes to %s, recorded %s", i, sum, r.RequestSHA256)
		}
	}
	var req Request
	json.Unmarshal(recs[1].Request, &req)
	if req.System != "Be brief." || len(req.Messages) != 3 || len(req.Tools) != len(BoardTools) || req.MaxTokens != 256 || *req.Temperature != 0 {
		t.Errorf("recorded request = %s", recs[1].Request)
	}
	if !strings.Contains(string(recs[0].Response), `"tool_calls":[{"id":"call_abc","name":"board_write"`) {
		t.Errorf("recorded response = %s", recs[0].Response)
	}
	st := ss.Stats()
	if st.Calls != 2 || st.Usage.Total() != 75 || st.Model != "gpt-4o-mini-2024-07-18" || st.FinishReason != "stop" {
		t.Errorf("stats = %+v", st)
	}
}

func TestCanonicalHash(t *testing.T) {
	temp := 0.2
	base := func() *Request {
		return &Request{Model: "m", System: "s", Messages: []Message{user("hi")}, Temperature: &temp,
			Schema: json.RawMessage(`{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}`)}
	}
	_, h1, _ := base().Canonical()
	r := base()
	r.Schema = json.RawMessage(`{ "properties": {"a": {"type": "string"}}, "required": ["a"], "type": "object" }`)
	if _, h2, _ := r.Canonical(); h2 != h1 {
		t.Error("the same schema written differently changed the hash")
	}
	for name, change := range map[string]func(*Request){
		"prompt":      func(r *Request) { r.Messages[0].Content = "hello" },
		"system":      func(r *Request) { r.System = "t" },
		"model":       func(r *Request) { r.Model = "n" },
		"temperature": func(r *Request) { r.Temperature = nil },
		"tools":       func(r *Request) { r.Tools = BoardTools[:1] },
		"max_tokens":  func(r *Request) { r.MaxTokens = 9 },
	} {
		r := base()
		change(r)
		if _, h, _ := r.Canonical(); h == h1 {
			t.Errorf("changing the %s kept the hash", name)
		}
	}
}

// recordRun makes two calls of step ask against a fake server and returns
// the recordings.
func recordRun(t *testing.T) []board.Recording {
	f := newFake(t, openAIValidate, answer{body: oaAnswer("one", true)}, answer{body: oaAnswer("two", true)})
	h := newHarness(t, onePlan(openAIAgent(f.srv.URL)), nil)
	ss := h.session(t, "ask", "coder")
	for _, q := range []string{"first", "second"} {
		if _, err := ss.Send(context.Background(), user(q)); err != nil {
			t.Fatal(err)
		}
	}
	return h.board.Recordings()
}

type noNetwork struct{ t *testing.T }

func (n noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("replay used the network: %s %s", r.Method, r.URL)
	return nil, errors.New("no network in replay")
}

func TestReplay(t *testing.T) {
	recs := recordRun(t)
	tests := []struct {
		name      string
		questions []string
		wantDiv   int // the call that diverges (0: none)
		recorded  bool
	}{
		{name: "same prompts are answered from the recording", questions: []string{"first", "second"}},
		{name: "a changed prompt diverges", questions: []string{"first", "SECOND"}, wantDiv: 2, recorded: true},
		{name: "an extra call diverges", questions: []string{"first", "second", "third"}, wantDiv: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, onePlan(openAIAgent("http://127.0.0.1:1")), func(o *Options) {
				o.Replay = FromRecordings(recs)
				o.Getenv = func(string) string { return "" }
				o.HTTPClient = &http.Client{Transport: noNetwork{t}}
			})
			ss := h.session(t, "ask", "coder")
			for i, q := range tc.questions {
				resp, err := ss.Send(context.Background(), user(q))
				if i+1 == tc.wantDiv {
					var d *Divergence
					if !errors.As(err, &d) {
						t.Fatalf("call %d: err = %v, want a Divergence", i+1, err)
					}
					if d.Label != "ask" || d.Visit != 1 || d.Call != i+1 || (d.Recorded != nil) != tc.recorded || d.Now == nil {
						t.Errorf("divergence = %+v", d)
					}
					if tc.recorded && (!strings.Contains(string(d.Recorded), `"second"`) || !strings.Contains(string(d.Now), `"SECOND"`)) {
						t.Errorf("divergence does not show both prompts:\n%s\n%s", d.Recorded, d.Now)
					}
					return
				}
				if err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				if want := []string{"one", "two"}[i]; resp.Text != want {
					t.Errorf("call %d answered %q, want %q", i+1, resp.Text, want)
				}
			}
			if got := h.board.Recordings(); len(got) != len(recs) || got[1].RequestSHA256 != recs[1].RequestSHA256 {
				t.Errorf("replay should record the same exchanges")
			}
		})
	}
}

func TestBudget(t *testing.T) {
	answers := []answer{{body: oaAnswer("a", true)}, {body: oaAnswer("b", true)}, {body: oaAnswer("c", true)}}
	f := newFake(t, openAIValidate, answers...)
	spec := openAIAgent(f.srv.URL)
	spec.MaxTokens = 10
	plan := onePlan(spec)
	// Each answer uses 15 tokens. A call is let through only when the
	// tokens used plus its most (input estimate + max_tokens 10) fit.
	plan.Limits.MaxTokens = 75
	h := newHarness(t, plan, nil)
	ss := h.session(t, "ask", "coder")
	for i := 0; i < 2; i++ {
		if _, err := ss.Send(context.Background(), user("q")); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	_, err := ss.Send(context.Background(), user("q"))
	var be *BudgetError
	if !errors.As(err, &be) || be.Used != 30 || be.Output != 10 || 30+be.Input+be.Output <= 75 ||
		!strings.HasPrefix(err.Error(), "limits.max_tokens 75: the next call (agent coder, model gpt-4o-mini) could use up to ") ||
		!strings.HasSuffix(err.Error(), "and 30 are used: it was not started") {
		t.Fatalf("err = %v", err)
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("%d requests reached the server, want 2", n)
	}

	// A resumed run continues the count from the board's recordings.
	plan.Limits.MaxTokens = 30
	h2 := newHarness(t, plan, nil)
	h2.board = h.board
	ss2, _ := h2.set.Session(h.board, "next", 1, "coder")
	if _, err := ss2.Send(context.Background(), user("q")); !errors.As(err, &be) || be.Used != 30 || err.Error() != "limits.max_tokens 30 reached: 30 tokens used" {
		t.Fatalf("after resume: err = %v", err)
	}
}

func TestCallNumbersContinueAcrossAttempts(t *testing.T) {
	// A step retried within one visit keeps numbering its calls, so that
	// (label, visit, call) stays unique for replay.
	plan := onePlan(&plans.Agent{Name: "s", Provider: "script", Responses: []plans.Response{{Text: "1"}, {Text: "2"}}})
	h := newHarness(t, plan, nil)
	for attempt := 0; attempt < 2; attempt++ {
		ss := h.session(t, "ask", "s")
		if _, err := ss.Send(context.Background(), user("q")); err != nil {
			t.Fatal(err)
		}
	}
	recs := h.board.Recordings()
	if recs[0].Call != 1 || recs[1].Call != 2 {
		t.Errorf("calls = %d, %d", recs[0].Call, recs[1].Call)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const limit = 2 * time.Minute
	day := 24 * time.Hour
	tests := []struct {
		header      map[string]string
		wait, asked time.Duration
		ok          bool
	}{
		{map[string]string{"Retry-After": "3"}, 3 * time.Second, 3 * time.Second, true},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, 500 * time.Millisecond, true},
		{map[string]string{"Retry-After": now.Add(10 * time.Second).Format(http.TimeFormat)}, 10 * time.Second, 10 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-10 * time.Second).Format(http.TimeFormat)}, 0, 0, true},
		{map[string]string{"Retry-After": now.Add(1000 * time.Hour).Format(http.TimeFormat)}, limit, day, true},
		{map[string]string{"retry-after-ms": "250"}, 250 * time.Millisecond, 250 * time.Millisecond, true},
		// Huge values clamp; they used to overflow a Duration to no wait.
		{map[string]string{"retry-after-ms": "1e300"}, limit, day, true},
		{map[string]string{"Retry-After": "1e300"}, limit, day, true},
		{map[string]string{"Retry-After": "Inf"}, limit, day, true},
		{map[string]string{"Retry-After": "3600"}, limit, time.Hour, true},
		// Not a wait: ignored (backoff applies), or the other header is used.
		{map[string]string{"retry-after-ms": "NaN", "Retry-After": "2"}, 2 * time.Second, 2 * time.Second, true},
		{map[string]string{"retry-after-ms": "-5"}, 0, 0, false},
		{map[string]string{"Retry-After": "NaN"}, 0, 0, false},
		{map[string]string{"Retry-After": "soon"}, 0, 0, false},
		{map[string]string{"Retry-After": "-4"}, 0, 0, false},
		{nil, 0, 0, false},
	}
	for _, tc := range tests {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		wait, asked, ok := retryAfter(h, now, limit)
		if wait != tc.wait || asked != tc.asked || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %s, %s, %v; want %s, %s, %v", tc.header, wait, asked, ok, tc.wait, tc.asked, tc.ok)
		}
	}
	// A server asking for an hour waits the agent's timeout at most (or
	// MaxRetryAfter, when lower), and the clamp is logged.
	var logs bytes.Buffer
	tr := &transport{retry: Retry{MaxRetryAfter: time.Minute}.withDefaults(), jitter: func() float64 { return 0 }}
	h := http.Header{}
	h.Set("Retry-After", "3600")
	x := &exchange{provider: "openai", timeout: 20 * time.Second, log: zerolog.New(&logs)}
	if d := tr.backoff(0, h, x); d != 20*time.Second {
		t.Errorf("wait clamped to the agent's timeout = %s", d)
	}
	if !strings.Contains(logs.String(), "clamped") || !strings.Contains(logs.String(), `"asked_ms":3600000`) {
		t.Errorf("the clamp was not logged: %s", logs.String())
	}
	x.timeout = time.Hour
	if d := tr.backoff(0, h, x); d != time.Minute {
		t.Errorf("wait clamped to MaxRetryAfter = %s", d)
	}
}

func TestUnknownAgent(t *testing.T) {
	h := newHarness(t, onePlan(&plans.Agent{Name: "coder", Provider: "script", Responses: []plans.Response{{Text: "x"}}}), nil)
	_, err := h.set.Session(h.board, "x", 1, "codr")
	if err == nil || !strings.Contains(err.Error(), `unknown agent "codr"`) || !strings.Contains(err.Error(), `did you mean "coder"`) {
		t.Errorf("err = %v", err)
	}
}

func TestFailedCallLeavesItsNumber(t *testing.T) {
	// Attempt 1 of a step fails on the network, attempt 2 succeeds: the
	// recording is call 1, so a replay (where attempt 1 gets that answer)
	// lines up.
	f := newFake(t, openAIValidate, answer{status: 400, body: oaErr("bad", "invalid_request_error", "")}, answer{body: oaAnswer("ok", false)})
	h := newHarness(t, onePlan(openAIAgent(f.srv.URL)), nil)
	if _, err := h.session(t, "ask", "coder").Send(context.Background(), user("q")); err == nil {
		t.Fatal("want the 400")
	}
	if _, err := h.session(t, "ask", "coder").Send(context.Background(), user("q")); err != nil {
		t.Fatal(err)
	}
	if recs := h.board.Recordings(); len(recs) != 1 || recs[0].Call != 1 {
		t.Errorf("recordings = %+v", recs)
	}
}

// A recorded call's cost: as recorded, else at its model's price; not
// known for an unknown model or a recording that is not a model call.
func TestRecordingCost(t *testing.T) {
	cases := []struct {
		kind, resp string
		want       float64
		ok         bool
	}{
		{KindLLM, `{"model":"m1","cost_usd":0.25,"usage":{"input_tokens":1}}`, 0.25, true},
		{KindLLM, `{"model":"gpt-4o-mini","usage":{"input_tokens":1000000}}`, 0.15, true},
		{KindLLM, `{"model":"m-unknown","usage":{"input_tokens":1000000}}`, 0, false},
		{"input", `{"answer":{}}`, 0, false},
		{KindLLM, `not json`, 0, false},
	}
	for _, c := range cases {
		got, ok := RecordingCost(board.Recording{Kind: c.kind, Response: json.RawMessage(c.resp)})
		if ok != c.ok || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("RecordingCost(%s) = %v, %v; want %v, %v", c.resp, got, ok, c.want, c.ok)
		}
	}
}
