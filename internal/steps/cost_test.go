package steps

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/planrunner/runner/internal/agents"
	"github.com/planrunner/runner/internal/engine"
)

// A run whose limits.max_cost_usd is below what the next call
// could cost stops before that call, saying so; costs appear per step and
// per agent.
func TestMaxCostStopsBeforeTheCall(t *testing.T) {
	f := newLLMOpenAIFake(t, "first", "second", "third")
	// $1000 and $2000 per million tokens: each answer (100 in, 20 out)
	// costs $0.14; a call could cost up to ~$0.03 of input and $0.20 of
	// answer (max_tokens 100).
	src := `version: 1
limits: {max_cost_usd: 0.5}
agents:
  coder: {provider: openai, model: gpt-4o-mini, max_tokens: 100, price: {input: 1000, output: 2000}, base_url: "` + f.srv.URL + `/v1"}
steps:
  - {label: one, type: llm, agent: coder, prompt: "Write about tests"}
  - {label: two, type: llm, agent: coder, prompt: "More"}
  - {label: three, type: llm, agent: coder, prompt: "Even more", continue_on_error: true}
  - {label: four, type: command, run: "echo never"}
`
	set := llmAgents(t, src, agents.Options{})
	b, err := llmRunPlan(t, src, set)
	var be *agents.BudgetError
	if !errors.As(err, &be) || !strings.HasPrefix(err.Error(), "step three: limits.max_cost_usd $0.50: the next call (agent coder, model gpt-4o-mini) could use up to ") ||
		!strings.HasSuffix(err.Error(), "and $0.28 is spent: it was not started") || !strings.Contains(err.Error(), "an answer of up to 100), costing up to $0.2") {
		t.Fatalf("err = %v", err)
	}
	if len(f.bodies) != 2 {
		t.Errorf("%d calls reached the server, want 2", len(f.bodies))
	}
	for _, label := range []string{"one", "two"} {
		if u := llmSaved(t, b, label)["usage"].(map[string]any); u["cost_usd"] != 0.14 {
			t.Errorf("step %s: usage %v, want cost_usd 0.14", label, u)
		}
	}
	if b.Run().Status != "failed" {
		t.Errorf("run status %s", b.Run().Status)
	}
	spend := set.Spend(b)
	if len(spend) != 1 || spend[0] != (agents.AgentSpend{Agent: "coder", Calls: 2, InputTokens: 200, OutputTokens: 40, CostUSD: 0.28, PriceKnown: true}) {
		t.Errorf("spend = %+v", spend)
	}
}

func TestLimitsNeedBoundsAndPrices(t *testing.T) {
	src := `version: 1
limits: {max_cost_usd: 1}
agents:
  local: {provider: openai, model: qwen2.5-coder, base_url: "http://127.0.0.1:1/v1"}
  priced: {provider: openai, model: qwen2.5-coder, max_tokens: 10, price: {input: 0, output: 0}, base_url: "http://127.0.0.1:1/v1"}
  known: {provider: anthropic, model: claude-sonnet-4-5-20250929}
steps:
  - {label: one, type: llm, agent: local, prompt: "x"}
`
	prog := llmProg(t, src)
	t.Setenv("XDG_CONFIG_HOME", "/cfg") // where the message says a prices file goes
	_, err := agents.New(prog.Plan, agents.Options{Getenv: func(string) string { return "k" }})
	want := `agent local: limits.max_cost_usd needs max_tokens on this agent: the most model "qwen2.5-coder" may answer is not known, so its calls could not be checked against the limit
agent local: limits.max_cost_usd needs the price of model "qwen2.5-coder", which runner's prices (of ` + agents.PricesDate() + `) do not have; add it, in US dollars per million tokens, to the agent in the plan:
    agents:
      local:
        price: {input: USD, output: USD}
  or, for every plan, to /cfg/runner/prices.yaml:
    models:
      qwen2.5-coder: {input: USD, output: USD}`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func llmProg(t *testing.T, src string) *engine.Program {
	t.Helper()
	prog, err := engine.Compile("plan.yaml", []byte(src), Registry())
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// Parallel calls hold their most while they run: two children of a
// parallel group whose calls could each use ~1,000 tokens, under a limit
// of 1,500, cannot both start, even though neither has used anything yet.
func TestParallelCallsCannotCrossALimitTogether(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		// Still running when the sibling asks, however slow the machine:
		// the answer waits until the refusal ends the run (or 10s).
		select {
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`)
	}))
	defer srv.Close()
	src := `version: 1
limits: {max_tokens: 1500}
agents:
  coder: {provider: openai, model: gpt-4o-mini, max_tokens: 1000, base_url: "` + srv.URL + `/v1"}
steps:
  - label: both
    parallel:
      - {label: a, type: llm, agent: coder, prompt: "one"}
      - {label: b, type: llm, agent: coder, prompt: "two"}
`
	_, err := llmRunPlan(t, src, llmAgents(t, src, agents.Options{}))
	var be *agents.BudgetError
	// Nothing is used yet: the refusal counts what the first call holds.
	if !errors.As(err, &be) || be.Held < 1000 || !strings.Contains(err.Error(), "held by calls under way") || !strings.Contains(err.Error(), "it was not started") {
		t.Fatalf("err = %v, want the second call refused for what the first holds", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The refused call ends the run, which may cancel the first before
	// it reaches the server; never do both get there.
	if calls > 1 {
		t.Errorf("%d calls reached the server, want at most 1", calls)
	}
}
