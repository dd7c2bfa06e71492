package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// countingOpenAI answers Chat Completions in the real wire format and
// keeps the last user message of every request it was sent.
type countingOpenAI struct {
	srv     *httptest.Server
	mu      sync.Mutex
	prompts []string
}

func newCountingOpenAI(t *testing.T) *countingOpenAI {
	f := &countingOpenAI{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) == 0 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`)
			return
		}
		f.mu.Lock()
		f.prompts = append(f.prompts, req.Messages[len(req.Messages)-1].Content)
		n := len(f.prompts)
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"answer %d"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, n, n)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *countingOpenAI) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.prompts...)
}

func fiveStepPlan(base, third string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: five\nagents:\n  a: {provider: openai, model: gpt-4o-mini, base_url: %q}\nsteps:\n", base+"/v1")
	for i, p := range []string{"one", "two", third, "four", "five"} {
		fmt.Fprintf(&b, "  - {label: s%d, type: llm, agent: a, prompt: %q}\n", i+1, "step "+p)
	}
	return b.String()
}

// Changing the third step's prompt makes exactly the calls of steps 3 to
// 5 live; steps 1 and 2 are answered from the recording.
func TestRunReuse(t *testing.T) {
	f := newCountingOpenAI(t)
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(fiveStepPlan(f.srv.URL, "three")), 0o644)
	env := []string{"PATH=" + os.Getenv("PATH"), "OPENAI_API_KEY=sk-test"}
	r := runEnv(t, wd, env, "run", plan)
	if r.code != 0 || len(f.seen()) != 5 {
		t.Fatalf("run: exit %d, %d calls: %s", r.code, len(f.seen()), r.stderr)
	}
	old := blackboardPath(t, r.stdout)

	// Unchanged: nothing is paid for.
	r = runEnv(t, wd, env, "run", plan, "--reuse", old)
	if r.code != 0 || len(f.seen()) != 5 || !strings.Contains(r.stderr, "reused 5 model calls (75 tokens) from the recording; 0 went live (0 tokens)") {
		t.Fatalf("unchanged: exit %d, %d calls: %s", r.code, len(f.seen()), r.stderr)
	}

	os.WriteFile(plan, []byte(fiveStepPlan(f.srv.URL, "three, changed")), 0o644)
	r = runEnv(t, wd, env, "run", plan, "--reuse", old)
	if r.code != 0 {
		t.Fatalf("changed: exit %d %s", r.code, r.stderr)
	}
	live := f.seen()[5:]
	if strings.Join(live, "|") != "step three, changed|step four|step five" {
		t.Errorf("live calls %q, want exactly those of steps 3 to 5", live)
	}
	if !strings.Contains(r.stderr, "reused 2 model calls (30 tokens) from the recording; 3 went live (45 tokens)") {
		t.Errorf("summary: %s", r.stderr)
	}
	data, _ := os.ReadFile(blackboardPath(t, r.stdout))
	var saved struct {
		Run struct {
			Reused struct {
				From         []string `json:"from"`
				ReusedCalls  int      `json:"reused_calls"`
				ReusedTokens int      `json:"reused_tokens"`
				LiveCalls    int      `json:"live_calls"`
				LiveTokens   int      `json:"live_tokens"`
			} `json:"reused"`
		} `json:"run"`
		Steps []struct {
			Result struct{ Output string }
		}
	}
	json.Unmarshal(data, &saved)
	u := saved.Run.Reused
	if u.ReusedCalls != 2 || u.ReusedTokens != 30 || u.LiveCalls != 3 || u.LiveTokens != 45 || len(u.From) != 1 {
		t.Errorf("run.reused in the file: %+v", u)
	}
	if len(saved.Steps) != 5 || saved.Steps[0].Result.Output != "answer 1" || saved.Steps[2].Result.Output != "answer 6" {
		t.Errorf("outputs: %+v", saved.Steps)
	}
	// The new run replays on its own, reused answers included.
	if r = runEnv(t, wd, env[:1], "replay", blackboardPath(t, r.stdout), "--offline"); r.code != 0 {
		t.Errorf("replay of the reusing run: exit %d %s", r.code, r.stderr)
	}
}

// --offline with --reuse takes command results from the recording too,
// wherever the command is: at the top, as a for_each item, in a for_each
// block's item, in a called plan (once run for real there: the step type
// was looked up by the plan's own labels only).
func TestRunReuseOffline(t *testing.T) {
	cases := []struct{ name, steps string }{
		{"top", `  - {label: c, type: command, run: "date +%s%N > stamp; cat stamp"}`},
		{"for_each item", `  - {label: c, type: command, for_each: '["a"]', run: "date +%s%N > stamp; cat stamp"}`},
		{"for_each group", `  - label: c
    for_each: '["a"]'
    parallel:
      - {label: d, type: command, run: "date +%s%N > stamp; cat stamp"}
      - {label: e, type: board, op: write, key: k, value: x}`},
		{"call", `  - {label: c, type: plan, plan: callee.yaml}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wd := t.TempDir()
			plan := filepath.Join(wd, "plan.yaml")
			os.WriteFile(plan, []byte("version: 1\nname: cmd\nsteps:\n"+tc.steps+"\n"), 0o644)
			os.WriteFile(filepath.Join(wd, "callee.yaml"), []byte("version: 1\nname: callee\nsteps:\n  - {label: d, type: command, run: \"date +%s%N > stamp; cat stamp\"}\n"), 0o644)
			r := runCLI(t, wd, "run", plan, "-q")
			if r.code != 0 {
				t.Fatal(r.stderr)
			}
			old := blackboardPath(t, r.stdout)
			os.Remove(filepath.Join(wd, "stamp"))
			r = runCLI(t, wd, "run", plan, "-q", "--reuse", old, "--offline")
			if r.code != 0 {
				t.Fatal(r.stderr)
			}
			if _, err := os.Stat(filepath.Join(wd, "stamp")); err == nil {
				t.Error("--offline ran the command")
			}
			if r = runCLI(t, wd, "run", plan, "-q", "--offline"); r.code != 2 || !strings.Contains(r.stderr, "--reuse") {
				t.Errorf("--offline alone: exit %d %s", r.code, r.stderr)
			}
		})
	}
}
