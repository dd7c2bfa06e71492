package temporal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/planrunner/runner/internal/board"
)

// `--agent` overrides on Temporal: the run's overrides (run.agents) reach
// the workers, which build the agent from the overridden plan: here a
// script agent moved to an OpenAI-compatible server (a fake speaking the
// chat completions wire format), whose answer the next step sees.
func TestAgentOverridesReachTheWorkers(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, "bad request "+r.URL.Path, 400)
			return
		}
		var req struct{ Model string }
		json.NewDecoder(r.Body).Decode(&req)
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"from the server"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}`, req.Model)
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "sk-test")
	src := `
version: 1
agents:
  bot: {provider: script, model: canned, responses: ["from the plan"]}
steps:
  - {label: ask, type: llm, agent: bot, prompt: "Say something"}
  - {label: show, type: command, run: "echo got: ${{ steps.ask.output }}"}
`
	run := newRun(t, src, t.TempDir())
	run.Agents = map[string]map[string]string{"bot": {"provider": "openai", "model": "gpt-x", "base_url": srv.URL + "/v1"}}
	b, out := newLiveEnv(t).runInput(Input{Run: run})
	if out.Status != "succeeded" || !strings.Contains(string(stepOf(t, b, "show").Result), "got: from the server") {
		t.Fatalf("run %s %s; show: %s", out.Status, out.Error, stepOf(t, b, "show").Result)
	}
	if calls.Load() != 1 {
		t.Errorf("%d calls to the server; want 1", calls.Load())
	}
	var rec board.Recording
	for _, r := range b.Recordings() {
		if r.Kind == "llm" {
			rec = r
		}
	}
	if !strings.Contains(string(rec.Request), `"gpt-x"`) {
		t.Errorf("the recorded request does not name the overridden model: %s", rec.Request)
	}
	if b.Run().Agents["bot"]["provider"] != "openai" {
		t.Errorf("run.agents = %v; want the overrides kept", b.Run().Agents)
	}
}

// --reuse on Temporal: model answers come from an earlier run's recording
// while the requests match; from the first that differs every call goes
// live, also a later one whose request matches again; run.reused counts
// both, read from the recordings (each worker saw only its own calls).
func TestReuseOnTemporal(t *testing.T) {
	plan := func(second string) string {
		return `
version: 1
agents:
  bot: {provider: script, model: canned, responses: ["one", "two", "three", "four", "five", "six"]}
steps:
  - {label: a, type: llm, agent: bot, prompt: "first"}
  - {label: b, type: llm, agent: bot, prompt: "` + second + `"}
  - {label: c, type: llm, agent: bot, prompt: "third"}
`
	}
	run := func(src string, reuse []Reused, store Store) *board.Board {
		b, _ := newLiveEnvIn(t, store).runInput(Input{Run: newRun(t, src, t.TempDir()), Reuse: reuse})
		return b
	}
	store := DirStore{Dir: t.TempDir()}
	old := filepath.Join(t.TempDir(), "old.json")
	first := run(plan("second"), nil, store)
	if first.Run().Reused != nil {
		t.Errorf("a run without --reuse says it reused: %+v", first.Run().Reused)
	}
	if _, err := Save(store, mustHead(t, store, first), old); err != nil {
		t.Fatal(err)
	}
	reuse, err := PutReused(store, []string{old})
	if err != nil {
		t.Fatal(err)
	}
	b := run(plan("second, changed"), reuse, store)
	u := b.Run().Reused
	if u == nil || u.ReusedCalls != 1 || u.LiveCalls != 2 || len(u.From) != 1 || u.From[0] != old {
		t.Fatalf("run.reused = %+v; want 1 reused (a), 2 live (b changed, c after it), from %s", u, old)
	}
	if got := stepOf(t, b, "a").Result; !strings.Contains(string(got), `"one"`) {
		t.Errorf("a: %s; want the recorded answer", got)
	}
	if _, err := PutReused(store, []string{filepath.Join(t.TempDir(), "missing.json")}); err == nil {
		t.Error("a missing --reuse file was taken")
	}
}

// mustHead saves b as one chunk and returns its name.
func mustHead(t *testing.T, store Store, b *board.Board) string {
	run := b.Run()
	head, err := putChunk(store, &chunk{Run: &run, Entries: b.Entries(), Steps: b.Steps(), Recordings: b.Recordings()})
	if err != nil {
		t.Fatal(err)
	}
	return head
}
