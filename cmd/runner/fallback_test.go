package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/planrunner/runner/internal/replay"
)

// A fake Anthropic server that answers 529 (overloaded) every
// time for the first agent; its fallback, on an OpenAI-compatible server,
// answers. The recording says which agent answered and why, the run
// summary shows each agent's spend, and the saved run replays offline.
func TestFallbackAgentTakesOverAndReplays(t *testing.T) {
	var overloaded, answered atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/messages":
			overloaded.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("retry-after", "0")
			w.WriteHeader(529)
			fmt.Fprint(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_011"}`)
		case "/v1/chat/completions":
			answered.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"id":"chatcmpl-9","object":"chat.completion","model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"retries help"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1000,"completion_tokens":200,"total_tokens":1200}}`)
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	wd := t.TempDir()
	plan := filepath.Join(wd, "plan.yaml")
	os.WriteFile(plan, []byte(`version: 1
agents:
  primary: {provider: anthropic, model: claude-sonnet-4-5, max_tokens: 100, base_url: "`+srv.URL+`", fallback: [backup]}
  backup: {provider: openai, model: gpt-4o-mini, max_tokens: 100, base_url: "`+srv.URL+`/v1"}
steps:
  - {label: ask, type: llm, agent: primary, prompt: "Why retry?"}
  - {label: show, type: command, run: "echo ${{ steps.ask.agent }}: ${{ steps.ask.output }}"}
`), 0o644)
	env := []string{"PATH=" + os.Getenv("PATH"), "ANTHROPIC_API_KEY=sk-ant-test", "OPENAI_API_KEY=sk-test"}
	r := runEnv(t, wd, env, "run", plan, "--log-format", "console") // the console summary
	if r.code != 0 {
		t.Fatalf("run: exit %d %s", r.code, r.stderr)
	}
	if overloaded.Load() != 6 || answered.Load() != 1 {
		t.Errorf("%d calls to the overloaded server (want 1 + 5 retries), %d to the fallback", overloaded.Load(), answered.Load())
	}
	// gpt-4o-mini: 1000 input tokens at $0.15/M, 200 output at $0.60/M.
	if !strings.Contains(r.stderr, "agent backup: 1 calls, 1000 input + 200 output tokens, $0.00027\n") || strings.Contains(r.stderr, "  agent primary:") {
		t.Errorf("run summary:\n%s", r.stderr)
	}
	recorded := blackboardPath(t, r.stdout)
	var saved struct {
		Recordings []struct {
			Agent    string `json:"agent"`
			Response struct {
				FailedOver []struct{ Agent, Error string } `json:"failed_over"`
			} `json:"response"`
		} `json:"recordings"`
		Steps []struct {
			Label  string         `json:"label"`
			Result map[string]any `json:"result"`
		} `json:"steps"`
	}
	data, _ := os.ReadFile(recorded)
	if err := json.Unmarshal(data, &saved); err != nil {
		t.Fatal(err)
	}
	if len(saved.Recordings) != 1 || saved.Recordings[0].Agent != "backup" {
		t.Fatalf("recordings: %+v", saved.Recordings)
	}
	fo := saved.Recordings[0].Response.FailedOver
	if len(fo) != 1 || fo[0].Agent != "primary" || !strings.Contains(fo[0].Error, "anthropic: 529 overloaded_error: Overloaded (after 5 retries)") {
		t.Errorf("failed_over = %+v", fo)
	}
	if res := saved.Steps[0].Result; res["agent"] != "backup" || res["output"] != "retries help" {
		t.Errorf("ask = %v", res)
	}
	if strings.Contains(string(data), "sk-ant-test") || strings.Contains(string(data), "sk-test") {
		t.Error("a key reached the board")
	}

	srv.Close()
	out := filepath.Join(wd, "replay.json")
	r = runEnv(t, t.TempDir(), []string{"PATH=" + os.Getenv("PATH")}, "replay", recorded, "--offline", "--out", out)
	if r.code != 0 {
		t.Fatalf("replay: exit %d %s", r.code, r.stderr)
	}
	if a, b := normalBoard(t, recorded), normalBoard(t, out); a != b {
		t.Errorf("replayed board differs:\n%s", replay.UnifiedDiff("recorded", "replayed", a, b))
	}
}
