package temporal

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/planrunner/runner/board"
	"go.temporal.io/sdk/testsuite"
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
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	store := Store{Dir: t.TempDir()}
	Register(env, &Workflow{Store: store}, &Activities{Store: store})
	env.SetTestTimeout(time.Minute)
	env.SetWorkerOptions(workerOptions)
	run := newRun(t, src, t.TempDir())
	run.Agents = map[string]map[string]string{"bot": {"provider": "openai", "model": "gpt-x", "base_url": srv.URL + "/v1"}}
	env.ExecuteWorkflow(WorkflowName, Input{Run: run})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out Output
	env.GetWorkflowResult(&out)
	b, err := LoadBoard(store, out.Head)
	if err != nil {
		t.Fatal(err)
	}
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
